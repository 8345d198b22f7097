"""The files a companion keeps across crashes."""

from __future__ import annotations

from commhub_agent.state import Journal, Position, safe_name


def test_position_survives_a_restart_and_a_torn_file(tmp_path):
    position = Position(tmp_path / "a.channel.json")
    assert position.load() is None
    position.save(41)
    position.prepare(42)  # prepared but never committed: a crash before the rename
    assert Position(tmp_path / "a.channel.json").load() == 41
    position.commit()
    assert Position(tmp_path / "a.channel.json").load() == 42
    (tmp_path / "a.channel.json").write_text('{"last_event_id": 4')  # torn by something else
    assert Position(tmp_path / "a.channel.json").load() is None


def test_journal_replays_its_steps_and_skips_a_torn_line(tmp_path):
    path = tmp_path / "r.runner.jsonl"
    journal = Journal(path)
    journal.record("m1", task_id="t1", state="started")
    journal.record("m1", state="done", status="replied", result="ok")
    journal.record("m2", task_id="t2", state="started")
    journal.record("m3", task_id="t3", state="started")
    journal.record("m3", state="done", status="failed", result="x")
    journal.record("m3", state="reported")
    with open(path, "a") as handle:
        handle.write('{"message_id": "m4", "sta')  # the crash came mid-line
    again = Journal(path)
    assert again.state("m1") == "done" and again.entries["m1"]["task_id"] == "t1"
    assert again.state("m3") == "reported" and again.state("m4") is None
    assert sorted(e["message_id"] for e in again.unfinished()) == ["m1", "m2"]


def test_safe_name_keeps_aliases_apart():
    assert safe_name("coder-1") == "coder-1"
    assert safe_name("../x") != safe_name("x") and "/" not in safe_name("a/b")
    assert safe_name("代码1号") != safe_name("代码2号")
