"""What a verification check says about a statement, and how checks are applied.

Checks run on every executed statement, whoever proposed it (the offline linker or a
model), before its answer is given. Each names itself and, when it does not pass, says
why in words a person can act on ("'Kyle ' is not a value of singer.name; it is a value
of song.title"). In ``enforce`` mode (the default) a failed check turns the answer into a
refusal with that reason; in ``audit`` mode every check still runs and is reported, and
the answer stands: how the per-check cost and catch are measured on a dataset.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class VerifyMode(enum.Enum):
    """Whether a failed check refuses the answer (``enforce``) or is only reported."""

    ENFORCE = "enforce"
    AUDIT = "audit"


# The checks, in the order they run.
VALUES = "values"  # every literal compared with a column is one of its values
TIES = "ties"  # a ranking ranks by something (a cut among some equals is said)
ROWS = "rows"  # some row meets every condition together
JOINS = "joins"  # tables joined on columns that are a key of one another
CHECKS = (VALUES, TIES, ROWS, JOINS)


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict on one statement: why it did not pass, or, for one that
    passed, what the answer should say about itself (a cut among ties)."""

    name: str
    passed: bool
    reason: str = ""


def failure(results: tuple[CheckResult, ...]) -> CheckResult | None:
    """The first check that did not pass, if any."""
    return next((r for r in results if not r.passed), None)


def notes(results: tuple[CheckResult, ...]) -> str:
    """What the checks that passed say the answer should mention, as sentences."""
    return " ".join(
        f"{r.reason[0].upper()}{r.reason[1:]}." for r in results if r.passed and r.reason
    )
