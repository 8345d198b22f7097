"""`manage.py webhooks`: deliver every network's outbound webhooks, from the event log, on and on
(or `--once`). Any number may run beside the hub and each other, on any host sharing the database:
each subscription is worked on by one deliverer at a time (a lease on its row), and a deliverer
killed mid-POST costs at most a repeated delivery once its lease runs out (docs/adr/0018)."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections, connection

from hub_webhooks.send import webhook_client
from hub_webhooks.services import (
    Policy,
    deliverer_name,
    deliveries_prune,
    webhook_deliver_batch,
    webhooks_due,
)

logger = logging.getLogger(__name__)

PRUNE_EVERY_SECONDS = 3600.0


class Command(BaseCommand):
    help = "Deliver outbound webhooks from the event log (--once, or every --interval s)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="Deliver what is due once and exit.")
        parser.add_argument("--interval", type=float, default=1.0, help="Seconds between passes (default 1).")
        parser.add_argument(
            "--concurrency", type=int, default=4, help="Subscriptions delivered at the same time (default 4)."
        )
        parser.add_argument("--timeout", type=float, default=10.0, help="Seconds a POST may take (default 10).")
        parser.add_argument(
            "--lease-seconds",
            type=float,
            default=60.0,
            help="How long a subscription stays with this deliverer without news (default 60; at least 4 x --timeout)."
            " A killed deliverer's subscriptions wait this long for the next one.",
        )

    def handle(
        self,
        *args: Any,
        once: bool,
        interval: float,
        concurrency: int,
        timeout: float,
        lease_seconds: float,
        **options: Any,
    ) -> None:
        if interval <= 0 or concurrency < 1 or timeout <= 0:
            logger.error("--interval and --timeout must be more than 0, --concurrency at least 1")
            raise SystemExit(2)
        if lease_seconds < 4 * timeout:
            # A POST (connect, send, wait for the answer, read its start) must end inside the lease,
            # or a second deliverer could take the subscription over while it is still in flight.
            logger.error("--lease-seconds must be at least 4 x --timeout")
            raise SystemExit(2)
        policy = Policy(lease_seconds=lease_seconds, timeout_seconds=timeout)
        owner = deliverer_name()
        last_prune = 0.0
        with webhook_client() as client, ThreadPoolExecutor(max_workers=concurrency) as pool:

            def deliver(subscription_id: int) -> int:
                try:
                    return webhook_deliver_batch(
                        subscription_id=subscription_id, owner=owner, client=client, policy=policy
                    )
                finally:
                    connection.close()  # each pool thread's own connection, not kept between passes

            # Each subscription's batch runs on its own, a free slot taken by the next one due at
            # once: a slow receiver holds its own slot (for at most its timeout per event), never
            # the others', and a failed batch is logged, not the end of the deliverer.
            running: dict[Future[int], int] = {}
            while True:
                close_old_connections()
                try:
                    if time.monotonic() - last_prune > PRUNE_EVERY_SECONDS:
                        deliveries_prune()
                        last_prune = time.monotonic()
                    due = webhooks_due(limit=concurrency * 8)
                except Exception:
                    if once:
                        raise
                    # The database restarting, or SQLite busy past its timeout: try again next pass.
                    logger.exception("webhooks: reading what is due failed; trying again in %s s", interval)
                    time.sleep(interval)
                    continue
                busy = set(running.values())
                waiting = [sid for sid in due if sid not in busy]
                for subscription_id in waiting if once else waiting[: concurrency - len(running)]:
                    running[pool.submit(deliver, subscription_id)] = subscription_id
                if not running:
                    if once:
                        return
                    time.sleep(interval)
                    continue
                finished, _ = wait(
                    running, timeout=None if once else interval, return_when=ALL_COMPLETED if once else FIRST_COMPLETED
                )
                delivered = sum(self._outcome(future, running.pop(future)) for future in finished)
                if delivered and options["verbosity"] >= 2:
                    # Logged, not written to stdout: under COMMHUB_LOG_FORMAT=json every line is JSON.
                    logger.info("delivered %s events", delivered)
                if once:
                    return

    def _outcome(self, future: Future[int], subscription_id: int) -> int:
        try:
            return future.result()
        except Exception:
            logger.exception(
                "webhook %s: its delivery batch failed; its lease runs out and it is tried again", subscription_id
            )
            return 0
