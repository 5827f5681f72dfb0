"""The ``agentensemble`` command line: a table of subcommands, each in a module of its own.

Exit codes: 0 ok, 1 the run failed, 2 bad usage or a bad crew file, 130 interrupted (Ctrl-C).
To add a subcommand, write a module exposing ``COMMAND = Command(...)`` and list it in
``COMMAND_MODULES``; keep its heavy imports inside ``run`` so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Modules that each define ``COMMAND``; the order is the order of ``--help``.
COMMAND_MODULES: tuple[str, ...] = (
    "agentensemble.cli.run_command",
    "agentensemble.cli.validate_command",
    "agentensemble.cli.serve_command",
    "agentensemble.cli.reviewers_command",
    "agentensemble.cli.eval_command",
    "agentensemble.cli.durable_command",
    "agentensemble.cli.serve_mcp_command",
    "agentensemble.cli.serve_a2a_command",
    "agentensemble.cli.memory_command",
    "agentensemble.cli.serve_api_command",
    "agentensemble.cli.serve_ag_ui_command",
)


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, a line of help, its arguments and what it does."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def commands() -> list[Command]:
    """Every subcommand, from ``COMMAND_MODULES``."""
    return [importlib.import_module(name).COMMAND for name in COMMAND_MODULES]


def build_parser() -> argparse.ArgumentParser:
    from agentensemble import __version__

    parser = argparse.ArgumentParser(
        prog="agentensemble",
        description="Run, check and evaluate crew files; serve the web console; operate durable "
        "runs.",
        epilog="Exit codes: 0 ok, 1 run failed, 2 bad usage or crew file, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"agentensemble {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in commands():
        child = sub.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(child)
        child.set_defaults(handler=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with 2 on a usage error, as argparse does
    try:
        return run_handler(args.handler, args)
    except KeyboardInterrupt:
        print("agentensemble: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def run_handler(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``handler(args)``; a reader that went away (``agentensemble ... | head``) ends it quietly
    with exit 0, never a ``BrokenPipeError`` traceback, whichever command was writing."""
    try:
        code = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
    except BrokenPipeError:  # the reader took what it wanted
        _silence_stdout()
        return EXIT_OK
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null: the interpreter's last flush at exit would raise again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (a captured stdout)
        pass


__all__ = [
    "COMMAND_MODULES",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Command",
    "build_parser",
    "commands",
    "main",
    "run_handler",
]
