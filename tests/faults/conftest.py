"""Fixtures for the fault suite (in-process stacks: inprocess.py; processes: procs.py and
tests/processes.py), and the fault matrix printed at the end of the session."""

from __future__ import annotations

import sys

import pytest

from tests.faults.inprocess import hops, pg_url, recorded, stack

__all__ = ["hops", "pg_url", "recorded", "stack"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    module = sys.modules.get("tests.faults.test_fault_matrix")
    if module is None or not getattr(module, "MATRIX", None):
        return
    terminalreporter.section("dependency fault matrix (bench-results/fault-matrix.json)")
    for line in module.matrix_table():
        terminalreporter.write_line(line)
