"""Room on each page of the task table for a row's later versions (PostgreSQL's fillfactor).

A task row is updated soon after it is written. An update that finds no room on the row's page
writes the new version elsewhere and adds an entry to each of the table's 16 indexes whose
condition the row meets; with room, an update that changes no indexed column stays on the page and
touches no index (a HOT update). The first read's receipt (first_read_at) is such an update; a
start or a result changes the status, which is indexed, and is not. At 1M tasks, get_inbox's
receipt read 31 pages from disk without room: 2.0 ms, against 0.18 with it. SQLite has no such
setting.
"""

from django.db import migrations


def _fillfactor(value: int):
    def apply(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER TABLE hub_tasks_task SET (fillfactor = {value})")

    return apply


class Migration(migrations.Migration):
    dependencies = [("hub_tasks", "0014_deadlines_while_limits_hold")]

    operations = [migrations.RunPython(_fillfactor(85), _fillfactor(100))]
