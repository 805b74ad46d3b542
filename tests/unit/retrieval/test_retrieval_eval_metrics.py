"""The eval's metrics and BEIR reader, and the benchmark's vector derivation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from services.bench.retrieval import derive_vectors
from services.bench.retrieval_eval import (
    DEFAULT_DATASET,
    _document_input,
    eval_tenant,
    mrr_at_k,
    ndcg_at_k,
    read_baselines,
    read_beir,
    recall_at_k,
    render_collections,
)
from services.cli._main import build_parser
from services.retrieval._validation import check_tenant_id


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


def test_read_baselines_takes_the_ndcg_column_of_each_reference_run(tmp_path):
    path = tmp_path / "BASELINES.md"
    path.write_text(
        "# Baselines\n\n## CISI — 1460 docs\n\n| run | nDCG@10 | Recall@10 |\n|---|---:|---:|\n"
        "| bm25s | 0.3956 | 0.1323 |\n| dense (MiniLM-L6 int8) | 0.4182 | 0.1348 |\n"
        "| RRF (bm25s + dense) | **0.4492** | **0.1504** |\n\n## MED — 1033 docs\n\n"
        "| bm25s | 0.6957 | 0.3140 |\n\n## How they were computed\n\n| bm25s | method |\n"
    )
    assert read_baselines(path) == {
        "cisi": {"bm25s": 0.3956, "dense": 0.4182, "rrf": 0.4492},
        "med": {"bm25s": 0.6957},
    }


def _report(sparse: float, dense: float, hybrid: float) -> dict[str, object]:
    values = {"sparse": sparse, "dense": dense, "hybrid": hybrid}
    return {
        "k": 10,
        "documents": 1460,
        "queries": 76,
        "metrics": {"all": {m: {"ndcg@10": v} for m, v in values.items()}},
    }


def test_render_collections_sets_each_collection_beside_its_baselines():
    table = render_collections(
        {"cisi": _report(0.40, 0.43, 0.46), "golden": _report(0.77, 0.90, 0.94)},
        {"cisi": {"bm25s": 0.3956, "dense": 0.4182, "rrf": 0.4492}},
    )
    lines = table.splitlines()
    cisi = next(line for line in lines if line.startswith("cisi"))
    golden = next(line for line in lines if line.startswith("golden"))
    # reference runs, then SPARSE, DENSE, HYBRID, then HYBRID/RRF and SPARSE/bm25s
    assert cisi.split()[4:] == [
        "0.396", "0.418", "0.449", "|", "0.400", "0.430", "0.460", "|", "1.024", "1.011",
    ]  # fmt: skip
    assert golden.split()[4:7] == ["-", "-", "-"] and golden.split()[-2:] == ["-", "-"]


def test_a_title_only_document_is_ingested_with_its_title_as_text():
    only_title = _document_input({"_id": "7", "title": "Compiler design", "text": " "})
    assert (only_title.title, only_title.text) == ("", "Compiler design")
    both = _document_input({"_id": "8", "title": "Parsing", "text": "LR parsers."})
    assert (both.title, both.text) == ("Parsing", "LR parsers.")


def test_eval_retrieval_takes_several_datasets_or_one():
    args = build_parser().parse_args(
        ["eval", "retrieval", "--datasets", "ir/cisi", "ir/med", "--baselines", "B.md"]
    )
    assert args.datasets == [Path("ir/cisi"), Path("ir/med")] and args.dataset is None
    assert args.baselines == Path("B.md")
    assert build_parser().parse_args(["eval", "retrieval"]).datasets == []
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "retrieval", "--dataset", "a", "--datasets", "b"])


def test_each_dataset_is_evaluated_in_a_tenant_named_after_it():
    # chunk ids derive from the tenant, and tied chunks are ordered by id: a tenant drawn
    # anew on each run ranked ties differently on each run of the same code
    names = ["cisi", "CACM", "golden", "my data set", "x" * 80, "..."]
    tenants = [eval_tenant(n) for n in names]
    assert tenants == [eval_tenant(n) for n in names]
    assert len(set(tenants)) == len(tenants)
    assert tenants[:3] == ["eval-cisi", "eval-cacm", "eval-golden"]
    for tenant in tenants:
        check_tenant_id(tenant)
