"""The language a question is written in, told offline.

The offline engines (the SQL service's schema linker, the router's rules) read English
only; a question in another language is better refused by its language than answered
from a misreading or refused for a word it "could not place". The model is py3langid's
(BSD-3), which ships inside its wheel: nothing is downloaded at run time, so air-gapped
deployments detect languages too. It is loaded once per process, on the first text that
needs it (about a second and 30 MB): most English questions never do (see below).

What matters is never calling an English question foreign: a misread one would be
refused. Short questions and proper names carry little evidence ("Count orders", "Orders
by Société Générale", "Sales in São Paulo"), so a text written in Latin letters is foreign
only when all of these hold:

- it has at least :data:`MIN_WORDS` words;
- none of them is an English word no other language here writes (:data:`_ENGLISH_ONLY`:
  "the", "of", "how", "which" …), which settles most English questions without the model;
- with its capitalised words after the first left out (names, which belong to no
  language; German nouns go too, its grammar words stay), the model gives another
  language at least :data:`MIN_CONFIDENCE`, among the languages of :data:`NAMES`.

A text mostly in another script is that script's language (kana: Japanese, Hangul:
Korean), or the model's choice among the languages written in it (Han: Chinese or
Japanese; Cyrillic: Russian, Ukrainian …). Measured on every development question of the
defog, Spider and QA sets (981): no English question called foreign (docs/sql.md, on languages).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

# English names of the languages a question may be told to be in (ISO 639-1 codes).
NAMES: dict[str, str] = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "sv": "Swedish",
    "da": "Danish",
    "no": "Norwegian",
    "fi": "Finnish",
    "pl": "Polish",
    "cs": "Czech",
    "sk": "Slovak",
    "sl": "Slovenian",
    "hr": "Croatian",
    "ro": "Romanian",
    "hu": "Hungarian",
    "tr": "Turkish",
    "ca": "Catalan",
    "id": "Indonesian",
    "vi": "Vietnamese",
    "et": "Estonian",
    "lv": "Latvian",
    "lt": "Lithuanian",
    "ru": "Russian",
    "uk": "Ukrainian",
    "bg": "Bulgarian",
    "sr": "Serbian",
    "el": "Greek",
    "he": "Hebrew",
    "ar": "Arabic",
    "fa": "Persian",
    "hi": "Hindi",
    "th": "Thai",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
}
_CYRILLIC = ("ru", "uk", "bg", "sr")
_HAN = ("zh", "ja")
_ARABIC = ("ar", "fa")
# the scripts one language of NAMES is written in
_SINGLE = {"hangul": "ko", "greek": "el", "hebrew": "he", "thai": "th", "devanagari": "hi"}
_LATIN = tuple(c for c in NAMES if c not in {*_CYRILLIC, *_HAN, *_ARABIC, *_SINGLE.values()})

MIN_WORDS = 3
MIN_CONFIDENCE = 0.7

# English words that no other language of NAMES writes as a word of its own (not "in",
# "die", "was", "is", "me", "do", "for": German, Dutch, Spanish, Portuguese, Norwegian
# use them): one of them makes a text English, whatever names it holds.
_ENGLISH_ONLY = frozenset(
    """
    the of how what which who whose many much with by from and show list count give
    find are does did there their each every than most between were has have at
    """.split()
)
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")


@dataclass(frozen=True)
class Language:
    """A detected language: its ISO 639-1 code, its English name, and how sure the
    detector is (1.0 where the script or an English word settles it)."""

    code: str
    name: str
    confidence: float = 1.0

    @property
    def english(self) -> bool:
        return self.code == "en"

    def __str__(self) -> str:
        return f"{self.name} ({self.code})"


ENGLISH = Language("en", "English")
# The reason (an ErrorReason value name) a question in another language is refused with
# where only the offline engines would read it.
LANGUAGE_UNSUPPORTED = "LANGUAGE_UNSUPPORTED"


def english_only_message(language: Language) -> str:
    """Why the offline engines refuse a question in ``language``, and what to do."""
    return (
        f"The offline engine reads English; this question looks {language}. Ask it in "
        "English, or configure a language model (GEMINI_API_KEY), which reads "
        f"{language.name}."
    )


def detect_language(text: str) -> Language:
    """The language ``text`` is written in; English unless the evidence for another is
    strong (see the module's docstring), so an uncertain text reads as English."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return ENGLISH
    scripts: dict[str, int] = {}
    for ch in letters:
        script = _script(ch)
        scripts[script] = scripts.get(script, 0) + 1
    script, most = max(scripts.items(), key=lambda p: p[1])
    if script != "latin" and most * 2 > len(letters):
        return _by_script(script, scripts, text)
    words = _WORD.findall(text)
    if len(words) < MIN_WORDS or any(w.lower() in _ENGLISH_ONLY for w in words):
        return ENGLISH
    # Names belong to no language: the first word opens the sentence, the rest that are
    # capitalised are left out (German nouns too; its grammar words carry it).
    kept = [w for i, w in enumerate(words) if i == 0 or not w[:1].isupper()]
    if len(kept) < 2:
        return ENGLISH
    code, confidence = _best(" ".join(kept), _LATIN)
    if code == "en" or confidence < MIN_CONFIDENCE:
        return ENGLISH
    return Language(code, NAMES[code], round(confidence, 3))


# How much of a document its language is told from: its opening is its language's
# evidence (bounded work per document, whatever its length).
DOCUMENT_SAMPLE_CHARS = 1000
# The least a document's language must be told with to be named.
DOCUMENT_CONFIDENCE = 0.5


def document_language(text: str) -> Language | None:
    """The language a document is written in, or None when its text says too little
    (a listing of numbers, a few words). Unlike a question's, a document's language is
    not biased to English: a German manual quoting "the" is German. Told from the first
    :data:`DOCUMENT_SAMPLE_CHARS` characters, by the same model and scripts as questions.
    """
    sample = text[:DOCUMENT_SAMPLE_CHARS]
    letters = [ch for ch in sample if ch.isalpha()]
    if len(_WORD.findall(sample)) < MIN_WORDS:
        return None
    scripts: dict[str, int] = {}
    for ch in letters:
        script = _script(ch)
        scripts[script] = scripts.get(script, 0) + 1
    # Mostly another script (kana and Han together: Japanese writes both), with Latin
    # names and commands among it ("apt update を実行します"): that script's language.
    other = sum(count for name, count in scripts.items() if name != "latin")
    if other * 2 > len(letters):
        script = max((name for name in scripts if name != "latin"), key=scripts.__getitem__)
        return _by_script(script, scripts, sample)
    code, confidence = _best(sample, _LATIN)
    if confidence < DOCUMENT_CONFIDENCE:
        return None
    return Language(code, NAMES[code], round(confidence, 3))


def load_language_model() -> None:
    """Load the model now (a service may do this at start, off the request path)."""
    _identifier()


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    for script, marks in (
        ("kana", ("HIRAGANA", "KATAKANA")),
        ("han", ("CJK",)),
        ("hangul", ("HANGUL",)),
        ("cyrillic", ("CYRILLIC",)),
        ("greek", ("GREEK",)),
        ("hebrew", ("HEBREW",)),
        ("arabic", ("ARABIC",)),
        ("thai", ("THAI",)),
        ("devanagari", ("DEVANAGARI",)),
    ):
        if name.startswith(marks):
            return script
    return "latin" if name.startswith("LATIN") else "other"


def _by_script(script: str, scripts: dict[str, int], text: str) -> Language:
    """The language of a text mostly in one non-Latin script."""
    if script == "kana" or (script == "han" and scripts.get("kana")):
        return Language("ja", NAMES["ja"])
    if script in _SINGLE:
        code = _SINGLE[script]
        return Language(code, NAMES[code])
    candidates = {"han": _HAN, "cyrillic": _CYRILLIC, "arabic": _ARABIC}.get(script)
    if candidates is None:  # a script no language of NAMES is written in: the model's
        code, confidence = _rank(text)[0]  # code names it
        return Language(code, NAMES.get(code, code), round(confidence, 3))
    code, confidence = _best(text, candidates)
    return Language(code, NAMES[code], round(confidence, 3))


def _best(text: str, candidates: tuple[str, ...]) -> tuple[str, float]:
    """The most likely of ``candidates`` and its probability among them."""
    ranked = [(code, p) for code, p in _rank(text) if code in candidates]
    total = sum(p for _, p in ranked) or 1.0
    code, p = ranked[0]
    return code, p / total


def _rank(text: str) -> list[tuple[str, float]]:
    """Every language of the model, most likely first (the model reads, never writes:
    one identifier serves every thread)."""
    ranked: list[tuple[str, float]] = _identifier().rank(text)
    return ranked


@functools.cache
def _identifier() -> Any:
    from py3langid.langid import (  # noqa: PLC0415 - loaded only when a text needs it
        MODEL_FILE,
        LanguageIdentifier,
    )

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
