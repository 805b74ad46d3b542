"""SQL execution accuracy on the golden set (``tandem eval sql``).

Every golden question is asked through the real pipeline (generator, gate, read-only
execution) and its gold SQL is executed through the same gate and role; the answer is
correct when the result sets match. Matching is order-insensitive unless the question
orders its answer, numbers compare at 4 decimal places, and the answer may carry extra
columns: each gold column must equal a distinct column of the answer (so "top 5 deals
by amount" may show the deal's name as well as its amount). Column names never matter.

Reported per category, for the active provider, with gate statistics: how many gold
statements the gate rejected (must be 0) and how many answers needed a repair.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from importlib import resources
from pathlib import Path
from typing import Any

from services.common import TandemError, Telemetry, TelemetrySettings
from services.sql import DEMO_TENANT, AskOutcome, SqlEngine, SqlSettings, build_deps
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb

DEFAULT_OUT = Path("bench-results/sql_eval.json")
_TENANT = DEMO_TENANT  # the demo warehouse serves its own tenant only
_MAX_ROWS = 1000


@dataclass(frozen=True)
class GoldenQuestion:
    """One question with its reference SQL."""

    id: str
    question: str
    sql: str
    categories: tuple[str, ...]
    ordered: bool = False
    split: str = "dev"


@dataclass(frozen=True)
class GoldenSet:
    reference_date: str
    questions: tuple[GoldenQuestion, ...]


def load_golden(path: Path | None = None) -> GoldenSet:
    """The golden set shipped with the package, or the one at ``path``."""
    if path is None:
        text = (resources.files("services.bench") / "golden" / "sql_golden.json").read_text()
    else:
        text = path.read_text()
    raw = json.loads(text)
    return GoldenSet(
        reference_date=raw["reference_date"],
        questions=tuple(
            GoldenQuestion(
                id=q["id"],
                question=q["question"],
                sql=q["sql"],
                categories=tuple(q["categories"]),
                ordered=bool(q.get("ordered", False)),
                split=str(q.get("split", "dev")),
            )
            for q in raw["questions"]
        ),
    )


# --- result comparison ------------------------------------------------------------------

Cell = object
Row = tuple[Cell, ...]


def normalize(value: cpb.SqlValue) -> Cell:
    """A comparable form: numbers as 4-place decimals, everything else as text."""
    which = value.WhichOneof("kind")
    if which in (None, "null_value"):
        return None
    if which in ("int_value", "double_value", "decimal_value"):
        raw = getattr(value, which)
        try:
            return Decimal(str(raw)).quantize(Decimal("0.0001"))
        except InvalidOperation:
            return str(raw)
    if which == "timestamp_value":
        # a period's start ("per month") reads the same as a date or a midnight instant
        return value.timestamp_value.ToJsonString().removesuffix("T00:00:00Z")
    if which == "array_value":
        return tuple(normalize(v) for v in value.array_value.values)
    return str(getattr(value, which))


def rows_of(result: pb.SqlResult) -> list[Row]:
    return [tuple(normalize(v) for v in row.values) for row in result.rows]


def results_match(gold: Sequence[Row], predicted: Sequence[Row], *, ordered: bool) -> bool:
    """True when some injective map of gold columns onto predicted columns makes the
    projected predicted rows equal the gold rows (as a sequence when ``ordered``)."""
    if len(gold) != len(predicted):
        return False
    if not gold:
        return True
    width, pred_width = len(gold[0]), len(predicted[0])
    if pred_width < width:
        return False
    candidates: list[list[int]] = []
    for j in range(width):
        column = [row[j] for row in gold]
        options = []
        for k in range(pred_width):
            other = [row[k] for row in predicted]
            same = (
                other == column
                if ordered
                else Counter(map(repr, other)) == Counter(map(repr, column))
            )
            if same:
                options.append(k)
        if not options:
            return False
        candidates.append(options)
    for assignment in itertools.islice(itertools.product(*candidates), 5000):
        if len(set(assignment)) != width:
            continue
        projected = [tuple(row[k] for k in assignment) for row in predicted]
        if ordered and projected == list(gold):
            return True
        if not ordered and Counter(map(repr, projected)) == Counter(map(repr, gold)):
            return True
    return False


# --- the run ------------------------------------------------------------------------------


async def evaluate(engine: SqlEngine, golden: GoldenSet) -> dict[str, Any]:
    """Ask every question, run every gold statement, compare; returns the report."""
    from services.sql import sql_result  # noqa: PLC0415

    items: list[dict[str, Any]] = []
    for item in golden.questions:
        record: dict[str, Any] = {
            "id": item.id,
            "split": item.split,
            "categories": list(item.categories),
        }
        try:
            gold = await engine.execute(_TENANT, "", item.sql, max_rows=_MAX_ROWS)
        except TandemError as exc:
            record.update(correct=False, gold_error=f"{exc.reason}: {exc.message}")
            items.append(record)
            continue
        gold_rows = rows_of(sql_result(gold))
        started = time.perf_counter()
        answer = await engine.ask(_TENANT, "", item.question, max_rows=_MAX_ROWS)
        record["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
        record["outcome"] = answer.outcome.name
        record["attempts"] = len(answer.attempts)
        record["repairs"] = answer.repairs
        record["sql"] = answer.attempts[-1].sql if answer.attempts else ""
        correct = False
        if answer.outcome is AskOutcome.ANSWERED and answer.answer is not None:
            predicted = [
                tuple(normalize(v) for v in row.values) for row in answer.answer.result.rows
            ]
            correct = results_match(gold_rows, predicted, ordered=item.ordered)
        record["correct"] = correct
        items.append(record)
    return _summary(items)


def _summary(items: list[dict[str, Any]]) -> dict[str, Any]:
    categories: dict[str, list[bool]] = {}
    for record in items:
        for category in record["categories"]:
            categories.setdefault(category, []).append(bool(record["correct"]))
    splits: dict[str, list[bool]] = {}
    for record in items:
        splits.setdefault(record["split"], []).append(bool(record["correct"]))
    total = len(items)
    correct = sum(1 for r in items if r["correct"])
    latencies = sorted(r["latency_ms"] for r in items if "latency_ms" in r)
    return {
        "provider": "deterministic",
        "questions": total,
        "correct": correct,
        "execution_accuracy": round(correct / total, 4) if total else 0.0,
        "gold_rejected": sum(1 for r in items if "gold_error" in r),
        "answered": sum(1 for r in items if r.get("outcome") == "ANSWERED"),
        "repaired": sum(1 for r in items if r.get("repairs", 0) > 0),
        "latency_ms_p50": latencies[len(latencies) // 2] if latencies else None,
        "latency_ms_p95": latencies[int(len(latencies) * 0.95)] if latencies else None,
        "by_split": {
            name: {
                "questions": len(flags),
                "correct": sum(flags),
                "accuracy": round(sum(flags) / len(flags), 4),
            }
            for name, flags in sorted(splits.items())
        },
        "by_category": {
            name: {
                "questions": len(flags),
                "correct": sum(flags),
                "accuracy": round(sum(flags) / len(flags), 4),
            }
            for name, flags in sorted(categories.items())
        },
        "items": items,
    }


def render(report: dict[str, Any]) -> str:
    """The report as a plain-text table."""
    lines = [
        f"SQL execution accuracy ({report['provider']} provider)",
        f"{'category':<12} {'questions':>9} {'correct':>8} {'accuracy':>9}",
    ]
    for name, row in report["by_category"].items():
        lines.append(
            f"{name:<12} {row['questions']:>9} {row['correct']:>8} {row['accuracy']:>9.1%}"
        )
    for name, row in report["by_split"].items():
        label = f"split:{name}"
        lines.append(
            f"{label:<12} {row['questions']:>9} {row['correct']:>8} {row['accuracy']:>9.1%}"
        )
    lines.append(
        f"{'overall':<12} {report['questions']:>9} {report['correct']:>8} "
        f"{report['execution_accuracy']:>9.1%}"
    )
    lines.append(
        f"gold SQL rejected by the gate: {report['gold_rejected']}; answered: "
        f"{report['answered']}; needed a repair: {report['repaired']}; "
        f"latency p50 {report['latency_ms_p50']} ms, p95 {report['latency_ms_p95']} ms"
    )
    wrong = [r["id"] for r in report["items"] if not r["correct"]]
    if wrong:
        lines.append("incorrect: " + ", ".join(wrong))
    return "\n".join(lines)


async def _run(settings: SqlSettings, golden: GoldenSet) -> dict[str, Any]:
    telemetry = Telemetry(TelemetrySettings(service_name="sql-eval"))
    deps = await build_deps(settings, telemetry)
    try:
        return await evaluate(deps.engine, golden)
    finally:
        await deps.close()
        telemetry.shutdown()


def main(
    out: Path = DEFAULT_OUT,
    golden_path: Path | None = None,
    settings: SqlSettings | None = None,
) -> dict[str, Any]:
    """Run the eval against the demo warehouse, print the table, write JSON to ``out``.

    Relative dates in questions are read against the golden set's reference date.
    """
    golden = load_golden(golden_path)
    base = settings or SqlSettings.from_env()
    from datetime import date  # noqa: PLC0415

    configured = replace(base, reference_date=date.fromisoformat(golden.reference_date))
    report = asyncio.run(_run(configured, golden))
    print(render(report))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwrote {out}")
    return report


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m services.bench.sql_golden", description=__doc__
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--golden", type=Path, default=None)
    args = parser.parse_args(argv)
    report = main(args.out, args.golden)
    return 0 if report["gold_rejected"] == 0 else 1


if __name__ == "__main__":
    sys.exit(_cli())
