"""Lexical rules for routing: question class and decomposition of compound questions.

Cues are weighed, not matched first-wins: "summarize the notes for the top deal" has a
ranking word but is a reading question, so semantic cues must be able to outweigh it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.common.llm import QuestionClass

_NUM = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|fifty)"

# (pattern, weight); weight 2 marks cues that alone make a question countable.
_AGGREGATION_CUES: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(p), w)
    for p, w in (
        (r"\bhow many\b", 2),
        (r"\bnumber of\b", 2),
        (r"\bcount(s|ed)?\b", 2),
        (r"\b(average|avg|mean|median)\b", 2),
        (r"\b(sum|total)\b", 2),
        (rf"\btop\s+{_NUM}\b", 2),
        (rf"\b{_NUM}\s+(largest|biggest|highest|lowest|smallest|best|worst|latest|newest)\b", 2),
        (r"\btop\b", 1),
        (r"\b(highest|lowest|largest|biggest|smallest|fewest|cheapest|priciest)\b", 1),
        (r"\b(most|least)\s+(?!important|common|relevant|likely|interesting|significant)", 1),
        (r"\bmost expensive\b", 1),
        (r"\b(max|maximum|min|minimum)\b", 2),
        (r"\bper\b", 1),
        (r"\bfor each\b", 1),
        (r"\bbreak ?down\b|\bbroken down\b|\bgrouped by\b", 2),
        (r"\b(rank|ranked|ranking)\b", 1),
        (r"\b(percent|percentage|ratio|share of)\b", 1),
        (r"\b(more|less|greater|fewer) than\s+\$?\d", 2),
        (r"\b(over|above|under|below|exceeding|at least|at most)\s+\$?\d", 2),
        (r"\bbetween\s+\$?\d", 1),
        (r"\b(sorted|ordered|order) by\b", 1),
        (r"\blist (all|every)\b", 1),
        (r"\bhow much\b", 1),
        # "deals by stage", "revenue per region,": a grouping word ending its clause; not
        # the agent of a participle ("notes written by Alice", "deals closed by reps")
        (r"(?<!ed )(?<!en )\b(by|per)\s+[a-z]+(?=\s*(?:[,;?.!]|$|\band\b))", 1),
    )
)

_SEMANTIC_CUES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"\bwhy\b",
        r"\bhow (do|does|did|can|should|could|would|is|are|to)\b",
        r"\bexplain\w*\b",
        r"\bdescrib\w*\b",
        r"\bsummar\w*\b",
        r"\btell me about\b",
        r"\bwhat (did|does|do)\b.*\b(say|said|think|mention|want|need)\b",
        r"\b(said|says|mention\w*|discuss\w*)\b",
        r"\bnotes?\b",
        r"\b(feedback|concerns?|objections?|complaints?|pain points?|challenges?)\b",
        r"\blooks? like\b",
        r"\bsimilar\b",
        r"\b(good |best |strong )?fit\b",
        r"\brecommend\w*\b",
        r"\b(polic(y|ies)|guidelines?|procedures?|process|playbook)\b",
        r"\b(strategy|approach|sentiment|risks?|competitors?|overview|brief|briefs)\b",
        r"\b(sheet|document\w*|wiki|article)\b",
        r"\b(features?|benefits?|capabilit\w+|use cases?)\b",
    )
)

_CONVERSATIONAL = re.compile(
    r"^\s*(hi|hello|hey|yo|thanks|thank you|thx|good (morning|afternoon|evening)|"
    r"what can you do|who are you|what are you|help|how do you work|how does this work)"
    r"(\s+(there|again|so much|a lot))?\s*[!.?]*\s*$",
    re.IGNORECASE,
)

_ACTION_START = (
    r"(?:describe|explain|summari[sz]e|list|show|count|tell|give|what|which|how|who|why|"
    r"find|compare|provide|outline|identify|name|include|rank)"
)

_DEPENDENT = re.compile(
    r"^(?P<first>.+?)[,;]?\s+(?:and\s+)?(?:then\s+)?for\s+the\s+(?:one|company|account|"
    r"customer|deal|opportunity|product|contact|\w+)\s+with\s+the\s+"
    r"(?P<dir>most|highest|largest|biggest|fewest|lowest|least|smallest)\s+"
    r"(?P<z>[^,]+?)\s*,\s*(?P<rest>.+)$",
    re.IGNORECASE,
)
_DEPENDENT_TOP = re.compile(
    r"^(?P<first>.+?)[,;]?\s+(?:and\s+)?(?:then\s+)?for\s+the\s+(?:top|first|best|largest|"
    r"biggest)\s+(?:one|result|company|account|deal|opportunity|\w+)\s*,\s*(?P<rest>.+)$",
    re.IGNORECASE,
)
_COMPARE_PREP = re.compile(
    r"^\s*(?:please\s+)?(?:compare|contrast)\s+(?P<z>.+)\s+(?:for|at|between|across)\s+"
    r"(?P<a>[^,]+?)\s+(?:and|with|vs\.?|versus|to)\s+(?P<b>.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_COMPARE = re.compile(
    r"^\s*(?:please\s+)?(?:compare|contrast)\s+(?P<a>.+?)\s+(?:and|with|vs\.?|versus|to)\s+"
    r"(?P<b>.+?)(?:\s+(?:on|by|in terms of|regarding|across)\s+(?P<z>.+?))?\s*[?.!]*$",
    re.IGNORECASE,
)
_VERSUS = re.compile(
    r"^\s*(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)(?:\s+(?:on|by|in terms of|for)\s+"
    r"(?P<z>.+?))?\s*[?.!]*$",
    re.IGNORECASE,
)
_DIFFERENCE = re.compile(
    r"^\s*(?:what(?:'s| is| are)?\s+)?(?:the\s+)?differences?\s+between\s+(?P<a>.+?)\s+and\s+"
    r"(?P<b>.+?)(?:\s+(?:on|in|in terms of|regarding)\s+(?P<z>.+?))?\s*[?.!]*$",
    re.IGNORECASE,
)
_SPLIT_ACTION = re.compile(
    rf"\s*(?:,\s*and\s+(?:also\s+)?|\s+and\s+(?:also\s+)?(?:then\s+)?|,\s*then\s+|;\s*|,\s*also\s+)"
    rf"(?={_ACTION_START}\b)",
    re.IGNORECASE,
)


_BACK_REFERENCE = re.compile(r"\b(their|them|those|these|they|its|it|that one)\b", re.I)


@dataclass(frozen=True)
class SubQuestion:
    """One part of a decomposed question; ``after_previous`` binds the prior part's result."""

    text: str
    after_previous: bool = False


def is_conversational(question: str) -> bool:
    """Greetings, thanks and "what can you do": nothing to look up."""
    return bool(_CONVERSATIONAL.match(question))


def aggregation_score(question: str) -> tuple[int, bool]:
    """Weighted count of countable cues, and whether a strong one is present."""
    low = question.lower()
    total = 0
    strong = False
    for pattern, weight in _AGGREGATION_CUES:
        if pattern.search(low):
            total += weight
            strong = strong or weight >= 2
    return total, strong


def semantic_score(question: str) -> int:
    """Count of reading / meaning cues (why, describe, notes, similar, fit, …)."""
    low = question.lower()
    return sum(1 for pattern in _SEMANTIC_CUES if pattern.search(low))


def classify_simple(question: str) -> QuestionClass:
    """Aggregation vs semantic for one (already decomposed) question."""
    if is_conversational(question):
        return QuestionClass.CONVERSATIONAL
    agg, strong = aggregation_score(question)
    sem = semantic_score(question)
    if agg > sem or (agg == sem and agg > 0 and strong):
        return QuestionClass.AGGREGATION
    return QuestionClass.SEMANTIC


def classify(question: str) -> QuestionClass:
    """Conversational, compound (two or more parts), aggregation or semantic."""
    if is_conversational(question):
        return QuestionClass.CONVERSATIONAL
    if scoped_question(question) is not None or len(decompose(question)) > 1:
        return QuestionClass.COMPOUND
    return classify_simple(question)


def decompose(question: str, max_parts: int = 6) -> list[SubQuestion]:
    """Split compound and comparative questions into sub-questions, in run order."""
    text = re.sub(r"\s+", " ", question).strip()
    parts: list[SubQuestion] = []
    for index, sentence in enumerate(_joined_listings(_sentences(text))):
        pieces = _decompose_one(sentence)
        if index > 0 and len(pieces) == 1 and not pieces[0].after_previous:
            pieces = [_follow_up(pieces[0].text)]
        parts.extend(pieces)
    return parts[:max_parts] if parts else [SubQuestion(text)]


def _sentences(text: str) -> list[str]:
    pieces = re.split(r"(?<=\?)\s+|(?<=[.!])\s+(?=[A-Z])", text)
    return [p.strip() for p in pieces if len(p.strip()) > 2]


# "Give their first names, last names and insurance type.": a sentence that only says
# which columns of the rows just asked for to show (a listing verb, then theirs), no
# documents among them
_LISTING_THEIRS = re.compile(
    r"^(?:please\s+)?(?:give|list|show|return|display|include)\s+(?:me\s+)?(?:their|its)\s+",
    re.IGNORECASE,
)
# "…, and how many?": a count with no noun of its own
_ELLIPTIC_COUNT = re.compile(r"^(?:and\s+)?how (?:many|much)\s*[?.!]*$", re.IGNORECASE)
# "How many sales and how much revenue did each salesperson make in 2023?": a measure
# with no verb of its own ("how many sales") shares the verb, the grouping and the period
# of the measure after it (coordination ellipsis). A verb is told by the auxiliaries and
# copulas an English wh-question inverts or leans on, a closed class of the grammar.
_BARE_MEASURE = re.compile(r"^how (?:many|much)(?:\s+[\w'-]+){1,4}$", re.IGNORECASE)
_AUXILIARY = re.compile(
    r"\b(?:is|are|was|were|be|been|do|does|did|has|have|had|will|would|can|could|shall|"
    r"should|may|might|must|there)\b",
    re.IGNORECASE,
)


def _joined_listings(sentences: list[str]) -> list[str]:
    """Sentences with a listing one ("Which female patients have private insurance?
    Give their first names, last names and insurance type.") kept with the one before
    it: it says what to show of those rows, all of them, and the records service reads
    the two as one question. Split, the second was asked of the first row's label alone
    and the rows came without the columns asked for."""
    joined: list[str] = []
    for sentence in sentences:
        if (
            joined
            and _LISTING_THEIRS.match(sentence)
            and not _POSSESSIVE_DOCS.search(sentence)
            and semantic_score(sentence) == 0
        ):
            joined[-1] = f"{joined[-1]} {sentence}"
        else:
            joined.append(sentence)
    return joined


def _decompose_one(text: str) -> list[SubQuestion]:
    match = _DEPENDENT.match(text)
    if match:
        first = _trim(match.group("first"))
        z = _trim(match.group("z"))
        head = SubQuestion(f"{first} with the {match.group('dir').lower()} {z}")
        return [head, SubQuestion(f"{_trim(match.group('rest'))} for {{{{s}}}}", True)]
    match = _DEPENDENT_TOP.match(text)
    if match:
        first = _trim(match.group("first"))
        return [
            SubQuestion(first),
            SubQuestion(f"{_trim(match.group('rest'))} for {{{{s}}}}", True),
        ]
    for pattern in (_COMPARE_PREP, _DIFFERENCE, _COMPARE, _VERSUS):
        match = pattern.match(text)
        if match:
            a, b = _trim(match.group("a")), _trim(match.group("b"))
            z = _trim(match.group("z") or "")
            if z:
                return [SubQuestion(f"{z} for {a}"), SubQuestion(f"{z} for {b}")]
            return [SubQuestion(f"Tell me about {a}"), SubQuestion(f"Tell me about {b}")]
    pieces = [p for p in _SPLIT_ACTION.split(text) if p and p.strip()]
    if len(pieces) > 1 and _ELLIPTIC_COUNT.match(pieces[-1].strip()):
        # "Which customers have made more than 3 transactions, and how many?": the count
        # has no noun but the one before it, one question (not a bare "how many?")
        pieces = [*pieces[:-2], text[text.find(pieces[-2]) :]] if len(pieces) > 2 else [text]
    if len(pieces) > 1 and _is_bare_measure(pieces[0]):
        # Split, the first part was asked as a whole count of its rows, with the
        # grouping and the period the sentence says after it dropped: a confident
        # wrong answer beside a refusal. One question, it is answered whole or refused
        # naming what is left over.
        return [SubQuestion(_trim(text))]
    if len(pieces) > 1:
        return [SubQuestion(_trim(pieces[0])), *(_follow_up(p) for p in pieces[1:])]
    return [SubQuestion(_trim(text))]


def _is_bare_measure(piece: str) -> bool:
    """ "how many sales": a measure whose verb lies in the part after it."""
    trimmed = _trim(piece).rstrip("?.!")
    return bool(_BARE_MEASURE.match(trimmed)) and not _AUXILIARY.search(trimmed)


def _follow_up(text: str) -> SubQuestion:
    """A later part that points back ("their notes") needs the earlier part's result."""
    trimmed = _trim(text)
    if _BACK_REFERENCE.search(trimmed):
        return SubQuestion(f"{trimmed.rstrip('?.!')} for {{{{s}}}}", True)
    return SubQuestion(trimmed)


def _trim(text: str) -> str:
    return text.strip().strip(",;:").strip()


def search_query(question: str) -> str:
    """The question without conversational lead-ins, for hybrid search."""
    cleaned = re.sub(
        r"^\s*(?:(?:hey|hi|hello|ok|okay|so)[,!]?\s+)?(?:please\s+|kindly\s+)?"
        r"(?:(?:can|could|would|will) you\s+(?:please\s+)?)?"
        r"(?:(?:tell|show|give|find|get) (?:me|us)\s+|i (?:want|need|would like) to know\s+)?",
        "",
        question,
        flags=re.IGNORECASE,
    )
    cleaned = re.sub(r"\s+", " ", cleaned).strip()
    return cleaned or question.strip()


# --- "which of <a set from the warehouse> mention <topic> in <documents>" ---------------

_MENTION_VERB = (
    r"(?:mention(?:s|ed)?|discuss(?:es|ed)?|talk(?:s|ed)? about|br(?:ing|ings|ought) up|"
    r"rais(?:e|es|ed)|refer(?:s|red)? to|reference(?:s|d)?|cite(?:s|d)?)"
)
_IN_DOCUMENTS = r"(?:\s+(?:in|within|across|from)\s+(?:their|its|his|her|the)\s+(?P<kind>.+?))?"
_MENTION_FORMS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"^(?:which|what)\s+of\s+(?P<set>.+?)\s+(?:have|has)\s+(?P<kind>[\w\s-]+?)\s+"
        rf"(?:that|which)\s+{_MENTION_VERB}\s+(?P<topic>.+)$",
        rf"^(?:which|what|who)(?:\s+ones?)?\s+of\s+(?P<set>.+?)\s+(?:have\s+|has\s+)?"
        rf"{_MENTION_VERB}\s+(?P<topic>.+?){_IN_DOCUMENTS}$",
        rf"^(?:do|does|did)\s+any\s+of\s+(?P<set>.+?)\s+{_MENTION_VERB}\s+(?P<topic>.+?)"
        rf"{_IN_DOCUMENTS}$",
        rf"^(?:among|of)\s+(?P<set>.+?),\s*(?:which|what|who)(?:\s+ones?)?\s+"
        rf"(?:have\s+|has\s+)?{_MENTION_VERB}\s+(?P<topic>.+?){_IN_DOCUMENTS}$",
    )
)
# "For the company with the most open deals, summarise its last call notes."
_FOR_ENTITY = re.compile(
    r"^for\s+(?P<set>(?:the|our|each of (?:the|our))\s+.+?)\s*,\s*(?P<task>.+)$", re.IGNORECASE
)
_POSSESSIVE_DOCS = re.compile(
    r"\b(?:its|their|his|her)\s+(?:(?:last|latest|most recent|recent|newest|own)\s+)?"
    r"(?P<kind>(?:[a-z]+\s+){0,2}(?:notes|briefs?|emails?|tickets?|documents?|docs|"
    r"calls?|meetings?|reports?|sheets?|records?))\b",
    re.IGNORECASE,
)
# Entity nouns → the metadata key documents carry for that entity.
_ENTITIES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), e)
    for p, e in (
        (
            r"\b(?:accounts?|compan(?:y|ies)|customers?|clients?|organi[sz]ations?|"
            r"prospects?|vendors?)\b",
            "company",
        ),
        (r"\b(?:deals?|opportunit(?:y|ies))\b", "opportunity"),
        (r"\b(?:contacts?|people|persons?)\b", "contact"),
        (r"\b(?:reps?|owners?|salespeople|sales ?people|account executives?)\b", "owner"),
        (r"\bproducts?\b", "product"),
    )
)
_GENERIC_DOCUMENTS = frozenset(
    {"document", "documents", "doc", "docs", "file", "files", "record", "records", "text"}
)


@dataclass(frozen=True)
class ScopedQuestion:
    """A question over a set the warehouse lists and the documents of each member.

    ``set_question`` goes to SQL; ``search`` runs once per member, kept to that member's
    documents (metadata ``entity_id``, or ``entity`` by name) of ``categories``."""

    set_question: str
    search: str
    entity: str
    categories: tuple[str, ...]
    documents: str
    topic: str = ""  # set for "which … mention <topic>": report who does and who does not


def scoped_question(question: str) -> ScopedQuestion | None:
    """The set-then-documents reading of ``question``, or None when it is not one."""
    text = re.sub(r"\s+", " ", question).strip().rstrip("?.! ")
    for pattern in _MENTION_FORMS:
        match = pattern.match(text)
        if match is None:
            continue
        found = _set_and_entity(match.group("set"))
        if found is None:
            return None
        set_phrase, entity = found
        topic = _trim(match.group("topic"))
        kind = _trim(match.group("kind") or "")
        if not topic or "{{" in topic:
            return None
        return ScopedQuestion(
            set_question=_what(set_phrase),
            search=_topic_query(topic),
            entity=entity,
            categories=_categories(kind),
            documents=kind or "documents",
            topic=topic,
        )
    match = _FOR_ENTITY.match(text)
    if match is not None:
        found = _set_and_entity(match.group("set"))
        docs = _POSSESSIVE_DOCS.search(match.group("task"))
        if found is None or docs is None:
            return None
        set_phrase, entity = found
        set_phrase = re.sub(r"^each of\s+", "", set_phrase, flags=re.IGNORECASE)
        kind = docs.group("kind").lower()
        task = _trim(match.group("task"))
        # One entity: its name helps the search. Several: each search has its own filter,
        # and the first one's name would only mislead the others.
        question_text = _as_question(set_phrase)
        return ScopedQuestion(
            set_question=question_text,
            search=task if question_text.startswith("What are") else f"{task} for {{{{s}}}}",
            entity=entity,
            categories=_categories(kind),
            documents=kind,
        )
    return None


def _set_and_entity(phrase: str) -> tuple[str, str] | None:
    """The set phrase and its entity, when the warehouse can list it: it names an entity
    and carries a countable cue (a rank, a number, a comparison) and no reading cue."""
    phrase = _trim(phrase)
    phrase = re.sub(r"^(?:these|those)\s+", "the ", phrase, flags=re.IGNORECASE)
    entity = next((e for p, e in _ENTITIES if p.search(phrase)), None)
    if entity is None:
        return None
    agg, _strong = aggregation_score(phrase)
    if agg == 0 or semantic_score(phrase) > 0:
        return None
    return phrase, entity


def _as_question(set_phrase: str) -> str:
    """ "the company with the most open deals" → "Which company has the most open deals?" """
    match = re.match(
        r"^(?:the|our)\s+(?P<noun>\w+)\s+(?:with|that has|which has)\s+(?P<rest>.+)$",
        set_phrase,
        re.IGNORECASE,
    )
    if match is not None:
        return f"Which {match.group('noun')} has {match.group('rest')}?"
    return _what(set_phrase)


def _what(set_phrase: str) -> str:
    """ "What are <set>?", or "What is <set>?" when it names one entity."""
    nouns = [m.group().lower() for p, _ in _ENTITIES for m in p.finditer(set_phrase)]
    plural = any(n.endswith("s") or n == "people" for n in nouns)
    return f"What {'are' if plural or not nouns else 'is'} {set_phrase}?"


def _topic_query(topic: str) -> str:
    return re.sub(r"^(?:a|an|the|any)\s+", "", topic, flags=re.IGNORECASE).strip()


def _categories(kind: str) -> tuple[str, ...]:
    """Document kinds by the house convention (singular snake_case): "call notes" →
    call_note. Generic words ("documents", "files") name no kind."""
    words = re.findall(r"[a-z]+", kind.lower())
    if not words or all(w in _GENERIC_DOCUMENTS for w in words):
        return ()
    if words[-1] in _GENERIC_DOCUMENTS and len(words) > 1:
        words = words[:-1]
    last = words[-1]
    if last.endswith("ies") and len(last) > 4:
        last = last[:-3] + "y"
    elif last.endswith("s") and not last.endswith("ss"):
        last = last[:-1]
    return ("_".join([*words[:-1], last]),)
