"""Plain typed objects the router logic works with (the servicer converts protobuf)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from services.common.llm import PlanStep, PriorTurn, ToolName
from services.router.offline import BuildsOn

Cell = str | int | float | bool | None


class Mode(StrEnum):
    """How the caller wants the question answered."""

    AUTO = "auto"
    RETRIEVE = "retrieve"
    AGENTIC = "agentic"
    SQL = "sql"


class Route(StrEnum):
    """The path an answer actually took."""

    RETRIEVE = "retrieve"
    AGENTIC = "agentic"
    SQL = "sql"
    COMPOUND = "compound"


class Klass(StrEnum):
    """The router's classification of a question (AUTO only)."""

    UNSPECIFIED = "unspecified"
    COUNTABLE = "countable"
    SEMANTIC = "semantic"
    COMPOUND = "compound"


class Status(StrEnum):
    """State or outcome of a plan step."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    EMPTY = "empty"
    DEGRADED = "degraded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


FAILED_STATUSES = frozenset({Status.EMPTY, Status.DEGRADED, Status.FAILED, Status.TIMED_OUT})


class Outcome(StrEnum):
    """How complete an answer is."""

    ANSWERED = "answered"
    PARTIAL = "partial"
    NOT_FOUND = "not_found"
    REFUSED = "refused"  # declined before any engine ran; ``refusal_reason`` says why


@dataclass(frozen=True)
class Options:
    """Validated request tuning (zeros already replaced by defaults)."""

    top_k: int = 8
    include_trajectory: bool = False
    max_tool_calls: int = 12
    database: str = ""
    categories: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None
    search_mode: int = 0
    max_rows: int = 0


@dataclass(frozen=True)
class AskInput:
    """A validated question."""

    tenant_id: str
    question: str
    mode: Mode
    options: Options
    # The conversation it was asked in (echoed back; the router keeps no state) and the
    # conversation's last turns, oldest first, already capped.
    conversation_id: str = ""
    history: tuple[PriorTurn, ...] = ()
    # A follow-up to a SQL answer: it stays on the SQL route, and the SQL service builds
    # on the earlier statement when the relation says how (set after resolution).
    builds_on: BuildsOn | None = None


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk."""

    chunk_id: str
    document_id: str
    title: str
    uri: str
    section: str
    text: str
    score: float


@dataclass(frozen=True)
class SearchOutcome:
    """What one search returned; ``degraded`` carries the retrieval service's reason."""

    hits: tuple[Hit, ...]
    degraded: bool = False
    reason: str = ""


@dataclass(frozen=True)
class SqlOutcome:
    """A SQL step's result: typed cells for synthesis, the raw result for the answer."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    fingerprint: str
    description: str
    raw: Any = None
    repairs: int = 0
    degraded: bool = False
    answered: bool = True
    reason: str = ""
    # What the SQL service said when it declined (the phrase it could not place and the
    # nearest names): said in the answer's refusal, never logged.
    message: str = ""
    # The SQL service's id for this answer (feedback names it); empty when it recorded none.
    answer_id: str = ""


@dataclass(frozen=True)
class Degradation:
    """One cause of a degraded answer (reason is a DegradationReason value name)."""

    reason: str
    component: str
    message: str
    step_id: str = ""


@dataclass(frozen=True)
class ScopedMember:
    """One entity a scoped step searched for: its name, the metadata filter that kept the
    search to its documents, and the hits that search returned."""

    name: str
    metadata: tuple[tuple[str, Cell], ...]
    hits: tuple[Hit, ...] = ()


@dataclass
class StepRun:
    """One plan step across its life: plan metadata, then its execution record."""

    step: PlanStep
    revision: int
    wave: int
    status: Status = Status.PENDING
    start_time: datetime | None = None
    duration_s: float = 0.0
    attempts: int = 0
    rewrites: int = 0
    repairs: int = 0
    result_count: int = 0
    failure_reason: str = ""
    argument_summary: str = ""
    hits: tuple[Hit, ...] = ()
    quarantined: tuple[Hit, ...] = ()
    sql: SqlOutcome | None = None
    # A SQL step declined: what the service said (the refusal repeats it).
    declined: str = ""
    bound_query: str = ""
    members: tuple[ScopedMember, ...] = ()

    @property
    def step_id(self) -> str:
        return self.step.id

    @property
    def tool(self) -> ToolName:
        return self.step.tool

    @property
    def input_summary(self) -> str:
        return self.step.query[:200]


@dataclass(frozen=True)
class PlanView:
    """A plan revision as sent to the caller."""

    revision: int
    steps: tuple[StepRun, ...]


class CitationKind(StrEnum):
    """What a citation points at."""

    PASSAGE = "passage"
    SQL_RESULT = "sql_result"


@dataclass(frozen=True)
class Citation:
    """A confirmed citation mapped back to its evidence."""

    passage_id: int
    kind: CitationKind
    step_id: str
    answer_span: tuple[int, int]
    document_id: str = ""
    chunk_id: str = ""
    title: str = ""
    uri: str = ""
    section: str = ""
    quote: str = ""
    quote_span: tuple[int, int] | None = None
    sql_fingerprint: str = ""


@dataclass(frozen=True)
class InjectionFinding:
    """One payload found in a retrieved passage (kind/severity are enum value names)."""

    passage_id: int
    document_id: str
    chunk_id: str
    kind: str
    severity: str
    quarantined: bool


@dataclass
class GuardrailReport:
    """What the guardrails checked and changed for one answer."""

    enabled_layers: list[str] = field(default_factory=list)
    passages_scanned: int = 0
    passages_quarantined: int = 0
    injection_findings: list[InjectionFinding] = field(default_factory=list)
    removed_citations: list[tuple[int, str]] = field(default_factory=list)
    unsupported_sentences: list[tuple[int, tuple[int, int]]] = field(default_factory=list)
    url_findings: list[tuple[str, str]] = field(default_factory=list)
    prompt_leak_detected: bool = False


@dataclass(frozen=True)
class UsageEntry:
    """Model calls for one (role, tier, model)."""

    role: str
    tier: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    duration_s: float


@dataclass(frozen=True)
class SqlEvidence:
    """A SQL result the answer drew on, with its short id."""

    step_id: str
    passage_id: int
    raw: Any
    answer_id: str = ""


@dataclass(frozen=True)
class RouterAnswer:
    """The complete answer, as plain data."""

    request_id: str
    text: str
    citations: tuple[Citation, ...]
    outcome: Outcome
    mode: Mode
    question_class: Klass
    route: Route
    plan: PlanView
    trajectory: tuple[StepRun, ...]
    guardrails: GuardrailReport
    confidence: float
    disclaimer: str
    degradations: tuple[Degradation, ...]
    usage: tuple[UsageEntry, ...]
    sql_results: tuple[SqlEvidence, ...]
    timings: tuple[tuple[str, float], ...]
    replans: int
    tool_calls: int
    # Why the question was declined (outcome REFUSED): an ErrorReason value name.
    refusal_reason: str = ""


# Events a streamed answer is made of, in the order the engine emits them.
@dataclass(frozen=True)
class PlanEvent:
    plan: PlanView


@dataclass(frozen=True)
class StepStartedEvent:
    run: StepRun


@dataclass(frozen=True)
class StepFinishedEvent:
    run: StepRun


@dataclass(frozen=True)
class DeltaEvent:
    text: str


@dataclass(frozen=True)
class CitationEvent:
    citation: Citation


Event = PlanEvent | StepStartedEvent | StepFinishedEvent | DeltaEvent | CitationEvent
