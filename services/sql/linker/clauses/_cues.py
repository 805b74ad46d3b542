"""The words a question's form is made of: heads, aggregates, comparisons, ranks, order,
grouping and negation cues, the grammar that names nothing and the verbs that only
relate rows; which words only a mention of the schema can place.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from services.sql.linker._context import LinkContext, Meaning
from services.sql.linker._mentions import (
    Token,
    could_mention,
)
from services.sql.linker._vocabulary import Vocabulary, column_states
from services.sql.words import (
    AGGREGATE_WORDS,
    do_support_verb,
    irregular_past,
    is_unit,
    said_as_name,
    stored_as_verb,
    value_forms,
    word_match,
)

# A head reads "biggest" and "greatest" as a maximum too; the measure reader's table
# (``AGGREGATE_WORDS``) does not hold them.
AGGREGATES = {**AGGREGATE_WORDS, "biggest": "MAX", "greatest": "MAX"}


COMPARE = {
    "more than": ">",
    "greater than": ">",
    "larger than": ">",
    "bigger than": ">",
    "higher than": ">",
    "above": ">",
    "over": ">",
    "exceeding": ">",
    "after": ">",
    "later than": ">",
    "less than": "<",
    "fewer than": "<",
    "smaller than": "<",
    "lower than": "<",
    "below": "<",
    "under": "<",
    "before": "<",
    "earlier than": "<",
    "at least": ">=",
    "no less than": ">=",
    "not less than": ">=",
    "at most": "<=",
    "no more than": "<=",
    "not more than": "<=",
    "equal to": "=",
    "exactly": "=",
}


# "4 or more high schoolers": the bound after the number
TRAILING_COMPARE = {"or more": ">=", "or greater": ">=", "or less": "<=", "or fewer": "<="}


# Comparative adjectives and the dimension they compare, found among column names.
DIMENSIONS = {
    "older": ("age", ">"),
    "younger": ("age", "<"),
    "heavier": ("weight", ">"),
    "lighter": ("weight", "<"),
    "taller": ("height", ">"),
    "shorter": ("height", "<"),
    "longer": ("length", ">"),
    "cheaper": ("price", "<"),
}


# A dimension said by its adjective and the nouns that name it in a schema: the length of
# a trip is its distance ("flights longer than 1000 miles": ``distance``); the others
# are named by their own noun.
DIMENSION_NOUNS = {"length": ("length", "distance")}

# The measure of each dimension, by one of its units: a unit said after the number
# must measure the same ("longer than 3 hours" is a duration, no length).
DIMENSION_UNITS = {"age": "year", "weight": "pound", "height": "foot", "length": "mile"}


# Superlative adjectives: the dimension they rank and whether the highest value wins.
RANKED = {
    "oldest": ("age", True),
    "youngest": ("age", False),
    "heaviest": ("weight", True),
    "lightest": ("weight", False),
    "tallest": ("height", True),
    "shortest": ("height", False),
    "longest": ("length", True),
    "cheapest": ("price", False),
}


# Superlatives that rank by the phrase after them ("the highest capacity", "the most
# concerts"): whether the highest value wins.
MOST = {
    "most": True,
    "highest": True,
    "largest": True,
    "biggest": True,
    "greatest": True,
    "maximum": True,
    "max": True,
    "least": False,
    "fewest": False,
    "lowest": False,
    "smallest": False,
    "minimum": False,
    "min": False,
}


# The superlatives of an amount ("the most shares", "the fewest goals"): they compare how
# much of a quantity each row has, which is its sum where a row holds several of it;
# "the highest price" compares values, which several rows do not add up to.
AMOUNT = frozenset({"most", "least", "fewest"})


NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}


NUMBER_WORDS["single"] = 1


# Words of a question's grammar: they name nothing and change no answer here.
_GRAMMAR = frozenset(
    """
    a an the of in on at for to by with and is are was were be been being do does did
    have has had there their them they it its this that these those what which who whom
    whose how all any as also both only just respectively respective corresponding
    correspond corresponds whole entire please me us each every ever we you some
    but where exist exists listed list total there
    """.split()
)


# Verbs that say how rows relate ("cars produced by", "templates used in"): the joins
# already say it. Verbs that ask for a test of their own ("contain", "start", "end",
# "exceed") are not among them, nor any stored value (read before this applies).
_RELATION_VERBS = frozenset(
    """
    produce produces make makes made use uses own owns play plays go goes depart departs
    arrive arrives come comes belong belongs teach teaches hold holds host hosts visit
    visits sell sells buy buys work works live lives get gets got give gives gave take
    takes took run runs ran hire hires write writes wrote publish publishes perform
    performs happen happens occur occurs attend attends design designs create creates
    receive receives raise raises keep keeps kept serve serves offer offers provide
    provides include includes list lists exist exists appear appears register registers
    used owned using owning held sold went become becomes became
    """.split()
)


def unplaced_words(
    vocab: Vocabulary,
    tokens: Sequence[Token],
    meanings: Sequence[Meaning] = (),
    question: str = "",
) -> list[Token]:
    """The words of ``tokens`` no mention could cover and no clause could use: what no
    reading by names will place (a cheap test, before any mention is looked up)."""
    verb = do_support_verb(question) if question else None
    return [
        t
        for k, t in enumerate(tokens)
        if needs_a_name(vocab, t)
        and not (t.low == verb and not stored_as_verb(t.low, vocab.values))
        and not could_mention(vocab, t, meanings)
        and not _person_name_part(tokens, k)
        and not unit_after_number(tokens, k)
    ]


def unit_after_number(tokens: Sequence[Token], k: int) -> bool:
    """ "minutes" of "0 minutes or less": a unit says what the number before it counts,
    read with the bound after it (``value_clause``), no name of the schema."""
    return 0 < k < len(tokens) and tokens[k - 1].number is not None and is_unit(tokens[k].low)


def _person_name_part(tokens: Sequence[Token], k: int) -> bool:
    """ "last" of "last name": no name by itself, it is read with "name" as the column
    a schema shortens the pair to (``lname``)."""
    return (
        tokens[k].low in ("first", "last", "family")
        and k + 1 < len(tokens)
        and tokens[k + 1].low in ("name", "names")
    )


def needs_a_name(vocab: Vocabulary, token: Token) -> bool:
    """Whether only a mention can place the word: no cue, no grammar, no relating verb,
    no number or quoted value."""
    return not (
        token.quoted
        or token.number is not None
        or token.low in cue_words()
        or _glue_word(vocab, token)
    )


def is_glue(ctx: LinkContext, token: Token) -> bool:
    """A word of the grammar, or a verb that only relates rows; a verb form of a stored
    value ("failed" transactions, status 'fail') states a condition, it is no glue."""
    if token.low not in _GRAMMAR and _stored_state(ctx.vocab, token):
        return False
    if token.low == do_support_verb(ctx.question):
        return not stored_as_verb(token.low, ctx.vocab.values) and not _names_a_column(
            ctx.vocab, token
        )
    if said_as_name(ctx.question, token.start, token.text) and token.low not in _GRAMMAR:
        return False  # "did United run": a name said, not a relating "-ed" verb
    return _glue_word(ctx.vocab, token)


def _stored_state(vocab: Vocabulary, token: Token) -> bool:
    """The word, as said or without its inflection ("failed", "cancelled", "dogs"), is a
    value some column stores."""
    return any(form in vocab.values for form in value_forms(token.low))


def _glue_word(vocab: Vocabulary, token: Token) -> bool:
    return token.low in _GRAMMAR or (_relation_verb(token) and not _names_a_column(vocab, token))


@functools.cache
def cue_words() -> frozenset[str]:
    """Every word a head, an item or a clause reads as a cue of its own."""
    phrases = [
        *COUNT_HEADS, *LIST_HEADS, *AGGREGATES, *COMPARE, *TRAILING_COMPARE,
        *DIMENSIONS, *RANKED, *MOST, *ORDER_PHRASES, *DIRECTIONS, *GROUP_PHRASES,
        *OR_BOUND, *NEGATIONS, *EXCLUSIONS, *PREPOSITIONS, *NUMBER_WORDS, *BOUNDARY,
        "named called titled between average mean common frequent popular top first number",
        "numbers count counts distinct different unique or either as well along together",
        "name names id ids title titles have has had own owns who that which any a an",
        "across",
    ]  # fmt: skip
    return frozenset(w for phrase in phrases for w in phrase.split())


def form_words() -> frozenset[str]:
    """The words of a question's form: its head ("give", "list", "show"), the cues of
    items and clauses (aggregates, comparisons, ranks, order) and its grammar. They name
    no table, column or relation, so two questions that differ only in such words and in
    names ask alike (the answer memory's test of a reworded question)."""
    return cue_words() | _GRAMMAR


def _names_a_column(vocab: Vocabulary, token: Token) -> bool:
    """A verb that names a column ("returned" for ``returned_at``) or a state a column's
    comment defines ("archived": "when the account was archived") states a condition,
    it relates nothing."""
    key = ("names a column", token.low)
    known = vocab.word_memo.get(key)
    if isinstance(known, bool):
        return known
    found = _states_a_column(vocab, token)
    vocab.remember(key, found)
    return found


def _states_a_column(vocab: Vocabulary, token: Token) -> bool:
    if any(
        word_match(token.stem, part) >= 0.9
        for col in vocab.columns
        for part in vocab.column_words[col.key]
        if len(part) >= 4
    ):
        return True
    return any(
        token.low in words or token.stem in words
        for col in vocab.columns
        for words, _ in column_states(col.column)
    )


def _relation_verb(token: Token) -> bool:
    low = token.low
    if low in _RELATION_VERBS or irregular_past(low):
        return True  # "flew", "built": past forms relate rows as "-ed" ones do
    return (
        len(low) >= 6
        and low.endswith(("ed", "ing"))
        and not low.startswith(("contain", "start", "begin", "end", "exceed", "exclud", "includ"))
    )


# Words that end the list of items and start a clause.
BOUNDARY = frozenset(
    """
    of for in from with whose who that which where by having has have than when on at
    ordered sorted order sort ranked there are is was were do does did among between
    who whom whose named called
    """.split()
)


_ORDER_WORDS = {"ascending": False, "asc": False, "descending": True, "desc": True}


NEGATIONS = frozenset({"not", "no", "never", "without", "none"})

# Before a value the rows must not hold: "each state other than TX" is ``state <> 'TX'``.
EXCLUSIONS = ("other than", "apart from", "aside from", "except for", "except", "excluding")


# Prepositions that may introduce a value ("from France", "in 2014", "of type CV").
PREPOSITIONS = frozenset({"from", "in", "of", "at", "with", "for", "by", "on", "to", "during"})


# "in 2014 or after": the bound the value opens
OR_BOUND = {"or after": ">=", "or later": ">=", "or before": "<=", "or earlier": "<=",
             "or more": ">=", "or above": ">=", "or less": "<=", "or below": "<="}  # fmt: skip


# Words that start a new clause: a negated phrase ends before them.
CLAUSE_START = frozenset(
    {"who", "whose", "that", "which", "and", "or", "but", "ordered", "sorted", "order", "sort"}
)


COUNT_HEADS = (
    "how many",
    "count the number of",
    "count the total number of",
    "count number of",
    "count the",
    "count",
    "what is the number of",
    "what is the total number of",
    "what are the number of",
    "what is the count of",
    # a count said as a noun phrase first ("count of X by Y"), as "number of X" is: the
    # verb "count" would leave "of X" to the items
    "the count of",
    "count of",
    "what's the number of",
    "find the number of",
    "find the total number of",
    "find number of",
    "show the number of",
    "return the number of",
    "return the total number of",
    "give the number of",
    "give me the number of",
    "tell me the number of",
    "list the number of",
    "the number of",
    "number of",
)


LIST_HEADS = (
    "what are the",
    "what are",
    "what is the",
    "what is",
    "what was the",
    "what were the",
    "what's the",
    "which are the",
    "which is the",
    "who are the",
    "who is the",
    "show me the",
    "show me all the",
    "show me all",
    "show me",
    "show the",
    "show all the",
    "show all",
    "show",
    "list the",
    "list all the",
    "list all",
    "list",
    "find the",
    "find all the",
    "find all",
    "find",
    "give me the",
    "give me all the",
    "give the",
    "give me",
    "give",
    "return the",
    "return all the",
    "return all",
    "return",
    "display the",
    "display all",
    "display",
    "tell me the",
    "tell me",
    "get the",
    "get all",
    "please show the",
    "please show",
    "please list the",
    "please give me the",
)


# After "show the <table>": words that begin a condition, so the table is what is listed
# ("give the airline with abbreviation 'UAL'"), not whose column follows ("singer names").
ROWS_END = frozenset({"with", "whose", "that", "which", "who", "where"})


ORDER_PHRASES = {
    "in descending order of": True,
    "in descending order by": True,
    "in ascending order of": False,
    "in ascending order by": False,
    "in descending order": True,
    "in ascending order": False,
    "in alphabetical order of": False,
    "in alphabetical order by": False,
    "in alphabetical order": False,
    "in ascending alphabetical order of": False,
    "in ascending alphabetical order": False,
    "in descending alphabetical order": True,
    "alphabetically": False,
    "ordered by": False,
    "sorted by": False,
    "order by": False,
    "sort by": False,
    "ranked by": False,
    "ordered descending by": True,
    "ordered ascending by": False,
    "sorted descending by": True,
    "sorted ascending by": False,
    "in order of": False,
    "by descending order of": True,
    "by ascending order of": False,
    "in the descending order of": True,
    "in the ascending order of": False,
}


DIRECTIONS = {
    "in descending order": True,
    "in ascending order": False,
    "descending": True,
    "ascending": False,
    "desc": True,
    "asc": False,
    "from highest to lowest": True,
    "from lowest to highest": False,
    "from high to low": True,
    "from low to high": False,
    "from the highest to the lowest": True,
    "from the lowest to the highest": False,
    "from largest to smallest": True,
    "from smallest to largest": False,
    "from the oldest to the youngest": True,
    "from oldest to youngest": True,
    "from the youngest to the oldest": False,
    "from youngest to oldest": False,
    "in descending": True,
    "in ascending": False,
}


GROUP_PHRASES = (
    "for each",
    "in each",
    "of each",
    "per",
    "for every",
    "by each",
    "grouped by",
    "group by",
    "each",
)


_VERB_HAVE = ("have", "has", "had", "own", "owns", "owned", "with")


# "cars that have 8 cylinders": the verb of having, which before a number and a quantity
# column says what "with 8 cylinders" says (the rows whose column holds the number)
HAVING = frozenset({"have", "has", "had"})


# Parts of a date or year column's name that say it is one, beside the event it dates
# ("open_year", "date_effective_from", "date_on_market").
WHEN_PARTS = frozenset({"year", "date", "time", "day", "on", "at", "from", "dt"})


WHEN_PREPOSITIONS = {"in": "=", "during": "=", "before": "<", "after": ">", "since": ">="}


# "When did …", "when was …": a question asking for the date of an event.
WHEN_AUXILIARIES = frozenset(
    {"did", "do", "does", "was", "were", "is", "are", "has", "have", "had"}
)


# "a greater weight than 10": the comparative before the column, "than" after it
SPLIT_COMPARATIVES = {
    phrase.split()[0]: op
    for phrase, op in COMPARE.items()
    if len(phrase.split()) == 2 and phrase.endswith(" than")
}


RELATIVE = frozenset({"that", "which", "who", "whose", "with"})
# Prepositions that place a noun's rows at a value ("the customers in Argentina",
# "suppliers from Japan", "airports at Denver"): grammar, no word of a schema.
PLACING = frozenset({"in", "from", "at"})
