"""Grouping words kept, and none added: "each" / "per" / "for every" with a measure
groups, by what the word after "each" names; one value asked ("what is the total
distance", "how many") is not answered per group, and a passive's "by" ("flown by
flights of Delta") asks for no grouping; a count of groups that are one row each counts
nothing; "how many … each X" is not answered by listing the rows that refer to X (each X
once per such row); "distinct" / "different" keeps distinct values; "order" / "sort"
orders.

A statement grouped or not reads the same columns, so word coverage sees none of this."""

from __future__ import annotations

import re

from services.sql.linker import GRAINS, LinkContext, LinkError, is_temporal
from services.sql.verify._facts import StatementFacts, without_quotes
from services.sql.words import IRREGULAR_PARTICIPLES, bare_agent_said, names_agent, stem

_EACH = re.compile(r"\b(?:each|per|for every)\b")
_DISTINCT = re.compile(r"\b(?:distinct|different|unique)\b")
# "ordered by", "in descending order", "sorted"; not "have never been ordered"
_ORDER = re.compile(
    r"\b(?:order(?:ed)? by|in (?:\w+ ){0,3}order|sort(?:ed)?|arrange(?:d)?|ascending|"
    r"descending|alphabetical(?:ly)?)\b"
)
# A question that asks for one count, and the words that would make it one per group.
_COUNT_HEAD = re.compile(
    r"\s*(?:how many|count|(?:what is|what's|find|return|give|show|tell me) the (?:total )?"
    r"number of)\b"
)
# ... and one that asks for one aggregate ("What is the average balance for user wallets
# updated in the past week?": the average, not one per user).
_MEASURE_HEAD = re.compile(
    r"\s*(?:what is|what's|what was|calculate|compute|find|return|give me|tell me) (?:the )?"
    r"(?:overall )?(?:average|avg|mean|total|sum|maximum|max|minimum|min|median)\b"
)
_GROUPING = re.compile(
    r"\b(?:each|per|every|by|respectively|for all|grouped|breakdown|split|have|has|had|"
    r"with|than|more|less|fewer|least|most)\b"
)
# "the total distance flown by flights of Delta", "planes made by BOEING": "by" after a
# past participle names who did it (the passive's agent), not what to group by. The
# participles that arrange rows ("grouped by", "sorted by", "broken down by") keep it.
_AGENT_BY = re.compile(r"\b([a-z]+) by\b")
_ARRANGING = re.compile(
    r"(?:group|order|sort|rank|arrang|list|categori[sz]|classifi|bucket|segment|partition|"
    r"aggregat|summari[sz]|organi[sz]|separat|divid|count|total+|tall|cluster|index|key)ed"
)
# "planes per manufacturer": the word after "per" (articles skipped)
_PER_WORD = re.compile(r"\bper\s+(?:(?:the|one|single|each|every)\s+)*([a-z]+)")
_EACH_WORD = re.compile(
    r"\b(?:each|for every)\s+(?:(?:of|the|one|single|individual|last|past|\d+)\s+)*([a-z]+)"
)


def check_grouping(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """Groups where the question says "each" and by what it names, one value where it
    asks one, no count of one-row groups, distinct values and an order where it says
    so."""
    asked = without_quotes(ctx.original.lower())
    # "the average AMB" with AMB defined as "the average balance per user" asks for one
    # average of the per-user values: a definition's "per" groups inside the measure, not
    # the answer; the question as asked says whether it wants one value
    # "flights operated by airline": a passive's bare agent groups (``_bare_agent``)
    bare = _bare_agent(ctx)
    one_value = bool(_MEASURE_HEAD.match(asked) and not (_grouping(asked) or bare))
    each = _EACH.search(text)
    if each and facts.aggregates and not facts.grouped and not facts.ranked and not one_value:
        raise LinkError(f"the statement does not group by what follows {each.group(0)!r}")
    if facts.aggregates and not facts.grouped and not facts.ranked:
        _by_table_ungrouped(ctx, text)
    if facts.grouped:
        _groups_by_each(ctx, text, facts)
        _grain_elsewhere(ctx, text, facts)
    elif facts.limited and not facts.ranked and not facts.nested:
        _picked_over_all(ctx, text, facts)
    if not facts.grouped and not facts.aggregates:
        _listed_per(ctx, text, facts)
        _listed_by(ctx, text, facts)
        if _COUNT_HEAD.match(text):
            _counted_each_listed(ctx, text, facts)
    if facts.grouped and _COUNT_HEAD.match(text) and not (_grouping(text) or bare):
        raise LinkError("the question asks for one count, the statement counts per group")
    if facts.grouped and "COUNT" in facts.aggregates and _one_row_per_group(ctx, facts):
        raise LinkError("the statement counts one row per group: it groups by the key of the "
                        "rows it counts")  # fmt: skip
    if facts.grouped and (
        one_value or (_MEASURE_HEAD.match(text) and not (_grouping(text) or bare))
    ):
        raise LinkError("the question asks for one value, the statement computes one per group")
    distinct = _DISTINCT.search(text)
    if distinct and not (facts.distinct or facts.grouped):
        raise LinkError(f"the statement does not keep {distinct.group(0)!r} values apart")
    order = _ORDER.search(text)
    if order and not facts.ordered:
        raise LinkError(f"the statement does not order as {order.group(0)!r} asks")


# "how many … by <noun>", "the total … by <noun>": a measured question's "by" (articles
# skipped) and up to three words after it
_MEASURED = re.compile(r"\b(?:how many|number of|count|total|average|avg|mean|sum)\b")
_BY_WORDS = re.compile(r"\b([a-z]+) by\s+(?:(?:the|a|an)\s+)?([a-z]+(?:\s+[a-z]+){0,2})")


def _by_table_ungrouped(ctx: LinkContext, text: str) -> None:
    """ "How many companies are there by region?" answered with one count over companies
    joined to regions: the grouping phrase accounted for by a join, not a grouping, a
    confident wrong (ISSUE-45, s62). A measured question's "by" before a table's noun is
    held to a GROUP BY as "each"/"per" are; a passive's "by" ("models made by ford",
    "ordered by age", ``names_agent``) names an agent or an order, no grouping. Only a
    table's noun is held here: "by" before anything else ("by 2020", "by more than") may
    be no grouping at all. The measure is said before the "by": "song names by singers
    above the average age" lists songs by their singers, its average a condition's.
    The noun ends the question or its clause (a comma): "the sales of songs by singers
    born before 1940" restricts the singers and names no grouping."""
    measured = _MEASURED.search(text)
    if measured is None:
        return
    for m in _BY_WORDS.finditer(text, measured.end()):
        before, after = m.group(1), m.group(2).split()
        if names_agent(before) and before != "grouped" and not _bare_agent(ctx, before):
            continue
        # the fewest words that name a table ("car makers"), then what follows them
        width = next(
            (w for w in range(1, len(after) + 1) if ctx.vocab.tables_named(
                [stem(x) for x in after[:w]])),
            0,
        )  # fmt: skip
        rest = text[m.start(2) :].split(maxsplit=width)
        if not width or (len(rest) > width and not rest[width - 1].endswith(",")):
            continue  # no table's noun, or more said of its rows: "by" names no grouping
        phrase = " ".join(["by", *after[:width]])
        raise LinkError(f"the statement does not group by what {phrase!r} names")


def _bare_agent(ctx: LinkContext, participle: str = "") -> bool:
    """ "How many flights were operated by airline?": a passive's "by" before a bare
    singular noun as the user wrote it (``words.bare_agent_said``) names no one agent;
    it groups, as "by region" does, and is held to a grouping as that is. Only words
    that name a table by its own name count (a name read in meaning is no grouping)."""
    words = bare_agent_said(ctx.original, participle)
    return bool(words) and bool(ctx.vocab.tables_named([stem(w) for w in words]))


def _grouping(text: str) -> re.Match[str] | None:
    """The first word of ``text`` that asks for groups (``_GROUPING``), a passive's "by"
    not counted."""

    def agent(match: re.Match[str]) -> str:
        word = match.group(1)
        passive = (word.endswith("ed") and not _ARRANGING.fullmatch(word)) or (
            word in IRREGULAR_PARTICIPLES
        )
        return f"{word} _" if passive else match.group(0)

    return _GROUPING.search(_AGENT_BY.sub(agent, text))


def _catalog_holds(ctx: LinkContext, word: str) -> bool:
    """``word`` (stemmed as the question's words are compared) is one a column or table of
    the catalog is named by, or a time grain: what a word after "each" / "per" must be to
    ask for a group here. A word the catalog does not hold ("each one") asks for none,
    so the three grouping checks that read such a word hold it to the same words. The
    catalog's part is the vocabulary's (:attr:`Vocabulary.named_words`, built once per
    catalog), not rebuilt per statement."""
    return word in ctx.vocab.named_words or word in GRAINS


def _groups_by_each(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "in each year" grouped by employee is another answer: the word after "each" (or
    "for every") names what a grouped column, its table or a time grain says, or the
    statement is refused. (Only words of the catalog are held to it: "each one" names
    nothing to check.)"""
    words = [m.group(1) for m in _EACH_WORD.finditer(text)]
    if not words:
        return
    said: set[str] = set(facts.grains)
    for table, column in facts.groups:
        said.update(ctx.vocab.column_words.get((table, column), []))
        said.update(re.findall(r"[a-z]+", column.lower()))
        said.update(ctx.vocab.table_words.get(table, []))
        said.update(w for name in ctx.vocab.table_aliases.get(table, []) for w in name)
    said = {stem(w) for w in said}
    for each in words:
        if _catalog_holds(ctx, stem(each)) and stem(each) not in said:
            raise LinkError(f"the statement does not group by {each!r}")


_GRAIN_ASKED = re.compile(r"\b(?:per|each|every|by)\s+(year|month|day|week|quarter)s?\b")


def _picked_over_all(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "What is the most expensive car of each make?" answered with the one most
    expensive car of all (ISSUE-45, probes round 3): a pick asked within each group
    (a top row, the first N) is not one cut over every row. A statement that cuts its
    rows (LIMIT) with no grouping, no window and no sub-query picks over all of them, so
    "each" / "for every" / "per" before a word of the catalog is refused there. A word
    that names the picked rows' own table ("each car" of cars) asks for nothing per
    group and passes; so do words the catalog does not hold ("each one")."""
    words = [m.group(1) for m in _EACH_WORD.finditer(text)]
    words += [m.group(1) for m in _PER_WORD.finditer(text)]
    if not words:
        return
    own: set[str] = set(ctx.vocab.table_words.get(facts.base, []))
    own.update(w for name in ctx.vocab.table_aliases.get(facts.base, []) for w in name)
    for word in words:
        if _catalog_holds(ctx, stem(word)) and stem(word) not in own:
            raise LinkError(f"the statement picks over all rows, not within each {word!r}")


def _grain_elsewhere(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "How many payments received per year?" grouped by ``cars.year`` (the model year
    of the car each payment's sale sold, two joins away) is another answer: the payments'
    own year is the year of their date. A calendar word ("per year", "each month") that
    the statement answers by a column of that name on another table than the one it
    counts, while the counted table holds a date of its own, is refused. A counted table
    with no date ("average weight per year" of ``cars_data``, whose year is a column)
    and a column of the counted table itself pass."""
    if facts.grains or not facts.base:
        return
    base = ctx.catalog.table(facts.base)
    if base is None or not any(is_temporal(c.data_type) for c in base.columns):
        return
    for asked in _GRAIN_ASKED.finditer(text):
        grain = asked.group(1)
        saying = [(t, c) for t, c in facts.groups if c.lower() == grain]
        if saying and all(t != facts.base for t, _ in saying):
            table = saying[0][0].rpartition(".")[2]
            raise LinkError(
                f"'{asked.group(0)}' is grouped by {table}.{grain}, not the year of the "
                f"counted rows' own date"
                if grain == "year"
                else f"'{asked.group(0)}' is grouped by {table}.{grain}, not by the counted "
                "rows' own date"
            )


def _listed_per(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "planes built before 1990 per manufacturer", "flights per origin": "per" and a
    word of the catalog ask for one value per group (a count where no measure is said);
    a statement that neither groups nor aggregates lists rows, one per plane, or the
    manufacturers alone, none of them the number asked. Refused. A rate that a column's
    own name carries ("price_per_night" read) is that column, not a grouping."""
    read = {column.lower() for _, column in facts.columns}
    for match in _PER_WORD.finditer(text):
        word = match.group(1)
        if any(f"per_{word}" in column for column in read):
            continue
        if _catalog_holds(ctx, stem(word)):
            raise LinkError(f"the statement does not group by what follows 'per {word}'")


# "singers by country": a question that opens with a plural noun and "by", no head
_OPENING_BY = re.compile(
    r"^\s*(?:(?:the|all)\s+)?(?:[a-z]+\s+)?([a-z]+)\s+by\s+([a-z]+(?:\s+[a-z]+)?)"
)


def _listed_by(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "singers by country", "patients by insurance type": a headless question that
    names a table's rows and a column to break them down by asks how many there are per
    value, as "per" does (``_listed_per``); a listing of the rows beside the column shows
    each row, none of them the number per country. Refused (the count is read by the
    linker's rephrasing). Held only where the noun before "by" is a table's name and the
    word after it a column's: "planes made by Boeing" (a passive's agent) opens with no
    table noun before "by", and "list singers by country" has a head of its own."""
    m = _OPENING_BY.match(text)
    if m is None:
        return
    noun, by = stem(m.group(1)), {stem(w) for w in m.group(2).split()}
    tables = {stem(parts[-1]) for parts in ctx.vocab.table_words.values() if parts}
    columns = {stem(w) for parts in ctx.vocab.column_words.values() for w in parts}
    if noun in tables and by & columns:
        raise LinkError(f"the statement does not count {m.group(1)!r} by {m.group(2)!r}")


def _counted_each_listed(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "How many tickets were bought at each museum?" answered as a listing of visits
    (each visit's ticket count beside its museum's name): a count asked for each row of
    a table, answered by rows of a table that refers to it, shows each of those rows once
    per referring row, none of them with one count. Refused where a table "each" names
    is read and an output column belongs to a table whose rows refer to it; a listing of
    the named table's own rows ("how many staff does each museum have", one row per
    museum) passes."""
    words = {stem(m.group(1)) for m in _EACH_WORD.finditer(text)}
    named = {
        t for t in facts.tables if (parts := ctx.vocab.table_words.get(t)) and parts[-1] in words
    }
    shown = {t for t, _ in facts.outputs}
    for table in named:
        for edge in ctx.graph.edges_of(table):
            if edge.parent == table and edge.child != table and edge.child in shown:
                raise LinkError(
                    f"the question counts for each {table.rsplit('.', 1)[-1]}; the statement "
                    f"lists {edge.child.rsplit('.', 1)[-1]} rows, each "
                    f"{table.rsplit('.', 1)[-1]} once per row that refers to it"
                )


def _one_row_per_group(ctx: LinkContext, facts: StatementFacts) -> bool:
    """Grouped by the declared key of the table it reads rows from, joined only to tables
    each of those rows refers to: every group is one row, and a count of it is 1 ("the id
    and name of the document with the most paragraphs" grouped by ``paragraph_id``)."""
    base = ctx.catalog.table(facts.base) if facts.base else None
    if base is None or not base.primary_key or base.key_evidence:
        return False  # a key seen in the data may be unique by chance: no certainty
    if not {(base.qualified, c) for c in base.primary_key} <= facts.groups:
        return False
    edges = ctx.graph.edges_of(base.qualified)
    if any(e.child == base.qualified and set(e.child_columns) == set(base.primary_key)
           for e in edges):  # fmt: skip
        return False  # the key refers to another table's rows ("likes per student")
    others = facts.tables - {base.qualified}
    return not any(e.parent == base.qualified and e.child in others for e in edges)
