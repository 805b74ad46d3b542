"""A comparison said is compared (issue 45, s59): "List the skippers older than Ines."
was answered with the skippers called Ines, a confident wrong; a statement with no
ordering operator where the question says "<comparative> than" is refused, and one
that compares passes."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import JoinGraph
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.schemas import linked_statement
from tests.unit.sql.test_sql_first_turns import HARBOUR

TODAY = date(2026, 11, 30)
WORDS = Vocabulary(HARBOUR, JoinGraph(HARBOUR))


def test_a_comparison_read_as_an_equality_is_refused() -> None:
    with pytest.raises(LinkError, match="compares nothing"):
        linked_statement("List the skippers older than Ines.", HARBOUR, TODAY)
    context = read_question("Which skippers are older than Ines?", WORDS, TODAY)
    with pytest.raises(LinkError, match="compares nothing"):
        verify_statement(
            context,
            "SELECT t0.name AS name FROM public.skippers AS t0 WHERE t0.name = 'Ines'",
        )


def test_a_comparison_compared_passes() -> None:
    context = read_question("Which skippers are older than Ines?", WORDS, TODAY)
    verify_statement(
        context,
        "SELECT t0.name AS name FROM public.skippers AS t0 WHERE t0.age > "
        "(SELECT s.age FROM public.skippers AS s WHERE s.name = 'Ines')",
    )
    # "other than" compares nothing: it says which rows are left out
    context = read_question("Which skippers are other than Ines?", WORDS, TODAY)
    verify_statement(
        context,
        "SELECT t0.name AS name FROM public.skippers AS t0 WHERE t0.name <> 'Ines'",
    )
