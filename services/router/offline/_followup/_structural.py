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
    _bare_count,
    _limit,
    _limit_of_named_rows,
    _same_ranking_limit,
    _top_of_groups,
    _with_limit,
)
from services.router.offline._followup._narrow import (
    _AMONG,
    _AUXILIARY_AFTER,
    _CLAUSE,
    _EXCLUDE,
    _HOW_MANY_ARE,
    _KEEP,
    _NARROW,
    _NARROW_AFTER,
    _NARROW_TAIL,
    _NARROW_VERB,
    _WHICH_ARE,
    _condition_words,
    _narrowed,
    _one_count,
    _qualified_ones,
    _relative_after_those,
)
from services.router.offline._followup._period import _TIME_IN_QUESTION
from services.router.offline._followup._regroup import _REGROUP, _regrouped
from services.router.offline._followup._words import _body, _clean, _plain
from services.router.offline._picked import picked_condition


def _structural(asked: str, prior: PriorTurn) -> Resolution | None:
    """Row-count changes, regroupings and narrowings, read from the request's shape
    whatever its politeness or case."""
    text = _plain(asked)
    if not text:
        return None
    if (
        limit := _limit(text)
        or _same_ranking_limit(text, prior)
        or _limit_of_named_rows(text, prior)
        or _top_of_groups(text, prior)
        or _bare_count(text, prior)
    ) is not None:
        rows, lowest = limit
        return Resolution(
            FollowUpKind.LIMIT,
            _with_limit(prior.resolved_question, rows, lowest),
            builds_on=BuildsOn(prior.sql, Relation.ROW_LIMIT, limit=rows, ascending=lowest),
        )
    if (match := _REGROUP.match(text)) is not None and not _TIME_IN_QUESTION.fullmatch(
        match.group("dim")
    ):
        dim = _clean(match.group("dim"))
        add = bool(re.search(r"\b(?:also|too|as well)\b", text, re.I)) and not match.group(
            "instead"
        )
        return Resolution(
            FollowUpKind.BREAKDOWN,
            _regrouped(prior.resolved_question, dim, add=add),
            builds_on=BuildsOn(prior.sql, Relation.REGROUP, dimension=dim, add=add),
        )
    if (dropped := drops_condition(asked, [prior])) is not None:
        return Resolution(
            FollowUpKind.FILTER,
            f"{_body(prior.resolved_question)} without "
            f"{'its condition' if dropped == 'filter' else f'the {dropped} condition'}?",
            builds_on=BuildsOn("", Relation.FILTER, condition=dropped, remove=True),
        )
    if (match := _EXCLUDE.match(text)) is not None:
        excluded = _condition_words(match.group("f") or match.group("g"))
        return Resolution(
            FollowUpKind.FILTER,
            f"{_body(prior.resolved_question)} excluding {excluded}?",
            builds_on=BuildsOn("", Relation.FILTER, condition=excluded, exclude=True),
        )
    if (picked := picked_condition(text, prior.sql)) is not None:
        # "which of them visited X?": the earlier rows that did, not a question about them
        return _narrowed(prior.resolved_question, picked)
    if (among := _AMONG.match(text)) is not None and (
        which := _WHICH_ARE.match(_clean(among.group("f")))
    ) is not None:
        # "of those, which are privately insured?": the ones that are
        return _narrowed(prior.resolved_question, f"that are {which.group('c')}")
    if (
        (among := _AMONG.match(text)) is not None
        and (counted := _HOW_MANY_ARE.match(_clean(among.group("f")))) is not None
        and _one_count(prior)
    ):
        # "of those, how many were Envoy Air flights?" after a count: the same count
        # of the ones that are
        return _narrowed(prior.resolved_question, f"that are {counted.group('c')}")
    match = _AMONG.match(text) or _NARROW.match(text) or _NARROW_VERB.match(text)
    match = match or _KEEP.match(text)
    match = match or _NARROW_AFTER.match(text)
    match = match or _NARROW_TAIL.match(text)
    match = match or _qualified_ones(text, prior)
    if match is not None and (
        not re.match(r"^(?:how|what|which|who|why)\b", match.group("f"), re.I)
        or _relative_after_those(text, match)
    ):
        return _narrowed(prior.resolved_question, _clean(match.group("f")))
    # "where do they live?" asks; "where the price is under 100" qualifies
    if (match := _CLAUSE.match(text)) is not None and (
        (
            re.match(r"^(?:where|whose|with|having)\b", match.group("f"), re.I)
            and not _AUXILIARY_AFTER.match(match.group("f"))
        )
        or re.match(r"^(?:the ones|those|ones)\b", text, re.I)
    ):
        return _narrowed(prior.resolved_question, _clean(match.group("f")))
    return None
