"""Typed inputs and outputs of every LLM role, shared by all providers.

Outputs are plain frozen dataclasses: their JSON schema is derived from the fields (see
``_schema``), so the schema Gemini is asked to follow and the validator that checks its
answer can never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar


class FollowUpKind(StrEnum):
    """How a question relates to the conversation before it (values match the proto)."""

    STANDALONE = "standalone"
    TIME_SHIFT = "time_shift"
    VALUE_SWAP = "value_swap"
    FILTER = "filter"
    BREAKDOWN = "breakdown"
    RESULT_REFERENCE = "result_reference"
    ORDINAL = "ordinal"
    UNRESOLVED = "unresolved"
    LIMIT = "limit"


@dataclass(frozen=True)
class PriorTurn:
    """What resolution reads of an earlier turn (the router's view of a stored turn)."""

    question: str
    resolved_question: str
    members: tuple[str, ...] = ()
    row_count: int = 0
    unresolved: bool = False
    # The statement of its SQL result (empty for a semantic answer): a follow-up that
    # changes its row count or asks about its rows builds on it.
    sql: str = ""
    # Whether it cited documents: an answer that showed no row may still have named
    # something in its text for a later "its" to mean.
    cited: bool = False


class Role(StrEnum):
    """The jobs the engines hand to a language model."""

    ROUTE = "route"
    PLAN = "plan"
    REPLAN = "replan"
    GRADE = "grade"
    REWRITE = "rewrite"
    UNDERSTAND_SQL = "understand_sql"
    IDENTIFY_TABLES = "identify_tables"
    GENERATE_SQL = "generate_sql"
    REPAIR_SQL = "repair_sql"
    SYNTHESIZE = "synthesize"
    RESOLVE_FOLLOW_UP = "resolve_follow_up"


class Tier(StrEnum):
    """Model tier: the strong model only where it changes the outcome."""

    STRONG = "strong"
    FAST = "fast"


class QuestionClass(StrEnum):
    """Which engine a question needs: countable (SQL), fuzzy (retrieval), or both."""

    AGGREGATION = "aggregation"
    SEMANTIC = "semantic"
    COMPOUND = "compound"
    CONVERSATIONAL = "conversational"


class RouteAction(StrEnum):
    """Whether the question needs company data (retrieve) or can be answered as is."""

    RETRIEVE = "retrieve"
    RESPOND = "respond"


class ToolName(StrEnum):
    """The tools a plan step may name; code validates and runs them."""

    SEMANTIC_SEARCH = "semantic_search"
    SQL_QUESTION = "sql_question"
    SQL_INTENT = "sql_intent"


class IntentKind(StrEnum):
    """Shapes of structured SQL intent the SQL service compiles without a model."""

    COUNT = "count"
    LIST = "list"
    GROUP_BY = "group_by"
    TOP_N = "top_n"
    LOOKUP = "lookup"
    AGGREGATE = "aggregate"


class FilterOp(StrEnum):
    """Comparison operators an intent filter may use; ``contains`` is case-insensitive."""

    EQ = "eq"
    NE = "ne"
    GT = "gt"
    GTE = "gte"
    LT = "lt"
    LTE = "lte"
    CONTAINS = "contains"


class AggregateFunction(StrEnum):
    """Aggregate functions an intent may apply."""

    COUNT = "count"
    SUM = "sum"
    AVG = "avg"
    MIN = "min"
    MAX = "max"


class SortDirection(StrEnum):
    """Order of a ranking."""

    ASC = "asc"
    DESC = "desc"


ALL_TOOLS: tuple[ToolName, ...] = tuple(ToolName)

# Strong where the outcome depends on it (planning, SQL, synthesis); fast elsewhere.
ROLE_TIERS: dict[Role, Tier] = {
    Role.ROUTE: Tier.FAST,
    Role.PLAN: Tier.STRONG,
    Role.REPLAN: Tier.STRONG,
    Role.GRADE: Tier.FAST,
    Role.REWRITE: Tier.FAST,
    Role.UNDERSTAND_SQL: Tier.FAST,
    Role.IDENTIFY_TABLES: Tier.FAST,
    Role.GENERATE_SQL: Tier.STRONG,
    Role.REPAIR_SQL: Tier.STRONG,
    Role.SYNTHESIZE: Tier.STRONG,
    # A rewrite of one short question against a few turns: the cheap model suffices.
    Role.RESOLVE_FOLLOW_UP: Tier.FAST,
}

Scalar = str | int | float | bool
Cell = str | int | float | bool | None


# --- schema catalog (the SQL service adapts its introspected catalog to this) ---------


@dataclass(frozen=True)
class CatalogColumn:
    """One column: SQL type, comment, a few stored values, and its foreign key if any."""

    name: str
    type: str
    comment: str = ""
    sample_values: tuple[str, ...] = ()
    primary_key: bool = False
    references: str | None = None  # "table.column" this column points at


@dataclass(frozen=True)
class CatalogTable:
    """One table of the warehouse with its columns."""

    name: str
    columns: tuple[CatalogColumn, ...]
    comment: str = ""
    row_estimate: int | None = None

    def column(self, name: str) -> CatalogColumn | None:
        """The column called ``name`` (case-insensitive), if the table has one."""
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


@dataclass(frozen=True)
class SchemaCatalog:
    """The tables a question may be linked to."""

    tables: tuple[CatalogTable, ...]

    def table(self, name: str) -> CatalogTable | None:
        """The table called ``name`` (case-insensitive), if the catalog has one."""
        lowered = name.lower()
        return next((t for t in self.tables if t.name.lower() == lowered), None)


# --- structured SQL intent ------------------------------------------------------------


@dataclass(frozen=True)
class IntentFilter:
    """``column op value``; ``column`` is ``name`` on the intent's table or ``table.name``."""

    column: str
    op: FilterOp
    value: str | int | float | bool


@dataclass(frozen=True)
class IntentAggregate:
    """An aggregate over a column (``*`` for counting rows)."""

    function: AggregateFunction
    column: str = "*"

    @property
    def alias(self) -> str:
        """The output column name, e.g. ``count_all`` or ``avg_amount``."""
        target = "all" if self.column == "*" else self.column.rsplit(".", 1)[-1]
        return f"{self.function.value}_{target}"


@dataclass(frozen=True)
class SqlIntent:
    """A question as a structured query: compiled to SQL by code, never by a model.

    Columns are unqualified for the intent's own table and ``table.column`` for a table
    reached through a foreign key. ``order_by`` may also name the aggregate's alias.
    """

    kind: IntentKind
    table: str
    columns: tuple[str, ...] = ()
    filters: tuple[IntentFilter, ...] = ()
    group_by: tuple[str, ...] = ()
    aggregate: IntentAggregate | None = None
    order_by: str | None = None
    direction: SortDirection = SortDirection.DESC
    limit: int | None = None


# --- evidence -------------------------------------------------------------------------


@dataclass(frozen=True)
class Passage:
    """A retrieved passage with the short id the answer cites it by."""

    id: str
    text: str
    title: str = ""
    score: float | None = None


@dataclass(frozen=True)
class RowSet:
    """Rows a SQL step returned, with the short id the answer cites them by."""

    id: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    description: str = ""


# --- role inputs ----------------------------------------------------------------------


@dataclass(frozen=True)
class RouteRequest:
    """Route: does this question need company data, and which class is it?"""

    question: str


@dataclass(frozen=True)
class PlanRequest:
    """Plan: break a question into tool steps; ``schema`` lets a planner emit intents."""

    question: str
    tools: tuple[ToolName, ...] = ALL_TOOLS
    max_steps: int = 6
    schema: SchemaCatalog | None = None


@dataclass(frozen=True)
class StepOutcome:
    """How a plan step ended; ``error`` and ``summary`` are metadata, not content."""

    step_id: str
    succeeded: bool
    error: str = ""
    summary: str = ""


@dataclass(frozen=True)
class ReplanRequest:
    """Replan after ``failed_step_id`` failed, keeping every completed step."""

    question: str
    plan: Plan
    outcomes: tuple[StepOutcome, ...]
    failed_step_id: str
    tools: tuple[ToolName, ...] = ALL_TOOLS
    schema: SchemaCatalog | None = None


@dataclass(frozen=True)
class GradeRequest:
    """Grade: are these passages relevant to the question?"""

    question: str
    passages: tuple[Passage, ...]


@dataclass(frozen=True)
class RewriteRequest:
    """Rewrite a search query from the gaps the grader found and the best passages so far
    (the collection's own words for what was asked)."""

    question: str
    previous_queries: tuple[str, ...] = ()
    missing_terms: tuple[str, ...] = ()
    passages: tuple[Passage, ...] = ()


@dataclass(frozen=True)
class ResolveFollowUpRequest:
    """Turn a question asked inside a conversation into a standalone one, given the
    conversation's last turns (oldest first; already bounded)."""

    question: str
    history: tuple[PriorTurn, ...] = ()


@dataclass(frozen=True)
class UnderstandSqlRequest:
    """Restate a database question as an intent."""

    question: str
    schema: SchemaCatalog
    # Business definitions (glossary lines) and the caller's free-text rules: data for
    # the prompt, fenced like the question.
    definitions: tuple[str, ...] = ()
    instructions: str = ""


@dataclass(frozen=True)
class IdentifyTablesRequest:
    """Pick the tables a database question needs."""

    question: str
    schema: SchemaCatalog
    understanding: str = ""
    definitions: tuple[str, ...] = ()
    instructions: str = ""


@dataclass(frozen=True)
class SqlExample:
    """A confirmed question and the statement a person confirmed for it (a few-shot
    example: data for the model, fenced like the question)."""

    question: str
    sql: str


@dataclass(frozen=True)
class GenerateSqlRequest:
    """Write one read-only SELECT for the question over ``tables``."""

    question: str
    schema: SchemaCatalog
    tables: tuple[str, ...] = ()
    understanding: str = ""
    row_limit: int = 50
    definitions: tuple[str, ...] = ()
    instructions: str = ""
    # Confirmed pairs nearest to the question, most similar first.
    examples: tuple[SqlExample, ...] = ()


@dataclass(frozen=True)
class RepairSqlRequest:
    """Fix ``sql`` given the gate's or the database's error message."""

    question: str
    schema: SchemaCatalog
    sql: str
    error: str
    attempt: int = 1
    row_limit: int = 50
    definitions: tuple[str, ...] = ()
    instructions: str = ""


@dataclass(frozen=True)
class MemberEvidence:
    """One entity of a set: its name, the rows that list it, its retrieved passages."""

    name: str
    rows_id: str
    passage_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class MentionCheck:
    """Which members' ``documents`` mention ``topic`` (each member searched on its own)."""

    topic: str
    documents: str
    members: tuple[MemberEvidence, ...]


@dataclass(frozen=True)
class SynthesizeRequest:
    """Answer only from these passages and rows, citing their ids; ``mention`` asks which
    members of a set the passages show mentioning a topic."""

    question: str
    passages: tuple[Passage, ...] = ()
    rows: tuple[RowSet, ...] = ()
    partial: bool = False
    mention: MentionCheck | None = None


# --- role outputs ---------------------------------------------------------------------


@dataclass(frozen=True)
class RouteDecision:
    """Retrieve (with a search query) or respond (with a direct answer)."""

    action: RouteAction
    question_class: QuestionClass
    search_query: str = ""
    answer: str = ""
    confidence: float = 0.0


@dataclass(frozen=True)
class StepScope:
    """Runs a semantic step once per entity an earlier step's rows list, each search kept
    to that entity's documents: metadata ``field`` equal to the row's ``field`` column, or
    ``label_field`` equal to the row's name when the rows have no such column."""

    source: str  # the step whose rows list the entities (also in depends_on)
    field: str  # document metadata key and result column, e.g. "company_id"
    label_field: str = ""  # metadata key holding the entity's name, e.g. "company"
    categories: tuple[str, ...] = ()  # document kinds, e.g. ("call_note",)
    documents: str = ""  # how the question names those documents ("call notes")
    # Report, per entity, whether its documents mention ``topic``.
    check_mention: bool = False
    topic: str = ""


@dataclass(frozen=True)
class PlanStep:
    """One tool call. ``query`` may hold ``{{sN}}``: the router binds step sN's top result.
    ``scope`` repeats a semantic step per entity of an earlier step's rows."""

    id: str
    tool: ToolName
    query: str
    depends_on: tuple[str, ...] = ()
    intent: SqlIntent | None = None
    scope: StepScope | None = None


@dataclass(frozen=True)
class Plan:
    """Steps to run; independent steps run in parallel waves."""

    steps: tuple[PlanStep, ...]
    rationale: str = ""


@dataclass(frozen=True)
class PassageGrade:
    """One passage's relevance."""

    passage_id: str
    relevant: bool
    score: float


@dataclass(frozen=True)
class Grade:
    """Whether the passages answer the question, and which question terms none covers."""

    relevant: bool
    score: float
    passages: tuple[PassageGrade, ...] = ()
    missing_terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class FollowUpRewrite:
    """A proposed standalone question: ``kind`` is a FollowUpKind value; ``reason`` says
    what a reference pointed at that the history does not hold (kind "unresolved")."""

    kind: str
    question: str
    reason: str = ""


@dataclass(frozen=True)
class Rewrite:
    """A new search query, its keywords and the expansions that were added."""

    query: str
    keywords: tuple[str, ...] = ()
    expansions: tuple[str, ...] = ()


@dataclass(frozen=True)
class SqlUnderstanding:
    """A restated intent sentence, and a structured intent when one could be linked."""

    restatement: str
    intent: SqlIntent | None = None
    confidence: float = 0.0


@dataclass(frozen=True)
class TableSelection:
    """Tables the question needs, most relevant first."""

    tables: tuple[str, ...]
    confidence: float = 0.0


@dataclass(frozen=True)
class GeneratedSql:
    """One SELECT (``None`` when the question cannot be expressed over the schema)."""

    sql: str | None
    explanation: str = ""
    tables_used: tuple[str, ...] = ()
    intent: SqlIntent | None = None
    confidence: float = 0.0


@dataclass(frozen=True)
class AnswerSentence:
    """One answer sentence and the evidence ids it rests on."""

    text: str
    citations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Answer:
    """A cited answer; ``supported`` is false when the evidence does not answer it."""

    sentences: tuple[AnswerSentence, ...]
    supported: bool
    confidence: float = 0.0

    @property
    def text(self) -> str:
        """The sentences joined, each followed by its ``[id]`` citations."""
        parts = []
        for sentence in self.sentences:
            marks = "".join(f"[{c}]" for c in sentence.citations)
            parts.append(f"{sentence.text} {marks}".rstrip())
        return " ".join(parts)

    @property
    def citations(self) -> tuple[str, ...]:
        """Every cited id, first mention first."""
        seen: dict[str, None] = {}
        for sentence in self.sentences:
            for cid in sentence.citations:
                seen.setdefault(cid, None)
        return tuple(seen)


# --- usage and results ----------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """What one role call cost: model, tier, tokens, estimated dollars, HTTP calls."""

    model: str
    tier: Tier
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    calls: int = 0
    retries: int = 0
    reasked: bool = False


T = TypeVar("T")


@dataclass(frozen=True)
class LlmResult(Generic[T]):
    """A role's validated output plus its usage; ``degraded`` when a fallback answered."""

    output: T
    usage: Usage
    degraded: bool = False
    degraded_reason: str | None = None
