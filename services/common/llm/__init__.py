"""The LLM layer: providers only, behind one typed interface for every role.

It holds the model providers (Gemini, and any OpenAI-compatible chat-completions server:
Ollama, vLLM, llama.cpp server, LM Studio) over one shared role logic, the plumbing around
providers (fencing, prompts, structured-output decoding and repair, per-call fallback,
spans) and the role types they share. What an engine does without a model lives with that
engine: the router's offline planner, grader, rewriter, follow-up rules and extractive
synthesis are ``services.router.offline``; the SQL service's rule-based generator is
``services.sql``.

``create_provider(LlmSettings.from_env(), offline=...)`` returns the model ``LLM_PROVIDER``
selects (strong and fast tiers, with the caller's offline provider as per-call fallback):
Gemini when ``GEMINI_API_KEY`` is set and no provider is named, an OpenAI-compatible server
with ``LLM_PROVIDER=openai``, and the offline provider otherwise. Untrusted text is fenced
before any prompt exists.
"""

from services.common.llm._base import ModelProvider
from services.common.llm._errors import LlmError, LlmOutputInvalid, LlmTimeout, LlmUnavailable
from services.common.llm._factory import create_model_provider, create_provider
from services.common.llm._fallback import FallbackProvider
from services.common.llm._fence import (
    QUESTION_MAX_CHARS,
    SCHEMA_MAX_CHARS,
    Fence,
    cap_question,
    render_schema,
)
from services.common.llm._gemini import GeminiProvider
from services.common.llm._interface import LlmProvider
from services.common.llm._jsonrepair import JsonRepairError, extract_json, parse_output
from services.common.llm._observed import ObservedProvider
from services.common.llm._openai import OpenAIProvider
from services.common.llm._prices import DEFAULT_PRICES, ModelPrice, estimate_cost
from services.common.llm._prompts import Prompt, build_prompt
from services.common.llm._schema import (
    SchemaViolation,
    decode,
    encode,
    json_schema,
    standard_json_schema,
)
from services.common.llm._settings import LlmSettings
from services.common.llm._types import (
    ALL_TOOLS,
    ROLE_TIERS,
    AggregateFunction,
    Answer,
    AnswerSentence,
    CatalogColumn,
    CatalogTable,
    Cell,
    FilterOp,
    FollowUpKind,
    FollowUpRewrite,
    GeneratedSql,
    GenerateSqlRequest,
    Grade,
    GradeRequest,
    IdentifyTablesRequest,
    IntentAggregate,
    IntentFilter,
    IntentKind,
    LlmResult,
    MemberEvidence,
    MentionCheck,
    Passage,
    PassageGrade,
    Plan,
    PlanRequest,
    PlanStep,
    PriorTurn,
    QuestionClass,
    RepairSqlRequest,
    ReplanRequest,
    ResolveFollowUpRequest,
    Rewrite,
    RewriteRequest,
    Role,
    RouteAction,
    RouteDecision,
    RouteRequest,
    RowSet,
    SchemaCatalog,
    SortDirection,
    SqlExample,
    SqlIntent,
    SqlUnderstanding,
    StepOutcome,
    StepScope,
    SynthesizeRequest,
    TableSelection,
    Tier,
    ToolName,
    UnderstandSqlRequest,
    Usage,
)

__all__ = [
    "ALL_TOOLS",
    "DEFAULT_PRICES",
    "QUESTION_MAX_CHARS",
    "ROLE_TIERS",
    "SCHEMA_MAX_CHARS",
    "AggregateFunction",
    "Answer",
    "AnswerSentence",
    "CatalogColumn",
    "CatalogTable",
    "Cell",
    "FallbackProvider",
    "Fence",
    "FilterOp",
    "FollowUpKind",
    "FollowUpRewrite",
    "GeminiProvider",
    "GenerateSqlRequest",
    "GeneratedSql",
    "Grade",
    "GradeRequest",
    "IdentifyTablesRequest",
    "IntentAggregate",
    "IntentFilter",
    "IntentKind",
    "JsonRepairError",
    "LlmError",
    "LlmOutputInvalid",
    "LlmProvider",
    "LlmResult",
    "LlmSettings",
    "LlmTimeout",
    "LlmUnavailable",
    "MemberEvidence",
    "MentionCheck",
    "ModelPrice",
    "ModelProvider",
    "ObservedProvider",
    "OpenAIProvider",
    "Passage",
    "PassageGrade",
    "Plan",
    "PlanRequest",
    "PlanStep",
    "PriorTurn",
    "Prompt",
    "QuestionClass",
    "RepairSqlRequest",
    "ReplanRequest",
    "ResolveFollowUpRequest",
    "Rewrite",
    "RewriteRequest",
    "Role",
    "RouteAction",
    "RouteDecision",
    "RouteRequest",
    "RowSet",
    "SchemaCatalog",
    "SchemaViolation",
    "SortDirection",
    "SqlExample",
    "SqlIntent",
    "SqlUnderstanding",
    "StepOutcome",
    "StepScope",
    "SynthesizeRequest",
    "TableSelection",
    "Tier",
    "ToolName",
    "UnderstandSqlRequest",
    "Usage",
    "build_prompt",
    "cap_question",
    "create_model_provider",
    "create_provider",
    "decode",
    "encode",
    "estimate_cost",
    "extract_json",
    "json_schema",
    "parse_output",
    "render_schema",
    "standard_json_schema",
]
