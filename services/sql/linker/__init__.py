"""The schema linker: a question's phrases mapped to columns, tables, stored values and
business definitions, then composed into one SELECT, or refused naming what did not link.

Nothing here knows a particular schema. Names are read the way people write them
(``sbTxCustId`` is "transaction customer id" once the table's own column prefix stands for
the table); words match names exactly or as abbreviations (``amt`` for amount, ``dt`` for
date); rare name words weigh more than common ones (inverse document frequency over the
catalog's column names); values named in the question are found in the columns whose
stored values contain them; tables are joined along the join graph (declared keys, then
inferred ones). Every phrase of the output list must link, or the question is refused with
what was missing: a clear refusal beats a confident wrong answer.

One module per step, in the order a question goes through them:

- ``_context``: what every step reads (the question read once, the vocabulary, the
  definitions) and the notes steps leave for later ones;
- ``_vocabulary``: what the catalog says about itself, indexed for lookup;
- ``_reading``: splitting a question's phrases (output items, relative clauses);
- ``_terms``: business definitions (glossary, instructions, the question's own);
- ``_lookup``: words to tables, columns and stored values;
- ``_mentions``: every span of a question that names a table, a column, a value;
- ``_meanings``: words no name spells, linked by meaning through the question embedder;
- ``_gradable``: a gradable word ("most expensive", "weigh the most") read as the
  measure it ranks by, linked by meaning;
- ``_unplaced``: a noun a refusal could not place, linked by meaning with a margin to
  an element of the question's tables (the last reading tried);
- ``_valued``: such a noun read as the sampled stored value clearly nearest it in
  meaning ("women" as ``gender = 'Female'``), tried after ``_unplaced``;
- ``_clauses``: the clause reader (head, items, clauses) for questions as people ask;
- ``_dates``: time windows and which date column a question means;
- ``_measures``: counts, sums, averages, arithmetic, elapsed time, ranks;
- ``_outputs``: the output list, item by item;
- ``_shape``: grouping, ordering and limits;
- ``_conditions``: filters, anti- and semi-joins, text patterns, flags and states;
- ``_shares``: shares of a whole and ratios of two counts;
- ``_seasons``: a season said where the data keeps months, refused naming them;
- ``_self_join``: a table's reference to itself said in the question ("who reports to
  Andrew Fuller?", "the person they report to") read through the table joined to itself;
- ``_naming``: result-column names and the plain-words interpretation;
- ``_places``: places named in full read as their stored code, said in the interpretation;
- ``_coverage``: every content word explained, or the question refused;
- ``_composition``: the plan as one SELECT, joined along the join graph;
- ``_rephrasing``: a question refused as asked, said again in the readers' grammar
  (a fronted phrase moved to the end of its sentence, "Name the …", "took place");
- ``_how_much``: "How much did <someone> <verb>?" read as the total of the one number
  column the verb names;
- ``_event_verbs``: a verb whose column lives on the table recording its event ("who
  bought the cars?", "what did they sell for?", "how many purchases…") read through
  that table (a lexicon of events, their nouns and their doers);
- ``_linker``: the orchestrator.

The statement is composed as text from catalog identifiers (quoted where needed) and
literals rendered by sqlglot, and then goes through the gate like any other.
"""

from __future__ import annotations

from services.sql.catalog import is_number
from services.sql.linker._agents import agent_asked, agent_nouns, agent_table, shown_instead
from services.sql.linker._asked import attribute_asked
from services.sql.linker._clock import PARTS_OF_DAY, is_clock
from services.sql.linker._context import LinkContext, Meaning
from services.sql.linker._coverage import unexplained
from services.sql.linker._dates import DATE_NAME_WORDS, GRAINS
from services.sql.linker._event_verbs import (
    Recorded,
    dated_referrers,
    event_asked,
    names_event_by_column,
    names_event_of,
    passive_count_said,
)
from services.sql.linker._linker import (
    AFTER_REFUSAL,
    BEFORE_AS_ASKED,
    QuestionLinker,
    StatementCheck,
    link_question,
    read_question,
)
from services.sql.linker._meanings import (
    MEANING_MIN,
    NEAR_MIN,
    PhraseEmbedder,
    find_meanings,
    nearest_names,
)
from services.sql.linker._measures import COUNT_CUES
from services.sql.linker._plan import Linked, LinkError, entity_columns, is_temporal
from services.sql.linker._seasons import unsaid_season
from services.sql.linker._self_join import (
    SelfReference,
    referred_aliases,
    said_after,
    self_references,
)
from services.sql.linker._terms import prose_of_definitions
from services.sql.linker._unplaced import unplaced_meanings
from services.sql.linker._valued import (
    PENDING,
    ValueMeaning,
    ValueVectors,
    has_candidates,
    said_as_values,
    value_meanings,
)
from services.sql.linker._vocabulary import Col, Vocabulary, column_states, comment_names
from services.sql.linker.clauses import form_words

__all__ = [
    "AFTER_REFUSAL",
    "BEFORE_AS_ASKED",
    "COUNT_CUES",
    "DATE_NAME_WORDS",
    "GRAINS",
    "MEANING_MIN",
    "NEAR_MIN",
    "PARTS_OF_DAY",
    "PENDING",
    "Col",
    "LinkContext",
    "LinkError",
    "Linked",
    "Meaning",
    "PhraseEmbedder",
    "QuestionLinker",
    "Recorded",
    "SelfReference",
    "StatementCheck",
    "ValueMeaning",
    "ValueVectors",
    "Vocabulary",
    "agent_asked",
    "agent_nouns",
    "agent_table",
    "attribute_asked",
    "column_states",
    "comment_names",
    "dated_referrers",
    "entity_columns",
    "event_asked",
    "find_meanings",
    "form_words",
    "has_candidates",
    "is_clock",
    "is_number",
    "is_temporal",
    "link_question",
    "names_event_by_column",
    "names_event_of",
    "nearest_names",
    "passive_count_said",
    "prose_of_definitions",
    "read_question",
    "referred_aliases",
    "said_after",
    "said_as_values",
    "self_references",
    "shown_instead",
    "unexplained",
    "unplaced_meanings",
    "unsaid_season",
    "value_meanings",
]
