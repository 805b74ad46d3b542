"""Requests to change data, told apart from questions about changes.

Tandem only reads: the SQL service runs one gated SELECT in a read-only transaction as a
role that can only select. So "Delete all cancelled orders" has one right answer on every
path (the SQL service's AskQuestion, the router's Ask and StreamAsk): that Tandem never
changes data, with what it can do instead. Without this the linker refused it for a word
it "could not place" ("Delete") and the router answered from a document passage.

A request is one of:

- an imperative at the head of a sentence (after lead-ins such as "please", "can you",
  "I want to"): a verb of :data:`_VERBS` in its base form, used as a verb, i.e. not
  followed by a word that makes it a noun ("change in revenue", "update frequency",
  "drop rate", "set of customers", "create date") nor, for a verb that is also a first
  name, by another capitalised word ("Mark Lee's orders", "Grant Thornton deals");
- SQL that changes data or the schema (DELETE, UPDATE … SET, INSERT, DROP, TRUNCATE,
  ALTER, CREATE TABLE …, GRANT, REVOKE, MERGE, COPY, SELECT … INTO), anywhere a
  statement starts.

A question about changes is none of these: "How many orders were deleted?", "Which
products were updated last week?", "Deleted accounts by month", "How do I delete an
order?" (a how-to, for the documents). Measured on every development question (defog,
Spider, QA: 981) — none is taken for a request — and on the positives and negatives of
``tests/unit/common/test_writes.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

READ_ONLY_REASON = "SQL_READ_ONLY"

# The kinds of change, by what Tandem can offer instead.
_REMOVE = "remove"  # count or list what would go
_CHANGE = "change"  # show the values as they are
_CREATE = "create"  # answer about what is there

_VERBS: dict[str, str] = {
    **dict.fromkeys(
        """
    delete remove drop erase purge wipe truncate clear cancel archive deactivate
    disable discard destroy void expunge unsubscribe
    """.split(),
        _REMOVE,
    ),
    **dict.fromkeys(
        """
    update change modify edit set rename replace overwrite mark move assign reassign
    increase decrease raise lower reduce reset restore fix adjust activate enable
    approve reject close reopen transfer refund merge lock unlock
    """.split(),
        _CHANGE,
    ),
    **dict.fromkeys(
        """
    insert add create alter grant revoke upsert append import
    """.split(),
        _CREATE,
    ),
}
# A word after the verb that makes it a noun or an adjective ("change in revenue", "drop
# rate", "create date", "lower bound"), or a reading ("add up", "set of").
_NOUN_AFTER = frozenset(
    """
    of in on up for over per vs versus rate rates ratio ratios count counts date dates
    time times timestamp history log logs frequency status statistics stats volume
    trend trends amount amounts percentage percent reason reasons type types bound
    bounds limit limits half quartile tier case cases size sizes together
    """.split()
)
# What a "create"/"add"/"replace" may ask for that changes no data: a presentation.
_PRESENTATION = frozenset(
    """
    list chart graph plot report summary breakdown overview column columns field fields
    filter filters percentage percentages total totals ranking pivot visualization
    visualisation histogram table-of null nulls blank blanks duplicate duplicates
    """.split()
)
# Verbs that are also first names: "Mark Lee's orders" is about Mark.
_NAMES = frozenset({"mark", "grant", "bill", "rob", "pat", "drew", "lance", "sue", "will"})
_DETERMINERS = frozenset(
    """
    all of the every each any my our your these those this that a an some new
    """.split()
)

_LEAD_IN = re.compile(
    r"^(?:(?:hey|hi|hello|ok|okay|so|now|then|also|and|just|quickly|please|kindly|"
    r"go ahead and|tandem)[,!:]?\s+"
    r"|(?:can|could|would|will|shall)\s+(?:you|we|i|tandem)\s+"
    r"|i(?:\s+(?:want|need|wish|would\s+like|would\s+love)|'d\s+(?:like|love))\s+"
    r"(?:you\s+|tandem\s+)?to\s+"
    r"|i\s+want\s+you\s+to\s+|let'?s\s+|let\s+us\s+|is\s+it\s+possible\s+to\s+"
    r"|(?:try|help\s+me)\s+(?:to\s+)?|you\s+(?:should|must|need\s+to|have\s+to)\s+)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*")
_NAME = r'[\w."`\[\]]+'
# Statements that change data or the schema, where a statement (or a statement inside
# one: a CTE, a function body, PREPARE … AS, EXPLAIN ANALYZE) starts.
_STATEMENT = re.compile(
    r"(?:^|[(;]|\$\w*\$|\bas\b|\banalyze\b|\bbegin\b|\bexecute\s+')\s*(?:with\b.*?\)\s*)?(?P<verb>"
    rf"delete\s+from\s+{_NAME}"
    rf"|update\s+{_NAME}\s+set\s"
    r"|insert\s+(?:into|overwrite)\s"
    r"|upsert\s+into\s|replace\s+into\s|merge\s+into\s"
    r"|drop\s+(?:table|view|schema|database|index|column|role|user|function|trigger|sequence|"
    r"materialized\s+view|extension|policy|type|procedure)\b"
    rf"|truncate\s+(?:table\s+)?{_NAME}"
    r"|alter\s+(?:table|view|schema|database|index|role|user|system|sequence|function|"
    r"materialized\s+view|default\s+privileges|policy|type)\b"
    r"|create\s+(?:or\s+replace\s+)?(?:(?:temp|temporary|unlogged|unique|global|local)\s+)*"
    r"(?:table|view|schema|database|index|role|user|function|trigger|sequence|extension|"
    r"materialized\s+view|policy|procedure|type|rule)\s+(?:if\s+not\s+exists\s+)?"
    rf"{_NAME}\s*(?:\(|as\b|on\b|;|$)"
    r"|grant\s+[\w\s,]+?\s+(?:on|to)\s|revoke\s+[\w\s,]+?\s+(?:on|from)\s"
    rf"|copy\s+{_NAME}\s+(?:from|to)\s"
    r"|comment\s+on\s|refresh\s+materialized\s+view\s|reindex\s|vacuum\b"
    r"|set\s+(?:session\s+)?(?:role|authorization)\s|reset\s+role\b"
    rf"|lock\s+(?:table\s+)?{_NAME}|call\s+{_NAME}\s*\("
    r"|select\b[^;]*?\binto\s+(?:(?:temp|temporary|unlogged)\s+)?(?:table\s+)?"
    rf"{_NAME}\s+from\b"
    r")",
    re.IGNORECASE | re.DOTALL,
)
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_OBJECT_KINDS = frozenset(
    """
    TABLE VIEW SCHEMA DATABASE INDEX COLUMN ROLE USER FUNCTION TRIGGER SEQUENCE
    EXTENSION POLICY TYPE PROCEDURE MATERIALIZED SYSTEM RULE
    """.split()
)
# Where another sentence (and so another imperative) may start.
_SENTENCES = re.compile(r"(?<=[.?!;])\s+|,?\s+(?:and\s+)?then\s+", re.IGNORECASE)


@dataclass(frozen=True)
class WriteRequest:
    """A request to change data: the words that ask for it ("delete", "DROP TABLE"), its
    kind, and what it would change as the question says it ("all cancelled orders";
    empty for SQL or a bare verb)."""

    verb: str
    kind: str
    target: str = ""

    @property
    def statement(self) -> bool:
        """Whether it was written as SQL."""
        return self.kind == "sql"


def write_request(question: str) -> WriteRequest | None:
    """The request to change data ``question`` makes, or None for a question."""
    text = question.strip()
    found = _STATEMENT.search(_COMMENTS.sub(" ", text))
    if found is not None:
        return WriteRequest(_keyword(found.group("verb")), "sql")
    for sentence in _SENTENCES.split(text):
        found_request = _imperative(sentence)
        if found_request is not None:
            return found_request
    return None


def read_only_message(request: WriteRequest) -> str:
    """The answer to a request to change data: that Tandem never does, and what it can
    do instead (the target is the caller's own words, returned to the caller only)."""
    head = "Tandem never changes your data: it only reads it"
    if request.statement:
        return (
            f"{head}, and runs nothing but read-only SELECT statements, so it will not run "
            f"{request.verb}. Ask a question about the data instead, e.g. how many rows "
            "such a statement would touch."
        )
    if not request.target:
        return f"{head}, so it will not {request.verb} anything. Ask a question about the data."
    said = f"{head}, so it will not {request.verb} {request.target}."
    words = request.target.split()
    while words and words[0].lower() in _DETERMINERS:
        words = words[1:]
    things = " ".join(words) or request.target
    shown = re.sub(r"^all\s+(?:of\s+)?", "", request.target, flags=re.IGNORECASE)
    if request.kind == _REMOVE and _plural(things):
        return f'{said} It can count or list them instead: "How many {things} are there?"'
    if request.kind in (_REMOVE, _CHANGE):
        return f'{said} It can show what is there instead: "Show {shown}".'
    return f"{said} It answers questions about the data that is there."


def _plural(phrase: str) -> bool:
    """Whether the phrase's head noun (its last word before a qualifier) is plural."""
    head = re.split(
        r"\s+(?:from|with|without|in|of|on|at|for|that|which|who|where|older|"
        r"newer|before|after|since|created|placed|made)\b",
        phrase,
        maxsplit=1,
    )[0]
    last = head.split()[-1].lower() if head.split() else ""
    return last.endswith("s") and not last.endswith("ss")


def _keyword(statement: str) -> str:
    """The statement's kind as SQL says it: DELETE, DROP TABLE, SELECT … INTO."""
    words = statement.upper().split()
    if words[0] == "SELECT":
        return "SELECT … INTO"
    if len(words) > 1 and words[1] in _OBJECT_KINDS:
        return f"{words[0]} {words[1]}"
    return words[0]


def _imperative(sentence: str) -> WriteRequest | None:
    rest = sentence.strip()
    while True:
        lead = _LEAD_IN.match(rest)
        if lead is None or not lead.group():
            break
        rest = rest[lead.end() :]
    words = _WORD.findall(rest)
    if not words or not rest[:1].isalpha():
        return None
    verb = words[0].lower()
    kind = _VERBS.get(verb)
    if kind is None:  # "drop-off", "set-up" are words of their own
        return None
    after = words[1] if len(words) > 1 else ""
    if after.lower() in _NOUN_AFTER or after.lower().endswith(("'s", "\u2019s")):
        return None
    if verb in _NAMES and after[:1].isupper():
        return None
    objects = [w.lower() for w in words[1:]]
    while objects and objects[0] in _DETERMINERS:
        objects = objects[1:]
    first_object = objects[0] if objects else ""
    if verb in {"create", "add", "replace"} and (
        first_object in _PRESENTATION
        or (first_object == "table" and objects[1:2] in (["of"], ["showing"], ["by"]))
    ):
        return None
    if verb in {"remove", "drop"} and first_object in {"duplicate", "duplicates"}:
        return None  # "remove duplicates": a distinct listing
    target = rest[len(words[0]) :].strip()
    if kind == _CHANGE:
        target = re.split(r"\s+(?:to|as|with|into|by|=)\s+", target, maxsplit=1)[0]
    target = re.sub(r"\s*(?:please|now|for me|right now|immediately)?\s*[.!?]*\s*$", "", target)
    return WriteRequest(verb, kind, target.strip())
