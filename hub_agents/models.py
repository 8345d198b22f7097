"""Who is there: networks, their members and tokens, agent sessions and the nodes they run on."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone


def new_network_id() -> str:
    return f"net_{secrets.token_hex(8)}"


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"


# The longest default lease: hub_tasks.limits.LEASE_MAX (not imported: the apps are not ready then).
LEASE_SECONDS_MAX = 86_400

WRITE_ROLES = frozenset({Role.OWNER, Role.ADMIN, Role.MEMBER})
ADMIN_ROLES = frozenset({Role.OWNER, Role.ADMIN})  # may also read the network's audit log


class IdentityPolicy(models.TextChoices):
    """Who may act as an agent of a network (hub_agents.identity). `open`: any member token names any
    alias (the contract's way: one token per network); `strict`: only a token bound to the alias."""

    OPEN = "open", "open: any member token may act as any agent"
    STRICT = "strict", "strict: only a token bound to an alias acts as it"


class Network(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_network_id, editable=False)
    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # Tasks sent without lease_seconds get this lease; null: no lease (as before leases existed).
    default_lease_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(LEASE_SECONDS_MAX)],
        help_text="Seconds an agent may stay silent on an acked or running task before the hub applies the "
        "task's on_lost policy. Empty: tasks have no lease unless send_task asks for one.",
    )
    identity_policy = models.CharField(
        max_length=8,
        choices=IdentityPolicy.choices,
        default=IdentityPolicy.OPEN,
        help_text="open: any member token may act as any agent (the contract's way). strict: only a token "
        "bound to an alias acts as it; unbound tokens act as themselves.",
    )

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="hub_memberships")
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # When the user last chose this network in the dashboard: their newest choice is where it opens.
    chosen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "network"], name="membership_unique_user_network")]

    def __str__(self) -> str:
        return f"{self.user} in {self.network} ({self.role})"


class ToolProfile(models.TextChoices):
    """Which tools a token's MCP connections list and may call, narrowest first; each set is in
    hub_tools.profiles. Every transport but MCP ignores it: roles say what a token may do."""

    CONTRACT = "contract", "contract: the 17 contract tools"
    AGENT = "agent", "agent: contract, open pool, questions, thread, node"
    LEAD = "lead", "lead: agent, answers, approvals, search"
    ALL = "all", "all: every tool"


class ApiToken(models.Model):
    """A bearer token. Only its SHA-256 digest is stored; the raw value is shown once."""

    class Kind(models.TextChoices):
        NETWORK = "ntok", "network-scoped"
        USER = "utok", "user-scoped"

    kind = models.CharField(max_length=4, choices=Kind.choices)
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16, help_text="The first characters, to recognise a token.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    # A network token acts inside this one network with `role`; a user token acts as `user`
    # with the role of each of the user's memberships.
    network = models.ForeignKey(Network, null=True, blank=True, on_delete=models.CASCADE, related_name="tokens")
    role = models.CharField(max_length=16, choices=Role.choices, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="hub_tokens"
    )
    tool_profile = models.CharField(
        max_length=16,
        choices=ToolProfile.choices,
        default=ToolProfile.ALL,
        help_text="The tools its MCP connections list and may call (a connection may narrow it with /mcp?tools=).",
    )
    # The aliases it may act as (hub_agents.identity): each an alias or a pattern with `*` ("build-*").
    # Empty: unbound, acting as any alias in an open network and as itself in a strict one.
    aliases = models.JSONField(
        default=list,
        blank=True,
        help_text='The aliases it acts as: each an alias or a pattern such as "build-*". Empty: unbound.',
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind="ntok", network__isnull=False, user__isnull=True) & ~Q(role=""))
                | Q(kind="utok", user__isnull=False, network__isnull=True),
                name="token_scope_matches_kind",
            )
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or self.get_kind_display()})"

    @staticmethod
    def digest_of(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()

    @staticmethod
    def generate(kind: str) -> str:
        return f"{kind}_{secrets.token_urlsafe(32)}"


class SessionStatus(models.TextChoices):
    WORKING = "working"
    IDLE = "idle"
    BLOCKED = "blocked"
    ERROR = "error"
    WAITING_INPUT = "waiting_input"
    OFFLINE = "offline"


class AgentSession(models.Model):
    """One running agent, as it last reported itself (report_status upserts by resume_id)."""

    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="sessions")
    resume_id = models.CharField(max_length=200)
    alias = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=SessionStatus.choices)
    task = models.TextField(null=True, blank=True)
    output = models.TextField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    progress = models.FloatField(null=True, blank=True)
    server = models.CharField(max_length=200, null=True, blank=True)
    hostname = models.CharField(max_length=200, null=True, blank=True)
    agent = models.CharField(max_length=200, null=True, blank=True)
    project_dir = models.CharField(max_length=1000, null=True, blank=True)
    version = models.CharField(max_length=200, null=True, blank=True)
    tmux_name = models.CharField(max_length=200, null=True, blank=True)
    node_id = models.CharField(max_length=200, null=True, blank=True)
    session_id = models.CharField(max_length=200, null=True, blank=True)
    config_path = models.CharField(max_length=1000, null=True, blank=True)
    channels = models.TextField(null=True, blank=True)
    model = models.CharField(max_length=200, null=True, blank=True)
    # What the agent says it can do (report_status skills: short tags), and how many tasks it takes
    # on at once from the open pool (claim_task). Null: never said.
    skills = models.JSONField(null=True, blank=True)
    max_concurrent = models.PositiveSmallIntegerField(null=True, blank=True)
    # The token its last report came through (null: reported before the hub recorded it): which aliases
    # an unbound token acts as, so what the strict identity policy would take away (tokens_losing_access).
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions", db_index=True
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["network", "resume_id"], name="session_unique_network_resume_id")
        ]
        indexes = [
            models.Index(fields=["network", "alias"], name="session_network_alias"),
            models.Index(fields=["network", "last_seen_at"], name="session_network_last_seen"),
        ]

    def __str__(self) -> str:
        return f"{self.alias} ({self.resume_id})"


class Node(models.Model):
    """A machine agents run on: report_status upserts it when the agent sends a node_id, and the
    node's supervisor (`commhub-agent node`) reports itself with report_node."""

    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="nodes")
    node_id = models.CharField(max_length=200)
    node_name = models.CharField(max_length=200, null=True, blank=True)
    model = models.CharField(max_length=200, null=True, blank=True)
    runtime = models.CharField(max_length=200, null=True, blank=True)
    # What report_node says, as it last said it (null: the node never reported itself, only its agents did).
    host = models.CharField(max_length=200, null=True, blank=True)
    os = models.CharField(max_length=200, null=True, blank=True)
    agent_version = models.CharField(max_length=200, null=True, blank=True, help_text="commhub-agent's version.")
    runtimes = models.JSONField(null=True, blank=True, help_text="The runtimes it found: [{name, version}].")
    agents = models.JSONField(
        null=True, blank=True, help_text="The agents it hosts: [{alias, runtime, concurrency, running, paused}]."
    )
    slots_total = models.PositiveIntegerField(null=True, blank=True, help_text="Tasks it may run at once.")
    slots_used = models.PositiveIntegerField(null=True, blank=True, help_text="Tasks it runs now.")
    reported_at = models.DateTimeField(null=True, blank=True, help_text="When it last called report_node.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["network", "node_id"], name="node_unique_network_node_id")]

    def __str__(self) -> str:
        return self.node_name or self.node_id


def new_command_id() -> str:
    return f"cmd_{secrets.token_hex(8)}"


class CommandKind(models.TextChoices):
    """What an operator asks a node to do (node_command). Which need an alias, a task or a value:
    COMMAND_NEEDS."""

    PAUSE = "pause", "Take no new task (an agent, or the whole node)"
    RESUME = "resume", "Take tasks again (an agent, or the whole node)"
    STOP = "stop", "Stop a running task's process now"
    RESTART_SESSION = "restart_session", "Forget an agent's session: its next task starts fresh"
    DRAIN = "drain", "The node takes no new task and ends once its runs are done"
    SET_CONCURRENCY = "set_concurrency", "Change how many tasks an agent takes at once"
    TAIL = "tail", "The last lines a run printed, secrets redacted"


# Per kind: whether the command names an agent (alias), a running task (task_id) and a value
# (concurrency, or tail's line count): "required", "optional" or "refused".
COMMAND_NEEDS: dict[str, dict[str, str]] = {
    CommandKind.PAUSE: {"alias": "optional", "task_id": "refused", "value": "refused"},
    CommandKind.RESUME: {"alias": "optional", "task_id": "refused", "value": "refused"},
    CommandKind.STOP: {"alias": "optional", "task_id": "required", "value": "refused"},
    CommandKind.RESTART_SESSION: {"alias": "required", "task_id": "refused", "value": "refused"},
    CommandKind.DRAIN: {"alias": "refused", "task_id": "refused", "value": "refused"},
    CommandKind.SET_CONCURRENCY: {"alias": "required", "task_id": "refused", "value": "required"},
    CommandKind.TAIL: {"alias": "optional", "task_id": "required", "value": "optional"},
}


class CommandStatus(models.TextChoices):
    SENT = "sent"
    DONE = "done"
    FAILED = "failed"  # the node said why: reason
    EXPIRED = "expired"  # the node did not acknowledge it in time (offline?)


# The one table of allowed moves: a command is answered once, by the node or by the sweep.
COMMAND_TRANSITIONS: dict[str, frozenset[str]] = {
    CommandStatus.SENT: frozenset({CommandStatus.DONE, CommandStatus.FAILED, CommandStatus.EXPIRED}),
    CommandStatus.DONE: frozenset(),
    CommandStatus.FAILED: frozenset(),
    CommandStatus.EXPIRED: frozenset(),
}


class NodeCommand(models.Model):
    """A command sent to a node through its agents' event feeds, and what the node answered."""

    command_id = models.CharField(max_length=40, unique=True, default=new_command_id, editable=False)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="node_commands")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="commands")
    kind = models.CharField(max_length=20, choices=CommandKind.choices)
    alias = models.CharField(max_length=200, null=True, blank=True, help_text="The agent it is for; none: the node.")
    # A plain id, not a foreign key: tasks live above this app (hub_tasks); the node knows its runs.
    task_id = models.CharField(max_length=200, null=True, blank=True)
    value = models.PositiveIntegerField(null=True, blank=True, help_text="set_concurrency's tasks, tail's lines.")
    status = models.CharField(max_length=10, choices=CommandStatus.choices, default=CommandStatus.SENT)
    reason = models.TextField(null=True, blank=True, help_text="Why it failed or expired.")
    lines = models.JSONField(null=True, blank=True, help_text="tail: the run's last lines, redacted by the node.")
    sent_by = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(help_text="Expired by the sweep if still sent then.")
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["network", "-created_at"], name="command_network_newest"),
            models.Index(fields=["status", "expires_at"], name="command_status_expires"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.command_id} ({self.status})"


class AuditEntry(models.Model):
    """Who did what to whom: written in the same transaction as the action, never holding a secret."""

    class Action(models.TextChoices):
        NETWORK_CREATED = "network.created"
        NETWORK_DELETED = "network.deleted"
        NETWORK_POLICY_CHANGED = "network.policy_changed"
        MEMBERSHIP_ADDED = "membership.added"
        MEMBERSHIP_CHANGED = "membership.changed"
        MEMBERSHIP_REMOVED = "membership.removed"
        TOKEN_CREATED = "token.created"
        TOKEN_REVOKED = "token.revoked"
        TASK_RETRIED = "task.retried"
        TASK_CANCELLED = "task.cancelled"
        TASK_REASSIGNED = "task.reassigned"
        BROADCAST_SENT = "broadcast.sent"
        QUESTION_ANSWERED = "question.answered"
        APPROVAL_REQUESTED = "approval.requested"
        APPROVAL_APPROVED = "approval.approved"
        APPROVAL_REJECTED = "approval.rejected"
        APPROVAL_EXPIRED = "approval.expired"
        APPROVAL_RULE_CHANGED = "approval.rule_changed"
        CHANNEL_CREATED = "channel.created"
        CHANNEL_CONFIGURED = "channel.configured"
        LOGIN_LOCKED = "login.locked"
        WEBHOOK_CREATED = "webhook.created"
        WEBHOOK_CHANGED = "webhook.changed"
        WEBHOOK_DELETED = "webhook.deleted"
        WEBHOOK_DISABLED = "webhook.disabled"
        NODE_COMMAND_SENT = "node.command_sent"
        SCHEDULE_CHANGED = "schedule.changed"
        CAP_CHANGED = "cap.changed"
        BUDGET_CHANGED = "budget.changed"

    # Plain ids, not foreign keys: the record of a network's deletion outlives the network.
    # Empty for what happens outside any network (a login lockout): superusers see it in the admin.
    network_id = models.CharField(max_length=40, blank=True)
    network_name = models.CharField(max_length=200)
    action = models.CharField(max_length=32, choices=Action.choices)
    actor = models.CharField(max_length=300, help_text='A user ("user:alice") or a token ("ntok_AbCd1234 (ci)").')
    target = models.CharField(max_length=500)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["network_id", "-created_at", "-id"], name="audit_network_newest")]

    def __str__(self) -> str:
        return f"{self.action} {self.target} by {self.actor}"


class SigningKey(models.Model):
    """A key the hub signs with (hub_agents.signing): made on first need, one for each purpose, so
    that processes racing to that first need all end up with the same one. Its public half is
    published at /.well-known/jwks.json; the private one never leaves the database."""

    class Purpose(models.TextChoices):
        AGENT_CARDS = "agent_cards", "A2A agent cards"

    purpose = models.CharField(max_length=32, choices=Purpose.choices, unique=True)
    kid = models.CharField(max_length=64, unique=True, help_text="The key's RFC 7638 thumbprint.")
    private_pem = models.TextField(editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    def __str__(self) -> str:
        return f"{self.get_purpose_display()} key {self.kid}"
