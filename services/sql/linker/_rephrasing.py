"""A question refused as asked, said again in the word order and words the readers know.

Both readers read a question from its head ("how many", "what", "list"), then the items
it shows, then its conditions and groupings. English says some of these otherwise, and
the question was refused for a form, not for a name:

- a fronted phrase: "In 1980, how many cars were made?" says what "How many cars were
  made in 1980?" says, and "For each stadium, how many concerts are there?" what "How
  many concerts are there for each stadium?" says; the phrase stands before the head,
  where neither reader looks, so it is moved to the end of the sentence it qualifies.

- an imperative the readers do not open with: "Name the singers under 35." asks what
  "List the singers under 35." asks (the rows, by their label);
- an idiom of happening: "Which concerts took place in 2015?" says what "Which concerts
  happened in 2015?" says; "place" there names no place.
- a headless breakdown: "transactions per ticker type", "singers by country" (a plural
  noun and what to group it by, no head, no measure) is how a busy user types "How many
  transactions are there per ticker type?"; it is read with "how many" before it. The
  measure it says is a count of the rows its noun names, so the counted noun still has
  to be a table's name and the grouping a column's (the linker and the verifier hold it
  to both).

Each is a change of grammar only: every word that may name something is still read, and
still has to be placed; the linker reads a question rephrased only when the question as
asked is refused (``QuestionLinker.link``).

One more saying is read before the question as asked, not after: a headless listing
("teachers older than 35", "flights from JFK in June": a plural noun and what qualifies
it, no head, no measure, no breakdown) is how a busy user types "List teachers older
than 35". It is read with "List" before it (``listed_bare``), the one reading of "list
<rows> …" (as asked, the clause reader knows no such form and the list-oriented reading
drops a comparative it cannot place), so the noun still has to be a table's name and
every word after it placed. A noun alone ("teachers") is not read as a request.
"""

from __future__ import annotations

import re

from services.sql.words import names_agent

# What a question or a request opens with when it says what it asks: a question word,
# an auxiliary ("Is there …", "Did …") or a request.
_QUESTION_HEADS = (
    "how what which who whom whose when where list show give find return tell count display "
    "is are was were do does did"
).split()
# A prepositional phrase (no clause punctuation inside) closed by a comma, then the head
# of a question or a request.
_FRONTED = re.compile(
    r"^\s*(?P<phrase>(?:for|in|during|at|on|from|within|across|over|after|before|since)"
    r"\s+[^,?.;!'\"]{1,60}?)\s*,\s*"
    rf"(?P<rest>(?:{'|'.join(_QUESTION_HEADS)})\b.*)$",
    re.IGNORECASE | re.DOTALL,
)
# The end of the first sentence: a stop followed by a space or the end (not the point of
# a decimal, "3.5").
_END = re.compile(r"\s*[?.!](?=\s|$)")


def rephrased(question: str) -> str:
    """``question`` in the readers' grammar (see the module's docstring); a question
    already in it as it is."""
    return counted_bare(plain_idioms(named_as_listed(fronted_last(question))))


# Words that say what is shown or measured, anywhere in the question: no bare count.
_MEASURED_WORDS = (
    "how what which who list show count counts number numbers total totals sum sums average "
    "averages avg mean maximum minimum max min most least share percentage percent ratio "
    "rate rates"
).split()
_MEASURED = re.compile(rf"\b(?:{'|'.join(_MEASURED_WORDS)})\b", re.IGNORECASE)
# What a question may open with that is not the noun it counts: a question's or a
# request's head, a modal, a ranking or a grouping says its own head; "the" / "all" are
# skipped. A measure word is not listed again: ``_MEASURED`` finds it anywhere, the
# opening word too.
_HEADS = (frozenset(_QUESTION_HEADS) - frozenset(_MEASURED_WORDS)) | frozenset(
    "why can could would will should name get fetch compute calculate median top bottom "
    "highest lowest first last each every per by for in of".split()
)
_OPENING = re.compile(r"^\s*(?:(?:the|all)\s+)?([a-z]+)\b", re.IGNORECASE)
# "per X" anywhere ("flights to LAX per carrier"); "by X" only right after a noun phrase
# of one or two words that opens the question ("singers by country"): after a longer one
# "by" is as likely a passive's agent ("planes made by Boeing"), which groups nothing.
_PER = re.compile(r"\bper\s+[a-z]", re.IGNORECASE)
_QUALIFIED = re.compile(r"\b(?:with|whose|that|which|where|having)\b", re.IGNORECASE)
_ARTICLE = re.compile(r"^\s*(?:the|all)\s+", re.IGNORECASE)
# A "per" phrase that ends the question ("… with 2 engines per manufacturer") groups; one
# followed by more ("a price per night over 100") is a rate said of the rows.
_LAST = re.compile(r"^per\s+[a-z]+(?:\s+[a-z]+)?\s*[?.!]?\s*$", re.IGNORECASE)
_NOUN_BY = re.compile(r"^\s*(?:(?:the|all)\s+)?[a-z]+(?:\s+[a-z]+)?\s+by\s+[a-z]", re.IGNORECASE)


def counted_bare(question: str) -> str:
    """ "transactions per ticker type" -> "How many transactions per ticker type"; a
    question with a head, or with no "per" / opening "by", as it is. An opening word
    that is a participle ("made by …") is a passive, not a noun, and left alone."""
    opening = _OPENING.match(question)
    if opening is None or opening.group(1).lower() in _HEADS or _MEASURED.search(question):
        return question
    if not _plural(opening.group(1)):
        return question  # "class per student": no rows' plural noun to count
    per = _PER.search(question)
    if not (per or _NOUN_BY.match(question)):
        return question
    if (
        per
        and _QUALIFIED.search(question[: per.start()])
        and not _LAST.match(question[per.start() :])
    ):
        return question  # "rooms with a price per night over 100": a rate, not a breakdown
    second = re.match(r"^\s*(?:(?:the|all)\s+)?[a-z]+\s+([a-z]+)\s+by\b", question, re.I)
    if second and not _PER.search(question) and names_agent(second.group(1).lower()):
        return question
    body = _ARTICLE.sub("", question).strip()
    return f"How many {body[0].lower()}{body[1:]}"


# The plural noun that opens a headless listing, then at least one word that qualifies it.
_QUALIFIED_NOUN = re.compile(r"^\s*(?:(?:the|all)\s+)?([a-z]+)\s+\S", re.IGNORECASE)


def listed_bare(question: str) -> str:
    """ "teachers older than 35" -> "List teachers older than 35"; a question with a
    head, a measure, or a noun with nothing after it, as it is. The rows are what the
    phrase names, as "List …" names them: the listing reader holds the noun to a
    table's name and each following word to a condition, or refuses."""
    opening = _QUALIFIED_NOUN.match(question)
    if opening is None or opening.group(1).lower() in _HEADS or _MEASURED.search(question):
        return question
    if counted_bare(question) != question:
        return question  # "singers by country": a breakdown, counted
    if not _plural(opening.group(1)):
        return question  # "course older than 35": no rows' plural noun to list
    body = _ARTICLE.sub("", question).strip()
    return f"List {body[0].lower()}{body[1:]}"


def _plural(word: str) -> bool:
    low = word.lower()
    return (low.endswith("s") and not low.endswith("ss")) or low.endswith("ies")


# "Name the …" / "Name all the …": a request for rows, as "List the …" is.
_NAME_HEAD = re.compile(r"^(\s*)name(\s+(?:all\s+)?the\b)", re.IGNORECASE)
# "take place" and its forms: an idiom for happening, not a place.
_TAKE_PLACE = {"take": "happen", "takes": "happens", "took": "happened", "taken": "happened",
               "taking": "happening"}  # fmt: skip
_PLACE_IDIOM = re.compile(r"\b(take|takes|took|taken|taking)\s+place\b", re.IGNORECASE)


def named_as_listed(question: str) -> str:
    """ "Name the singers under 35." -> "List the singers under 35."; any other question
    as it is."""
    return _NAME_HEAD.sub(r"\1List\2", question, count=1)


def plain_idioms(question: str) -> str:
    """ "Which concerts took place in 2015?" -> "Which concerts happened in 2015?"; any
    other question as it is."""
    return _PLACE_IDIOM.sub(lambda m: _TAKE_PLACE[m.group(1).lower()], question)


def fronted_last(question: str) -> str:
    """``question`` with a fronted prepositional phrase moved to the end of the sentence
    it qualifies ("In 1980, how many cars were made?" -> "How many cars were made in
    1980?"); any other question as it is."""
    m = _FRONTED.match(question)
    if m is None:
        return question
    phrase, rest = m.group("phrase"), m.group("rest")
    phrase = phrase[0].lower() + phrase[1:]
    end = _END.search(rest)
    at = end.start() if end else len(rest.rstrip())
    moved = f"{rest[:at]} {phrase}{rest[at:]}"
    return moved[0].upper() + moved[1:]
