"""``python -m services.bench.formats``: what a round trip through PDF, DOCX and HTML
does to a collection's text, and to retrieval over it.

Every document of an IR collection in BEIR layout (``corpus.jsonl``, ``queries.jsonl``,
``qrels/test.tsv``; e.g. ``shared/datasets/ir/cisi``) is rendered to each form by the
writer libraries (reportlab for PDF, python-docx, an HTML page written here) and read
back with ``services.retrieval.extract.extract``, the path an uploaded file would take:

* PDF: the title as the document's metadata title, the text as one paragraph set in two
  justified columns (reportlab wraps it into lines, columns and pages, as a journal
  would lay it out).
* DOCX: the title as the core-properties title, the text as one paragraph, with a page
  header and footer (which extraction leaves out).
* HTML: the title in ``<title>``, the text as a paragraph in ``<main>``, surrounded by the
  chrome real pages have (a header, navigation, a script, a footer) that extraction must
  drop; what it fails to drop shows up as a lower similarity.

For each form it reports how the extracted text differs from the original: the share
of documents whose text matches exactly once whitespace is normalised (line breaks of a
PDF layout are whitespace), the mean character-level similarity
(``difflib.SequenceMatcher.ratio`` without its junk heuristic), how often the title came
back, refusals by reason, and the time extraction took. Then, unless
``--skip-retrieval``, the collection is ingested once from its original text and once per
form from the rendered files themselves, sent as ``content`` and extracted by the
retrieval service as an upload is (one heading per page or section, the title from the
file), through the retrieval eval's own harness (``services.bench.retrieval_eval``: the
real embedding and retrieval servers in process, each version in turn in the collection's
scratch tenant), and nDCG@10 of each search mode is reported side by side, with the
difference to the original.

A document whose text is empty (half of CACM) is rendered with its title as the text,
as the retrieval eval ingests it. Rendering PDFs needs reportlab (the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import io
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import docx
from reportlab.lib.enums import TA_JUSTIFY
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.platypus import BaseDocTemplate, Frame, PageTemplate, Paragraph

from services.bench._publish import publish
from services.bench.retrieval_eval import MODES, Dataset, evaluate_collections, read_beir
from services.retrieval.extract import Extracted, Unextractable, extract

DEFAULT_OUT = Path("bench-results/formats.json")
K = 10


def render_pdf(title: str, text: str) -> bytes:
    """Two justified columns per A4 page, like a journal: the extractor must read a
    column to its end before the next, and keep words apart across stretched spaces."""
    buffer = io.BytesIO()
    width, height = A4
    margin, gutter = 50.0, 20.0
    column = (width - 2 * margin - gutter) / 2
    layout = BaseDocTemplate(buffer, pagesize=A4, title=title, author="tandem bench")
    frames = [
        Frame(margin, margin, column, height - 2 * margin, id="left"),
        Frame(margin + column + gutter, margin, column, height - 2 * margin, id="right"),
    ]
    layout.addPageTemplates([PageTemplate(id="columns", frames=frames)])
    style = ParagraphStyle(
        "justified", parent=getSampleStyleSheet()["BodyText"], alignment=TA_JUSTIFY
    )
    layout.build([Paragraph(escape(text), style)])
    return buffer.getvalue()


def render_docx(title: str, text: str) -> bytes:
    """One paragraph, with a page header and footer that extraction should leave out."""
    document = docx.Document()
    document.core_properties.title = title
    section = document.sections[0]
    section.header.paragraphs[0].text = "Library of abstracts"
    section.footer.paragraphs[0].text = "Copyright, the publisher."
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def render_html(title: str, text: str) -> bytes:
    page = (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title>"
        "<style>main { max-width: 40em }</style>"
        "<script>window.analytics = {page: 'abstract'};</script></head>\n<body>"
        "<header><a href=/>Library of abstracts</a> <a href=/search>Search</a></header>"
        "<nav><ul><li><a href=/a>Previous</a><li><a href=/b>Next</a></ul></nav>\n"
        f"<main><p>{escape(text)}</p></main>\n"
        "<footer>Copyright, the publisher. All rights reserved.</footer></body></html>"
    )
    return page.encode("utf-8")


FORMS: dict[str, tuple[str, Callable[[str, str], bytes]]] = {
    "pdf": ("document.pdf", render_pdf),
    "docx": ("document.docx", render_docx),
    "html": ("document.html", render_html),
}


def body_text(extracted: Extracted) -> str:
    """The extracted document as one text, each section's heading on its own line."""
    return "\n\n".join(
        f"{s.heading}\n{s.text}" if s.heading else s.text for s in extracted.sections
    )


def _squash(text: str) -> str:
    return " ".join(text.split())


def similarity(original: str, extracted: str) -> float:
    """Character-level similarity of whitespace-normalised texts, 0 to 1. ``autojunk``
    is off: on text it would treat every common letter as junk and score nonsense."""
    a, b = _squash(original), _squash(extracted)
    if a == b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


@dataclass(frozen=True)
class RoundTrip:
    """One document through one form: what came back, or why nothing did."""

    doc_id: str
    title: str | None
    text: str
    refused: str | None
    seconds: float
    size: int
    # The rendered file and its name, as a product backend would upload it.
    data: bytes = b""
    name: str = ""


def _source(doc: Mapping[str, Any]) -> tuple[str, str]:
    title, text = str(doc.get("title", "")), str(doc.get("text", ""))
    return ("", title) if not text.strip() else (title, text)


def round_trip(doc: Mapping[str, Any], form: str) -> RoundTrip:
    name, render = FORMS[form]
    title, text = _source(doc)
    data = render(title, text)
    started = time.perf_counter()
    try:
        got = extract(data, name)
    except Unextractable as error:
        seconds = time.perf_counter() - started
        return RoundTrip(
            str(doc["_id"]), None, "", error.reason.value, seconds, len(data), data, name
        )
    seconds = time.perf_counter() - started
    return RoundTrip(
        str(doc["_id"]), got.title, body_text(got), None, seconds, len(data), data, name
    )


def text_report(corpus: Sequence[Mapping[str, Any]], trips: Sequence[RoundTrip]) -> dict[str, Any]:
    """How the extracted texts of one form compare with the originals."""
    exact = titles = 0
    ratios = []
    for doc, trip in zip(corpus, trips, strict=True):
        title, text = _source(doc)
        ratio = similarity(text, trip.text) if trip.refused is None else 0.0
        ratios.append(ratio)
        exact += ratio == 1.0
        titles += _squash(trip.title or "") == _squash(title)
    # the documents that changed at all, least similar first
    worst = sorted(r for r in zip(ratios, (t.doc_id for t in trips), strict=True) if r[0] < 1)
    seconds = [t.seconds for t in trips]
    return {
        "documents": len(trips),
        "refused": dict(Counter(t.refused for t in trips if t.refused is not None)),
        "exact_match_rate": round(exact / len(trips), 4) if trips else 0.0,
        "mean_similarity": round(statistics.fmean(ratios), 6) if ratios else 0.0,
        "min_similarity": round(min(ratios), 6) if ratios else 0.0,
        "title_match_rate": round(titles / len(trips), 4) if trips else 0.0,
        "least_similar": [{"id": d, "similarity": round(r, 6)} for r, d in worst[:10]],
        "mean_bytes": round(statistics.fmean(t.size for t in trips)) if trips else 0,
        "extract_ms_mean": round(statistics.fmean(seconds) * 1000, 2) if seconds else 0.0,
        "extract_ms_max": round(max(seconds) * 1000, 2) if seconds else 0.0,
    }


def derived(dataset: Dataset, trips: Sequence[RoundTrip]) -> Dataset:
    """``dataset`` as the rendered files themselves: ingest extracts each on the server
    (``content``), exactly the path an uploaded file takes, headings per page and all."""
    corpus = [
        {"_id": doc["_id"], "content": trip.data, "file_name": trip.name}
        for doc, trip in zip(dataset.corpus, trips, strict=True)
    ]
    return Dataset(corpus, dataset.queries, dataset.qrels)


def _ndcg(report: Mapping[str, Any]) -> dict[str, float]:
    return {mode: report["metrics"]["all"][mode][f"ndcg@{K}"] for mode in MODES}


def run(dataset_dir: Path, *, forms: Sequence[str], retrieval: bool) -> dict[str, Any]:
    dataset = read_beir(dataset_dir)
    name = dataset_dir.resolve().name
    report: dict[str, Any] = {
        "collection": name,
        "documents": len(dataset.corpus),
        "queries": len(dataset.queries),
        "forms": {},
    }
    sources = {"original": dataset}
    for form in forms:
        started = time.perf_counter()
        trips = [round_trip(doc, form) for doc in dataset.corpus]
        report["forms"][form] = text_report(dataset.corpus, trips)
        report["forms"][form]["round_trip_seconds"] = round(time.perf_counter() - started, 1)
        sources[form] = derived(dataset, trips)
    if retrieval:
        report["ndcg@10"] = {}
        for source, data in sources.items():
            results = evaluate_source(name, data)
            report["ndcg@10"][source] = _ndcg(results)
            report["model"] = results.get("model")
            if source != "original":
                report["forms"][source]["documents_failed_ingest"] = results["documents_failed"]
        original = report["ndcg@10"]["original"]
        for form in forms:
            report["forms"][form]["ndcg@10_delta"] = {
                mode: round(report["ndcg@10"][form][mode] - original[mode], 4) for mode in MODES
            }
    return report


def evaluate_source(name: str, dataset: Dataset) -> dict[str, Any]:
    """The retrieval eval of one version of the collection, always under the collection's
    own name. The name picks the scratch tenant and chunk ids derive from the tenant, and
    HYBRID orders chunks that tie on their fused score by id: under a name per form, an
    extraction that changed nothing moved HYBRID's nDCG by up to 0.002 by tie-breaking
    alone. One name per run (the harness empties the tenant after each) keeps identical
    text scoring identically, so a difference is the extraction's."""
    return asyncio.run(evaluate_collections([(name, dataset)], K))[name]


def render(report: Mapping[str, Any]) -> str:
    lines = [
        f"extraction round trip — {report['collection']}: {report['documents']} documents",
        "",
        f"{'form':<6} {'exact':>7} {'similarity':>10} {'min':>8} {'title':>6} {'refused':>8} "
        f"{'ms/doc':>7} {'KiB/doc':>8}",
    ]
    for form, row in report["forms"].items():
        refused = sum(row["refused"].values())
        lines.append(
            f"{form:<6} {row['exact_match_rate']:>7.4f} {row['mean_similarity']:>10.6f} "
            f"{row['min_similarity']:>8.4f} {row['title_match_rate']:>6.3f} {refused:>8} "
            f"{row['extract_ms_mean']:>7.2f} {row['mean_bytes'] / 1024:>8.1f}"
        )
    if "ndcg@10" in report:
        lines += [
            "",
            f"nDCG@{K} over {report['queries']} queries, each form ingested as uploaded files "
            f"and extracted by the service (model {report.get('model', '?')})",
            f"{'source':<9} " + " ".join(f"{mode:>18}" for mode in MODES),
        ]
        for source, scores in report["ndcg@10"].items():
            cells = []
            for mode in MODES:
                cell = f"{scores[mode]:.4f}"
                if source != "original":
                    delta = scores[mode] - report["ndcg@10"]["original"][mode]
                    cell += f" ({delta:+.4f})"
                cells.append(f"{cell:>18}")
            lines.append(f"{source:<9} " + " ".join(cells))
    return "\n".join(lines)


def main(
    dataset: Path,
    out: Path = DEFAULT_OUT,
    *,
    forms: Sequence[str] = tuple(FORMS),
    retrieval: bool = True,
) -> dict[str, Any]:
    """Round-trip ``dataset`` through ``forms``, evaluate retrieval on the results
    (unless ``retrieval`` is off), print the tables and write JSON to ``out``."""
    report = run(dataset, forms=forms, retrieval=retrieval)
    publish(report, render(report), out)
    return report


def _cli(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m services.bench.formats",
        description="Extraction quality: a BEIR collection rendered to PDF, DOCX and HTML "
        "and read back; text similarity and nDCG@10 against the original text.",
    )
    parser.add_argument("--dataset", type=Path, required=True, help="BEIR collection folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON report path")
    parser.add_argument(
        "--forms", default=",".join(FORMS), help=f"comma-separated subset of {', '.join(FORMS)}"
    )
    parser.add_argument(
        "--skip-retrieval", action="store_true", help="text comparison only (no servers)"
    )
    args = parser.parse_args(argv)
    forms = [f.strip() for f in args.forms.split(",") if f.strip()]
    unknown = [f for f in forms if f not in FORMS]
    if unknown:
        parser.error(f"unknown form(s): {', '.join(unknown)}")
    main(args.dataset, args.out, forms=forms, retrieval=not args.skip_retrieval)


if __name__ == "__main__":
    _cli()
