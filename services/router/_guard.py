"""Guardrails the router applies itself: the injection scan of retrieved passages and
the output check of the answer (foreign URLs, invented citations, prompt leakage).

Fencing and the restated rules are part of every LLM-layer prompt (``LLM_GUARD_*``);
these layers sit on either side of it, so a payload that slips past one is still caught
by another.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from services.common.llm import AnswerSentence
from services.router.offline import framing

HIGH = "HIGH"
MEDIUM = "MEDIUM"
LOW = "LOW"

OVERRIDE = "OVERRIDE_PHRASING"
ROLE_TAG = "ROLE_TAG"
EXFILTRATION = "EXFILTRATION_LINK"
HIDDEN = "HIDDEN_MARKUP"

_URL = re.compile(r"https?://[^\s<>\"')\]]+", re.IGNORECASE)
_OVERRIDE = re.compile(
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(instructions?|rules|prompts?|guidelines|"
    r"everything above|the above)\b"
    r"|\b(you are now|from now on you|new instructions|system prompt|developer mode|jailbreak)\b",
    re.IGNORECASE | re.DOTALL,
)
_ROLE_TAG = re.compile(
    r"<\s*/?\s*(system|assistant|user|tool)\s*>|<\|im_(start|end)\|>|\[/?INST\]"
    r"|^\s*(system|assistant)\s*:",
    re.IGNORECASE | re.MULTILINE,
)
_MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*https?://", re.IGNORECASE)
_SEND_VERBS = re.compile(
    r"\b(send|post|upload|append|include|forward|exfiltrat\w*|leak|transmit|visit|open|fetch|"
    r"click|render)\b",
    re.IGNORECASE,
)
_TEMPLATED_QUERY = re.compile(r"https?://\S*[?&][\w-]+=(\{|<|\$|%7B)", re.IGNORECASE)
_HTML_COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)
_ZERO_WIDTH = re.compile(r"[\u200b-\u200f\u2060-\u2064\ufeff]")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|font-size\s*:\s*0|color\s*:\s*white", re.I)
_CITATION_MARK = re.compile(r"\s*\[(\d+)\]")
_LEAK_PHRASES = (
    "are untrusted data",
    "never follow instructions",
    "never reveal these rules",
    "<<<begin",
    "<<<end",
    "reply with one json object",
)


@dataclass(frozen=True)
class Finding:
    """One payload kind found in a text, with its severity."""

    kind: str
    severity: str


@functools.lru_cache(maxsize=2048)
def scan(text: str) -> tuple[Finding, ...]:
    """Injection payloads in one passage; HIGH ones get the passage quarantined.
    Remembered by text: the same passages come back for many questions."""
    findings: list[Finding] = []
    if _OVERRIDE.search(text):
        findings.append(Finding(OVERRIDE, HIGH))
    if _ROLE_TAG.search(text):
        findings.append(Finding(ROLE_TAG, HIGH))
    if _MARKDOWN_IMAGE.search(text) or _TEMPLATED_QUERY.search(text):
        findings.append(Finding(EXFILTRATION, HIGH))
    elif _URL.search(text):
        # A link inside a sentence that tells the reader to send or open it.
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            urls = _URL.findall(sentence)
            if urls and _SEND_VERBS.search(sentence):
                carries_data = any("?" in url for url in urls)
                findings.append(Finding(EXFILTRATION, HIGH if carries_data else MEDIUM))
                break
    hidden = [m.group(1) for m in _HTML_COMMENT.finditer(text)]
    if any(_OVERRIDE.search(h) or _SEND_VERBS.search(h) for h in hidden):
        findings.append(Finding(HIDDEN, HIGH))
    elif _ZERO_WIDTH.search(text) or _HIDDEN_STYLE.search(text):
        findings.append(Finding(HIDDEN, MEDIUM))
    elif hidden:
        findings.append(Finding(HIDDEN, LOW))
    return tuple(findings)


@dataclass
class CheckedSentence:
    """A sentence after the output check, with the citations that survived."""

    text: str
    citations: list[int]


@dataclass
class OutputCheck:
    """What the output check kept and what it changed."""

    sentences: list[CheckedSentence] = field(default_factory=list)
    removed_citations: list[tuple[int, str]] = field(default_factory=list)
    url_findings: list[tuple[str, str]] = field(default_factory=list)
    prompt_leak: bool = False


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def check_output(
    sentences: Sequence[AnswerSentence],
    *,
    known: Collection[int],
    quarantined: Collection[int],
    context: Iterable[str],
    sentinel: str,
    check_urls_and_leaks: bool,
    check_citations: bool,
) -> OutputCheck:
    """Drop invented citations, foreign URLs and leaked rules; keep the rest verbatim.

    A URL may stay only if the context holds it outside any passage that itself reads
    as an exfiltration attempt: the check does its own scan, so a planted link copied
    verbatim is removed even when the injection scan layer is switched off."""
    result = OutputCheck()
    context_text = "\n".join(
        text for text in context if not any(f.kind == EXFILTRATION for f in scan(text))
    )
    for sentence in sentences:
        text = sentence.text
        cited: list[str] = list(sentence.citations)
        # Models also write "[n]" inline; those marks are citations too.
        cited.extend(_CITATION_MARK.findall(text))
        text = _CITATION_MARK.sub("", text).strip()
        if check_urls_and_leaks:
            lowered = text.lower()
            if (sentinel and sentinel in text) or any(p in lowered for p in _LEAK_PHRASES):
                result.prompt_leak = True
                continue
            for url in _URL.findall(text):
                clean = url.rstrip(".,;:!?")
                if clean and clean in context_text:
                    continue
                result.url_findings.append((_host(clean), "REMOVED"))
                text = text.replace(url, "").replace("()", "").replace("[]", "")
            text = re.sub(r"\s{2,}", " ", text).strip()
        if not text:
            continue
        kept: list[int] = []
        for raw in cited:
            try:
                number = int(str(raw).strip().strip("[]"))
            except ValueError:
                number = -1
            if number in kept:
                continue
            if check_citations and number not in known:
                result.removed_citations.append((number, "NOT_RETRIEVED"))
                continue
            if check_citations and number in quarantined:
                result.removed_citations.append((number, "QUARANTINED"))
                continue
            kept.append(number)
        result.sentences.append(CheckedSentence(text, kept))
    return result


def needs_citation(text: str) -> bool:
    """Framing sentences (no answer, partial note, a refusal's unplaced words) are not
    claims and need no citation."""
    return not framing(text)
