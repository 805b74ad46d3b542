"""The ``values`` check: every literal a statement compares with a text column is a value
that column holds, and every pattern it matches a column against is a word that matches a
row.

A literal no row holds makes a condition that keeps nothing, or (negated) everything: a
fragment of the question taken for a name (``name = 's first name and their dogs'``), a
value said of one table and looked for in another's column, a grammar word turned into a
pattern (``ILIKE '%the%'``). Such a statement answers something nobody asked, however well
it runs.

A value is held when the column holds it with case, surrounding blanks and plural endings
ignored (the catalog's stored-value key). Where the catalog read the column's values the
test is made here; otherwise the database is asked, all such tests of a statement in one
probe of ``EXISTS`` subqueries. A value that is not held is refused naming the columns
that do hold it, when the catalog knows any.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlglot import exp

from services.sql.catalog import TEXT_TYPES, StoredValues, TableInfo
from services.sql.catalog import stored_spelling as held_spelling
from services.sql.verify._statement import StatementNodes, column_name
from services.sql.words import GRAMMAR_WORDS, STOP_WORDS

_PATTERN_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class ValueTest:
    """One literal compared with one column: decided here (``held`` set) or by a probe of
    the database (``probe``: an EXISTS expression in SQL)."""

    table: TableInfo
    column: str
    literal: str
    pattern: bool
    held: bool | None = None
    probe: str = ""
    reason: str = ""  # when decided here and not held
    # Tests of one group are alternatives (the values of an IN list, the branches of an
    # OR): the group passes when one of them is held. 0: a test of its own.
    group: int = 0

    def refusal(self, values: StoredValues) -> str:
        """Why the statement is refused when the literal is not held."""
        if self.reason:
            return self.reason
        where = f"{self.table.name}.{self.column}"
        if self.pattern:
            return f"no value of {where} matches {self.literal!r}"
        said = f"{self.literal!r} is not a value of {where}"
        holders = [
            f"{h.table.name}.{h.column}"
            for h in values.holders(self.literal)
            if (h.table.qualified, h.column) != (self.table.qualified, self.column)
        ]
        if holders:
            return f"{said}; it is a value of {', '.join(dict.fromkeys(holders[:3]))}"
        return said


def value_tests(nodes: StatementNodes) -> list[ValueTest]:
    """The tests of every string literal the statement compares with a text column by
    equality (``=``, ``<>``, ``IN``) or a pattern (``LIKE``, ``ILIKE``)."""
    tests: list[ValueTest] = []
    seen: set[tuple[str, str, str, bool]] = set()
    for literal in nodes.literals:
        compared = literal.parent
        if isinstance(compared, exp.Tuple):
            compared = compared.parent
        pattern = isinstance(compared, exp.Like | exp.ILike)
        if not (pattern or isinstance(compared, exp.EQ | exp.NEQ | exp.In)):
            continue
        column = compared.this if compared is not None else None
        while isinstance(column, exp.Func) and not isinstance(column, exp.Column):
            column = column.this  # lower(status) = 'failed', trim(city) = 'Aberdeen'
        if not isinstance(column, exp.Column):
            continue
        table = nodes.owner(column)
        name = column_name(column)
        info = table.column(name) if table is not None else None
        if table is None or info is None or not info.data_type.startswith(TEXT_TYPES):
            continue
        mark = (table.qualified, name, literal.this, pattern)
        if mark in seen:
            continue
        seen.add(mark)
        test = _test(table, name, literal.this, pattern=pattern)
        if not test.reason:  # a grammar-only pattern is refused wherever it stands
            test = replace(test, group=_alternatives(literal))
        tests.append(test)
    return tests


def _alternatives(literal: exp.Literal) -> int:
    """The group of alternatives the literal is one of: the outermost OR above it, else
    its IN list; 0 when it stands alone."""
    found = 0
    node: exp.Expr | None = literal.parent
    while node is not None and not isinstance(node, exp.Select):
        if isinstance(node, exp.Or) or (isinstance(node, exp.In) and not found):
            found = id(node)
        node = node.parent
    return found


def settled(tests: Sequence[ValueTest], held: Sequence[bool | None]) -> ValueTest | None:
    """The first test that refuses the statement: one that is not held (``held[i]``:
    held, not held, or undecided) and has no held alternative."""
    groups: dict[int, bool] = {}
    for test, answer in zip(tests, held, strict=True):
        if test.group:
            groups[test.group] = groups.get(test.group, False) or answer is not False
    for test, answer in zip(tests, held, strict=True):
        if answer is False and not (test.group and groups[test.group]):
            return test
    return None


def _test(table: TableInfo, column: str, value: str, *, pattern: bool) -> ValueTest:
    info = table.column(column)
    assert info is not None
    if pattern:
        if _grammar_only(value):
            reason = (
                f"the pattern {value!r} on {table.name}.{column} holds no word that names anything"
            )
            return ValueTest(table, column, value, True, held=False, reason=reason)
        condition = f"CAST({_column(column)} AS TEXT) ILIKE {_literal(value)}"
        return ValueTest(table, column, value, True, probe=_exists(table, condition))
    if held_spelling(table, column, value) is not None:
        return ValueTest(table, column, value, False, held=True)
    if info.known_values:
        # the catalog read every value of the column: no need to ask again
        return ValueTest(table, column, value, False, held=False)
    condition = f"lower(btrim(CAST({_column(column)} AS TEXT))) = lower(btrim({_literal(value)}))"
    return ValueTest(table, column, value, False, probe=_exists(table, condition))


def _grammar_only(pattern: str) -> bool:
    """A pattern looking for a word anywhere (``%…%``) whose words are all grammar ("the",
    "of"): a piece of the question's phrasing, not something the question asks to find.
    Letters at the start or end (``J%``, ``%ez``) are what a question about spelling
    asks for, and a single letter anywhere is one too."""
    if not (pattern.startswith("%") and pattern.endswith("%")):
        return False
    words = _PATTERN_WORD.findall(pattern.lower())
    return bool(words) and all(
        len(w) > 1 and (w in STOP_WORDS or w in GRAMMAR_WORDS) for w in words
    )


def _exists(table: TableInfo, condition: str) -> str:
    name = exp.table_(table.name, db=table.schema, quoted=True).sql(dialect="postgres")
    return f"EXISTS (SELECT 1 FROM {name} WHERE {condition})"


def _column(name: str) -> str:
    return exp.column(name, quoted=True).sql(dialect="postgres")


def _literal(value: str) -> str:
    return exp.Literal.string(value).sql(dialect="postgres")
