"""Conversation eval: ``tandem eval chat``.

Scripted two- and three-turn conversations over the demo data, run through the real
router (in-process stack: embedding model, retrieval with the demo documents, SQL on the
demo warehouse, the deterministic provider). Each turn carries its expected answer,
computed by a gold query against the warehouse (a count, a breakdown, a list's members)
or named documents (the call notes the answer must cite), and the follow-up kind it
exercises. History passes from turn to turn exactly as the gateway passes it: the
previous answers' ``turn`` records.

Reported per follow-up kind: turns, correct, accuracy; the resolution time p50/p95
(target ≤ 5 ms p50); and standalone questions asked inside a conversation against the
same questions asked outside one (they must score the same). Target: ≥ 85% of follow-up
turns correct offline.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from services.bench.stack import EvalStack, eval_stack
from services.demo import ACCOUNT_BRIEF, CALL_NOTE, generate_documents
from tandem.v1 import router_service_pb2 as pb

TENANT = "eval-chat"
TARGET_ACCURACY = 0.85
TARGET_RESOLVE_P50_MS = 5.0

_OPEN = "o.stage NOT IN ('Closed Won', 'Closed Lost')"
_FROM_OPP = (
    "FROM opportunities o JOIN products p ON p.product_id = o.product_id "
    "JOIN companies c ON c.company_id = o.company_id "
    "JOIN regions r ON r.region_id = c.region_id"
)


@dataclass(frozen=True)
class Expect:
    """What a correct answer holds: a ``count``, a ``breakdown`` (label → count) or
    ``members`` from a gold query; ``cites`` (document titles, at least one cited and
    none outside them); or ``unresolved`` (the answer says it cannot tell)."""

    count_sql: str = ""
    breakdown_sql: str = ""
    params: tuple[Any, ...] = ()
    cites_from: str = ""  # a gold query whose first column names the companies
    cite_prefix: str = "Call notes: "
    unresolved: bool = False


@dataclass(frozen=True)
class Turn:
    question: str
    kind: str  # the follow-up kind this turn exercises ("standalone" for the first)
    expect: Expect


@dataclass(frozen=True)
class Conversation:
    name: str
    turns: tuple[Turn, ...]


def _count_open(product: str, extra: str = "") -> str:
    return f"SELECT count(*) {_FROM_OPP} WHERE p.name = '{product}' AND {_OPEN} {extra}"


_TOP5 = (
    "SELECT c.name FROM opportunities o JOIN companies c ON c.company_id = o.company_id "
    f"WHERE {_OPEN} GROUP BY c.company_id, c.name ORDER BY sum(o.amount) DESC LIMIT 5"
)
_YEAR = "AND o.created_at >= '{y}-01-01' AND o.created_at < '{n}-01-01'"


def _year(y: int) -> str:
    return _YEAR.format(y=y, n=y + 1)


def _contacts_of_ranked(rank: int) -> str:
    return (
        "SELECT count(*) FROM contacts ct WHERE ct.company_id = (SELECT company_id FROM ("
        "SELECT c.company_id, sum(o.amount) AS s FROM opportunities o JOIN companies c "
        f"ON c.company_id = o.company_id WHERE {_OPEN} GROUP BY c.company_id "
        f"ORDER BY s DESC LIMIT 1 OFFSET {rank - 1}) x)"
    )


def conversations() -> list[Conversation]:
    """The scripted conversations (44), grouped by the follow-up kind they exercise."""
    out: list[Conversation] = []
    products = ("Security Suite", "Forecast AI", "Insight Analytics", "Data Connect")
    industries = ("Healthcare", "Retail", "Logistics", "Energy")
    # Ellipsis on time: a count, then another year (and a third turn narrowing it).
    for product, (y1, y2) in zip(products, ((2024, 2023), (2023, 2024), (2024, 2025),
                                            (2025, 2024)), strict=True):  # fmt: skip
        out.append(Conversation(f"time/{product}", (
            Turn(f"How many open {product} opportunities are there in {y1}?", "standalone",
                 Expect(count_sql=_count_open(product, _year(y1)))),
            Turn(f"and in {y2}?", "time_shift", Expect(count_sql=_count_open(product, _year(y2)))),
        )))  # fmt: skip
    for y1, y2 in ((2023, 2024), (2024, 2025)):
        out.append(Conversation(f"time/created-{y1}", (
            Turn(f"How many opportunities were created in {y1}?", "standalone",
                 Expect(count_sql=f"SELECT count(*) FROM opportunities o WHERE true {_year(y1)}")),
            Turn(f"what about {y2}?", "time_shift",
                 Expect(count_sql=f"SELECT count(*) FROM opportunities o WHERE true {_year(y2)}")),
        )))  # fmt: skip
    for product in products[:2]:
        out.append(Conversation(f"time+filter/{product}", (
            Turn(f"How many open {product} opportunities are there?", "standalone",
                 Expect(count_sql=_count_open(product))),
            Turn("and in 2024?", "time_shift", Expect(count_sql=_count_open(product, _year(2024)))),
            Turn("only the healthcare ones", "filter", Expect(count_sql=_count_open(
                product, _year(2024) + " AND c.industry = 'Healthcare'"))),
        )))  # fmt: skip
    # Ellipsis on a value: another product, country or region.
    for p1, p2 in zip(products, products[1:] + products[:1], strict=True):
        out.append(Conversation(f"swap/{p1}->{p2}", (
            Turn(f"How many open {p1} opportunities are there?", "standalone",
                 Expect(count_sql=_count_open(p1))),
            Turn(f"what about {p2}?", "value_swap", Expect(count_sql=_count_open(p2))),
        )))  # fmt: skip
    for c1, c2 in (("Germany", "France"), ("Japan", "Brazil"), ("Canada", "Spain")):
        gold = "SELECT count(*) FROM companies WHERE country = %s"
        out.append(Conversation(f"swap/{c1}->{c2}", (
            Turn(f"How many companies are in {c1}?", "standalone",
                 Expect(count_sql=gold, params=(c1,))),
            Turn(f"and {c2}?", "value_swap", Expect(count_sql=gold, params=(c2,))),
        )))  # fmt: skip
    for r1, r2 in (("EMEA", "APAC"), ("APAC", "LATAM")):
        gold = f"SELECT count(*) {_FROM_OPP} WHERE {_OPEN} AND r.name = %s"
        out.append(Conversation(f"swap/{r1}->{r2}", (
            Turn(f"How many open opportunities are there in {r1}?", "standalone",
                 Expect(count_sql=gold, params=(r1,))),
            Turn(f"how about {r2}?", "value_swap", Expect(count_sql=gold, params=(r2,))),
        )))  # fmt: skip
    # Narrowing: "only the healthcare ones".
    for product, industry in zip(products, industries, strict=True):
        out.append(Conversation(f"filter/{product}/{industry}", (
            Turn(f"How many open {product} opportunities are there?", "standalone",
                 Expect(count_sql=_count_open(product))),
            Turn(f"only the {industry.lower()} ones", "filter",
                 Expect(count_sql=_count_open(product, f"AND c.industry = '{industry}'"))),
        )))  # fmt: skip
    for country, industry in (("Germany", "Retail"), ("France", "Energy")):
        gold = "SELECT count(*) FROM companies WHERE country = %s"
        out.append(Conversation(f"filter/{country}/{industry}", (
            Turn(f"How many companies are in {country}?", "standalone",
                 Expect(count_sql=gold, params=(country,))),
            Turn(f"just the {industry.lower()} ones?", "filter",
                 Expect(count_sql=gold + " AND industry = %s", params=(country, industry))),
        )))  # fmt: skip
    # Breakdown: "break it down by region".
    for product in products[:3]:
        out.append(Conversation(f"breakdown/{product}", (
            Turn(f"How many open {product} opportunities are there?", "standalone",
                 Expect(count_sql=_count_open(product))),
            Turn("break it down by region", "breakdown", Expect(breakdown_sql=(
                f"SELECT r.name, count(*) {_FROM_OPP} WHERE p.name = '{product}' AND {_OPEN} "
                "GROUP BY r.name"))),
        )))  # fmt: skip
    for product in products[:2]:
        out.append(Conversation(f"breakdown-stage/{product}", (
            Turn(f"How many open {product} opportunities are there?", "standalone",
                 Expect(count_sql=_count_open(product))),
            Turn("and by stage?", "breakdown", Expect(breakdown_sql=(
                f"SELECT o.stage, count(*) {_FROM_OPP} WHERE p.name = '{product}' AND {_OPEN} "
                "GROUP BY o.stage"))),
        )))  # fmt: skip
    out.append(Conversation("breakdown/companies-germany", (
        Turn("How many companies are in Germany?", "standalone",
             Expect(count_sql="SELECT count(*) FROM companies WHERE country = 'Germany'")),
        Turn("break it down by industry", "breakdown", Expect(breakdown_sql=(
            "SELECT industry, count(*) FROM companies WHERE country = 'Germany' "
            "GROUP BY industry"))),
    )))  # fmt: skip
    # References to the previous result: "how many of them", "their call notes".
    for product, industry in zip(products[:3], industries[:3], strict=True):
        out.append(Conversation(f"reference/{product}/{industry}", (
            Turn(f"How many open {product} opportunities are there?", "standalone",
                 Expect(count_sql=_count_open(product))),
            Turn(f"how many of them are in {industry.lower()}?", "result_reference",
                 Expect(count_sql=_count_open(product, f"AND c.industry = '{industry}'"))),
        )))  # fmt: skip
    for topic in ("pricing", "security reviews", "next steps"):
        out.append(Conversation(f"reference/top5-call-notes/{topic}", (
            Turn("List the top 5 companies by open pipeline.", "standalone",
                 Expect(cites_from="", count_sql="")),
            Turn(f"What do their call notes say about {topic}?", "result_reference",
                 Expect(cites_from=_TOP5)),
        )))  # fmt: skip
    # Ordinals: "the second one" of a ranked list (and a third turn moving along it).
    for rank, word in ((2, "second"), (3, "third"), (1, "first")):
        out.append(Conversation(f"ordinal/{word}", (
            Turn("List the top 5 companies by open pipeline.", "standalone", Expect()),
            Turn(f"How many contacts does the {word} one have?", "ordinal",
                 Expect(count_sql=_contacts_of_ranked(rank))),
            Turn("and the fourth one?", "ordinal", Expect(count_sql=_contacts_of_ranked(4))),
        )))  # fmt: skip
    for rank, word in ((2, "second"), (5, "last")):
        out.append(Conversation(f"ordinal-notes/{word}", (
            Turn("List the top 5 companies by open pipeline.", "standalone", Expect()),
            Turn(f"What do the call notes say about the {word} one?", "ordinal",
                 Expect(cites_from=f"{_TOP5} OFFSET 0".replace(
                     "LIMIT 5 OFFSET 0", f"LIMIT 1 OFFSET {rank - 1}"))),
        )))  # fmt: skip
    # References that point at nothing: said so, never guessed.
    for product in products[:3]:
        out.append(Conversation(f"unresolved/{product}", (
            Turn(f"How many open {product} opportunities are there?", "standalone",
                 Expect(count_sql=_count_open(product))),
            Turn("what do the call notes say about the second one?", "unresolved",
                 Expect(unresolved=True)),
        )))  # fmt: skip
    # Topic changes: a standalone question inside a conversation is answered as asked.
    for product, industry in zip(products, industries, strict=True):
        gold = "SELECT count(*) FROM companies WHERE industry = %s"
        out.append(Conversation(f"topic/{product}/{industry}", (
            Turn(f"How many open {product} opportunities are there?", "standalone",
                 Expect(count_sql=_count_open(product))),
            Turn(f"How many companies are in {industry.lower()}?", "topic_change",
                 Expect(count_sql=gold, params=(industry,))),
        )))  # fmt: skip
    return out


def _value(v: Any) -> Any:
    kind = v.WhichOneof("kind")
    return getattr(v, kind) if kind else None


def _first_int(answer: pb.Answer) -> int | None:
    for item in answer.sql_results:
        for row in item.result.rows[:1]:
            for value in row.values:
                got = _value(value)
                if isinstance(got, int) and not isinstance(got, bool):
                    return got
    return None


def _breakdown(answer: pb.Answer) -> dict[str, int]:
    """label → count from a grouped result: the last text column and the last integer."""
    out: dict[str, int] = {}
    for item in answer.sql_results[:1]:
        for row in item.result.rows:
            values = [_value(v) for v in row.values]
            labels = [v for v in values if isinstance(v, str)]
            counts = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
            if labels and counts:
                out[labels[-1]] = counts[-1]
    return out


@dataclass
class Scored:
    conversation: str
    turn: int
    kind: str
    question: str
    resolved: str
    resolved_kind: str
    correct: bool
    why: str
    resolve_ms: float
    total_ms: float


@dataclass
class Gold:
    conn: psycopg.Connection[Any]
    cache: dict[tuple[str, tuple[Any, ...]], list[tuple[Any, ...]]] = field(default_factory=dict)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        key = (sql, tuple(params))
        if key not in self.cache:
            self.cache[key] = list(self.conn.execute(sql, tuple(params)).fetchall())
        return self.cache[key]


def score(answer: pb.Answer, expect: Expect, gold: Gold) -> tuple[bool, str]:
    """Whether ``answer`` holds what ``expect`` says, and why not."""
    if expect.unresolved:
        ok = (
            answer.resolution.kind == pb.FOLLOW_UP_KIND_UNRESOLVED
            and answer.outcome == pb.ANSWER_OUTCOME_NOT_FOUND
            and not answer.sql_results
            and not answer.citations
        )
        return ok, "" if ok else "guessed instead of saying the reference is unresolved"
    if expect.count_sql:
        want = int(gold.rows(expect.count_sql, expect.params)[0][0])
        got = _first_int(answer)
        return got == want, "" if got == want else f"count {got} != {want}"
    if expect.breakdown_sql:
        want_map = {str(r[0]): int(r[1]) for r in gold.rows(expect.breakdown_sql, expect.params)}
        got_map = _breakdown(answer)
        ok = got_map == want_map
        return ok, "" if ok else f"breakdown {got_map} != {want_map}"
    if expect.cites_from:
        names = {str(r[0]) for r in gold.rows(expect.cites_from, expect.params)}
        titles = [c.title for c in answer.citations if c.title.startswith(expect.cite_prefix)]
        cited = {t[len(expect.cite_prefix) :] for t in titles}
        ok = bool(cited) and cited <= names
        return ok, "" if ok else f"cited {sorted(cited)} not within {sorted(names)}"
    return answer.outcome == pb.ANSWER_OUTCOME_ANSWERED, "not answered"


def _ms(duration: Any) -> float:
    return float(duration.seconds * 1000 + duration.nanos / 1e6)


async def run(stack: EvalStack, convs: Sequence[Conversation]) -> dict[str, Any]:
    """Every conversation, turn by turn with history passed on; then every standalone
    question again outside a conversation."""
    scored: list[Scored] = []
    outside: dict[str, bool] = {}
    with psycopg.connect(stack.warehouse_url) as conn:
        gold = Gold(conn)
        for conv in convs:
            history: list[pb.ConversationTurn] = []
            for index, turn in enumerate(conv.turns):
                started = time.perf_counter()
                reply = await stack.router.Ask(
                    pb.AskRequest(tenant_id=stack.tenant, question=turn.question,
                                  conversation_id=conv.name, history=history),
                    timeout=60,
                )  # fmt: skip
                total = (time.perf_counter() - started) * 1000
                answer = reply.answer
                ok, why = score(answer, turn.expect, gold)
                scored.append(
                    Scored(
                        conv.name, index + 1, turn.kind, turn.question,
                        answer.resolution.resolved_question,
                        pb.FollowUpKind.Name(answer.resolution.kind), ok, why,
                        _ms(answer.resolution.duration), total,
                    )
                )  # fmt: skip
                history.append(answer.turn)
                if turn.kind in ("standalone", "topic_change") and turn.question not in outside:
                    alone = await stack.router.Ask(
                        pb.AskRequest(tenant_id=stack.tenant, question=turn.question), timeout=60
                    )
                    outside[turn.question] = score(alone.answer, turn.expect, gold)[0]
    return summarise(scored, outside)


def summarise(scored: Sequence[Scored], outside: dict[str, bool]) -> dict[str, Any]:
    kinds: dict[str, dict[str, Any]] = {}
    for item in scored:
        row = kinds.setdefault(item.kind, {"turns": 0, "correct": 0})
        row["turns"] += 1
        row["correct"] += int(item.correct)
    for row in kinds.values():
        row["accuracy"] = round(row["correct"] / row["turns"], 4)
    follow = [s for s in scored if s.kind not in ("standalone",)]
    inside = [s for s in scored if s.kind in ("standalone", "topic_change")]
    resolve_ms = [s.resolve_ms for s in follow]
    return {
        "conversations": len({s.conversation for s in scored}),
        "turns": len(scored),
        "by_kind": kinds,
        "follow_up": {
            "turns": len(follow),
            "correct": sum(s.correct for s in follow),
            "accuracy": round(sum(s.correct for s in follow) / max(len(follow), 1), 4),
            "target": TARGET_ACCURACY,
        },
        "standalone": {
            "inside_correct": sum(s.correct for s in inside),
            "outside_correct": sum(outside.get(s.question, False) for s in inside),
            "questions": len(inside),
            "differ": [s.question for s in inside if s.correct != outside.get(s.question, False)],
        },
        "resolve_ms": {
            "p50": round(float(np.percentile(resolve_ms, 50)), 3) if resolve_ms else 0.0,
            "p95": round(float(np.percentile(resolve_ms, 95)), 3) if resolve_ms else 0.0,
            "target_p50": TARGET_RESOLVE_P50_MS,
        },
        "turn_ms_p50": round(float(np.percentile([s.total_ms for s in scored], 50)), 1),
        "failures": [s.__dict__ for s in scored if not s.correct],
        "turns_detail": [s.__dict__ for s in scored],
    }


def render(results: dict[str, Any]) -> str:
    """The table printed on stdout."""
    lines = [
        f"conversation eval (deterministic provider): {results['conversations']} "
        f"conversations, {results['turns']} turns",
        f"{'kind':<18}{'turns':>7}{'correct':>9}{'accuracy':>10}",
    ]
    for kind, row in sorted(results["by_kind"].items()):
        lines.append(f"{kind:<18}{row['turns']:>7}{row['correct']:>9}{row['accuracy']:>10.1%}")
    follow = results["follow_up"]
    verdict = "ok" if follow["accuracy"] >= follow["target"] else "MISS"
    lines.append(
        f"{'all follow-ups':<18}{follow['turns']:>7}{follow['correct']:>9}"
        f"{follow['accuracy']:>10.1%}  target ≥ {follow['target']:.0%} {verdict}"
    )
    alone = results["standalone"]
    lines.append(
        f"standalone questions: {alone['inside_correct']}/{alone['questions']} correct inside "
        f"a conversation, {alone['outside_correct']}/{alone['questions']} outside"
    )
    res = results["resolve_ms"]
    verdict = "ok" if res["p50"] <= res["target_p50"] else "MISS"
    lines.append(
        f"resolution: p50 {res['p50']:.3f} ms, p95 {res['p95']:.3f} ms "
        f"(target p50 ≤ {res['target_p50']:.0f} ms {verdict}); "
        f"whole turn p50 {results['turn_ms_p50']:.0f} ms"
    )
    for failure in results["failures"]:
        lines.append(
            f"  FAIL {failure['conversation']} #{failure['turn']} [{failure['kind']}] "
            f"-> {failure['resolved_kind']}: {failure['why']}"
        )
    return "\n".join(lines)


def main(out: Path = Path("bench-results/eval-chat.json"), *, only: str = "") -> dict[str, Any]:
    """Run the eval, print the table, write JSON to ``out``."""
    selected: Callable[[Conversation], bool] = lambda c: only in c.name  # noqa: E731
    convs = [c for c in conversations() if selected(c)]
    corpus = generate_documents()
    documents = [d for d in corpus.documents if d.category in (CALL_NOTE, ACCOUNT_BRIEF)]

    async def go() -> dict[str, Any]:
        async with eval_stack(documents, TENANT) as stack:
            return await run(stack, convs)

    results = asyncio.run(go())
    print(render(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str))
    print(f"\nwrote {out}")
    return results
