"""Router latency benchmark: ``tandem bench router``.

Starts the real stack in-process on loopback (the embedding model served over gRPC,
retrieval on a scratch database of the embedded Postgres, SQL on the demo warehouse, the
router with the deterministic provider), ingests a small fixture corpus, and measures
through the router's stub: RETRIEVE, AGENTIC and AUTO on a two-step compound question
(p50/p95/p99), and the time from sending StreamAsk to its first event. The embedding
query cache is off so every request embeds its question. Targets (issue 7): RETRIEVE
p50 ≤ 60 ms, AGENTIC ≤ 250 ms, AUTO two-step ≤ 400 ms, first event ≤ 50 ms.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from services.bench.stack import eval_stack
from services.demo import DemoDocument
from tandem.v1 import router_service_pb2 as pb

TENANT = "bench"
TARGETS_MS = {"retrieve": 60.0, "agentic": 250.0, "auto_two_step": 400.0, "first_event": 50.0}

CORPUS: tuple[tuple[str, str, str], ...] = (
    (
        "Meridian Health account brief",
        "brief",
        "Meridian Health operates forty outpatient clinics and is evaluating a healthcare "
        "analytics platform to reduce patient wait times. Their clinics need compliant "
        "reporting and the analytics budget was approved this year.",
    ),
    (
        "Northwind Logistics account brief",
        "brief",
        "Northwind Logistics runs regional warehouses and truck fleets and wants route "
        "optimisation and fuel reporting for its drivers.",
    ),
    (
        "Call notes: Globex onboarding review",
        "call_notes",
        "Globex said onboarding took too long because data migration stalled for three weeks. "
        "The onboarding call notes record that Globex wants a dedicated onboarding engineer.",
    ),
    (
        "Call notes: Initech renewal",
        "call_notes",
        "Initech praised the support team during the renewal call and asked about volume "
        "discounts for next year and a pilot in the finance department.",
    ),
    (
        "Discount policy",
        "policy",
        "Discounts above fifteen percent need approval from the regional sales director. "
        "Multi-year contracts may receive an additional five percent discount.",
    ),
    (
        "Security review checklist",
        "policy",
        "Security reviews cover single sign-on, audit logging, data residency and encryption "
        "at rest. Healthcare customers also ask for a signed business associate agreement.",
    ),
    (
        "Product sheet: Insights",
        "product",
        "Insights dashboards show pipeline health, churn risk and renewal forecasts. Customers "
        "use Insights to prioritise accounts that look like a good fit.",
    ),
    (
        "Call notes: Umbrella pricing objection",
        "call_notes",
        "Umbrella objected to pricing and compared us to a cheaper competitor. The champion "
        "asked for a case study from another manufacturing customer.",
    ),
)
RETRIEVE_QUESTIONS = (
    "healthcare analytics for clinics",
    "onboarding delays and data migration",
    "discount approval rules",
    "security review single sign-on",
    "pricing objection competitor",
)
AGENTIC_QUESTIONS = (
    "Which accounts look like a good fit for healthcare analytics?",
    "What did Globex say about onboarding?",
    "What is the policy for large discounts?",
    "What do healthcare customers ask for in security reviews?",
    "Why did Umbrella object to our pricing?",
)
COMPOUND_QUESTIONS = (
    "How many opportunities are there, and summarize the onboarding call notes?",
    "How many companies are there, and what does the discount policy say?",
    "How many contacts are there, and what did Umbrella say about pricing?",
)


def _pct(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.array(values), q)), 1) if values else float("nan")


def _dist(ms: Sequence[float]) -> dict[str, float]:
    return {"n": len(ms), "p50_ms": _pct(ms, 50), "p95_ms": _pct(ms, 95), "p99_ms": _pct(ms, 99)}


async def _measure(
    n: int, questions: Sequence[str], call: Callable[[str], Awaitable[Any]]
) -> list[float]:
    for question in questions:  # warm-up: connections, plans, catalog caches
        await call(question)
    timings: list[float] = []
    for index in range(n):
        started = time.perf_counter()
        await call(questions[index % len(questions)])
        timings.append((time.perf_counter() - started) * 1000)
    return timings


async def _run(n: int) -> dict[str, Any]:
    documents = [
        DemoDocument(
            document_id=f"doc-{i}",
            title=title,
            uri=f"bench://doc-{i}",
            category=category,
            text=text,
            metadata={},
        )
        for i, (title, category, text) in enumerate(CORPUS)
    ]
    async with eval_stack(documents, TENANT, query_cache=False) as stack:
        stub = stack.router

        outcomes: dict[str, dict[str, int]] = {}

        def ask(mode: pb.AskMode.ValueType) -> Callable[[str], Awaitable[Any]]:
            async def call(question: str) -> Any:
                response = await stub.Ask(
                    pb.AskRequest(tenant_id=TENANT, question=question, mode=mode), timeout=30
                )
                seen = outcomes.setdefault(pb.AskMode.Name(mode), {})
                name = pb.AnswerOutcome.Name(response.answer.outcome)
                seen[name] = seen.get(name, 0) + 1
                return response

            return call

        async def first_event(question: str) -> Any:
            stream = stub.StreamAsk(
                pb.StreamAskRequest(tenant_id=TENANT, question=question), timeout=30
            )
            first = await stream.read()
            first_events.append((time.perf_counter() - sent[-1]) * 1000)
            async for _ in stream:
                pass
            return first

        sent: list[float] = []
        first_events: list[float] = []

        async def timed_first_event(question: str) -> Any:
            sent.append(time.perf_counter())
            return await first_event(question)

        results: dict[str, Any] = {"requests": n, "provider": "deterministic"}
        results["retrieve"] = _dist(
            await _measure(n, RETRIEVE_QUESTIONS, ask(pb.ASK_MODE_RETRIEVE))
        )
        results["agentic"] = _dist(await _measure(n, AGENTIC_QUESTIONS, ask(pb.ASK_MODE_AGENTIC)))
        sample = await stub.Ask(
            pb.AskRequest(tenant_id=TENANT, question=COMPOUND_QUESTIONS[0]), timeout=30
        )
        results["auto_two_step_plan"] = [pb.Tool.Name(s.tool) for s in sample.answer.plan.steps]
        results["auto_two_step"] = _dist(
            await _measure(n, COMPOUND_QUESTIONS, ask(pb.ASK_MODE_AUTO))
        )
        await _measure(n, COMPOUND_QUESTIONS, timed_first_event)
        results["first_event"] = _dist(first_events[len(COMPOUND_QUESTIONS) :])
        results["outcomes"] = outcomes
        return results


def render(results: dict[str, Any]) -> str:
    """The table printed on stdout."""
    lines = [
        f"router latency through gRPC ({results['provider']} provider, "
        f"{results['requests']} requests per row)",
        f"{'case':<16}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'target p50':>12}{'':>6}",
    ]
    for key, label in (
        ("retrieve", "RETRIEVE"),
        ("agentic", "AGENTIC"),
        ("auto_two_step", "AUTO two-step"),
        ("first_event", "first event"),
    ):
        row = results[key]
        target = TARGETS_MS[key]
        verdict = "ok" if row["p50_ms"] <= target else "MISS"
        lines.append(
            f"{label:<16}{row['p50_ms']:>10.1f}{row['p95_ms']:>10.1f}{row['p99_ms']:>10.1f}"
            f"{target:>12.0f}{verdict:>6}"
        )
    lines.append(f"AUTO two-step plan: {' + '.join(results['auto_two_step_plan'])}")
    for mode, counts in results["outcomes"].items():
        lines.append(f"outcomes {mode}: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    return "\n".join(lines)


def main(out: Path = Path("bench-results/router.json"), *, requests: int = 50) -> dict[str, Any]:
    """Run the benchmark, print the table, write JSON to ``out``."""
    results = asyncio.run(_run(requests))
    print(render(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
    return results
