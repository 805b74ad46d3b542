"""Where AUTO sends a question first, without a model: ``tandem eval routing``.

The router's offline planner (``services.router.offline``) picks each plan step's tool
from the question's words alone. A question of a text-to-SQL dataset (a folder with
``databases/``: ``../shared/datasets/sql``, ``sql-spider``) belongs to the records; one of
a document dataset (a folder with ``corpus/``: ``../shared/datasets/qa``) to the
documents. A first step on the wrong side is not a wrong answer (the replanner tries the
other side when a step finds nothing), but it costs a step and its latency, and the
wrong side may answer something else; so the share routed as expected is what a change
to the routing cues must not lower on any dataset.

Nothing is started: the planner is called in-process, the question text never leaves
this process and is not written to the report (ids and tools only).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from services.common.llm import PlanRequest, ToolName
from services.router.offline import DeterministicProvider

RECORDS = "records"
DOCUMENTS = "documents"


@dataclass(frozen=True)
class RoutingReport:
    """One dataset: where the first plan step of each question went."""

    dataset: str
    expected: str  # RECORDS or DOCUMENTS
    questions: int
    to_records: int
    to_documents: int
    several_steps: int  # plans the question was split into
    misrouted: tuple[str, ...]  # question ids whose first step went the other way

    @property
    def rate(self) -> float:
        right = self.to_records if self.expected == RECORDS else self.to_documents
        return right / self.questions if self.questions else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "dataset": self.dataset,
            "expected": self.expected,
            "questions": self.questions,
            "to_records": self.to_records,
            "to_documents": self.to_documents,
            "several_steps": self.several_steps,
            "routed_as_expected": round(self.rate, 4),
            "misrouted": list(self.misrouted),
        }


def expected_side(folder: Path) -> str:
    """Records for a folder of databases, documents for a corpus; anything else is no
    dataset this eval can score."""
    if (folder / "databases").is_dir():
        return RECORDS
    if (folder / "corpus").is_dir():
        return DOCUMENTS
    raise SystemExit(f"{folder}: neither databases/ nor corpus/ beside questions.jsonl")


async def route_dataset(folder: Path) -> RoutingReport:
    expected = expected_side(folder)
    questions = folder / "questions.jsonl"
    if not questions.is_file():
        raise SystemExit(f"{folder}: no questions.jsonl")
    provider = DeterministicProvider()
    tools: Counter[str] = Counter()
    several = 0
    misrouted: list[str] = []
    count = 0
    with questions.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            item = json.loads(line)
            plan = (await provider.plan(PlanRequest(item["question"]))).output
            count += 1
            if not plan.steps:
                tools["none"] += 1
                misrouted.append(str(item.get("id", number)))
                continue
            several += len(plan.steps) > 1
            side = RECORDS if plan.steps[0].tool is ToolName.SQL_QUESTION else DOCUMENTS
            tools[side] += 1
            if side != expected:
                misrouted.append(str(item.get("id", number)))
    return RoutingReport(
        dataset=str(folder),
        expected=expected,
        questions=count,
        to_records=tools[RECORDS],
        to_documents=tools[DOCUMENTS],
        several_steps=several,
        misrouted=tuple(misrouted),
    )


def main(folders: list[Path], out: Path) -> list[RoutingReport]:
    reports = [asyncio.run(route_dataset(folder)) for folder in folders]
    print(f"{'dataset':40} {'expect':>9} {'n':>5} {'records':>8} {'documents':>9} "
          f"{'split':>6} {'as expected':>12}")  # fmt: skip
    for r in reports:
        print(
            f"{r.dataset[-40:]:40} {r.expected:>9} {r.questions:>5} {r.to_records:>8} "
            f"{r.to_documents:>9} {r.several_steps:>6} {r.rate:>11.1%}"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([r.as_dict() for r in reports], indent=1) + "\n")
    print(f"\nwrote {out}")
    return reports
