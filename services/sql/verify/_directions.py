"""The direction the question says, read in the statement: of two references to one
table whose names say which way (``flights.origin``, ``flights.dest``), the statement
reads the one the question's direction says ("arrived at", "to Denver"), and both
where it says both ("from JFK … flew to"); where it says none, neither is picked for it
(the statement that joins on one is refused naming both)."""

from __future__ import annotations

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._facts import StatementFacts
from services.sql.words import question_directions, role_words, says_role


def check_directions(ctx: LinkContext, facts: StatementFacts) -> None:
    """ "How many flights arrived at Los Angeles Intl?" joined to ``airports`` on
    ``flights.origin`` counts the departures: where a table has two references to one
    table whose names say which way (``origin``/``dest``, ``sourceairport``/
    ``destairport``), the references the statement reads must be those the question's
    direction says: the one it says, or both when it says both. A question that says no
    direction joins along neither by default: a statement that joins the referenced
    table on one of the two is refused naming both ("the airports with flights by
    JetBlue" are the airports flown from or those flown to; the words do not say)."""
    for (child, parent), edges in ctx.graph.directed.items():
        used = {way for way, e in edges.items() if (child, e.child_column) in facts.columns}
        if not used:
            continue
        said = question_directions(ctx.question, frozenset(ctx.vocab.table_words.get(parent, ())))
        if not said and len(used) == 1 and parent in facts.tables:
            name = child.rsplit(".", 1)[-1]
            both = " or ".join(f"{name}.{e.child_column}" for _, e in sorted(edges.items()))
            raise LinkError(
                f"{parent.rsplit('.', 1)[-1]} is reached from {name} by two references and "
                f"the question does not say which: {both}?"
            )
        missing = said - used
        if missing and (said != {"from", "to"} or len(used) < 2):
            name = child.rsplit(".", 1)[-1]
            wanted = ", ".join(f"{name}.{edges[w].child_column}" for w in sorted(missing))
            read = ", ".join(f"{name}.{edges[w].child_column}" for w in sorted(used))
            raise LinkError(
                f"the question says where {' and '.join(sorted(said))}: {wanted}; the "
                f"statement reads {read}"
            )


def check_roles(ctx: LinkContext, facts: StatementFacts) -> None:
    """ "How many matches did each team play?" joined to ``teams`` on
    ``matches.home_team_id`` counts the home games only: where a table has several
    references to one table whose names say no direction (home/away, employee/manager,
    a friend's two students), the one the statement joins on must be said by the
    question: the words its own name adds to the tables' ("home", "manager"), or a verb
    whose agent it names ("managed" for ``manager_id``). Said another's words, or none,
    the statement is refused naming the references. One default stands, from the
    table's own grammar: a table named for a relation whose one reference carries the
    relation's name (``friend.friend_id``, ``likes.liked_id``) records that relation of
    its other reference, the row's subject ("the friends of each student")."""
    words = frozenset(ctx.words)
    for (child, parent), edges in ctx.graph.parallel.items():
        used = [e for e in edges if (child, e.child_column) in facts.columns]
        if len(used) != 1 or parent not in facts.tables:
            continue
        parents = ctx.vocab.table_words.get(parent, ())
        tables = {*ctx.vocab.table_words.get(child, ()), *parents}
        own = {e.child_column: role_words(e.child_column, tables) for e in edges}
        said = [e for e in edges if says_role(own[e.child_column], words)]
        if used[0] in said:
            continue
        name = child.rsplit(".", 1)[-1]
        if said:
            wanted = ", ".join(f"{name}.{e.child_column}" for e in said)
            raise LinkError(
                f"the question names {wanted}; the statement reads {name}.{used[0].child_column}"
            )
        # the relation's object: a reference named by the child table alone
        named = [
            e for e in edges if not own[e.child_column] and role_words(e.child_column, parents)
        ]
        if len(edges) == 2 and len(named) == 1 and used[0] is not named[0]:
            continue  # the relation's subject: its other reference carries the table's name
        both = " or ".join(f"{name}.{e.child_column}" for e in edges)
        raise LinkError(
            f"{parent.rsplit('.', 1)[-1]} is reached from {name} by {len(edges)} references "
            f"and the question does not say which: {both}?"
        )
