"""Answers eval: ``tandem eval answers --dataset DIR``.

Measures what a user reads, not only what search ranks: the collection's documents are
ingested into the in-process stack (for a tenant with **no** SQL database, as every new
tenant is), each question is asked through the router's stub in RETRIEVE, AGENTIC and
AUTO, and each answer is scored with SQuAD's normalisation:

- *contains*: the normalised answer text contains a normalised gold answer;
- *cited*: a cited passage is the gold paragraph (document and section) or quotes a gold
  answer;
- *words*: the answer's length without its citation markers;
- *outcome*: ANSWERED, PARTIAL, NOT_FOUND, or the RPC's error code;
- *spread*: answers whose citations name two or more documents.

Right or refused: an answered question is *correct* when it contains the gold answer;
precision is correct / answered. A BM25 baseline ranks every sentence of the collection
against each question in the same run (its best sentence, and its best three) so the
figures can be compared with a plain method on the same questions.

Dataset folder: ``corpus/*.md`` (``# Title`` then sections) and ``questions.jsonl``
(``id``, ``question``, ``answers``, ``document``, ``section``).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import statistics
import string
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from services.bench.stack import eval_stack
from services.demo import DemoDocument
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import router_service_pb2 as pb

DEFAULT_OUT = Path("bench-results/eval-answers.json")
MODES: dict[str, pb.AskMode.ValueType] = {
    "retrieve": pb.ASK_MODE_RETRIEVE,
    "agentic": pb.ASK_MODE_AGENTIC,
    "auto": pb.ASK_MODE_AUTO,
}
TENANT = "eval-answers"
_CONCURRENCY = 4
_MARKER = re.compile(r"\s*\[\d+\]")


@dataclass(frozen=True)
class Question:
    """One dataset question with its gold answers and the section that holds them."""

    id: str
    question: str
    answers: tuple[str, ...]
    document: str
    section: str


def normalise(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, one space."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def contains(text: str, answers: Sequence[str]) -> bool:
    said = normalise(text)
    return any(normalise(a) and normalise(a) in said for a in answers)


def read_dataset(path: Path) -> tuple[list[DemoDocument], list[Question]]:
    corpus = path / "corpus"
    if not corpus.is_dir() or not (path / "questions.jsonl").is_file():
        raise FileNotFoundError(f"{path}: expected corpus/*.md and questions.jsonl")
    documents = []
    for file in sorted(corpus.glob("*.md")):
        text = file.read_text(encoding="utf-8")
        heading = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), "")
        documents.append(
            DemoDocument(
                document_id=file.stem,
                title=heading or file.stem,
                uri=f"file://{file.name}",
                category="article",
                text=text,
                metadata={},
            )
        )
    questions = []
    for line in (path / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            questions.append(
                Question(
                    str(row["id"]),
                    row["question"],
                    tuple(row["answers"]),
                    Path(row["document"]).stem,
                    row.get("section", ""),
                )
            )
    return documents, questions


# ---- the BM25 sentence baseline -------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
# The baseline's own stopwords (a plain BM25 run drops these; the product's lists do not
# move the baseline).
_BASELINE_STOP = frozenset(
    re.findall(
        r"\w+",
        "a an the of to in on at by for from with and or is are was were be been what which "
        "who whom whose when where why how did do does that this these those it its as",
    )
)


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _BASELINE_STOP]


def baseline_sentences(documents: Sequence[DemoDocument]) -> list[str]:
    """Every sentence of the collection by a plain splitter (the baseline's own, so a
    change to the product's splitter does not move the baseline)."""
    out: list[str] = []
    for doc in documents:
        for line in doc.text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            out.extend(s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"'(])", line) if s.strip())
    return out


class Bm25:
    """Okapi BM25 (k1 1.5, b 0.75) over a fixed list of texts."""

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.texts = list(texts)
        self.k1, self.b = k1, b
        self.bags = [Counter(_terms(t)) for t in self.texts]
        self.lengths = [sum(bag.values()) for bag in self.bags]
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 1.0
        frequency: Counter[str] = Counter()
        for bag in self.bags:
            frequency.update(bag.keys())
        n = len(self.bags)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}
        self.postings: dict[str, list[int]] = {}
        for index, bag in enumerate(self.bags):
            for term in bag:
                self.postings.setdefault(term, []).append(index)

    def top(self, query: str, k: int) -> list[str]:
        scores: dict[int, float] = {}
        for term in set(_terms(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for index in self.postings[term]:
                tf = self.bags[index][term]
                norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / self.average)
                scores[index] = scores.get(index, 0.0) + idf * tf * (self.k1 + 1) / (tf + norm)
        best = sorted(scores, key=lambda i: (-scores[i], i))[:k]
        return [self.texts[i] for i in best]


# ---- asking ---------------------------------------------------------------------------


def score_answer(question: Question, answer: Any) -> dict[str, Any]:
    """The per-answer record from a router ``Answer`` message."""
    text = _MARKER.sub("", answer.text)
    outcome = pb.AnswerOutcome.Name(answer.outcome).removeprefix("ANSWER_OUTCOME_")
    documents = {c.document_id for c in answer.citations if c.document_id}
    cited = any(
        (c.document_id == question.document and _same_section(c.section, question.section))
        or contains(c.quote, question.answers)
        for c in answer.citations
    )
    return {
        "id": question.id,
        "outcome": outcome,
        "contains": contains(text, question.answers),
        "cited": cited,
        "words": len(text.split()),
        "documents": len(documents),
        "degraded": sorted(
            {
                cpb.DegradationReason.Name(d.reason).removeprefix("DEGRADATION_REASON_")
                for d in answer.degradations
            }
        ),
        "rewrites": sum(step.rewrites for step in answer.trajectory),
        "searches": sum(
            step.attempts for step in answer.trajectory if step.tool == pb.TOOL_SEMANTIC_SEARCH
        ),
        "text": answer.text,
    }


def _same_section(cited: str, gold: str) -> bool:
    """A chunk's section is its heading path; the gold names the last heading."""
    return bool(gold) and (cited == gold or cited.endswith(f"> {gold}") or cited.endswith(gold))


async def _ask_all(
    stub: Any, questions: Sequence[Question], mode: pb.AskMode.ValueType
) -> list[dict[str, Any]]:
    gate = asyncio.Semaphore(_CONCURRENCY)

    async def one(question: Question) -> dict[str, Any]:
        async with gate:
            try:
                response = await stub.Ask(
                    pb.AskRequest(
                        tenant_id=TENANT,
                        question=question.question,
                        mode=mode,
                        options=pb.AskOptions(include_trajectory=True),
                    ),
                    timeout=60,
                )
            except grpc.aio.AioRpcError as exc:
                return {
                    "id": question.id,
                    "outcome": f"ERROR_{exc.code().name}",
                    "contains": False,
                    "cited": False,
                    "words": 0,
                    "documents": 0,
                    "degraded": [],
                    "rewrites": 0,
                    "searches": 0,
                    "text": "",
                }
            return score_answer(question, response.answer)

    return list(await asyncio.gather(*(one(q) for q in questions)))


def summarise(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Contains, cited, words, spread and the right-or-refused counts for one mode."""
    n = len(records)
    answered = [r for r in records if r["outcome"] in ("ANSWERED", "PARTIAL")]
    correct = [r for r in answered if r["contains"]]
    outcomes = Counter(r["outcome"] for r in records)
    words = [r["words"] for r in answered] or [0]
    return {
        "questions": n,
        "contains": sum(r["contains"] for r in records),
        "contains_rate": round(sum(r["contains"] for r in records) / n, 4) if n else 0.0,
        "cited": sum(r["cited"] for r in records),
        "cited_rate": round(sum(r["cited"] for r in records) / n, 4) if n else 0.0,
        "answered": len(answered),
        "correct": len(correct),
        "refused": n - len(answered),
        "precision": round(len(correct) / len(answered), 4) if answered else 0.0,
        "median_words": statistics.median(words),
        "spread_2plus": sum(1 for r in answered if r["documents"] >= 2),
        "outcomes": dict(sorted(outcomes.items())),
        "degraded": dict(Counter(d for r in records for d in r["degraded"])),
        "rewritten": sum(1 for r in records if r["rewrites"]),
    }


async def evaluate(
    documents: Sequence[DemoDocument], questions: Sequence[Question], modes: Sequence[str]
) -> dict[str, Any]:
    index = Bm25(baseline_sentences(documents))
    top1 = sum(contains(" ".join(index.top(q.question, 1)), q.answers) for q in questions)
    top3 = sum(contains(" ".join(index.top(q.question, 3)), q.answers) for q in questions)
    report: dict[str, Any] = {
        "questions": len(questions),
        "documents": len(documents),
        "bm25_sentence": {"top1": top1, "top3": top3},
        "modes": {},
        "records": {},
    }
    async with eval_stack(documents, TENANT, tenant_database=False) as stack:
        for mode in modes:
            started = time.monotonic()
            records = await _ask_all(stack.router, questions, MODES[mode])
            summary = summarise(records)
            summary["seconds"] = round(time.monotonic() - started, 1)
            report["modes"][mode] = summary
            report["records"][mode] = records
    return report


def render(report: Mapping[str, Any]) -> str:
    n = report["questions"]
    base = report["bm25_sentence"]
    lines = [
        f"answers: {n} questions over {report['documents']} documents "
        f"(tenant without a SQL database)",
        f"BM25 best sentence contains gold: {base['top1']} ({base['top1'] / n:.1%}); "
        f"best three: {base['top3']} ({base['top3'] / n:.1%})",
        f"{'mode':<9} {'contains':>9} {'xBM25':>6} {'cited':>7} {'answered':>8} {'correct':>7} "
        f"{'refused':>7} {'prec':>6} {'words':>6} {'2+docs':>6} {'rewr':>5}  outcomes",
    ]
    for mode, s in report["modes"].items():
        ratio = s["contains"] / base["top1"] if base["top1"] else 0.0
        outcomes = " ".join(f"{k}={v}" for k, v in s["outcomes"].items())
        lines.append(
            f"{mode:<9} {s['contains']:>4} {s['contains_rate']:>4.0%} {ratio:>6.2f} "
            f"{s['cited_rate']:>7.0%} {s['answered']:>8} {s['correct']:>7} {s['refused']:>7} "
            f"{s['precision']:>6.1%} {s['median_words']:>6} {s['spread_2plus']:>6} "
            f"{s['rewritten']:>5}  {outcomes}"
        )
    return "\n".join(lines)


def main(
    dataset: Path,
    out: Path,
    *,
    modes: Sequence[str] = tuple(MODES),
    limit: int | None = None,
) -> dict[str, Any]:
    documents, questions = read_dataset(dataset)
    if limit is not None:
        questions = questions[:limit]
    report = asyncio.run(evaluate(documents, questions, modes))
    report["dataset"] = str(dataset)
    print(render(report))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return report
