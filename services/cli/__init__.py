"""The ``tandem`` command: run the stack locally, benchmark it, and talk to it."""

from services.cli._main import main

__all__ = ["main"]
