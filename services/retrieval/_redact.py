"""Redaction: secrets by shape and by context, personal data per a keep/redact policy.

Every detector proposes spans; overlaps are resolved by detector priority (a private-key
block beats the high-entropy lines inside it), and each accepted span is replaced by a
typed placeholder such as ``[EMAIL_ADDRESS]``. A labelled secret keeps its label
(``password: [LABELED_SECRET]``); a connection string keeps scheme and host. Personal-data
kinds the policy keeps are still detected, so a kept phone number is never mistaken for a
token, but are left verbatim and not counted.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from services.retrieval._types import PERSONAL_KINDS, RedactionFinding, RedactionKind


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    kind: RedactionKind


@dataclass(frozen=True)
class Redacted:
    """The text with placeholders in place, how many spans of each kind were replaced, and
    where they were in the text given (start, end, kind), for a dry run's listing."""

    text: str
    counts: dict[RedactionKind, int]
    spans: tuple[tuple[int, int, RedactionKind], ...] = ()


def placeholder(kind: RedactionKind) -> str:
    """The typed marker a redacted span becomes."""
    return f"[{kind.name}]"


_PRIVATE_KEY = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r".*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_CONNECTION = re.compile(
    r"\b[a-z][a-z0-9+.\-]{1,20}://(?P<value>[^\s:/@?#\[\]]+:[^\s@/?#]+)@", re.IGNORECASE
)
_API_KEYS = [
    re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b"),
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"),
    re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),
    # JSON Web Tokens: header and payload are base64url JSON objects ("eyJ" = '{"').
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
]
_BEARER = re.compile(r"\bbearer[ \t]+(?P<value>[A-Za-z0-9._~+/\-]{16,}=*)", re.IGNORECASE)
_LABELED = re.compile(
    r"""(?P<label>\b[A-Za-z0-9_.\-]*?
          (?:password|passwd|pwd|passphrase|secret|api[_\-]?key|apikey|access[_\-]?key
            |private[_\-]?key|token|credentials?)
          [A-Za-z0-9_\-]*)
        ["']?[ \t]*(?::|=>|=)[ \t]*
        (?:"(?P<dq>[^"\n]+)"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s"'\[\]{}()<>,;]+))""",
    re.IGNORECASE | re.VERBOSE,
)
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
_CARD = re.compile(r"(?<![\d\-])(?:\d[ \-]?){12,18}\d(?![\d\-])")
_SSN = re.compile(r"(?<![\d\-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d\-])")
_PHONE_INTL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .\-]?\(?\d{1,4}\)?){2,5}(?![\w])")
_PHONE_NANP = re.compile(r"(?<![\w\-])(?:\(\d{3}\)[ ]?|\d{3}[.\- ])\d{3}[.\-]\d{4}(?![\w\-])")
# ISO 6709 coordinates, as the time-zone tables write them: a latitude of 4 or 6 digits
# and a longitude of 5 or 7, each signed (``+394421-1045903``), never a phone number.
_COORDINATES = re.compile(r"[+-]\d{4}(?:\d{2})?[+-]\d{5}(?:\d{2})?(?!\d)")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
# What the text around a dotted quad says it is (``_not_an_address``): how far back to look
# on its line, a version's marks before and after it, an object identifier's names, and a
# heading's capitalised word after a number that opens its line.
_CONTEXT_CHARS = 40
_VERSION_BEFORE = re.compile(
    r"(?:\bv|\b(?:versions?|releases?|ver\.?)\b(?:\W+[a-z]+){0,2}\W*|[A-Za-z]\w*[-_])$", re.I
)
_SHORT_DOTTED = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){1,2}(?![\w]|\.\d)")
_REVISION_AFTER = re.compile(r"[-+~][0-9A-Za-z]")
_OID_BEFORE = re.compile(r"(?:\boids?\b|object identifiers?\b|\bid-[\w-]+\W*)[^0-9\n]{0,12}$", re.I)
_HEADING_AFTER = re.compile(r"\.?[ \t]+[A-Z]")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{1,4}(?![\w:])")
_TOKEN = re.compile(r"(?<![\w\-+/=])[A-Za-z0-9_\-+/=]{20,}(?![\w\-+/=])")
_HEX = re.compile(r"^[0-9a-fA-F\-]+$")
_RUN = re.compile(r"[A-Z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+")
# Labels that name a count of tokens (``max_tokens: 100``), not a secret.
_COUNTER_LABEL = re.compile(r"tokens$|tokens?_?(?:count|limit|budget)|max_?tokens?", re.I)


def _luhn_ok(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _iban_ok(candidate: str) -> bool:
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    numeric = "".join(str(int(c, 36)) for c in rearranged)
    return int(numeric) % 97 == 1


def _mean_run_length(token: str) -> float:
    """Average length of the word, capital and digit runs in ``token``: words and numbers
    make long runs, random tokens switch class every character or two."""
    runs = _RUN.findall(token)
    return sum(map(len, runs)) / len(runs) if runs else 0.0


def shannon_entropy(token: str) -> float:
    """Bits per character of ``token``'s own character distribution."""
    counts = Counter(token)
    length = len(token)
    return -sum(c / length * math.log2(c / length) for c in counts.values())


def looks_like_secret_token(token: str) -> bool:
    """True for long random-looking tokens; identifiers, hex digests and words are spared.

    Hex (UUIDs, commit ids) is spared because documents cite such ids and search needs
    them; tokens made of words and numbers (``Renewal_Plan_2024``, ``CamelCaseName2``)
    are identifiers.
    """
    if len(token) < 20 or _HEX.match(token):
        return False
    if _mean_run_length(token) >= 3.0:
        return False
    has_lower = any(c.islower() for c in token)
    has_upper = any(c.isupper() for c in token)
    has_digit = any(c.isdigit() for c in token)
    classes = has_lower + has_upper + has_digit
    entropy = shannon_entropy(token)
    if classes == 3 and entropy >= 3.7:
        return True
    return len(token) >= 32 and classes >= 2 and entropy >= 4.3


def _regex_spans(
    pattern: re.Pattern[str], kind: RedactionKind, text: str, group: str | None = None
) -> Iterator[_Span]:
    for match in pattern.finditer(text):
        if group is None:
            yield _Span(match.start(), match.end(), kind)
        elif match.group(group) is not None:
            yield _Span(match.start(group), match.end(group), kind)


def _private_keys(text: str) -> Iterator[_Span]:
    return _regex_spans(_PRIVATE_KEY, RedactionKind.PRIVATE_KEY, text)


def _connection_strings(text: str) -> Iterator[_Span]:
    return _regex_spans(_CONNECTION, RedactionKind.CONNECTION_STRING, text, "value")


def _api_keys(text: str) -> Iterator[_Span]:
    for pattern in _API_KEYS:
        yield from _regex_spans(pattern, RedactionKind.API_KEY, text)
    yield from _regex_spans(_BEARER, RedactionKind.API_KEY, text, "value")


def _labeled(text: str) -> Iterator[_Span]:
    for match in _LABELED.finditer(text):
        if _COUNTER_LABEL.search(match.group("label")):
            continue
        for group in ("dq", "sq", "bare"):
            if match.group(group) is not None:
                yield _Span(match.start(group), match.end(group), RedactionKind.LABELED_SECRET)
                break


def _emails(text: str) -> Iterator[_Span]:
    return _regex_spans(_EMAIL, RedactionKind.EMAIL_ADDRESS, text)


def _ibans(text: str) -> Iterator[_Span]:
    for match in _IBAN.finditer(text):
        if _iban_ok(match.group()):
            yield _Span(match.start(), match.end(), RedactionKind.BANK_ACCOUNT)


def _cards(text: str) -> Iterator[_Span]:
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and _luhn_ok(digits):
            yield _Span(match.start(), match.end(), RedactionKind.CARD_NUMBER)


def _national_ids(text: str) -> Iterator[_Span]:
    return _regex_spans(_SSN, RedactionKind.NATIONAL_ID, text)


def _phones(text: str) -> Iterator[_Span]:
    for pattern in (_PHONE_INTL, _PHONE_NANP):
        for match in pattern.finditer(text):
            if _COORDINATES.match(text, match.start(), match.end() + 2):
                continue
            digits = sum(c.isdigit() for c in match.group())
            if 8 <= digits <= 15 or (pattern is _PHONE_NANP and digits == 10):
                yield _Span(match.start(), match.end(), RedactionKind.PHONE_NUMBER)


def _is_mask(address: ipaddress.IPv4Address) -> bool:
    """A netmask (ones then zeros, ``255.255.255.0``) or a wildcard mask (zeros then
    ones, ``0.0.0.255``): the shape of a prefix length, never a host's address. The all-ones
    and all-zero values are masks too (``255.255.255.255``, ``0.0.0.0``)."""
    bits = int(address)
    inverted = ~bits & 0xFFFFFFFF
    return (inverted & (inverted + 1)) == 0 or (bits & (bits + 1)) == 0


# Addresses that name no one: loopback, multicast and the networks reserved for examples
# in documentation (RFC 5737, RFC 3849); a private address may be someone's machine.
_EXAMPLE_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)


def _names_no_one(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return (
        address.is_loopback
        or address.is_multicast
        or address.is_unspecified
        or any(address in network for network in _EXAMPLE_NETWORKS)
    )


def _not_an_address(text: str, match: re.Match[str]) -> bool:
    """A dotted quad that the text itself says is something else: a version (``v1.2.3.4``,
    ``version 5.10.0.1``, ``libfoo-1.2.3.4``, ``1.2.3.4-2``), an object identifier named as
    one (``OID 2.5.4.3``, ``id-at-cn (2.5.4.3)``), or a section number heading a line
    (``3.2.1.4 Routing``)."""
    before = text[max(0, match.start() - _CONTEXT_CHARS) : match.start()]
    before = before.rsplit("\n", 1)[-1]
    after = text[match.end() : match.end() + 2]
    if _VERSION_BEFORE.search(before) or _REVISION_AFTER.match(after):
        return True
    if _OID_BEFORE.search(before):
        return True
    return not before.strip(" \t#*") and _HEADING_AFTER.match(text, match.end()) is not None


def _numbering(text: str) -> frozenset[str]:
    """The dotted numbers of two or three parts the text holds (``1.7.5``, ``3.8``): a
    quad that extends one of them (``1.7.5.1``) belongs to a version or section series."""
    return frozenset(_SHORT_DOTTED.findall(text))


def _ips(text: str) -> Iterator[_Span]:
    numbering: frozenset[str] | None = None
    for match in _IPV4.finditer(text):
        try:
            address = ipaddress.IPv4Address(match.group())
        except ValueError:
            continue
        if _is_mask(address) or _names_no_one(address) or _not_an_address(text, match):
            continue
        if numbering is None:
            numbering = _numbering(text)
        if match.group().rsplit(".", 1)[0] in numbering:
            continue
        yield _Span(match.start(), match.end(), RedactionKind.IP_ADDRESS)
    for match in _IPV6.finditer(text):
        try:
            address6 = ipaddress.IPv6Address(match.group())
        except ValueError:
            continue
        if _names_no_one(address6):
            continue
        yield _Span(match.start(), match.end(), RedactionKind.IP_ADDRESS)


def _entropy_tokens(text: str) -> Iterator[_Span]:
    for match in _TOKEN.finditer(text):
        if looks_like_secret_token(match.group()):
            yield _Span(match.start(), match.end(), RedactionKind.HIGH_ENTROPY_TOKEN)


# Highest priority first: a span proposed earlier wins any overlap with a later one.
_DETECTORS: tuple[Callable[[str], Iterator[_Span]], ...] = (
    _private_keys,
    _connection_strings,
    _api_keys,
    _labeled,
    _emails,
    _ibans,
    _cards,
    _national_ids,
    _phones,
    _ips,
    _entropy_tokens,
)


_NON_DIGITS = re.compile(r"\D")
_DOMAIN = re.compile(r"^@?(?P<domain>[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,})$")
# A listed number matches a found one by its last digits: "800 555 0100" matches
# "+1 (800) 555-0100"; fewer digits than this could match someone's private number.
_MIN_NUMBER_DIGITS = 7


@dataclass(frozen=True)
class AllowList:
    """Personal data a company publishes about itself, left verbatim: addresses at its own
    e-mail domains, its listed phone numbers, and other exact values (a public IBAN).
    Secrets are never allowed, whatever the list says."""

    domains: frozenset[str] = frozenset()
    numbers: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, raw: str) -> AllowList:
        """``acme.com, @support.acme.io, +1 800 555 0100, DE89 3704 0044 0532 0130 00``:
        a domain (optionally with ``@``), a number of at least 7 digits, or a value."""
        domains: set[str] = set()
        numbers: set[str] = set()
        values: set[str] = set()
        for entry in (part.strip() for part in raw.split(",")):
            if not entry:
                continue
            digits = _NON_DIGITS.sub("", entry)
            domain = _DOMAIN.match(entry.lower())
            if domain is not None and not digits.isdigit():
                domains.add(domain.group("domain"))
            elif len(digits) >= _MIN_NUMBER_DIGITS and not any(c.isalpha() for c in entry):
                numbers.add(digits)
            elif len(entry) >= 4:
                values.add(entry.casefold())
            else:
                raise ValueError(f"{entry!r} is too short to allow (a domain, a number or a value)")
        return cls(frozenset(domains), frozenset(numbers), frozenset(values))

    def permits(self, kind: RedactionKind, value: str) -> bool:
        if kind not in PERSONAL_KINDS:
            return False
        if kind is RedactionKind.EMAIL_ADDRESS:
            domain = value.rsplit("@", 1)[-1].lower()
            if any(domain == d or domain.endswith("." + d) for d in self.domains):
                return True
        if kind is RedactionKind.PHONE_NUMBER:
            digits = _NON_DIGITS.sub("", value)
            if any(digits.endswith(number) for number in self.numbers):
                return True
        return value.casefold() in self.values


class Redactor:
    """Applies every detector; personal-data kinds in ``keep`` stay verbatim, and so does
    what ``allow`` lists."""

    def __init__(
        self, keep: frozenset[RedactionKind] = frozenset(), allow: AllowList | None = None
    ) -> None:
        unknown = keep - PERSONAL_KINDS
        if unknown:
            raise ValueError(f"secret kinds cannot be kept: {sorted(k.name for k in unknown)}")
        self.keep = keep
        self.allow = allow or AllowList()

    def redact(self, text: str) -> Redacted:
        accepted: list[_Span] = []
        taken: list[tuple[int, int]] = []
        for detector in _DETECTORS:
            for span in detector(text):
                if span.end <= span.start or _overlaps(taken, span):
                    continue
                accepted.append(span)
                taken.append((span.start, span.end))
        accepted.sort(key=lambda s: s.start)
        counts: Counter[RedactionKind] = Counter()
        parts: list[str] = []
        replaced: list[tuple[int, int, RedactionKind]] = []
        cursor = 0
        for span in accepted:
            if span.kind in self.keep or self.allow.permits(span.kind, text[span.start : span.end]):
                continue
            parts.append(text[cursor : span.start])
            parts.append(placeholder(span.kind))
            cursor = span.end
            counts[span.kind] += 1
            replaced.append((span.start, span.end, span.kind))
        parts.append(text[cursor:])
        return Redacted("".join(parts), dict(sorted(counts.items())), tuple(replaced))


class RedactionPolicy:
    """The redactor for each document of one ingest call: the kinds the call keeps, plus
    those its category keeps (``RETRIEVAL_REDACTION_KEEP_BY_CATEGORY``), and the
    deployment's allow list (``RETRIEVAL_REDACTION_ALLOW``)."""

    def __init__(
        self,
        keep: frozenset[RedactionKind],
        allow: AllowList | None = None,
        by_category: dict[str, frozenset[RedactionKind]] | None = None,
    ) -> None:
        self._keep = keep
        self._allow = allow or AllowList()
        self._by_category = by_category or {}
        self._redactors: dict[frozenset[RedactionKind], Redactor] = {}

    def for_category(self, category: str) -> Redactor:
        keep = self._keep | self._by_category.get(category, frozenset())
        if keep not in self._redactors:
            self._redactors[keep] = Redactor(keep, self._allow)
        return self._redactors[keep]


# A dry run lists at most this many spans per document; the counts cover the rest.
MAX_FINDINGS = 50


def findings(field: str, text: str, redacted: Redacted) -> list[RedactionFinding]:
    """What ``redacted`` replaced in ``text`` (one field of a document), for a dry run:
    personal data as written, a secret as its length only, each with its 1-based line."""
    listed = []
    for start, end, kind in redacted.spans[:MAX_FINDINGS]:
        value = text[start:end]
        preview = value if kind in PERSONAL_KINDS else f"({len(value)} characters)"
        listed.append(RedactionFinding(kind, field, text.count("\n", 0, start) + 1, preview))
    return listed


def _overlaps(taken: list[tuple[int, int]], span: _Span) -> bool:
    return any(span.start < end and start < span.end for start, end in taken)


_PLACEHOLDER = re.compile(r"\[(?:" + "|".join(k.name for k in RedactionKind) + r")\]")


def has_content(text: str) -> bool:
    """True when something besides placeholders, markup and whitespace remains."""
    return any(c.isalnum() for c in _PLACEHOLDER.sub(" ", text))
