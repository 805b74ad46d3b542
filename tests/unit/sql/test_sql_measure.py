"""The statement the executor runs to let Postgres measure values before sending them."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from services.sql.gate._execute import OutputColumn, measured_statement

TEXT, INT4, NUMERIC, JSONB, BYTEA = 25, 23, 1700, 3802, 17
STATEMENT = "SELECT a, a, b, c, d FROM t ORDER BY a DESC LIMIT 10 -- a trailing comment"
OUTPUTS = [
    OutputColumn("a", TEXT),
    OutputColumn("a", TEXT),
    OutputColumn("?column?", INT4),
    OutputColumn("c", JSONB),
    OutputColumn("d", BYTEA),
]


def _parsed(text: str) -> exp.Select:
    tree = sqlglot.parse_one(text, read="postgres")
    assert isinstance(tree, exp.Select)
    return tree


def test_the_statement_runs_once_on_lines_of_its_own():
    wrapped = measured_statement(STATEMENT, OUTPUTS, 4096)
    assert wrapped.count(STATEMENT) == 1
    assert f"\n{STATEMENT}\n" in wrapped  # a trailing comment cannot swallow the wrapper


def test_one_column_per_output_then_the_mark():
    top = _parsed(measured_statement(STATEMENT, OUTPUTS, 4096))
    assert len(top.expressions) == len(OUTPUTS) + 1
    assert top.expressions[-1].sql() == "w.tandem_over"
    assert all(isinstance(e, exp.Case) for e in top.expressions[:-1])


def test_sizes_by_type():
    wrapped = measured_statement("SELECT 1", OUTPUTS, 4096)
    # text: the varlena header; bytea: its hex text; jsonb: rendered unless huge when
    # stored; int4: not measured (its text is short), it bounds the rows per fetch.
    assert "pg_catalog.octet_length(q.c1)::pg_catalog.int8" in wrapped
    assert "pg_catalog.octet_length(q.c5)::pg_catalog.int8 * 2 + 2" in wrapped
    assert "pg_catalog.pg_column_size(q.c4) > 8192" in wrapped
    assert "q.c4::pg_catalog.text" in wrapped
    assert "(q.c3)" not in wrapped


def test_a_statement_without_columns_is_only_the_mark():
    top = _parsed(measured_statement("SELECT FROM t", [], 4096))
    assert [e.sql() for e in top.expressions] == ["w.tandem_over"]
