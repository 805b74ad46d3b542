"""The read-only gate, first layer: a parse of the statement, not a keyword regex.

The statement is parsed with sqlglot (Postgres dialect) and the tree is checked: one
statement; the root is a query; no data-modifying CTE, SELECT INTO or locking clause;
every function and every cast type on an allow-list; every table known to the catalog;
no system schema. Column names such as ``deleted_at`` or ``comment`` and functions such
as ``replace()`` are just names in the tree, so they pass.

What the database later runs is not the caller's text but the statement regenerated
from the checked tree (comments dropped, tables schema-qualified), and that text is
parsed and checked again: a parser differential between sqlglot and Postgres cannot
smuggle anything the tree did not show. The other direction (sqlglot accepting text
Postgres would refuse, such as ``WHERE id = 1 ,``, and "repairing" it) is closed at
execution: Postgres must accept the caller's own text (``Verdict.source_sql``) before the
regenerated one runs (see ``_execute``).
"""

from __future__ import annotations

import enum
import logging
import re
from dataclasses import dataclass
from typing import Protocol

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from services.common import current_principal
from services.common.spans import fingerprint_tree
from services.sql.access import enforce, view_key
from services.sql.catalog import TableInfo
from services.sql.gate._names import identifier
from services.sql.gate._parsing import parse_statements
from services.sql.gate._scope import memo_scope
from services.sql.gate._sizes import BuiltValues
from services.sql.tree import ident, scoped_tables

DEFAULT_MAX_SQL_CHARS = 20_000
# The largest value a statement may build (see ``_sizes``): the default result-size cap.
DEFAULT_MAX_BUILT_CHARS = 1_048_576


class GateRule(enum.Enum):
    """The gate's rules; values match ``tandem.v1.SqlGateRule``."""

    PARSE_ERROR = 1
    SINGLE_STATEMENT = 2
    QUERY_ROOT = 3
    DATA_MODIFYING_CTE = 4
    SELECT_INTO = 5
    LOCKING_CLAUSE = 6
    FUNCTION_NOT_ALLOWED = 7
    UNKNOWN_TABLE = 8
    SYSTEM_SCHEMA = 9
    STATEMENT_TOO_LONG = 10
    VALUE_TOO_LARGE = 11
    ACCESS_DENIED = 12

    @property
    def wire_name(self) -> str:
        """The SqlGateRule value name, e.g. ``SQL_GATE_RULE_UNKNOWN_TABLE``."""
        return f"SQL_GATE_RULE_{self.name}"


@dataclass(frozen=True)
class Violation:
    """One reason the gate refused a statement; ``subject`` is an identifier, never a literal."""

    rule: GateRule
    message: str
    subject: str = ""


@dataclass(frozen=True)
class Verdict:
    """The gate's answer for one statement."""

    violations: tuple[Violation, ...]
    normalized_sql: str
    tables_used: tuple[str, ...]
    fingerprint: str
    # The caller's text and the schemas its tables live in: Postgres must accept that
    # text (parsed and analysed, never run) before ``normalized_sql`` may run.
    source_sql: str = ""
    source_schemas: tuple[str, ...] = ()
    # For a principal (``services.sql.access``): the principal it was checked for (its
    # canonical form; "" for the full view), the statement with the view's row filters
    # and hidden columns that runs instead of ``normalized_sql`` ("" when it is the same),
    # and the database role it runs as (role mode). ``normalized_sql`` stays the
    # statement as asked: what answers show, pairs store and follow-ups build on.
    view: str = ""
    executed_sql: str = ""
    role: str = ""

    @property
    def valid(self) -> bool:
        return not self.violations

    @property
    def first_rule(self) -> GateRule | None:
        return self.violations[0].rule if self.violations else None


class TableResolver(Protocol):
    """What the gate needs from the catalog: exact-name table lookup."""

    def resolve(self, schema: str | None, name: str) -> TableInfo | None: ...


# Postgres functions a read-only analytical query may call, by the name Postgres sees.
ALLOWED_FUNCTIONS = frozenset(
    {
        # aggregates
        "count", "sum", "avg", "min", "max", "stddev", "stddev_samp", "stddev_pop",
        "variance", "var_samp", "var_pop", "corr", "covar_pop", "covar_samp", "regr_slope",
        "regr_intercept", "regr_r2", "regr_count", "regr_avgx", "regr_avgy", "array_agg",
        "string_agg", "bool_and", "bool_or", "every", "json_agg", "jsonb_agg",
        "json_object_agg", "jsonb_object_agg", "percentile_cont", "percentile_disc", "mode",
        "bit_and", "bit_or",
        # window functions
        "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag",
        "lead", "first_value", "last_value", "nth_value",
        # strings
        "lower", "upper", "length", "char_length", "character_length", "octet_length",
        "substring", "substr", "position", "strpos", "trim", "btrim", "ltrim", "rtrim",
        "replace", "concat", "concat_ws", "left", "right", "lpad", "rpad", "reverse",
        "repeat", "split_part", "initcap", "format", "md5", "starts_with", "translate",
        "regexp_replace", "regexp_match", "regexp_matches", "regexp_like", "regexp_count",
        "regexp_substr", "regexp_split_to_array", "string_to_array", "array_to_string",
        "to_char", "to_number", "ascii", "chr", "quote_ident", "quote_literal",
        # dates and times
        "date_trunc", "date_part", "extract", "date_bin", "age", "make_date", "make_time",
        "make_timestamp", "make_timestamptz", "make_interval", "justify_days",
        "justify_hours", "justify_interval", "isfinite", "to_date", "to_timestamp",
        # numbers
        "abs", "ceil", "ceiling", "floor", "round", "trunc", "sqrt", "cbrt", "power", "pow",
        "mod", "sign", "ln", "log", "log10", "exp", "div", "pi", "degrees", "radians", "gcd",
        "lcm", "scale", "width_bucket", "greatest", "least",
        # conditionals and casts
        "coalesce", "nullif", "cast", "num_nulls", "num_nonnulls", "exists",
        # sets and arrays
        "generate_series", "unnest", "array_length", "array_position", "array_positions",
        "cardinality", "array_remove", "array_append", "array_cat",
        # json
        "json_build_object", "jsonb_build_object", "json_build_array", "jsonb_build_array",
        "to_json", "to_jsonb", "jsonb_extract_path", "jsonb_extract_path_text",
        "json_extract_path_text", "jsonb_array_length", "json_array_length", "jsonb_typeof",
        "jsonb_object_keys", "jsonb_array_elements", "jsonb_array_elements_text",
    }
)  # fmt: skip

# sqlglot function nodes written as operators or keywords, not as ``name(...)``.
_OPERATOR_FUNCTIONS: tuple[type[exp.Expr], ...] = tuple(
    cls
    for cls in (
        getattr(exp, name, None)
        for name in (
            "And", "Or", "Xor", "Case", "If", "Array", "RegexpLike", "RegexpILike",
            "JSONExtract", "JSONExtractScalar", "JSONBExtract", "JSONBExtractScalar",
            "JSONBContains", "ArrayContains", "ArrayContainsAll", "ArrayContainedBy",
            "ArrayOverlaps", "CurrentDate", "CurrentTimestamp", "CurrentTime",
            "Localtimestamp", "Localtime", "Any", "All", "Interval", "Bracket", "Paren",
        )
    )
    if cls is not None
)  # fmt: skip

_ALLOWED_TYPES = frozenset(
    {
        exp.DataType.Type.ARRAY, exp.DataType.Type.BIGINT, exp.DataType.Type.INT,
        exp.DataType.Type.SMALLINT, exp.DataType.Type.DECIMAL, exp.DataType.Type.DOUBLE,
        exp.DataType.Type.FLOAT, exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR,
        exp.DataType.Type.CHAR, exp.DataType.Type.BPCHAR, exp.DataType.Type.NCHAR,
        exp.DataType.Type.NVARCHAR, exp.DataType.Type.BOOLEAN, exp.DataType.Type.DATE,
        exp.DataType.Type.TIME, exp.DataType.Type.TIMETZ, exp.DataType.Type.TIMESTAMP,
        exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.INTERVAL, exp.DataType.Type.JSON,
        exp.DataType.Type.JSONB, exp.DataType.Type.UUID, exp.DataType.Type.MONEY,
    }
)  # fmt: skip

# Every statement kind that is not a query (what the read-only gate refuses outright).
STATEMENT_KINDS: tuple[type[exp.Expr], ...] = tuple(
    cls
    for cls in (
        getattr(exp, name, None)
        for name in (
            "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Command",
            "Copy", "Set", "Transaction", "Commit", "Rollback", "Grant", "Revoke",
            "TruncateTable", "Use", "Describe", "Pragma", "Analyze", "LoadData", "Cache",
            "Uncache", "Refresh", "Execute", "Declare", "Kill", "Summarize", "Show",
        )
    )
    if cls is not None
)  # fmt: skip
_DML: tuple[type[exp.Expr], ...] = (exp.Insert, exp.Update, exp.Delete, exp.Merge)
# The base class of every node (``Expr`` since sqlglot 28, ``Expression`` before).
_CALL_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_$]*)\s*\(")
_LEADING_WORD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_$]*)")


def _is_system_schema(schema: str) -> bool:
    lowered = schema.lower()
    return lowered.startswith("pg_") or lowered == "information_schema"


def silence_sqlglot_logging() -> None:
    """sqlglot logs the statement text when it falls back to a generic command; statement
    text must never reach a log, so its logger is switched off (idempotent)."""
    logging.getLogger("sqlglot").disabled = True


# At most this many verdicts kept, of statements at most this long (about 1 MB in all).
_VERDICTS_MAX = 256
_VERDICT_TEXT_MAX = 4000


class SqlGate:
    """The pure, catalog-aware statement checker; ``check`` never touches a database."""

    def __init__(
        self, *, max_chars: int = DEFAULT_MAX_SQL_CHARS, max_built: int = DEFAULT_MAX_BUILT_CHARS
    ) -> None:
        self.max_chars = max_chars
        self._built = BuiltValues(max_built)
        # Verdicts are a pure function of the text and the catalog: a statement asked again
        # (a dashboard's question, the offline generator's answer to a repeated question)
        # is checked once per catalog load. Bounded; keyed by the catalog's database and
        # load time, so a reloaded catalog is checked afresh, and by the request's tenant
        # (``_scope``): a verdict another tenant's request left is no faster to read.
        self._verdicts: dict[tuple[str, str, str, object], Verdict] = {}
        silence_sqlglot_logging()

    def check(self, text: str, catalog: TableResolver) -> Verdict:
        """Every violation of ``text`` against the rules, and its normalised form."""
        loaded = getattr(catalog, "refreshed_at", None)
        if loaded is None or len(text) > _VERDICT_TEXT_MAX:
            return self._check(text, catalog)
        # The principal too, whatever the scope says: a verdict carries its view's filters.
        scope = f"{memo_scope()}\x1f{view_key(current_principal.get())}"
        key = (scope, text, str(getattr(catalog, "database", "")), loaded)
        verdict = self._verdicts.get(key)
        if verdict is None:
            if len(self._verdicts) >= _VERDICTS_MAX:
                self._verdicts.clear()
            verdict = self._verdicts[key] = self._check(text, catalog)
        return verdict

    def _check(self, text: str, catalog: TableResolver) -> Verdict:
        if len(text) > self.max_chars:
            return _rejected(
                Violation(
                    GateRule.STATEMENT_TOO_LONG,
                    f"statement is longer than {self.max_chars} characters",
                )
            )
        parsed = _parse(text)
        if isinstance(parsed, Violation):
            return _rejected(parsed)
        checker = _TreeCheck(catalog, self._built)
        violations = checker.run(parsed)
        if violations:
            return Verdict(tuple(violations), "", tuple(checker.tables_used), "")
        normalized = parsed.sql(dialect="postgres", comments=False)
        # Second pass over the text that will actually run: it must parse to the same
        # statement and pass the same checks.
        reparsed = _parse(normalized)
        if isinstance(reparsed, Violation) or (
            reparsed.sql(dialect="postgres", comments=False) != normalized
        ):
            return _rejected(
                Violation(GateRule.PARSE_ERROR, "statement does not survive normalisation")
            )
        second = _TreeCheck(catalog, self._built)
        again = second.run(reparsed)
        if again:
            return Verdict(tuple(again), "", tuple(second.tables_used), "")
        fingerprint = shape_fingerprint(reparsed)
        # The principal's view last, on the checked tree (tables qualified): the filters
        # and hidden columns written in, and the result checked again independently.
        enforced = enforce(reparsed, catalog, current_principal.get())
        if enforced.denials:
            return Verdict(
                tuple(
                    Violation(GateRule.ACCESS_DENIED, d.message, d.subject)
                    for d in enforced.denials
                ),
                "",
                tuple(checker.tables_used),
                "",
                view=enforced.view,
            )
        return Verdict(
            (),
            normalized,
            tuple(checker.tables_used),
            fingerprint,
            source_sql=text,
            source_schemas=tuple(checker.schemas_used),
            view=enforced.view,
            executed_sql=enforced.executed_sql,
            role=enforced.role,
        )


def _rejected(violation: Violation) -> Verdict:
    return Verdict((violation,), "", (), "")


def _parse(text: str) -> exp.Expr | Violation:
    try:
        statements = parse_statements(text)
    except (ParseError, TokenError):
        return Violation(GateRule.PARSE_ERROR, "statement does not parse as Postgres SQL")
    except (ValueError, RecursionError):
        return Violation(GateRule.PARSE_ERROR, "statement could not be parsed")
    if len(statements) != 1:
        what = "no statement" if not statements else f"{len(statements)} statements"
        return Violation(GateRule.SINGLE_STATEMENT, f"exactly one statement allowed, got {what}")
    return statements[0]


def shape_fingerprint(tree: exp.Expr) -> str:
    """SHA-256 of the statement with every literal replaced: safe to log and to compare
    (the shared :func:`services.common.fingerprint_tree`, so every service agrees)."""
    return fingerprint_tree(tree)


class _TreeCheck:
    """One pass over a parsed statement; qualifies known tables in place."""

    def __init__(self, catalog: TableResolver, built: BuiltValues) -> None:
        self._catalog = catalog
        self._built = built
        self._violations: list[Violation] = []
        self._seen: set[tuple[GateRule, str]] = set()
        self.tables_used: list[str] = []
        self.schemas_used: list[str] = []

    def _add(self, rule: GateRule, message: str, subject: str = "") -> None:
        if (rule, subject) not in self._seen:
            self._seen.add((rule, subject))
            self._violations.append(Violation(rule, message, subject))

    def run(self, tree: exp.Expr) -> list[Violation]:
        root = tree.unnest() if isinstance(tree, exp.Subquery) else tree
        if not isinstance(root, exp.Select | exp.SetOperation):
            # Nothing else about a statement that can never run is worth reporting.
            self._add(GateRule.QUERY_ROOT, "only a SELECT query may run", _statement_kind(root))
            return self._violations
        for node in tree.walk():
            self._check_node(node, root)
        self._tables(tree, frozenset())
        for name, message in self._built.problems(tree):
            self._add(GateRule.VALUE_TOO_LARGE, message, name)
        return self._violations

    def _check_node(self, node: exp.Expr, root: exp.Expr) -> None:
        if isinstance(node, STATEMENT_KINDS) and node is not root:
            if isinstance(node, _DML) and isinstance(node.parent, exp.CTE):
                self._add(
                    GateRule.DATA_MODIFYING_CTE,
                    "a WITH query may not modify data",
                    type(node).__name__.upper(),
                )
            else:
                self._add(GateRule.QUERY_ROOT, "only a SELECT query may run", _statement_kind(node))
        elif isinstance(node, exp.Into):
            self._add(GateRule.SELECT_INTO, "SELECT INTO creates a table; not allowed")
        elif isinstance(node, exp.Lock):
            self._add(GateRule.LOCKING_CLAUSE, "locking clauses (FOR UPDATE/SHARE) not allowed")
        elif isinstance(node, exp.Func):
            self._function(node)
        elif isinstance(node, exp.DataType):
            self._data_type(node)
        elif isinstance(node, exp.Column):
            schema = ident(node.args.get("db"))
            if schema is not None and _is_system_schema(schema):
                self._add(GateRule.SYSTEM_SCHEMA, "system schemas may not be read", schema)

    def _function(self, node: exp.Func) -> None:
        parent = node.parent
        if isinstance(parent, exp.Dot) and parent.expression is node:
            qualifier = parent.this.sql(dialect="postgres").lower()
            qualified = _function_name(node) or type(node).__name__.lower()
            self._add(
                GateRule.FUNCTION_NOT_ALLOWED,
                "schema-qualified function calls are not allowed",
                f"{qualifier}.{qualified}",
            )
            return
        if isinstance(node, exp.Anonymous):
            anonymous = _function_name(node)
            if anonymous is None or anonymous not in ALLOWED_FUNCTIONS:
                self._add(
                    GateRule.FUNCTION_NOT_ALLOWED,
                    "function is not on the allow-list",
                    anonymous or "anonymous",
                )
            return
        if isinstance(node, _OPERATOR_FUNCTIONS):
            return
        generated = node.sql(dialect="postgres", comments=False)
        match = _CALL_NAME.match(generated) or _LEADING_WORD.match(generated)
        name = match.group(1).lower() if match else type(node).__name__.lower()
        if name not in ALLOWED_FUNCTIONS:
            self._add(GateRule.FUNCTION_NOT_ALLOWED, "function is not on the allow-list", name)

    def _data_type(self, node: exp.DataType) -> None:
        if node.this not in _ALLOWED_TYPES:
            subject = node.sql(dialect="postgres").lower()
            self._add(GateRule.FUNCTION_NOT_ALLOWED, "cast to this type is not allowed", subject)

    def _tables(self, node: exp.Expr, visible: frozenset[str]) -> None:
        """Check table references scope by scope, so a CTE name shadows only where
        Postgres would resolve it to the CTE (the target of SELECT INTO is not read; the
        statement is refused anyway)."""
        for table, ctes in scoped_tables(node, visible, into=False):
            self._table(table, ctes)

    def _table(self, node: exp.Table, visible: frozenset[str]) -> None:
        if not isinstance(node.this, exp.Identifier):
            return  # a set-returning function in FROM: checked as a function
        name = ident(node.this) or ""
        schema = ident(node.args.get("db"))
        database = ident(node.args.get("catalog"))
        shown = ".".join(part for part in (database, schema, name) if part)
        if database is not None:
            rule = GateRule.SYSTEM_SCHEMA if schema and _is_system_schema(schema) else None
            self._add(
                rule or GateRule.UNKNOWN_TABLE, "cross-database references are not allowed", shown
            )
            return
        if schema is None and name in visible:
            return
        if schema is not None and _is_system_schema(schema):
            self._add(GateRule.SYSTEM_SCHEMA, "system schemas may not be read", shown)
            return
        table = self._catalog.resolve(schema, name)
        if table is None:
            if schema is None and _is_system_schema(name):
                self._add(GateRule.SYSTEM_SCHEMA, "system catalogs may not be read", shown)
            else:
                self._add(GateRule.UNKNOWN_TABLE, "table is not in the catalog", shown)
            return
        if table.qualified not in self.tables_used:
            self.tables_used.append(table.qualified)
        if table.schema not in self.schemas_used:
            self.schemas_used.append(table.schema)
        # Run against the resolved table, never whatever a search_path might find first.
        node.set("db", identifier(table.schema))
        node.set("this", identifier(table.name))


def _statement_kind(node: exp.Expr) -> str:
    """A short name for what a non-query statement is (its leading keyword)."""
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, STATEMENT_KINDS):
        return type(node).__name__.upper()
    return ""


def _function_name(node: exp.Func) -> str | None:
    if isinstance(node, exp.Anonymous):
        this = node.this
        if isinstance(this, exp.Identifier):
            return ident(this)
        if isinstance(this, str):
            return this.lower()
        return None
    match = _CALL_NAME.match(node.sql(dialect="postgres", comments=False))
    return match.group(1).lower() if match else None
