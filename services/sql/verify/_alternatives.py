"""Alternatives and intersections kept apart: "either … or" needs alternatives (an OR,
an IN list or a UNION), and two values of one column joined by "and" are not both
required of one row ("documents with paragraphs 'Brazil' and 'Ireland'" asks for the
documents that have each, an intersection the linker does not compose)."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.linker import LinkError
from services.sql.verify._facts import StatementFacts

# "either the maker General Motors or weighed more than 3500": alternatives, one clause
_EITHER_OR = re.compile(r"\beither\b[^?.;!]*?\bor\b")


def check_one_value_per_row(facts: StatementFacts) -> None:
    """Two values of one column ANDed in one WHERE: no row has both."""
    for (_, column), values in facts.required.items():
        if len(set(values)) > 1:
            raise LinkError(
                f"one row cannot have two values of {column}: the question asks for rows "
                "matching each, which the linker does not compose"
            )


def check_either_or(text: str, tree: exp.Expr) -> None:
    """ "the models made by either General Motors or weighing more than 3500" asks for
    rows meeting one of two conditions; a statement with no OR, IN list or UNION
    requires both of every row (or drops one)."""
    if _EITHER_OR.search(text) and tree.find(exp.Or, exp.In, exp.Union) is None:
        raise LinkError("the statement applies no 'either … or': it requires every condition")
