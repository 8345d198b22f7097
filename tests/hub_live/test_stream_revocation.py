"""Open streams end when their right to exist does (issue 12, items 1, 2, 3 and 6).

Against a live hub over real HTTP: an SSE stream whose token is revoked, or whose user is removed
from the network, is closed while events keep flowing; the dashboard socket is closed at logout and
at a password change; and only callers that may write keep an agent online.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import pytest
import websockets
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.test import Client

from hub_agents.models import AgentSession, Membership
from hub_agents.services import membership_remove, membership_set, network_policy_set, token_create, token_revoke
from hub_events.selectors import events_position

pytestmark = pytest.mark.django_db(transaction=True)

# Short, so the tests that do not measure the default do not wait 15 s per check.
FAST = {"COMMHUB_STREAM_RECHECK_SECONDS": "1"}
# The bound: a stream ends within 15 s of losing its right to exist.
CLOSED_WITHIN = 15.0
LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


@dataclass
class Stream:
    """GET /events/{alias} read on a thread: every line with when it came, and when the stream ended."""

    lines: list[tuple[float, str]] = field(default_factory=list)
    ended_at: float | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def task_ids(self) -> list[str]:
        return [json.loads(line[6:])["payload"]["task_id"] for _, line in self.lines if line.startswith("data: ")]

    def keepalives(self) -> int:
        return sum(1 for _, line in self.lines if line == ": keepalive")

    def wait_for(self, condition: Callable[[], bool], within: float) -> None:
        deadline = time.monotonic() + within
        while not condition():
            assert not self.done.is_set() or condition(), f"the stream ended early: {self.error!r}"
            assert time.monotonic() < deadline, "the stream did not get there in time"
            time.sleep(0.05)


def open_stream(url: str, token: str, alias: str, *, last_event_id: int | None = None, within: float = 60) -> Stream:
    stream = Stream()
    headers = {"Authorization": f"Bearer {token}"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)

    def read() -> None:
        try:
            with httpx.stream("GET", f"{url}/events/{alias}", headers=headers, timeout=within) as reply:
                assert reply.status_code == 200, reply.read()
                for line in reply.iter_lines():
                    stream.lines.append((time.monotonic(), line))
                    if time.monotonic() > stream_deadline:
                        return  # still open: the test's assertion on ended_at fails it
            stream.ended_at = time.monotonic()
        except BaseException as error:  # shown by the assertions that read the stream
            stream.error = error
        finally:
            stream.done.set()

    stream_deadline = time.monotonic() + within
    threading.Thread(target=read, daemon=True).start()
    return stream


class Sender:
    """Sends a task to an alias every half second, on a thread, until stopped; remembers when each left."""

    def __init__(self, url: str, token: str, alias: str) -> None:
        self.url, self.alias = url, alias
        self.headers = {"Authorization": f"Bearer {token}"}
        self.sent: list[tuple[float, str]] = []  # (time the send started, task id)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        n = 0
        while not self.stop.is_set():
            started = time.monotonic()
            reply = httpx.post(
                f"{self.url}/api/v1/tasks", json={"alias": self.alias, "task": f"task {n}"}, headers=self.headers
            )
            assert reply.status_code == 201, reply.text
            self.sent.append((started, reply.json()["task_id"]))
            n += 1
            self.stop.wait(0.5)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)

    def sent_before(self, moment: float) -> set[str]:
        return {task_id for started, task_id in self.sent if started < moment}


def ended_after(stream: Stream, moment: float, within: float) -> float:
    """Seconds from `moment` until the stream ended; fails if it is still open `within` s later."""
    stream.done.wait(timeout=max(moment + within + 5 - time.monotonic(), 0))
    assert stream.error is None, f"the stream failed instead of ending: {stream.error!r}"
    assert stream.ended_at is not None, f"the stream was still open {within:.0f} s later"
    return stream.ended_at - moment


def test_the_default_recheck_interval_is_fifteen_seconds():
    assert settings.COMMHUB_STREAM_RECHECK_SECONDS == 15


def test_a_revoked_tokens_stream_closes_within_15s_while_tasks_keep_arriving(hub_server, network):
    hub = hub_server()  # the default interval: this is the test of the 15 s
    token, raw = token_create(network=network, role="member", name="listener")
    _, sender_raw = token_create(network=network, role="member", name="sender")
    stream = open_stream(hub.url, raw, "coder", last_event_id=events_position(network_id=network.id), within=40)
    sender = Sender(hub.url, sender_raw, "coder")
    try:
        stream.wait_for(lambda: len(stream.task_ids()) >= 2, within=15)
        token_revoke(token=token)
        revoked_at = time.monotonic()

        took = ended_after(stream, revoked_at, CLOSED_WITHIN)
        time.sleep(1.5)  # tasks go on arriving after the close
    finally:
        sender.close()

    assert took <= CLOSED_WITHIN
    assert sum(1 for started, _ in sender.sent if revoked_at < started < stream.ended_at) >= 2  # while tasks flowed
    received = set(stream.task_ids())
    assert len(received) >= 2
    assert received <= sender.sent_before(stream.ended_at), "no frame for tasks sent after the close"
    assert sender.sent[-1][1] not in received


def test_a_user_tokens_stream_closes_after_removal_from_the_network_while_tasks_flow(
    hub_server, network, django_user_model
):
    hub = hub_server(env=FAST)
    user = django_user_model.objects.create_user("carol")
    membership_set(user=user, network=network, role="member")
    _, raw = token_create(user=user, name="carol's laptop")
    _, sender_raw = token_create(network=network, role="member", name="sender")
    stream = open_stream(hub.url, raw, "coder", last_event_id=events_position(network_id=network.id), within=40)
    sender = Sender(hub.url, sender_raw, "coder")
    try:
        stream.wait_for(lambda: len(stream.task_ids()) >= 2, within=15)
        membership_remove(user=user, network=network, by="test")
        removed_at = time.monotonic()

        took = ended_after(stream, removed_at, CLOSED_WITHIN)
        time.sleep(1.5)  # tasks go on arriving after the close
    finally:
        sender.close()

    assert took <= CLOSED_WITHIN
    assert sender.sent[-1][0] > removed_at  # tasks went on flowing
    assert not Membership.objects.filter(user=user).exists()
    assert set(stream.task_ids()) <= sender.sent_before(stream.ended_at)
    assert sender.sent[-1][1] not in set(stream.task_ids())


def test_a_switch_to_strict_closes_an_unbound_tokens_stream_and_keeps_a_bound_ones(hub_server, network):
    hub = hub_server(env=FAST)
    _, unbound_raw = token_create(network=network, role="member", name="unbound listener")
    _, bound_raw = token_create(network=network, role="member", name="bound listener", aliases=["coder"])
    _, sender_raw = token_create(network=network, role="member", name="sender")
    position = events_position(network_id=network.id)
    unbound = open_stream(hub.url, unbound_raw, "coder", last_event_id=position, within=40)
    bound = open_stream(hub.url, bound_raw, "coder", last_event_id=position, within=40)
    sender = Sender(hub.url, sender_raw, "coder")
    try:
        unbound.wait_for(lambda: len(unbound.task_ids()) >= 2, within=15)
        network_policy_set(network=network, policy="strict", by="test")
        switched_at = time.monotonic()

        took = ended_after(unbound, switched_at, CLOSED_WITHIN)
        count = len(sender.sent)
        bound.wait_for(lambda: sender.sent[-1][0] > unbound.ended_at and len(bound.task_ids()) > count, within=15)
    finally:
        sender.close()

    assert took <= CLOSED_WITHIN
    assert bound.ended_at is None  # the token bound to coder still hears its tasks
    assert set(unbound.task_ids()) <= sender.sent_before(unbound.ended_at)


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_only_a_caller_that_may_write_keeps_an_agent_online(hub_server, network, role):
    hub = hub_server(env=FAST)
    AgentSession.objects.create(network=network, resume_id="r1", alias="coder", status="idle")
    AgentSession.objects.filter(alias="coder").update(last_seen_at=LONG_AGO)
    _, raw = token_create(network=network, role=role, name=f"{role} listener")

    if role == "viewer":  # an agent's stream is its inbox: a viewer acts as no agent (hub_agents.identity)
        with httpx.stream("GET", f"{hub.url}/events/coder", headers={"Authorization": f"Bearer {raw}"}) as refused:
            assert refused.status_code == 403, "a viewer's stream was opened"
            body = json.loads(refused.read())
        seen_after_connect = seen_after_keepalives = AgentSession.objects.get(alias="coder").last_seen_at
    else:
        stream = open_stream(hub.url, raw, "coder", within=30)
        stream.wait_for(lambda: stream.keepalives() >= 1, within=15)
        seen_after_connect = AgentSession.objects.get(alias="coder").last_seen_at
        AgentSession.objects.filter(alias="coder").update(last_seen_at=LONG_AGO)  # keepalives must bring it back
        stream.wait_for(lambda: stream.keepalives() >= 3, within=15)
        seen_after_keepalives = AgentSession.objects.get(alias="coder").last_seen_at
    reply = httpx.get(f"{hub.url}/api/v1/sessions/coder", headers={"Authorization": f"Bearer {raw}"})

    assert reply.status_code == 200, reply.text
    if role == "viewer":
        assert (body["ok"], body["error"]) == (False, "alias_not_yours"), body
        assert (seen_after_connect, seen_after_keepalives) == (LONG_AGO, LONG_AGO)
        assert reply.json()["session"]["status"] == "offline"
    else:
        assert seen_after_connect.year >= 2026 and seen_after_keepalives.year >= 2026
        assert reply.json()["session"]["status"] == "idle"


# The dashboard socket ------------------------------------------------------------------------


def signed_in_browser(url: str, user: AbstractBaseUser) -> httpx.Client:
    """A browser holding a real session of the user (made as the login page makes it) and a CSRF cookie."""
    session = Client()
    session.force_login(user)
    browser = httpx.Client(base_url=url, follow_redirects=False, timeout=30)
    browser.cookies.set("sessionid", session.cookies["sessionid"].value, domain=httpx.URL(url).host)
    page = browser.get("/fleet/")  # signed in, and given the CSRF cookie its forms post with
    assert page.status_code == 200, page.text[:500]
    assert "csrftoken" in browser.cookies
    return browser


def log_out(browser: httpx.Client) -> None:
    reply = browser.post("/logout/", headers={"X-CSRFToken": browser.cookies["csrftoken"]})
    assert reply.status_code == 302, reply.text[:500]


def socket_closed_after(url: str, cookie: str, lose_the_right: Callable[[], None], sender_raw: str) -> dict:
    """Open /ws/dashboard, see it live, call `lose_the_right`, then read while tasks flow until it closes."""
    ws_url = url.replace("http", "ws") + "/ws/dashboard"
    sender = Sender(url, sender_raw, "coder")

    async def watch() -> dict:
        async with websockets.connect(ws_url, origin=url, additional_headers={"Cookie": cookie}) as socket:
            assert json.loads(await socket.recv())["type"] == "hello"
            assert json.loads(await asyncio.wait_for(socket.recv(), 10))["type"] == "new_task"  # live
            await asyncio.to_thread(lose_the_right)
            lost_at = time.monotonic()
            frames = 0
            try:
                while True:
                    await asyncio.wait_for(socket.recv(), max(lost_at + CLOSED_WITHIN - time.monotonic(), 0.01))
                    frames += 1
            except websockets.ConnectionClosed as closed:
                return {"took": time.monotonic() - lost_at, "code": closed.rcvd.code if closed.rcvd else None}
            except TimeoutError:
                return {"took": None, "frames": frames}

    try:
        return asyncio.run(watch())
    finally:
        sender.close()


@pytest.mark.parametrize("how", ["logout", "password_change"])
def test_the_dashboard_socket_closes_when_its_session_no_longer_signs_in(hub_server, network, django_user_model, how):
    hub = hub_server(env=FAST)
    operator = django_user_model.objects.create_user("operator", password="first password 1")
    membership_set(user=operator, network=network, role="viewer")
    _, sender_raw = token_create(network=network, role="member", name="sender")
    browser = signed_in_browser(hub.url, operator)

    def lose_the_right() -> None:
        if how == "logout":
            log_out(browser)
        else:  # as the admin or `manage.py changepassword` would
            operator.set_password("second password 2")
            operator.save()

    result = socket_closed_after(hub.url, f"sessionid={browser.cookies['sessionid']}", lose_the_right, sender_raw)

    assert result["took"] is not None, f"the socket was still open {CLOSED_WITHIN:.0f} s later: {result}"
    assert result["took"] <= CLOSED_WITHIN
    assert result["code"] == 4401


def test_the_dashboard_socket_of_a_signed_in_operator_stays_open(hub_server, network, django_user_model):
    """The re-check does not end a socket whose session still stands (the control for the tests above)."""
    hub = hub_server(env=FAST)
    operator = django_user_model.objects.create_user("operator", password="first password 1")
    membership_set(user=operator, network=network, role="viewer")
    _, sender_raw = token_create(network=network, role="member", name="sender")
    browser = signed_in_browser(hub.url, operator)
    ws_url = hub.url.replace("http", "ws") + "/ws/dashboard"
    cookie = f"sessionid={browser.cookies['sessionid']}"

    async def watch() -> int:
        async with websockets.connect(ws_url, origin=hub.url, additional_headers={"Cookie": cookie}) as socket:
            assert json.loads(await socket.recv())["type"] == "hello"
            frames, until = 0, time.monotonic() + 4  # several re-checks at one a second
            while time.monotonic() < until:
                try:
                    await asyncio.wait_for(socket.recv(), until - time.monotonic())
                    frames += 1
                except TimeoutError:
                    break
            return frames

    sender = Sender(hub.url, sender_raw, "coder")
    try:
        frames = asyncio.run(watch())
    finally:
        sender.close()

    assert frames >= 3
    assert browser.get("/fleet/").status_code == 200  # the re-check left the browser signed in


# The session test the socket's re-check uses ----------------------------------------------------


def test_a_session_stands_for_its_user_until_logout_or_a_password_change(network, django_user_model):
    from django.contrib.sessions.models import Session

    from hub_agents.services import session_actor

    operator = django_user_model.objects.create_user("operator", password="first password 1")
    membership_set(user=operator, network=network, role="viewer")
    browser = Client()
    browser.force_login(operator)
    key = browser.cookies["sessionid"].value

    actor = session_actor(session_key=key)
    assert (actor.user_id, dict(actor.roles)) == (operator.pk, {network.id: "viewer"})
    operator.set_password("second password 2")
    operator.save()
    assert session_actor(session_key=key) is None
    assert Session.objects.filter(session_key=key).exists()  # judged, not changed: that is the browser's to do

    browser.force_login(operator)
    key = browser.cookies["sessionid"].value
    assert session_actor(session_key=key) is not None
    browser.logout()
    assert session_actor(session_key=key) is None
    assert session_actor(session_key=None) is None


def test_a_session_signed_before_a_secret_key_rotation_still_stands_and_keeps_its_key(
    network, django_user_model, settings
):
    from django.contrib.sessions.models import Session

    from hub_agents.services import session_actor

    operator = django_user_model.objects.create_user("operator", password="first password 1")
    browser = Client()
    browser.force_login(operator)
    key = browser.cookies["sessionid"].value
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-" + "x" * 40

    actor = session_actor(session_key=key)

    assert actor is not None and actor.user_id == operator.pk
    # Django's own request would move it to a new key; a socket's re-check must not sign the browser out.
    assert Session.objects.filter(session_key=key).exists()


def test_a_bad_recheck_interval_stops_start_up_naming_it():
    import os
    import subprocess
    import sys
    from pathlib import Path

    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "commhub.settings", "COMMHUB_STREAM_RECHECK_SECONDS": "0"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "COMMHUB_STREAM_RECHECK_SECONDS must be at least 1" in result.stderr
