"""``tandem eval chat --dataset DIR``: follow-ups on databases nobody here wrote.

Scripted conversations over a dev set's databases (``../shared/datasets/sql``,
``../shared/datasets/sql-spider``), written for them in ``golden/conversations_*.json``:
each follow-up turn carries its kind (value swap, regroup, limit, filter, time shift,
result reference), the same request spelled out as one standalone question, and gold SQL
for it. Every conversation runs through the real router (mode AUTO, so routing is part of
what is measured) with history passed from turn to turn exactly as the gateway passes it,
on the SQL service over the dev databases (meanings by the embedding model, as
deployed); each follow-up's spelled-out question is then asked alone, outside any
conversation.

A dev set has several scripts (``conversations_<set>.json``, then
``conversations_<set>_<name>.json``: phrasings written later, unlike the first ones), each
reported on its own. Where the dev set names study and blind halves (its README), a
blind database's turns are counted per kind and never listed: the report's ``items`` and
the misses printed are the study half's, ``halves`` holds each half's totals.

Per kind: follow-ups, **recognised** (resolved as a follow-up, neither standalone nor
unresolved), **answered**, **correct** (its rows match the gold under the dev sets' rule),
**refused**, precision, the **spelled-out** question's own accuracy, and **same rows**
(of the follow-ups whose spelled-out question got rows, how many got the very same
rows). Targets (issue 45): same rows ≥ 90%; every kind ≥ 80% precision and ≥ 70%
recognised; follow-up accuracy at least 0.85 of the spelled-out accuracy (issue 35).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.bench.reserve import reserved
from services.bench.sql_dataset import (
    MAX_ROWS,
    Cell,
    DatasetQuestion,
    LoadOptions,
    blind_databases,
    cell,
    database_names,
    finish_loading,
    gold_results,
    load_databases,
    load_dataset,
    matches,
)
from services.bench.stack import EvalStack, eval_stack
from services.common import DatabaseSettings, resolve_url
from services.sql import TargetConfig, ranking_cut
from tandem.v1 import router_service_pb2 as pb

GOLDEN = Path(__file__).parent / "golden"
TENANT = "eval-conversations"
KINDS = ("value_swap", "regroup", "limit", "filter", "time_shift", "result_reference")
TARGET_RATIO = 0.85
TARGET_SAME_ROWS = 0.90
TARGET_RECOGNISED = 0.70
TARGET_PRECISION = 0.80
Rows = list[tuple[Cell, ...]]


@dataclass(frozen=True)
class Turn:
    question: str
    kind: str
    gold_sql: str
    spelled_out: str = ""


@dataclass(frozen=True)
class Conversation:
    id: str
    db: str
    turns: tuple[Turn, ...]


def load_conversations(path: Path) -> tuple[str, list[Conversation]]:
    """(the dataset folder name, the conversations) of one scripted file; ValueError
    naming the conversation and turn when one is malformed."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    conversations: list[Conversation] = []
    for conv in raw["conversations"]:
        turns: list[Turn] = []
        for index, turn in enumerate(conv["turns"]):
            kind = turn["kind"]
            if (index == 0) != (kind == "standalone") or (index and kind not in KINDS):
                raise ValueError(f"{path}: {conv['id']} turn {index + 1}: kind {kind!r}")
            if index and not turn.get("spelled_out"):
                raise ValueError(f"{path}: {conv['id']} turn {index + 1}: no spelled_out")
            spelled = turn.get("spelled_out", "")
            turns.append(Turn(turn["question"], kind, turn["gold_sql"], spelled))
        conversations.append(Conversation(conv["id"], conv["db"], tuple(turns)))
    return str(raw["dataset"]), conversations


def script_for(dataset_dir: Path) -> Path:
    """The first scripted conversations written for a dev set (by its folder's name)."""
    name = {"sql": "defog", "sql-spider": "spider"}.get(dataset_dir.name, dataset_dir.name)
    return GOLDEN / f"conversations_{name}.json"


def scripts_for(dataset_dir: Path) -> list[Path]:
    """Every script written for a dev set: the first, then the later ones by name."""
    first = script_for(dataset_dir)
    later = sorted(first.parent.glob(f"{first.stem}_*.json"))
    return [p for p in (first, *later) if p.exists()]


def _rows(answer: pb.Answer) -> Rows | None:
    """The first SQL result's rows, or None when the answer ran no SQL."""
    if not answer.sql_results:
        return None
    result = answer.sql_results[0].result
    return [tuple(cell(v) for v in row.values) for row in result.rows]


def _ordered(question: str) -> bool:
    return any(w in question.lower().split() for w in ("order", "sort", "sorted", "arrange"))


async def _ask(
    stack: EvalStack, db: str, question: str, history: Sequence[pb.ConversationTurn] = ()
) -> pb.Answer:
    reply = await stack.router.Ask(
        pb.AskRequest(
            tenant_id=stack.tenant,
            question=question,
            mode=pb.ASK_MODE_AUTO,
            options=pb.AskOptions(database=db, max_rows=MAX_ROWS),
            conversation_id=f"eval-{db}" if history else "",
            history=list(history),
        ),
        timeout=120,
    )
    return reply.answer


_ANSWERS = (pb.ANSWER_OUTCOME_ANSWERED, pb.ANSWER_OUTCOME_PARTIAL)


def _score(answer: pb.Answer, gold: Sequence[Rows | str], question: str) -> dict[str, Any]:
    rows = _rows(answer)
    # An answer that ran SQL answered with its rows, even when the router calls it partial
    # (an empty result is a step the router could not fill): empty rows are an answer.
    answered = rows is not None and answer.outcome in _ANSWERS
    correct = answered and any(
        not isinstance(g, str) and matches(g, rows or [], ordered=_ordered(question)) for g in gold
    )
    return {
        "sql": answer.sql_results[0].result.sql if answer.sql_results else "",
        "route": pb.Route.Name(answer.route),
        "outcome": pb.AnswerOutcome.Name(answer.outcome),
        "answered": answered,
        "correct": bool(correct),
        "rows": rows,
        # what a refusal said (it names what it could not place): read per turn on the
        # study scripts, never on the blind ones
        "message": "" if answered else answer.text,
    }


async def run(
    stack: EvalStack, conversations: Sequence[Conversation], gold: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every conversation turn by turn, each follow-up's spelled-out question alone."""
    records: list[dict[str, Any]] = []
    for conv in conversations:
        history: list[pb.ConversationTurn] = []
        for index, turn in enumerate(conv.turns):
            key = f"{conv.id}#{index + 1}"
            answer = await _ask(stack, conv.db, turn.question, history)
            history.append(answer.turn)
            previous = records[-1] if index else None
            record = {
                "id": key,
                "db": conv.db,
                "kind": turn.kind,
                "question": turn.question,
                "resolved_kind": pb.FollowUpKind.Name(answer.resolution.kind),
                "resolved_question": answer.resolution.resolved_question,
                "unresolved_reason": answer.resolution.unresolved_reason,
                **_score(answer, gold[key], turn.spelled_out or turn.question),
                # a follow-up on a wrong answer inherits its error: told apart below
                "previous_correct": bool(previous and previous["correct"]),
            }
            if turn.spelled_out:
                alone = _score(
                    await _ask(stack, conv.db, turn.spelled_out), gold[key], turn.spelled_out
                )
                record["spelled_out"] = turn.spelled_out
                record["alone"] = {k: v for k, v in alone.items() if k not in ("rows",)}
                record["same_rows"] = (
                    bool(alone["rows"])
                    and record["rows"] is not None
                    and sorted(map(repr, record["rows"])) == sorted(map(repr, alone["rows"]))
                )
                record["alone_rows"] = bool(alone["rows"])
            records.append(record)
    for record in records:
        record.pop("rows", None)
    return records


_RECOGNISED_NOT = ("FOLLOW_UP_KIND_STANDALONE", "FOLLOW_UP_KIND_UNRESOLVED")


def _rate(answered: Sequence[dict[str, Any]]) -> float:
    return round(sum(r["correct"] for r in answered) / len(answered), 4) if answered else 0.0


def summarise(
    records: Sequence[dict[str, Any]], blind: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Counts per follow-up kind and over all follow-ups, with the targets; the turns on
    ``blind`` databases are counted (overall and in ``halves``) and never listed."""

    def counts(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
        n = len(items)
        answered = sum(r["answered"] for r in items)
        after_right = [r for r in items if r["answered"] and r.get("previous_correct", True)]
        correct = sum(r["correct"] for r in items)
        alone_correct = sum(r["alone"]["correct"] for r in items)
        with_rows = [r for r in items if r["alone_rows"]]
        right_alone = [r for r in items if r["alone"]["correct"]]
        return {
            "follow_ups": n,
            "recognised": sum(r["resolved_kind"] not in _RECOGNISED_NOT for r in items),
            "on_sql": sum(r["route"] == "ROUTE_SQL" for r in items),
            "answered": answered,
            "correct": correct,
            "refused": n - answered,
            "precision": round(correct / answered, 4) if answered else 0.0,
            # precision of the follow-ups whose previous turn was answered right: the
            # follow-up's own errors, without those it inherits
            "answered_after_right": len(after_right),
            "precision_after_right": _rate(after_right),
            "accuracy": round(correct / n, 4) if n else 0.0,
            "spelled_out_correct": alone_correct,
            "spelled_out_accuracy": round(alone_correct / n, 4) if n else 0.0,
            "spelled_out_with_rows": len(with_rows),
            "same_rows": sum(r["same_rows"] for r in with_rows),
            # where the spelled-out question was right: did the follow-up match it?
            "spelled_out_right_same_rows": sum(r["same_rows"] for r in right_alone),
            # rows that differ although both are right by the gold: the same answer shown
            # with other columns beside it (a name, the ranked measure). Still a miss of
            # "same rows"; counted so a blind script's misses can be told apart by totals.
            "other_columns_both_right": sum(
                not r["same_rows"] and r["correct"] and r["alone"]["correct"] for r in with_rows
            ),
        }

    def kinds(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {k: counts([r for r in items if r["kind"] == k]) for k in KINDS}

    follow = [r for r in records if r["kind"] != "standalone"]
    by_kind = kinds(follow)
    overall = counts(follow)
    first = [r for r in records if r["kind"] == "standalone"]
    halves: dict[str, Any] = {}
    if blind:
        for half, inside in (("study", False), ("blind", True)):
            part = [r for r in follow if (r["db"] in blind) == inside]
            starts = [r for r in first if (r["db"] in blind) == inside]
            halves[half] = {
                "databases": sorted({r["db"] for r in [*part, *starts]}),
                "first_turns": {"questions": len(starts),
                                "correct": sum(r["correct"] for r in starts)},
                "by_kind": kinds(part),
                "overall": counts(part),
            }  # fmt: skip
    ratio = overall["correct"] / max(overall["spelled_out_correct"], 1)
    same = overall["same_rows"] / max(overall["spelled_out_with_rows"], 1)
    same_right = overall["spelled_out_right_same_rows"] / max(overall["spelled_out_correct"], 1)
    return {
        "conversations": len(first),
        "first_turns": {"questions": len(first), "correct": sum(r["correct"] for r in first)},
        "by_kind": by_kind,
        "overall": overall,
        "ratio_to_spelled_out": round(ratio, 4),
        "same_rows_rate": round(same, 4),
        "same_rows_where_spelled_out_right": round(same_right, 4),
        "targets": {
            "ratio": TARGET_RATIO,
            "same_rows": TARGET_SAME_ROWS,
            "recognised_per_kind": TARGET_RECOGNISED,
            "precision_per_kind": TARGET_PRECISION,
        },
        **({"halves": halves} if halves else {}),
        "items": [r for r in records if r.get("db") not in blind],
    }


def missed_targets(report: dict[str, Any]) -> list[str]:
    """The targets a report misses, by name (empty: all met)."""
    missed = []
    if report["ratio_to_spelled_out"] < TARGET_RATIO:
        missed.append("accuracy ratio")
    if report["same_rows_rate"] < TARGET_SAME_ROWS:
        missed.append("same rows")
    missed += [
        f"{kind} recognised"
        for kind, row in report["by_kind"].items()
        if row["follow_ups"] and row["recognised"] / row["follow_ups"] < TARGET_RECOGNISED
    ]
    missed += [
        f"{kind} precision"
        for kind, row in report["by_kind"].items()
        if row["answered"] and row["precision"] < TARGET_PRECISION
    ]
    return missed


def meets_targets(report: dict[str, Any]) -> bool:
    return not missed_targets(report)


def render(report: dict[str, Any], title: str) -> str:
    head = (
        f"{'kind':<18}{'n':>4}{'recog':>7}{'on sql':>7}{'answ':>6}{'right':>6}{'refus':>6}"
        f"{'prec':>7}{'prec*':>7}{'alone':>7}{'same rows':>11}"
    )

    def line(name: str, row: dict[str, Any]) -> str:
        same = f"{row['same_rows']}/{row['spelled_out_with_rows']}"
        after = f"{row['precision_after_right']:.1%}" if row.get("answered_after_right") else "-"
        return (
            f"{name:<18}{row['follow_ups']:>4}{row['recognised']:>7}{row['on_sql']:>7}"
            f"{row['answered']:>6}{row['correct']:>6}{row['refused']:>6}"
            f"{row['precision']:>7.1%}{after:>7}"
            f"{row['spelled_out_correct']:>7}{same:>11}"
        )

    first = report["first_turns"]
    lines = [
        f"follow-ups on {title}: {report['conversations']} conversations "
        f"(first turns {first['correct']}/{first['questions']} correct)",
        head,
        *(line(kind, row) for kind, row in report["by_kind"].items()),
        line("all follow-ups", report["overall"]),
        f"follow-up correct / spelled-out correct: {report['ratio_to_spelled_out']:.2f} "
        f"(target ≥ {TARGET_RATIO}); same rows {report['same_rows_rate']:.1%} "
        f"(target ≥ {TARGET_SAME_ROWS:.0%}; {report['same_rows_where_spelled_out_right']:.1%} "
        f"where the spelled-out question was right; of the rest "
        f"{report['overall']['other_columns_both_right']} both right, other columns shown); "
        "per kind targets: recognised ≥ "
        f"{TARGET_RECOGNISED:.0%}, precision ≥ {TARGET_PRECISION:.0%} (prec*: of the "
        "follow-ups to a right answer); "
        f"{'all met' if meets_targets(report) else 'MISS: ' + ', '.join(missed_targets(report))}",
    ]
    halves = {h: p for h, p in report.get("halves", {}).items() if p["overall"]["follow_ups"]}
    if len(halves) == 1:
        lines.append(f"(every follow-up is on the {next(iter(halves))} half)")
    for half, part in halves.items() if len(halves) > 1 else ():
        begun = part["first_turns"]
        lines += [
            "",
            f"{half} half ({', '.join(part['databases'])}; first turns "
            f"{begun['correct']}/{begun['questions']} correct)"
            + (": totals only, its turns are never listed" if half == "blind" else ""),
            head,
            *(line(kind, row) for kind, row in part["by_kind"].items()),
            line("all follow-ups", part["overall"]),
        ]
    if len(halves) > 1:
        lines.append("")
    for item in report["items"]:
        if item["kind"] != "standalone" and not item["correct"]:
            lines.append(
                f"  MISS {item['id']} [{item['kind']}] {item['resolved_kind'][15:].lower()}"
                f" {item['route'][6:].lower()} {item['outcome'][15:].lower()}"
                f" alone={'ok' if item['alone']['correct'] else 'no'}"
            )
    return "\n".join(lines)


async def check_gold(admin: str, questions: Sequence[DatasetQuestion]) -> dict[str, Any]:
    """Each question's gold rows; ValueError naming the turns whose gold fails, returns no
    row, or cuts a ranking between rows of equal keys (a tie at the LIMIT)."""
    gold = await gold_results(admin, questions)
    problems = [f"{q.id} (fails)" for q in questions
                if all(isinstance(g, str) for g in gold[q.id])]  # fmt: skip
    problems += [f"{q.id} (no rows)" for q in questions if gold[q.id] == [[]]]
    ranked = {q.id: found for q in questions if (found := ranking_cut(q.gold_sql[0]))}
    keyed = await gold_results(admin, [
        DatasetQuestion(q.id, q.db, q.category, q.question, "", (ranked[q.id][0],))
        for q in questions if q.id in ranked
    ])  # fmt: skip
    for key, (_, cut, width) in ranked.items():
        rows = keyed[key][0]
        if isinstance(rows, str):
            problems.append(f"{key} (its sort keys do not run: {rows[:80]})")
            continue
        if len(rows) > cut and rows[cut - 1][-width:] == rows[cut][-width:]:
            problems.append(f"{key} (a tie at LIMIT {cut})")
    if problems:
        raise ValueError("gold SQL: " + ", ".join(problems))
    return gold


async def evaluate(dataset_dir: Path, scripts: Sequence[Path]) -> list[dict[str, Any]]:
    """One report per script, every script on one stack over the dev set's databases."""
    dataset = load_dataset(dataset_dir)
    blind = blind_databases(dataset)
    scripted = [(script, load_conversations(script)[1]) for script in scripts]
    questions = [
        DatasetQuestion(f"{c.id}#{i + 1}", c.db, t.kind, t.spelled_out or t.question, "",
                        (t.gold_sql,))
        for _, conversations in scripted
        for c in conversations
        for i, t in enumerate(c.turns)
    ]  # fmt: skip
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise ValueError("two scripts of one dev set share a conversation id")
    admin = await asyncio.to_thread(resolve_url, DatabaseSettings.from_env())
    reports = []
    # The dev set's databases are this run's until its last turn: another eval on the
    # same server waits rather than drops them under its conversations.
    async with reserved(admin, database_names(dataset, LoadOptions())):
        urls = await load_databases(admin, dataset)
        gold = await check_gold(admin, questions)
        await finish_loading(admin, dataset, LoadOptions())
        targets = [TargetConfig(db, url, tenants=frozenset({TENANT})) for db, url in urls.items()]
        async with eval_stack((), TENANT, databases=targets) as stack:
            for script, conversations in scripted:
                report = summarise(await run(stack, conversations, gold), blind)
                report["dataset"] = str(dataset_dir)
                report["script"] = str(script)
                reports.append(report)
    return reports


def main(
    dataset_dir: Path, out: Path | None = None, scripts: Sequence[Path] = ()
) -> list[dict[str, Any]]:
    """Run the eval for one dev set (every script written for it, or ``scripts``), print
    a table per script, write its JSON (``out`` names the first script's; a later
    script's adds its name: ``eval-conversations-sql-spider_blind.json``)."""
    chosen = list(scripts) or scripts_for(dataset_dir)
    reports = asyncio.run(evaluate(dataset_dir, chosen))
    first = out or Path(f"bench-results/eval-conversations-{dataset_dir.name}.json")
    first.parent.mkdir(parents=True, exist_ok=True)
    for script, report in zip(chosen, reports, strict=True):
        own = script_for(dataset_dir).stem
        suffix = script.stem[len(own) :] if script.stem.startswith(own) else f"-{script.stem}"
        print(render(report, f"{dataset_dir.name}{suffix} ({script.name})"))
        path = first.with_stem(first.stem + suffix) if suffix else first
        path.write_text(json.dumps(report, indent=2, default=str))
        print(f"\nwrote {path}\n")
    return reports
