"""OCR: the text of pages that are only pixels, read by Tesseract, one page at a time.

Why the ``tesseract`` program (Debian's ``tesseract-ocr``) and not a library binding:
as a child process it is held to limits of its own (``RLIMIT_AS`` of
``OcrOptions.memory_mb``, a per-page wall-clock timeout after which it is killed, one
OpenMP thread so one page costs one core), and it dies with the extraction worker that
started it (``PR_SET_PDEATHSIG``), so a page that hangs the engine costs that page only.
Its TSV output carries a confidence per word; a page's confidence is their mean weighted
by each word's letters and digits, so dot leaders and stray marks count for little.

What became of every page is reported (``OcrReport.notes``): the pages read with their
confidence, those under the floor (left out: guessed words in the index answer
questions wrongly), and those that timed out, failed or were not reached. Nothing here
logs: the notes go to the ingest report of the person who sent the file.
"""

from __future__ import annotations

import ctypes
import io
import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from PIL import Image

from services.retrieval.extract._limits import OcrOptions, Section

_PR_SET_PDEATHSIG = 1
# ``tesseract --list-langs`` answers in milliseconds; this only bounds a broken install.
_CHECK_TIMEOUT_S = 10.0
_HOW_TO_ENABLE = (
    "install Debian's tesseract-ocr and tesseract-ocr-eng (make setup does, as root) "
    "and set RETRIEVAL_OCR=on"
)
# Below this many dots per inch a page is scaled up to it (Tesseract reads small print
# badly); above ``OcrOptions.dpi`` it is scaled down (time grows with the pixels).
_MIN_DPI = 150
# Scaling up stops at about an A4 page at 300 dpi: past it, time grows and nothing is won.
_MAX_UPSCALED_PIXELS = 9_000_000
_LISTED = 10


class OcrUnavailable(Exception):
    """OCR is off or cannot run here; the message says why and how to enable it."""


class PageFailed(Exception):
    """One page could not be read (timeout, memory, an image too large or undecodable)."""


@dataclass(frozen=True)
class PageText:
    text: str
    confidence: float  # 0-100; 0 when no word was found
    words: int


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


class Tesseract:
    """Runs the ``tesseract`` program on one page image under ``options``' limits.

    ``check()`` first: it raises ``OcrUnavailable`` when OCR is off, the program is
    missing or a language's data is not installed, so a document's refusal can say so."""

    def __init__(self, options: OcrOptions) -> None:
        self.options = options
        self._libc = _libc()

    def check(self) -> None:
        options = self.options
        if not options.enabled:
            raise OcrUnavailable(f"OCR is off (RETRIEVAL_OCR=off); to read scans, {_HOW_TO_ENABLE}")
        if shutil.which(options.program) is None:
            raise OcrUnavailable(f"OCR is not available (no tesseract program); {_HOW_TO_ENABLE}")
        try:
            listed = subprocess.run(
                [options.program, "--list-langs"],
                capture_output=True,
                timeout=_CHECK_TIMEOUT_S,
                env=self._environment(),
                preexec_fn=self._die_with_parent,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OcrUnavailable(f"OCR is not available (tesseract did not start: {exc})") from exc
        if listed.returncode != 0:
            raise OcrUnavailable(
                f"OCR is not available (tesseract --list-langs exit status {listed.returncode})"
            )
        installed = set(listed.stdout.decode("utf-8", "replace").split())
        missing = [lang for lang in options.languages.split("+") if lang not in installed]
        if missing:
            packages = " ".join(f"tesseract-ocr-{m.replace('_', '-').lower()}" for m in missing)
            raise OcrUnavailable(
                f"OCR is not available for {'+'.join(missing)} (RETRIEVAL_OCR_LANGUAGES): "
                f"install {packages}"
            )

    def _environment(self) -> dict[str, str]:
        env = {"OMP_THREAD_LIMIT": "1", "LC_ALL": "C", "PATH": os.environ.get("PATH", "")}
        if "TESSDATA_PREFIX" in os.environ:
            env["TESSDATA_PREFIX"] = os.environ["TESSDATA_PREFIX"]
        return env

    def _die_with_parent(self) -> None:
        """In the child, before exec: SIGKILL when the worker that started it ends (the
        pool kills a worker at the deadline; its OCR must not go on)."""
        if self._libc is not None:
            self._libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    def _limit(self) -> None:
        """In the child, before exec: death with its parent, and its own memory cap."""
        self._die_with_parent()
        # Last: the cap may be under this forked copy's own size until exec replaces it.
        cap = self.options.memory_mb * 1024 * 1024
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def read(self, image: Image.Image, dpi: int, timeout_s: float) -> PageText:
        """The page's words, lines and paragraphs; raises ``PageFailed``."""
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", compress_level=1)
        command = [
            self.options.program, "stdin", "stdout",
            "-l", self.options.languages, "--psm", "3", "--dpi", str(dpi), "tsv",
        ]  # fmt: skip
        try:
            done = subprocess.run(
                command,
                input=buffer.getvalue(),
                capture_output=True,
                timeout=timeout_s,
                env=self._environment(),
                preexec_fn=self._limit,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise PageFailed(
                f"OCR gave up after {timeout_s:g} s (RETRIEVAL_OCR_PAGE_TIMEOUT_S)"
            ) from None
        except OSError as exc:
            raise PageFailed(f"OCR could not run ({exc.strerror or type(exc).__name__})") from None
        if done.returncode != 0:
            error = done.stderr.decode("utf-8", "replace").lower()
            crashed = done.returncode in (-signal.SIGABRT, -signal.SIGSEGV)
            if crashed or "alloc" in error or "out of memory" in error:
                raise PageFailed(
                    f"OCR needed more than {self.options.memory_mb} MiB "
                    "(RETRIEVAL_OCR_MEMORY_MB) or crashed"
                )
            raise PageFailed(f"OCR failed (tesseract exit status {done.returncode})")
        return parse_tsv(done.stdout.decode("utf-8", "replace"))


def parse_tsv(tsv: str) -> PageText:
    """Tesseract's TSV (one row per page, block, paragraph, line and word) as text: words
    joined by spaces in lines, paragraphs separated by a blank line."""
    paragraphs: dict[tuple[str, str], dict[str, list[str]]] = {}
    weighted = weight = 0.0
    words = 0
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5":
            continue
        word = cells[11].strip()
        try:
            confidence = float(cells[10])
        except ValueError:
            continue
        if not word or confidence < 0:
            continue
        words += 1
        paragraph = paragraphs.setdefault((cells[2], cells[3]), {})
        paragraph.setdefault(cells[4], []).append(word)
        letters = sum(c.isalnum() for c in word)
        weighted += confidence * letters
        weight += letters
    text = "\n\n".join(
        "\n".join(" ".join(line) for line in lines.values()) for lines in paragraphs.values()
    )
    return PageText(text, weighted / weight if weight else 0.0, words)


def prepared(image: Image.Image, dpi: float | None, options: OcrOptions) -> tuple[Image.Image, int]:
    """The page as Tesseract reads it best: grey, at about ``options.dpi`` (scaled down
    when finer, up when under 150 dpi), and the resolution to tell it. ``dpi`` is the
    scan's when known; else the image is taken as scanned at ``options.dpi``."""
    width, height = image.size
    if width * height > options.max_pixels:
        raise PageFailed(
            f"the image is {width:,} x {height:,} pixels, over the "
            f"{options.max_pixels:,}-pixel limit for OCR"
        )
    if image.mode not in ("1", "L"):
        image = image.convert("L")
    if not dpi or dpi <= 0:
        return image, options.dpi
    scale = 1.0
    if dpi > options.dpi * 1.25:
        scale = options.dpi / dpi
    elif dpi < _MIN_DPI and width * height * (_MIN_DPI / dpi) ** 2 <= _MAX_UPSCALED_PIXELS:
        scale = _MIN_DPI / dpi
    if abs(scale - 1.0) < 0.05:
        return image, round(dpi)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    if image.mode == "1":
        image = image.convert("L")
    return image.resize(size, Image.Resampling.LANCZOS), round(dpi * scale)


# How to get a page's image and resolution (deferred, so a page not reached is never
# decoded); None for a page with no image at all.
PageImage = Callable[[], tuple[Image.Image, float | None] | None]


@dataclass
class OcrReport:
    """What OCR made of a document's pages: sections for the pages read, notes for all."""

    sections: list[Section] = field(default_factory=list)
    read: list[tuple[int, float]] = field(default_factory=list)
    low: list[tuple[int, float]] = field(default_factory=list)
    empty: list[int] = field(default_factory=list)
    blank: list[int] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)
    not_reached: list[int] = field(default_factory=list)
    stopped_by: str = ""
    floor: float = 0.0

    def notes(self, unit: str = "page") -> list[str]:
        notes = []
        if self.read:
            listed = ", ".join(f"{unit} {n}: {c:.0f}" for n, c in self.read[:_LISTED])
            more = f" and {len(self.read) - _LISTED} more" if len(self.read) > _LISTED else ""
            notes.append(f"read by OCR (mean word confidence, 0-100): {listed}{more}")
        if self.low:
            listed = ", ".join(f"{unit} {n}: {c:.0f}" for n, c in self.low[:_LISTED])
            more = f" and {len(self.low) - _LISTED} more" if len(self.low) > _LISTED else ""
            notes.append(
                f"not indexed, OCR confidence under the floor of {self.floor:g} "
                f"(RETRIEVAL_OCR_MIN_CONFIDENCE): {listed}{more}"
            )
        if self.blank:
            notes.append(f"no text on {unit}{'s' if len(self.blank) > 1 else ''} "
                         f"{_numbers(self.blank)} (no text layer, no image)")  # fmt: skip
        if self.empty:
            notes.append(f"OCR found no text on {unit}{'s' if len(self.empty) > 1 else ''} "
                         f"{_numbers(self.empty)}")  # fmt: skip
        for number, why in self.failed[:_LISTED]:
            notes.append(f"not indexed: {unit} {number}: {why}")
        if len(self.failed) > _LISTED:
            notes.append(f"not indexed: {len(self.failed) - _LISTED} more {unit}s failed OCR")
        if self.not_reached:
            notes.append(
                f"not read by OCR: {unit}{'s' if len(self.not_reached) > 1 else ''} "
                f"{_numbers(self.not_reached)} ({self.stopped_by})"
            )
        return notes

    def summary(self) -> str:
        """One line for a refusal: why no page yielded text."""
        return "; ".join(self.notes()) or "OCR found no text"


def _numbers(numbers: list[int]) -> str:
    listed = ", ".join(str(n) for n in numbers[:_LISTED])
    return listed if len(numbers) <= _LISTED else f"{listed} and {len(numbers) - _LISTED} more"


def read_pages(
    pages: Iterable[tuple[int, PageImage]],
    options: OcrOptions,
    locator: Callable[[int], str],
    take: Callable[[str], str],
    engine: Tesseract | None = None,
) -> OcrReport:
    """OCR ``pages`` in order within ``options``' page count and time budget; ``take``
    charges each page's text to the document's character budget. Raises
    ``OcrUnavailable`` at the first page with an image when OCR cannot run."""
    engine = engine or Tesseract(options)
    checked = False
    report = OcrReport(floor=options.min_confidence)
    deadline = options.deadline or time.monotonic() + options.budget_s
    attempted = 0
    for number, load in pages:
        left = deadline - time.monotonic()
        if attempted >= options.max_pages:
            report.not_reached.append(number)
            report.stopped_by = f"at most {options.max_pages} pages (RETRIEVAL_OCR_MAX_PAGES)"
            continue
        if left < 1.0:
            report.not_reached.append(number)
            report.stopped_by = "the document's OCR time ran out (RETRIEVAL_EXTRACT_TIMEOUT_S)"
            continue
        try:
            try:
                loaded = load()
                if loaded is None:  # nothing on the page to read
                    report.blank.append(number)
                    continue
                if not checked:
                    engine.check()
                    checked = True
                attempted += 1
                image, used_dpi = prepared(*loaded, options)
            except (PageFailed, OcrUnavailable, MemoryError):
                raise
            except Exception as exc:  # a page's image that cannot be decoded loses that page
                raise PageFailed(f"its image cannot be decoded ({type(exc).__name__})") from exc
            page = engine.read(image, used_dpi, min(options.page_timeout_s, left))
        except PageFailed as exc:
            report.failed.append((number, str(exc)))
            continue
        if not page.words:
            report.empty.append(number)
        elif page.confidence < options.min_confidence:
            report.low.append((number, page.confidence))
        else:
            report.read.append((number, page.confidence))
            report.sections.append(Section("", take(page.text), locator(number)))
    return report
