""" "Who <verb> the <noun> …?" asks for the verb's agent, not for the noun's rows.

"Who made the planes built before 1960?" is answered by whatever made them (a plane's
``manufacturer``), never by the planes themselves (their tail numbers): the verb says what
to show, the rest ("the planes built before 1960") which rows. No name spells the agent
("made" is no column's name), so the column is the one the question embedder ties to
"who <verb>" among the columns of the tables the rest names, clearly closest as a
meaning must be; the statement is the rest's rows showing that column alone. Without
such a column the question is refused naming the verb (``verify``'s agent check), and a
follow-up ("who made them?") shows it for the earlier statement's rows, the earlier
statement's FROM and WHERE unchanged.

"Who teaches Science?" names its agent another way: the verb's agent noun ("teacher",
made from "teach" as English makes agents: -er, -r, -or) is a table's name, so the
question asks for that table's rows, as "Which teacher teaches Science?" does
(:func:`agent_table`); the rest is read like any other question's.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from services.sql.linker._mentions import OPTIONAL_TABLE_PARTS
from services.sql.linker._vocabulary import Vocabulary
from services.sql.words import lemma, stem

# "who" then a verb that takes the noun as its object: an auxiliary or a verb of being
# or having ("who is the oldest", "who has the most") asks about the subject's own rows.
_AGENT = re.compile(
    r"^\s*who\s+(?P<verb>[a-z]+)\s+(?P<rest>(?:the|these|those|this|that|all|each|every)\s.+?)"
    r"\s*[?.]?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_NOT_AGENTIVE = frozenset(
    "is are was were be been being has have had do does did can could will would shall "
    "should may might must got gets get of among in from at with by for than".split()
)


def agent_asked(question: str) -> tuple[str, str] | None:
    """(the verb, the rows it is said of) of a "who <verb> the <noun> …" question
    ("made", "the planes built before 1960"); None for any other question."""
    m = _AGENT.match(question)
    if m is None:
        return None
    verb = m.group("verb").lower()
    if verb in _NOT_AGENTIVE:
        return None
    return verb, m.group("rest")


def shown_instead(sql: str, table: str, column: str) -> str | None:
    """``sql``'s rows showing ``table.column`` alone (its FROM and WHERE unchanged), or
    None where that is not one plain placement: a statement that groups, aggregates,
    nests or ranks, or reads the table other than exactly once."""
    tree = sqlglot.parse_one(sql, dialect="postgres")
    if not isinstance(tree, exp.Select) or tree.args.get("group") or tree.args.get("having"):
        return None
    if any(s is not tree for s in tree.find_all(exp.Select)) or tree.args.get("order"):
        return None
    if any(o.find(exp.AggFunc) for o in tree.expressions):
        return None
    schema, _, name = table.rpartition(".")
    reads = [t for t in tree.find_all(exp.Table) if t.name == name and (t.db or "public") == schema]
    if len(reads) != 1:
        return None
    tree = tree.copy()
    tree.set("expressions", [exp.alias_(exp.column(column, table=reads[0].alias_or_name), column)])
    tree.set("distinct", None)
    return tree.sql(dialect="postgres")


# "who" then a verb in the present or past, then what it is said of (no article needed:
# "who teaches Science")
_WHO_VERB = re.compile(r"^\s*who\s+(?P<verb>[a-z]+)\s+(?P<rest>\S.*)$", re.IGNORECASE | re.DOTALL)


def agent_nouns(verb: str) -> frozenset[str]:
    """The nouns English makes for the one who does ``verb``: teach -> teacher, manage
    -> manager, visit -> visitor, create -> creator, run -> runner."""
    base = lemma(verb)
    if base.endswith("ed") and len(base) > 4:
        base = base[:-2]  # "visited": stem keeps the past ending
    forms = {base + "er", base + "or", base + base[-1] + "er"}
    if base.endswith("e"):
        forms |= {base + "r", base[:-1] + "or"}
    return frozenset(forms)


def agent_table(vocab: Vocabulary, question: str) -> str | None:
    """ "Who <verb> …?" said as "Which <table> <verb> …?" where exactly one table's name
    is the verb's agent noun (see the module's docstring); None for any other question.
    A lookup table's unsaid prefix aside, the name must be that one noun."""
    m = _WHO_VERB.match(question)
    if m is None:
        return None
    verb = m.group("verb").lower()
    if verb in _NOT_AGENTIVE:
        return None
    nouns = agent_nouns(verb)
    found = [
        table
        for table in vocab.catalog.tables
        if any(
            len(parts) == 1 and stem(parts[0]) in nouns
            for name in vocab.table_names(table)
            for parts in [[p for p in name if p not in OPTIONAL_TABLE_PARTS]]
        )
    ]
    if len(found) != 1:
        return None
    noun = " ".join(vocab.table_words[found[0].qualified])
    return f"Which {noun} {m.group('verb')} {m.group('rest')}"
