"""`make run` (python -m commhub.run): the web server, the sweep and the webhooks deliverer as one
command; stopping it stops all three, and one of them dying stops the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from hub_tasks.models import Task
from hub_webhooks.services import webhook_create
from tests.helpers import ROOT
from tests.helpers.live import Hub, rest, wait_for
from tests.helpers.webhooks import Receiver

WORKERS = {"sweep", "webhooks"}


def make_run(port: int) -> list[str]:
    return [sys.executable, "-m", "commhub.run", "--port", str(port), "--sweep-interval", "0.2"]


@pytest.fixture
def hub(hub_server) -> Hub:
    return hub_server(env={"COMMHUB_WEBHOOKS_ALLOW_PRIVATE": "true"}, command=make_run)


def children(hub: Hub) -> dict[str, int]:
    """The run's children by what they run: web, sweep, webhooks."""
    pids = Path(f"/proc/{hub.process.pid}/task/{hub.process.pid}/children").read_text().split()
    found = {}
    for pid in map(int, pids):
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        found["web" if "commhub.serving" in argv else argv[2]] = pid
    return found


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"  # exited, not yet reaped by init


def test_make_run_serves_and_settles_a_lapsed_lease_and_delivers_its_webhook_with_nobody_reading(
    hub, agent_http, make_actor, network, settings
):
    settings.COMMHUB_WEBHOOKS_ALLOW_PRIVATE = True  # the receiver is on 127.0.0.1
    receiver = Receiver()
    try:
        _, receiver.secret = webhook_create(
            actor=make_actor(network, "owner"), network_id=network.id, url=receiver.url, event_types=["lease_lost"]
        )
        assert set(children(hub)) == {"web"} | WORKERS
        lapsing = {"lease_seconds": 1, "on_lost": "fail"}
        task = {"alias": "coder", "task": "index the logs", "from_session": "lead", **lapsing}
        task_id = rest(hub, agent_http, "POST", "/tasks", json=task)["task_id"]
        assert rest(hub, agent_http, "POST", f"/tasks/{task_id}/ack", json={"from_session": "coder"})["ok"]

        # Nobody calls the hub again: the sweep settles the lease, the deliverer posts the event.
        (lost,) = wait_for(lambda: receiver.received, within=30, what="the lease_lost webhook")
        assert (lost.event_type, lost.signed, lost.frame["payload"]["task_id"]) == ("lease_lost", True, task_id)
        assert Task.objects.get(pk=task_id).status == "failed"
    finally:
        receiver.stop()


def test_stopping_make_run_stops_its_three_processes(hub):
    pids = children(hub)

    hub.process.send_signal(signal.SIGINT)  # Ctrl-C

    assert hub.process.wait(timeout=30) == 0
    assert all(gone(pid) for pid in pids.values()), pids
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{hub.url}/healthz", timeout=2)


def test_a_worker_dying_stops_the_hub_with_its_failure(hub):
    pids = children(hub)

    os.kill(pids["sweep"], signal.SIGKILL)
    wait_for(lambda: "sweep exited" in hub.log.read_text(), within=10, what="the hub to notice")
    hub.process.send_signal(signal.SIGINT)  # Ctrl-C while it stops: the failure still shows

    assert hub.process.wait(timeout=30) != 0
    assert all(gone(pid) for pid in pids.values()), pids


def test_make_run_killed_takes_its_processes_with_it(hub):
    pids = children(hub)

    hub.process.kill()
    hub.process.wait()

    wait_for(lambda: all(gone(pid) for pid in pids.values()), within=30, what=f"the orphans {pids} to stop")


def test_no_workers_serves_the_web_alone(hub_server):
    hub = hub_server(command=lambda port: [*make_run(port), "--no-workers"])

    assert set(children(hub)) == {"web"}
    hub.process.terminate()
    assert hub.process.wait(timeout=30) == 0


def test_a_bad_option_is_refused_before_anything_starts():
    ran = subprocess.run([sys.executable, "-m", "commhub.run", "--port", "eighty"], capture_output=True, text=True)

    assert ran.returncode == 2 and "invalid int value" in ran.stderr


@pytest.mark.slow  # a process of its own: seconds
@pytest.mark.parametrize(
    ("worker", "says"),
    [
        (["sweep", "--interval", "0.1"], "the sweep failed; the next one runs in 0.1 s"),
        (["webhooks", "--interval", "0.1"], "reading what is due failed; trying again in 0.1 s"),
    ],
    ids=["sweep", "webhooks"],
)
def test_a_worker_keeps_going_through_passes_that_fail(worker, says, tmp_path):
    """A database it cannot reach (here: a file in a folder that is not there) fails each pass; the
    worker logs it and tries again, so make run does not stop the whole hub over a passing outage."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/missing/hub.sqlite3"}
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", *worker], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for(lambda: log.read_text().count(says) >= 2, within=60, what=f"two failed passes: {log.read_text()}")
        assert process.poll() is None, log.read_text()
    finally:
        process.kill()
        process.wait()
