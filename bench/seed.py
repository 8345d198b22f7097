"""What the throughput cells read and consume, written before the load through the hub's services.

In the benchmark's own process for PostgreSQL; for the embedded default (SQLite) in a process of
its own (`python -m bench.seed`), whose Django is set up on that database, printing the seeds as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass

INBOXES = 64  # inbox-0 … inbox-63, one per client at most
PENDING = 10  # messages waiting in each: the target's "get_inbox (10 pending)"
WARMUP = 0.5  # bench.load.measure's default: calls made then are not counted, but consume seeds too
# Ceilings the seeds are sized for, well above today's figures (the agent loop ran 3-9 loops/s, the
# one-INSERT view 100-280 req/s, ack_inbox in the fast lane ~2,000 req/s). A cell that runs past its
# seeds shows errors: an idle agent turn is not the 5-call loop, an ack with nothing left to ack is
# not an ack.
LOOP_CEILING = 100  # agent loops a second, all clients together
ACK_CEILING = 5_000  # ack_inbox calls a second
# Calls each client may make whatever the rate: a cell's window spans at least three rounds of its
# slowest client's first answer (bench.load.SPAN), in which a client on the less loaded worker (the
# connections split unevenly between workers) makes several times as many.
SLOW_TURNS = 20


@dataclass
class Seeds:
    operator_token: str
    task_ids: list[str]  # for get_task: the tasks waiting in inbox-N
    acks: dict[int, dict[int, list[str]]]  # clients → client → message ids for ack_inbox

    def to_json(self) -> str:
        return json.dumps({"operator_token": self.operator_token, "task_ids": self.task_ids, "acks": self.acks})

    @classmethod
    def from_json(cls, text: str) -> Seeds:
        data = json.loads(text)
        acks = {int(c): {int(n): ids for n, ids in per.items()} for c, per in data["acks"].items()}
        return cls(data["operator_token"], data["task_ids"], acks)


def loop_alias(clients: int, client: int) -> str:
    """The agent loop's alias: its own per cell, so one cell never eats the next one's tasks."""
    return f"mix-{clients}-{client}"


def seed(*, network_id: str, operator_token: str, clients: tuple[int, ...], seconds: float) -> Seeds:
    from hub_agents.services import token_authenticate
    from hub_tasks.services import task_send

    operator = token_authenticate(raw=operator_token)
    task_ids = [
        task_send(actor=operator, alias=f"inbox-{n}", task=f"seeded for inbox-{n}").task_id
        for n in range(INBOXES)
        for _ in range(PENDING)
    ]
    for count in clients:
        turns = math.ceil(LOOP_CEILING * (seconds + WARMUP) / count) + SLOW_TURNS
        for client in range(count):
            alias = loop_alias(count, client)
            for _ in range(turns):
                task_send(actor=operator, alias=alias, task=f"seeded for {alias}")
    acks = {
        count: _ack_messages(
            network_id, count, per_client=math.ceil(ACK_CEILING * (seconds + WARMUP) / count) + SLOW_TURNS
        )
        for count in clients
    }
    _analyzed()
    return Seeds(operator_token, task_ids, acks)


def _analyzed() -> None:
    """The planner's statistics, as a database in use has them (autovacuum's ANALYZE, within a minute
    of the rows). Without them PostgreSQL took the tables for empty and looked a task up by its
    network's index, walking the network's 3,300 seeded tasks (0.5 ms) where its key finds it in 0.06:
    every cell measured a database minutes old, at the walk or not as autovacuum happened to run."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def _ack_messages(network_id: str, clients: int, *, per_client: int) -> dict[int, list[str]]:
    """Messages for ack_inbox, written straight to the table (plain messages, no task behind them):
    each client of the cell acks its own."""
    from hub_tasks.models import InboxMessage

    rows = [
        InboxMessage(
            network_id=network_id,
            to_alias=f"ack-{clients}-{client}",
            type="message",
            content="ack me",
            from_session="bench",
        )
        for client in range(clients)
        for _ in range(per_client)
    ]
    InboxMessage.objects.bulk_create(rows, batch_size=2000)
    ids: dict[int, list[str]] = {}
    for row in rows:
        ids.setdefault(int(row.to_alias.rsplit("-", 1)[1]), []).append(row.id)
    return ids


def main() -> None:
    """In a process set up on another database (the environment says which): a fleet and its seeds."""
    options = argparse.ArgumentParser(prog="python -m bench.seed")
    options.add_argument("--clients", required=True, help="comma-separated client counts, e.g. 1,16,64")
    options.add_argument("--seconds", type=float, required=True)
    args = options.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()
    from bench.setup import fleet

    made = fleet(agents=0)
    seeds = seed(
        network_id=made.network_id,
        operator_token=made.operator_token,
        clients=tuple(int(n) for n in args.clients.split(",")),
        seconds=args.seconds,
    )
    sys.stdout.write(seeds.to_json())


if __name__ == "__main__":
    main()
