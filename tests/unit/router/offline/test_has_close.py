"""``has_close`` is ``closest(...) is not None`` with remembered verdicts: the extractive
synthesis's fuzzy term match must not change with the cache."""

from __future__ import annotations

import itertools

import pytest

from services.router.offline._text import closest, has_close, lowered_stems, tokenize

VOCABULARY = [
    "security", "securities", "review", "reviewed", "renewal", "renewals", "logistics",
    "pricing", "prices", "onboarding", "boarding", "healthcare", "health", "escalation",
    "escalations", "competitor", "competition", "analytics", "analysis", "discount",
]  # fmt: skip
WORDS = [
    "securty", "secure", "reveiw", "renewl", "logistcs", "pricng", "onbaording", "helthcare",
    "escalatoin", "competitr", "analytic", "discunt", "contract", "zebra", "sec", "revi",
]  # fmt: skip


@pytest.mark.parametrize("cutoff", [0.8, 0.85, 0.88, 0.95])
def test_has_close_agrees_with_closest(cutoff: float):
    for word, size in itertools.product(WORDS, (1, 3, len(VOCABULARY))):
        vocabulary = VOCABULARY[:size] if size > 1 else [VOCABULARY[WORDS.index(word) % 20]]
        expected = closest(word, vocabulary, cutoff=cutoff) is not None
        assert has_close(word, vocabulary, cutoff=cutoff) is expected, (word, vocabulary)
        # a second time, from the remembered verdicts
        assert has_close(word, vocabulary, cutoff=cutoff) is expected


def test_the_cutoff_is_part_of_what_is_remembered():
    assert has_close("renewl", ["renewal"], cutoff=0.8)
    assert not has_close("renewl", ["renewal"], cutoff=0.99)


@pytest.mark.parametrize(
    "text",
    [
        "Acme's renewal was reviewed on 2024-03-01 for $12.5k; they don't want SSO.",
        "Globex\nonboarding stalled: INC-2041, data_migration took 3 weeks!",
        "",
    ],
)
def test_lowered_stems_are_tokenize_s_low_and_stem(text: str):
    assert lowered_stems(text) == [(t.low, t.stem) for t in tokenize(text)]
