"""Argument parsing and dispatch; each subcommand lives next to what it exercises.

Every command module under ``services/cli/`` exposes ``register(commands)`` and attaches
its parsers with ``set_defaults(handler=...)``; a handler takes the parsed namespace and
returns the exit code. Adding a command is one module plus one line in ``_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SubParsers = Any  # argparse's _SubParsersAction is private; its type is not exported.
Handler = Callable[[argparse.Namespace], int]

# Command modules, each with ``register(commands: Commands) -> None``.
_MODULES = (
    "services.cli._builtin",
    "services.cli._client",
    "services.cli._load",
    "services.cli._router",
    "services.cli._trace",
    "services.demo._cli",
)


@dataclass(frozen=True)
class Commands:
    """Where a module attaches its parsers: top level, ``tandem bench …``, ``tandem eval …``."""

    top: SubParsers
    bench: SubParsers
    eval: SubParsers


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tandem", description=__doc__.split("\n")[0])
    top = parser.add_subparsers(dest="command", required=True)
    bench = top.add_parser("bench", help="benchmarks: print a distribution table, write JSON")
    evals = top.add_parser("eval", help="quality evals on golden sets: table + JSON")
    commands = Commands(
        top=top,
        bench=bench.add_subparsers(dest="target", required=True),
        eval=evals.add_subparsers(dest="target", required=True),
    )
    for name in _MODULES:
        importlib.import_module(name).register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
