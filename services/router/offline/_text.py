"""Tokens, stems, stopwords, typo tolerance and a small business thesaurus.

The deterministic provider's rules all read text through these helpers, so a plural,
a capitalised word or a one-letter typo is treated the same way in every role.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_TOKEN = re.compile(
    r"\d{4}-\d{2}-\d{2}"  # ISO date
    r"|\$?\d[\d,]*(?:\.\d+)?(?:[kmb]\b)?"  # number, optional $ and k/m/b suffix
    r"|[A-Za-z][A-Za-z0-9_]*(?:'[A-Za-z]+)?"  # word, optional 's / n't
)


def word_list(text: str) -> list[str]:
    """The whitespace-separated words of a literal word list."""
    return text.split()


STOPWORDS = frozenset(
    word_list(
        """
        a an the and or but if then else of to in on at by for from with without into onto
        about above below over under between among through during before after since until
        is are was were be been being am do does did done doing have has had having i me my
        mine we us our you your he him his she her it its they them their this that these
        those there here what which who whom whose when where why how can could would should
        shall will may might must please kindly just also too very some any all each every
        both either neither no not nor only own same so than such as up down out off again
        further once more most less least few fewer many much tell show give list find get
        let know see say s t don doesn didn isn aren wasn weren hasn haven hadn won't can't
        whats what's hows how's thanks thank hi hello hey
        """
    )
)

# Question scaffolding: words that carry no topic for search or grading.
FILLER = frozenset(
    word_list(
        """
        tell show give list find get let know see look display describe explain summarize
        summarise summary provide share want need like would could please kindly help me
        information info details detail data thing things stuff anything something
        everything question answer regarding re
        """
    )
)

# Groups of interchangeable business words; a member links to or expands to the others.
THESAURUS: tuple[tuple[str, ...], ...] = (
    ("company", "account", "customer", "client", "firm", "organization", "organisation"),
    ("opportunity", "deal", "opp", "pipeline"),
    ("contact", "person", "people", "stakeholder", "buyer"),
    ("activity", "interaction", "touchpoint", "engagement"),
    ("product", "item", "sku", "offering"),
    ("employee", "headcount", "staff", "workforce"),
    ("amount", "value", "worth"),
    ("revenue", "turnover", "income"),
    ("industry", "sector", "vertical"),
    ("stage", "status", "phase"),
    ("region", "territory", "geography"),
    ("owner", "rep", "salesperson", "seller", "owns"),
    ("score", "rating"),
    ("price", "cost", "pricing"),
    ("email", "mail"),
    ("phone", "telephone"),
    ("title", "position", "job"),
    ("note", "memo", "writeup"),
    ("churn", "attrition", "cancellation"),
    ("issue", "problem", "complaint", "concern", "objection"),
    ("policy", "guideline", "rule"),
    ("contract", "agreement"),
    ("discount", "rebate"),
    ("renewal", "renew"),
    ("meeting", "call"),
)


@dataclass(frozen=True)
class Token:
    """A word or number in a question, with its position and stem."""

    raw: str
    low: str
    stem: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Words and numbers of ``text`` in order; possessive ``'s`` is dropped."""
    tokens = []
    for match in _TOKEN.finditer(text):
        raw = match.group(0)
        if raw.lower().endswith("'s"):
            raw = raw[:-2]
        low = raw.lower()
        tokens.append(Token(raw, low, stem(low), match.start(), match.start() + len(raw)))
    return tokens


def lowered_stems(text: str) -> list[tuple[str, str]]:
    """``(token.low, token.stem)`` of each of ``tokenize(text)``'s tokens, without building
    them: the extractive synthesis reads only these two, for every retrieved sentence."""
    pairs = []
    for match in _TOKEN.finditer(text):
        low = match.group(0).lower()
        if low.endswith("'s"):
            low = low[:-2]
        pairs.append((low, stem(low)))
    return pairs


@functools.lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A light suffix stripper: plurals, -ing/-ed and a final e (close/closed/closing)."""
    w = word.lower()
    if len(w) <= 3 or not w.isalpha():
        return w
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch")):
        if w.endswith(suffix) and len(w) > len(suffix) + 1:
            w = w[: -len(suffix)] + replacement
            break
    else:
        if w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
    for suffix, minimum in (("ing", 6), ("ed", 5)):
        if w.endswith(suffix) and len(w) >= minimum:
            w = w[: -len(suffix)]
            if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def is_content(token: Token) -> bool:
    """A token that carries topic: not a stopword, not filler, not punctuation-like."""
    return token.low not in STOPWORDS and token.low not in FILLER and len(token.low) > 1


def keywords(text: str) -> list[str]:
    """Content words of ``text`` in order of first appearance, lowercased, unique."""
    seen: dict[str, None] = {}
    for token in tokenize(text):
        if is_content(token) and not re.fullmatch(r"\$?[\d.,]+[kmb]?", token.low):
            seen.setdefault(token.low, None)
    return list(seen)


def similar(a: str, b: str, cutoff: float = 0.85) -> bool:
    """True when two words are one typo apart (compared on stems, length ≥ 4)."""
    sa, sb = stem(a), stem(b)
    if sa == sb:
        return True
    if min(len(sa), len(sb)) < 4:
        return False
    return difflib.SequenceMatcher(None, sa, sb).ratio() >= cutoff


def closest(word: str, vocabulary: list[str], cutoff: float = 0.85) -> str | None:
    """The vocabulary word (compared by stem) nearest to ``word``, if it is a near typo."""
    target = stem(word)
    if len(target) < 4:
        return None
    stems = {stem(v): v for v in vocabulary if len(stem(v)) >= 4}
    match = difflib.get_close_matches(target, list(stems), n=1, cutoff=cutoff)
    return stems[match[0]] if match else None


def has_close(word: str, vocabulary: Iterable[str], cutoff: float = 0.85) -> bool:
    """``closest(word, vocabulary, cutoff) is not None``, with each (stem, stem) verdict
    remembered: synthesis asks it of the same question and passage words again and again.

    ``get_close_matches`` finds a match exactly when some candidate's ``ratio()`` reaches
    the cutoff (its quick ratios are upper bounds), so the answer is the same.
    """
    return close_to_any(stem(word), {stem(v) for v in vocabulary}, cutoff)


def close_to_any(target: str, stems: Iterable[str], cutoff: float = 0.85) -> bool:
    """``has_close`` for a stemmed word and already stemmed vocabulary."""
    size = len(target)
    if size < 4:
        return False
    # The length bound of ``_near`` inline: most candidates end here, without a call.
    return any(
        _near(target, candidate, cutoff)
        for candidate in stems
        if len(candidate) >= 4 and 2 * min(size, len(candidate)) >= cutoff * (size + len(candidate))
    )


@functools.lru_cache(maxsize=65536)
def _near(target: str, candidate: str, cutoff: float) -> bool:
    # Lengths alone bound the ratio (2 * matches / total): most pairs end here, without
    # building a matcher. Then the order get_close_matches compares in, with its cheaper
    # upper bound first; the verdict is the same as ``ratio() >= cutoff``.
    shorter, total = min(len(target), len(candidate)), len(target) + len(candidate)
    if 2 * shorter < cutoff * total:
        return False
    matcher = difflib.SequenceMatcher(None, candidate, target)
    return matcher.quick_ratio() >= cutoff and matcher.ratio() >= cutoff


def synonyms(word: str) -> tuple[str, ...]:
    """Other members of every thesaurus group ``word`` belongs to (by stem)."""
    return _SYNONYMS.get(stem(word), ())


def _synonym_index() -> dict[str, tuple[str, ...]]:
    index: dict[str, dict[str, None]] = {}
    for group in THESAURUS:
        for member in group:
            found = index.setdefault(stem(member), {})
            for other in group:
                if stem(other) != stem(member):
                    found.setdefault(other, None)
    return {key: tuple(values) for key, values in index.items()}


_SYNONYMS = _synonym_index()


# Where a sentence may end: terminal punctuation, any closing quotes or brackets, space,
# then what can open a sentence.
_BOUNDARY = re.compile(
    r"[.!?][\"'\u201d\u2019)\]]*\s+"
    r"(?=[\"'\u201c\u2018(\[]?[A-Z0-9]|[-\u2010\u2011\u2013\u2212]{1,2}[A-Za-z0-9][\w-]*[\s,=])"
)
# Words a full stop follows without ending the sentence: titles, initials' companions,
# and common abbreviations of English prose (not of any one corpus).
_ABBREVIATIONS = frozenset(
    word_list(
        """
        mr mrs ms dr st mt jr sr prof gen col lt capt sgt rev gov sen rep pres inc ltd co
        corp bros no nos vs etc e.g i.e cf al approx ca fig vol pp ed eds dept univ jan feb
        mar apr jun jul aug sep sept oct nov dec ft
        """
    )
)


def _ends_sentence(text: str, end: int) -> bool:
    """Whether the full stop before ``end`` closes a sentence: not after an initial
    ("Kurt H. Smith"), an abbreviation ("St. George") or a dotted acronym ("U.S. Army")."""
    at = end
    while at > 0 and text[at - 1] in "\"'\u201d\u2019)]":
        at -= 1
    if at == 0 or text[at - 1] != ".":
        return True  # ! or ?
    start = at - 1
    while start > 0 and (text[start - 1].isalpha() or text[start - 1] == "."):
        start -= 1
    word = text[start : at - 1]
    if len(word) == 1 and word.isupper():
        return False
    if "." in word and all(len(part) == 1 for part in word.split(".") if part):
        return False  # U.S, e.g
    return word.lower() not in _ABBREVIATIONS


# A line that opens an option's description: one or two dashes (ASCII, or the minus and
# hyphens PDF and man output use), then the option's name ("-k, --keep", "--help",
# "-9", "\u2212J"). A bullet ("- item") has a space after its dash and is not one.
_DASH = "\\-\u2010\u2011\u2012\u2013\u2212"
_OPTION = re.compile(rf"\s*[{_DASH}]{{1,2}}[A-Za-z0-9?#][\w{_DASH}.]*(?=[\s,=\[|]|$)")
# A list item's marker: a bullet, "1." / "2)" / "(3)", or "a)" / "(b)".
_ITEM = re.compile(
    r"\s*(?:[*\u2022\u00b7\u25aa\u2023\u25e6\u2013\u2014-]|\(?\d{1,3}[.)]|\(?[a-z]\))\s+(?=\S)"
)
# A word broken across lines by hyphenation ("decompres\u2010" / "sion"): one word again.
_HYPHENATED = re.compile(r"(?<=[a-z])[\u2010\u00ad]\n\s*(?=[a-z])")
# A table row offered as a paragraph ("PRIORITY_HIGH — Description: …", see
# ``_cells.without_tables``): its name, a dash, and a labelled cell.
_ROW = re.compile(r"[^\n\u2014]{1,80} \u2014 [^\n:\u2014]{1,40}: ")
# An option's description is stated with its name up to about this many words; further
# sentences of a long description are units of their own.
OPTION_WORDS = 30


@dataclass(frozen=True)
class Unit:
    """What an extractive answer may quote: a sentence of prose, an option with its
    description, a list item, one line of line-structured text, or a table row offered as
    a paragraph. ``block`` numbers the paragraph it came from; ``kind`` is "sentence",
    "option", "item", "line" or "row"."""

    text: str
    kind: str
    block: int

    @property
    def lead_in(self) -> bool:
        """A sentence that announces what follows ("… in the following range:"): on its
        own it says nothing the reader asked for."""
        return self.kind in ("sentence", "line") and self.text.endswith(":")


def _indent(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _line_structured(lines: Sequence[str]) -> bool:
    """Whether each line of a paragraph stands alone (a listing, a table drawn in text,
    settings one per line) rather than prose wrapped at a width: most of its breaks come
    where the next line's first word would still have fitted on the line."""
    if len(lines) < 3:
        return False
    widths = [len(line.expandtabs(8).rstrip()) for line in lines]
    width = max(widths)
    hard = 0
    for current, following in itertools.pairwise(range(len(lines))):
        first = lines[following].split(None, 1)
        if first and widths[current] + 1 + len(first[0]) < width * 0.9:
            hard += 1
    return hard * 3 >= (len(lines) - 1) * 2


def _segments(block: str) -> list[tuple[str, str]]:
    """A paragraph's lines grouped into (kind, text): an option line with the lines of its
    description, a list item with its continuation lines, each line of a line-structured
    paragraph, and runs of prose (a line opening with a capital or "#" starts a run, as
    before)."""
    lines = [line for line in block.split("\n") if line.strip()]
    if not lines:
        return []
    structured = _line_structured(lines)
    out: list[tuple[str, list[str], int]] = []
    # Prose that ends in an option's name ("… first match. -m NUM, --max-count=NUM", a
    # chunk's overlap run into the next entry's term line) is read as two lines: the
    # prose, then the name that opens the option the following lines describe.
    lines = [part for line in lines for part in _split_trailing_option(line)]
    for line in lines:
        indent = _indent(line)
        if _OPTION.match(line):
            out.append(("option", [line], indent))
            continue
        item = _ITEM.match(line)
        if item:
            out.append(("item", [line[item.end() :]], indent))
            continue
        capital = re.match(r"\s*[A-Z#]", line) is not None
        if out and (
            out[-1][0] == "option"
            or (out[-1][0] == "item" and (indent > out[-1][2] or not (structured or capital)))
        ):
            out[-1][1].append(line)  # the description or continuation of the one above
        elif structured:
            out.append(("line", [line], indent))
        elif out and out[-1][0] == "sentence" and not re.match(r"[A-Z#]", line):
            out[-1][1].append(line)
        else:
            out.append(("sentence", [line], indent))
    return [(kind, "\n".join(parts)) for kind, parts, _ in out]


def _split_trailing_option(line: str) -> tuple[str, ...]:
    """``line``, or the prose it opens with and the option name it ends with after a
    sentence's end ("… stops upon first match." and "-m NUM, --max-count=NUM") when that
    name describes nothing on the line (its description is on the lines below)."""
    if _OPTION.match(line):
        return (line,)
    pieces = _sentences(line)
    last = pieces[-1].strip() if len(pieces) >= 2 else ""
    if not last or not _OPTION.match(last) or not _bare_option(last):
        return (line,)
    at = line.rindex(last)
    return (line[:at].rstrip(), line[: _indent(line)] + line[at:])


_ANNOTATION = re.compile(r"\[[^\]\n]*\]|\([^)\n]*\)")


def _bare_option(text: str) -> bool:
    """An option line that names options (and their arguments) but describes nothing:
    no more plain words than options ("-e script, --expression=script"); a bracketed
    note on it ("[default: bb.out.%p]", "(deprecated)") describes nothing either."""
    if "\n" in text:
        return False
    words = _ANNOTATION.sub(" ", text).split()
    named = sum(1 for w in words if _OPTION.match(w))
    return len(words) - named <= named


def _sentences(text: str) -> list[str]:
    pieces: list[str] = []
    begin = 0
    for match in _BOUNDARY.finditer(text):
        close = match.start() + len(match.group(0).rstrip())
        if _ends_sentence(text, close):
            pieces.append(text[begin:close])
            begin = match.end()
    pieces.append(text[begin:])
    return pieces


def _clean(piece: str, kind: str) -> str:
    cleaned = re.sub(r"\s+", " ", piece).strip()
    # Prose and lines lose stray bullets and heading marks; an option keeps its dashes.
    return cleaned if kind == "option" else cleaned.strip(" -*\u2022#\t")


def _pieces(kind: str, segment: str) -> list[tuple[str, str]]:
    """A segment's units as (kind, text): its sentences, except that an option is stated
    with its description up to :data:`OPTION_WORDS` words (its first sentence at least,
    cut at a semicolon when that alone is longer: ``_clauses``), and a sentence that
    opens with an option's name starts that option's unit (a PDF line or a chunk's
    overlap runs "… decompression. -s --small Reduce …" together). A
    table row's paragraph (``_ROW``) is one unit up to as many words, as an option is: its
    sentences apart lose the row's name ("This corresponds to … a nice value of -14")."""
    if kind == "sentence" and _ROW.match(segment) and len(segment.split()) <= OPTION_WORDS:
        return [("row", segment)]
    out: list[tuple[str, str]] = []
    for index, piece in enumerate(_sentences(segment)):
        if not piece.strip():
            continue
        if _OPTION.match(piece):
            out.append(("option", piece))
        elif (
            out
            and out[-1][0] == "option"
            and (
                len(out[-1][1].split()) + len(piece.split()) <= OPTION_WORDS
                or _bare_option(out[-1][1])
            )
        ):
            out[-1] = ("option", out[-1][1] + " " + piece)
        else:
            out.append((kind if index == 0 and kind != "option" else "sentence", piece))
    return [
        (kind if at == 0 or _OPTION.match(part) else "sentence", part)
        for kind, piece in out
        for at, part in enumerate(_clauses(piece) if kind == "option" else (piece,))
    ]


def _clauses(option: str) -> tuple[str, ...]:
    """An option's unit, or, when its first sentence alone runs past
    :data:`OPTION_WORDS` words ("-d, --max-depth=N print the total for a directory …
    below the command line argument; --max-depth=0 is the same as --summarize"), the
    option with the clauses that fit, up to a semicolon, and the rest as a sentence of
    its own: an answer quotes the option and what it does, not all it says."""
    if len(option.split()) <= OPTION_WORDS:
        return (option,)
    cuts = [
        m.start()
        for m in re.finditer(r";\s", option)
        if len(option[: m.start()].split()) <= OPTION_WORDS
        and not _bare_option(option[: m.start()])
    ]
    if not cuts:
        return (option,)
    head, rest = option[: cuts[-1]], option[cuts[-1] + 1 :].strip()
    return (head, rest) if rest else (head,)


@functools.lru_cache(maxsize=1024)
def split_units(text: str) -> tuple[Unit, ...]:
    """The units of a passage an answer may quote, in order: sentences of prose; an
    option line with its description (never two options in one unit); a list item
    (never two); each line of a line-structured paragraph. Initials, abbreviations,
    decimals and quotations stay inside their sentence. Remembered: the same passages
    come back for many questions, and every answer splits them."""
    segments = [
        (number, kind, lines)
        for number, block in enumerate(re.split(r"\n[ \t]*\n", text))
        for kind, lines in _segments(block)
    ]
    # An option named alone on its paragraph is described by the next one ("-n, --quiet"
    # and a blank line, as man renders some pages).
    merged: list[tuple[int, str, str]] = []
    for number, kind, lines in segments:
        if (
            merged
            and kind in ("sentence", "line")
            and merged[-1][1] == "option"
            and merged[-1][0] == number - 1
            and _bare_option(merged[-1][2])
        ):
            merged[-1] = (merged[-1][0], "option", merged[-1][2] + "\n" + lines)
        else:
            merged.append((number, kind, lines))
    units: list[Unit] = []
    for number, kind, lines in merged:
        segment = _HYPHENATED.sub("", lines)
        for piece_kind, piece in _pieces(kind, segment):
            cleaned = _clean(piece, piece_kind)
            if len(cleaned) >= 3:
                units.append(Unit(cleaned, piece_kind, number))
    return tuple(units)


def split_sentences(text: str) -> tuple[str, ...]:
    """The texts of :func:`split_units`: sentences, option lines, list items and lines."""
    return tuple(unit.text for unit in split_units(text))


# A name written as code: an option ("-v", "--print-type", the dashes PDF output uses
# too) or an identifier joined by underscores ("F_OK", "O_TRUNC"). Words never look
# like either ("2-letter", "C-style" have a letter or digit before their dash).
_CODE_NAME = re.compile(
    rf"(?<![\w{_DASH}])[{_DASH}]{{1,2}}[A-Za-z0-9?#][\w{_DASH}]*"
    r"|(?<!\w)[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"
)
# An option's argument after its name ("-m NUM", "--context[=NUM]"): not a name.
_ARGUMENT = re.compile(r"[A-Z][A-Z_]*|\[[^\]]*\]|<[^>]*>")


def _code_key(name: str) -> str:
    """How a code name is compared: an option as written, one dash for any dash
    (``-v`` and ``-V`` are two options); an identifier in any case (``f_ok``)."""
    name = re.split(r"[=\[]", name, maxsplit=1)[0]
    if name[:1] in _DASH.replace("\\", ""):
        return re.sub(rf"[{_DASH}]", "-", name)
    return name.lower()


def code_names(text: str) -> frozenset[str]:
    """The options and identifiers ``text`` writes as code (compared by ``_code_key``):
    a question that writes "-v" or "F_OK" names the option or the constant it asks
    about, a sharper name than any of its words (and "-v" is no word at all)."""
    return frozenset(_code_key(m.group(0)) for m in _CODE_NAME.finditer(text))


@functools.lru_cache(maxsize=16384)
def opening_names(text: str) -> frozenset[str]:
    """The code names ``text`` opens with: an option line's or a table cell's names
    ("-t, --type=TYPE", "-m NUM, --max-count=NUM", "X_OK — …"), their arguments
    skipped. What a unit is the entry of, not the names it mentions in passing (the
    ``X_OK`` row that says "behave like fs.constants.F_OK" is not ``F_OK``'s)."""
    names: set[str] = set()
    for word in text.split():
        token = word.rstrip(",;:")
        match = _CODE_NAME.fullmatch(re.split(r"[=\[]", token, maxsplit=1)[0])
        if match is not None:
            names.add(_code_key(token))
        elif not (names and _ARGUMENT.fullmatch(token)):
            break
    return frozenset(names)
