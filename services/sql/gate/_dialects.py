"""The read-only gate for a file warehouse (SQLite, DuckDB): the statement the Postgres
gate accepted, written in the engine's dialect, and checked again in that dialect.

Every statement is generated, linked and gated in Postgres's dialect first (the linker,
the verifier and the offline generator are unchanged); :func:`to_dialect` transpiles the
gated text with sqlglot, and :class:`DialectGate` parses what will actually run with the
engine's own grammar and applies the gate's rules there: one statement, a query at the
root, no SELECT INTO or locking clause, every table a catalog table or a CTE (DuckDB
reads ``FROM 'file.csv'`` as a table), no system table, no function the engine can reach
the outside world with (SQLite: ``load_extension``, ``readfile``, ``writefile``, the
``pragma_*`` table functions; DuckDB: ``read_csv``, ``read_parquet``, ``glob``,
``getenv``, ``query``, ``duckdb_*``, …), and any function sqlglot does not know by a
node of its own on the allow-list. A transpile that produces something the dialect
gate refuses is refused, never run. The connection-level layers (``targets``) stand
behind it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError

from services.sql.gate._gate import ALLOWED_FUNCTIONS, STATEMENT_KINDS, GateRule, Violation
from services.sql.gate._parsing import parse_statements
from services.sql.tree import ident, scoped_tables


class Dialect(enum.Enum):
    """A file warehouse's engine, by its sqlglot dialect name."""

    SQLITE = "sqlite"
    DUCKDB = "duckdb"
    MYSQL = "mysql"


# Functions sqlglot writes for the Postgres allow-list in each dialect, and plain
# read-only functions of each engine a statement may call by name.
_ENGINE_FUNCTIONS: dict[Dialect, frozenset[str]] = {
    Dialect.SQLITE: frozenset(
        {
            "strftime", "date", "datetime", "julianday", "time", "unixepoch", "group_concat",
            "ifnull", "iif", "instr", "printf", "total", "typeof", "char", "hex", "unicode",
            "likely", "unlikely", "nullif", "substr", "glob_match", "round", "random", "quote",
        }
    ),
    Dialect.DUCKDB: frozenset(
        {
            "listagg", "list", "string_agg", "date_diff", "datediff", "date_add", "date_sub",
            "strftime", "strptime", "epoch", "epoch_ms", "to_timestamp", "make_date",
            "dayofweek", "dayofyear", "weekofyear", "year", "month", "day", "quarter",
            "week", "hour", "minute", "second", "str_split", "string_split", "list_value",
            "ifnull", "if", "nullif", "contains", "prefix", "suffix", "levenshtein",
            "median", "quantile_cont", "quantile_disc", "arg_max", "arg_min", "bool_and",
            "bool_or", "count_if", "array_length", "len", "list_contains", "regexp_full_match",
            "regexp_extract", "strip_accents", "lcase", "ucase", "to_days", "to_months",
            "to_years", "to_hours", "to_minutes", "to_seconds", "isodow", "isoyear", "century",
            "struct_pack", "epoch_us", "last_day", "monthname", "dayname", "time_bucket",
            "try_cast", "typeof", "round_even", "fdiv", "fmod", "trunc", "signbit",
        }
    ),
    Dialect.MYSQL: frozenset(
        {
            "date_format", "date_add", "date_sub", "datediff", "timestampdiff", "timestampadd",
            "str_to_date", "year", "month", "day", "dayofweek", "dayofmonth", "dayofyear",
            "week", "weekday", "quarter", "hour", "minute", "second", "last_day", "curdate",
            "now", "group_concat", "ifnull", "if", "instr", "locate", "char_length",
            "truncate", "stddev", "std", "variance", "from_days", "to_days", "makedate",
            "unix_timestamp", "from_unixtime", "convert_tz", "json_extract", "json_unquote",
            "regexp_substr", "regexp_instr", "concat", "mid", "lcase", "ucase", "space",
            "field", "elt", "bit_count", "log2", "rand", "time_to_sec", "sec_to_time", "quote",
        }
    ),
}  # fmt: skip

# What each engine can reach files, the network, settings or the process with: refused
# by name wherever they stand (a call, a table function, a schema-qualified name).
DANGEROUS_FUNCTIONS: dict[Dialect, frozenset[str]] = {
    Dialect.SQLITE: frozenset(
        {
            "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile",
            "sqlar_compress", "sqlar_uncompress", "fsdir", "sqlite_dbpage", "dbstat",
            "sqlite_compileoption_get", "sqlite_compileoption_used", "sqlite_offset",
            "sqlite_source_id", "sqlite_version", "randomblob", "zeroblob", "sqlite_sleep",
            "json_each", "json_tree", "generate_series", "sqlite_stmt", "pragma",
        }
    ),
    Dialect.DUCKDB: frozenset(
        {
            "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json",
            "read_json_auto", "read_json_objects", "read_ndjson", "read_ndjson_auto",
            "read_ndjson_objects", "read_text", "read_blob", "read_xlsx", "glob", "getenv",
            "current_setting", "query", "query_table", "sniff_csv", "parquet_metadata",
            "parquet_schema", "parquet_file_metadata", "parquet_kv_metadata", "iceberg_scan",
            "delta_scan", "sqlite_scan", "postgres_scan", "mysql_scan", "httpfs", "load",
            "install", "pragma", "which_secret", "duckdb_secrets", "duckdb_settings",
            "duckdb_extensions", "duckdb_databases", "duckdb_tables", "duckdb_columns",
            "duckdb_functions", "duckdb_views", "duckdb_schemas", "duckdb_constraints",
            "duckdb_dependencies", "duckdb_indexes", "duckdb_keywords", "duckdb_memory",
            "duckdb_temporary_files", "duckdb_types", "duckdb_optimizers", "duckdb_sequences",
            "duckdb_variables", "getvariable", "current_database", "current_schema",
            "version", "pragma_version", "pragma_database_size", "pragma_storage_info",
            "pragma_table_info", "pragma_show", "pragma_metadata_info", "repeat_row",
            "range", "sleep_ms", "checkpoint", "force_checkpoint",
            "read_duckdb", "export_database", "import_database", "summary", "test_all_types",
            "from_json", "json_execute_serialized_sql", "tpch", "tpcds", "dbgen", "dsdgen",
        }
    ),
    Dialect.MYSQL: frozenset(
        {
            "load_file", "sleep", "benchmark", "get_lock", "release_lock", "release_all_locks",
            "is_free_lock", "is_used_lock", "master_pos_wait", "source_pos_wait",
            "master_gtid_wait", "sys_exec", "sys_eval", "user", "current_user", "session_user",
            "system_user", "version", "database", "schema", "connection_id", "last_insert_id",
            "found_rows", "row_count", "uuid", "uuid_short", "get_format", "load_data",
            "column_get", "column_json", "sha2", "encrypt", "des_encrypt", "aes_encrypt",
            "aes_decrypt", "password", "old_password", "name_const", "extractvalue",
            "updatexml", "geometrycollection", "polygon", "multipoint", "linestring",
            "multilinestring", "multipolygon", "exp",
        }
    ),
}  # fmt: skip

# Tables that describe the database rather than hold its data.
_SYSTEM_TABLE = {
    Dialect.SQLITE: re.compile(r"^(sqlite_|pragma_)", re.IGNORECASE),
    Dialect.DUCKDB: re.compile(r"^(duckdb_|pragma_|pg_|sqlite_)", re.IGNORECASE),
    Dialect.MYSQL: re.compile(r"^(innodb_|pg_)", re.IGNORECASE),
}
_SYSTEM_SCHEMAS = frozenset(
    {
        "information_schema", "pg_catalog", "temp", "system", "sqlite_temp", "mysql",
        "performance_schema", "sys",
    }
)  # fmt: skip
# MySQL runs the text of a comment opened with ``/*!`` (``/*M!`` on MariaDB): sqlglot reads
# a comment. No executed text is allowed to hold one.
_EXECUTABLE_COMMENT = re.compile(r"/\*M?!", re.IGNORECASE)

# The Postgres gate's statement kinds, and those only other engines parse.
_STATEMENTS: tuple[type[exp.Expr], ...] = (
    *STATEMENT_KINDS,
    *(
        cls
        for cls in (getattr(exp, name, None) for name in ("Attach", "Detach", "Install", "Export"))
        if cls is not None
    ),
)
_CALL_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_$]*)\s*\(")
_LEADING_WORD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_$]*)")
_OPERATORS: tuple[type[exp.Expr], ...] = tuple(
    cls
    for cls in (
        getattr(exp, name, None)
        for name in (
            "And", "Or", "Xor", "Case", "If", "Array", "RegexpLike", "RegexpILike", "Any",
            "All", "Interval", "Bracket", "Paren", "CurrentDate", "CurrentTimestamp",
            "CurrentTime", "Localtimestamp", "Localtime", "JSONExtract", "JSONExtractScalar",
        )
    )
    if cls is not None
)  # fmt: skip


def to_dialect(
    text: str, dialect: Dialect, column_type: Callable[[str], str | None] | None = None
) -> str:
    """``text`` (Postgres, already gated) written in ``dialect``: SQLite has no ILIKE,
    ``date_trunc``, ``EXTRACT`` or intervals, so those are rewritten into its
    ``LOWER() LIKE``, ``DATE(x, 'start of month')``, ``strftime`` and date modifiers;
    DuckDB reads most Postgres as written. ``column_type`` (a column's catalog type by
    name, when the catalog knows one) lets a date column keep Postgres's date arithmetic
    and ``date_trunc``'s timestamp. Raises sqlglot's errors when it cannot."""
    tree = parse_statements(text)[0]
    _name_outputs(tree)
    typed = column_type or (lambda name: None)

    def is_date(node: exp.Expr) -> bool:
        return isinstance(node, exp.Column) and typed(node.name) == "date"

    if dialect is not Dialect.DUCKDB:
        tree = tree.transform(_distinct_rows)
    if dialect is Dialect.SQLITE:
        tree = tree.transform(lambda node: _sqlite_truncated_dates(node, is_date))
        tree = tree.transform(lambda node: _sqlite_dates(node, is_date))
    elif dialect is Dialect.MYSQL:
        tree = tree.transform(lambda node: _mysql_zoned(node, is_date))
        tree = tree.transform(_mysql_dates).transform(_mysql_forms)
    else:
        tree = tree.transform(lambda node: _duckdb_dates(node, is_date))
    return tree.sql(dialect=dialect.value, comments=False)


_MYSQL_TRUNC = {
    "YEAR": "%Y-01-01 00:00:00",
    "MONTH": "%Y-%m-01 00:00:00",
    "DAY": "%Y-%m-%d 00:00:00",
    "HOUR": "%Y-%m-%d %H:00:00",
    "MINUTE": "%Y-%m-%d %H:%i:00",
}
_MYSQL_PARTS = {"DOW": ("DAYOFWEEK", -1), "ISODOW": ("WEEKDAY", 1), "DOY": ("DAYOFYEAR", 0)}


def _datetime(value: exp.Expr) -> exp.Expr:
    return exp.cast(value, "DATETIME")


def _distinct_rows(node: exp.Expr) -> exp.Expr:
    """``count(DISTINCT (a, b))`` (distinct row values, NULL fields included) where rows
    cannot be counted: each row as the text of its quoted fields, which is one text per
    row value (``quote`` writes NULL as NULL and a string in quotes)."""
    if not isinstance(node, exp.Count) or not isinstance(node.this, exp.Distinct):
        return node
    values = node.this.expressions
    if len(values) != 1 or not isinstance(values[0], exp.Tuple):
        return node
    parts: list[exp.Expr] = []
    for index, field in enumerate(values[0].expressions):
        if index:
            parts.append(exp.Literal.string(","))
        parts.append(_call("QUOTE", field.copy()))
    row = exp.Concat(expressions=parts)
    return exp.Count(this=exp.Distinct(expressions=[row]))


def _mysql_zoned(node: exp.Expr, is_date: Callable[[exp.Expr], bool]) -> exp.Expr:
    """Postgres truncates a date to a ``timestamptz`` (UTC); MySQL has no such type, so
    the value carries its offset as text, read back as the instant it is (``targets``)."""
    if isinstance(node, exp.DateTrunc | exp.TimestampTrunc) and is_date(node.this):
        text = exp.cast(node.copy(), "CHAR")
        return _call("CONCAT", text, exp.Literal.string("+00:00"))
    return node


def _mysql_dates(node: exp.Expr) -> exp.Expr:
    """``date_trunc`` and the EXTRACT fields MySQL lacks, as MySQL computes them."""
    if isinstance(node, exp.DateTrunc | exp.TimestampTrunc):
        value, unit = node.this.copy(), _unit(node)
        if unit in _MYSQL_TRUNC:
            formatted = _call("DATE_FORMAT", value, exp.Literal.string(_MYSQL_TRUNC[unit]))
            return _datetime(formatted)
        if unit == "WEEK":  # Monday, as Postgres
            weekday = _call("WEEKDAY", value.copy())
            start = _call(
                "DATE_SUB", _call("DATE", value), exp.Interval(this=weekday, unit=exp.var("DAY"))
            )
            return _datetime(start)
        if unit == "QUARTER":
            first = _call("MAKEDATE", _call("YEAR", value.copy()), exp.Literal.number(1))
            months = exp.Mul(
                this=exp.Paren(
                    this=exp.Sub(this=_call("QUARTER", value), expression=exp.Literal.number(1))
                ),
                expression=exp.Literal.number(3),
            )
            return _datetime(
                _call("DATE_ADD", first, exp.Interval(this=months, unit=exp.var("MONTH")))
            )
        return node
    if isinstance(node, exp.Extract):
        part = node.this.name.upper() if isinstance(node.this, exp.Expr) else str(node.this).upper()
        if part == "EPOCH":
            return _call("UNIX_TIMESTAMP", node.expression.copy())
        if part in _MYSQL_PARTS:
            function, shift = _MYSQL_PARTS[part]
            called = _call(function, node.expression.copy())
            if not shift:
                return called
            return exp.Paren(this=exp.Add(this=called, expression=exp.Literal.number(shift)))
    return node


def _mysql_forms(node: exp.Expr) -> exp.Expr:
    """What MySQL lacks: an aggregate's FILTER becomes a CASE inside it (NULLs are not
    aggregated), and a bare NUMERIC cast keeps its fraction (MySQL's DECIMAL is
    DECIMAL(10, 0))."""
    if isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc):
        condition = node.expression.this if isinstance(node.expression, exp.Where) else None
        if condition is None:
            return node
        agg = node.this.copy()
        inner = agg.this
        distinct = isinstance(inner, exp.Distinct) and len(inner.expressions) == 1
        if distinct:
            inner = inner.expressions[0]
        value = exp.Literal.number(1) if inner is None or isinstance(inner, exp.Star) else inner
        case = exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())])
        agg.set("this", exp.Distinct(expressions=[case]) if distinct else case)
        return agg
    if (
        isinstance(node, exp.DataType)
        and node.this == exp.DataType.Type.DECIMAL
        and not node.expressions
    ):
        return exp.DataType.build("DECIMAL(65, 30)")
    return node


def _duckdb_dates(node: exp.Expr, is_date: Callable[[exp.Expr], bool]) -> exp.Expr:
    """DuckDB truncates a date to a date; Postgres to a ``timestamptz`` (in the session's
    UTC), which DuckDB builds from the epoch without its time-zone extension. And a bare
    NUMERIC cast keeps its fraction (DuckDB's DECIMAL is DECIMAL(18, 3))."""
    if isinstance(node, exp.DateTrunc | exp.TimestampTrunc) and is_date(node.this):
        return _call("TO_TIMESTAMP", _call("EPOCH", node.copy()))
    if (
        isinstance(node, exp.DataType)
        and node.this == exp.DataType.Type.DECIMAL
        and not node.expressions
    ):
        return exp.DataType.build("DECIMAL(38, 10)")
    return node


def _name_outputs(tree: exp.Expr) -> None:
    """Give each unnamed output column the name Postgres would (``count``, ``sum``,
    ``?column?``): results, charts and citations read the same on every engine."""
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return
    for index, item in enumerate(list(select.expressions)):
        if isinstance(item, exp.Alias | exp.Star | exp.Column):
            continue
        inner = item
        while isinstance(inner, exp.Cast | exp.Paren | exp.Filter | exp.Window):
            inner = inner.this
        if isinstance(inner, exp.Column):
            name = inner.name
        elif isinstance(inner, exp.Case):
            name = "case"
        elif isinstance(inner, exp.Func):
            generated = inner.sql(dialect="postgres", comments=False)
            match = _CALL_NAME.match(generated) or _LEADING_WORD.match(generated)
            name = match.group(1).lower() if match else "?column?"
        else:
            name = "?column?"
        select.expressions[index] = exp.alias_(item, exp.to_identifier(name, quoted=True))


_SQLITE_TRUNC = {
    "YEAR": ("start of year",),
    "MONTH": ("start of month",),
    "DAY": ("start of day",),
    "WEEK": ("start of day", "-6 days", "weekday 1"),  # Postgres weeks start on Monday
}
_SQLITE_PARTS = {
    "YEAR": "%Y", "MONTH": "%m", "DAY": "%d", "HOUR": "%H", "MINUTE": "%M", "SECOND": "%S",
    "DOW": "%w", "DOY": "%j", "EPOCH": "%s", "WEEK": "%W",
}  # fmt: skip
_INTERVAL_UNITS = {
    "YEAR": "years", "YEARS": "years", "MONTH": "months", "MONTHS": "months",
    "DAY": "days", "DAYS": "days", "WEEK": "weeks", "WEEKS": "weeks", "HOUR": "hours",
    "HOURS": "hours", "MINUTE": "minutes", "MINUTES": "minutes", "SECOND": "seconds",
    "SECONDS": "seconds",
}  # fmt: skip


def _unit(node: exp.Expr) -> str:
    unit = node.args.get("unit")
    if unit is None:
        return ""
    return (unit.name if isinstance(unit, exp.Expr) else str(unit)).upper()


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _sqlite_truncated_dates(node: exp.Expr, is_date: Callable[[exp.Expr], bool]) -> exp.Expr:
    """Postgres truncates a date as a ``timestamptz`` (in the session's UTC): the
    truncated value carries its offset on SQLite too."""
    if isinstance(node, exp.DateTrunc | exp.TimestampTrunc) and is_date(node.this):
        return exp.DPipe(this=node.copy(), expression=exp.Literal.string("+00:00"))
    return node


def _sqlite_dates(node: exp.Expr, is_date: Callable[[exp.Expr], bool]) -> exp.Expr:
    """One Postgres date construct as SQLite computes it (dates are ISO text there)."""
    if isinstance(node, exp.DateTrunc | exp.TimestampTrunc):
        # Postgres's date_trunc gives a timestamp, whatever it was given
        value = node.this.copy()
        if _unit(node) == "QUARTER":
            month = exp.cast(_call("STRFTIME", exp.Literal.string("%m"), value), "INT")
            back = exp.Mod(
                this=exp.Paren(this=exp.Sub(this=month, expression=exp.Literal.number(1))),
                expression=exp.Literal.number(3),
            )
            shift = _call("PRINTF", exp.Literal.string("-%d months"), back)
            return _call("DATETIME", value.copy(), exp.Literal.string("start of month"), shift)
        modifiers = _SQLITE_TRUNC.get(_unit(node))
        if modifiers is None:
            return node
        return _call("DATETIME", value, *(exp.Literal.string(m) for m in modifiers))
    if isinstance(node, exp.Extract):
        part = node.this.name.upper() if isinstance(node.this, exp.Expr) else str(node.this).upper()
        value = node.expression.copy()
        if part == "QUARTER":
            month = exp.cast(_call("STRFTIME", exp.Literal.string("%m"), value), "INT")
            return exp.Paren(
                this=exp.Div(
                    this=exp.Add(this=month, expression=exp.Literal.number(2)),
                    expression=exp.Literal.number(3),
                )
            )
        fmt = _SQLITE_PARTS.get(part)
        if fmt is None:
            return node
        return exp.cast(_call("STRFTIME", exp.Literal.string(fmt), value), "INT")
    if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
        modifier = _interval_modifier(node.expression, negative=isinstance(node, exp.Sub))
        if modifier is not None:
            return _call("DATETIME", node.this.copy(), exp.Literal.string(modifier))
    if (
        isinstance(node, exp.Add | exp.Sub)
        and isinstance(node.this, exp.CurrentDate)
        and isinstance(node.expression, exp.Literal)
        and not node.expression.is_string
    ):
        days = int(float(node.expression.this)) * (-1 if isinstance(node, exp.Sub) else 1)
        return _call("DATE", exp.Literal.string("now"), exp.Literal.string(f"{days:+d} days"))
    if (
        isinstance(node, exp.Add | exp.Sub)
        and is_date(node.this)
        and isinstance(node.expression, exp.Literal)
        and not node.expression.is_string
    ):
        # a date plus or minus a number of days is a date in Postgres
        days = int(float(node.expression.this)) * (-1 if isinstance(node, exp.Sub) else 1)
        return _call("DATE", node.this.copy(), exp.Literal.string(f"{days:+d} days"))
    return node


def _interval_modifier(interval: exp.Interval, *, negative: bool) -> str | None:
    """``INTERVAL '30 days'`` as SQLite's modifier ``-30 days`` (None when not simple)."""
    raw = interval.this.name if isinstance(interval.this, exp.Literal) else ""
    unit = _unit(interval)
    parts = raw.split()
    if len(parts) == 2 and not unit:
        raw, unit = parts[0], parts[1].upper()
    try:
        amount = float(raw)
    except ValueError:
        return None
    name = _INTERVAL_UNITS.get(unit)
    if name is None:
        return None
    amount = -amount if negative else amount
    shown = int(amount) if amount == int(amount) else amount
    return f"{shown:+} {name}"


class DialectGate:
    """The gate's rules on a statement in an engine's own dialect (pure; no database)."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._allowed = ALLOWED_FUNCTIONS | _ENGINE_FUNCTIONS[dialect]
        self._dangerous = DANGEROUS_FUNCTIONS[dialect]
        self._system = _SYSTEM_TABLE[dialect]

    def check(self, text: str, tables: Iterable[str]) -> tuple[Violation, ...]:
        """Every violation of ``text`` (in this gate's dialect); ``tables`` are the
        qualified catalog tables it may read (those the Postgres gate resolved)."""
        known = {name.lower() for name in tables}
        known |= {name.rpartition(".")[2] for name in list(known)}
        if self.dialect is Dialect.MYSQL and (
            _EXECUTABLE_COMMENT.search(text) or _outside_strings("#", text)
        ):
            # a comment MySQL would run, or one sqlglot may not read as MySQL does
            return (Violation(GateRule.PARSE_ERROR, "statement holds a MySQL comment"),)
        try:
            statements = [
                s
                for s in sqlglot.parse(text, read=self.dialect.value, error_level=ErrorLevel.RAISE)
                if s is not None and not isinstance(s, exp.Semicolon)
            ]
        except (ParseError, TokenError, ValueError, RecursionError):
            return (
                Violation(
                    GateRule.PARSE_ERROR, f"statement does not parse as {self.dialect.value}"
                ),
            )
        if len(statements) != 1:
            return (Violation(GateRule.SINGLE_STATEMENT, "exactly one statement allowed"),)
        tree = statements[0]
        root = tree.unnest() if isinstance(tree, exp.Subquery) else tree
        if not isinstance(root, exp.Select | exp.SetOperation):
            kind = str(root.this).upper() if isinstance(root, exp.Command) else type(root).__name__
            return (Violation(GateRule.QUERY_ROOT, "only a SELECT query may run", kind.upper()),)
        found: dict[tuple[GateRule, str], Violation] = {}

        def add(rule: GateRule, message: str, subject: str = "") -> None:
            found.setdefault((rule, subject), Violation(rule, message, subject))

        for node in tree.walk():
            if isinstance(node, _STATEMENTS) and node is not root:
                add(GateRule.QUERY_ROOT, "only a SELECT query may run", type(node).__name__.upper())
            elif isinstance(node, exp.Into):
                add(GateRule.SELECT_INTO, "SELECT INTO creates a table; not allowed")
            elif isinstance(node, exp.Lock):
                add(GateRule.LOCKING_CLAUSE, "locking clauses not allowed")
            elif isinstance(node, exp.Func):
                self._function(node, add)
            elif isinstance(node, exp.SessionParameter | exp.Parameter):
                # @@version, @@datadir, user variables: the server's state, not the data
                add(GateRule.FUNCTION_NOT_ALLOWED, "server variables may not be read", "@")
        for table, ctes in scoped_tables(tree, frozenset(), into=False):
            self._table(table, ctes, known, add)
        return tuple(found.values())

    def _function(self, node: exp.Func, add: Callable[[GateRule, str, str], None]) -> None:
        if isinstance(node, _OPERATORS):
            return
        if isinstance(node, exp.Anonymous):
            name = (
                ident(node.this) if isinstance(node.this, exp.Identifier) else str(node.this)
            ) or ""
            name = name.lower()
        else:
            generated = node.sql(dialect=self.dialect.value, comments=False)
            match = _CALL_NAME.match(generated) or _LEADING_WORD.match(generated)
            name = match.group(1).lower() if match else type(node).__name__.lower()
        parent = node.parent
        if isinstance(parent, exp.Dot) and parent.expression is node:
            add(
                GateRule.FUNCTION_NOT_ALLOWED,
                "schema-qualified function calls are not allowed",
                name,
            )
        elif name in self._dangerous or type(node).__name__.lower() in self._dangerous:
            add(GateRule.FUNCTION_NOT_ALLOWED, f"{self.dialect.value} function not allowed", name)
        elif isinstance(node, exp.Anonymous) and name not in self._allowed:
            add(GateRule.FUNCTION_NOT_ALLOWED, "function is not on the allow-list", name)

    def _table(
        self,
        node: exp.Table,
        ctes: frozenset[str],
        known: set[str],
        add: Callable[[GateRule, str, str], None],
    ) -> None:
        if not isinstance(node.this, exp.Identifier):
            return  # a table function: checked as a function
        name = ident(node.this) or ""
        schema = ident(node.args.get("db"))
        shown = ".".join(p for p in (ident(node.args.get("catalog")), schema, name) if p)
        if node.args.get("catalog") is not None:
            add(GateRule.UNKNOWN_TABLE, "cross-database references are not allowed", shown)
        elif (schema or "").lower() in _SYSTEM_SCHEMAS or self._system.match(name):
            add(GateRule.SYSTEM_SCHEMA, "system tables may not be read", shown)
        elif schema is None and name in ctes:
            return
        elif (f"{schema}.{name}" if schema else name).lower() not in known:
            add(GateRule.UNKNOWN_TABLE, "table is not in the catalog", shown)


def _outside_strings(char: str, text: str) -> bool:
    """Whether ``char`` occurs in ``text`` outside single-quoted strings and quoted
    identifiers (the forms sqlglot writes)."""
    quote = ""
    for c in text:
        if quote:
            if c == quote:
                quote = ""
        elif c in ("'", "`", '"'):
            quote = c
        elif c == char:
            return True
    return False
