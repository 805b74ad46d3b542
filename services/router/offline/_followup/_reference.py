"""A reference to the earlier rows: "those deals", "their call notes", "he", "it", "there".
After a SQL answer the rows are the earlier statement's (a sub-query in the SQL service,
never a pasted list); otherwise the members or the set the earlier question described are
spelled out, and a pointer with nothing to point at is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline._followup._kinds import BuildsOn, Relation, Resolution
from services.router.offline._followup._route import document_question
from services.router.offline._followup._turn import named_turn
from services.router.offline._followup._words import (
    CLAUSE_BOUNDARY,
    NOT_PLURAL,
    NUMBER_WORDS,
    PLURAL_BEFORE,
    PLURAL_WORD,
    clean,
    described_set,
    finish,
    joined_names,
    question_body,
)

# One earlier row pointed at: "he", "she", "his age", "that singer", "this person". Said
# after an auxiliary or a preposition ("which museums did he visit?", "how old is that
# teacher?", "for her"), never as a relative "that" after a noun ("singers that sing").
_ONE_REFERENCE = re.compile(
    r"\b(?:is|was|are|were|do|does|did|has|have|had|can|could|will|would|of|for|in|at|by|"
    r"with|to|from|about|on)\s+(?P<p>he|she|him|her|his|(?:that|this)\s+(?!(?:is|was|are|"
    r"were|has|have|had|does|did|do|means?|year|quarter|month|week|weekend|day|hour|time|"
    r"period|date|season|semester|morning|evening|night|case|point|moment|way|much|many|far|"
    r"long|list|table|result|set|group|answer|query|data|chart|report|one's)\b)"
    r"[a-z]{3,})\b",
    re.IGNORECASE,
)
# One earlier row pointed at by a demonstrative that ends the question ("what type of
# ticker is that?", "who made this?"): a pronoun, not a determiner, as nothing follows it.
_POINTED_LAST = re.compile(
    r"\b(?:is|was|are|were|[a-z]{3,}s|did|made|bought)\s+(?P<p>that|this)\W*$", re.IGNORECASE
)
# "it" ending a question ("who manufactures it?", "when was it sold?" is not): the object
# of its verb, which only an earlier clause or answer can name.
_LAST_IT = re.compile(r"\b(?P<p>it)\W*$", re.IGNORECASE)
# "what's that user's email?": the contracted "is" before the pointer.
_CONTRACTED_POINTER = re.compile(r"'s\s+(?P<p>(?:that|this)\s+[a-z]{3,})\b", re.IGNORECASE)
# "which of them", "those deals", "these", "their", "them", "they".
# "those", "these documents", "those people": a plural noun after the demonstrative is
# what it names.
# "those five", "these 3 teachers": a count between them says how many rows are meant.
_DEMONSTRATIVE = re.compile(
    r"\b(?P<det>those|these)(?: (?P<count>\d{1,3}|two|three|four|five|six|seven|eight|nine|ten)"
    r"\b)?(?: (?!(?:was|is|has|does|its|us)\b)(?P<noun>[a-z]{2,}s|people))?\b",
    re.IGNORECASE,
)
# "that group", "this list": a collective noun after a singular demonstrative points at
# the earlier rows together, as "those" does (not "this list of …", "that group by …",
# which say what they name).
_COLLECTIVE = re.compile(
    r"\b(?P<det>that|this)(?P<count>) (?:group|set|list|bunch|lot|batch)(?P<noun>)\b"
    r"(?! (?:of|by)\b)",
    re.IGNORECASE,
)
_PART_OF = re.compile(r"\b(which|how many|any|each|all|none|some) of (?:them|those|these)\b", re.I)
_PRONOUN = re.compile(r"\b(?P<p>their|them|they)\b", re.IGNORECASE)
_SINGULAR = re.compile(r"\b(?P<p>its|it)\b", re.IGNORECASE)
# "its" as a possessive ("which destinations did its flights fly to?"): the owner is
# something named before, in this question or an earlier answer.
_POSSESSIVE_ITS = re.compile(r"\b(?P<p>its)\s+[a-z]", re.IGNORECASE)
# Before an "its", what could own it in the question itself: a clause of its own
# ("the airline with the most flights and its name") or a noun phrase a determiner opens
# ("the carrier with the largest fleet ... its hub").
_OWNER_BEFORE = re.compile(r"\b(?:the|a|an|this|that|each|every|one)\b", re.IGNORECASE)
# "spend there", "who works there": the place an earlier answer named, never the "there"
# of "are there", "there were", "is there any", "there's".
_PLACE = re.compile(
    r"(?<!\bare )(?<!\bis )(?<!\bwas )(?<!\bwere )(?<!\bbe )(?<!\bbeen )(?<!'s )\bthere\b"
    r"(?!\s+(?:is|are|was|were|be|been|will|has|have|had|exists?|remains?)\b)(?!')",
    re.IGNORECASE,
)
_AUXILIARY_BEFORE = re.compile(
    r"\b(?:are|were|is|was|do|did|does|have|has|had|can|could|will|would)\s*$", re.IGNORECASE
)


def _reference_target(prior: PriorTurn) -> str | None:
    """How to name the prior result set: its members when it listed any, else the set
    its question described."""
    if prior.members:
        return joined_names(prior.members)
    described = described_set(prior.resolved_question)
    if described is None:
        return None
    found, rest = described
    return clean(f"the {found} {rest}") if rest else f"the {found}"


def _unowned_its(question: str) -> re.Match[str] | None:
    """A possessive "its" nothing in the question before it can own: no clause before
    it and no noun phrase a determiner opens ("which destinations did its flights fly
    to?"). Whatever owns it was named by an earlier turn."""
    match = _POSSESSIVE_ITS.search(question)
    if match is None:
        return None
    # (the question's own opening "which"/"where" opens no earlier clause)
    before = re.sub(
        r"^\W*(?:which|who|whose|where|when)\b", "", question[: match.start()], flags=re.I
    )
    if CLAUSE_BOUNDARY.search(before) or _OWNER_BEFORE.search(before):
        return None
    return match


def _one_row_pointer(question: str) -> re.Match[str] | None:
    """A pointer at one earlier row: "he", "that singer" after a verb or preposition, "that
    user's" after a contracted "is", or a demonstrative ending the question."""
    return (
        _ONE_REFERENCE.search(question)
        or _CONTRACTED_POINTER.search(question)
        or _POINTED_LAST.search(question)
    )


def _unowned_singular(question: str) -> re.Match[str] | None:
    """An "its", or an "it" ending the question, that nothing before it in the question
    can own (no clause, no noun phrase a determiner opens): an earlier answer's row."""
    return _unowned_its(question) or _unowned_last_it(question)


def _unowned_last_it(question: str) -> re.Match[str] | None:
    """An "it" ending the question ("who manufactures it?") with no owner before it."""
    match = _LAST_IT.search(question)
    if match is None:
        return None
    before = re.sub(
        r"^\W*(?:which|who|whose|where|when|what)\b", "", question[: match.start()], flags=re.I
    )
    if CLAUSE_BOUNDARY.search(before) or _OWNER_BEFORE.search(before):
        return None
    return match


def _has_unanchored_pronoun(question: str) -> re.Match[str] | None:
    """A their/them/they with no plural noun before it in the same question (which
    would be its antecedent, as in "companies and their owners")."""
    for match in _PRONOUN.finditer(question):
        before = question[: match.start()]
        if match.group("p").lower() != "their" and _AUXILIARY_BEFORE.search(before):
            # "what categories are they in?", "how many cars did they buy?": the subject
            # of an inverted question, not the noun asked about.
            return match
        if match.group("p").lower() == "them":
            # An object pronoun never means a noun of its own clause ("flights" in "how
            # many flights went to them?": that would be "themselves"); only a noun of an
            # earlier clause can be its antecedent ("list the products and who bought them").
            starts = [b.start() for b in CLAUSE_BOUNDARY.finditer(before)]
            before = before[: starts[-1]] if starts else ""
        nouns = [
            m.group(0)
            for m in PLURAL_BEFORE.finditer(before)
            if m.group(0).lower() not in NOT_PLURAL
            # "who makes them": the word after a subject "who" is its verb, no noun
            and not re.search(r"\bwho\s+$", before[: m.start()], re.I)
        ]
        if not nouns:
            return match
    return None


# "how many countries per continent": the counted noun and the grouping's noun
_COUNT_PER = re.compile(
    r"^how many (?P<noun>[a-z][\w-]*(?: [a-z][\w-]*)?)(?: are there)?"
    r" (?:per|for each|in each|by) (?P<dim>[a-z][\w-]*(?: [a-z][\w-]*)?)$",
    re.IGNORECASE,
)
# "list the europe ones": a group's value said as the kind of the rows listed
_GROUP_ONES = re.compile(
    r"^(?:(?:and|now)\s+)?(?:list|show(?:\s+me)?|which are|what are)\s+(?:the|those)\s+"
    r"(?P<v>[\w'-]+(?:\s[\w'-]+)?)\s+ones\s*[?.!]*$",
    re.IGNORECASE,
)


def one_group(asked: str, prior: PriorTurn) -> str | None:
    """ "list the europe ones" after "how many countries per continent": "ones" stands for
    the counted rows, and the value before it names one group, so the question lists the
    counted noun's rows of that group ("list the countries whose continent is europe?"),
    asked anew. It was read alone, where "ones" names nothing, and refused. None unless
    the previous statement counts per group and its question says "how many X per Y"."""
    said = _GROUP_ONES.match(asked.strip())
    counted = _COUNT_PER.match(question_body(prior.resolved_question))
    if said is None or counted is None or not prior.sql:
        return None
    if not re.search(r"\bCOUNT\(", prior.sql, re.I) or not re.search(
        r"\bGROUP BY\b", prior.sql, re.I
    ):
        return None
    return f"list the {counted.group('noun')} whose {counted.group('dim')} is {said.group('v')}?"


# The person or thing a personal pronoun or a demonstrative with its noun points at
# ("he", "him", "his", "that teacher"); a bare "that"/"this"/"it" can point at an event
# or an amount as well ("at which museums was that?"), so it is left out.
_PERSONAL = frozenset({"he", "she", "him", "his"})
_PLURAL_VERB = {"is": "are", "was": "were", "does": "do", "has": "have"}


def _pointed_at_described(asked: str, one: re.Match[str], prior: PriorTurn) -> str | None:
    """ "where is he from?" after "Which teachers teach grade 5?" was refused: the
    pointer names the one row the earlier question asked for, which is the set that
    question described ("Where are the teachers that teach grade 5 from?"), so it is
    asked about that set rather than refused. Only a personal pronoun or "that/this
    <noun>" after a verb or preposition, and only when the earlier question named a
    plural set it listed ("Which customer joined first?" names no set, "the customer
    joined first" reads as nothing; a count lists no row), so a question read alone
    never drops the reference. The verb the pointer was the subject of takes the
    plural ("is he" → "are the …")."""
    if one.re is not _ONE_REFERENCE:
        return None
    word = one.group("p")
    if word.lower() not in _PERSONAL and not re.match(r"^(?:that|this)\s", word, re.I):
        return None
    if re.match(r"^how (?:many|much)\b", question_body(prior.resolved_question), re.I):
        return None  # a count showed one number, no row for "he" to be
    described = described_set(prior.resolved_question)
    if described is None:
        return None
    found, rest = described
    head = found.split()[-1]
    if head.lower() in NOT_PLURAL or not PLURAL_WORD.fullmatch(head):
        return None
    target = clean(f"the {found} {rest}")
    before, after = asked[: one.start("p")], asked[one.end("p") :]
    if word.lower() == "his":
        owned = _POSSESSED.match(after)
        if owned is None:
            return None
        return f"{before}the {owned.group(1)} of {target}{after[owned.end() :]}"
    verb = re.search(r"\b(\w+)\s+$", before)
    if verb is not None and (plural := _PLURAL_VERB.get(verb.group(1).lower())) is not None:
        before = f"{before[: verb.start(1)]}{plural}{before[verb.end(1) :]}"
    return f"{before}{target}{after}"


def _refer(asked: str, target: str, prior: PriorTurn) -> str:
    """``asked`` with its reference to the previous result set spelled out."""
    named = bool(prior.members)
    text = asked
    which = re.search(r"\b(which|how many|any) of them\b", text, re.I)
    if which:
        condition = re.sub(r"^\s*(?:are|were|is|have|had)\b\s*", "", text[which.end() :])
        if not named and condition.strip(" ?"):
            # "how many of them are in healthcare?" after a count: the count, narrowed.
            return f"{question_body(prior.resolved_question)} {condition.strip(' ?')}?"
        return text[: which.start()] + f"{which.group(1)} of {target}" + text[which.end() :]
    demonstrative = _DEMONSTRATIVE.search(text) or _COLLECTIVE.search(text)
    if demonstrative:
        return text[: demonstrative.start()] + target + text[demonstrative.end() :]
    pronoun = _has_unanchored_pronoun(text)
    if pronoun is None and (one := _one_row_pointer(text)) is not None:
        said = f"{target}'s" if one.group("p").lower() in ("his", "her") else target
        if one.re is _CONTRACTED_POINTER:
            # "that user's email" → "the email of <the rows>"
            after = text[one.end("p") + 2 :]
            if owned := _POSSESSED.match(after):
                said = f"the {owned.group(1)} of {target}"
                return text[: one.start("p")] + said + after[owned.end() :]
            return text[: one.start("p")] + f"{target}'s" + after
        return text[: one.start("p")] + said + text[one.end("p") :]
    if pronoun is None and (single := _SINGULAR.search(text)) is not None:
        said = f"{target}'s" if single.group("p").lower() == "its" else target
        return text[: single.start()] + said + text[single.end() :]
    if pronoun is None:
        place = _PLACE.search(text)
        assert place is not None
        # "spend there" → "spend at the museums …"; "from there" → "from the museums …"
        at = "" if re.search(r"\b(?:at|in|from|to|near|into|inside)\s*$", text[: place.start()],
                             re.I) else "at "  # fmt: skip
        return text[: place.start()] + at + target + text[place.end() :]
    word = pronoun.group("p").lower()
    after = text[pronoun.end() :]
    if word == "their":
        # "their call notes say about pricing" → "the call notes of A and B say …": the
        # possessed noun phrase runs to the next verb-ish word.
        noun = _POSSESSED.match(after)
        if noun:
            return (
                text[: pronoun.start()] + f"the {noun.group(1)} of {target}"
                + after[noun.end() :]
            )  # fmt: skip
        return text[: pronoun.start()] + f"{target}'s" + after
    return text[: pronoun.start()] + target + after


# What "their" or "that user's" owns: a noun phrase that runs to the next verb-ish word.
_POSSESSED = re.compile(
    r"^\s+((?:[\w-]+\s){0,2}?[\w-]+?)(?=\s+(?:say|said|mention|talk|show|have|has|are|is"
    r"|were|contain)\b|\s*\?|$)"
)


def referred(asked: str, prior: PriorTurn, history: Sequence[PriorTurn]) -> Resolution | None:
    """The question with its reference to the earlier rows resolved ("which of those
    drugs …", "their call notes …", "what year is it from?" after one row); refused where the
    reference has nothing to point at or says a count the answer does not have; None when
    the request refers to no earlier row. A demonstrative's noun may name an earlier
    answer's rows than the latest's ("those products" after their suppliers): that answer
    is the one referred to (``named_turn``)."""
    demonstrative = _DEMONSTRATIVE.search(asked) or _COLLECTIVE.search(asked)
    if demonstrative is not None and demonstrative.group("noun"):
        prior = named_turn(demonstrative.group("noun"), prior, history)
    said_count = demonstrative.group("count") if demonstrative else None
    if said_count and prior.row_count:
        meant = NUMBER_WORDS.get(said_count.lower()) or int(said_count)
        if meant != prior.row_count:
            # "those three" after five rows: which three is not said
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous answer has {prior.row_count} rows, not {meant}",
            )
    pronoun = _has_unanchored_pronoun(asked) or _PLACE.search(asked)
    if (
        not (demonstrative or pronoun)
        and not (prior.sql or prior.members or prior.row_count or prior.cited)
        and (owner := _unowned_singular(asked)) is not None
    ):
        # "which destinations did its flights fly to?" after an answer that showed and
        # cited nothing (a refusal): no earlier row or passage is there to own "its", and
        # read as a question of its own it would ask about every flight.
        return Resolution(
            FollowUpKind.UNRESOLVED,
            asked,
            f"the previous answer showed nothing for '{owner.group('p')}' to refer to",
        )
    one = _one_row_pointer(asked) or _unowned_last_it(asked)
    if one is not None and not (demonstrative or pronoun):
        word = one.group("p")
        if not (prior.sql or prior.members or prior.row_count or prior.cited):
            if (named := _pointed_at_described(asked, one, prior)) is not None:
                return Resolution(FollowUpKind.RESULT_REFERENCE, finish(named))
            # "which museums did he visit?" after a refusal: read alone it would ask
            # about every visitor's museums.
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous answer showed nothing for '{word}' to refer to",
            )
        if prior.sql and prior.row_count > 1:
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous answer has {prior.row_count} rows, so '{word}' points at no "
                "one of them",
            )
    # "what year is it from?" after an answer of one row: "it" is that row; so is "he",
    # "that teacher".
    single = (_SINGULAR.search(asked) or one) if prior.sql and prior.row_count == 1 else None
    if (
        demonstrative
        or pronoun
        or single
        or re.search(r"\b(?:which|how many|any) of them\b", asked, re.I)
    ):
        narrows_count = (
            not prior.members
            and _PART_OF.search(asked) is not None
            and re.match(r"^how many\b", question_body(prior.resolved_question), re.I) is not None
        )
        if prior.sql and not document_question(asked) and not narrows_count:
            # The rows of the earlier statement, as a sub-query in the SQL service: never
            # a pasted list of the names it returned.
            noun = demonstrative.group("noun") if demonstrative else None
            rows = f"the previous answer's {noun or 'rows'}"
            part = _PART_OF.search(asked)
            if (
                part is not None
                and demonstrative is not None
                and noun is not None
                and (part.start() <= demonstrative.start() < part.end())
            ):
                # "which of those drugs": the demonstrative's noun is the rows' noun, said
                # once ("the previous answer's drugs", never "… drugs drugs", which the
                # linker reads as a second noun and shows the key beside the name)
                said = f"{part.group(1)} of {rows}"
                text = asked[: part.start()] + said + asked[demonstrative.end() :]
            else:
                text = _PART_OF.sub(lambda m: f"{m.group(1)} of {rows}", asked, count=1)
            if text == asked:
                text = _refer(asked, rows, replace(prior, members=()))
            return Resolution(
                FollowUpKind.RESULT_REFERENCE,
                finish(text),
                builds_on=BuildsOn(prior.sql, Relation.RESULT_SET, question=asked),
            )
        target = _reference_target(prior)
        if target is None:
            reference = demonstrative or pronoun
            word = reference.group(0) if reference else "them"
            return Resolution(
                FollowUpKind.UNRESOLVED,
                asked,
                f"the previous answer named no result set for '{word}' to refer to",
            )
        return Resolution(FollowUpKind.RESULT_REFERENCE, finish(_refer(asked, target, prior)))
    return None
