"""Verbs whose column lives on the table that records their event.

"Who bought those cars?", "what did the cars sell for?", "how many purchases did the
customers make?": the verb, or the noun made from it, names no column of the rows asked
about. A sale is a row of its own, in a table named for the event (``sales``) that
references the cars and the customers alike; the name-reading readers find no "bought"
or "purchases" in the schema and refuse. English names an event by a noun made from its
verb (sell -> sale, book -> booking, visit -> visit, pay -> payment), some events have two
verbs, one per side (a purchase is a sale seen from the buyer), and the one who does each
side has nouns of its own (a buyer is a customer or a client, a seller a vendor or a
salesperson). :data:`EVENTS` is that small lexicon, English's and no schema's. Through it,
seven questions are said again in words the readers know, each only when the question as
asked is refused (``QuestionLinker.link``):

- "Who <verb> the <rows>?": the one table among the event table's parents that the
  verb's side names its doer by, "Which customers bought the cars?";
- "What did the <rows> <verb> for?" (a price: "sell for", "rent for"): the event table's
  one money column, "What were the sale price of the cars?";
- an event noun no table is named by ("purchases"), where another noun of the same event
  names one ("sales"): that noun; "make" or "have" with an event noun is a light verb
  ("make a purchase" is to purchase), said as "have";
- "How many <rows> were <verb> in <year>?" ("cars sold in 2023"): "How many <rows> had
  <event table> in <year>?", the rows counted through the one dated table that refers
  to them and records the verb's event (:func:`names_event_of`), the year its date;
  where that still reads a year of the rows, "How many distinct <reference> of <event
  table> in <year>?";
- "How many <rows> were <verb>?" ("cars from 2022 were sold"): "How many <rows> had
  <event table>?", the rows' own words ("from 2022") kept theirs;
- "<rows> <verb> per <X>" ("cars sold per make"): "<event table> per <X>", each event
  row counted once, grouped by the rows' column it reaches by its key;
- "<rows> who never <verb> a <object>" ("visitors who never visited a museum"): "<rows>
  with no <event table>", the event's table referring to both.

Each holds only where the event table references the rows' table (the event joins the
rows to their doer or price), and only when the statement read from the words said again
shows what the verb asked (the doer's rows, the money column: :meth:`Recorded.answered_by`);
otherwise the question is still refused, naming the verb.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from services.sql.catalog import TableInfo, is_number
from services.sql.linker._dates import DATE_NAME_WORDS, past_base, verb_names_part
from services.sql.linker._lookup import named_tables
from services.sql.linker._mentions import OPTIONAL_TABLE_PARTS
from services.sql.linker._plan import is_temporal
from services.sql.linker._vocabulary import Vocabulary
from services.sql.words import lemma, stem, tokenize


@dataclass(frozen=True)
class Event:
    """One kind of event: its verbs (each with the side whose doer is its subject), the
    nouns that name it, and the nouns for each side's doer."""

    verbs: dict[str, str]
    nouns: frozenset[str]
    doers: dict[str, frozenset[str]]


def _event(verbs: dict[str, str], nouns: str, doers: dict[str, str]) -> Event:
    return Event(
        verbs, frozenset(nouns.split()), {s: frozenset(d.split()) for s, d in doers.items()}
    )


# English's events whose record is commonly a table of its own. Nouns are singular stems.
EVENTS: tuple[Event, ...] = (
    _event(
        {"buy": "buyer", "purchase": "buyer", "sell": "seller"},
        "sale purchase",
        {
            "buyer": "buyer purchaser customer client shopper",
            "seller": "seller vendor salesperson salesman saleswoman merchant dealer",
        },
    ),
    _event({"order": "buyer"}, "order", {"buyer": "buyer customer client"}),
    _event(
        {"book": "guest", "reserve": "guest"},
        "booking reservation",
        {"guest": "guest customer client passenger traveler traveller"},
    ),
    _event({"visit": "visitor"}, "visit", {"visitor": "visitor guest patient customer"}),
    _event({"pay": "payer"}, "payment", {"payer": "payer customer client"}),
    _event(
        {"rent": "renter", "hire": "renter", "lease": "renter"},
        "rental lease hire",
        {"renter": "renter tenant lessee customer client"},
    ),
    _event({"ship": "shipper", "deliver": "shipper"}, "shipment delivery", {"shipper": "shipper"}),
    _event(
        {"enroll": "student", "enrol": "student"}, "enrollment enrolment", {"student": "student"}
    ),
    _event({"fly": "passenger"}, "flight", {"passenger": "passenger traveler traveller"}),
)

# Column words that say an amount of money: what an event "went for".
_MONEY = frozenset("price amount cost paid fee total value charge".split())


def _verb_base(word: str) -> str:
    """The verb's base form: irregular pasts read ("bought" -> buy), a regular past's
    ending dropped ("visited" -> visit, "booked" -> book), and its "e" given back where
    the lexicon knows the verb only with it ("purchased" -> purchase). Not
    ``_dates.past_base``, which reads past forms only (None for any other word: it is the
    past-form test too); this reads any form a verb is said in ("shipping" -> ship, "buy"),
    so "who buy …" and "shipping" name their event as "bought" and "shipped" do."""
    base = lemma(word.lower())
    if base.endswith("ed") and len(base) > 4:
        base = base[:-2]
        if not any(base in e.verbs for e in EVENTS) and any(base + "e" in e.verbs for e in EVENTS):
            base += "e"
    return base


def is_past(word: str) -> bool:
    """Whether ``word`` is a verb's past form: a regular one, or one English irregulars."""
    return past_base(word) is not None


def names_event_by_column(vocab: Vocabulary, word: str, table: TableInfo) -> bool:
    """Whether ``word``, a verb's past form, names a column of ``table`` that says when
    something happened — a date or timestamp, or a name holding a time word (``dep_time``,
    ``arr_time``, ``assess_dt``) — by one of the column's name parts (``verb_names_part``:
    "departed": dep, "arrived": arr, "treated": treatment_date). A table that keeps the
    time of the verb records its event, whatever the table is called (no ``departures``
    table: the flights' ``dep_time``); a measure of the event (``dep_delay``) is not its
    time and names nothing."""
    base = past_base(word)
    if base is None:
        return False
    keys = set(table.primary_key) | {c for fk in table.foreign_keys for c in fk.columns}
    for column in table.columns:
        if column.name in keys:
            continue
        words = vocab.column_words.get((table.qualified, column.name), [])
        if not (is_temporal(column.data_type) or any(w in DATE_NAME_WORDS for w in words)):
            continue
        if any(verb_names_part(base, part) for part in words):
            return True
    return False


def _noun(table: TableInfo, vocab: Vocabulary) -> str | None:
    """The one noun a table is named by (a lookup table's unsaid parts aside), as a
    singular stem; None for a name of several words."""
    parts = [p for p in vocab.table_words[table.qualified] if p not in OPTIONAL_TABLE_PARTS]
    return stem(parts[0]) if len(parts) == 1 else None


def names_event_of(vocab: Vocabulary, word: str, table: TableInfo) -> bool:
    """Whether ``word``, read as a verb, names the event ``table`` records: a verb of an
    event :data:`EVENTS` names the table by ("sold": ``sales``, "flew": ``flights``), or
    the verb the table's one noun is made from by a suffix ("treated": ``treatments``,
    "shipped": ``shipments``), or a column of the table keeps the verb's time
    (:func:`names_event_by_column`: "departed", ``flights.dep_time``). Used where a year said with the verb ("sold in 2023")
    must be the event's time, not a year of the rows the event reaches."""
    noun = _noun(table, vocab)
    base = _verb_base(word)
    event = next((e for e in EVENTS if base in e.verbs), None)
    if event is not None and noun is not None and noun in event.nouns:
        return True
    if names_event_by_column(vocab, word, table):
        return True
    if event is not None or noun is None:
        return False
    return len(base) >= 4 and noun.startswith(base) and len(noun) > len(base) + 1


def dated_referrers(vocab: Vocabulary, name: str) -> dict[str, tuple[TableInfo, list[str]]]:
    """Tables that refer to ``name``'s rows (by a declared or key-inferred edge) and keep
    a date or timestamp, with their date columns: the events those rows take part in
    (cars -> sales). Where a year said with an event's verb ("cars sold in 2023") is
    sought, by this module's rewrite and by the verifier's year-window check alike."""
    found = {}
    for edge in vocab.graph.edges_of(name):
        if edge.parent != name or edge.child == name:
            continue
        table = vocab.catalog.table(edge.child)
        if table is None:
            continue
        dates = [c.name for c in table.columns if is_temporal(c.data_type)]
        if dates:
            found[edge.child] = (table, dates)
    return found


def _event_tables(vocab: Vocabulary, event: Event) -> list[TableInfo]:
    return [t for t in vocab.catalog.tables if _noun(t, vocab) in event.nouns]


def _parents(vocab: Vocabulary, table: TableInfo) -> dict[str, TableInfo]:
    """The tables ``table`` references (by a declared or key-inferred edge)."""
    found = {}
    for edge in vocab.graph.edges_of(table.qualified):
        if edge.child == table.qualified and edge.parent != table.qualified:
            parent = vocab.catalog.table(edge.parent)
            if parent is not None:
                found[parent.qualified] = parent
    return found


def _recorded(vocab: Vocabulary, verb: str, rest: str) -> tuple[Event, TableInfo, TableInfo] | None:
    """(the verb's event, the one table recording it that references the rows ``rest``
    names, those rows' table); None when the verb is no event's, or no single such table."""
    base = _verb_base(verb)
    event = next((e for e in EVENTS if base in e.verbs), None)
    if event is None:
        return None
    rows = named_tables(vocab, tokenize(rest))
    if len(rows) != 1:
        return None
    recording = [t for t in _event_tables(vocab, event) if rows[0].qualified in _parents(vocab, t)]
    if len(recording) != 1:
        return None
    return event, recording[0], rows[0]


def _recording_table(vocab: Vocabulary, verb: str, rows: TableInfo) -> TableInfo | None:
    """The one table that refers to ``rows`` (by a declared or key-inferred edge, never
    ``rows`` itself) and records ``verb``'s event (:func:`names_event_of`); None where no
    table or several do, since counting through either of two would be a guess. One
    reading for every rewrite that counts, groups or anti-joins rows through their event."""
    recording = [
        t
        for t in vocab.catalog.tables
        if rows.qualified in _parents(vocab, t) and names_event_of(vocab, verb, t)
    ]
    return recording[0] if len(recording) == 1 else None


# "How many cars were sold in 2023?": a count of rows, their event's verb, a year
_COUNT_IN_YEAR = re.compile(
    r"^\s*how\s+many\s+(?P<rest>[a-z][a-z ]*?)\s+(?:(?:were|was|have\s+been|had\s+been)\s+)?"
    r"(?P<verb>[a-z]+)\s+(?P<window>(?:in|during)\s+\d{4})\s*[?.]?\s*$",
    re.IGNORECASE,
)


# "How many doctors treated patients in 2025?": the doers, their verb, the other side's
# table named bare, a year
_DOERS_IN_YEAR = re.compile(
    r"^\s*how\s+many\s+(?P<words>[a-z]+(?:\s+[a-z]+){2,4})\s+"
    r"(?P<window>(?:in|during)\s+\d{4})\s*[?.]?\s*$",
    re.IGNORECASE,
)


def _doers_said(question: str) -> dict[str, str] | None:
    """The doers' words, their verb (the first past form after them), the other side's
    words and the window of "How many doctors treated patients in 2025?"."""
    said = _DOERS_IN_YEAR.match(question)
    if said is None:
        return None
    words = said["words"].split()
    for i in range(1, len(words) - 1):
        if is_past(words[i]):
            return {
                "rest": " ".join(words[:i]),
                "verb": words[i],
                "object": " ".join(words[i + 1 :]),
                "window": said["window"],
            }
    return None


def _bare_table(vocab: Vocabulary, words: str) -> TableInfo | None:
    """The one table ``words`` name with nothing said beside its name ("patients", not
    "female patients": a qualifier the count through the event would drop)."""
    tables = named_tables(vocab, tokenize(words))
    if len(tables) != 1:
        return None
    own = {stem(p) for p in vocab.table_words[tables[0].qualified]}
    return tables[0] if {stem(w) for w in words.lower().split()} <= own else None


def _event_window(vocab: Vocabulary, question: str) -> Recorded | None:
    """ "How many cars were sold in 2023?" said as "How many cars had sales in 2023?":
    the rows counted through the one table that refers to them, keeps a date, and
    records the verb's event (:func:`names_event_of`), so that the year is that
    table's date and the rows are counted once each however often they were sold. The
    doers said with the other side named bare ("doctors treated patients in 2025") are
    counted the same way where the event's table refers to that side too: every event
    row has its other side, so the bare name restricts nothing."""
    said: re.Match[str] | dict[str, str] | None = _COUNT_IN_YEAR.match(question)
    other: TableInfo | None = None
    doers = _doers_said(question)
    if doers is not None:
        other = _bare_table(vocab, doers["object"])
        if other is not None:
            said = doers
    if said is None:
        return None
    rows = named_tables(vocab, tokenize(said["rest"]))
    if len(rows) != 1 or rows[0] == other:
        return None
    recording = [
        t
        for t, _ in dated_referrers(vocab, rows[0].qualified).values()
        if (other is None or other.qualified in _parents(vocab, t))
        and names_event_of(vocab, said["verb"], t)
    ]
    if len(recording) != 1:
        return None
    name = " ".join(vocab.table_words[recording[0].qualified])
    return Recorded(
        f"How many {said['rest']} had {name} {said['window']}?",
        f"Read {said['verb']!r} {said['window']} as the {recording[0].name} of the "
        f"{rows[0].name} in that time.",
        otherwise=_distinct_referred(vocab, recording[0], rows[0], said["window"]),
    )


def _distinct_referred(
    vocab: Vocabulary, event: TableInfo, rows: TableInfo, window: str
) -> tuple[str, ...]:
    """ "How many distinct <reference> of <event table> <window>?": the rows counted as
    the distinct values of the one column by which the event's rows refer to them
    (``flights.tailnum`` for planes), read where "<rows> had <event table>" still reads a
    year of the rows themselves (``planes.year``, the year a plane was built); nothing
    where the event refers to the rows by several columns or several edges."""
    edges = [
        e
        for e in vocab.graph.edges_of(event.qualified)
        if e.child == event.qualified and e.parent == rows.qualified
    ]
    if len(edges) != 1 or len(edges[0].child_columns) != 1:
        return ()
    words = " ".join(vocab.column_words[(event.qualified, edges[0].child_columns[0])])
    name = " ".join(vocab.table_words[event.qualified])
    return (f"How many distinct {words} of {name} {window}?",)


# "How many cars from 2022 were sold?", "… planes from 2004 departed?": a count of rows,
# their event's verb last (a past form, checked in :func:`passive_count_said`)
_COUNT_PASSIVE = re.compile(
    r"^\s*how\s+many\s+(?P<rest>[a-z0-9][a-z0-9 ]*?)\s+(?:(?:were|was|have\s+been|had\s+been)\s+)?"
    r"(?P<verb>[a-z]+)\s*[?.]?\s*$",
    re.IGNORECASE,
)


# "houses are listed": a present state of the rows, no event that happened to them
STATIVE = frozenset({"are", "is", "be", "been", "being"})


def passive_count_said(question: str) -> tuple[str, str] | None:
    """The rows' words and the past form of "How many <rows> were <verb>?" ("cars from
    2022", "sold"); None for another shape, a verb in no past form, or a present state
    ("How many houses are listed?"). Read by this module's rewrite and by the verifier's
    check that such a count reads the event's table, alike."""
    said = _COUNT_PASSIVE.match(question)
    if said is None or not is_past(said["verb"]) or said["rest"].split()[-1].lower() in STATIVE:
        return None
    return str(said["rest"]), str(said["verb"])


# "cars sold per make", "How many cars were sold per color?", "number of cars sold by
# each salesperson": a count of rows (its cue optional), their event's verb, a grouping
_PER_GROUP = re.compile(
    r"^\s*(?P<lead>(?:(?:what\s+is\s+)?(?:the\s+)?(?:total\s+)?number\s+of|how\s+many|count\s+of)"
    r"\s+)?(?P<rows>[a-z]+)\s+(?:(?:that|which)\s+)?(?:(?:were|was|have\s+been|had\s+been)\s+)?"
    r"(?P<verb>[a-z]+)\s+(?P<rest>(?:per|by|for\s+each|for\s+every|in\s+each)\s[^?]+?)\s*[?.]?\s*$",
    re.IGNORECASE,
)


def _event_per_group(vocab: Vocabulary, question: str) -> Recorded | None:
    """ "cars sold per make" said as "sales per make": the rows said with their event's
    verb are counted as the rows of the one table that refers to them and records that
    event (:func:`names_event_of`: ``sales`` for "sold"), each event once, grouped as
    the words group them (``cars.make``, reached from each sale by its key). Read only
    where the rows are said bare (their table's one noun, no qualifier the event's
    count would drop), the verb is no time of the rows' own ("users created per
    month": their ``created_at``), and exactly one table records the event for them;
    otherwise the refusal naming the event stands."""
    said = _PER_GROUP.match(question)
    if said is None or not is_past(said["verb"]):
        return None
    rows = _bare_table(vocab, said["rows"])
    if rows is None or names_event_by_column(vocab, said["verb"], rows):
        return None
    recording = _recording_table(vocab, said["verb"], rows)
    if recording is None:
        return None
    name = " ".join(vocab.table_words[recording.qualified])
    return Recorded(
        f"{said['lead'] or ''}{name} {said['rest']}",
        f"Read {said['rows']!r} {said['verb']!r} as the {recording.name} of the "
        f"{rows.name}, one per {recording.name} row.",
    )


# "visitors who never visited a museum", "How many customers have not bought a car?":
# the rows (said before the negation), the event's verb, its object named bare
_NEVER_DID = re.compile(
    r"^(?P<lead>.*?)\b(?P<rows>[a-z]+)\s+(?:(?:who|that|which)\s+)?(?:(?:have|has|had)\s+)?"
    r"(?:never|not|did\s+not|didn't|have\s+not|has\s+not|haven't|hasn't)\s+(?:(?:ever|been)\s+)?"
    r"(?P<verb>[a-z]+)\s+(?:(?:a|an|any|the)\s+)?(?P<object>[a-z]+)\s*[?.]?\s*$",
    re.IGNORECASE,
)


def negated_object(vocab: Vocabulary, verb: str, noun: str) -> tuple[TableInfo, TableInfo] | None:
    """(the table the object ``noun`` names, the one table recording ``verb``'s event
    that refers to it) for "… never <verb> a <noun>"; None when the noun names no table
    bare or no single table records the event on its rows."""
    obj = _bare_table(vocab, noun)
    if obj is None:
        return None
    recording = _recording_table(vocab, verb, obj)
    return None if recording is None else (obj, recording)


def _never_did(vocab: Vocabulary, question: str) -> Recorded | None:
    """ "visitors who never visited a museum" said as "visitors with no visit": the rows
    listed are those the words before the negation name (``visitor``), and what they
    never did is a row of the one table that records the verb's event and refers both to
    them and to the verb's object (``visit``: its visitor and its museum). Every such row
    has its object, so the object said bare ("a museum", "any museum") restricts nothing
    and the anti-join is to the event's table alone. Read only where the rows and the
    object are each one table's bare noun, different tables; a subject naming no table
    ("visitors" with no visitor table) leaves the refusal (``_never``) standing."""
    said = _NEVER_DID.match(question)
    if said is None:
        return None
    rows = _bare_table(vocab, said["rows"])
    found = negated_object(vocab, said["verb"], said["object"])
    if rows is None or found is None or rows == found[0]:
        return None
    event = found[1]
    if rows.qualified not in _parents(vocab, event):
        return None
    name = " ".join(vocab.table_words[event.qualified])
    return Recorded(
        f"{said['lead']}{said['rows']} with no {name}",
        f"Read {said['rows']!r} that never {said['verb']!r} a {said['object']!r} as the "
        f"{rows.name} rows no {event.name} row refers to.",
    )


def _event_rows(vocab: Vocabulary, question: str) -> Recorded | None:
    """ "How many cars from 2022 were sold?" said as "How many cars from 2022 had
    sales?": the rows the event happened to, counted through the one table that refers
    to them and records the verb's event (:func:`names_event_of`); what the rows' words
    say of them ("from 2022", the cars' own year) stays theirs."""
    said = passive_count_said(question)
    if said is None:
        return None
    rest, verb = said
    rows = named_tables(vocab, tokenize(rest))
    if len(rows) != 1 or names_event_by_column(vocab, verb, rows[0]):
        return None
    recording = _recording_table(vocab, verb, rows[0])
    if recording is None:
        return None
    name = " ".join(vocab.table_words[recording.qualified])
    return Recorded(
        f"How many {rest} had {name}?",
        f"Read {verb!r} as the {rows[0].name} having {recording.name}.",
    )


_WHO = re.compile(
    r"^\s*who\s+(?P<verb>[a-z]+)\s+(?P<rest>(?:the|these|those|all|each|every)\s[^?]+?)"
    r"\s*[?.]?\s*$",
    re.IGNORECASE,
)
_WENT_FOR = re.compile(
    r"^\s*(?:what|how\s+much)\s+(?:did|do|does|was|were|is|are)\s+(?P<rest>(?:the|these|those)"
    r"\s[^?]+?)\s+(?P<verb>[a-z]+)\s+for\s*[?.]?\s*$",
    re.IGNORECASE,
)
# "make" after "did <subject>": light with an event noun said before it ("how many
# purchases did they make": to purchase)
_LIGHT = re.compile(r"\b(?:did|do|does)\s[^?]{1,60}?\s(?P<verb>make)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Recorded:
    """A question said through the table recording its verb's event: the words, a note
    for the interpretation, and what its statement must show (a table, or one of its
    columns; nothing for an event noun said as another)."""

    question: str
    note: str
    table: str = ""
    column: str = ""
    # other sayings, each tried in turn where the ones before it are refused
    otherwise: tuple[str, ...] = ()

    def answered_by(self, sql: str) -> bool:
        """Whether ``sql`` shows what the verb asked: a column of the doer's table ("who
        bought": the customers, not the cars they bought), or the money column."""
        if not self.table:
            return True
        try:
            tree = sqlglot.parse_one(sql, dialect="postgres")
        except sqlglot.errors.ParseError:
            return False
        if not isinstance(tree, exp.Select):
            return False
        schema, _, name = self.table.rpartition(".")
        aliases = {
            t.alias_or_name.lower()
            for t in tree.find_all(exp.Table)
            if t.name.lower() == name and (t.db or "public").lower() == schema
        }
        return any(
            isinstance(c := p.unalias(), exp.Column)
            and c.table.lower() in aliases
            and (not self.column or c.name == self.column)
            for p in tree.expressions
        )


def event_asked(vocab: Vocabulary, question: str) -> Recorded | None:
    """The question said through the table that records its verb's event, or None when
    none of the module docstring's seven readings applies."""
    return (
        _doer(vocab, question)
        or _price(vocab, question)
        or _event_noun(vocab, question)
        or _event_window(vocab, question)
        or _event_rows(vocab, question)
        or _event_per_group(vocab, question)
        or _never_did(vocab, question)
    )


def _matched(
    vocab: Vocabulary, said: re.Pattern[str], question: str
) -> tuple[str, str, Event, TableInfo, TableInfo] | None:
    """The verb and the rows' words of a question ``said`` matches, with the event its
    verb names, the table recording it and the rows' table (``_recorded``); None when
    the question is not so said or no table records the verb's event on its rows."""
    m = said.match(question)
    if m is None:
        return None
    verb, rest = m.group("verb"), m.group("rest")
    found = _recorded(vocab, verb, rest)
    if found is None:
        return None
    return verb, rest, *found


def _doer(vocab: Vocabulary, question: str) -> Recorded | None:
    matched = _matched(vocab, _WHO, question)
    if matched is None:
        return None
    verb, rest, event, recording, rows = matched
    doers = event.doers[event.verbs[_verb_base(verb)]]
    named = [
        t
        for q, t in _parents(vocab, recording).items()
        if q != rows.qualified and _noun(t, vocab) in doers
    ]
    if len(named) != 1:
        return None
    noun = " ".join(vocab.table_words[named[0].qualified])
    note = f"Read who {verb!r} as the {noun} of {recording.name}."
    return Recorded(f"Which {noun} {verb} {rest}?", note, named[0].qualified)


def _price(vocab: Vocabulary, question: str) -> Recorded | None:
    matched = _matched(vocab, _WENT_FOR, question)
    if matched is None:
        return None
    verb, rest, _, recording, _ = matched
    keys = set(recording.primary_key) | {c for fk in recording.foreign_keys for c in fk.columns}
    money = [
        c
        for c in recording.columns
        if c.name not in keys
        and is_number(c.data_type)
        and _MONEY & set(vocab.column_words[(recording.qualified, c.name)])
    ]
    if len(money) != 1:
        return None
    words = " ".join(vocab.column_words[(recording.qualified, money[0].name)])
    note = f"Read what {rest!r} {verb!r} for as {recording.name}.{money[0].name}."
    return Recorded(f"What were the {words} of {rest}?", note, recording.qualified, money[0].name)


def _event_noun(vocab: Vocabulary, question: str) -> Recorded | None:
    for token in tokenize(question):
        noun = stem(token.low)
        event = next((e for e in EVENTS if noun in e.nouns), None)
        if token.quoted or event is None:
            continue
        tables = _event_tables(vocab, event)
        if len(tables) != 1:
            continue
        table = tables[0]
        name = " ".join(vocab.table_words[table.qualified])
        text, notes = question, []
        if _noun(table, vocab) != noun:
            if any(_noun(t, vocab) == noun for t in vocab.catalog.tables):
                continue
            # said in the number the question says it in ("purchases" -> "sales")
            word = name if token.low != noun or not name.endswith("s") else name[:-1]
            text = question[: token.start] + word + question[token.end :]
            notes.append(f"Read {token.text!r} as {table.name}.")
        light = _LIGHT.search(text, token.start)
        if light is not None:
            text = text[: light.start("verb")] + "have" + text[light.end("verb") :]
            notes.append(f"Read 'make' with {name!r} as a light verb.")
        if text != question:
            return Recorded(text, " ".join(notes))
    return None
