"""`manage.py sweep`: settle every network's due tasks (deadlines, lapsed leases, retries), expire
the approvals nobody decided in time and delete channel posts past their age limit, now and then.

Reads already settle what they show (hub_tasks.lifecycle.tasks_expire_due), so nothing needs this to
be correct; it makes things happen on time when nobody reads: a sender hears of a lost lease, a
held retry reaches its agent's inbox, a caller hears that its held call expired, an old post is gone
from the database (reads and search already hide it). Any number of
sweepers may run beside the hub and each other: each task is settled, and each approval expired,
once, under its row lock. Runs nowhere by default.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from hub_agents.models import Network
from hub_channels.services import channels_retention_sweep
from hub_tasks.lifecycle import tasks_expire_due
from hub_tools.approvals import approvals_expire_due


class Command(BaseCommand):
    help = (
        "Settle every network's due expiries, lapsed leases and automatic retries, expire undecided approvals, "
        "delete aged channel posts (--once, or every --interval s)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="Sweep once and exit.")
        parser.add_argument(
            "--interval", type=float, default=5.0, help="Seconds between sweeps when running on (default 5)."
        )

    def handle(self, *args: Any, once: bool, interval: float, **options: Any) -> None:
        if interval <= 0:
            self.stderr.write("--interval must be more than 0 seconds")
            raise SystemExit(2)
        while True:
            # Cheap when nothing is due: one read of each network's earliest due time.
            networks = list(Network.objects.values_list("pk", flat=True))
            settled = tasks_expire_due(network_ids=networks)
            expired = approvals_expire_due(network_ids=networks)
            aged = channels_retention_sweep()
            if (settled or expired or aged) and options["verbosity"] >= 1:
                self.stdout.write(f"settled {settled} tasks, expired {expired} approvals, deleted {aged} aged posts")
            if once:
                return
            time.sleep(interval)
