"""Standard codes: a column whose stored values are the codes of one ISO 3166 code system
(country codes 'AU', 'USA'; the subdivision codes of one country, 'TX' for US-TX), and
the place each stored code stands for.

Warehouses store places as codes and questions name them in full ("customers in New
Jersey", "users from Australia"): without knowing the code system, no stored value is
near the name and the question is refused. The system is decided once per column from
the values the catalog already read (never per question), and only when (nearly) every
distinct value is a code of one system and no other system explains as many: a column of
ordinary short words ('ok', 'no'), of mixed words, or of codes two systems share alike
('CA', 'DE', 'IN' are countries and US states) has none. Only the codes a column stores
get names: a place whose code is not stored stays unplaced, as before. The standard's
data ships in the ``pycountry`` wheel; nothing is downloaded at run time.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

import pycountry

# A code as stored: upper-case letters (a subdivision's part may hold digits: 'FR-75C').
_CODE = re.compile(r"[A-Z][A-Z0-9]{1,2}")
# The share of a column's distinct values that must be codes of the system: one stray
# value ('San Francisco' among states) is tolerated, a column of words is not.
_SHARE = 0.9
# Fewer distinct codes than this says nothing about a system ('NO', 'OK').
_AT_LEAST = 3


@dataclass(frozen=True)
class CodeSystem:
    """An ISO 3166 code system: ``alpha_2`` or ``alpha_3`` country codes, or the
    ``subdivision`` codes of one ``country`` (stored without the country's prefix)."""

    kind: str
    country: str = ""

    def describe(self) -> str:
        """The system in words, as an interpretation says it ("ISO 3166-2 code of US")."""
        if self.kind == "subdivision":
            return f"ISO 3166-2 code of {self.country}"
        return f"ISO 3166-1 {self.kind.replace('_', '-')} code"


@functools.cache
def _standard() -> dict[CodeSystem, dict[str, tuple[str, ...]]]:
    """Every code system: each code and the names of its place (lower-cased), read
    once, on the first column that looks like codes (pycountry reads its data lazily)."""
    systems: dict[CodeSystem, dict[str, tuple[str, ...]]] = {}
    alpha_2 = systems.setdefault(CodeSystem("alpha_2"), {})
    alpha_3 = systems.setdefault(CodeSystem("alpha_3"), {})
    for country in pycountry.countries:
        names = _names(getattr(country, n, "") for n in ("name", "common_name", "official_name"))
        alpha_2[country.alpha_2] = names
        alpha_3[country.alpha_3] = names
    for sub in pycountry.subdivisions:
        prefix, _, own = sub.code.partition("-")
        codes = systems.setdefault(CodeSystem("subdivision", prefix), {})
        codes[own] = _names([sub.name])
    return systems


def _names(names: Iterable[str]) -> tuple[str, ...]:
    """A place's names a question may say: lower-cased, without the standard's inverted
    forms ("Korea, Republic of") or bracketed notes."""
    found = []
    for name in names:
        if name and "," not in name and "(" not in name and "[" not in name:
            found.append(" ".join(name.lower().split()))
    return tuple(dict.fromkeys(found))


@functools.lru_cache(maxsize=4096)
def _system_of(values: frozenset[str]) -> CodeSystem | None:
    if len(values) < _AT_LEAST or not any(_CODE.fullmatch(v) for v in values):
        return None
    scored = sorted(
        ((sum(v in codes for v in values), system) for system, codes in _standard().items()),
        key=lambda pair: -pair[0],
    )
    (best, system), (runner_up, _) = scored[0], scored[1]
    if best < _AT_LEAST or best < _SHARE * len(values) or best == runner_up:
        return None
    return system


def code_system(values: Iterable[str]) -> CodeSystem | None:
    """The one code system (nearly) every distinct stored value belongs to, else None.
    Values are taken as stored: codes are upper-case, so a column of lower-case words
    is never one."""
    distinct = frozenset(v.strip() for v in values if v and v.strip())
    if sum(bool(_CODE.fullmatch(v)) for v in distinct) < _SHARE * max(len(distinct), 1):
        return None  # most values are no code-shaped word: no standard lookup at all
    return _system_of(distinct)


def place_names(values: Iterable[str]) -> dict[str, tuple[str, CodeSystem]]:
    """The names (lower-cased) of the places whose codes the column stores, each with
    the code as stored and its system; empty when the values are no one system's."""
    stored = [v for v in values if v and v.strip()]
    system = code_system(stored)
    if system is None:
        return {}
    codes = _standard()[system]
    found: dict[str, tuple[str, CodeSystem]] = {}
    for value in stored:
        for name in codes.get(value.strip(), ()):
            found.setdefault(name, (value, system))
    return found
