"""The answer-memory eval's inputs and scoring: enough variants of each kind, every one
tied to a real benchmark question, and the targets read the way the issue states them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.bench.sql_memory import VARIANTS, meets_targets, summarize, variants_for

DATASET = Path(__file__).resolve().parents[3].parent / "shared" / "datasets" / "sql"


def test_the_variant_file_holds_enough_swaps_and_paraphrases() -> None:
    raw = json.loads(VARIANTS.read_text())
    assert len(raw["value_swaps"]) >= 40
    assert len(raw["paraphrases"]) >= 30
    ids = [item["id"] for kind in ("value_swaps", "paraphrases") for item in raw[kind]]
    assert len(ids) == len(set(ids))
    for item in raw["value_swaps"]:
        assert item["gold_sql"].strip() and item["question"].strip()


@pytest.mark.skipif(not DATASET.exists(), reason="the development benchmark is not checked out")
def test_every_variant_names_a_benchmark_question_and_differs_from_it() -> None:
    questions = {
        json.loads(line)["id"]: json.loads(line)
        for line in (DATASET / "questions.jsonl").read_text().splitlines()
        if line.strip()
    }
    raw = json.loads(VARIANTS.read_text())
    for kind in ("value_swaps", "paraphrases"):
        for item in raw[kind]:
            base = questions[item["base"]]
            assert item["question"] != base["question"], item["id"]
    for item in raw["value_swaps"]:
        assert item["gold_sql"] != questions[item["base"]]["gold_sql"][0], item["id"]


def _record(hit: bool, correct: bool, **extra: object) -> dict[str, object]:
    return {"id": "x", "hit": hit, "correct": correct, "memory_ms": 1.0, "latency_ms": 2.0,
            **extra}  # fmt: skip


def test_targets_fail_on_false_reuse_or_low_accuracy() -> None:
    good = {
        "value_swaps": [_record(True, True, discriminating=True)] * 10,
        "paraphrases": [_record(True, True)] * 10,
        "unrelated": [_record(False, False)] * 100,
    }
    assert meets_targets(summarize(good, {"b": "ok"}))
    near = dict(good, near_misses=[_record(True, False, miss="reversed_roles")])
    assert not meets_targets(summarize(near, {"b": "ok"}))  # one wrong reuse of a near miss
    refused = dict(good, near_misses=[_record(False, False, miss="column")])
    assert meets_targets(summarize(refused, {"b": "ok"}))
    reused = dict(good, unrelated=[_record(True, False)] * 3 + [_record(False, False)] * 97)
    assert not meets_targets(summarize(reused, {"b": "ok"}))
    weak = dict(good, value_swaps=[_record(True, True)] * 8 + [_record(False, False)] * 2)
    assert not meets_targets(summarize(weak, {"b": "ok"}))


def test_what_a_hit_adds_is_measured_question_by_question() -> None:
    # each hit against the same question's AskQuestion before anything was taught; a
    # miss, or a question without a before, is not part of it
    swaps = [_record(True, True, similarity=1.0, latency_ms=12.0, before_ms=15.0)] * 3
    paraphrases = [_record(True, True, similarity=0.93, latency_ms=20.0, before_ms=14.0)] * 2
    sets = {
        "value_swaps": [*swaps, _record(False, False, before_ms=1.0)],
        "paraphrases": [*paraphrases, _record(True, True, similarity=0.9, latency_ms=99.0)],
        "unrelated": [_record(False, False)],
    }
    latency = summarize(sets, {"b": "ok"})["ask_latency_ms"]
    assert latency["value_swap_hit_added_p50"] == -3.0
    assert latency["paraphrase_hit_added_p50"] == 6.0
    assert latency["hit_added_p50"] == -3.0  # 3 of the 5 paired hits are swaps
    assert latency["same_questions_before_teaching_p50"] == 15.0


@pytest.mark.parametrize("name", ["sql", "sql-spider"])
def test_each_dev_set_has_near_misses_of_every_kind(name: str) -> None:
    raw = json.loads(variants_for(Path(name)).read_text())
    misses = {item["miss"] for item in raw["near_misses"]}
    assert misses == {"column", "value_kind", "reversed_roles"}
    assert len(raw["near_misses"]) >= 15 and len(raw["value_swaps"]) >= 40
