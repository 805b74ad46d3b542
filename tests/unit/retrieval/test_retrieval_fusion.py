"""Weighted reciprocal rank fusion and the rerank blend."""

from __future__ import annotations

import pytest

from services.retrieval import Hit, blend, rerank_hits, rrf_score


def test_rrf_sums_weighted_reciprocal_ranks():
    assert rrf_score([1, 1], [1.0, 1.0]) == pytest.approx(2 / 61)
    assert rrf_score([3, None], [1.0, 1.0]) == pytest.approx(1 / 63)
    assert rrf_score([None, 2], [1.0, 0.5], k=10) == pytest.approx(0.5 / 12)
    assert rrf_score([None, None], [1.0, 1.0]) == 0.0
    # An item ranked by both lists beats one ranked first by only one of them.
    assert rrf_score([5, 5], [1.0, 1.0]) > rrf_score([1, None], [1.0, 1.0])


def test_blend_normalises_both_scores_before_mixing():
    fused = [0.0328, 0.0161, 0.0159]
    rerank = [-2.0, 8.0, 3.0]
    assert blend(fused, rerank, 0.0) == pytest.approx([1.0, 0.0117, 0.0], abs=1e-3)
    assert blend(fused, rerank, 1.0) == pytest.approx([0.0, 1.0, 0.5])
    mixed = blend(fused, rerank, 0.5)
    assert all(0.0 <= m <= 1.0 for m in mixed)
    assert mixed == pytest.approx([0.5, 0.5059, 0.25], abs=1e-3)


def test_blend_edge_cases():
    assert blend([], [], 0.5) == []
    assert blend([0.2, 0.2], [1.0, 1.0], 0.3) == [1.0, 1.0]
    with pytest.raises(ValueError, match="same length"):
        blend([0.1], [0.1, 0.2], 0.5)
    with pytest.raises(ValueError, match="weight"):
        blend([0.1], [0.1], 1.5)


def _hit(chunk_id: str, score: float) -> Hit:
    return Hit(chunk_id, "d", "t", "u", "c", "s", "text", 0, {}, score=score, fused_score=score)


def test_rerank_hits_reorders_by_blend_and_keeps_raw_scores():
    hits = [_hit("a", 0.03), _hit("b", 0.02), _hit("c", 0.01)]
    out = rerank_hits(hits, [0.1, 5.0, 2.0], weight=0.75)
    assert [h.chunk_id for h in out] == ["b", "c", "a"]
    assert [h.rerank_score for h in out] == [5.0, 2.0, 0.1]
    assert out[0].fused_score == 0.02  # the fused score is reported unchanged
    assert out[0].score == pytest.approx(0.75 * 1.0 + 0.25 * 0.5)


def test_rerank_ties_keep_document_order_not_chunk_ids():
    # equal blended scores: where the chunks stand decides, not their random ids
    hits = [
        Hit(chunk, document, "t", "u", "c", "s", "text", ordinal, {}, score=0.5)
        for chunk, document, ordinal in (("c1", "b", 0), ("c2", "a", 3), ("c3", "a", 1))
    ]
    out = rerank_hits(hits, [1.0, 1.0, 1.0], weight=0.5)
    assert [(h.document_id, h.ordinal) for h in out] == [("a", 1), ("a", 3), ("b", 0)]
