"""Aggregate words computed: "average", "how many", "total", "how much" and "above the
average" each need their aggregate (or the subquery that computes the average), unless
the word names a column the statement reads ("stadium.average").

A statement that lists the rows an aggregate word asks to be summed reads the same
table and columns as one that sums them: word coverage cannot tell them apart."""

from __future__ import annotations

import re

from services.sql.catalog import is_number
from services.sql.linker import LinkContext, LinkError
from services.sql.verify._facts import StatementFacts, numbers_shown, without_quotes
from services.sql.verify._numbers import TIME_UNITS
from services.sql.words import STOP_WORDS, measure_name, name_words, stem

_AVERAGE = re.compile(r"\b(?:average|avg|mean)\b")
# "the number of days between ...": an elapsed time, not a count
_COUNT = re.compile(rf"\b(?:how many|number of|count)\b(?!\s+{TIME_UNITS}\b)")
_TOTAL = re.compile(r"\b(?:total|sum)\b")
_IN_TOTAL = re.compile(r"\bin total\b")
# "How much did we receive per payment method?": a question that asks for an amount.
_HOW_MUCH = re.compile(r"\s*how much\b")
_THAN_AVERAGE = re.compile(r"\bthan (?:the )?(?:average|mean)\b")


def check_than_average(text: str, facts: StatementFacts) -> None:
    """ "above the average" compares with a value the statement computes in a
    subquery."""
    if _THAN_AVERAGE.search(text) and not facts.nested:
        raise LinkError("comparing with an average needs a subquery the linker did not build")


def _column_number(text: str, match: re.Match[str], reads: set[str]) -> bool:
    """ "the phone number of every shipper": a "number of" that follows a word of a
    column the statement reads is that column's name in full (a phone number is the
    ``phone``), not a count. A word of no column read ("the total number of orders")
    leaves it a count."""
    if not match.group(0).startswith("number"):
        return False
    before = re.findall(r"[a-z]+", text[: match.start()])
    return bool(before) and (before[-1] in reads or stem(before[-1]) in reads)


def check_aggregate_words(
    text: str, facts: StatementFacts, reads: set[str], ctx: LinkContext
) -> None:
    """Each aggregate word has its aggregate: "average" an AVG, "how many" a count
    (or the column that stores the count said, :func:`stored_count`), "total" a sum or
    count ("in total" even where "total" also spells a column), "how much" an aggregate
    or a number shown."""
    average = _AVERAGE.search(text)
    if average and "AVG" not in facts.aggregates and average.group(0) not in reads:
        raise LinkError(f"the statement computes no {average.group(0)!r}")
    count = next((m for m in _COUNT.finditer(text) if not _column_number(text, m, reads)), None)
    if (
        count
        and not facts.aggregates & {"COUNT", "SUM"}
        and not reads & {"number", "count", "num"}
        and not stored_count(ctx, text, facts)
    ):
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


# "what share of transactions failed": a part of some rows, said before the rows' noun
_SHARE_OF = re.compile(
    r"\b(percentage|percent|share|proportion|fraction)\s+of\s+(?:all\s+|the\s+)?"
    r"([a-z]+(?:\s+[a-z]+){0,2})"
)


def check_share_divided(ctx: LinkContext, text: str, sql: str) -> None:
    """ "What share of transactions failed?" answered with the failed transactions'
    ``sbtxshares`` listed (ISSUE-45, probes round 3): the word that asks for a part of
    the rows spelled a column, and coverage was content. A proportion word, "of", a
    table's noun and more words (what the part of them does) ask for some rows per all
    of them: a statement that divides nothing is refused. "The market share of each
    company" (no table noun straight after "of") and "the share of transactions" (nothing
    said of them) are left to the other checks."""
    if "/" in without_quotes(sql):
        return
    for m in _SHARE_OF.finditer(text):
        after = m.group(2).split()
        width = next(
            (w for w in range(1, len(after)) if ctx.vocab.tables_named(
                [stem(x) for x in after[:w]])),
            0,
        )  # fmt: skip
        if width:
            phrase = " ".join([m.group(1), "of", *after[:width]])
            raise LinkError(f"the statement divides nothing for {phrase!r}")


# "… and the total sale price": a total said of something other than a count
_TOTAL_OF = re.compile(r"\btotal\s+(?!(?:number|count|amount of|of)\b)([a-z]+(?:\s+[a-z]+)?)")


def check_total_beside_count(
    text: str, facts: StatementFacts, reads: set[str], ctx: LinkContext
) -> None:
    """ "How many sales and the total sale price did each salesperson make?" answered
    with the count alone: "total" was accounted for by the count "how many" asks for,
    and the second measure, said as a noun, dropped (ISSUE-45, s63). Where a count and
    a total of something are both said, the total needs a sum of its own; a total of a
    table's rows ("the total sales", "total active customers": its last word names the
    table) or one said a count ("total sales count") is a count, and a column named for
    its total (``total_spent``) read is the total stored."""
    count = _COUNT.search(text)
    total = _TOTAL_OF.search(text)
    if not (count and total) or "SUM" in facts.aggregates or "total" in reads:
        return
    if _IN_TOTAL.search(text):
        return
    words: list[str] = []
    for word in total.group(1).split():
        if word in STOP_WORDS:
            break
        words.append(word)
    if not words or {"count", "number"} & set(words):
        return  # "the total sales count": a count
    if ctx.vocab.tables_named([stem(words[-1])]):
        return  # "the total (active) customers": how many rows, a count
    raise LinkError(f"the statement adds nothing up for {'total ' + ' '.join(words)!r}")


def check_how_much(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "How much did we receive per payment method in March?" answered with the
    payment methods of March listed: no amount, summed or stored, answers "how much"."""
    if _HOW_MUCH.match(text) and not facts.aggregates and not numbers_shown(ctx, facts):
        raise LinkError("the statement returns no amount for 'how much'")


_NUMBER_OF = re.compile(r"\bnumber of (?:the )?([a-z]+)")


def stored_count(ctx: LinkContext, text: str, facts: StatementFacts) -> bool:
    """Whether each "number of <things>" names a column the statement reads that stores
    how many things each row has: a number column (no key) called the things
    (``cars_data.cylinders``: "the average weight for each number of cylinders" groups
    by it), or one whose name says it counts them (``num_of_staff``). Counting rows
    there would count the rows, not the things; a "number of" whose things no such
    column stores still needs its count, and so does one whose things a table holds
    ("the average number of flights per carrier" counts flights, even where
    ``flights.flight`` stores a number)."""
    said = _NUMBER_OF.findall(text)
    if not said or any(ctx.vocab.tables_named([stem(w)]) for w in said):
        return False
    stored: set[str] = set()
    for col in ctx.vocab.columns:
        if col.key not in facts.columns or not is_number(col.column.data_type):
            continue
        name = col.column.name
        if col.table.primary_key == (name,) or name.lower().endswith("id"):
            continue
        words = [stem(w) for w in name_words(name)]
        if len(words) == 1 or measure_name(name):
            stored.add(words[-1])
    return all(stem(w) in stored for w in said)
