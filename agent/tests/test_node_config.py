"""node.toml: what a node accepts, and the key and reason of everything it refuses."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from commhub_agent.node.config import describe_error, diff_configs, load_config, restart_needed
from commhub_agent.node.runtime import ConfigError
from gitrepo import isolate_git, make_repo

HUB = '[node]\nhub = "http://127.0.0.1:8000"\n'
ENV = {"HOME": "/home/someone"}


@pytest.fixture(autouse=True)
def _git(monkeypatch):
    isolate_git(monkeypatch)


def write(folder: Path, text: str, name: str = "node.toml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def refused(folder: Path, text: str, environ: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(write(folder, text), environ=ENV if environ is None else environ)
    return caught.value


def agent(body: str, alias: str = "b") -> str:
    return HUB + f"[agents.{alias}]\n" + textwrap.dedent(body)


def test_a_full_config_loads_with_defaults_inherited_and_paths_expanded(tmp_path):
    repo = make_repo(tmp_path / "src" / "app")
    (tmp_path / "conf").mkdir()
    path = write(
        tmp_path / "conf",
        """
        [node]
        hub = "https://hub.example.com/"
        name = "build-box-1"
        state_dir = "$STATE/node"
        stop_grace = 12

        [defaults]
        concurrency = 3
        stall_after = 120
        session = "task"
        env = { SHARED = "1", OVER = "default" }

        [agents.builder]
        runtime = "command"
        command = ["python", "agent.py"]
        skills = ["python", "code-review"]
        repository = "~/app"
        isolation = "worktree"
        cleanup = "7d"
        concurrency = 2
        timeout = 3600
        budget_usd = 5.0
        budget_tokens = 2000000
        env = { OVER = "mine" }

        [agents."build 2"]
        runtime = "command"
        command = ["./run.sh"]
        repository = "../src"
        isolation = "dir"
        """,
    )
    config = load_config(path, environ={"HOME": str(tmp_path / "src"), "STATE": "/var/lib/x"})
    assert (config.hub, config.name, config.stop_grace) == ("https://hub.example.com", "build-box-1", 12.0)
    assert config.state_dir == Path("/var/lib/x/node") and config.path == path
    builder = config.agents["builder"]
    assert builder.repository == repo and builder.isolation == "worktree"
    assert (builder.cleanup, builder.keep_days) == ("never", 7)
    assert (builder.concurrency, builder.timeout, builder.stall_after) == (2, 3600.0, 120.0)
    assert (builder.budget_usd, builder.budget_tokens) == (5.0, 2_000_000)
    assert builder.skills == ("python", "code-review") and builder.command == ("python", "agent.py")
    assert builder.env == {"SHARED": "1", "OVER": "mine"}
    # A [defaults] session does not apply to a command agent (it keeps no session), and is no error there.
    assert builder.session == "task"
    second = config.agents["build 2"]
    assert second.repository == tmp_path / "src" and second.concurrency == 3
    assert (second.cleanup, second.keep_days, second.timeout, second.budget_usd) == ("on_success", None, None, None)


def test_the_hub_comes_from_the_environment_and_the_name_from_the_host(tmp_path, monkeypatch):
    monkeypatch.setattr("socket.gethostname", lambda: "host-7")
    text = '[agents.b]\nruntime = "command"\ncommand = ["x"]\n'
    config = load_config(write(tmp_path, text), environ={"COMMHUB_URL": "http://10.0.0.1:9000/"})
    assert (config.hub, config.name) == ("http://10.0.0.1:9000", "host-7")
    assert config.state_dir.name == "node-host-7"
    assert config.agents["b"].isolation == "none" and config.agents["b"].repository is None
    error = refused(tmp_path, text, environ={})
    assert (error.key, error.reason) == (
        "node.hub",
        'is required: set hub = "http://host:8000" in [node] or $COMMHUB_URL',
    )
    error = refused(tmp_path, text, environ={"COMMHUB_URL": "127.0.0.1:8000"})
    assert error.key == "node.hub" and "(from $COMMHUB_URL)" in error.reason


@pytest.mark.parametrize(
    ("text", "key", "reason"),
    [
        (
            agent('runtime = "command"\ncommand = ["x"]\nisolation = "tree"\n'),
            "agents.b.isolation",
            'must be one of worktree, dir, none (got "tree")',
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nisolaton = "dir"\n'),
            "agents.b.isolaton",
            'unknown key: did you mean "isolation"? the keys here are runtime, skills, repository, isolation, cleanup,'
            " concurrency, timeout, stall_after, session, budget_usd, budget_tokens, env, command, options",
        ),
        (
            HUB + 'hubb = "x"\n[agents.b]\nruntime = "command"\ncommand = ["x"]\n',
            "node.hubb",
            'unknown key: did you mean "hub"? the keys here are hub, name, state_dir, stop_grace',
        ),
        (
            HUB + '[agent.b]\nruntime = "command"\n',
            "agent",
            'unknown key: did you mean "agents"? the keys here are node, defaults, agents',
        ),
        (HUB, "agents", 'no agents: declare at least one, e.g. [agents.builder] with runtime = "claude"'),
        (agent('command = ["x"]\n'), "agents.b.runtime", "is required, one of claude, codex, command"),
        (agent('runtime = "gpt"\n'), "agents.b.runtime", 'must be one of claude, codex, command (got "gpt")'),
        (
            agent('runtime = "command"\ncommand = ["x"]\nconcurrency = "2"\n'),
            "agents.b.concurrency",
            'must be a whole number (got "2")',
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nconcurrency = 0\n'),
            "agents.b.concurrency",
            "must be at least 1 (got 0)",
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nconcurrency = 101\n'),
            "agents.b.concurrency",
            "must be at most 100, the hub's limit per agent (got 101)",
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\ntimeout = -5\n'),
            "agents.b.timeout",
            "must be more than 0 (got -5)",
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nbudget_usd = -1.5\n'),
            "agents.b.budget_usd",
            "must be more than 0 (got -1.5)",
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nbudget_tokens = 1.5\n'),
            "agents.b.budget_tokens",
            "must be a whole number (got 1.5)",
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nstall_after = true\n'),
            "agents.b.stall_after",
            "must be a number (got true)",
        ),
        (
            HUB.replace("8000", '8000"\nstop_grace = "-1') + '[agents.b]\nruntime = "command"\ncommand = ["x"]\n',
            "node.stop_grace",
            'must be a number (got "-1")',
        ),
        (
            HUB + 'stop_grace = -1\n[agents.b]\nruntime = "command"\ncommand = ["x"]\n',
            "node.stop_grace",
            "must be at least 0 (got -1)",
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\ncleanup = "weekly"\n'),
            "agents.b.cleanup",
            'must be one of on_success, never or "<N>d" for N days, e.g. "7d" (got "weekly")',
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nskills = ["python", "Go"]\n'),
            "agents.b.skills[1]",
            'must be a short lower-case tag like python or code-review, at most 40 characters (got "Go")',
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nenv = { N = 1 }\n'),
            "agents.b.env.N",
            "must be a string (got 1)",
        ),
        (
            agent('runtime = "command"\n'),
            "agents.b.command",
            'is required for runtime "command": the argv to run, e.g. ["python", "agent.py"]',
        ),
        (
            agent('runtime = "command"\ncommand = []\n'),
            "agents.b.command",
            'must be a non-empty list of strings, e.g. ["python", "agent.py"] (got [])',
        ),
        (
            agent('runtime = "codex"\ncommand = ["codex"]\n'),
            "agents.b.command",
            'is only for runtime "command", not "codex"',
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nsession = "alias"\n'),
            "agents.b.session",
            'does not apply to runtime "command": every run starts afresh',
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\n[agents.b.options]\nmax_turns = 3\n'),
            "agents.b.options.max_turns",
            "not an option of the command runtime (it has: none)",
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nrepository = "$NOPE/app"\n'),
            "agents.b.repository",
            "uses $NOPE, which is not set",
        ),
        (
            HUB + '[defaults]\nconcurrency = 0\n[agents.b]\nruntime = "command"\ncommand = ["x"]\n',
            "agents.b.concurrency",
            "must be at least 1 (got 0)",
        ),
        (
            HUB + '[defaults]\ncommand = ["x"]\n[agents.b]\nruntime = "command"\n',
            "defaults.command",
            "belongs to one runtime: set it in each agent's own table",
        ),
        (
            HUB.replace("http", "ftp") + '[agents.b]\nruntime = "command"\ncommand = ["x"]\n',
            "node.hub",
            'must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000 (got "ftp://127.0.0.1:8000")',
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\n', alias='" "'),
            'agents." "',
            "the alias must not be empty",
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\n', alias="a" * 201),
            "agents." + "a" * 201,
            "the alias is longer than 200 characters (201)",
        ),
        (
            agent('runtime = "command"\ncommand = ["x"]\nisolation = "worktree"\n'),
            "agents.b.repository",
            'is required with isolation = "worktree" (a git repository)',
        ),
    ],
)
def test_a_wrong_key_is_refused_with_its_name_and_reason(tmp_path, text, key, reason):
    error = refused(tmp_path, text)
    assert (error.key, error.reason) == (key, reason)


def test_a_node_hosts_at_most_the_agents_the_hub_takes(tmp_path):
    many = "".join(f'[agents.a{n}]\nruntime = "command"\ncommand = ["x"]\n' for n in range(501))
    error = refused(tmp_path, HUB + many)
    assert (error.key, error.reason) == ("agents", "501 agents; the hub takes at most 500 from one node")


def test_an_alias_of_200_characters_is_the_hubs_limit(tmp_path):
    config = load_config(write(tmp_path, agent('runtime = "command"\ncommand = ["x"]\n', alias="a" * 200)), environ=ENV)
    assert list(config.agents) == ["a" * 200]


def test_repositories_must_exist_and_a_worktree_one_must_be_git(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (tmp_path / "file").write_text("x")
    base = 'runtime = "command"\ncommand = ["x"]\n'
    error = refused(tmp_path, agent(base + 'repository = "missing"\n'))
    assert (error.key, error.reason) == ("agents.b.repository", f"{str(tmp_path / 'missing')!r} does not exist")
    error = refused(tmp_path, agent(base + 'repository = "file"\n'))
    assert (error.key, error.reason) == ("agents.b.repository", f"{str(tmp_path / 'file')!r} is not a directory")
    error = refused(tmp_path, agent(base + 'repository = "plain"\nisolation = "worktree"\n'))
    assert error.key == "agents.b.repository" and "is not a git work tree" in error.reason
    # A plain directory is fine without a worktree, and a subfolder of a work tree is fine with one.
    assert load_config(write(tmp_path, agent(base + 'repository = "plain"\nisolation = "dir"\n')), environ=ENV)
    make_repo(tmp_path / "repo", {"sub/x.txt": "x\n"})
    config = load_config(
        write(tmp_path, agent(base + 'repository = "repo/sub"\nisolation = "worktree"\n')), environ=ENV
    )
    assert config.agents["b"].repository == tmp_path / "repo" / "sub"


def test_the_file_itself(tmp_path):
    error = refused(tmp_path, "[node\nhub = 1\n")
    assert error.key == "(file)" and "line 1, column 6" in error.reason and error.reason.startswith("is not valid TOML")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "absent.toml", environ=ENV)
    assert (caught.value.key, caught.value.reason) == ("(file)", "cannot be read: No such file or directory")
    (tmp_path / "latin.toml").write_bytes(b'[node]\nname = "caf\xe9"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "latin.toml", environ=ENV)
    assert caught.value.key == "(file)" and "UTF-8" in caught.value.reason


def test_describe_error_is_one_line_with_file_key_and_reason(tmp_path):
    error = refused(tmp_path, agent('runtime = "command"\ncommand = ["x"]\nisolation = "tree"\n'))
    assert describe_error("node.toml", error) == (
        'node.toml: agents.b.isolation: must be one of worktree, dir, none (got "tree")'
    )
    error = refused(tmp_path, "[node\n")
    line = describe_error(tmp_path / "node.toml", error)
    assert line.startswith(f"{tmp_path / 'node.toml'}: is not valid TOML") and "\n" not in line


def test_diff_configs_names_agents_added_removed_and_changed(tmp_path):
    old = load_config(
        write(
            tmp_path,
            HUB
            + '[agents.a]\nruntime = "command"\ncommand = ["x"]\n'
            + '[agents.b]\nruntime = "command"\ncommand = ["x"]\n'
            + '[agents.c]\nruntime = "command"\ncommand = ["x"]\n',
        ),
        environ=ENV,
    )
    new = load_config(
        write(
            tmp_path,
            HUB.replace("127.0.0.1", "hub.local")
            + '[agents.b]\nruntime = "command"\ncommand = ["x"]\n'
            + '[agents.c]\nruntime = "command"\ncommand = ["y"]\n'
            + '[agents.d]\nruntime = "command"\ncommand = ["x"]\n',
            name="new.toml",
        ),
        environ=ENV,
    )
    assert diff_configs(old, new) == (["d"], ["a"], ["c"])
    assert diff_configs(old, old) == ([], [], [])
    assert restart_needed(old, new) == ["node.hub"]
    assert restart_needed(old, replace(old, stop_grace=1.0)) == []
