"""What a reading returns: the standalone question, its kind, and the earlier statement it
builds on with the relation the SQL service edits it by (``BuildsOn``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from services.common.llm import FollowUpKind


class Relation(StrEnum):
    """How a follow-up uses the earlier SQL statement (the SQL service's PriorRelation)."""

    NONE = ""  # answered as the resolved question, on the SQL route
    RESULT_SET = "result_set"  # asked about the statement's rows
    ROW_LIMIT = "row_limit"  # the statement with another row count
    REGROUP = "regroup"  # the statement grouped by another column (``dimension``)
    VALUE_SWAP = "value_swap"  # the statement with another stored value (``value``)
    FILTER = "filter"  # the statement with a condition added (``condition``, ``exclude``)
    TIME_SHIFT = "time_shift"  # the statement over another period (``period``)


@dataclass(frozen=True)
class BuildsOn:
    """The earlier SQL turn a follow-up is answered on: it stays on the SQL route, and
    with a relation the SQL service works on the statement itself (``question`` is what
    the SQL service reads: the follow-up as asked for a result-set question)."""

    sql: str
    relation: Relation = Relation.NONE
    question: str = ""
    limit: int = 0
    ascending: bool = False
    dimension: str = ""
    value: str = ""
    add: bool = False
    condition: str = ""
    exclude: bool = False
    period: str = ""
    remove: bool = False  # FILTER: the statement's own condition ``condition`` names, removed


@dataclass(frozen=True)
class Resolution:
    """The standalone question to answer, and how it was obtained."""

    kind: FollowUpKind
    question: str
    reason: str = ""
    builds_on: BuildsOn | None = None

    @property
    def resolved(self) -> bool:
        return self.kind is not FollowUpKind.UNRESOLVED


def value_swap(question: str, value: str) -> Resolution:
    """A value swap read: ``question`` said standalone, and the earlier statement (filled
    in by the resolver) to be answered with ``value`` in place of the value it compares —
    one way of saying it for every reading that finds one."""
    return Resolution(
        FollowUpKind.VALUE_SWAP, question, builds_on=BuildsOn("", Relation.VALUE_SWAP, value=value)
    )
