"""The answer memory: answers given and their feedback, confirmed question→SQL pairs per
tenant under row-level security (``_store``), the rules for recording and reusing them
(``_answers``) and the offline adaptation of a pair to a new question (``_reuse``).
"""

from __future__ import annotations

from services.sql.memory._answers import (
    AnswerMemory,
    Feedback,
    MemorySettings,
    memory_disabled,
    open_memory,
)
from services.sql.memory._store import (
    ConfirmedPair,
    GrpcQuestionEmbedder,
    MemoryStore,
    NearPair,
    QuestionEmbedder,
    parse_uuid,
)

__all__ = [
    "AnswerMemory",
    "ConfirmedPair",
    "Feedback",
    "GrpcQuestionEmbedder",
    "MemorySettings",
    "MemoryStore",
    "NearPair",
    "QuestionEmbedder",
    "memory_disabled",
    "open_memory",
    "parse_uuid",
]
