"""Real-documents eval: ``tandem eval documents --dataset DIR``.

The ruler for issue 48 ("documents as they really are"): the files of a dev set
(``services/bench/devsets/documents``: PDFs, a scan, HTML, DOCX, PPTX, CSV, XLSX made from
this machine's documentation packages) are ingested as an upload is, bytes and file
name, extracted by the retrieval service itself (``_files.extract_content``, the path of
``tandem ingest`` and UploadDocument), for a tenant with no SQL database. Every question
is asked through the router in RETRIEVE and AUTO, and reported per format and per half
(``study``: per-question failures may be read; ``blind``: only its figures; the halves
are stored in the rows, split evenly per format by ``assign_halves``):

- *contains*: the answer, its ``[n]`` markers removed, contains a gold answer after
  SQuAD's normalisation (``services.bench.answers.normalise``/``contains``);
- *answered* / *correct* / *refused* / *precision*: ANSWERED or PARTIAL counts as
  answered; correct is answered and contains; precision is correct / answered;
  everything else (NOT_FOUND, an RPC error, a document that failed to ingest) is refused;
- *median words*: of answered answers, without markers;
- *one-line table answers* (``kind`` = cell): of answered cell questions, the share
  whose answer text has no line break and at most ``ONE_LINE_MAX_WORDS`` words;
- *right locator*: the answer's first citation (the one its first ``[n]`` marker names,
  else the first listed) is in the gold document, and its section is the gold locator:
  equal, or ending in ``> gold`` / ``· gold`` (a chunk's section is the heading path the
  chunker kept). For table rows (gold ``row N`` or ``sheet S, row N``) the cited section
  must name a row range (``rows A-B`` or ``row A``) that includes N, in sheet S when
  one is named: a section that cites a whole sheet or file does not count. Share of all
  questions of the group. Sections are compared as ``place_key`` reads them (a slide's
  `` · title`` and headings' closing ``#`` dropped);
- *exact row* (questions whose locator is a row): the right-locator citation names that
  row alone, not a block of rows that includes it.

OCR comparison: the scanned pages are ingested with the corpus, and their text-layer
original (``ocr_reference/``) separately, under the scan's own document id, in a second
tenant holding the rest of the corpus too. The scan questions and ``ocr_queries.jsonl``
are searched (HYBRID, top 30) in both tenants and nDCG@10 is computed over the hits
collapsed to (document, section) in order; the one relevant item is the gold page of
the gold document. A scan the service cannot read scores 0, and its questions are
refused: that is the baseline before OCR.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import statistics
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from services.bench.answers import contains, normalise
from services.bench.retrieval_eval import ndcg_at_k
from services.bench.stack import eval_stack
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import retrieval_service_pb2_grpc as rpb_grpc
from tandem.v1 import router_service_pb2 as pb

DEFAULT_DATASET = Path(__file__).parent / "devsets" / "documents"
DEFAULT_OUT = Path("bench-results/eval-documents.json")
MODES: dict[str, pb.AskMode.ValueType] = {
    "retrieve": pb.ASK_MODE_RETRIEVE,
    "auto": pb.ASK_MODE_AUTO,
}
TENANT = "eval-documents"
REFERENCE_TENANT = "eval-documents-text-layer"
FORMATS = ("pdf", "html", "docx", "pptx", "csv", "xlsx", "scan")
KINDS = ("prose", "option", "list", "cell")
HALVES = ("study", "blind")
# The dev set's floors: questions per format (csv and xlsx together as "table").
FLOORS = {"pdf": 8, "html": 8, "docx": 6, "pptx": 6, "table": 10, "scan": 4}
MIN_QUESTIONS = 48
ONE_LINE_MAX_WORDS = 30
K = 10
_CONCURRENCY = 4
_MARKER = re.compile(r"\[(\d+)\]")
_MARKERS = re.compile(r"\s*\[\d+\]")
_ROWS = re.compile(r"\brows?\s+(\d+)(?:\s*[-\u2013]\s*(\d+))?", re.IGNORECASE)
_SHEET = re.compile(r"\bsheet\s+(.+?)(?:,|$)", re.IGNORECASE)


@dataclass(frozen=True)
class DocQuestion:
    """One question: gold answers, the file and locator that hold them, and its tags."""

    id: str
    question: str
    answers: tuple[str, ...]
    document: str
    locator: str
    format: str
    kind: str
    half: str


@dataclass(frozen=True)
class SearchQuery:
    """A search over the scanned pages, judged by the one page that answers it."""

    id: str
    query: str
    document: str
    locator: str


@dataclass(frozen=True)
class DevSet:
    """The files, the questions, the OCR search queries and the text-layer originals."""

    root: Path
    files: tuple[Path, ...]
    questions: tuple[DocQuestion, ...]
    queries: tuple[SearchQuery, ...]
    reference: tuple[Path, ...]


def assign_halves(questions: Sequence[tuple[str, str]]) -> dict[str, str]:
    """``study`` or ``blind`` for each ``(id, format)``: within a format, questions in
    the order of their ids' SHA-256 alternate, study first, so each format is split
    evenly and which question lands where follows from nothing a person chose. Stored
    in each row (``half``) when the set is made; a later question gets its half from
    its own row, so adding one moves no other."""
    out: dict[str, str] = {}
    for fmt in sorted({f for _, f in questions}):
        ids = sorted(
            (i for i, f in questions if f == fmt), key=lambda i: hashlib.sha256(i.encode()).digest()
        )
        out.update({i: HALVES[n % 2] for n, i in enumerate(ids)})
    return out


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def read_devset(path: Path) -> DevSet:
    corpus = path / "corpus"
    if not corpus.is_dir() or not (path / "questions.jsonl").is_file():
        raise FileNotFoundError(f"{path}: expected corpus/ and questions.jsonl")
    questions = tuple(
        DocQuestion(
            id=str(row["id"]),
            question=row["question"],
            answers=tuple(row["answers"]),
            document=row["document"],
            locator=row.get("locator", ""),
            format=row.get("format", ""),
            kind=row.get("kind", ""),
            half=row.get("half", ""),
        )
        for row in _jsonl(path / "questions.jsonl")
    )
    queries = tuple(
        SearchQuery(str(r["id"]), r["query"], r["document"], r["locator"])
        for r in _jsonl(path / "ocr_queries.jsonl")
    )
    reference_dir = path / "ocr_reference"
    reference = tuple(sorted(reference_dir.iterdir())) if reference_dir.is_dir() else ()
    files = tuple(sorted(p for p in corpus.iterdir() if p.is_file()))
    return DevSet(path, files, questions, queries, reference)


def check_devset(devset: DevSet) -> list[str]:
    """What is wrong with the set, as sentences (none when it is well-formed): missing
    files, unknown tags, duplicate ids, a locator missing, floors not met."""
    problems: list[str] = []
    names = {p.name for p in devset.files}
    ids = Counter(q.id for q in devset.questions)
    problems += [f"{i}: id used {n} times" for i, n in ids.items() if n > 1]
    for q in devset.questions:
        if q.document not in names:
            problems.append(f"{q.id}: document {q.document!r} is not in corpus/")
        if q.format not in FORMATS:
            problems.append(f"{q.id}: format {q.format!r} is not one of {', '.join(FORMATS)}")
        if q.kind not in KINDS:
            problems.append(f"{q.id}: kind {q.kind!r} is not one of {', '.join(KINDS)}")
        if q.half not in HALVES:
            problems.append(f"{q.id}: half {q.half!r} is not study or blind")
        if not q.locator.strip():
            problems.append(f"{q.id}: no locator")
        if q.format in ("csv", "xlsx") and parse_rows(q.locator) is None:
            problems.append(f"{q.id}: a table question's locator must name its row")
        if not q.answers or not all(normalise(a) for a in q.answers):
            problems.append(f"{q.id}: an answer is empty once normalised")
        if not q.question.strip():
            problems.append(f"{q.id}: no question")
    counts = format_counts(devset.questions)
    for group, floor in FLOORS.items():
        if counts.get(group, 0) < floor:
            problems.append(f"{group}: {counts.get(group, 0)} questions, fewer than {floor}")
    if len(devset.questions) < MIN_QUESTIONS:
        problems.append(f"{len(devset.questions)} questions, fewer than {MIN_QUESTIONS}")
    for s in devset.queries:
        if s.document not in names:
            problems.append(f"{s.id}: document {s.document!r} is not in corpus/")
    scans = {q.document for q in devset.questions if q.format == "scan"}
    if scans and not devset.reference:
        problems.append("scan questions but no ocr_reference/ text-layer original")
    return problems


def format_counts(questions: Sequence[DocQuestion]) -> dict[str, int]:
    """Questions per format, with csv and xlsx also counted together as ``table``."""
    counts = Counter(q.format for q in questions)
    counts["table"] = counts.get("csv", 0) + counts.get("xlsx", 0)
    return dict(counts)


# ---- scoring --------------------------------------------------------------------------


def parse_rows(locator: str) -> tuple[str | None, int, int] | None:
    """(sheet or None, first row, last row) from "rows 2-201", "row 12", "sheet S, rows
    2-201" or "sheet S · row 7"; None when the locator names no row."""
    rows = _ROWS.search(locator)
    if rows is None:
        return None
    first = int(rows.group(1))
    last = int(rows.group(2)) if rows.group(2) else first
    sheet = _SHEET.search(locator)
    name = sheet.group(1).strip() if sheet and sheet.start() < rows.start() else None
    return name, first, last


def place_key(section: str) -> str:
    """A section as compared with a gold locator: whitespace collapsed, the `` · title``
    that a slide's or sheet's heading label adds after its locator dropped, and the
    closing ``#`` of each heading in a path dropped (the markdown chunker reads a
    trailing ``#`` as an ATX heading's closing sequence, so Node's anchor marks in
    extracted headings never reach a citation)."""
    text = " ".join(section.split())
    text = text.split(" · ", 1)[0]
    return " > ".join(part.rstrip("# ") for part in text.split(" > "))


def same_locator(cited: str, gold: str) -> bool:
    """The cited section is the gold locator, or a heading path ending in it (both as
    ``place_key`` reads them); for a table row, a cited row range (in the same sheet)
    that includes the gold row."""
    cited, gold = place_key(cited), place_key(gold)
    if not gold:
        return False
    wanted = parse_rows(gold)
    if wanted is not None:
        got = parse_rows(cited)
        if got is None:
            return False
        sheet, row, _ = wanted
        if sheet is not None and (got[0] or "").casefold() != sheet.casefold():
            return False
        where = _before_rows(gold)
        if where and not _same_place(_before_rows(cited), where):
            return False  # the right row number of another table
        return got[1] <= row <= got[2]
    # A row cited inside the gold section is that place, named more closely.
    return _same_place(cited, gold) or _same_place(_before_rows(cited), gold)


def _before_rows(locator: str) -> str:
    """The place a row locator is in ("section Options" of "section Options, row 10")."""
    rows = _ROWS.search(locator)
    return locator[: rows.start()].rstrip(" ,·") if rows else locator


def _same_place(cited: str, gold: str) -> bool:
    return cited == gold or cited.endswith(f"> {gold}")


def exact_row(cited: str, gold: str) -> bool:
    """The citation names the gold row alone (``row N`` or ``rows N-N``), not a block."""
    got, wanted = parse_rows(place_key(cited)), parse_rows(place_key(gold))
    return (
        got is not None
        and wanted is not None
        and same_locator(cited, gold)
        and got[1] == got[2] == wanted[1]
    )


def first_citation(text: str, citations: Sequence[Any]) -> Any | None:
    """The citation a reader meets first: the one the first ``[n]`` marker of the text
    names (by passage id, else by position), else the first listed."""
    if not citations:
        return None
    marker = _MARKER.search(text)
    if marker is not None:
        number = int(marker.group(1))
        for citation in citations:
            if citation.passage_id == number:
                return citation
        if 1 <= number <= len(citations):
            return citations[number - 1]
    return citations[0]


def one_line(text: str) -> bool:
    """A table answer a person reads as one line: no line break, at most
    ``ONE_LINE_MAX_WORDS`` words (citation markers not counted)."""
    bare = _MARKERS.sub("", text).strip()
    return "\n" not in bare and len(bare.split()) <= ONE_LINE_MAX_WORDS


def score(question: DocQuestion, answer: Any) -> dict[str, Any]:
    """The per-question record from a router ``Answer``."""
    text = _MARKERS.sub("", answer.text)
    outcome = pb.AnswerOutcome.Name(answer.outcome).removeprefix("ANSWER_OUTCOME_")
    first = first_citation(answer.text, list(answer.citations))
    section = first.section if first is not None else ""
    right = (
        first is not None
        and first.document_id == question.document
        and same_locator(section, question.locator)
    )
    return {
        "id": question.id,
        "outcome": outcome,
        "contains": contains(text, question.answers),
        "words": len(text.split()),
        "one_line": one_line(answer.text),
        "right_locator": right,
        "exact_row": right and exact_row(section, question.locator),
        "cited": [f"{c.document_id} | {c.section}" for c in answer.citations],
        "text": answer.text,
    }


def refused(question: DocQuestion, outcome: str) -> dict[str, Any]:
    return {
        "id": question.id,
        "outcome": outcome,
        "contains": False,
        "words": 0,
        "one_line": False,
        "right_locator": False,
        "exact_row": False,
        "cited": [],
        "text": "",
    }


def summarise(
    questions: Sequence[DocQuestion], records: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The figures for one group of questions (their records in the same order)."""
    n = len(records)
    answered = [r for r in records if r["outcome"] in ("ANSWERED", "PARTIAL")]
    correct = [r for r in answered if r["contains"]]
    cells = [
        r
        for q, r in zip(questions, records, strict=True)
        if q.kind == "cell" and r["outcome"] in ("ANSWERED", "PARTIAL")
    ]
    right = sum(1 for r in records if r["right_locator"])
    rows = [r for q, r in zip(questions, records, strict=True) if parse_rows(q.locator) is not None]
    return {
        "questions": n,
        "answered": len(answered),
        "correct": len(correct),
        "contains_rate": round(sum(r["contains"] for r in records) / n, 4) if n else 0.0,
        "refused": n - len(answered),
        "precision": round(len(correct) / len(answered), 4) if answered else 0.0,
        "median_words": statistics.median([r["words"] for r in answered]) if answered else 0,
        "table_answers": len(cells),
        "one_line_rate": (
            round(sum(r["one_line"] for r in cells) / len(cells), 4) if cells else None
        ),
        "right_locator": right,
        "right_locator_rate": round(right / n, 4) if n else 0.0,
        "row_questions": len(rows),
        "exact_row_rate": (
            round(sum(r["exact_row"] for r in rows) / len(rows), 4) if rows else None
        ),
        "outcomes": dict(sorted(Counter(r["outcome"] for r in records).items())),
    }


def breakdown(
    questions: Sequence[DocQuestion], records: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """``all``, per format, and per half (all formats, and each format within a half)."""
    pairs = list(zip(questions, records, strict=True))

    def of(keep: Any) -> dict[str, Any]:
        chosen = [(q, r) for q, r in pairs if keep(q)]
        return summarise([q for q, _ in chosen], [r for _, r in chosen])

    out: dict[str, Any] = {"all": of(lambda q: True), "formats": {}, "halves": {}}
    for fmt in FORMATS:
        if any(q.format == fmt for q in questions):
            out["formats"][fmt] = of(lambda q, f=fmt: q.format == f)
    for half in HALVES:
        out["halves"][half] = {
            "all": of(lambda q, h=half: q.half == h),
            "formats": {
                fmt: of(lambda q, h=half, f=fmt: q.half == h and q.format == f)
                for fmt in FORMATS
                if any(q.format == fmt and q.half == half for q in questions)
            },
        }
    return out


def ranked_places(hits: Sequence[Any]) -> list[str]:
    """Hits collapsed to ``document | section`` in order, first occurrence wins."""
    seen: dict[str, None] = {}
    for hit in hits:
        seen.setdefault(f"{hit.document_id} | {' '.join(hit.section.split())}", None)
    return list(seen)


def place_ndcg(places: Sequence[str], document: str, locator: str, k: int = K) -> float:
    """nDCG@k with one relevant item: the gold page (section ending in the locator) of
    the gold document."""
    ranked = []
    for place in places:
        doc, _, section = place.partition(" | ")
        ranked.append("gold" if doc == document and same_locator(section, locator) else place)
    return ndcg_at_k(ranked, {"gold": 1}, k)


# ---- running --------------------------------------------------------------------------


def _input(path: Path, document_id: str) -> rpb.DocumentInput:
    """A file as ``tandem ingest`` sends it: bytes and name, for the service to extract."""
    return rpb.DocumentInput(
        document_id=document_id,
        uri=f"file://{path.name}",
        category="documentation",
        content=path.read_bytes(),
        file_name=path.name,
    )


async def ingest_files(
    stub: rpb_grpc.RetrievalServiceAsyncStub, tenant: str, files: Sequence[tuple[Path, str]]
) -> dict[str, str]:
    """Ingest ``(path, document id)`` pairs; returns the failures, id → reason."""
    request = rpb.IngestDocumentsRequest(
        tenant_id=tenant, documents=[_input(path, doc_id) for path, doc_id in files]
    )
    failed: dict[str, str] = {}
    async for event in stub.IngestDocuments(request, timeout=900):
        if event.HasField("document_finished"):
            result = event.document_finished
            if result.HasField("error") and result.error.reason:
                failed[result.document_id] = f"{result.error.reason}: {result.error.message}"
    return failed


async def _ask_all(
    stub: Any,
    questions: Sequence[DocQuestion],
    mode: pb.AskMode.ValueType,
) -> list[dict[str, Any]]:
    gate = asyncio.Semaphore(_CONCURRENCY)

    async def one(question: DocQuestion) -> dict[str, Any]:
        async with gate:
            try:
                response = await stub.Ask(
                    pb.AskRequest(tenant_id=TENANT, question=question.question, mode=mode),
                    timeout=60,
                )
            except grpc.aio.AioRpcError as exc:
                return refused(question, f"ERROR_{exc.code().name}")
            return score(question, response.answer)

    return list(await asyncio.gather(*(one(q) for q in questions)))


async def _search_ndcg(
    stub: rpb_grpc.RetrievalServiceAsyncStub, tenant: str, items: Sequence[SearchQuery]
) -> dict[str, float]:
    out = {}
    for item in items:
        reply = await stub.Search(
            rpb.SearchRequest(
                tenant_id=tenant, query=item.query, mode=rpb.SEARCH_MODE_HYBRID, top_k=3 * K
            ),
            timeout=60,
        )
        out[item.id] = round(place_ndcg(ranked_places(reply.hits), item.document, item.locator), 4)
    return out


def ocr_queries(devset: DevSet) -> list[SearchQuery]:
    """The scan questions as searches, then ``ocr_queries.jsonl``."""
    scans = [
        SearchQuery(q.id, q.question, q.document, q.locator)
        for q in devset.questions
        if q.format == "scan"
    ]
    return scans + list(devset.queries)


async def evaluate(devset: DevSet, modes: Sequence[str]) -> dict[str, Any]:
    scanned = sorted({q.document for q in devset.questions if q.format == "scan"})
    report: dict[str, Any] = {
        "questions": len(devset.questions),
        "documents": len(devset.files),
        "modes": {},
        "records": {},
    }
    async with eval_stack((), TENANT, tenant_database=False,
                          extra_tenants=(REFERENCE_TENANT,)) as stack:  # fmt: skip
        started = time.monotonic()
        failed = await ingest_files(stack.retrieval, TENANT, [(p, p.name) for p in devset.files])
        report["ingest"] = {"seconds": round(time.monotonic() - started, 1), "failed": failed}
        for mode in modes:
            started = time.monotonic()
            records = await _ask_all(stack.router, devset.questions, MODES[mode])
            for record in records:
                question = next(q for q in devset.questions if q.id == record["id"])
                if question.document in failed and record["outcome"] == "ANSWERED":
                    record["note"] = "answered from another document"
            summary = breakdown(devset.questions, records)
            summary["seconds"] = round(time.monotonic() - started, 1)
            report["modes"][mode] = summary
            report["records"][mode] = records
        if scanned and devset.reference:
            # The rest of the corpus, and the text-layer pages under the scan's own id.
            others = [(p, p.name) for p in devset.files if p.name not in scanned]
            originals = [(p, scanned[0]) for p in devset.reference[:1]]
            ref_failed = await ingest_files(stack.retrieval, REFERENCE_TENANT, others + originals)
            items = ocr_queries(devset)
            scan = await _search_ndcg(stack.retrieval, TENANT, items)
            text = await _search_ndcg(stack.retrieval, REFERENCE_TENANT, items)
            report["ocr"] = {
                "queries": len(items),
                "scan_ndcg@10": round(statistics.fmean(scan.values()), 4),
                "text_layer_ndcg@10": round(statistics.fmean(text.values()), 4),
                "per_query": {i: {"scan": scan[i], "text_layer": text[i]} for i in scan},
                "reference_failed": ref_failed,
            }
    return report


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _row(label: str, s: Mapping[str, Any]) -> str:
    return (
        f"{label:<7} {s['questions']:>4} {s['answered']:>8} {s['correct']:>7} "
        f"{s['contains_rate']:>8.0%} {s['refused']:>7} {s['precision']:>6.0%} "
        f"{s['median_words']:>6} {_rate(s['one_line_rate']):>8} "
        f"{s['right_locator_rate']:>8.0%} {_rate(s['exact_row_rate']):>9}"
    )


def render(report: Mapping[str, Any]) -> str:
    lines = [
        f"documents: {report['questions']} questions over {report['documents']} files "
        f"(ingest {report['ingest']['seconds']} s; failed: "
        f"{', '.join(report['ingest']['failed']) or 'none'})"
    ]
    header = (
        f"{'format':<7} {'n':>4} {'answered':>8} {'correct':>7} {'contains':>8} "
        f"{'refused':>7} {'prec':>6} {'words':>6} {'1-line':>8} {'locator':>8} {'exact-row':>9}"
    )
    for mode, summary in report["modes"].items():
        lines += [f"-- {mode} ({summary['seconds']} s)", header]
        lines += [_row(f, s) for f, s in summary["formats"].items()]
        lines.append(_row("all", summary["all"]))
        for half, data in summary["halves"].items():
            lines.append(_row(half, data["all"]))
    if "ocr" in report:
        ocr = report["ocr"]
        lines.append(
            f"OCR: {ocr['queries']} searches over the scanned pages, nDCG@{K} scan "
            f"{ocr['scan_ndcg@10']:.3f} vs text layer {ocr['text_layer_ndcg@10']:.3f}"
        )
    return "\n".join(lines)


def main(
    dataset: Path, out: Path, *, modes: Sequence[str] = tuple(MODES), limit: int | None = None
) -> dict[str, Any]:
    devset = read_devset(dataset)
    problems = check_devset(devset)
    if problems:
        raise SystemExit(f"{dataset}: not a well-formed dev set: " + "; ".join(problems[:5]))
    if limit is not None:
        devset = DevSet(
            devset.root, devset.files, devset.questions[:limit], devset.queries, devset.reference
        )
    report = asyncio.run(evaluate(devset, modes))
    report["dataset"] = str(dataset)
    print(render(report))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return report
