"""The typed catalogues: every event type's payload declared by the app that publishes it (with the
dashboard regions it touches), every error code declared and documented."""

from __future__ import annotations

import ast
import json
import re
import sys
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest

from hub_api import errors as rest_errors
from hub_api.endpoints import ERROR_SCHEMA
from hub_core import validate
from hub_core.errors import HubError, Problem, error_catalogue
from hub_core.events import EVENT_SCHEMA, EventPayload, EventType, HubEvent, event_payloads, event_routes, publish
from hub_dashboard import wording
from hub_dashboard.wording import refusal_for_operator
from hub_events.models import OPERATORS, Event
from hub_tools.tools import TOOLS_BY_NAME

# --- events ---------------------------------------------------------------------------------------

REGIONS = {  # every live region the templates hold (data-live="...")
    "fleet", "pool", "nodes", "task", "tasks", "completions", "questions", "questions_count", "approvals",
    "approvals_count", "channels", "channel_posts", "caps", "budgets",
}  # fmt: skip


def sample(declared: Any, name: str) -> Any:
    """A value of the declared type, as a publisher would put it in the payload."""
    origin = get_origin(declared)
    if origin in (Union, types.UnionType):
        return sample(next(option for option in get_args(declared) if option is not type(None)), name)
    if origin is list:
        return [sample(get_args(declared)[0], name), sample(get_args(declared)[0], f"{name}-2")]
    return {str: f"{name}-值", int: 7, float: 1.5, bool: True}[declared]


def sample_payload(declaration: type[EventPayload]) -> EventPayload:
    hints = get_type_hints(declaration)
    return declaration(**{name: sample(hints[name], name) for name in declaration.keys()})


def test_every_event_type_is_declared_once_outside_the_core():
    declared = event_payloads()
    assert list(declared) == list(EventType)
    for kind, declaration in declared.items():
        assert declaration.event_type == kind
        assert not declaration.__module__.startswith("hub_core"), "an app declares its own events"
        assert declaration.__module__.endswith(".events")
        assert EVENT_SCHEMA[kind] == frozenset(declaration.keys())


@pytest.mark.parametrize("kind", list(EventType))
def test_each_event_type_round_trips_through_json(kind):
    declaration = event_payloads()[kind]
    event = HubEvent(type=kind, network_id="net_1", audience=("coder",), payload=sample_payload(declaration))
    assert list(event.payload) == list(declaration.keys())  # the declared order is the wire order
    wire = json.dumps(event.payload)
    assert json.dumps(json.loads(wire)) == wire
    assert declaration.check(json.loads(wire)) == []
    assert declaration(**json.loads(wire)).as_payload() == event.payload


@pytest.mark.parametrize("kind", list(EventType))
def test_a_payload_of_the_wrong_shape_or_type_is_found(kind):
    declaration = event_payloads()[kind]
    good = sample_payload(declaration).as_payload()
    assert declaration.check({**good, "surprise": 1})
    first = next(iter(good))
    assert declaration.check({**good, first: object()})


def test_an_event_published_comes_back_from_the_log_as_it_went(db, network):
    for kind, declaration in event_payloads().items():
        payload = sample_payload(declaration).as_payload()
        publish(HubEvent(type=kind, network_id=network.id, audience=("coder",), payload=payload))
        row = Event.objects.filter(type=kind, audience=OPERATORS).latest("id")
        frame = json.loads(json.dumps(row.as_frame()))
        assert frame["type"] == kind and frame["payload"] == payload
        assert declaration.check(frame["payload"]) == []


def call(tool: str, actor, **arguments) -> dict[str, Any]:
    return TOOLS_BY_NAME[tool].run(actor, arguments)


def test_what_the_services_publish_fits_the_declarations(db, network, agent, make_actor):
    """The real publishers, validated: every event a working day writes fits its declared types."""
    node_agent = {"runtime": "command", "concurrency": 1, "running": 0}
    for alias in ("coder", "helper"):
        call("report_status", agent, resume_id=f"{alias}-r", alias=alias, status="idle", skills=["python"])
    call("report_node", agent, node_id="n1", host="h1", agents=[node_agent | {"alias": "coder"}])
    task_id = call("send_task", agent, alias="coder", task="build", from_session="lead", context="ctx")["task_id"]
    call("report_status", agent, resume_id="coder-r", alias="coder", status="working", task=task_id, progress=0.5)
    question_id = call("ask_operator", agent, task_id=task_id, question="which way?", options=["a", "b"])["question_id"]
    operator = make_actor(user="olive", memberships={network: "owner"})
    call("answer_question", operator, question_id=question_id, answer="a")
    call("send_reply", agent, alias="lead", text="done", in_reply_to=task_id, from_session="coder")
    call("send_message", agent, alias="coder", message="hello", from_session="lead")
    call("broadcast", agent, message="all hands")
    call("send_task", agent, alias="pool", task="open", from_session="lead", required_skills=["python"])
    cancelled = call("send_task", agent, alias="helper", task="never mind", from_session="lead")["task_id"]
    call("cancel_task", agent, task_id=cancelled)
    channel_id = call("channel_create", agent, name="room", alias="coder", members=["helper"])["channel_id"]
    call("channel_post", agent, channel_id=channel_id, alias="coder", content="hi all")

    seen = set()
    for row in Event.objects.filter(network=network, audience=OPERATORS):
        payload = json.loads(json.dumps(row.payload))
        assert event_payloads()[EventType(row.type)].check(payload) == [], row.type
        seen.add(row.type)
    assert seen >= {
        "session_updated", "node_updated", "new_task", "task_updated", "question_asked", "question_answered",
        "new_reply", "new_message", "broadcast", "new_open_task", "channel_post",
    }  # fmt: skip


def test_each_event_touches_only_regions_the_dashboard_has():
    routes = event_routes()
    assert set(routes) == {str(kind) for kind in EventType}
    for touches in routes.values():
        assert {touch["region"] for touch in touches} <= REGIONS
        assert "fleet" in {touch["region"] for touch in touches}  # its addressees' cards, at least
    for kind, declaration in event_payloads().items():
        for touch in declaration.touches:
            named = set(touch.keys) | set(touch.subject) | {field for field, _ in touch.when}
            assert named <= set(declaration.keys()), (kind, touch)


def test_the_page_script_routes_on_declarations_not_on_type_names():
    script = sys.modules["hub_dashboard"].__path__[0] + "/static/dashboard/live.js"
    with open(script, encoding="utf-8") as file:
        text = file.read()
    assert not [str(kind) for kind in EventType if f'"{kind}"' in text]


# --- errors ---------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = {".venv", "tests", "agent", "bench", "node_modules"}


def raised_codes() -> dict[str, list[str]]:
    """Every error code the hub's code can answer, where: HubError(...) (its helpers included: they
    call it), REST's refusal(...) and its DRF table, and {"error": "<code>"} bodies."""
    found: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in SKIPPED or "migrations" in relative.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in (
                "HubError",
                "refusal",
            ):
                code = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "code"), None)
                if not isinstance(code, ast.Constant):
                    if getattr(node.func, "id", getattr(node.func, "attr", None)) == "refusal":
                        continue  # refusal(exc.code, ...): passes on a code raised elsewhere
                    pytest.fail(f"{relative}:{node.lineno}: a HubError's code must be a literal, to be catalogued")
                found.setdefault(code.value, []).append(f"{relative}:{node.lineno}")
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "error" and isinstance(value, ast.Constant):
                        if isinstance(value.value, str) and value.value.isidentifier():
                            found.setdefault(value.value, []).append(f"{relative}:{node.lineno}")
    for code in rest_errors._CODES.values():
        found.setdefault(code, []).append("hub_api/errors.py")
    return found


def test_every_code_raised_is_declared_and_documented():
    catalogue = error_catalogue()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)` \| \d{3} \|", readme, flags=re.MULTILINE))
    described = ERROR_SCHEMA["properties"]["error"]["description"]
    raised = raised_codes()
    assert "task_not_found" in raised and "alias_not_yours" in raised  # the scan finds helpers' codes
    undeclared = {code: where for code, where in raised.items() if code not in catalogue}
    assert not undeclared, "declare these codes in their app's errors.py"
    assert not set(raised) - documented, "add these codes to README's table (REST API)"
    assert not [code for code in raised if not re.search(rf"\b{code}\b", described)]
    assert set(catalogue) == documented, "README's table lists exactly the declared codes"
    assert not set(catalogue) - set(raised), "a declared code nothing answers"


def test_each_app_declares_its_own_codes():
    catalogue = error_catalogue()
    assert catalogue["task_not_found"].declared_in == "hub_tasks.errors"
    assert catalogue["alias_not_yours"].declared_in == "hub_agents.errors"
    assert catalogue["channel_not_found"].declared_in == "hub_channels.errors"
    assert catalogue["webhook_not_found"].declared_in == "hub_webhooks.errors"
    assert {code for code, entry in catalogue.items() if entry.declared_in == "hub_core.errors"} == {
        "invalid_argument", "permission_denied", "unauthorized", "request_too_large",
    }  # fmt: skip
    for entry in catalogue.values():
        assert 400 <= entry.status < 600 and entry.meaning.endswith(".")


# --- invalid_argument's kinds ---------------------------------------------------------------------


def refused(check) -> HubError:
    with pytest.raises(HubError) as caught:
        check()
    return caught.value


@pytest.mark.parametrize(
    ("check", "kind", "detail", "said"),
    [
        (lambda: validate.text("context", None, max_len=5, required=True), "required", {}, "Context is required."),
        (lambda: validate.text("context", "  ", max_len=5, required=True), "empty", {}, "Context is required."),
        (
            lambda: validate.text("context", "x" * 6, max_len=5),
            "too_long",
            {"max": 5},
            "Context is too long: at most 5 characters.",
        ),
        (lambda: validate.text("context", "a\x00", max_len=5), "not_text", {}, "Context contains characters"),
        (
            lambda: validate.choice("priority", "urgent", ["low", "high"]),
            "not_one_of",
            {"choices": ["low", "high"]},
            "Choose one of: low, high.",
        ),
        (lambda: validate.text("alias", None, max_len=5, required=True), "required", {}, "Choose or type the agent"),
        (lambda: validate.text("context", 3, max_len=5), "other", {}, "Context must be a string, not int."),
    ],
)
def test_invalid_argument_carries_a_kind_the_dashboard_words(check, kind, detail, said):
    refusal = refused(check)
    assert refusal.problem == Problem(kind, detail)
    assert "kind" not in refusal.as_result()  # the wire's result keys stay as they were
    assert refusal_for_operator(refusal).text.startswith(said)


def test_the_dashboard_words_kinds_not_english():
    source = Path(wording.__file__).read_text(encoding="utf-8")
    assert "import re" not in source and "re.search" not in source
