"""The eval's metrics and BEIR reader, and the benchmark's vector derivation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from services.retrieval.bench import derive_vectors
from services.retrieval.eval import (
    DEFAULT_DATASET,
    mrr_at_k,
    ndcg_at_k,
    read_beir,
    recall_at_k,
)


def test_metrics_on_a_hand_computed_ranking():
    ranked = ["a", "x", "b", "y"]
    relevant = {"a": 2, "b": 1, "c": 1}
    assert recall_at_k(ranked, relevant, 10) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, relevant, 1) == pytest.approx(1 / 3)
    assert mrr_at_k(ranked, relevant, 10) == 1.0
    assert mrr_at_k(["x", "y", "b"], relevant, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "y", "b"], relevant, 2) == 0.0
    dcg = 3 / math.log2(2) + 1 / math.log2(4)
    idcg = 3 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(ranked, relevant, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["a", "b", "c"], relevant, 10) == pytest.approx(1.0)
    assert ndcg_at_k([], relevant, 10) == 0.0


def test_read_beir_keeps_judged_queries_and_positive_grades(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": f"d{i}", "title": "", "text": "t"}) for i in range(3))
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "one"}) + "\n" + json.dumps({"_id": "q2", "text": "two"})
    )
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td0\t2\nq1\td1\t0\n"
    )
    dataset = read_beir(tmp_path)
    assert [q["_id"] for q in dataset.queries] == ["q1"]
    assert dataset.qrels == {"q1": {"d0": 2}}
    assert len(dataset.corpus) == 3


def test_the_golden_set_is_complete():
    dataset = read_beir(DEFAULT_DATASET)
    ids = {d["_id"] for d in dataset.corpus}
    assert len(dataset.queries) >= 40
    assert all(set(judged) <= ids for judged in dataset.qrels.values())
    types = {q["metadata"]["type"] for q in dataset.queries}
    assert {"identifier", "paraphrase"} <= types


def test_derived_vectors_stay_near_their_base_and_are_unit_length():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((5, 384)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    derived = derive_vectors(base, 50)
    assert derived.shape == (50, 384)
    assert np.allclose(np.linalg.norm(derived, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(derived * base[np.arange(50) % 5], axis=1)
    assert cosines.min() > 0.65 and cosines.max() < 0.97
