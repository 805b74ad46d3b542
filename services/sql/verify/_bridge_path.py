"""A path through a table the question never names, beside a reference the question does
name: "Which 5 merchants received the highest total amount?" answered over
``transactions → coupons → merchants`` sums, per merchant, the money paid with that
merchant's coupons, not the money the merchant received. The transactions' own
``receiver_id``, which the question's verb names ("received": a receiver), was the
reference meant; no join to it was known (it refers to several tables by turns, a
``receiver_type`` saying which), so the shortest known path went round through coupons.

The shape, in schema terms only: a bridge table ``B`` is joined to two tables and used for
nothing else (no column of it shown, compared, grouped or ordered), the question says
nothing of ``B`` (its name's words), and ``B`` refers to the far table ``F`` by ``F``'s
key. The near table ``N`` has a column the statement leaves unused that

- is named like a reference (its last word ``id``, ``code``, ``key``, ``no``) and is not a
  key of ``N`` itself,
- holds ``F``'s key's type and has no known join to a table other than ``F``,
- is named by a word of the question, as itself or as the verb its agent noun comes from
  ("received" for ``receiver_id``, "sent" for ``sender_id``).

Such a column may hold ``F``'s rows directly, and the question points at it; the path
through ``B`` relates ``N`` and ``F`` by what ``B``'s rows are, which the question never
said. Which of the two is meant cannot be told from names (the column's values may be keys
of several tables), so the statement is refused, naming the word and both paths: right or
refused."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.sql.catalog import TableInfo, type_family
from services.sql.linker import LinkContext, LinkError
from services.sql.verify._statement import StatementNodes, column_name, is_key, joined_to
from services.sql.verify._table_said import table_said
from services.sql.words import lemma, measure_name, name_words, stem, tokenize, word_match

# The last words of a reference's name (``receiver_id``, ``country_code``).
_REFERENCE_ENDINGS = ("id", "code", "key", "no")
# How close a form of a question's word must be to a part of the column's name: a verb
# and its agent noun ("receive" ~ "receiver", "send" ~ "sender") score 0.8.
_NAMED_MIN = 0.8


@dataclass(frozen=True)
class _Side:
    """One table a bridge is joined to: its alias, table, and the columns of the join
    (the bridge's, the side's)."""

    alias: str
    table: TableInfo
    bridge_column: str
    column: str


def check_bridge_beside_reference(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """Refuse (:class:`LinkError`) a statement that reaches a table through a bridge the
    question never names while the question names a reference of the near table that
    may hold the far table's rows directly (see the module's docstring)."""
    if not isinstance(tree, exp.Select) or ctx.applied or ctx.instructions.strip():
        return
    joins = tree.args.get("joins") or []
    first = tree.args.get("from_")
    if len(joins) < 2 or first is None or not isinstance(first.this, exp.Table):
        return
    if any(j.side or j.kind not in ("", "INNER") or j.args.get("on") is None for j in joins):
        return
    if not all(isinstance(j.this, exp.Table) for j in joins):
        return
    conditions = [j.args["on"] for j in joins]
    inside = {id(c) for on in conditions for c in on.find_all(exp.Column)}
    used = {(c.table, column_name(c)) for c in tree.find_all(exp.Column)}
    forms = _question_forms(ctx)
    for alias in [first.this.alias_or_name, *(j.this.alias_or_name for j in joins)]:
        bridge = nodes.tables.get(alias)
        if bridge is None:
            continue
        if any(c.table == alias and id(c) not in inside for c in tree.find_all(exp.Column)):
            continue  # shown, compared, grouped or ordered: more than a bridge
        sides = _sides(alias, conditions, nodes)
        if len(sides) != 2 or len({s.table.qualified for s in sides}) != 2:
            continue
        if bridge.qualified in {s.table.qualified for s in sides}:
            continue
        if table_said(ctx, bridge, stemmed=True):
            continue  # the question names the bridge: the path is what it says
        for far, near in (sides, sides[::-1]):
            if not is_key(far.table, far.column):
                continue  # the bridge does not refer to ``far`` by its key
            found = _named_reference(ctx, near, far, used, forms)
            if found is None:
                continue
            column, word = found
            raise LinkError(
                f"{word!r} names {near.table.name}.{column}, which may refer to "
                f"{far.table.name} itself; the statement reaches {far.table.name} through "
                f"{bridge.name} ({near.table.name}.{near.column} → {bridge.name}."
                f"{near.bridge_column}, {bridge.name}.{far.bridge_column} → "
                f"{far.table.name}.{far.column}), which the question does not name"
            )


def _sides(alias: str, conditions: list[exp.Expr], nodes: StatementNodes) -> list[_Side]:
    """The tables the join conditions tie ``alias`` to, one per other alias."""
    found: dict[str, _Side] = {}
    for mine, other in joined_to(alias, conditions):
        table = nodes.table_of(other)
        if table is None:
            continue
        if other.table in found:
            return []  # joined on several columns: a composite reference, left alone
        found[other.table] = _Side(other.table, table, column_name(mine), column_name(other))
    return list(found.values())


def _question_forms(ctx: LinkContext) -> dict[str, str]:
    """The forms of the question's unquoted words a column's name may be matched with,
    each to the word as said: its stem, its lemma, and for a regular past its verb
    ("received" -> receive)."""
    forms: dict[str, str] = {}
    for token in tokenize(ctx.question):
        if token.quoted or not token.low.isalpha():
            continue
        word = token.low
        for form in (token.stem, stem(word), lemma(word)):
            forms.setdefault(form, word)
        if word.endswith("ed") and len(word) > 4:
            forms.setdefault(word[:-1], word)  # "received" -> receive
            forms.setdefault(word[:-2], word)  # "owned" -> own
    return forms


def _named_reference(
    ctx: LinkContext,
    near: _Side,
    far: _Side,
    used: set[tuple[str, str]],
    forms: dict[str, str],
) -> tuple[str, str] | None:
    """A column of ``near`` the statement leaves unused, named like a reference, of the
    type of ``far``'s key, joined to no other table, that a word of the question names:
    (the column, the word)."""
    key = far.table.column(far.column)
    if key is None:
        return None
    joined_elsewhere = {
        column
        for edge in ctx.graph.edges_of(near.table.qualified, overlap=True)
        if edge.child == near.table.qualified and edge.parent != far.table.qualified
        for column in edge.child_columns
    }
    for column in near.table.columns:
        name = column.name
        parts = name_words(name)
        if (near.alias, name) in used or len(parts) < 2 or parts[-1] not in _REFERENCE_ENDINGS:
            continue
        if name in joined_elsewhere or is_key(near.table, name) or measure_name(name):
            continue
        if type_family(column.data_type) != type_family(key.data_type):
            continue
        own = [p for p in parts[:-1] if len(p) > 2]
        for form, word in forms.items():
            if any(word_match(form, p) >= _NAMED_MIN for p in own):
                return name, word
    return None
