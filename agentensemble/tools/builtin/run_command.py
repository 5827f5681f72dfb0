"""RunCommand: run an allow-listed program with arguments — argv only, never a shell.

The model sends ``command`` as a list (``["git", "status"]``); the first item must be a bare
name on the allow-list (no path: ``/tmp/x/git`` is refused), found on PATH. Shell syntax in the
arguments is passed through literally. The run is bounded in time (the whole process group is
killed at the deadline) and in output, and the environment is scrubbed of secrets: variables
named like keys, tokens or passwords, and values that look like one or were registered as one.
Asks the reviewer first by default.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Annotated, cast

from pydantic import BaseModel, Field

from agentensemble.errors import ConfigurationError
from agentensemble.redaction import is_secret_name, looks_like_credential
from agentensemble.tools.builtin._base import BuiltinTool, refuse

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_OUTPUT_CHARS = 20_000


class RunCommandInput(BaseModel):
    command: Annotated[
        list[str],
        Field(
            min_length=1,
            description="The program and its arguments as a list, e.g. ['git', 'log', '-n', '3']",
        ),
    ]


def scrubbed_environment(
    environ: Mapping[str, str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``environ`` without secrets, plus ``extra`` as given. A secret is recognised by its name
    (``*_TOKEN``, ``*_PASSWORD``...) or by its value, whatever it is called: a registered secret
    or a credential shape of the redaction policy (``scheme://user:PASSWORD@host`` in
    ``MONGODB_URI`` or ``HTTPS_PROXY``, ``Bearer ...``, ``?sig=...``, ``sk-...``)."""
    kept = {
        key: value
        for key, value in environ.items()
        if not is_secret_name(key) and not looks_like_credential(value)
    }
    kept.update(extra or {})
    return kept


class _Capped:
    """Reads a pipe to its end, keeping the first ``limit`` characters' worth of bytes."""

    def __init__(self, stream: io.BufferedReader, limit: int) -> None:
        self.data = bytearray()
        self.dropped = 0
        self._stream, self._limit = stream, limit
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with self._stream:
            while chunk := self._stream.read1(65_536):  # what is there, never waiting for more
                room = self._limit - len(self.data)
                self.data += chunk[: max(room, 0)]
                self.dropped += max(len(chunk) - max(room, 0), 0)

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        return text + (f"\n[{self.dropped} more bytes not shown]" if self.dropped else "")


class RunCommand(BuiltinTool[RunCommandInput]):
    """Run an allow-listed program (argv, no shell) with a timeout and an output cap."""

    default_name = "run_command"
    own_deadline = True  # its ``timeout`` is enforced inside: the policy's is a backstop

    def __init__(
        self,
        allow: Sequence[str],
        cwd: str | os.PathLike[str] | None = None,
        *,
        requires_approval: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> None:
        self._init_name(name)
        if isinstance(allow, str) or not allow or not all(isinstance(a, str) for a in allow):
            raise ConfigurationError(
                "RunCommand: allow must be a non-empty list of program names, e.g. ['git', 'ls']"
            )
        bad = [program for program in allow if not program or os.sep in program or "/" in program]
        if bad:
            raise ConfigurationError(
                f"RunCommand: allow lists program names found on PATH, not paths: {bad!r}"
            )
        if cwd is not None and not os.path.isdir(cwd):
            raise ConfigurationError(f"RunCommand: cwd {os.fspath(cwd)!r} is not a directory")
        self.allow = tuple(allow)
        self.cwd = cwd
        self.requires_approval = requires_approval
        self.timeout: float = timeout
        self.max_output_chars = max_output_chars
        self.env = dict(env or {})
        self.description = (
            "Run a program with arguments, given as a list (no shell: pipes, redirects and "
            f"globs are not interpreted). Allowed programs: {', '.join(self.allow)}."
        )

    def do_execute(self, input: RunCommandInput) -> str:
        program, *arguments = input.command
        if program not in self.allow:
            refuse(
                f"program {program!r} is not allowed; allowed: {', '.join(self.allow)}. Send "
                "the program name alone as the first item (no path, no shell syntax)"
            )
        if any("\x00" in part for part in input.command):
            refuse("arguments must not contain NUL bytes")
        environment = scrubbed_environment(os.environ, self.env)
        executable = shutil.which(program, path=environment.get("PATH", os.defpath))
        if executable is None:
            refuse(f"program {program!r} was not found on PATH")
        try:
            process = subprocess.Popen(
                [executable, *arguments],
                cwd=self.cwd,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, killed whole at the deadline
            )
        except OSError as error:
            refuse(f"cannot run {program!r}: {error.strerror or error}")
        assert process.stdout is not None and process.stderr is not None
        stdout = _Capped(cast(io.BufferedReader, process.stdout), self.max_output_chars)
        stderr = _Capped(cast(io.BufferedReader, process.stderr), self.max_output_chars)
        timed_out = False
        try:
            process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
        finally:
            if process.poll() is None:  # interrupted: never leave it running
                _kill_group(process)
        # whatever the program left behind in its group (``cmd &``) goes too: it would keep the
        # pipes open and outlive the call
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        for reader in (stdout, stderr):
            reader.thread.join(timeout=5)
        report = _report(stdout.text(), stderr.text())
        if timed_out:
            refuse(f"{program} timed out after {self.timeout:g} s and was killed{report}")
        if process.returncode != 0:
            refuse(f"{program} exited with code {process.returncode}{report}")
        return report.lstrip("\n") or f"{program} finished with no output"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait(timeout=10)


def _report(stdout: str, stderr: str) -> str:
    parts = []
    if stdout:
        parts.append(f"stdout:\n{stdout}")
    if stderr:
        parts.append(f"stderr:\n{stderr}")
    return "".join(f"\n{part}" for part in parts)


__all__ = ["RunCommand", "RunCommandInput", "scrubbed_environment"]
