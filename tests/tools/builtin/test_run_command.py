"""RunCommand: argv only, allow-listed programs, bounded time and output, no secrets inherited."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from builtin_helpers import call, refused

from agentensemble.errors import ConfigurationError
from agentensemble.logging import register_secret
from agentensemble.tools.builtin import RunCommand
from agentensemble.tools.builtin.run_command import scrubbed_environment


def runner(tmp_path: Path, **options: object) -> RunCommand:
    return RunCommand(  # type: ignore[arg-type]
        allow=["echo", "printf", "env", "sh", "cat", "ls", "true", "false", "python3"],
        cwd=tmp_path,
        requires_approval=False,
        **options,
    )


def test_an_allowed_program_runs_with_its_arguments(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("")
    assert call(runner(tmp_path), command=["echo", "hello", "world"]).output == (
        "stdout:\nhello world\n"
    )
    assert call(runner(tmp_path), command=["ls"]).output == "stdout:\na.txt\n"
    assert call(runner(tmp_path), command=["true"]).output == "true finished with no output"


@pytest.mark.parametrize(
    "argument",
    [
        "; rm -rf /tmp/pwned",
        "$(touch pwned)",
        "`touch pwned`",
        "| touch pwned",
        "&& touch pwned",
        "> pwned",
        "*",
        "$HOME",
        "\n touch pwned",
    ],
)
def test_shell_metacharacters_are_passed_literally(tmp_path: Path, argument: str) -> None:
    result = call(runner(tmp_path), command=["printf", "%s", argument])
    assert result.output == f"stdout:\n{argument}"
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    ("command", "why"),
    [
        (["rm", "-rf", "/"], "program 'rm' is not allowed"),
        (["/bin/echo", "hi"], "program '/bin/echo' is not allowed"),
        (["./echo"], "program './echo' is not allowed"),
        (["echo hi; rm -rf /"], "not allowed"),
        (["bash", "-c", "echo hi"], "program 'bash' is not allowed"),
        (["echo", "nul\x00byte"], "NUL bytes"),
    ],
)
def test_programs_off_the_allow_list_are_refused(
    tmp_path: Path, command: list[str], why: str
) -> None:
    assert refused(call(runner(tmp_path), command=command), why)


def test_a_command_must_be_a_list(tmp_path: Path) -> None:
    result = call(runner(tmp_path), command="echo hi; rm -rf /")
    assert not result.is_success
    assert "command" in (result.error_message or "")
    assert not call(runner(tmp_path), command=[]).is_success


def test_a_failing_program_is_a_failed_result_with_its_output(tmp_path: Path) -> None:
    result = call(runner(tmp_path), command=["sh", "-c", "echo oops >&2; exit 3"])
    assert refused(result, "sh exited with code 3", "stderr:\noops")


def test_a_program_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {marker}; wait"
    started = time.monotonic()
    result = call(runner(tmp_path, timeout=1), command=["sh", "-c", script])
    assert refused(result, "timed out after 1 s and was killed")
    assert time.monotonic() - started < 30
    child = int(marker.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_huge_output_is_capped(tmp_path: Path) -> None:
    script = "import sys; sys.stdout.write('z' * 5_000_000)"
    result = call(runner(tmp_path, max_output_chars=100), command=["python3", "-c", script])
    assert result.output == "stdout:\n" + "z" * 100 + "\n[4999900 more bytes not shown]"


def test_secrets_are_scrubbed_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-live-abcdefghijklmnop",
        "GITHUB_TOKEN": "ghp_1234567890abcdef",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "DATABASE_PASSWORD": "hunter2hunter2",
        "DATABASE_URL": "postgres://u:p@db/x",
        "HIDDEN_IN_PLAIN_NAME": "sk-proj-0123456789abcdef",
        "REGISTERED": "a-registered-secret-value",
    }
    register_secret("a-registered-secret-value")
    for key, value in secrets.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    output = call(runner(tmp_path), command=["env"]).output
    for key, value in secrets.items():
        assert key not in output
        assert value not in output
    assert "HARMLESS_SETTING=visible" in output
    assert "PATH=" in output


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SQLALCHEMY_DATABASE_URI", "postgresql+psycopg://app:PASSWORD123@db:5432/app"),
        ("MONGODB_URI", "mongodb+srv://reader:PASSWORD123@cluster0.example.net/db"),
        ("REDIS_URL", "redis://:PASSWORD123@cache:6379/0"),
        ("CELERY_BROKER_URL", "amqp://worker:PASSWORD123@rabbit:5672//"),
        ("HTTPS_PROXY", "http://proxyuser:PASSWORD123@proxy.corp:3128"),
        ("SERVICE_ENDPOINT", "https://hooks.example.com/in?sig=PASSWORD123abc"),
        ("SLACK_HOOK", "Bearer PASSWORD123abcdef"),
    ],
)
def test_credentials_are_recognised_by_value_whatever_the_variable_is_called(
    name: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("PLAIN_URL", "https://example.com/docs")
    output = call(runner(tmp_path), command=["env"]).output
    assert "PASSWORD123" not in output and f"{name}=" not in output
    assert "PLAIN_URL=https://example.com/docs" in output  # a URL without a credential stays


def test_extra_environment_is_passed_as_given() -> None:
    env = scrubbed_environment({"PATH": "/bin", "API_KEY": "x"}, {"MY_TOOL_TOKEN": "given"})
    assert env == {"PATH": "/bin", "MY_TOOL_TOKEN": "given"}


def test_it_asks_the_reviewer_by_default_and_checks_its_settings(tmp_path: Path) -> None:
    assert RunCommand(allow=["ls"]).requires_approval is True
    for allow in ([], "ls", ["/bin/ls"]):
        with pytest.raises(ConfigurationError, match="allow"):
            RunCommand(allow=allow)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="is not a directory"):
        RunCommand(allow=["ls"], cwd=tmp_path / "missing")


def test_the_python_running_the_tests_is_not_implicitly_allowed(tmp_path: Path) -> None:
    assert refused(call(runner(tmp_path), command=[sys.executable, "-c", "1"]), "not allowed")


def test_a_program_that_exits_leaving_a_background_child_returns_at_once_with_its_output(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "child.pid"
    script = f"echo hi; sleep 60 & echo $! > {marker}; echo started"
    started = time.monotonic()
    result = call(runner(tmp_path, timeout=30), command=["sh", "-c", script])
    assert result.is_success, result.error_message
    assert result.output == "stdout:\nhi\nstarted\n"
    assert time.monotonic() - started < 8  # not the readers' 5 s grace twice, not the sleep
    child = int(marker.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)  # what it left behind in its group was killed with it
