"""One operation's spec, `Tool`: its arguments, the service it calls, how the answer renders, and
the one door every call passes (`Tool.execute`), whatever the transport (MCP, REST, dashboard): it
refuses unknown and missing arguments, counts the write rate limit, parses every argument, asks the
approval rules, and only then calls the service with typed values. The specs themselves are in
hub_tools.tools (the contract's and the hub's own) and the modules it gathers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hub_agents import identity
from hub_agents.actors import Actor
from hub_agents.identity import Caller, Speaks
from hub_approvals.services import Held, approval_gate
from hub_core import logcontext, tracing
from hub_core.errors import HubError, invalid_argument
from hub_tools import results as R
from hub_tools.params import Param
from hub_tools.ratelimit import write_rate_check
from hub_tools.replays import KEY, replayed_or_run
from hub_tools.schema import Schema, compact_input, compact_output

Parsed = dict[str, Any]

# Versions before 2025-06-18 know neither tool titles nor output schemas.
_TITLES_SINCE = "2025-06-18"


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    params: dict[str, Param]
    service: Callable[..., Any]
    render: Callable[[Any], R.Fields]  # the service's answer as the result object's fields
    output: Schema
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    # Checked before any argument is read: who may call the tool at all (say, only a network token).
    guard: Callable[[Actor], None] | None = None
    # The arguments that name the caller (an alias it acts as, from_session), and how
    # (hub_agents.identity): checked against the token's binding and the network's policy before the
    # service runs. Every other alias argument names a target, which anyone who may write may name.
    callers: dict[str, Caller] = field(default_factory=dict)
    # Whether a network's approval rules may hold this tool's calls (hub_approvals): what an operator
    # or a dispatching agent starts. The agents' own protocol (heartbeats, acks, replies, completions,
    # claims, questions) is never held: holding it would stall the work the approval is about.
    gateable: bool = False

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(name for name, param in self.params.items() if param.required)

    @property
    def input_properties(self) -> dict[str, Schema]:
        return {name: param.schema for name, param in self.params.items()}

    def definition(self, version: str) -> dict[str, Any]:
        """The tool as MCP's tools/list publishes it: compact (hub_tools.schema.compact_input), each
        rule every tool shares said once in the server instructions instead."""
        hints: dict[str, Any] = {"readOnlyHint": self.read_only, "openWorldHint": False}
        if not self.read_only:
            hints |= {"destructiveHint": self.destructive, "idempotentHint": self.idempotent}
        properties = {name: compact_input(p.schema, describe=not p.said_once) for name, p in self.params.items()}
        definition: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": {
                "type": "object",
                "properties": properties,
                "required": list(self.required),
                # No additionalProperties: the server instructions say once that an unknown argument is
                # refused (and Tool.execute refuses it, naming the tool's arguments).
            },
            "annotations": hints,
        }
        if version >= _TITLES_SINCE:
            definition["title"] = self.title
            definition["outputSchema"] = compact_output(self.output)
        else:  # before titles: the annotations carry it
            hints["title"] = self.title
        return definition

    def execute(self, actor: Actor, arguments: dict[str, Any], *, approved: bool = False) -> Any:
        """The service's answer, or Held when an approval rule holds the call; HubError for a refusal,
        unknown, missing and invalid arguments included. `approved`: a held call running now, as its
        caller (counted against the write limit and checked by the rules when it was made)."""
        with tracing.tool(self.name):  # traces on: the span "tool <name>", every transport's calls alike
            return self._execute(actor, arguments, approved=approved)

    def _execute(self, actor: Actor, arguments: dict[str, Any], *, approved: bool) -> Any:
        actor, parsed = self.prepared(actor, arguments, approved=approved)
        if self.gateable and not approved:
            held = approval_gate(actor=actor, tool=self.name, arguments=arguments, parsed=parsed)
            if held is not None:
                return held
        return self.service(actor=actor, **parsed)

    def prepared(self, actor: Actor, arguments: dict[str, Any], *, approved: bool = False) -> tuple[Actor, Parsed]:
        """What the service runs as and with, every check before it made: the actor (narrowed to the
        networks where it may be the alias it names) and the parsed arguments; HubError for a refusal.
        The fast lane (commhub.hot) checks a call here too, once, before it runs its statement."""
        unknown = sorted(set(arguments) - set(self.params))
        if unknown:
            raise invalid_argument(
                ", ".join(unknown), f"is not an argument of {self.name} (its arguments: {', '.join(self.params)})"
            )
        missing = [name for name in self.required if name not in arguments]
        if missing:
            raise invalid_argument(", ".join(missing), "is required", kind="required")
        named = arguments.get("network_id")
        if isinstance(named, str) and named in actor.roles:  # the call's network, on its log lines from here
            logcontext.set_network(named)
        if not self.read_only and not approved:
            write_rate_check(actor)
        if self.guard is not None:
            self.guard(actor)
        # Every argument, given or not (a left-out one parses as null: its default); the replay key is
        # Tool.run's, never the service's.
        parsed = {name: param.parse(name, arguments.get(name)) for name, param in self.params.items() if name != KEY}
        return self._speaking(actor, parsed), parsed

    def _speaking(self, actor: Actor, parsed: dict[str, Any]) -> Actor:
        """Check (and fill in) the arguments naming the caller; the actor the service runs as. A read
        covers only the networks where the caller may be that alias (a user in several networks)."""
        if not self.callers:
            return actor
        named = parsed.get("network_id")
        networks = actor.readable_networks(named)
        if not self.read_only:
            if named is not None:
                actor.check_write(named)  # a viewer's write is refused as every write of a viewer is
            networks = actor.writable_networks(named)
        for name, caller in self.callers.items():
            if caller.speaks is Speaks.SENDER:
                parsed[name] = identity.sender(actor, networks, parsed[name])
                continue
            if parsed[name] is None and caller.fill:
                parsed[name] = identity.filled(actor)
            if parsed[name] is None:
                continue
            if not self.read_only:  # a write acts in each of them: the caller must be the alias in all
                for network_id in networks:
                    identity.speak_as(actor, network_id, parsed[name], caller.speaks)
                continue
            allowed = identity.speaking_networks(actor, networks, parsed[name], caller.speaks)
            if allowed != networks:
                actor = replace(actor, roles={network_id: actor.roles[network_id] for network_id in allowed})
                networks = allowed
        return actor

    def run(self, actor: Actor, arguments: dict[str, Any], *, approved: bool = False) -> dict[str, Any]:
        """The contract's result object; HubError for a refusal. With an idempotency_key (the tools
        that take one), the first call's answer again for a repeat (hub_tools.replays)."""
        key = self.params[KEY].parse(KEY, arguments.get(KEY)) if KEY in self.params else None
        if key is None:
            return self._run(actor, arguments, approved=approved)
        return replayed_or_run(
            actor=actor,
            tool=self.name,
            key=key,
            arguments=arguments,
            run=lambda: self._run(actor, arguments, approved=approved),
        )

    def _run(self, actor: Actor, arguments: dict[str, Any], *, approved: bool) -> dict[str, Any]:
        return self.outcome(self.execute(actor, arguments, approved=approved))

    def outcome(self, answer: Any) -> dict[str, Any]:
        """The contract's result object of the service's answer (or of a held call)."""
        if isinstance(answer, Held):
            return {"ok": True, **R.held(answer)}
        return {"ok": True, **self.render(answer)}

    def call(self, actor: Actor, arguments: dict[str, Any]) -> dict[str, Any]:
        """The result object either way: a refusal becomes `{"ok": false, ...}` for the model to read."""
        try:
            return self.run(actor, arguments)
        except HubError as refusal:
            return refusal.as_result()
