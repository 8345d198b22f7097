"""`commhub-agent node` against a live hub: many agents, their runtimes through stand-ins, outages,
crashes, stalls, budgets and reloads."""

from __future__ import annotations

import pytest

from tests.helpers.live import rest, wait_for
from tests.helpers.node import NodeProcess, command_agent, git_repository, node_toml, runs, send, wait_finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.live]


def test_command_agents_run_each_task_once_in_its_own_worktree(live_hub, dispatcher, worker, tmp_path):
    repo = git_repository(tmp_path / "repo")
    log = tmp_path / "runs.log"
    config = tmp_path / "node.toml"
    config.write_text(
        node_toml(
            live_hub,
            tmp_path / "state",
            {"cmd-1": command_agent(repo, log, concurrency=2), "cmd-2": command_agent(repo, log)},
        )
    )
    node = NodeProcess(live_hub, worker, config, tmp_path / "node.log").start()
    try:
        ids = [send(live_hub, dispatcher, f"cmd-{1 + n % 2}", f"job {n} write") for n in range(6)]
        rows = wait_finished(live_hub, dispatcher, ids, within=60)
    finally:
        node.stop()
    print(node.output())
    for task_id, row in rows.items():
        assert row["status"] == "replied", row
        assert f"branch: commhub/{row['to_name']}/{task_id}" in row["result"], row["result"]
        assert f"done-{task_id}.txt" in row["result"]
    assert runs(log) == {task_id: 1 for task_id in ids}
