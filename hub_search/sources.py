"""What is searchable: one Source per kind, each saying what of a row is indexed. A new kind is one
more entry in SOURCES (its model, the fields whose change re-indexes a row, and `describe`).

The index follows the writes through post_save, connected in HubSearchConfig.ready: the domain
below (hub_tasks) cannot call up into hub_search, and every write of an indexed field there is a
`save()` (an insert, or `save(update_fields=[...])`) or hub_core.sql's `insert` / `update` (which
send post_save as save() does), never a queryset `.update()`, so post_save sees them all, in the
writer's transaction (a rolled-back write leaves no entry). A save that touches
none of a source's fields (a status change, a receipt) costs nothing more. Triggers on the hub_tasks
tables would do it in the database, but SQLite drops a table's triggers whenever a migration rebuilds
it, and hub_tasks' migrations rebuild tables. Rows go away with their network (the entries' foreign
key cascades); tasks, messages and completions are never deleted on their own.

Channel posts are the one kind deleted on their own (a channel's retention): their entries point at
the post (SearchEntry.post, on_delete CASCADE), so the delete that lets a post go takes its entry
in the same statement batch. A post is found by whoever may read it with channel_read: a
broadcast channel's by every reader of its network, any other channel's only when `alias` names
one of its members (or by the dashboard's operators, who watch every channel). The `alias` filter
finds the posts of the channels that alias is in, as well as what it sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.apps import apps as installed_apps
from django.db.models.signals import post_save

from hub_channels.models import PUBLIC_TYPES
from hub_core.sql import insert
from hub_search.models import SearchEntry
from hub_search.query import terms

TITLE_MAX = 120


@dataclass(frozen=True)
class Described:
    network_id: str
    alias: str
    created_at: datetime
    title: str
    text: str
    channel_id: str | None = None  # a channel post's
    post_id: int | None = None
    members_only: bool = False


def _primary_key(row: Any) -> str:
    return str(row.pk)


@dataclass(frozen=True)
class Source:
    kind: str
    model: str  # "app_label.ModelName"
    watched: frozenset[str]  # a save of none of these fields leaves the entry as it is
    describe: Callable[[Any], Described | None]  # None: this row is not searched
    object_id: Callable[[Any], str] = _primary_key  # the id a result shows
    related: tuple[str, ...] = ()  # what describe reads through a foreign key (the backfill joins it)


def _title(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= TITLE_MAX else first[: TITLE_MAX - 1] + "…"


def _joined(*parts: str | None) -> str:
    return "\n".join(part for part in parts if part)


def _task(task: Any) -> Described:
    return Described(
        task.network_id, task.to_name, task.created_at, _title(task.content),
        _joined(task.content, task.context, task.result),
    )  # fmt: skip


def _message(message: Any) -> Described | None:
    if message.type == "task":  # a task's delivery: its text is the task's, found as the task
        return None
    return Described(
        message.network_id, message.to_alias, message.created_at, _title(message.content),
        _joined(message.content, message.context),
    )  # fmt: skip


def _completion(completion: Any) -> Described:
    return Described(
        completion.network_id, completion.session_name, completion.completed_at, _title(completion.task_text),
        _joined(completion.task_text, completion.result),
    )  # fmt: skip


def _post(post: Any) -> Described:
    channel = post.channel  # the row channel_post locked: no query
    return Described(
        channel.network_id, post.sender, post.created_at, _title(post.content), post.content,
        channel_id=channel.pk, post_id=post.pk, members_only=channel.type not in PUBLIC_TYPES,
    )  # fmt: skip


def _post_id(post: Any) -> str:
    return f"{post.channel_id}#{post.seq}"  # where channel_read finds it: the channel, after seq - 1


SOURCES: tuple[Source, ...] = (
    Source("task", "hub_tasks.Task", frozenset({"content", "context", "result", "to_name"}), _task),
    Source("message", "hub_tasks.InboxMessage", frozenset({"content", "context"}), _message),
    Source("completion", "hub_tasks.Completion", frozenset({"task_text", "result"}), _completion),
    Source("post", "hub_channels.ChannelPost", frozenset({"content"}), _post, _post_id, ("channel",)),
)
KINDS: tuple[str, ...] = tuple(source.kind for source in SOURCES)


def _fields(described: Described) -> dict[str, Any]:
    return {
        "network_id": described.network_id,
        "alias": described.alias,
        "created_at": described.created_at,
        "title": described.title,
        "text": described.text,
        "terms": terms(described.text),
        # Only a post's entry names them (migration 0001's backfill knows no such fields).
        **(
            {"channel_id": described.channel_id, "post_id": described.post_id, "members_only": described.members_only}
            if described.post_id
            else {}
        ),
    }


def entry_write(source: Source, row: Any, *, created: bool) -> None:
    """Index one saved row (its entry made, or brought up to date)."""
    described = source.describe(row)
    if described is None:
        return
    fields, object_id = _fields(described), source.object_id(row)
    if not created and SearchEntry.objects.filter(kind=source.kind, object_id=object_id).update(**fields):
        return
    insert(SearchEntry(kind=source.kind, object_id=object_id, **fields))


def _receiver(source: Source) -> Callable[..., None]:
    def saved(*, instance: Any, created: bool, update_fields: Iterable[str] | None = None, **_: Any) -> None:
        if update_fields is not None and not source.watched.intersection(update_fields):
            return
        entry_write(source, instance, created=created)

    return saved


_RECEIVERS: list[Callable[..., None]] = []  # post_save holds its receivers weakly


def connect() -> None:
    for source in SOURCES:
        receiver = _receiver(source)
        _RECEIVERS.append(receiver)
        post_save.connect(receiver, sender=installed_apps.get_model(source.model), dispatch_uid=f"search:{source.kind}")


def backfill(apps: Any, *, kinds: tuple[str, ...] = KINDS, batch: int = 2000) -> int:
    """Index every row of these kinds already there (a migration's historical `apps`); answers how many."""
    entry_model = apps.get_model("hub_search", "SearchEntry")
    written = 0
    for source in (source for source in SOURCES if source.kind in kinds):
        pending: list[Any] = []
        for row in _rows(apps.get_model(source.model), source.related, batch):
            described = source.describe(row)
            if described is not None:
                pending.append(entry_model(kind=source.kind, object_id=source.object_id(row), **_fields(described)))
            if len(pending) >= batch:
                written += len(entry_model.objects.bulk_create(pending))
                pending = []
        written += len(entry_model.objects.bulk_create(pending))
    return written


def _rows(model: Any, related: tuple[str, ...], batch: int) -> Iterator[Any]:
    return model.objects.select_related(*related).order_by("pk").iterator(chunk_size=batch)
