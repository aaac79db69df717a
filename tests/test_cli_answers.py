"""`toolnexus call --no-input` then `resume`, as an attacker would try it (issue 10): the answer
resumes only the call that asked, once; `approved: false` is a no; the key is shared by file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import run

TOOLS = '''
from pathlib import Path
from toolnexus import Request, ToolContext, Toolkit, ToolResult, tool

SCHEMA = {"type": "object", "properties": {"env": {"enum": ["staging", "production"]}},
          "required": ["env"]}

def _ran(name):
    with open(Path(__file__).with_name("ran.log"), "a") as log:
        log.write(name + "\\n")

@tool
def deploy(service: str, env: str, ctx: ToolContext) -> ToolResult:
    """Deploy after an approval."""
    if ctx.answer is None:
        return ToolResult.pending(Request("approval", f"Deploy {service} to {env}?"))
    _ran(f"deploy {service}")
    return ToolResult.ok(f"deployed {service} to {env}")

@tool
def wipe(ctx: ToolContext) -> ToolResult:
    """Never asks."""
    _ran("wipe")
    return ToolResult.ok("wiped")

@tool
def place(ctx: ToolContext) -> ToolResult:
    """Asks where, with a schema."""
    if ctx.answer is None:
        return ToolResult.pending(Request("input", "Where?", data={"schema": SCHEMA}))
    _ran(f"place {ctx.answer.data['env']}")
    return ToolResult.ok(f"placed in {ctx.answer.data['env']}")

toolkit = Toolkit([deploy, wipe, place])
'''

YES = '{"ok": true}'


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "key").write_text("# newest first\ncli-answers-key-0123456789abcdef\n")
    (tmp_path / "other").write_text("some-other-key-0123456789abcdef\n")
    monkeypatch.delenv("TOOLNEXUS_SECRET", raising=False)
    monkeypatch.delenv("TOOLNEXUS_STORE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def ran(folder: Path) -> list[str]:
    log = folder / "ran.log"
    return log.read_text().splitlines() if log.exists() else []


def ask(folder: Path, *args: str) -> str:
    first = run("call", "tools.py:toolkit", *args, "--no-input", "--secret-file", "key", cwd=folder)
    assert first.returncode == 3, first.stderr
    assert "--secret-file key" in first.stderr
    return first.stdout


def resume(
    folder: Path,
    *args: str,
    request: str,
    answer: str = YES,
    key: str = "key",
    env: dict[str, str] | None = None,
):
    return run(
        "resume",
        "tools.py:toolkit",
        *args,
        "--request",
        request,
        "--answer",
        answer,
        "--secret-file",
        key,
        cwd=folder,
        env=env,
    )


def test_the_resumed_call_runs_once_and_a_replay_is_already_answered(folder: Path):
    parked = ask(folder, "deploy", "service=api", "env=production")
    done = resume(folder, "deploy", "service=api", "env=production", request=parked)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "deployed api to production\n"
    again = resume(folder, "deploy", "service=api", "env=production", request=parked)
    assert again.returncode == 1
    assert "already answered" in again.stdout
    assert ran(folder) == ["deploy api"]


def test_edited_arguments_are_refused(folder: Path):
    parked = ask(folder, "deploy", "service=api", "env=production")
    done = resume(folder, "deploy", "service=billing", "env=production", request=parked)
    assert done.returncode == 1
    assert "the arguments differ" in done.stdout
    assert ran(folder) == []


def test_another_tool_is_refused(folder: Path):
    parked = ask(folder, "deploy", "service=api", "env=production")
    done = resume(folder, "wipe", request=parked)
    assert done.returncode == 1
    assert "was asked by 'deploy', not 'wipe'" in done.stdout
    assert ran(folder) == []


def test_a_made_up_request_is_refused(folder: Path):
    invented = json.dumps({"id": "pnd-made-up", "kind": "approval", "prompt": "Deploy?"})
    done = resume(folder, "deploy", "service=api", "env=production", request=invented)
    assert done.returncode == 1
    assert "has no binding" in done.stdout
    assert ran(folder) == []


def test_a_request_with_its_schema_removed_is_refused(folder: Path):
    parked = json.loads(ask(folder, "place"))
    del parked["metadata"]["pending"]["data"]
    done = resume(
        folder, "place", request=json.dumps(parked), answer='{"ok": true, "data": {"env": "moon"}}'
    )
    assert done.returncode == 1
    assert "is not the request this binding was issued for" in done.stdout
    assert ran(folder) == []


def test_approved_false_is_a_decline(folder: Path):
    parked = ask(folder, "deploy", "service=api", "env=production")
    done = resume(
        folder,
        "deploy",
        "service=api",
        "env=production",
        request=parked,
        answer='{"ok": true, "data": {"approved": false}}',
    )
    assert done.returncode == 1
    assert done.stdout == "declined/expired: Deploy api to production?\n"
    assert ran(folder) == []


def test_another_key_is_refused(folder: Path):
    parked = ask(folder, "deploy", "service=api", "env=production")
    other = resume(folder, "deploy", "service=api", "env=production", request=parked, key="other")
    assert other.returncode == 1
    assert "does not verify under this host's key(s)" in other.stdout
    assert ran(folder) == []


ARGS = ("tools.py:toolkit", "deploy", "service=api", "env=production")


def test_without_a_key_no_input_then_resume_works_from_a_shell_with_a_private_per_user_key(
    folder: Path,
):
    # Issue 24 item 15: the request `call --no-input` prints must be one a later process
    # can resume, by default. The first such call makes a per-user key, private to the user.
    config = {"XDG_CONFIG_HOME": str(folder / "config")}
    first = run("call", *ARGS, "--no-input", cwd=folder, env=config)
    assert first.returncode == 3, first.stderr
    key = folder / "config" / "toolnexus" / "secret"
    assert f"(bound to this call with your per-user key, {key};" in first.stderr
    assert "note: no key" not in first.stderr
    assert (key.stat().st_mode & 0o777, key.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    answer = ("--answer", YES)
    done = run("resume", *ARGS, "--request", first.stdout, *answer, cwd=folder, env=config)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "deployed api to production\n"
    again = run("resume", *ARGS, "--request", first.stdout, *answer, cwd=folder, env=config)
    assert again.returncode == 1 and "already answered" in again.stdout
    # The same key for the next call: made once, then read.
    second = run("call", *ARGS, "--no-input", cwd=folder, env=config)
    done = run("resume", *ARGS, "--request", second.stdout, *answer, cwd=folder, env=config)
    assert done.stdout == "deployed api to production\n"
    assert ran(folder) == ["deploy api", "deploy api"]


def test_a_per_user_key_others_can_read_is_refused_with_the_command_that_fixes_it(folder: Path):
    key = folder / "config" / "toolnexus" / "secret"
    key.parent.mkdir(parents=True)
    key.write_text("per-user-key-0123456789abcdef\n")
    key.chmod(0o644)
    config = {"XDG_CONFIG_HOME": str(folder / "config")}
    out = run("call", *ARGS, "--no-input", cwd=folder, env=config)
    assert out.returncode == 2
    assert out.stderr == (
        f"toolnexus call: error: the per-user key {key} is readable or writable by others "
        f"(mode 0644), so they could answer your questions; make it yours alone: chmod 600 "
        f"{key}\n"
    )
    assert ran(folder) == []


def test_a_per_user_key_that_cannot_be_made_is_refused_with_how_to_give_one(folder: Path):
    (folder / "not-a-folder").write_text("")
    config = {"XDG_CONFIG_HOME": str(folder / "not-a-folder")}
    out = run("call", *ARGS, "--no-input", cwd=folder, env=config)
    assert out.returncode == 2
    assert "the per-user key cannot be created at " in out.stderr
    assert "so no later `resume` could use this request; give one: --secret-file PATH" in (
        out.stderr
    )
    assert "or set TOOLNEXUS_SECRET" in out.stderr
    assert ran(folder) == []


def test_resume_without_any_key_says_how_to_configure_one(folder: Path):
    parked = ask(folder, "deploy", "service=api", "env=production")
    config = {"XDG_CONFIG_HOME": str(folder / "empty-config")}
    refused = run("resume", *ARGS, "--request", parked, "--answer", YES, cwd=folder, env=config)
    assert refused.returncode == 1
    assert "no key is configured" in refused.stdout and "--secret-file" in refused.stdout
    assert not (folder / "empty-config").exists()  # resume reads the key; it never makes one
    assert ran(folder) == []


def test_two_first_calls_at_once_agree_on_one_per_user_key(tmp_path, monkeypatch):
    import threading

    from toolnexus._cli._answer_keys import _user_key

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    start = threading.Barrier(8)
    keys: list[object] = []

    def first_call() -> None:
        start.wait()
        keys.append(_user_key(create=True))

    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for each in threads:
        each.start()
    for each in threads:
        each.join()
    assert len(keys) == 8 and len(set(keys)) == 1
    assert sorted(path.name for path in (tmp_path / "toolnexus").iterdir()) == ["secret"]


def test_a_key_from_the_environment_works_like_the_file(folder: Path, monkeypatch):
    monkeypatch.setenv("TOOLNEXUS_SECRET", "cli-answers-key-0123456789abcdef")
    first = run(
        "call", "tools.py:toolkit", "deploy", "service=api", "env=staging", "--no-input", cwd=folder
    )
    assert "note: no key" not in first.stderr
    done = run(
        "resume",
        "tools.py:toolkit",
        "deploy",
        "service=api",
        "env=staging",
        "--request",
        first.stdout,
        "--answer",
        YES,
        cwd=folder,
    )
    assert done.stdout == "deployed api to staging\n"


def test_a_bad_secret_file_is_a_usage_error(folder: Path):
    (folder / "short").write_text("tiny\n")
    for key, problem in (("short", "at least 16 bytes"), ("missing", "cannot read")):
        out = run("call", "tools.py:toolkit", "wipe", "--secret-file", key, cwd=folder)
        assert out.returncode == 2
        assert problem in out.stderr


# --- where used answers are kept: --store URL, --answers-db PATH, TOOLNEXUS_STORE -----------


def test_store_urls_choose_where_used_answers_are_kept(folder: Path):
    parked = ask(folder, "deploy", "service=api", "env=production")
    args = ("deploy", "service=api", "env=production")
    done = resume(folder, *args, "--store", "sqlite:used.db", request=parked)
    assert done.returncode == 0, done.stderr
    # The same file by the old option, and by the environment: already answered.
    for extra, env in (
        (("--answers-db", "used.db"), None),
        ((), {"TOOLNEXUS_STORE": "sqlite:used.db"}),
    ):
        again = resume(folder, *args, *extra, request=parked, env=env)
        assert again.returncode == 1 and "already answered" in again.stdout, again.stderr
    # Another store has not seen it (the default file in the cache folder, here).
    elsewhere = resume(folder, *args, "--store", "sqlite:other.db", request=parked)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert ran(folder) == ["deploy api", "deploy api"]


def test_a_bad_store_url_is_a_usage_error_that_names_it_without_its_password(folder: Path):
    parked = ask(folder, "deploy", "service=api", "env=production")
    args = ("deploy", "service=api", "env=production")
    cases = [
        (("--store", "mysql://app:hunter2@db/app"), None, "--store: unknown store scheme"),
        (("--store", "used.db"), None, "is not a store URL"),
        ((), {"TOOLNEXUS_STORE": "sqlite:"}, "TOOLNEXUS_STORE: 'sqlite:' names no file"),
        (("--store", "memory:", "--answers-db", "x.db"), None, "not both"),
        (("--store", "sqlite:no/such/folder/used.db"), None, "--store: answer store sqlite:"),
    ]
    for extra, env, problem in cases:
        out = resume(folder, *args, *extra, request=parked, env=env)
        assert out.returncode == 2, (extra, out.stderr)
        assert problem in out.stderr and "hunter2" not in out.stderr, out.stderr
    assert (
        "mysql://app:***@db/app"
        in resume(folder, *args, "--store", "mysql://app:hunter2@db/app", request=parked).stderr
    )
    assert ran(folder) == []


def test_serve_and_call_take_the_store_option_too(folder: Path):
    for command in (
        ("serve", "tools.py:toolkit", "--store", "nope:x"),
        ("call", "tools.py:toolkit", "wipe", "--store", "nope:x"),
    ):
        out = run(*command, cwd=folder)
        assert out.returncode == 2 and "unknown store scheme 'nope'" in out.stderr, out.stderr
    out = run("call", "tools.py:toolkit", "wipe", "--store", "memory:", cwd=folder)
    assert out.returncode == 0 and out.stdout == "wiped\n", out.stderr


def test_the_resume_hint_names_the_store_call_used_without_its_password(folder: Path):
    out = run(
        "call",
        "tools.py:toolkit",
        "deploy",
        "service=api",
        "env=production",
        "--no-input",
        "--secret-file",
        "key",
        "--store",
        "sqlite:used.db",
        cwd=folder,
    )
    assert out.returncode == 3, out.stderr
    assert "--secret-file key --store sqlite:used.db\n" in out.stderr
    done = resume(
        folder,
        "deploy",
        "service=api",
        "env=production",
        "--store",
        "sqlite:used.db",
        request=out.stdout,
    )
    assert done.returncode == 0, done.stderr
