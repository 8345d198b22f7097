"""The task lifecycle as a state machine (issue 16): any interleaving of the task tools, on a frozen
clock that rules move, keeps every task in one place, on its table, and never loses it.

Hypothesis drives a few agents and a sender through the tools (tests/helpers/calls.py): sends with
dependencies, not_before, leases and automatic retries; inbox fetches and acks, send_ack, report_status
working, completions, replies and failures; retry, cancel and reassign; time moving on and the sweep.
After every step the network's rows must hold the invariants below. A refusal (HubError) is a legitimate
outcome of a rule, but only of a documented kind, and only when the task's state says so.

Each example gets a network of its own, deleted in teardown (the sweep settles every network: an
earlier example's tasks would take part in a later one's), while the test keeps pytest-django's plain
per-test transaction.
"""

from __future__ import annotations

import io
import itertools
import random
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.utils import timezone
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory
from hypothesis import HealthCheck, register_random
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from hub_agents.services import network_create, network_delete, token_authenticate, token_create
from hub_core import ratelimit
from hub_core.errors import HubError
from hub_tasks import lifecycle
from hub_tasks.lifecycle import HUB
from hub_tasks.models import (
    ACTIVE,
    TERMINAL,
    TRANSITIONS,
    InboxMessage,
    Move,
    OnDependencyFailure,
    Task,
    TaskAttempt,
    TaskDependency,
    TaskEvent,
    TaskStatus,
)
from tests.helpers import NOW
from tests.helpers.calls import (
    ack_inbox,
    cancel_task,
    get_inbox,
    get_task,
    list_tasks,
    reassign_task,
    report_completion,
    report_status,
    retry_task,
    send_ack,
    send_reply,
    send_task,
)

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db]

S = TaskStatus
LEAD = "lead"
ALIASES = ("coder", "tester", "reviewer")
ALIAS = st.sampled_from(ALIASES)
TASK = st.integers(0, 63)  # one of the tasks sent so far: its index, modulo how many there are
HOLDING = frozenset({S.DELIVERED, S.ACKED, S.RUNNING})  # with its agent: one attempt open
_networks = itertools.count(1)

# The retry jitter draws from its own Random: registered, Hypothesis seeds it for each example, so a
# failing interleaving replays (and shrinks) with the same backoffs.
register_random(lifecycle._jitter)
# Task ids decide the order the hub locks and settles tasks in (primary-key order): their leading
# bits drawn from this Random, seeded by each example (`ids` below), that order replays too; a serial
# number in the trailing ones keeps them unique across examples.
_ids = random.Random()
_serial = itertools.count(1)


def _drawn_uuid4() -> uuid.UUID:
    return uuid.UUID(int=_ids.getrandbits(64) << 64 | next(_serial), version=4)


# --- reading the network's rows --------------------------------------------------------------------


@dataclass
class World:
    """A network's tasks with their history, pending task messages, attempts and dependencies."""

    tasks: dict[str, Task]
    events: dict[str, list[TaskEvent]]
    pending: dict[str, list[InboxMessage]]
    attempts: dict[str, list[TaskAttempt]]
    waits_for: dict[str, list[TaskDependency]]

    @classmethod
    def read(cls, network_id: str) -> World:
        tasks = {task.pk: task for task in Task.objects.filter(network_id=network_id)}
        events: dict[str, list[TaskEvent]] = defaultdict(list)
        pending: dict[str, list[InboxMessage]] = defaultdict(list)
        attempts: dict[str, list[TaskAttempt]] = defaultdict(list)
        waits_for: dict[str, list[TaskDependency]] = defaultdict(list)
        for event in TaskEvent.objects.filter(task__network_id=network_id).order_by("id"):
            events[event.task_id].append(event)
        rows = InboxMessage.objects.filter(network_id=network_id, type=InboxMessage.Type.TASK, acked_at__isnull=True)
        for row in rows:
            pending[row.task_id].append(row)
        for attempt in TaskAttempt.objects.filter(task__network_id=network_id).order_by("number"):
            attempts[attempt.task_id].append(attempt)
        for dependency in TaskDependency.objects.filter(task__network_id=network_id).order_by("pk"):
            waits_for[dependency.task_id].append(dependency)
        return cls(tasks, events, pending, attempts, waits_for)

    def story(self, task_id: str) -> str:
        """A task's history for a failure message: `created → delivered (hub: ...) → ...`."""
        task = self.tasks[task_id]
        steps = [f"{e.from_status or '∅'}→{e.to_status} [{e.actor}: {e.detail}]" for e in self.events[task_id]]
        return f"task {task_id} ({task.content}, now {task.status}): " + "; ".join(steps)


def _allowed(from_status: str, to_status: str) -> bool:
    if not from_status:  # the send: delivered at once, or held created
        return to_status in (S.CREATED, S.DELIVERED)
    return any(from_status in sources and to_status in targets for sources, targets in TRANSITIONS.values())


def _is_backoff(event: TaskEvent) -> bool:
    """The hub holding a failure for its next attempt (a manual retry_task may also lead a failed task
    back to created, to wait for its dependencies: that one is a person's)."""
    return (event.from_status, event.to_status, event.actor) == (S.FAILED, S.CREATED, HUB)


def _final_ends(events: list[TaskEvent]) -> list[TaskEvent]:
    """The events that ended the task: terminal, and not a failure held for its next attempt (whose
    backoff follows at once, in the same transaction)."""
    return [
        event
        for i, event in enumerate(events)
        if event.to_status in TERMINAL and not (i + 1 < len(events) and _is_backoff(events[i + 1]))
    ]


def _by_hold_release(event: TaskEvent) -> bool:
    """A delivery the hold rules alone decide: the send's own, or the hub releasing a held task (not a
    person's reassign_task or retry_task, which hand on or revive it)."""
    return event.from_status == "" or (event.from_status == S.CREATED and event.actor == HUB)


# --- the invariants --------------------------------------------------------------------------------


def check_inboxes(world: World) -> None:
    """1. A task is in at most one inbox, its current agent's: a delivered task has exactly one pending
    task message; a held (created) or ended task none; an acked or running task at most the delivery's
    own (send_ack and report_status working take a delivered task without touching any inbox)."""
    for task_id, task in world.tasks.items():
        rows = world.pending[task_id]
        assert len(rows) <= 1, f"{len(rows)} pending task messages: {world.story(task_id)}"
        assert all(row.to_alias == task.to_name for row in rows), (
            f"pending in {rows[0].to_alias}'s inbox, addressed to {task.to_name}: {world.story(task_id)}"
        )
        if task.status == S.DELIVERED:
            assert rows, f"delivered but in no inbox: {world.story(task_id)}"
        elif task.status not in (S.ACKED, S.RUNNING):
            assert not rows, f"{task.status} but still pending in {rows[0].to_alias}'s inbox: {world.story(task_id)}"


def check_nothing_lost(world: World, now: datetime) -> None:
    """2. Every task is ended, or waits legitimately: delivered (in an inbox, rule 1), acked or running
    (its lease running if it has one), or created and held: for a retry, for a dependency still
    running, for its not_before, or due and waiting for the next read or sweep to release it."""
    for task_id, task in world.tasks.items():
        unsettled = [d for d in world.waits_for[task_id] if d.settled_at is None]
        if task.dependencies_pending is not None:
            assert task.status == S.CREATED, f"dependencies_pending on a {task.status} task: {world.story(task_id)}"
        if task.status in (S.ACKED, S.RUNNING):
            assert (task.lease is None) == (task.lease_expires_at is None), f"lease not running: {world.story(task_id)}"
        if task.status != S.CREATED:
            continue
        if task.retry_at is None:  # held since its send: its count is the rows still waiting
            assert task.dependencies_pending == (len(unsettled) or None), (
                f"dependencies_pending {task.dependencies_pending}, {len(unsettled)} waiting: {world.story(task_id)}"
            )
        held_for = [
            task.retry_at is not None,
            bool(task.dependencies_pending) and bool(unsettled),
            task.scheduled_at is not None and task.scheduled_at > now,
            task.is_release_due(now),
        ]
        assert any(held_for), f"created and held by nothing: {world.story(task_id)}"
    for dependencies in world.waits_for.values():
        for dependency in dependencies:
            if dependency.settled_at is None:
                awaited = world.tasks[dependency.depends_on_id]
                assert awaited.status in ACTIVE, (
                    f"{awaited.status} but its dependents still wait for it: {world.story(awaited.pk)}"
                )


def check_histories(world: World) -> None:
    """3. Each history is a path through TRANSITIONS from the send to the task's current status."""
    for task_id, task in world.tasks.items():
        events = world.events[task_id]
        assert events and events[0].from_status == "", f"no creation row: {world.story(task_id)}"
        previous = ""
        for event in events:
            assert event.from_status == previous, f"history skips from {previous}: {world.story(task_id)}"
            assert _allowed(event.from_status, event.to_status), (
                f"{event.from_status}→{event.to_status} is no move of TRANSITIONS: {world.story(task_id)}"
            )
            previous = event.to_status
        assert previous == task.status, f"history ends at {previous}: {world.story(task_id)}"


def _relevant_end(world: World, dependency: TaskDependency) -> TaskEvent | None:
    """The end of `depends_on` that settles this dependency: its state when the task was sent if it had
    ended by then, else its first end after that (a manual retry_task may revive an ended task)."""
    sent = world.events[dependency.task_id][0].pk
    awaited = world.events[dependency.depends_on_id]
    before = [event for event in awaited if event.pk < sent]
    if before and before[-1].to_status in TERMINAL:
        return before[-1]
    return next((event for event in _final_ends(awaited) if event.pk > sent), None)


def check_dependencies(world: World) -> None:
    """4. A task is first delivered only once every task it depends on has ended, and not before its
    not_before; by its send or a release only once each was replied (or, with on_dependency_failure
    run, ended anyhow), unless a person's retry_task revived it after a failed dependency cancelled
    it. A held task whose dependency ends unreplied is cancelled in that same step (unless run).

    reassign_task and retry_task of a task held for its dependencies or not_before used to deliver it
    at once; hub_tasks/services.py now keeps it waiting (the REASSIGN and RETRY moves may lead to
    created), so those first deliveries are held to the same rule."""
    for task_id, task in world.tasks.items():
        events = world.events[task_id]
        run = task.on_dependency_failure == OnDependencyFailure.RUN
        first = next((event for event in events if event.to_status == S.DELIVERED), None)
        if first is not None:
            # A person's retry_task of the ended task (before its first delivery) sends it anyway.
            revived = any(e.from_status in TERMINAL and not _is_backoff(e) for e in events if e.pk < first.pk)
            if task.not_before is not None:
                assert first.created_at >= task.not_before, f"delivered before its not_before: {world.story(task_id)}"
            for dependency in world.waits_for[task_id]:
                end = _relevant_end(world, dependency)
                assert end is not None and end.pk < first.pk, (
                    f"delivered while its dependency runs: {world.story(task_id)} / "
                    f"{world.story(dependency.depends_on_id)}"
                )
                assert end.to_status == S.REPLIED or run or revived or not _by_hold_release(first), (
                    f"delivered though its dependency ended {end.to_status}: {world.story(task_id)}"
                )
        if run:
            continue
        for dependency in world.waits_for[task_id]:
            end = _relevant_end(world, dependency)
            if end is None or end.to_status == S.REPLIED:
                continue
            if end.pk < events[0].pk:  # ended before the send: the send cancels it at once
                assert [e.to_status for e in events[:2]] == [S.CREATED, S.CANCELLED], (
                    f"sent after its dependency ended {end.to_status}, not cancelled: {world.story(task_id)}"
                )
                continue
            prior = [event for event in events if event.pk < end.pk]
            if prior[-1].to_status == S.CREATED and not any(event.to_status == S.DELIVERED for event in prior):
                after = next((event for event in events if event.pk > end.pk), None)
                assert after is not None and after.to_status == S.CANCELLED and after.actor == HUB, (
                    f"held while its dependency ended {end.to_status}, not cancelled: {world.story(task_id)} / "
                    f"{world.story(dependency.depends_on_id)}"
                )


def check_attempts(world: World) -> None:
    """5. One attempt per delivery, numbered 1, 2, ...; exactly one open while the task is with an agent,
    for that agent; an automatic retry only while attempts are left (requeues, reassigns and manual
    retries add attempts of their own), and a failure with attempts left is always held for one (a
    failure before the first delivery failed no attempt: it is final, and no dead letter)."""
    for task_id, task in world.tasks.items():
        events, attempts = world.events[task_id], world.attempts[task_id]
        open_ = [attempt for attempt in attempts if attempt.ended_at is None]
        assert len(open_) == (1 if task.status in HOLDING else 0), f"{len(open_)} open attempts: {world.story(task_id)}"
        assert all(attempt.alias == task.to_name for attempt in open_), f"open for another: {world.story(task_id)}"
        deliveries = [i for i, event in enumerate(events) if event.to_status == S.DELIVERED]
        assert [attempt.number for attempt in attempts] == list(range(1, len(deliveries) + 1)), (
            f"attempts {[a.number for a in attempts]} for {len(deliveries)} deliveries: {world.story(task_id)}"
        )
        for i, event in enumerate(events):
            made = sum(1 for j in deliveries if j < i)
            if _is_backoff(event):
                assert 1 < task.max_attempts and made < task.max_attempts, (
                    f"an automatic retry after attempt {made} of {task.max_attempts}: {world.story(task_id)}"
                )
            elif event.to_status == S.FAILED and not (i + 1 < len(events) and _is_backoff(events[i + 1])):
                assert task.max_attempts <= 1 or made == 0 or made >= task.max_attempts, (
                    f"failed for good after attempt {made} of {task.max_attempts}: {world.story(task_id)}"
                )
        if task.status == S.FAILED and task.max_attempts > 1 and attempts:
            assert task.dead_lettered_at is not None, f"failed for good, not dead-lettered: {world.story(task_id)}"


def check_settled(network_id: str, now: datetime) -> None:
    """After a read that settles deadlines, or a sweep: nothing in the network is due any more."""
    for task in Task.objects.filter(network_id=network_id):
        due = {
            "lease lapsed": task.is_lease_lost(now),
            "release due": task.is_release_due(now),
            "overdue": task.is_overdue(now),
        }
        assert not any(due.values()), f"left unsettled ({[k for k, v in due.items() if v]}): {task} {task.as_row()}"


# --- the machine -----------------------------------------------------------------------------------


# What each documented refusal claims about the task, true of it as the refused call found it: the
# row as it was (the call's transaction rolled back) or once what had fallen due is settled (a read
# settles the whole network, the call only its task: either view may be the call's). A hold whose
# time had come does not count: the call itself would have released it.
Truth = Callable[[Task, Task, datetime], bool]
RETRYABLE = TRANSITIONS[Move.RETRY][0]
TRUTH: dict[str, Truth] = {
    "task_terminal": lambda was, settled, now: was.status in TERMINAL or settled.status in TERMINAL,
    "task_held": lambda was, settled, now: (was.is_held() and not was.is_release_due(now)) or settled.is_held(),
    "task_not_retryable": lambda was, settled, now: was.status not in RETRYABLE or settled.status not in RETRYABLE,
}


class LifecycleMachine(RuleBasedStateMachine):
    """A sender ("lead") and three agents in a network of their own, one member token for all of them
    (who acts is the alias a call names, as for agents sharing a network token)."""

    def __init__(self, clock: FrozenDateTimeFactory) -> None:
        super().__init__()
        self.clock = clock
        self.network = network_create(name=f"lifecycle-{next(_networks)}")[0]
        _, raw = token_create(network=self.network, role="member", name="member-token")
        self.actor = token_authenticate(raw=raw)
        self.tasks: list[str] = []
        self.seen: list[tuple[str, str]] = []  # (alias, id) of task messages get_inbox showed

    @initialize(seed=st.integers(0, 2**32 - 1))
    def ids(self, seed: int) -> None:
        _ids.seed(seed)

    def teardown(self) -> None:
        network_delete(network=self.network, by="test")

    def pick(self, n: int, fitting: frozenset[str] = ACTIVE) -> str:
        """One of the tasks sent: three times in four one whose stored status the move fits (steps spent
        on ended tasks find little), else any, refusals included."""
        pool = self.tasks
        if n % 4:
            statuses = dict(Task.objects.filter(pk__in=self.tasks).values_list("pk", "status"))
            pool = [task_id for task_id in self.tasks if statuses[task_id] in fitting] or self.tasks
        return pool[n // 4 % len(pool)]

    def holder(self, task_id: str) -> str:
        return Task.objects.get(pk=task_id).to_name  # who an agent would be: arranging, not checking

    def refusable(self, task_id: str, call: Callable[[], object], *codes: str) -> None:
        """Run a rule's call; a refusal must be one of `codes` and true of the task."""
        try:
            call()
        except HubError as refusal:
            assert refusal.code in codes, f"unexpected refusal {refusal.code}: {refusal.message}"
            was = Task.objects.get(pk=task_id)
            get_task(actor=self.actor, task_id=task_id)  # settles what has fallen due
            settled = Task.objects.get(pk=task_id)
            assert TRUTH[refusal.code](was, settled, timezone.now()), (
                f"refused {refusal.code}: {refusal.message}; the task was {was.as_row()}, is {settled.as_row()}"
            )

    # --- the sender ---

    @rule(
        alias=ALIAS,
        picks=st.one_of(st.just([]), st.lists(TASK, min_size=1, max_size=3)),  # half of them wait for none
        run=st.booleans(),
        not_before=st.sampled_from([None, None, None, 0, 15, 90, 600]),
        ttl=st.sampled_from([None, 30, 300]),
        lease=st.sampled_from([None, 10, 45, 300]),
        on_lost=st.sampled_from(["requeue", "fail"]),
        max_attempts=st.integers(1, 3),
        backoff=st.sampled_from([1, 10, 60]),
    )
    def send(
        self,
        alias: str,
        picks: list[int],
        run: bool,
        not_before: int | None,
        ttl: int | None,
        lease: int | None,
        on_lost: str,
        max_attempts: int,
        backoff: int,
    ) -> None:
        extra: dict[str, object] = {"on_lost": on_lost, "max_attempts": max_attempts, "retry_backoff_seconds": backoff}
        depends_on = list(dict.fromkeys(self.pick(n) for n in picks)) if self.tasks else []
        if depends_on:
            extra["depends_on"] = depends_on
            extra["on_dependency_failure"] = "run" if run else "cancel"
        for name, value in (("not_before_seconds", not_before), ("ttl_seconds", ttl), ("lease_seconds", lease)):
            if value is not None:
                extra[name] = value
        task = f"job {len(self.tasks)}"
        answer = send_task(actor=self.actor, alias=alias, task=task, from_session=LEAD, **extra)
        self.tasks.append(answer["task_id"])

    @precondition(lambda self: self.tasks)
    @rule(n=TASK)
    def retry(self, n: int) -> None:
        task_id = self.pick(n, RETRYABLE)
        self.refusable(task_id, lambda: retry_task(actor=self.actor, task_id=task_id), "task_not_retryable")

    @precondition(lambda self: self.tasks)
    @rule(n=TASK)
    def cancel(self, n: int) -> None:
        task_id = self.pick(n)
        self.refusable(task_id, lambda: cancel_task(actor=self.actor, task_id=task_id), "task_terminal")

    @precondition(lambda self: self.tasks)
    @rule(n=TASK, alias=ALIAS)
    def reassign(self, n: int, alias: str) -> None:
        task_id = self.pick(n)
        call = lambda: reassign_task(actor=self.actor, task_id=task_id, new_alias=alias)  # noqa: E731
        self.refusable(task_id, call, "task_terminal")

    # --- the agents ---

    @rule(alias=ALIAS, n=TASK, stale=st.booleans())
    def fetch_and_ack(self, alias: str, n: int, stale: bool) -> None:
        """get_inbox, then ack one of its task messages (or, stale, one seen before: maybe gone)."""
        messages = [m for m in get_inbox(actor=self.actor, alias=alias, limit=100)["messages"] if m["type"] == "task"]
        self.seen.extend((alias, m["id"]) for m in messages if (alias, m["id"]) not in self.seen)
        if stale and self.seen:
            to, message_id = self.seen[n % len(self.seen)]
        elif messages:
            to, message_id = alias, messages[n % len(messages)]["id"]
        else:
            return
        try:
            ack_inbox(actor=self.actor, alias=to, message_id=message_id)
        except HubError as refusal:
            assert refusal.code == "message_already_acked", f"unexpected refusal {refusal.code}: {refusal.message}"
            row = InboxMessage.objects.get(pk=message_id)
            was_acked = row.acked_at is not None
            get_task(actor=self.actor, task_id=row.task_id)  # settles what has fallen due (its end acks it)
            row.refresh_from_db()
            assert was_acked or row.acked_at is not None, f"message_already_acked for a pending message: {row}"

    @precondition(lambda self: self.tasks)
    @rule(n=TASK, own=st.booleans(), alias=ALIAS)
    def send_ack(self, n: int, own: bool, alias: str) -> None:
        task_id = self.pick(n)
        who = self.holder(task_id) if own else alias
        call = lambda: send_ack(actor=self.actor, task_id=task_id, from_session=who)  # noqa: E731
        self.refusable(task_id, call, "task_terminal", "task_held")

    @precondition(lambda self: self.tasks)
    @rule(n=TASK, own=st.booleans(), alias=ALIAS)
    def start(self, n: int, own: bool, alias: str) -> None:
        """report_status working on the task: it runs, if it is this agent's and delivered or acked."""
        task_id = self.pick(n)
        who = self.holder(task_id) if own else alias
        report_status(actor=self.actor, resume_id=f"resume-{who}", alias=who, status="working", task=task_id)

    @rule(alias=ALIAS)
    def heartbeat(self, alias: str) -> None:
        """An idle heartbeat: renews the leases the agent holds."""
        report_status(actor=self.actor, resume_id=f"resume-{alias}", alias=alias, status="idle")

    @precondition(lambda self: self.tasks)
    @rule(n=TASK, own=st.booleans(), alias=ALIAS)
    def complete(self, n: int, own: bool, alias: str) -> None:
        task_id = self.pick(n)
        who = self.holder(task_id) if own else alias
        report_completion(actor=self.actor, alias=who, task=task_id, result="done")

    @precondition(lambda self: self.tasks)
    @rule(n=TASK, outcome=st.sampled_from([S.REPLIED, S.FAILED, S.FAILED, S.CANCELLED]), own=st.booleans())
    def reply(self, n: int, outcome: str, own: bool) -> None:
        task_id = self.pick(n)
        who = self.holder(task_id) if own else LEAD
        call = lambda: send_reply(  # noqa: E731
            actor=self.actor, alias=LEAD, text=outcome, in_reply_to=task_id, status=outcome, from_session=who
        )
        self.refusable(task_id, call, "task_terminal")

    # --- time ---

    @rule(seconds=st.sampled_from([1, 5, 20, 61, 130, 700, 4000]))
    def tick(self, seconds: int) -> None:
        """Time passes; nothing reads yet, so what fell due waits for the next read or the sweep."""
        self.clock.tick(seconds)

    @rule()
    def look(self) -> None:
        list_tasks(actor=self.actor, limit=100)
        check_settled(self.network.pk, timezone.now())

    @rule()
    def sweep(self) -> None:
        call_command("sweep", "--once", stdout=io.StringIO())
        check_settled(self.network.pk, timezone.now())

    @invariant()
    def lifecycle_holds(self) -> None:
        world = World.read(self.network.pk)
        check_inboxes(world)
        check_nothing_lost(world, timezone.now())
        check_histories(world)
        check_dependencies(world)
        check_attempts(world)


LIFECYCLE = hypothesis_settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,  # the same interleavings every run: CI never fails on a new draw
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.fixture
def drawn_ids(monkeypatch) -> None:
    monkeypatch.setattr("hub_tasks.models.uuid", SimpleNamespace(uuid4=_drawn_uuid4))


@pytest.fixture
def clock() -> Iterator[FrozenDateTimeFactory]:
    """The `clock` fixture's frozen time, which Hypothesis itself does not see: it times its own
    shrinking, and a clock moved on by hours would end that at once."""
    with freeze_time(NOW, ignore=["hypothesis"]) as frozen:
        yield frozen


@pytest.mark.usefixtures("drawn_ids")
def test_any_interleaving_keeps_every_task_in_one_place_on_its_table(settings, clock) -> None:
    settings.COMMHUB_WRITE_RATE_LIMIT = "off"  # one token writes far more than 600 times a minute here
    ratelimit.reset()
    run_state_machine_as_test(lambda: LifecycleMachine(clock), settings=LIFECYCLE)
