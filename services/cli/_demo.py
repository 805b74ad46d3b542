"""``tandem demo …``: the demo documents' commands (load, status, show, write), defined by
the demo package and attached here, where the command tree lives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.demo import add_commands

if TYPE_CHECKING:
    from services.cli._main import Commands


def register(commands: Commands) -> None:
    """Add ``tandem demo …`` to the tandem command."""
    demo = commands.top.add_parser("demo", help="the demo documents: load, status, show, write")
    add_commands(demo.add_subparsers(dest="demo_command", required=True))
