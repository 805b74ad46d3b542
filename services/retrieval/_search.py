"""Search: validate, embed the query, one SQL statement (dense + full text fused by weighted
RRF), optional rerank, score floor. Fails open when the embedder, the store or the
reranker is unavailable: ``degraded``, one warning naming the cause, and the span marked
as an error. What is still answered depends on what failed: an unreachable embedder turns
HYBRID into full text alone (mode SPARSE; a restarting embedder once emptied every search
for seconds, issue 46) and leaves DENSE with no hits; an unreachable store gives no hits;
a failed reranker keeps the fused order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import numpy.typing as npt
from opentelemetry import metrics, trace

from services.common import (
    DeadlineExceeded,
    InvalidArgument,
    Unavailable,
    control_character_problem,
    json_control_problem,
    remaining,
)
from services.common.spans import DEGRADED_REASON, HITS, MODEL, node_span
from services.common.spans import Metrics as TandemMetrics
from services.retrieval._embedding_client import EmbeddingClient, EmbeddingError
from services.retrieval._repository import (
    RetrievalRepository,
    SearchPlan,
    SearchRows,
    model_mismatch,
)
from services.retrieval._settings import RetrievalSettings
from services.retrieval._types import (
    Degradation,
    DegradationReason,
    Hit,
    JsonObject,
    SearchMode,
    SearchQuery,
    SearchResult,
)
from services.retrieval._validation import check_tenant_id, metadata_problem

_log = logging.getLogger("tandem.retrieval")


class Reranker(Protocol):
    """A cross-encoder: one relevance score per passage for a query (higher is better)."""

    @property
    def name(self) -> str: ...

    async def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


def rrf_score(ranks: Sequence[int | None], weights: Sequence[float], k: int = 60) -> float:
    """Weighted reciprocal rank fusion: sum of weight / (k + rank) over the lists that
    ranked the item (ranks are 1-based; None means the list did not return it)."""
    return sum(w / (k + r) for r, w in zip(ranks, weights, strict=True) if r is not None)


def _min_max(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return [1.0 for _ in values]
    return [(v - low) / (high - low) for v in values]


def blend(fused: Sequence[float], rerank: Sequence[float], weight: float) -> list[float]:
    """Blend cross-encoder scores with fused scores over one candidate list.

    Both are min-max normalised across the candidates first (RRF scores are tiny and
    cross-encoder logits unbounded, so raw values do not mix), then combined as
    ``weight * rerank + (1 - weight) * fused``; the result lies in [0, 1].
    """
    if len(fused) != len(rerank):
        raise ValueError("fused and rerank scores must have the same length")
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must be within [0, 1], got {weight}")
    if not fused:
        return []
    return [
        weight * r + (1.0 - weight) * f
        for f, r in zip(_min_max(fused), _min_max(rerank), strict=True)
    ]


def rerank_hits(hits: Sequence[Hit], rerank_scores: Sequence[float], weight: float) -> list[Hit]:
    """Hits reordered by the blended score, each carrying its raw cross-encoder score."""
    blended = blend([h.score for h in hits], rerank_scores, weight)
    rescored = [
        replace(hit, score=b, rerank_score=float(r))
        for hit, b, r in zip(hits, blended, rerank_scores, strict=True)
    ]
    return sorted(rescored, key=lambda h: (-h.score, h.document_id, h.ordinal))


class FastembedReranker:
    """fastembed's cross-encoder behind the Reranker seam (used only when configured)."""

    def __init__(self, model_name: str) -> None:
        from fastembed.rerank.cross_encoder import TextCrossEncoder  # noqa: PLC0415

        self._name = model_name
        self._model = TextCrossEncoder(model_name=model_name)

    @property
    def name(self) -> str:
        return self._name

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        scores = await asyncio.to_thread(lambda: list(self._model.rerank(query, list(passages))))
        return [float(s) for s in scores]


@dataclass(frozen=True)
class ResolvedQuery:
    """A query's effective mode and limits, every default applied."""

    mode: SearchMode
    top_k: int
    depth: int
    ef_search: int
    min_score: float


def resolve_query(query: SearchQuery, settings: RetrievalSettings) -> ResolvedQuery:
    """Apply defaults and check every documented limit (INVALID_ARGUMENT names the field)."""
    s = settings
    check_tenant_id(query.tenant_id)
    if not query.query.strip():
        raise InvalidArgument.field("query", "must not be empty or blank")
    if len(query.query) > s.max_query_chars:
        raise InvalidArgument.field(
            "query",
            f"must be at most {s.max_query_chars} characters, got {len(query.query)}",
            reason="TEXT_TOO_LONG",
            metadata={"limit": str(s.max_query_chars), "actual": str(len(query.query))},
        )
    _check_characters(query)
    try:
        mode = SearchMode(query.mode or SearchMode.HYBRID)
    except ValueError:
        raise InvalidArgument.field("mode", "is not a known search mode") from None
    if not 0 <= query.top_k <= s.max_top_k:
        raise InvalidArgument.field("top_k", f"must be within 0..{s.max_top_k}")
    top_k = query.top_k or s.default_top_k
    if not 0 <= query.candidate_depth <= s.max_candidate_depth:
        raise InvalidArgument.field("candidate_depth", f"must be within 0..{s.max_candidate_depth}")
    if query.candidate_depth and query.candidate_depth < top_k:
        raise InvalidArgument.field("candidate_depth", f"must be at least top_k ({top_k}) when set")
    depth = query.candidate_depth or max(s.default_candidate_depth, top_k)
    if not 0 <= query.ef_search <= s.max_ef_search:
        raise InvalidArgument.field("ef_search", f"must be within 0..{s.max_ef_search}")
    if len(query.document_ids) > s.max_filter_document_ids:
        raise InvalidArgument.field(
            "filter.document_ids",
            f"must hold at most {s.max_filter_document_ids} ids, got {len(query.document_ids)}",
        )
    if query.metadata is not None:
        problem = metadata_problem(query.metadata)
        if problem:
            raise InvalidArgument.field("filter.metadata", problem)
    if not math.isfinite(query.min_score) or query.min_score < 0:
        raise InvalidArgument.field("min_score", "must be a finite number >= 0")
    return ResolvedQuery(
        mode=mode,
        top_k=top_k,
        depth=depth,
        ef_search=query.ef_search or s.default_ef_search,
        min_score=query.min_score,
    )


def _check_characters(query: SearchQuery) -> None:
    """No control character reaches the database (services.common's rule): one in a
    filter once failed in Postgres and came back naming field "query"."""
    problem = control_character_problem(query.query, free_text=True)
    if problem:
        raise InvalidArgument.field("query", problem, reason="INVALID_CHARACTER")
    for name, values in (
        ("filter.categories", query.categories),
        ("filter.document_ids", query.document_ids),
    ):
        for index, value in enumerate(values):
            problem = control_character_problem(value)
            if problem:
                raise InvalidArgument.field(f"{name}[{index}]", problem, reason="INVALID_CHARACTER")
    if query.metadata:
        violation = json_control_problem(query.metadata, "filter.metadata")
        if violation:
            raise InvalidArgument.field(
                violation.field, violation.description, reason="INVALID_CHARACTER"
            )


def search_plan(
    settings: RetrievalSettings,
    *,
    tenant_id: str,
    mode: SearchMode,
    query: str,
    vector: npt.NDArray[np.float32] | None,
    model_name: str,
    depth: int,
    limit: int,
    ef_search: int,
    categories: tuple[str, ...] = (),
    document_ids: tuple[str, ...] = (),
    metadata: JsonObject | None = None,
) -> SearchPlan:
    """One search for the repository, the ranking settings applied: the one place a plan
    is made (the service, the benchmarks and the tests all come here)."""
    s = settings
    return SearchPlan(
        tenant_id=tenant_id,
        mode=mode,
        query=query,
        vector=vector if mode is not SearchMode.SPARSE else None,
        model_name=model_name,
        categories=categories,
        document_ids=document_ids,
        metadata=metadata,
        depth=depth,
        limit=limit,
        ef_search=ef_search,
        rrf_k=s.rrf_k,
        dense_weight=s.dense_weight,
        sparse_weight=s.sparse_weight,
        # The coverage floor guards the fusion; full text alone keeps every match.
        sparse_coverage=s.sparse_min_coverage if mode is SearchMode.HYBRID else 0.0,
        sparse_candidates=s.sparse_candidates,
        bm25_k1=s.bm25_k1,
        bm25_b=s.bm25_b,
        bm25_k3=s.bm25_k3,
        sparse_min_share=s.sparse_min_share,
        sparse_top_gap=s.sparse_top_gap,
        sparse_top_boost=s.sparse_top_boost,
    )


class Searcher:
    """Runs Search; collaborators (store, embedder, optional reranker) come in here."""

    def __init__(
        self,
        repository: RetrievalRepository,
        embedder: EmbeddingClient,
        settings: RetrievalSettings,
        tracer: trace.Tracer,
        meter: metrics.Meter,
        *,
        reranker: Reranker | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._repository = repository
        self._embedder = embedder
        self._settings = settings
        self._tracer = tracer
        self._reranker = reranker
        self._clock = clock
        self._metrics = TandemMetrics(meter)
        self._stage_ms = meter.create_histogram(
            "tandem.retrieval.search.stage_duration",
            unit="ms",
            description="Search stage durations (embed, database, rerank, total) by mode",
        )

    async def search(self, query: SearchQuery) -> SearchResult:
        """Hits best first; dependency failures degrade the result instead of raising."""
        started = self._clock()
        resolved = resolve_query(query, self._settings)
        server_span = trace.get_current_span()
        with self._tracer.start_as_current_span("retrieval.search") as span:
            span.set_attribute("tandem.mode", resolved.mode.name)
            span.set_attribute("tandem.top_k", resolved.top_k)
            span.set_attribute("tandem.candidate_depth", resolved.depth)
            span.set_attribute("tandem.ef_search", resolved.ef_search)
            span.set_attribute("tandem.query_chars", len(query.query))
            span.set_attribute("tandem.rerank", query.rerank)
            result = await self._search(query, resolved, started)
            timings = dict(result.timings)
            timings["total"] = self._clock() - started
            result = replace(result, timings=timings)
            span.set_attribute("tandem.hits", len(result.hits))
            span.set_attribute("tandem.degraded", result.degraded)
            for stage, seconds in timings.items():
                self._stage_ms.record(seconds * 1000, {"stage": stage, "mode": result.mode.name})
            if result.hits:
                # rank/score summaries: how each side contributed, never what matched
                span.set_attributes(
                    {
                        "tandem.score.top": result.hits[0].score,
                        "tandem.score.min": result.hits[-1].score,
                        "tandem.hits.dense": sum(1 for h in result.hits if h.dense_rank),
                        "tandem.hits.sparse": sum(1 for h in result.hits if h.sparse_rank),
                    }
                )
            if result.degraded:
                names = [d.reason.name for d in result.degradations]
                reasons = ",".join(names)
                for target in (span, server_span):
                    target.set_status(trace.Status(trace.StatusCode.ERROR, f"degraded: {reasons}"))
                span.set_attribute("tandem.degradations", names)
                span.set_attribute(DEGRADED_REASON, names[0])
            return result

    async def _search(
        self, query: SearchQuery, resolved: ResolvedQuery, started: float
    ) -> SearchResult:
        timings: dict[str, float] = {}
        mode = resolved.mode
        vector = None
        model_name = ""
        degradations: list[Degradation] = []
        if mode is not SearchMode.SPARSE:
            embed_started = self._clock()
            try:
                with self._stage("retrieval.search.embed_query") as stage:
                    vector, model_name = await self._embedder.embed_query(
                        query.query, timeout_s=self._settings.query_embed_timeout_s
                    )
                    stage.set_attribute(MODEL, model_name)
            except EmbeddingError as exc:
                self._raise_if_out_of_time(exc)
                if mode is not SearchMode.HYBRID:
                    return self._degrade(
                        mode,
                        DegradationReason.EMBEDDING_UNAVAILABLE,
                        "embedding",
                        f"embedding service unavailable ({exc.code.name})",
                        timings,
                    )
                # The full-text side needs no vector: answer from it alone, saying so.
                mode = SearchMode.SPARSE
                degradations.append(
                    self._degradation(
                        DegradationReason.EMBEDDING_UNAVAILABLE,
                        "embedding",
                        f"embedding service unavailable ({exc.code.name}); "
                        "answered from full text alone",
                    )
                )
            finally:
                timings["embed"] = self._clock() - embed_started
        rerank = query.rerank
        limit = (
            max(resolved.top_k, min(resolved.depth, self._settings.rerank_depth))
            if rerank and self._reranker is not None
            else resolved.top_k
        )
        plan = search_plan(
            self._settings,
            tenant_id=query.tenant_id,
            mode=mode,
            query=query.query,
            vector=vector,
            model_name=model_name,
            depth=resolved.depth,
            limit=limit,
            ef_search=resolved.ef_search,
            categories=query.categories,
            document_ids=query.document_ids,
            metadata=query.metadata,
        )
        db_started = self._clock()
        try:
            with self._stage("retrieval.search.db_query") as stage:
                stage.set_attributes({"tandem.mode": mode.name, "tandem.limit": limit})
                rows: SearchRows = await self._repository.search(plan)
                stage.set_attribute(HITS, len(rows.hits))
        except Unavailable:
            return self._degrade(
                mode,
                DegradationReason.DATABASE_UNAVAILABLE,
                "postgres",
                "retrieval database unavailable",
                timings,
                model_name=model_name,
                earlier=degradations,
            )
        finally:
            timings["database"] = self._clock() - db_started
        if rows.other_model is not None:
            raise model_mismatch(rows.other_model, model_name)
        hits = rows.hits
        reranked = False
        if rerank:
            rerank_started = self._clock()
            with self._stage("retrieval.search.rerank") as stage:
                stage.set_attribute("tandem.candidates", len(hits))
                hits, degradation = await self._rerank(query.query, hits)
                if degradation is not None:
                    stage.set_attribute(DEGRADED_REASON, degradation.reason.name)
                    stage.set_status(trace.Status(trace.StatusCode.ERROR, "degraded"))
            timings["rerank"] = self._clock() - rerank_started
            reranked = degradation is None and bool(hits)
            if degradation is not None:
                degradations.append(degradation)
        if resolved.min_score > 0:
            hits = [h for h in hits if h.score >= resolved.min_score]
        return SearchResult(
            hits=tuple(hits[: resolved.top_k]),
            mode=mode,
            model_name=model_name,
            degradations=tuple(degradations),
            reranked=reranked,
            timings=timings,
        )

    async def _rerank(self, query: str, hits: list[Hit]) -> tuple[list[Hit], Degradation | None]:
        if self._reranker is None:
            return hits, self._degradation(
                DegradationReason.RERANKER_UNAVAILABLE,
                "reranker",
                "rerank requested but no reranker model is configured",
            )
        if not hits:
            return hits, None
        try:
            scores = await self._reranker.score(query, [h.text for h in hits])
            if len(scores) != len(hits) or not all(math.isfinite(s) for s in scores):
                raise ValueError("reranker returned unusable scores")
        except Exception as exc:  # any reranker failure falls back to the fused order
            return hits, self._degradation(
                DegradationReason.RERANKER_UNAVAILABLE,
                "reranker",
                f"reranker failed ({type(exc).__name__})",
            )
        return rerank_hits(hits, scores, self._settings.rerank_weight), None

    def _stage(self, name: str) -> contextlib.AbstractContextManager[trace.Span]:
        return node_span(self._tracer, name)

    def _raise_if_out_of_time(self, exc: EmbeddingError) -> None:
        """The caller's own deadline running out is DEADLINE_EXCEEDED, not a degradation."""
        left = remaining()
        if left is not None and left <= 0.01:
            raise DeadlineExceeded("deadline exceeded while embedding the query") from exc

    def _degradation(self, reason: DegradationReason, component: str, message: str) -> Degradation:
        self._metrics.degraded("retrieval", reason.name)
        _log.warning(
            "search degraded",
            extra={"fields": {"cause": reason.name, "component": component, "detail": message}},
        )
        return Degradation(reason, component, message)

    def _degrade(
        self,
        mode: SearchMode,
        reason: DegradationReason,
        component: str,
        message: str,
        timings: dict[str, float],
        *,
        model_name: str = "",
        earlier: Sequence[Degradation] = (),
    ) -> SearchResult:
        return SearchResult(
            hits=(),
            mode=mode,
            model_name=model_name,
            degradations=(*earlier, self._degradation(reason, component, message)),
            timings=timings,
        )
