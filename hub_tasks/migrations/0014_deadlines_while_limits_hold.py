"""A task waiting for a slot of a cap or for a budget (waiting_cap, waiting_budget) falls due at none
of its held times until it is released: hub_tasks.caps and hub_tasks.budgets release it, never the
sweep. The deadline triggers of 0005 are written again so that its retry_at and not_before count only
while neither holds it (hub_tasks.deadlines._due says the same); its expires_at is UNTIL_RELEASED
then. Before, a task whose not_before had passed when it began to wait kept its network's earliest
deadline in the past, and every read of the network swept for nothing.

An update that ends such a wait may bring the task's due time earlier: it fires the update trigger
too. Reversed: 0005's triggers again (before the columns they name are dropped).
"""

import importlib

from django.db import migrations

WAITING = "('created', 'delivered')"
LEASED = "('acked', 'running')"


def _released(row):
    """Neither a cap nor a budget holds the task (hub_tasks.models.Task.is_release_due)."""
    return f"{row}.waiting_cap IS NULL AND {row}.waiting_budget IS NULL"


def due(row):
    """A task row's due time in SQL (null: nothing falls due). PostgreSQL's LEAST skips nulls."""
    released = _released(row)
    retry = f"CASE WHEN {released} THEN {row}.retry_at END"
    scheduled = (
        f"CASE WHEN {row}.delivered_at IS NULL AND {row}.dependencies_pending IS NULL AND {released} "
        f"THEN {row}.not_before END"
    )
    return (
        f"CASE WHEN {row}.status IN {WAITING} THEN LEAST({row}.expires_at, {retry}, {scheduled}) "
        f"WHEN {row}.status IN {LEASED} THEN {row}.lease_expires_at END"
    )


# As 0005's, and a wait for a cap or a budget that ends may bring the task due earlier.
_MAY_LOWER = """
    OLD.status IS DISTINCT FROM NEW.status OR OLD.network_id IS DISTINCT FROM NEW.network_id
    OR OLD.expires_at IS DISTINCT FROM NEW.expires_at OR OLD.retry_at IS DISTINCT FROM NEW.retry_at
    OR OLD.not_before IS DISTINCT FROM NEW.not_before
    OR OLD.dependencies_pending IS DISTINCT FROM NEW.dependencies_pending
    OR (OLD.waiting_cap IS NOT NULL AND NEW.waiting_cap IS NULL)
    OR (OLD.waiting_budget IS NOT NULL AND NEW.waiting_budget IS NULL)
    OR (NEW.lease_expires_at IS NOT NULL
        AND (OLD.lease_expires_at IS NULL OR NEW.lease_expires_at < OLD.lease_expires_at))
"""
_COLUMNS = (
    "status, expires_at, network_id, retry_at, lease_expires_at, not_before, dependencies_pending, "
    "waiting_cap, waiting_budget"
)

POSTGRESQL = [
    f"""
    CREATE OR REPLACE FUNCTION hub_tasks_task_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO hub_tasks_taskcount (network_id, status, n)
            SELECT network_id, status, count(*) FROM inserted GROUP BY network_id, status;
        PERFORM hub_tasks_deadline_lower(network_id, min(due))
            FROM (SELECT network_id, {due("inserted")} AS due FROM inserted) AS rows
            WHERE due IS NOT NULL GROUP BY network_id ORDER BY network_id;
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE OR REPLACE FUNCTION hub_tasks_task_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        due timestamptz := {due("NEW")};
    BEGIN
        IF NEW.status IS DISTINCT FROM OLD.status OR NEW.network_id IS DISTINCT FROM OLD.network_id THEN
            INSERT INTO hub_tasks_taskcount (network_id, status, n)
                VALUES (OLD.network_id, OLD.status, -1), (NEW.network_id, NEW.status, 1);
        END IF;
        IF due IS NOT NULL THEN
            PERFORM hub_tasks_deadline_lower(NEW.network_id, due);
        END IF;
        RETURN NULL;
    END $$
    """,
    "DROP TRIGGER IF EXISTS hub_tasks_task_updated ON hub_tasks_task",
    f"""
    CREATE TRIGGER hub_tasks_task_updated
        AFTER UPDATE OF {_COLUMNS} ON hub_tasks_task
        FOR EACH ROW WHEN ({_MAY_LOWER}) EXECUTE FUNCTION hub_tasks_task_updated()
    """,
]

# SQLite: min() of values is null if any is; compare Django's datetime text, as 0003 does.
_SQLITE_RETRY = f"(CASE WHEN {_released('NEW')} THEN NEW.retry_at END)"
_SQLITE_SCHEDULED = (
    f"(CASE WHEN NEW.delivered_at IS NULL AND NEW.dependencies_pending IS NULL AND {_released('NEW')} "
    f"THEN NEW.not_before END)"
)
_SQLITE_DUE = (
    f"(CASE WHEN NEW.status IN {WAITING} THEN min(NEW.expires_at, coalesce({_SQLITE_RETRY}, NEW.expires_at), "
    f"coalesce({_SQLITE_SCHEDULED}, NEW.expires_at)) "
    f"WHEN NEW.status IN {LEASED} THEN NEW.lease_expires_at END)"
)
_SQLITE_LOWER = f"""
    INSERT OR IGNORE INTO hub_tasks_taskdeadline (network_id, due_at)
        SELECT NEW.network_id, {_SQLITE_DUE} WHERE {_SQLITE_DUE} IS NOT NULL;
    UPDATE hub_tasks_taskdeadline SET due_at = {_SQLITE_DUE}
        WHERE network_id = NEW.network_id AND {_SQLITE_DUE} IS NOT NULL
        AND (due_at IS NULL OR due_at > {_SQLITE_DUE});
"""
# Only the two triggers that compute a due time change; 0004's counted and deleted ones stay.
SQLITE = [
    "DROP TRIGGER IF EXISTS hub_tasks_task_inserted",
    "DROP TRIGGER IF EXISTS hub_tasks_task_deadline",
    f"""
    CREATE TRIGGER hub_tasks_task_inserted AFTER INSERT ON hub_tasks_task BEGIN
        INSERT INTO hub_tasks_taskcount (network_id, status, n) VALUES (NEW.network_id, NEW.status, 1);
        {_SQLITE_LOWER}
    END
    """,
    f"""
    CREATE TRIGGER hub_tasks_task_deadline
    AFTER UPDATE OF {_COLUMNS} ON hub_tasks_task
    WHEN {_SQLITE_DUE} IS NOT NULL AND ({_MAY_LOWER.replace("IS DISTINCT FROM", "IS NOT")}) BEGIN
        {_SQLITE_LOWER}
    END
    """,
]


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = {"postgresql": POSTGRESQL, "sqlite": SQLITE}.get(vendor)
    if statements is None:
        raise RuntimeError(f"hub_tasks needs its triggers written for {vendor}: PostgreSQL and SQLite have them")
    for statement in statements:
        schema_editor.execute(statement, params=None)


def uninstall(apps, schema_editor):
    """Back to 0005's triggers."""
    importlib.import_module("hub_tasks.migrations.0005_dependencies_and_schedule").install(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("hub_tasks", "0013_budgets"),
    ]

    operations = [
        migrations.RunPython(install, uninstall),
    ]
