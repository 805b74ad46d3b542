"""``python -m services.bench.ocr``: what OCR costs per page, and what it loses for search.

A real manual's pages (default: pages 5-12 of the GNU Libtasn1 manual from Debian's
libtasn1-doc, ``/usr/share/doc/libtasn1-doc/libtasn1.pdf``) are rendered to images at
300 dpi by ``pdftoppm`` (Debian's poppler-utils, needed by this measurement only), each
packed as an image-only PDF: the scan a person would upload. Each scan goes through
``services.retrieval.extract.extract``, the path an upload takes (OCR by Tesseract under
the default ``OcrOptions``), timing it and reading the OCR program's peak resident memory
(``RUSAGE_CHILDREN``) and its confidence from the report.

Then searchability: the pages are ingested twice, once as their text layer (each page
its own PDF) and once as the scans, through the retrieval eval's harness (the real
embedding and retrieval servers in process), and nDCG@10 per search mode is compared
over eleven questions written for these pages (``QUERIES``). Issue 48's target: OCR'd
pages within 0.05 of the same pages' text layer.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image
from pypdf import PdfReader, PdfWriter

from services.bench._publish import publish
from services.bench.retrieval_eval import MODES, Dataset, evaluate_collections
from services.retrieval.extract import extract

DEFAULT_PDF = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")
DEFAULT_OUT = Path("bench-results/ocr.json")
DPI = 300
K = 10
# (question, {page: grade}) for pages 5-12 of the Libtasn1 manual, written from the pages.
QUERIES: tuple[tuple[str, dict[int, int]], ...] = (
    ("is the ASN.1 parser case sensitive and how do comments begin", {5: 2}),
    ("which types can the parser manage INTEGER ENUMERATED BOOLEAN", {5: 2, 6: 1}),
    ("REAL type and AUTOMATIC TAGS are not supported", {6: 2}),
    ("header file of the library and the asn1_node type", {7: 2}),
    ("simple parsing functions for OCTET STRING", {7: 2}),
    ("asn1Parser usage: generate a C array from a definitions file", {8: 2}),
    ("asn1Coding DER encoding from a file with assignments", {8: 2, 9: 1}),
    ("example ASN.1 definitions file MYPKIX1 OtherStruct", {9: 2}),
    ("asn1Decoding decode DER data in ENCODED file for an ASN1TYPE", {10: 2}),
    ("asn1_parser2tree start the parse algorithm and return an error description", {11: 2}),
    ("asn1_array2tree create structures from a static array", {12: 2}),
)


def render_pages(pdf: Path, first: int, last: int, dpi: int = DPI) -> list[Image.Image]:
    """The pages as a 300 dpi grey scan (pdftoppm), in order."""
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            ["pdftoppm", "-r", str(dpi), "-gray", "-png", "-f", str(first), "-l", str(last),
             str(pdf), f"{folder}/page"],
            check=True,
        )  # fmt: skip
        images = []
        for path in sorted(Path(folder).glob("page-*.png")):
            with Image.open(path) as image:
                images.append(image.copy())
        return images


def scan_pdf(image: Image.Image, dpi: int = DPI) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PDF", resolution=dpi)
    return buffer.getvalue()


def text_page_pdf(reader: PdfReader, number: int) -> bytes:
    writer = PdfWriter()
    writer.add_page(reader.pages[number - 1])
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _measure_one() -> None:
    """In a fresh interpreter: extract the scan on stdin, print seconds, the OCR
    program's CPU seconds and peak RSS (this process's only children), and the notes."""
    data = sys.stdin.buffer.read()
    started = time.perf_counter()
    extracted = extract(data, "page.pdf")
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "seconds": round(seconds, 2),
                "ocr_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
                "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
                "notes": extracted.notes,
                "chars": extracted.char_count,
            }
        )
    )


def measure_pages(scans: dict[int, bytes]) -> list[dict[str, Any]]:
    """Per page, each in a process of its own so the memory read is that page's OCR
    alone (``RUSAGE_CHILDREN`` keeps the peak of every child ever waited for, pdftoppm's
    too): wall seconds through ``extract``, the OCR program's CPU seconds and peak RSS,
    and the report's notes (the confidence)."""
    rows = []
    for number, data in scans.items():
        done = subprocess.run(
            [sys.executable, "-c", "from services.bench.ocr import _measure_one; _measure_one()"],
            input=data,
            capture_output=True,
            check=True,
        )
        rows.append({"page": number, **json.loads(done.stdout)})
    return rows


def _dataset(pages: dict[int, bytes], prefix: str) -> Dataset:
    corpus = [
        {"_id": f"page-{n}", "content": data, "file_name": f"{prefix}-{n}.pdf"}
        for n, data in pages.items()
    ]
    queries = [{"_id": f"q{i}", "text": q} for i, (q, _) in enumerate(QUERIES)]
    qrels = {f"q{i}": {f"page-{p}": g for p, g in grades.items()} for i, (_, grades) in
             enumerate(QUERIES)}  # fmt: skip
    return Dataset(corpus, queries, qrels)


def run(pdf: Path, first: int, last: int, *, retrieval: bool = True) -> dict[str, Any]:
    reader = PdfReader(pdf)
    images = render_pages(pdf, first, last)
    numbers = range(first, first + len(images))
    scans = {n: scan_pdf(image) for n, image in zip(numbers, images, strict=True)}
    texts = {n: text_page_pdf(reader, n) for n in numbers}
    rows = measure_pages(scans)
    report: dict[str, Any] = {
        "pdf": str(pdf),
        "pages": [first, last],
        "dpi": DPI,
        "per_page": rows,
        "seconds_mean": round(statistics.fmean(r["seconds"] for r in rows), 2),
        "seconds_max": max(r["seconds"] for r in rows),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in rows),
    }
    if retrieval:
        # One name for both versions: the same scratch tenant, so ties break alike.
        ndcg = {}
        for source, pages in (("text layer", texts), ("OCR", scans)):
            result = asyncio.run(evaluate_collections([("ocr-pages", _dataset(pages, source))], K))
            metrics = result["ocr-pages"]["metrics"]["all"]
            ndcg[source] = {mode: metrics[mode][f"ndcg@{K}"] for mode in MODES}
        report["ndcg@10"] = ndcg
        report["ndcg@10_delta"] = {
            mode: round(ndcg["OCR"][mode] - ndcg["text layer"][mode], 4) for mode in MODES
        }
    return report


def render(report: dict[str, Any]) -> str:
    lines = [
        f"OCR of {report['pdf']} pages {report['pages'][0]}-{report['pages'][1]} "
        f"at {report['dpi']} dpi",
        f"{'page':>4} {'s':>6} {'cpu s':>6} {'peak MiB':>8}  report",
    ]
    for row in report["per_page"]:
        lines.append(
            f"{row['page']:>4} {row['seconds']:>6.2f} {row['ocr_cpu_seconds']:>6.2f} "
            f"{row['peak_rss_mib']:>8.1f}  {'; '.join(row['notes'])}"
        )
    lines.append(f"mean {report['seconds_mean']:.2f} s/page, peak RSS {report['peak_rss_mib']} MiB")
    if "ndcg@10" in report:
        lines.append(f"nDCG@{K} over {len(QUERIES)} questions:")
        for source, scores in report["ndcg@10"].items():
            cells = " ".join(f"{mode}={score:.4f}" for mode, score in scores.items())
            lines.append(f"  {source:<10} {cells}")
        deltas = " ".join(f"{m}={d:+.4f}" for m, d in report["ndcg@10_delta"].items())
        lines.append(f"  OCR - text {deltas}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m services.bench.ocr", description=__doc__)
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--first", type=int, default=5)
    parser.add_argument("--last", type=int, default=12)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--skip-retrieval", action="store_true", help="cost per page only")
    args = parser.parse_args(argv)
    report = run(args.pdf, args.first, args.last, retrieval=not args.skip_retrieval)
    publish(report, render(report), args.out)
    return report


if __name__ == "__main__":
    main()
