"""Dependencies (TaskDependency, depends_on) and scheduled tasks (not_before).

Nullable columns without a default, so each AddField is a plain ADD COLUMN on both databases (no
rebuild of hub_tasks_task on SQLite, which would drop the triggers). The deadline triggers of 0004
are written again with not_before among a held task's due times: a task never delivered yet and
waiting for no dependency falls due at its not_before (hub_tasks.deadlines._due says the same).
"""

import importlib

from django.db import migrations, models
import django.db.models.deletion

WAITING = "('created', 'delivered')"
LEASED = "('acked', 'running')"


def due(row):
    """A task row's due time in SQL (null: nothing falls due). PostgreSQL's LEAST skips nulls."""
    scheduled = f"CASE WHEN {row}.delivered_at IS NULL AND {row}.dependencies_pending IS NULL THEN {row}.not_before END"
    return (
        f"CASE WHEN {row}.status IN {WAITING} THEN LEAST({row}.expires_at, {row}.retry_at, {scheduled}) "
        f"WHEN {row}.status IN {LEASED} THEN {row}.lease_expires_at END"
    )


# As 0004's, and a task's not_before or its dependencies (the last one met) may bring it due earlier.
_MAY_LOWER = """
    OLD.status IS DISTINCT FROM NEW.status OR OLD.network_id IS DISTINCT FROM NEW.network_id
    OR OLD.expires_at IS DISTINCT FROM NEW.expires_at OR OLD.retry_at IS DISTINCT FROM NEW.retry_at
    OR OLD.not_before IS DISTINCT FROM NEW.not_before
    OR OLD.dependencies_pending IS DISTINCT FROM NEW.dependencies_pending
    OR (NEW.lease_expires_at IS NOT NULL AND (OLD.lease_expires_at IS NULL OR NEW.lease_expires_at < OLD.lease_expires_at))
"""
_COLUMNS = "status, expires_at, network_id, retry_at, lease_expires_at, not_before, dependencies_pending"

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
_SQLITE_SCHEDULED = "(CASE WHEN NEW.delivered_at IS NULL AND NEW.dependencies_pending IS NULL THEN NEW.not_before END)"
_SQLITE_DUE = (
    f"(CASE WHEN NEW.status IN {WAITING} THEN min(NEW.expires_at, coalesce(NEW.retry_at, NEW.expires_at), "
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
    """Back to 0004's triggers (run before the columns they name are dropped)."""
    importlib.import_module("hub_tasks.migrations.0004_leases_and_retries").install(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("hub_tasks", "0004_leases_and_retries"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="dependencies_pending",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="task",
            name="not_before",
            field=models.DateTimeField(blank=True, help_text="Not delivered before this time.", null=True),
        ),
        migrations.AddField(
            model_name="task",
            name="on_dependency_failure",
            field=models.CharField(
                blank=True,
                choices=[("cancel", "Cancel"), ("run", "Run")],
                help_text="Null: cancel.",
                max_length=8,
                null=True,
            ),
        ),
        migrations.AddIndex(
            model_name="task",
            index=models.Index(
                condition=models.Q(("not_before__isnull", False), ("status", "created")),
                fields=["network", "not_before"],
                name="task_scheduled",
            ),
        ),
        migrations.CreateModel(
            name="TaskDependency",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("settled_at", models.DateTimeField(blank=True, null=True)),
                (
                    "depends_on",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="dependents", to="hub_tasks.task"
                    ),
                ),
                (
                    "task",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="dependencies", to="hub_tasks.task"
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("task", "depends_on"), name="taskdependency_unique")],
                "indexes": [
                    models.Index(
                        condition=models.Q(("settled_at__isnull", True)),
                        fields=["depends_on"],
                        name="taskdependency_waiting",
                    )
                ],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
