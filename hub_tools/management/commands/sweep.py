"""`manage.py sweep`: settle every network's due tasks (deadlines, lapsed leases, retries), expire
the approvals nobody decided in time and the node commands no node acknowledged, fire the recurring
schedules' due runs (hub_schedules: each due time once across sweepers), release the tasks that
waited for a budget whose period turned (hub_fleet.budgets), delete channel
posts past their age limit and replay keys older than hub_tools.models.REPLAY_KEY_DAYS (7 days),
now and then.

Reads already settle what they show (hub_tasks.lifecycle.tasks_expire_due), so nothing needs this to
be correct; it makes things happen on time when nobody reads: a sender hears of a lost lease, a
held retry reaches its agent's inbox, a caller hears that its held call expired, an old post is gone
from the database (reads and search already hide it). Any number of
sweepers may run beside the hub and each other: each task is settled, and each approval expired,
once, under its row lock. `make run` starts one (commhub.run); a pass that fails (the database
restarting, SQLite busy past its timeout) is logged and the next one tried, unless --once.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections

from hub_agents.models import Network
from hub_agents.services import node_commands_expire_due
from hub_approvals.services import approvals_expire_due
from hub_channels.services import channels_retention_sweep
from hub_fleet.budgets import budgets_sweep
from hub_schedules.services import schedules_fire_due
from hub_tasks.lifecycle import tasks_expire_due
from hub_tools.replays import replay_keys_prune

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Settle every network's due expiries, lapsed leases and automatic retries, expire undecided approvals, "
        "delete aged channel posts and old replay keys (--once, or every --interval s)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="Sweep once and exit.")
        parser.add_argument(
            "--interval", type=float, default=5.0, help="Seconds between sweeps when running on (default 5)."
        )

    def handle(self, *args: Any, once: bool, interval: float, **options: Any) -> None:
        if interval <= 0:
            logger.error("--interval must be more than 0 seconds")
            raise SystemExit(2)
        while True:
            if once:
                self._sweep(options["verbosity"])
                return
            try:
                close_old_connections()  # a connection the database dropped is not reused
                self._sweep(options["verbosity"])
            except Exception:
                logger.exception("the sweep failed; the next one runs in %s s", interval)
            time.sleep(interval)

    def _sweep(self, verbosity: int) -> None:
        # Cheap when nothing is due: one read of each network's earliest due time.
        networks = list(Network.objects.values_list("pk", flat=True))
        settled = tasks_expire_due(network_ids=networks)
        expired = approvals_expire_due(network_ids=networks)
        commands = node_commands_expire_due()
        scheduled = schedules_fire_due()
        released = budgets_sweep()
        aged = channels_retention_sweep()
        keys = replay_keys_prune()
        if (settled or expired or commands or scheduled or released or aged or keys) and verbosity >= 1:
            # Logged, not written to stdout: under COMMHUB_LOG_FORMAT=json every line is a JSON object.
            logger.info(
                "settled %s tasks, expired %s approvals and %s node commands, sent %s scheduled tasks, released "
                "%s tasks whose budget turned, deleted %s aged posts and %s old replay keys",
                settled,
                expired,
                commands,
                scheduled,
                released,
                aged,
                keys,
            )
