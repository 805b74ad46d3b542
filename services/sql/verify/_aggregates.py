"""Aggregate words computed: "average", "how many", "total", "how much" and "above the
average" each need their aggregate (or the subquery that computes the average), unless
the word names a column the statement reads ("stadium.average").

A statement that lists the rows an aggregate word asks to be summed reads the same
table and columns as one that sums them: word coverage cannot tell them apart."""

from __future__ import annotations

import re

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._facts import StatementFacts, numbers_shown
from services.sql.verify._numbers import TIME_UNITS
from services.sql.words import stem

_AVERAGE = re.compile(r"\b(?:average|avg|mean)\b")
# "the number of days between ...": an elapsed time, not a count
_COUNT = re.compile(rf"\b(?:how many|number of|count)\b(?!\s+{TIME_UNITS}\b)")
_TOTAL = re.compile(r"\b(?:total|sum)\b")
_IN_TOTAL = re.compile(r"\bin total\b")
# "How much did we receive per payment method?": a question that asks for an amount.
_HOW_MUCH = re.compile(r"\s*how much\b")
_THAN_AVERAGE = re.compile(r"\bthan (?:the )?(?:average|mean)\b")


# "the average number of seats": the number a column stores, aggregated as asked
_NUMBER_OF = re.compile(
    r"\b(?:average|avg|mean|maximum|max|minimum|min|highest|largest|lowest|smallest)\s+number of\s+([a-z]+)"
)


def _stored_number(
    ctx: LinkContext, count: re.Match[str], text: str, facts: StatementFacts, reads: set[str]
) -> bool:
    """Whether "number of X" is the number a column X stores ("the average number of
    seats" of planes with a ``seats`` column): said after an aggregate word the statement
    computes over the rows, and X names a column it reads and no table (the average
    number of flights per carrier counts flights), it counts nothing."""
    said = next(
        (m for m in _NUMBER_OF.finditer(text) if m.end() > count.start() >= m.start()), None
    )
    if said is None or not facts.aggregates & {"AVG", "MAX", "MIN"}:
        return False
    word = said.group(1)
    if ctx.vocab.tables_named([stem(word)]):
        return False
    return bool({word, stem(word), word.removesuffix("s")} & reads)


def check_than_average(text: str, facts: StatementFacts) -> None:
    """ "above the average" compares with a value the statement computes in a
    subquery."""
    if _THAN_AVERAGE.search(text) and not facts.nested:
        raise LinkError("comparing with an average needs a subquery the linker did not build")


def check_aggregate_words(
    ctx: LinkContext, text: str, facts: StatementFacts, reads: set[str]
) -> None:
    """Each aggregate word has its aggregate: "average" an AVG, "how many" a count,
    "total" a sum or count ("in total" even where "total" also spells a column), "how
    much" an aggregate or a number shown."""
    average = _AVERAGE.search(text)
    if average and "AVG" not in facts.aggregates and average.group(0) not in reads:
        raise LinkError(f"the statement computes no {average.group(0)!r}")
    count = next(
        (m for m in _COUNT.finditer(text) if not _stored_number(ctx, m, text, facts, reads)), None
    )
    if count and not facts.aggregates & {"COUNT", "SUM"} and not reads & {"number", "count", "num"}:
        raise LinkError(f"the statement counts nothing for {count.group(0)!r}")
    total = _TOTAL.search(text)
    # "in total" asks for a sum even where "total" also spells a column ("how much did
    # visitors spend in total" reads ``total_spent``: its values listed are no total).
    in_total = _IN_TOTAL.search(text)
    if (
        total
        and not facts.aggregates & {"SUM", "COUNT"}
        and (total.group(0) not in reads or in_total)
    ):
        said = in_total.group(0) if in_total else total.group(0)
        raise LinkError(f"the statement adds nothing up for {said!r}")


def check_how_much(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "How much did we receive per payment method in March?" answered with the
    payment methods of March listed: no amount, summed or stored, answers "how much"."""
    if _HOW_MUCH.match(text) and not facts.aggregates and not numbers_shown(ctx, facts):
        raise LinkError("the statement returns no amount for 'how much'")
