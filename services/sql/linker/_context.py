"""What every step of linking reads: the question as read once, the catalog's
vocabulary, and the business definitions in force; plus the two notes steps leave for
later ones (the definitions applied, the words a composed feature explains)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from services.sql.catalog import Catalog, JoinGraph, TableInfo
from services.sql.definitions import GlossaryEntry
from services.sql.linker._vocabulary import Vocabulary


@dataclass(frozen=True)
class Meaning:
    """A word no name spells, linked by meaning to a table or a column: the question
    embedder put the word and the name close (``similarity``, cosine)."""

    word: str
    table: str
    column: str = ""  # empty: the table itself
    similarity: float = 0.0
    # a gradable phrase's measure ("most expensive": ``cars.cost``): whether it ranks by
    # the "highest" or "lowest" value (``_gradable``); empty for a word
    ranks: str = ""

    def text(self) -> str:
        name = f"{self.table.rsplit('.', 1)[-1]}.{self.column}" if self.column else self.table
        return f"{self.word!r} read as {name} (similarity {self.similarity:.2f})"


@dataclass(frozen=True)
class LinkContext:
    """One question against one catalog. The reading is fixed when the context is made;
    ``applied`` and ``known`` only grow as steps use definitions and explain words."""

    vocab: Vocabulary
    today: date
    glossary: tuple[GlossaryEntry, ...]
    instructions: str
    # the question as asked, and with defined terms replaced by their definitions
    original: str
    question: str
    low: str
    # every content word of the question (stemmed), and the tables it names in order
    words: tuple[str, ...]
    named: tuple[TableInfo, ...]
    # words inside a multi-word stored name the question uses ("Security Suite"): part
    # of that name, not values of their own
    in_names: frozenset[str]
    # terms of definitions that changed the statement, in the order they were used
    applied: list[str] = field(default_factory=list)
    # words a composed feature explains (e.g. "weekend" once a day-of-week filter is in)
    known: set[str] = field(default_factory=set)
    # words that name a measure the question spells as arithmetic ("total sales …, price
    # times quantity"): the name of what is computed, not a stored value to filter on
    computed: set[str] = field(default_factory=set)
    # words no name spells, linked by meaning (see ``_meanings``)
    meanings: tuple[Meaning, ...] = ()
    # the join graph as this question reads it: of two parallel references, the one its
    # direction names ("arrived at" -> ``flights.dest``) first; None: the catalog's own
    directed: JoinGraph | None = None

    @property
    def catalog(self) -> Catalog:
        return self.vocab.catalog

    @property
    def graph(self) -> JoinGraph:
        return self.directed if self.directed is not None else self.vocab.graph
