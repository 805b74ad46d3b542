"""The router without a model: its offline planner, grader, rewriter, follow-up rules and
extractive synthesis, behind the same ``LlmProvider`` interface Gemini implements.

The router hands ``DeterministicProvider`` to ``services.common.llm.create_provider`` as
the per-call fallback (and uses it alone when no key is set), and reads RETRIEVE answers
and last-resort fallbacks from it directly. Modules: ``_text`` (tokens, stems, sentence
splitting), ``_rules`` (classification, decomposition, search queries), ``_followup``
(follow-up resolution, a package of one module a reading step), ``_extractive`` (grading,
rewriting, synthesis), ``_cells`` (answers from table cells), ``_provider`` (the roles
wired together).
"""

from services.router.offline._cells import CitedRow, cited_row
from services.router.offline._extractive import (
    NO_ANSWER,
    PARTIAL_NOTE,
    framing,
    sql_refusal_note,
    unplaced_note,
)
from services.router.offline._followup import (
    BuildsOn,
    Relation,
    Resolution,
    changes_row_count,
    drops_condition,
    hides_rows,
    resolve,
)
from services.router.offline._provider import DETERMINISTIC_MODEL, DeterministicProvider

__all__ = [
    "DETERMINISTIC_MODEL",
    "NO_ANSWER",
    "PARTIAL_NOTE",
    "BuildsOn",
    "CitedRow",
    "DeterministicProvider",
    "Relation",
    "Resolution",
    "changes_row_count",
    "cited_row",
    "drops_condition",
    "framing",
    "hides_rows",
    "resolve",
    "sql_refusal_note",
    "unplaced_note",
]
