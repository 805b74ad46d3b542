"""The statement edits read from the request's shape, in the order they are tried: a row
count, a grouping, a condition removed, excluded, picked or added. Each is one reading
module's; this only orders them, as a row count said with "only" is no narrowing.
"""

from __future__ import annotations

import re

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline._followup._dropped import drops_condition
from services.router.offline._followup._kinds import BuildsOn, Relation, Resolution
from services.router.offline._followup._limit import (
    bare_count,
    limit_of_named_rows,
    row_limit,
    same_ranking_limit,
    top_of_groups,
    with_limit,
)
from services.router.offline._followup._narrow import (
    AMONG,
    AUXILIARY_AFTER,
    CLAUSE,
    EXCLUDE,
    HOW_MANY_ARE,
    KEEP,
    NARROW,
    NARROW_AFTER,
    NARROW_TAIL,
    NARROW_VERB,
    WHICH_ARE,
    condition_words,
    narrowed,
    one_count,
    qualified_ones,
    relative_after_those,
)
from services.router.offline._followup._period import TIME_IN_QUESTION
from services.router.offline._followup._regroup import REGROUP, regrouped
from services.router.offline._followup._words import clean, plain, question_body
from services.router.offline._picked import picked_condition


def structural_reading(asked: str, prior: PriorTurn) -> Resolution | None:
    """Row-count changes, regroupings and narrowings, read from the request's shape
    whatever its politeness or case."""
    text = plain(asked)
    if not text:
        return None
    if (
        limit := row_limit(text)
        or same_ranking_limit(text, prior)
        or limit_of_named_rows(text, prior)
        or top_of_groups(text, prior)
        or bare_count(text, prior)
    ) is not None:
        rows, lowest = limit
        return Resolution(
            FollowUpKind.LIMIT,
            with_limit(prior.resolved_question, rows, lowest),
            builds_on=BuildsOn(prior.sql, Relation.ROW_LIMIT, limit=rows, ascending=lowest),
        )
    if (match := REGROUP.match(text)) is not None and not TIME_IN_QUESTION.fullmatch(
        match.group("dim")
    ):
        dim = clean(match.group("dim"))
        add = bool(re.search(r"\b(?:also|too|as well)\b", text, re.I)) and not match.group(
            "instead"
        )
        return Resolution(
            FollowUpKind.BREAKDOWN,
            regrouped(prior.resolved_question, dim, add=add),
            builds_on=BuildsOn(prior.sql, Relation.REGROUP, dimension=dim, add=add),
        )
    if (dropped := drops_condition(asked, [prior])) is not None:
        return Resolution(
            FollowUpKind.FILTER,
            f"{question_body(prior.resolved_question)} without "
            f"{'its condition' if dropped == 'filter' else f'the {dropped} condition'}?",
            builds_on=BuildsOn("", Relation.FILTER, condition=dropped, remove=True),
        )
    if (match := EXCLUDE.match(text)) is not None:
        excluded = condition_words(match.group("f") or match.group("g"))
        return Resolution(
            FollowUpKind.FILTER,
            f"{question_body(prior.resolved_question)} excluding {excluded}?",
            builds_on=BuildsOn("", Relation.FILTER, condition=excluded, exclude=True),
        )
    if (picked := picked_condition(text, prior.sql)) is not None:
        # "which of them visited X?": the earlier rows that did, not a question about them
        return narrowed(prior.resolved_question, picked)
    if (among := AMONG.match(text)) is not None and (
        which := WHICH_ARE.match(clean(among.group("f")))
    ) is not None:
        # "of those, which are privately insured?": the ones that are
        return narrowed(prior.resolved_question, f"that are {which.group('c')}")
    if (
        (among := AMONG.match(text)) is not None
        and (counted := HOW_MANY_ARE.match(clean(among.group("f")))) is not None
        and one_count(prior)
    ):
        # "of those, how many were Envoy Air flights?" after a count: the same count
        # of the ones that are
        return narrowed(prior.resolved_question, f"that are {counted.group('c')}")
    match = AMONG.match(text) or NARROW.match(text) or NARROW_VERB.match(text)
    match = match or KEEP.match(text)
    match = match or NARROW_AFTER.match(text)
    match = match or NARROW_TAIL.match(text)
    match = match or qualified_ones(text, prior)
    if match is not None and (
        not re.match(r"^(?:how|what|which|who|why)\b", match.group("f"), re.I)
        or relative_after_those(text, match)
    ):
        return narrowed(prior.resolved_question, clean(match.group("f")))
    # "where do they live?" asks; "where the price is under 100" qualifies
    if (match := CLAUSE.match(text)) is not None and (
        (
            re.match(r"^(?:where|whose|with|having)\b", match.group("f"), re.I)
            and not AUXILIARY_AFTER.match(match.group("f"))
        )
        or re.match(r"^(?:the ones|those|ones)\b", text, re.I)
    ):
        return narrowed(prior.resolved_question, clean(match.group("f")))
    return None
