"""A join that only keeps rows, which the question never asks for: "What is the lowest
weight of any player?" answered over ``people`` inner-joined to ``awards_players`` on
``player_id`` is the lowest weight of the players who won an award.

An inner join to a table whose rows refer to the rows read keeps only the rows that have
such a referring row. Where nothing of the joined table is used but the join itself (no
column shown, compared, grouped or ordered), the join does nothing but that; it is what
the question asks only if the question says what the joined table's rows are ("players
with awards"). The words that say it are the table's name less the reference it joins
by (``awards_players`` less ``player_id``: "awards"); a statement whose joined table's
own words no word of the question says is refused. A table that links two others (a
bridge) connects them and is left alone, and so is one whose name says nothing beyond
its references (``has_pet``) — except a bridge that refers to one of them by a reference
of several columns: "the names of the teams that won the World Series" answered through
``salaries``, whose ``(year_id, team_id)`` names a team-season, lists the teams that paid
a player who won an award. Such a bridge relates the two by what its own rows are (a
salary paid), which the question must say."""

from __future__ import annotations

from sqlglot import exp

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._statement import StatementNodes, column_name, joined_to
from services.sql.verify._table_said import question_words, table_said
from services.sql.words import GRAMMAR_WORDS, STOP_WORDS, word_match


def check_unasked_join(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """Refuse (:class:`LinkError`) an inner join to a referring table that is used for
    nothing but keeping rows, which no word of the question asks for."""
    if not isinstance(tree, exp.Select) or ctx.applied or ctx.instructions.strip():
        return
    joins = tree.args.get("joins") or []
    first = tree.args.get("from_")
    if not joins or first is None or not isinstance(first.this, exp.Table):
        return
    if any(j.side or j.kind not in ("", "INNER") or j.args.get("on") is None for j in joins):
        return  # outer joins keep the rows without a match; no ON: not the linker's
    if not all(isinstance(j.this, exp.Table) for j in joins):
        return
    conditions = [j.args["on"] for j in joins]
    inside = {id(c) for on in conditions for c in on.find_all(exp.Column)}
    aliases = [first.this.alias_or_name, *(j.this.alias_or_name for j in joins)]
    words = question_words(ctx)
    for alias in aliases:
        table = nodes.tables.get(alias)
        if table is None:
            continue
        if any(c.table == alias and id(c) not in inside for c in tree.find_all(exp.Column)):
            continue  # shown, compared, grouped or ordered: more than a join
        partners: set[str] = set()
        by: set[str] = set()
        for mine, other in joined_to(alias, conditions):
            found = nodes.table_of(other)
            if found is not None:
                partners.add(found.qualified)
                by.add(column_name(mine))
        if not partners or table.qualified in partners:
            continue  # a self-join relates rows
        if len(partners) > 1 and not any(
            e.child == table.qualified and len(e.child_columns) > 1 and set(e.child_columns) <= by
            for e in ctx.graph.edges_of(table.qualified)
        ):
            continue  # a bridge by single references links two tables: left alone
        refers = all(
            any(
                e.child == table.qualified and e.parent == partner and set(e.child_columns) <= by
                for e in ctx.graph.edges_of(table.qualified)
            )
            for partner in partners
        )
        if not refers:
            continue  # the table is referred to: each row read has its one row there
        reference = [p for c in by for p in ctx.vocab.column_words.get((table.qualified, c), [])]
        own = [
            w
            for w in ctx.vocab.table_words.get(table.qualified, [])
            if len(w) > 2
            and w not in STOP_WORDS
            and w not in GRAMMAR_WORDS
            and not any(word_match(w, r) >= 0.9 or word_match(r, w) >= 0.9 for r in reference)
        ]
        # its own words or a name its comment gives it ("Sales opportunities (deals)")
        if not own or table_said(ctx, table, name=own, least=0.8, stemmed=True, words=words):
            continue
        raise LinkError(
            f"the statement keeps only the rows that have {table.name} rows (an inner join "
            f"used for nothing else); the question says nothing of {' '.join(own)}"
        )
