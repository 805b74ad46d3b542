"""The ask pipeline: the seam every SQL generator answers (``_pipeline``: understand,
identify tables, generate, gate, execute, repair at most twice), the offline generator
that reads with the schema linker (``_offline``), and the LLM layer behind the same
seam (``_llm_adapter``).
"""

from __future__ import annotations

from services.sql.ask._llm_adapter import generator_from_env
from services.sql.ask._offline import OfflineGenerator
from services.sql.ask._pipeline import (
    Answered,
    AskOutcome,
    AskPipeline,
    AskResult,
    Attempt,
    AttemptOutcome,
    Failure,
    GeneratorRole,
    GeneratorUnavailable,
    ModelCall,
    ModelTier,
    PairUse,
    Proposal,
    SchemaView,
    SqlGenerator,
    TableChoice,
    Understanding,
    record_verdict,
)

__all__ = [
    "Answered",
    "AskOutcome",
    "AskPipeline",
    "AskResult",
    "Attempt",
    "AttemptOutcome",
    "Failure",
    "GeneratorRole",
    "GeneratorUnavailable",
    "ModelCall",
    "ModelTier",
    "OfflineGenerator",
    "PairUse",
    "Proposal",
    "SchemaView",
    "SqlGenerator",
    "TableChoice",
    "Understanding",
    "generator_from_env",
    "record_verdict",
]
