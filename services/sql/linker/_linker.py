"""The orchestrator: a question read into a context, then each step in turn (outputs,
measures, grouping, ordering, conditions, composition), or the refusal naming what did
not link."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date

from services.sql.catalog import JoinGraph, is_number
from services.sql.definitions import GlossaryEntry, inline_definitions
from services.sql.linker._agents import agent_asked, agent_table, shown_instead
from services.sql.linker._asked import attribute_asked
from services.sql.linker._composition import compose
from services.sql.linker._conditions import link_conditions, link_semi
from services.sql.linker._context import LinkContext, Meaning
from services.sql.linker._converted import compares_converted, converted_asked
from services.sql.linker._dates import date_column, day_kinds
from services.sql.linker._event_verbs import event_asked
from services.sql.linker._gradable import gradable_asked
from services.sql.linker._how_much import how_much_asked
from services.sql.linker._lateness import lateness_asked
from services.sql.linker._leading import ambiguity, led_names, said_whole, tables_read
from services.sql.linker._listed_by import listed_by, listed_table, ordered_by
from services.sql.linker._lookup import named_tables
from services.sql.linker._measures import fits_phrase, read_arith, read_measure
from services.sql.linker._outputs import is_covered, merge_elliptic, read_item, split_output
from services.sql.linker._places import places_read
from services.sql.linker._plan import (
    Dim,
    Linked,
    LinkError,
    Measure,
    Plan,
    bare_count,
    is_key,
    refines,
    same_measure,
)
from services.sql.linker._reading import RESULT_WORDS, clean_item, split_items
from services.sql.linker._rephrasing import listed_bare, rephrased
from services.sql.linker._seasons import unsaid_season
from services.sql.linker._self_join import referred_asked, referred_shown, self_joined
from services.sql.linker._shape import link_groups, link_ordering, read_limit
from services.sql.linker._shares import link_share
from services.sql.linker._shown import shown_as_asked, two_sentences
from services.sql.linker._terms import expand_terms
from services.sql.linker._vocabulary import Vocabulary
from services.sql.linker.clauses import Decline, read_clauses
from services.sql.results import with_pairs, with_semijoins, with_shown
from services.sql.words import (
    STOP_WORDS,
    question_directions,
    role_words,
    says_role,
    stem,
    tokenize,
)

# Checks a composed statement against the question, raising LinkError naming what it
# leaves out (``services.sql.verify.verify_statement``): the linker proposes readings in
# order of preference and keeps the first that passes; it never judges its own work.
StatementCheck = Callable[[LinkContext, str], None]


class QuestionLinker:
    """Links one question (with its definitions) to one catalog."""

    def __init__(
        self,
        question: str,
        vocab: Vocabulary,
        today: date,
        glossary: Sequence[GlossaryEntry] = (),
        instructions: str = "",
        *,
        check: StatementCheck,
        meanings: Sequence[Meaning] = (),
    ) -> None:
        self._check = check
        self.context = read_question(
            question, vocab, today, glossary, instructions, meanings=meanings
        )
        self._inputs = (question, vocab, today, tuple(glossary), instructions, tuple(meanings))
        # terms whose words replaced the question's: whether they changed the statement is
        # a question (a definition written in SQL is in the statement when applied)
        self._expanded = frozenset(self.context.applied)
        # whether a name said by its leading words may be read said whole (``_read_led``):
        # not again in a question that already says it whole
        self._led = True

    def link(self) -> Linked:
        """The statement, or :class:`LinkError` naming what did not link or what the
        statement would leave out; the definitions it reports applied are those that
        changed it (linked without one, the statement differs or cannot be made).

        Whichever reading made it, the statement shows the columns that chose its rows
        (``results.with_deciding``): composed statements show them before they are
        checked, and a reading that changes what one shows (an agent's column, a second
        sentence's) shows them again here, as a follow-up about earlier rows does
        (``conversation.deciding``). Joins that only restrict the rows it shows are
        written as their having a match first (``results.with_semijoins``), as a
        follow-up that narrows earlier rows to those with one writes them.

        A question refused as asked in a grammar the readers do not know ("In 1980, how
        many cars were made?") is read once more said in one they know (``_rephrasing``);
        its refusal as asked stands when that reading is refused too. So is a question in
        two sentences, the second saying what to show ("…? List the country name."): its
        first sentence, showing what the second names (``_shown``); and "Who teaches
        Science?", whose verb's agent noun is a table's name, as "Which teacher teaches
        Science?" (``_agents.agent_table``). An attribute asked by a question word ("How
        old is the teacher?") is read first as asked by its noun ("What is the age of the
        teacher?", ``_asked``): as asked, no reader places the word. A question refused
        for a gradable word ("the 5 most expensive cars") is read with the measure the
        embedder linked it to said instead ("the 5 cars with the highest cost",
        ``_gradable``). Otherwise as asked first: a question read that way
        keeps its reading. The readings and their order are the tables
        ``BEFORE_AS_ASKED`` and ``AFTER_REFUSAL`` at the foot of this module. A place named in full and read as the code its column stores
        is said in the interpretation (``_places``)."""
        linked = self._read()
        catalog = self.context.catalog
        sql = with_shown(with_semijoins(with_pairs(linked.sql, catalog), catalog), catalog)
        linked = replace(linked, sql=sql) if sql != linked.sql else linked
        read = places_read(self.context.vocab, self.context.question, linked.sql)
        return replace(linked, explanation=f"{linked.explanation} {read}") if read else linked

    def _read(self) -> Linked:
        """The first reading that links: each of ``BEFORE_AS_ASKED`` in turn, then the
        question as asked, then, where that is refused, each of ``AFTER_REFUSAL`` in
        turn; the refusal as asked stands when none of them links. A reading may refuse
        outright (``_read_led`` naming two values) rather than give way to the next."""
        for reading in BEFORE_AS_ASKED:
            read = reading(self)
            if read is not None:
                return read
        try:
            linked = self._link()
        except LinkError as refused:
            for reading in AFTER_REFUSAL:
                read = reading(self)
                if read is not None:
                    return read
            raise refused from None
        applied = tuple(
            term
            for term in linked.applied
            if term not in self._expanded or self._changed_by(term, linked.sql)
        )
        return replace(linked, applied=applied) if applied != linked.applied else linked

    def _read_said(self, said: str | None) -> Linked | None:
        """The question ``said`` otherwise, linked in this one's place (``_as_if_asked``);
        None when a reading has no other saying of it, or that saying is refused too."""
        if said is None:
            return None
        try:
            return self._as_if_asked(said)
        except LinkError:
            return None

    def _read_listed_by(self) -> Linked | None:
        """A listing said "by X", X a column's name ("Show the companies in Germany by
        industry"), read as its rows with X shown and ordered by it (``_listed_by``),
        said in the interpretation. Tried before the question as asked, which would
        drop the words or refuse them; where no saying shows and orders by X over the
        rows asked for, refused naming X."""
        question, vocab = self._inputs[0], self._inputs[1]
        listed = listed_by(vocab, question)
        if listed is None:
            return None
        catalog = self.context.catalog
        rows = self._read_said(listed.rows)
        table = listed_table(rows.sql, catalog) if rows is not None else None
        if table is None:
            return None  # the rows themselves are not read: the refusal as asked stands
        for saying in listed.sayings:
            linked = self._read_said(saying)
            sql = ordered_by(linked.sql, listed, table, vocab, catalog) if linked else None
            if linked is not None and sql is not None:
                note = f"Read 'by {listed.said}' as showing it and ordering by it."
                return replace(linked, sql=sql, explanation=f"{linked.explanation} {note}")
        raise LinkError(
            f"'by {listed.said}' on a listing asks to show and order by it; no column of "
            "the listed rows, or of a row each refers to, was read as it"
        )

    def _read_listed_bare(self) -> Linked | None:
        """A headless listing ("teachers older than 35") read as the listing it is typed
        for ("List teachers older than 35", ``_rephrasing.listed_bare``): the one reading
        of "list <rows> …", not a second one. Tried before the question as asked, where
        the clause reader knows no such form and the list-oriented reading drops a
        comparative it cannot place; refused said so, the question is read as asked."""
        question = self._inputs[0]
        listed = listed_bare(question)
        return self._read_said(listed if listed != question else None)

    def _read_attribute(self) -> Linked | None:
        """An attribute asked by a question word ("How old is the teacher?") read as
        asked by its noun ("What is the age of the teacher?", ``_asked``). Tried before
        the question as asked: as asked, no reader places the word."""
        return self._read_said(attribute_asked(self._inputs[1], self._inputs[0]))

    def _read_lateness(self) -> Linked | None:
        """ "Flights that did not arrive late" read as a comparison of the event's signed
        delay ("… that had an arr delay of 0 or less", ``_lateness``), said in the
        interpretation. Tried before the question as asked, which reads no condition for
        the phrase; a phrase said whose reading is refused refuses the question (as asked
        it would be answered without it)."""
        late = lateness_asked(self._inputs[1].catalog, self._inputs[0])
        if late is None:
            return None
        linked = self._as_if_asked(late.question)
        note = f"Read {late.said!r} as a condition on {late.column}."
        return replace(linked, explanation=f"{linked.explanation} {note}")

    def _read_converted(self) -> Linked | None:
        """A number said in a unit another than the one the compared column declares
        ("1 hour" on ``taxi_time_mins``) read said in the column's unit ("60 minutes",
        ``_converted``), kept only where the statement compares the converted number with
        a column declaring that unit; said in the interpretation."""
        found = converted_asked(self._inputs[1].catalog, self._inputs[0])
        if found is None:
            return None
        linked = self._read_said(found.question)
        if linked is None or not compares_converted(linked.sql, found.moved):
            return None
        return replace(linked, explanation=f"{linked.explanation} {found.explained(linked.sql)}")

    def _read_rephrased(self) -> Linked | None:
        """A question in a grammar the readers do not know ("In 1980, how many cars were
        made?") read said in one they know (``_rephrasing``); None when it is in theirs
        already."""
        question = self._inputs[0]
        moved = rephrased(question)
        return self._read_said(moved if moved != question else None)

    def _read_gradable(self) -> Linked | None:
        """A question refused for a gradable word ("the 5 most expensive cars") read with
        the measure the embedder linked it to said instead ("the 5 cars with the highest
        cost", ``_gradable``); None without such a word or its meaning."""
        question, vocab, *_, meanings = self._inputs
        return self._read_said(gradable_asked(vocab, question, meanings))

    def _read_agent_table(self) -> Linked | None:
        """ "Who teaches Science?", whose verb's agent noun is a table's name, read as
        "Which teacher teaches Science?" (``_agents.agent_table``)."""
        return self._read_said(agent_table(self._inputs[1], self._inputs[0]))

    def _read_how_much(self) -> Linked | None:
        """ "How much did Fernando Gago spend?" read with its verb's number column said as
        a noun ("What is the total spent by Fernando Gago?", ``_how_much``)."""
        return self._read_said(how_much_asked(self._inputs[1], self._inputs[0]))

    def _read_event(self) -> Linked | None:
        """ "Who bought the cars?", "what did the cars sell for?": a verb read through the
        table that records its event (``_event_verbs``), taken only when the statement
        shows what the verb asked (the doer's rows, the money column) and said so in the
        interpretation; None when no such table references the rows' table. Where the
        first saying is refused its other sayings (``Recorded.otherwise``) are tried in
        turn."""
        recorded = event_asked(self._inputs[1], self._inputs[0])
        if recorded is None:
            return None
        for question in (recorded.question, *recorded.otherwise):
            try:
                linked = self._as_if_asked(question)
            except LinkError:
                continue
            if not recorded.answered_by(linked.sql):
                return None
            return replace(linked, explanation=f"{linked.explanation} {recorded.note}")
        return None

    def _read_led(self) -> Linked | None:
        """The question with a name said by its leading words ("Delta") said as the one
        stored value it begins ('Delta Air Lines Inc.', ``_leading``); None when it says
        no such name or the full name is refused too. Of several values the words begin,
        the one whose reading reads no table holding another is taken; more than one such
        is a :class:`LinkError` naming two, none leaves the refusal as asked."""
        question, vocab = self._inputs[0], self._inputs[1]
        found = led_names(vocab, question) if self._led else []
        if not found:
            return None
        led = found[0]
        by_column: dict[tuple[str, str], list[str]] = {}
        for col, value in led.values:
            by_column.setdefault(col.key, []).append(value)
        readings: list[Linked] = []
        for col, value in led.values:
            if len(by_column[col.key]) != 1:
                continue
            _, _, today, glossary, instructions, meanings = self._inputs
            whole = QuestionLinker(said_whole(question, led, value), vocab, today, glossary,
                                   instructions, check=self._check, meanings=meanings)  # fmt: skip
            whole._led = False  # said whole: no name in it to lengthen again
            try:
                linked = whole._read()
            except LinkError:
                continue
            read = tables_read(linked.sql)
            if any(c.table.name.lower() in read for c, v in led.values if v != value):
                continue
            readings.append(
                replace(linked, explanation=f"{linked.explanation} Read {led.said!r} as {value!r}.")
            )
        if len(readings) > 1:
            raise LinkError(ambiguity(led))
        return readings[0] if readings else None

    def _read_apart(self) -> Linked | None:
        """A question in two sentences ("…? List the country name.") read as its first
        sentence showing what the second names (``_shown``); None when it is not one, or
        when either sentence is refused or the second names what the first cannot show."""
        parts = two_sentences(self._inputs[0])
        if parts is None:
            return None
        try:
            rows, shown = (self._as_if_asked(sentence) for sentence in parts)
        except LinkError:
            return None
        sql = shown_as_asked(rows.sql, shown.sql)
        if sql is None:
            return None
        return replace(rows, sql=sql) if sql != rows.sql else rows

    def _read_agent(self) -> Linked | None:
        """ "Who <verb> the <noun> …?" read as the rows "the <noun> …" names showing the
        column the verb was linked to by meaning (``_agents``); None when it is not
        such a question, the verb has no column, the rows are refused, or the column is
        not one of a table they read once."""
        question, *_, meanings = self._inputs
        asked = agent_asked(question)
        if asked is None:
            return None
        verb, rest = asked
        meaning = next((m for m in meanings if m.word == verb and m.column), None)
        if meaning is None:
            return None
        try:
            rows = self._as_if_asked(f"List {rest}.")
        except LinkError:
            return None
        sql = shown_instead(rows.sql, meaning.table, meaning.column)
        if sql is None:
            return None
        return replace(rows, sql=sql, explanation=f"{rows.explanation} Read {meaning.text()}.")

    def _read_self_joined(self) -> Linked | None:
        """A table's reference to itself said in the question, read through the table
        joined to itself (``_self_join``): a value said after the reference's words
        ("who reports to Andrew Fuller?") compared on the row referred to, where the
        as-asked statement compares it on the rows answered and is refused for it; or a
        phrase naming the referred row ("with the name of the person they report to")
        shown beside each row the rest of the question lists. Each is checked like any
        other statement and said in the interpretation; None without such words."""
        question, vocab, today, glossary, instructions, meanings = self._inputs
        catalog = vocab.catalog
        if not catalog.joins and not any(t.foreign_keys for t in catalog.tables):
            return None
        referred = referred_asked(catalog, question)
        asked = referred.rest if referred is not None else question
        unchecked = QuestionLinker(
            asked, vocab, today, glossary, instructions, check=_unchecked, meanings=meanings
        )
        try:
            linked = unchecked._link()
        except LinkError:
            return None
        if referred is not None:
            found = referred_shown(catalog, referred, linked.sql)
            if found is not None:
                self.context.known.add(referred.noun)
        else:
            found = self_joined(catalog, self.context.low, linked.sql)
        if found is None:
            return None
        try:
            self._check(self.context, found.sql)
        except LinkError:
            return None
        return replace(linked, sql=found.sql, explanation=f"{linked.explanation} {found.note}")

    def _as_if_asked(self, question: str) -> Linked:
        """``question`` linked in this one's place: the same schema, day, definitions,
        instructions, meanings and checks (a rephrasing, or one sentence of two)."""
        _, vocab, today, glossary, instructions, meanings = self._inputs
        asked = QuestionLinker(
            question, vocab, today, glossary, instructions, check=self._check, meanings=meanings
        )
        asked._led = self._led
        return asked._read()

    def _changed_by(self, term: str, sql: str) -> bool:
        question, vocab, today, glossary, instructions, meanings = self._inputs
        if not any(e.term == term for e in glossary):
            return True  # the question's own definition ("X refers to Y")
        without = tuple(e for e in glossary if e.term != term)
        try:
            other = QuestionLinker(
                question, vocab, today, without, instructions, check=self._check, meanings=meanings
            )._link()
        except LinkError:
            return True
        return other.sql != sql

    def _link(self) -> Linked:
        """The clause reader first; where it cannot place every phrase, the
        list-oriented reading."""
        applied = list(self.context.applied)
        checked: LinkError | None = None  # why the clause reader's statement was refused
        if not uses_definitions(self.context):
            try:
                linked = compose(self.context, read_clauses(self.context))
            except (Decline, LinkError):
                linked = None
            if linked is not None:
                try:
                    self._check(self.context, linked.sql)
                except LinkError as exc:
                    checked = exc
                else:
                    if self.context.meanings:  # say every word linked by meaning
                        read = "; ".join(m.text() for m in self.context.meanings)
                        linked = replace(linked, explanation=f"{linked.explanation} Read {read}.")
                    return linked
            self.context.applied[:] = applied  # the terms expanded when it was read
            self.context.known.clear()
        try:
            linked = link_question(self.context)
        except LinkError:
            # a season no reading placed: its months are unsaid (``_seasons``)
            tables = self.context.named or self.context.vocab.catalog.tables
            if (season := unsaid_season(self.context.question, tables)) is not None:
                raise LinkError(season) from None
            # a statement the check refused says more than a reading that found none
            if checked is not None:
                raise checked from None
            raise
        self._check(self.context, linked.sql)
        return linked


def _unchecked(ctx: LinkContext, sql: str) -> None:
    """No check: a reading that says a refused statement otherwise checks what it says."""


def uses_definitions(ctx: LinkContext) -> bool:
    """Whether the question leans on business definitions (a glossary term it uses, a
    term expanded, the request's instructions): the clause reader reads no definitions,
    so such a question goes to the reading that applies them."""
    if ctx.applied or ctx.instructions.strip():
        return True
    low = ctx.original.lower()
    return any(
        re.search(rf"\b{re.escape(name.lower())}\b", low)
        for entry in ctx.glossary
        for name in entry.names
        if name
    )


def read_question(
    question: str,
    vocab: Vocabulary,
    today: date,
    glossary: Sequence[GlossaryEntry] = (),
    instructions: str = "",
    *,
    meanings: Sequence[Meaning] = (),
) -> LinkContext:
    """The question read once for every step: defined terms expanded, its content words,
    the tables it names, the words that belong to stored names it uses."""
    entries = (*glossary, *inline_definitions(question))
    applied: list[str] = []
    expanded = expand_terms(vocab, entries, applied, question)
    toks = tokenize(expanded)
    words = tuple(
        stem(p) for t in toks if not t.quoted for p in t.low.split("_") if p and p not in STOP_WORDS
    )
    in_names = frozenset(
        t.low
        for size in (2, 3, 4)
        for i in range(len(toks) - size + 1)
        if " ".join(w.low for w in toks[i : i + size]) in vocab.names
        for t in toks[i : i + size]
    )
    return LinkContext(
        vocab=vocab,
        today=today,
        glossary=entries,
        instructions=instructions,
        original=question,
        question=expanded,
        low=expanded.lower(),
        words=words,
        named=tuple(named_tables(vocab, toks)),
        in_names=in_names,
        applied=applied,
        meanings=tuple(meanings),
        directed=_directed(vocab, expanded, words),
    )


def _directed(vocab: Vocabulary, question: str, words: Sequence[str]) -> JoinGraph | None:
    """The graph this question joins along, where the catalog has parallel references
    that say their direction and the question says exactly one ("how many flights
    arrived at Los Angeles Intl?" joins ``airports`` on ``flights.dest``, not on the
    child's first reference, ``origin``), or references whose names say a role the
    question says ("home matches" joins ``teams`` on ``matches.home_team_id``); None
    otherwise. Both directions said ("from JFK … flew to") is left to the verifier,
    which holds the statement to both."""
    graph = vocab.graph
    if not graph.directed and not graph.parallel:
        return None
    ways = set()
    for _child, parent in graph.directed:
        ways |= question_directions(question, frozenset(vocab.table_words.get(parent, ())))
    if len(ways) == 1:
        graph = graph.toward(ways.pop())
    roles = set()
    for (child, parent), edges in vocab.graph.parallel.items():
        tables = {*vocab.table_words.get(child, ()), *vocab.table_words.get(parent, ())}
        said = [e for e in edges if says_role(role_words(e.child_column, tables), words)]
        if len(said) == 1:
            roles.add((child, said[0].child_column))
    graph = graph.preferring(frozenset(roles))
    return graph if graph is not vocab.graph else None


def link_question(ctx: LinkContext) -> Linked:
    toks = tokenize(ctx.question)
    share = link_share(ctx, toks)
    if share is not None:
        return share
    head, output_text, cond_text = split_output(ctx, ctx.question)
    plan = Plan()
    plan.limit, desc = read_limit(ctx)
    plan.distinct = bool(re.search(r"\b(distinct|unique)\b", ctx.low)) and not re.search(
        r"\b(number|count) of (distinct|unique)\b", ctx.low
    )
    resolved: list[Dim | Measure] = []
    missing: list[str] = []
    for phrase in merge_elliptic(ctx, split_items(output_text)):
        if re.fullmatch(
            r"\s*(?:and\s+)?rounded?\s+(?:off\s+)?to\s+\d\s+decimal(?:\s+places?)?\s*",
            phrase,
            re.I,
        ):
            continue  # formatting, applied to the measures (see _compose)
        got = read_item(ctx, phrase)
        if got is None:
            missing.append(phrase)
        else:
            resolved.extend(got)
    # measures the question asks for before its output list ("what is the average X
    # and number of Y per Z? Return the top 5 Z ...")
    if head:
        pieces = []
        for phrase in split_items(head):
            pieces += [phrase, *re.findall(r"\bby\s+(.+)$", phrase)]
        for phrase in pieces:
            cleaned = clean_item(phrase).lower()
            if re.search(r"[/*]|\s-\s", cleaned):
                m = read_arith(ctx, cleaned)
            else:
                m = read_measure(ctx, cleaned)
            if m is None or any(isinstance(r, Measure) and same_measure(r, m) for r in resolved):
                continue
            for i, r in enumerate(resolved):
                if isinstance(r, Measure) and refines(m, r) and fits_phrase(ctx, m, r):
                    resolved[i] = m  # "average drug amount per treatment" says which
                    break
            else:
                resolved.append(m)
    resolved = _summed_in_total(ctx, resolved)
    if any(isinstance(r, Measure) and r.func == "COUNT" and r.table for r in resolved):
        # "the total count" after "the number of sessions": one count, not two
        resolved = [r for r in resolved if not bare_count(r)]
    for phrase in list(missing):
        generic = set(re.findall(r"[a-z]+", phrase.lower())) <= RESULT_WORDS
        if is_covered(ctx, phrase, resolved) or (generic and resolved):
            missing.remove(phrase)
    if missing:
        raise LinkError(f"nothing in the schema matches {missing[0]!r}", phrase=missing[0])
    if not resolved:
        raise LinkError(
            "the question names no column or table of this database", phrase=ctx.original
        )
    for r in resolved:
        if isinstance(r, Dim):
            if not any(d.col.key == r.col.key and d.grain == r.grain for d in plan.dims):
                plan.dims.append(r)
        else:
            plan.measures.append(r)
    for d in plan.dims:
        if d.pending:
            chosen = date_column(ctx, Plan(measures=plan.measures))
            if chosen is None:
                raise LinkError(f"no date column to group by {d.grain}")
            d.col, d.pending = chosen, False
    day_kinds(ctx, plan)
    link_groups(ctx, plan)
    link_ordering(ctx, plan, desc)
    link_conditions(ctx, plan, cond_text or ctx.question, toks)
    link_semi(ctx, plan, cond_text)
    return compose(ctx, plan)


def _summed_in_total(ctx: LinkContext, resolved: list[Dim | Measure]) -> list[Dim | Measure]:
    """ "How much did visitors spend in total?": the one quantity the question names,
    added up. Its words may spell the column ("spend … total" → ``total_spent``), which
    leaves no aggregate word over: without this the values would be listed, and the
    verifier refuses a listing for "in total"."""
    if not re.search(r"\bin total\b", ctx.low) or any(isinstance(r, Measure) for r in resolved):
        return resolved
    if len(resolved) != 1:
        return resolved
    only = resolved[0]
    assert isinstance(only, Dim)
    if only.grain or not is_number(only.col.column.data_type) or is_key(only.col):
        return resolved
    # the tables the question names come along ("spend at the museums": per visit of one)
    named = tuple(t for t in ctx.named if t is not only.col.table)
    return [Measure("SUM", col=only.col, label=f"total {only.col.column.name}", tables=named)]


# How a question is read once more, the linker in hand: the statement, or None where the
# reading does not apply or is refused (the next is tried), or a LinkError that refuses
# the question outright.
Reading = Callable[[QuestionLinker], Linked | None]

# Tried in this order before the question as asked: the first that links is the answer.
BEFORE_AS_ASKED: tuple[Reading, ...] = (
    QuestionLinker._read_listed_bare,
    QuestionLinker._read_lateness,
    QuestionLinker._read_attribute,
    QuestionLinker._read_listed_by,
)

# Tried in this order once the question as asked is refused: the first that links is the
# answer; when none does, the refusal as asked stands. A new reading is one line here.
# The order is pinned, with why each neighbour sits where it does, by
# tests/unit/sql/test_sql_reading_order.py: a reading added or moved changes it there too.
AFTER_REFUSAL: tuple[Reading, ...] = (
    QuestionLinker._read_self_joined,
    QuestionLinker._read_converted,
    QuestionLinker._read_led,
    QuestionLinker._read_rephrased,
    QuestionLinker._read_apart,
    QuestionLinker._read_agent,
    QuestionLinker._read_gradable,
    QuestionLinker._read_agent_table,
    QuestionLinker._read_how_much,
    QuestionLinker._read_event,
)
