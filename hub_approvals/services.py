"""Approvals: a network's rules hold some writes until enough approvers say yes; then the call runs
once, as its caller, with its result kept.

`approval_gate` is asked by `Tool.execute` (the door every call passes) for each write a rule may
hold: a call no rule matches, or one whose caller every matching rule trusts, goes on at once; any
other is stored as a pending Approval and answered `pending_approval`. `approval_decide` records one
approver's yes or no under the approval's row lock: a no ends it, the yes that completes the tier
runs the call in the same transaction, so it runs exactly once whatever number of approvers race.
Nobody deciding in time expires it. The caller's alias (its from_session) is told each outcome in
its inbox, and every decision is audited.

Lock order: the approval's row, then whatever the held call locks (sessions, tasks, inbox rows).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from hub_agents.actor_cache import access_changed, network_memo
from hub_agents.actors import DASHBOARD_SENDER, Actor
from hub_agents.audit import audit_record
from hub_agents.models import AuditEntry
from hub_agents.services import actor_for_key
from hub_approvals.models import PRIORITY_RANK, Approval, ApprovalRule, ApprovalStatus, ApprovalVote
from hub_approvals.port import gateable_tools, held_call_run
from hub_approvals.selectors import approval_rows
from hub_core.errors import HubError, invalid_argument, permission_denied
from hub_core.events import EventType, HubEvent, publish, sealed_atomic
from hub_core.formats import duration, timestamp
from hub_tasks import limits
from hub_tasks.lifecycle import HUB, inbox_deliver
from hub_tasks.models import InboxMessage, Task

# The calls a rule's target_alias matches by their task's agent (they name no alias of their own, or
# name the agent they move it to): a rule aimed at an alias holds what others do to its tasks.
TASK_AGENT_TOOLS = frozenset({"retry_task", "cancel_task", "reassign_task"})


@dataclass(frozen=True)
class Rule:
    """An enabled ApprovalRule as the gate reads it (remembered per network with the actors)."""

    id: int
    name: str
    tool: str
    target_alias: str
    min_priority: str
    sender_key: str | None
    sender_role: str
    tier: int
    trusted_keys: frozenset[str]
    trust_admins: bool
    timeout_seconds: int

    def matches(self, tool: str, arguments: dict[str, Any], actor: Actor, network_id: str, targets: set[str]) -> bool:
        if self.tool and self.tool != tool:
            return False
        if self.target_alias and self.target_alias not in targets:
            return False
        if self.min_priority:
            priority = arguments.get("priority")
            if priority not in PRIORITY_RANK or PRIORITY_RANK[priority] < PRIORITY_RANK[self.min_priority]:
                return False
        if self.sender_key is not None and actor.key != self.sender_key:
            return False
        return not self.sender_role or actor.roles.get(network_id) == self.sender_role

    def trusts(self, actor: Actor, network_id: str) -> bool:
        return actor.key in self.trusted_keys or (self.trust_admins and actor.can_administer(network_id))


@dataclass(frozen=True)
class Held:
    """A call the gate held: the answer `{"ok": true, "pending_approval": true, ...}`."""

    approval_id: str
    approvals_required: int
    expires_at: str
    rule: str
    notify_alias: str  # the caller's alias (from_session), told the outcome; empty: nobody


@dataclass(frozen=True)
class ApprovalDecided:
    approval_id: str
    status: str
    approvals: int
    approvals_required: int
    result: dict[str, Any] | None
    reason: str


def _rules(network_id: str) -> tuple[Rule, ...]:
    def load() -> tuple[Rule, ...]:
        rules = ApprovalRule.objects.filter(network_id=network_id, enabled=True).prefetch_related("trusted_tokens")
        return tuple(
            Rule(
                id=rule.pk,
                name=rule.name,
                tool=rule.tool,
                target_alias=rule.target_alias,
                min_priority=rule.min_priority,
                sender_key=f"token:{rule.sender_token_id}" if rule.sender_token_id is not None else None,
                sender_role=rule.sender_role,
                tier=rule.tier,
                trusted_keys=frozenset(f"token:{token.pk}" for token in rule.trusted_tokens.all()),
                trust_admins=rule.trust_admins,
                timeout_seconds=rule.timeout_seconds,
            )
            for rule in rules.order_by("pk")
        )

    return network_memo(network_id, "approval_rules", load)


def approval_gate(*, actor: Actor, tool: str, arguments: dict[str, Any], parsed: dict[str, Any]) -> Held | None:
    """None: the call goes on now. Else it is held (stored pending) and this is the answer.

    `arguments` are the call's own (stored, to run later through the same door); `parsed` their
    typed values (what the rules match)."""
    if not any(_rules(network_id) for network_id in actor.readable_networks()):
        return None  # the common case, from memory: no rules where the caller is
    network_id, agent = _network_of(actor, parsed)
    if network_id is None or not actor.can_write(network_id):
        return None  # the service refuses it, in its own words: a rule never holds what may not run
    targets = {parsed.get("alias"), parsed.get("new_alias"), agent if tool in TASK_AGENT_TOOLS else None} - {None}
    matching = [rule for rule in _rules(network_id) if rule.matches(tool, parsed, actor, network_id, targets)]
    if not matching:
        return None
    holding = [rule for rule in matching if not rule.trusts(actor, network_id)]
    if not holding:
        _audit_trusted(actor, tool, network_id, matching)
        return None
    rule = max(holding, key=lambda r: (r.tier, -r.timeout_seconds))
    if "network_id" in parsed:  # run later in this network, whatever networks the caller joins meanwhile
        arguments = {**arguments, "network_id": network_id}
    return _hold(actor, tool, arguments, parsed, network_id, rule)


def _network_of(actor: Actor, parsed: dict[str, Any]) -> tuple[str | None, str | None]:
    """The network the call acts in: its task's (retry, cancel, reassign), else the one it writes to;
    None where the service will refuse the call anyway (no such task, no network chosen). And the
    task's agent, if it names a task."""
    if parsed.get("task_id") is not None:
        tasks = Task.objects.filter(network_id__in=actor.readable_networks(), pk=parsed["task_id"])
        return tasks.values_list("network_id", "to_name").first() or (None, None)
    try:
        return actor.writable_network(parsed.get("network_id")), None
    except HubError:
        return None, None


def _audit_trusted(actor: Actor, tool: str, network_id: str, rules: list[Rule]) -> None:
    with transaction.atomic():
        audit_record(
            network_id=network_id,
            action=AuditEntry.Action.APPROVAL_APPROVED,
            actor=actor.label,
            target=tool,
            auto=True,
            rules=[rule.name for rule in rules],
        )


@sealed_atomic
def _hold(
    actor: Actor, tool: str, arguments: dict[str, Any], parsed: dict[str, Any], network_id: str, rule: Rule
) -> Held:
    now = timezone.now()
    from_session = parsed.get("from_session")
    held = Approval.objects.create(
        network_id=network_id,
        rule_id=rule.id,
        rule_name=rule.name,
        tool=tool,
        arguments=arguments,
        summary=summary_of(tool, arguments),
        requester_key=actor.key,
        requester_person=actor.person,
        requester_label=actor.label,
        notify_alias=from_session if _tellable(from_session) else "",
        approvals_required=rule.tier,
        created_at=now,
        expires_at=now + timedelta(seconds=rule.timeout_seconds),
    )
    audit_record(
        network_id=network_id,
        action=AuditEntry.Action.APPROVAL_REQUESTED,
        actor=actor.label,
        target=f"approval {held.id}",
        tool=tool,
        summary=held.summary,
        rule=rule.name,
    )
    publish(
        HubEvent(
            type=EventType.APPROVAL_REQUESTED,
            network_id=network_id,
            audience=(held.notify_alias,) if held.notify_alias else (),
            payload={
                "approval_id": held.id,
                "tool": tool,
                "summary": held.summary,
                "requested_by": actor.label,
                "approvals_required": held.approvals_required,
            },
        )
    )
    return Held(held.id, held.approvals_required, timestamp(held.expires_at), rule.name, held.notify_alias)


def _tellable(from_session: str | None) -> bool:
    """Whether the caller's from_session is an alias to tell the outcome: not the hub's own name, nor
    an operator at the dashboard (whose Approvals page shows the outcome; no one reads that inbox)."""
    return bool(from_session) and from_session != HUB and not from_session.startswith(DASHBOARD_SENDER)


def summary_of(tool: str, arguments: dict[str, Any]) -> str:
    """The held call in one line, for approvers: the tool and the arguments it was given."""
    given = ", ".join(
        f"{name}={value!r}"
        for name, value in arguments.items()
        if value not in (None, "", []) and name not in ("network_id", "client_request_id")
    )
    text = f"{tool}({given})"
    return text if len(text) <= 500 else text[:499] + "…"


def approval_list(
    *,
    actor: Actor,
    status: str | None = None,
    approval_id: str | None = None,
    network_id: str | None = None,
    limit: int = limits.QUESTIONS_LIMIT_DEFAULT,
) -> list[dict[str, Any]]:
    """list_approvals: first expire those nobody decided in time (their callers are told), then read
    them (hub_approvals.selectors.approval_rows)."""
    approvals_expire_due(network_ids=actor.readable_networks())
    return approval_rows(actor=actor, status=status, approval_id=approval_id, network_id=network_id, limit=limit)


def approval_decide(*, actor: Actor, approval_id: str, decision: str, note: str | None = None) -> ApprovalDecided:
    """decide_approval: one approver's yes or no. The yes that completes the tier runs the call (as
    its caller, through the tool registry's door: hub_approvals.port) in this transaction: exactly
    once, whoever else decides at once."""
    found = Approval.objects.filter(network_id__in=actor.readable_networks(), pk=approval_id).first()
    if found is None:
        raise _not_found(approval_id)
    approvals_expire_due(network_ids=[found.network_id])  # its own commit: an expiry is not undone by a refusal
    decided = _decide(actor, approval_id, decision, note or "")
    if decided is None:  # it expired while a sweep skipped it: that expiry has committed, the vote is refused
        raise _already_decided(Approval.objects.get(pk=approval_id))
    return decided


def _already_decided(held: Approval) -> HubError:
    return HubError(
        "approval_decided",
        f"Approval {held.id} is already {held.status}"
        + (f" ({held.reason})" if held.reason else "")
        + "; list_approvals shows how it ended.",
        status=409,
        approval_status=held.status,
    )


@sealed_atomic
def _decide(actor: Actor, approval_id: str, decision: str, note: str) -> ApprovalDecided | None:
    """The vote, under the approval's row lock; None: the approval was past its time, and is now expired."""
    now = timezone.now()
    held = Approval.objects.select_for_update().get(pk=approval_id)
    actor.check_write(held.network_id)  # a viewer hears it in the words every write refuses it with
    if not actor.can_administer(held.network_id):
        raise permission_denied(f"Only the owners and admins of network {held.network_id} decide its approvals.")
    if held.status == ApprovalStatus.PENDING and held.expires_at <= now:
        _expire(held, now)  # the sweep skipped the row this decider held
        return None
    if held.status != ApprovalStatus.PENDING:
        raise _already_decided(held)
    # One person, one say, whatever token or session they come with: a person's user token and
    # dashboard session are one approver, and never the caller's own.
    if actor.person == held.requester_person:
        raise permission_denied("You made this call: another approver must decide it.")
    if held.votes.filter(approver_person=actor.person).exists():
        raise HubError(
            "approval_voted",
            f"You already decided approval {held.id}; it waits for another approver.",
            status=409,
        )
    ApprovalVote.objects.create(
        approval=held,
        approver_key=actor.key,
        approver_person=actor.person,
        approver_label=actor.label,
        decision=decision,
        note=note,
        created_at=now,
    )
    approvers = list(held.votes.filter(decision=ApprovalVote.Decision.APPROVE).values_list("approver_label", flat=True))
    if decision == ApprovalVote.Decision.REJECT:
        _end(held, ApprovalStatus.REJECTED, f"rejected by {actor.label}" + (f": {note}" if note else ""), now)
    elif len(approvers) >= held.approvals_required:
        _run(held, approvers, now)
    _audit_vote(actor, held, decision, note)
    publish(_updated(held, len(approvers), decided_by=actor.label))
    return ApprovalDecided(held.id, held.status, len(approvers), held.approvals_required, held.result, held.reason)


def _run(held: Approval, approvers: list[str], now: datetime) -> None:
    """Run the held call as its caller, in a savepoint: a refusal (the task ended meanwhile, the
    caller's token revoked) is kept as the outcome and undoes nothing but the call's own writes."""
    try:
        with transaction.atomic():
            result = held_call_run(actor_for_key(held.requester_key), held.tool, dict(held.arguments))
    except HubError as refusal:
        held.result = refusal.as_result()
        _end(held, ApprovalStatus.FAILED, f"approved by {', '.join(approvers)}, then refused: {refusal.message}", now)
        return
    held.result = result
    _end(held, ApprovalStatus.APPROVED, f"approved by {', '.join(approvers)}", now)


def _end(held: Approval, status: ApprovalStatus, reason: str, now: datetime) -> None:
    held.status, held.reason, held.decided_at = status, reason, now
    held.save(update_fields=["status", "reason", "decided_at", "result"])
    if held.notify_alias:
        inbox_deliver(
            network_id=held.network_id,
            to_alias=held.notify_alias,
            type=InboxMessage.Type.NOTICE,
            content=_outcome_text(held),
            context=f"Your call {held.summary} was held for approval ({held.id}).",
            from_session=HUB,
            now=now,
        )


def _outcome_text(held: Approval) -> str:
    if held.status == ApprovalStatus.APPROVED:
        fields = ", ".join(f"{k}={v}" for k, v in (held.result or {}).items() if k != "ok" and not isinstance(v, list))
        return f"Approval {held.id}: {held.reason}; your {held.tool} call ran" + (f" ({fields})." if fields else ".")
    if held.status == ApprovalStatus.FAILED:
        return f"Approval {held.id}: {held.reason}. Your {held.tool} call did not run."
    return f"Approval {held.id}: your {held.tool} call will not run: {held.reason}."


def _audit_vote(actor: Actor, held: Approval, decision: str, note: str) -> None:
    audit_record(
        network_id=held.network_id,
        action=AuditEntry.Action.APPROVAL_APPROVED
        if decision == ApprovalVote.Decision.APPROVE
        else AuditEntry.Action.APPROVAL_REJECTED,
        actor=actor.label,
        target=f"approval {held.id}",
        tool=held.tool,
        summary=held.summary,
        note=note[:200],
        outcome=held.status,
    )


def _updated(held: Approval, approvals: int, *, decided_by: str) -> HubEvent:
    return HubEvent(
        type=EventType.APPROVAL_UPDATED,
        network_id=held.network_id,
        audience=(held.notify_alias,) if held.notify_alias else (),
        payload={
            "approval_id": held.id,
            "tool": held.tool,
            "status": held.status,
            "approvals": approvals,
            "decided_by": decided_by,
            "reason": held.reason,
        },
    )


def approvals_expire_due(*, network_ids: Iterable[str]) -> int:
    """Expire the pending approvals nobody decided in time, each once (under its row lock, skipping
    rows a decider holds: it finds them expired itself), telling their callers."""
    now = timezone.now()
    due = list(
        Approval.objects.filter(
            network_id__in=list(network_ids), status=ApprovalStatus.PENDING, expires_at__lte=now
        ).values_list("pk", flat=True)
    )
    expired = 0
    for approval_id in due:
        with sealed_atomic():
            held = Approval.objects.select_for_update(skip_locked=True).filter(pk=approval_id).first()
            if held is None or held.status != ApprovalStatus.PENDING:
                continue
            _expire(held, now)
            expired += 1
    return expired


def _expire(held: Approval, now: datetime) -> None:
    """End a pending approval past its time (its row locked by the caller), telling its caller."""
    approvals = held.votes.filter(decision=ApprovalVote.Decision.APPROVE).count()
    waited = duration(int((held.expires_at - held.created_at).total_seconds()))
    _end(held, ApprovalStatus.EXPIRED, f"nobody decided within {waited}", now)
    audit_record(
        network_id=held.network_id,
        action=AuditEntry.Action.APPROVAL_EXPIRED,
        actor="system",
        target=f"approval {held.id}",
        tool=held.tool,
        summary=held.summary,
    )
    publish(_updated(held, approvals, decided_by="hub"))


def _not_found(approval_id: str) -> HubError:
    return HubError(
        "approval_not_found",
        f"No approval {approval_id!r} in your networks; list_approvals shows them.",
        status=404,
    )


# --- rules: saved by the dashboard (and the admin); the gate remembers them per process ----------


@transaction.atomic
def approval_rule_save(*, actor: Actor, rule: ApprovalRule, trusted_token_ids: Iterable[int]) -> ApprovalRule:
    """Create or change a rule of a network the actor administers (the dashboard's form)."""
    if not actor.can_administer(rule.network_id):
        raise permission_denied(f"Only the owners and admins of network {rule.network_id} set its approval rules.")
    if rule.tool and rule.tool not in gateable_tools():  # a rule names a tool its spec says may be held
        raise invalid_argument("tool", f"is not a tool a rule may hold (those: {', '.join(gateable_tools())})")
    created = rule.pk is None
    if created:
        rule.created_by = actor.label
    rule.save()
    rule.trusted_tokens.set(list(trusted_token_ids))
    audit_record(
        network_id=rule.network_id,
        action=AuditEntry.Action.APPROVAL_RULE_CHANGED,
        actor=actor.label,
        target=f"approval rule {rule.name}",
        change="created" if created else "changed",
        tool=rule.tool or "any",
        tier=rule.tier,
        enabled=rule.enabled,
    )
    return rule


@transaction.atomic
def approval_rule_delete(*, actor: Actor, rule_id: int) -> None:
    rule = ApprovalRule.objects.filter(pk=rule_id, network_id__in=actor.readable_networks()).first()
    if rule is None:
        raise HubError("approval_rule_not_found", f"No approval rule {rule_id} in your networks.", status=404)
    if not actor.can_administer(rule.network_id):
        raise permission_denied(f"Only the owners and admins of network {rule.network_id} set its approval rules.")
    audit_record(
        network_id=rule.network_id,
        action=AuditEntry.Action.APPROVAL_RULE_CHANGED,
        actor=actor.label,
        target=f"approval rule {rule.name}",
        change="deleted",
    )
    rule.delete()


# A rule saved or deleted anywhere (a service, the admin, a shell) changes what a call may do at once.
@receiver(post_save, sender=ApprovalRule, dispatch_uid="approvals.rule_saved")
@receiver(post_delete, sender=ApprovalRule, dispatch_uid="approvals.rule_deleted")
@receiver(m2m_changed, sender=ApprovalRule.trusted_tokens.through, dispatch_uid="approvals.rule_trust")
def _rule_changed(sender: Any, **kwargs: Any) -> None:
    access_changed()
