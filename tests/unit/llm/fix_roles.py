"""One valid request and one valid reply per role, shared by the provider tests (Gemini and
OpenAI-compatible) so both wires are held to the same roles."""

from __future__ import annotations

from typing import Any

from services.common.llm import (
    GenerateSqlRequest,
    GradeRequest,
    IdentifyTablesRequest,
    LlmProvider,
    Passage,
    Plan,
    PlanRequest,
    PlanStep,
    PriorTurn,
    RepairSqlRequest,
    ReplanRequest,
    ResolveFollowUpRequest,
    RewriteRequest,
    Role,
    RouteRequest,
    StepOutcome,
    SynthesizeRequest,
    ToolName,
    UnderstandSqlRequest,
)
from tests.unit.llm.fix_crm import CRM

QUESTION = "What pricing concerns did Globex raise on the last call?"
PASSAGES = (Passage("1", "Globex raised pricing concerns about the renewal.", "Globex call"),)
PLAN = Plan((PlanStep("s1", ToolName.SQL_QUESTION, "how many deals closed"),))

REQUESTS: dict[Role, Any] = {
    Role.ROUTE: RouteRequest(QUESTION),
    Role.PLAN: PlanRequest(QUESTION),
    Role.REPLAN: ReplanRequest(QUESTION, PLAN, (StepOutcome("s1", False, "timeout"),), "s1"),
    Role.GRADE: GradeRequest(QUESTION, PASSAGES),
    Role.REWRITE: RewriteRequest(QUESTION, ("pricing globex",), ("renewal",)),
    Role.UNDERSTAND_SQL: UnderstandSqlRequest("how many deals closed last quarter", CRM),
    Role.IDENTIFY_TABLES: IdentifyTablesRequest("how many deals closed last quarter", CRM),
    Role.GENERATE_SQL: GenerateSqlRequest("how many deals closed last quarter", CRM),
    Role.REPAIR_SQL: RepairSqlRequest(
        "how many deals", CRM, "SELECT count(*) FROM deals", 'relation "deals" does not exist'
    ),
    Role.SYNTHESIZE: SynthesizeRequest(QUESTION, PASSAGES),
    Role.RESOLVE_FOLLOW_UP: ResolveFollowUpRequest(
        "and in 2024?", (PriorTurn("How many deals closed?", "How many deals closed?"),)
    ),
}

VALID: dict[Role, dict[str, Any]] = {
    Role.ROUTE: {"action": "retrieve", "question_class": "semantic", "search_query": "globex"},
    Role.PLAN: {
        "steps": [{"id": "s1", "tool": "semantic_search", "query": "q", "depends_on": []}],
        "rationale": "one search",
    },
    Role.REPLAN: {"steps": [{"id": "s1r1", "tool": "semantic_search", "query": "q"}]},
    Role.GRADE: {
        "relevant": True,
        "score": 0.9,
        "passages": [{"passage_id": "1", "relevant": True, "score": 0.9}],
        "missing_terms": [],
    },
    Role.REWRITE: {"query": "globex pricing renewal", "keywords": ["globex"]},
    Role.UNDERSTAND_SQL: {"restatement": "Count closed deals.", "intent": None},
    Role.IDENTIFY_TABLES: {"tables": ["opportunities"], "confidence": 0.9},
    Role.GENERATE_SQL: {"sql": "SELECT count(*) FROM opportunities", "tables_used": []},
    Role.REPAIR_SQL: {"sql": "SELECT count(*) FROM opportunities"},
    Role.SYNTHESIZE: {
        "sentences": [{"text": "Globex raised pricing concerns.", "citations": ["1"]}],
        "supported": True,
    },
    Role.RESOLVE_FOLLOW_UP: {"kind": "time_shift", "question": "How many deals closed in 2024?"},
}

STRONG_ROLES = {Role.PLAN, Role.REPLAN, Role.GENERATE_SQL, Role.REPAIR_SQL, Role.SYNTHESIZE}


async def call(provider: LlmProvider, role: Role) -> Any:
    method = getattr(provider, role.value)
    return await method(REQUESTS[role])


# One valid route reply written as models write it when they ignore the format asked for:
# each is repaired without a re-ask, by either provider.
MALFORMED_ROUTES = {
    "code-fenced": (
        '```json\n{"action": "retrieve", "question_class": "semantic", "search_query": "g"}\n```'
    ),
    "think-wrapped": (
        "<think>The user asks about {pricing}. I will retrieve.</think>\n"
        '{"action": "retrieve", "question_class": "semantic", "search_query": "g"}'
    ),
    "trailing-comma": '{"action": "retrieve", "question_class": "semantic", "search_query": "g",}',
    "prose-and-case": (
        'Sure! Here is the JSON:\n{"action": "RETRIEVE", "question_class": "Semantic", '
        '"search_query": "g", "confidence": 1}\nHope this helps.'
    ),
}
