"""A condition added to the earlier rows: "only the healthcare ones", "those in California",
"of those, which are privately insured?", "exclude placebo". Read from the request's shape;
the condition's words go to the SQL service, which links them to a column or refuses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline._followup._kinds import BuildsOn, Relation, Resolution, value_swap
from services.router.offline._followup._period import BOUND, TIME_IN_QUESTION, with_time
from services.router.offline._followup._swap import SAID_COMPARISON
from services.router.offline._followup._words import LEAD, PLURAL_NOUN, clean, plain, question_body

_FILTER = re.compile(
    rf"^{LEAD}(?:only|just)(?: (?:show|count|keep|list))? (?:the |those |ones )?(?P<f>.+?)"
    r"(?: ones| deals| opportunities| companies| accounts)?\s*\??\s*$",
    re.IGNORECASE,
)
# "only those in California", "just the ones from 2023", "only the active ones".
NARROW = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:only|just)\s+)(?:(?:show|count|keep|list|include|"
    r"consider)\s+)?(?:(?:me|the|those|these|ones|them)\s+)*(?P<f>.+?)"
    r"(?:\s+(?:ones?|only))?$",
    re.IGNORECASE,
)
# "keep only the stocks", "show only the ETFs", "restrict it to CA", "filter to 2023".
NARROW_VERB = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:keep|show|list|count|include)\s+only"
    r"|(?:restrict|filter|narrow|limit)(?:ed)?(?:\s+(?:it|that|this|them|those|these))?"
    r"(?:\s+down)?\s+to)"
    r"\s+(?:(?:me|the|those|these|ones|them)\s+)*(?P<f>.+?)(?:\s+(?:ones?|only))?$",
    re.IGNORECASE,
)
# "keep the ones with more than 2 transactions", "keep those over 50000", "keep the
# vendors we paid more than 10000", "keep the ones using a Book template" ("using" and
# "having" qualify as "with" does): the rows to keep, said with what qualifies them (a
# row count, "keep the top 3", is read before).
KEEP = re.compile(
    r"^(?:(?:and|but|now)\s+)*keep\s+(?:only\s+)?(?P<f>(?:the ones|those|ones|the\s+[a-z][\w'-]*s)"
    r"\s+(?:with|without|that|which|who|where|whose|in|from|over|under|above|below|more|less"
    r"|fewer|older|younger|after|before|since|we|they|you|using|having)\b.+)$",
    re.IGNORECASE,
)
NARROW_AFTER = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:those|the ones|ones|them)\s+(?P<f>.+?)(?:\s+only)?$",
    re.IGNORECASE,
)
# "among them, the ones with private insurance", "of those, only the active ones".
AMONG = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:among|of|from|out of|within)\s+(?:them|those|these|the results?"
    r"|that)\s*,?\s*(?:(?:only|just)\s+)?(?:(?:the ones|those|ones|the)\s+)?(?P<f>.+?)"
    r"(?:\s+(?:ones?|only))?$",
    re.IGNORECASE,
)
# "female only", "the 2023 ones only": a condition the request ends on "only".
NARROW_TAIL = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:the|those)\s+)?(?P<f>[\w'.&-]+(?:\s+[\w'.&-]+){0,3}?)"
    r"(?:\s+ones?)?\s+only$",
    re.IGNORECASE,
)
# "unread ones", "the 2023 ones": a qualifier said of "ones", the earlier rows' stand-in,
# and nothing else (not a word that only points: "those ones", "the other ones"; no
# determiner inside: "list the europe ones" is a request, its verb no qualifier). Read as
# a narrowing only after a statement that compares nothing (see ``qualified_ones``):
# after one that does, "the Asian ones" may be another value.
_QUALIFIED_ONES = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:the|those|these)\s+)?"
    r"(?P<f>(?!(?:the|those|these|other|same|all|any|some|both|which|what|such)\b)"
    r"[\w'.&-]+(?:\s+(?!(?:the|those|these|a|an)\b)[\w'.&-]+){0,2}?)\s+ones$",
    re.IGNORECASE,
)
_WHERE = re.compile(r"\bWHERE\b", re.IGNORECASE)


def qualified_ones(text: str, prior: PriorTurn) -> re.Match[str] | None:
    """ "unread ones" after notifications per type: the earlier rows that are unread. Only
    where the previous statement compares nothing, so the qualifier can be no value put in
    place of one it compares (that stays a value swap, read with the stored values); a
    qualifier no column holds is refused by the SQL service, which reads every word."""
    if _WHERE.search(prior.sql):
        return None
    return _QUALIFIED_ONES.match(text)


# "where the price is under 100", "with more than 5 rooms", "whose age is over 40": a
# clause that qualifies the previous answer's rows, said on its own.
CLAUSE = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?:the ones|those|ones)\s+)?(?P<f>(?:where|whose|with|having|"
    r"that|which|who)\s+.+)$",
    re.IGNORECASE,
)
# "exclude placebo treatments", "without the cancelled ones"; the verb's particle may
# follow its object: "leave the placebo treatments out", "take the refunds out".
EXCLUDE = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:(?P<verb>exclude|excluding|without|except(?: for)?|leave out|"
    r"take out|filter out|remove|drop|ignore|not counting|minus|not)\s+(?:the\s+)?"
    r"(?P<f>.+?)(?:\s+ones)?"
    r"|(?:leave|take|filter|keep)\s+(?:the\s+)?(?P<g>(?!(?:it|that|this|them)\b).+?)"
    r"(?:\s+ones)?\s+out)$",
    re.IGNORECASE,
)


# "drop the suspended ones", "remove those that failed": a verb of removing whose object
# is part of the previous rows, said by a qualifier on "ones" or "those"; after an answer
# of several rows it hides some of them. "drop them", "delete the cancelled orders" name
# no part of the answer (or name data): requests to change data, declined.
_HIDES_PART = re.compile(
    r"^(?:(?:and|but|now)\s+)*(?:drop|remove)\s+(?:(?:the\s+)?\S.*\s+ones|(?:the ones|those)"
    r"\s+(?:that|which|who|with|without|in|from|where|whose)\s+\S.*)$",
    re.IGNORECASE,
)
_CONDITION_HEAD = re.compile(
    r"^(?:in|from|with|without|at|for|that|which|who|where|whose|over|under|above|below|"
    r"older|younger|more|less|greater|fewer|before|after|between|since|during|born|made|"
    r"created|having|using|not)\b",
    re.IGNORECASE,
)


def narrowed(question: str, condition: str) -> Resolution:
    """The previous question with a condition added."""
    condition = re.sub(
        r"^(?:ones\s+|that are\s+|who are\s+|which are\s+)", "", condition, flags=re.I
    )
    if TIME_IN_QUESTION.fullmatch(condition) or re.fullmatch(
        r"(?:in|from|during|for)\s+(?:19|20)\d\d", condition, re.I
    ):
        time = re.sub(r"^from\s+", "in ", condition, flags=re.I)
        return Resolution(
            FollowUpKind.FILTER,
            with_time(question, time),
            builds_on=BuildsOn("", Relation.TIME_SHIFT, period=time),
        )
    if re.match(r"^\d+(?:\.\d+)?\s+[a-z]", condition, re.I):
        condition = f"with {condition}"  # "only the 6 cylinder ones"
    words = condition.split()
    # The SQL service reads every word: "grades above 10" names the column it compares.
    said = condition
    head = next((i for i, w in enumerate(words[:4]) if _CONDITION_HEAD.match(w)), None)
    if head:
        # "cars that cost more than 30k": the condition is what follows the noun.
        condition = " ".join(words[head:])
    elif head is None:
        body = question_body(question).lower()
        if len(words) > 1 and re.search(rf"\b{re.escape(words[-1].lower())}\b", body):
            words = words[:-1]  # "female patients" after a question about patients
        said = " ".join(words)
        condition = f"that are {said}"
    built = BuildsOn("", Relation.FILTER, condition=condition_words(said))
    return Resolution(
        FollowUpKind.FILTER,
        _after_subject(question_body(question), condition) + "?",
        builds_on=built,
    )


def relative_after_those(text: str, match: re.Match[str]) -> bool:
    """Whether a narrowing's "who"/"which" opens a relative clause on the rows, not a
    question: said right after "those" or "the ones" ("just those who performed in 2015",
    "only the ones which sold out") it says which of the rows are kept, as "those that …"
    does; "only which ones …?" and "just who …?" still ask."""
    before = text[: match.start("f")]
    return (
        re.match(r"^(?:who|which)\s+\S", match.group("f"), re.I) is not None
        and re.search(r"\b(?:those|the ones)\s+$", before, re.I) is not None
    )


_LISTED = re.compile(
    rf"^(?P<head>(?:which|what)\s+(?:[\w'-]+\s+){{0,2}}?{PLURAL_NOUN})\s+(?P<rest>\S.*)$", re.I
)


_NOT_NOUNS = frozenset({"is", "was", "has", "does", "this", "its", "his", "as", "us"})


_COUNTED = re.compile(
    r"^(?P<head>(?:list|show(?: me)?|give me|name|find|how many)\s+(?:(?:all|the|every)\s+)?"
    rf"(?:[\w'-]+\s+){{0,2}}?{PLURAL_NOUN})\s+(?P<rest>\S.*)$",
    re.I,
)


def _after_subject(body: str, condition: str) -> str:
    """The condition where it qualifies the rows listed: right after the plural noun a
    "which …", "list the …" or "how many …" question opens with ("Which teachers older
    than 30 teach Math", "List the customers in CA who joined in 2020"), else at the end;
    at the end it would read as part of the last phrase ("teach Math older than 30",
    "joined in 2020 in CA")."""
    listed = _LISTED.match(body) or _COUNTED.match(body)
    noun = listed.group("head").split()[-1].lower() if listed else ""
    if (
        listed is None
        or noun in _NOT_NOUNS
        or listed.group("rest").lower().startswith(("of ", "and ", "or "))
    ):
        return f"{body} {condition}"
    return f"{listed.group('head')} {condition} {listed.group('rest')}"


def hides_rows(question: str, history: Sequence[PriorTurn]) -> bool:
    """Whether a request worded like a change of data ("drop the suspended ones", "remove
    those that failed") hides part of the previous answer's rows: its object is a
    qualified part of them ("the … ones", "those that …") and the previous answer listed
    several rows of a statement. "Drop them" or "delete the cancelled orders" name no
    part of the answer, and stay requests to change data."""
    prior = next((t for t in reversed(history) if not t.unresolved), None)
    if prior is None or not prior.sql or prior.row_count < 2:
        return False
    return _HIDES_PART.match(plain(question)) is not None


# "which are privately insured", "who were born in Texas": after "of those", the rows a
# state or a qualifier picks out. Not a question about the rows themselves: "which are
# the cheapest", "who are their doctors", "which is it", a second verb ("which are
# sold by whom").
WHICH_ARE = re.compile(
    r"^(?:which|who)\s+(?:ones\s+)?(?:are|were|is|was)\s+"
    r"(?P<c>(?!(?:the|a|an|their|its|his|her|our|my|your|them|it|most|least|more|less"
    r"|what|which|who|how|[a-z]+est)\b)[\w'.&-]+(?:\s+(?!(?:is|are|was|were|do|does|did|has|"
    r"have|had|by whom)\b)[\w'.&-]+){0,4})$",
    re.IGNORECASE,
)
# "how many were Envoy Air flights", after "of those": the rows a state picks out,
# counted, as "which were …" lists them (the same words are excluded after the verb).
HOW_MANY_ARE = re.compile(
    WHICH_ARE.pattern.replace(r"^(?:which|who)\s+(?:ones\s+)?", r"^how many\s+"),
    re.IGNORECASE,
)
_COUNT = re.compile(r"\bCOUNT\s*\(", re.IGNORECASE)
_GROUP_BY = re.compile(r"\bGROUP\s+BY\b", re.IGNORECASE)


def one_count(prior: PriorTurn) -> bool:
    """Whether the previous answer was one count of rows (no groups): "how many of
    those …" then counts fewer of the same rows, not something about each row."""
    return (
        bool(prior.sql)
        and prior.row_count <= 1
        and bool(_COUNT.search(prior.sql))
        and not (_GROUP_BY.search(prior.sql))
    )


# "what about those born after 1985?", "how about the ones older than 50?": another
# condition on the rows in place of the previous one of that shape, or one added.
_ABOUT_THOSE = re.compile(
    rf"^{LEAD}(?:what|how) about (?:those|these|the ones|ones)\s+(?P<c>\S.*?)\s*\??$",
    re.IGNORECASE,
)
_SAID_BOUND = re.compile(rf"\b{BOUND}\s+(?:19|20)\d\d\b", re.IGNORECASE)


def other_condition(asked: str, prior: PriorTurn) -> Resolution | None:
    """ "what about those born after 1985?" after "… born before 1985 …": the bound or
    comparison the previous question said, replaced (a value swap, read on the statement
    as another condition on the same column); where it said none of that shape, the
    condition added (a narrowing)."""
    match = _ABOUT_THOSE.match(asked)
    if match is None or not _CONDITION_HEAD.match(match.group("c")):
        return None
    said = clean(match.group("c"))
    body = question_body(prior.resolved_question)
    for shape in (_SAID_BOUND, SAID_COMPARISON):
        new = shape.search(said)
        old = list(shape.finditer(body))
        if new is not None and len(old) == 1:
            return value_swap(
                f"{body[: old[0].start()]}{new.group(0)}{body[old[0].end() :]}?", said
            )
    return narrowed(prior.resolved_question, said)


AUXILIARY_AFTER = re.compile(
    r"^\w+\s+(?:do|does|did|is|are|was|were|can|could|will|would|should|has|have|had)\b", re.I
)


def condition_words(words: str) -> str:
    """A condition as the SQL service reads it: without the words that only point at the
    previous rows ("the failed ones" → "failed")."""
    words = clean(words)
    words = re.sub(r"^(?:(?:the ones|the|those|these|ones|them)\s+)+", "", words, flags=re.I)
    words = re.sub(r"^(?:that|who|which) (?:are|were|is|was)\s+", "", words, flags=re.I)
    words = re.sub(r"^(?:if|when) (?:they|it) (?:are|were|is|was)\s+", "", words, flags=re.I)
    return re.sub(r"\s+(?:ones?|only)$", "", words, flags=re.I) or words


def filtered(asked: str, prior: PriorTurn) -> Resolution | None:
    """ "only healthcare", "just those with a feature": the previous question with the
    condition said after "only"/"just" put at its end, when no statement edit read it."""
    if match := _FILTER.match(asked):
        condition = clean(match.group("f"))
        condition = re.sub(r"^(?:the|those|ones)\s+", "", condition, flags=re.I)
        if not re.match(r"^(?:in|from|with|at|for|that|which|where|whose|over|under|above|"
                        r"below|more|less|closed|created|owned)\b", condition, re.I):  # fmt: skip
            condition = f"in {condition}"
        return Resolution(
            FollowUpKind.FILTER, f"{question_body(prior.resolved_question)} {condition}?"
        )
    return None
