"""The embedding service's logic: validate, consult the query cache, batch, answer."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from opentelemetry import trace

from services.common.spans import CACHE_HITS, CACHE_MISSES, CHARS, COUNT, KIND, MODEL
from services.common.spans import Metrics as TandemMetrics
from services.embedding._batcher import BatcherStats, MicroBatcher
from services.embedding._cache import CacheStats, QueryCache
from services.embedding._errors import (
    REASON_BATCH_TOO_LARGE,
    REASON_EMPTY_TEXT,
    REASON_TEXT_TOO_LONG,
    EmbeddingInputError,
    EmbeddingModelError,
    EmbeddingModelMismatchError,
)
from services.embedding._settings import EmbeddingSettings
from services.embedding._types import EmbeddingModel, EmbedKind, ModelOrigin, Vectors

logger = logging.getLogger(__name__)

# Fixed and free of user data, so readiness never depends on a request's content
PROBE_TEXT = "Tandem embedding readiness probe."


@dataclass(frozen=True)
class EmbeddingLimits:
    """Per-request caps; anything above them is refused, never truncated."""

    max_batch: int = 256
    max_text_chars: int = 8192
    max_batch_chars: int = 1_048_576


@dataclass(frozen=True)
class EmbedResult:
    """Vectors in request order, shape ``(len(texts), dim)``, and the model that made them."""

    vectors: Vectors
    model: str
    dim: int
    cache_hits: int


@dataclass(frozen=True)
class ModelInfo:
    """What callers need to store and compare vectors, and the limits they must respect."""

    name: str
    dim: int
    origin: ModelOrigin
    pooling: str
    normalized: bool
    max_batch: int
    max_text_chars: int
    max_batch_chars: int
    query_cache_capacity: int
    query_cache_ttl_s: float
    query_cache_capacity_per_tenant: int = 0


@dataclass(frozen=True)
class EngineStats:
    """Cache and batching counters, for health pages and benchmarks."""

    cache: CacheStats
    batcher: BatcherStats


class EmbeddingEngine:
    """Embeds validated batches of texts; query vectors are served from cache when possible."""

    def __init__(
        self,
        model: EmbeddingModel,
        cache: QueryCache,
        batcher: MicroBatcher,
        limits: EmbeddingLimits | None = None,
        *,
        tracer: trace.Tracer | None = None,
        metrics: TandemMetrics | None = None,
    ) -> None:
        self._model = model
        self._cache = cache
        self._batcher = batcher
        self._limits = limits or EmbeddingLimits()
        self._tracer = tracer or trace.NoOpTracer()
        self._metrics = metrics or TandemMetrics()
        self._ready = False

    @property
    def ready(self) -> bool:
        """True once ``warm_up`` has embedded the probe; health reports SERVING from then."""
        return self._ready

    def model_info(self) -> ModelInfo:
        """The model's name and dimension, and the request limits."""
        return ModelInfo(
            name=self._model.name,
            dim=self._model.dim,
            origin=self._model.origin,
            pooling=self._model.pooling,
            normalized=self._model.normalized,
            max_batch=self._limits.max_batch,
            max_text_chars=self._limits.max_text_chars,
            max_batch_chars=self._limits.max_batch_chars,
            query_cache_capacity=self._cache.max_entries,
            query_cache_ttl_s=self._cache.ttl_s,
            query_cache_capacity_per_tenant=self._cache.max_entries_per_tenant,
        )

    async def warm_up(self) -> ModelInfo:
        """Runs the probe through both paths, so readiness proves inference, not just loading."""
        started = time.perf_counter()
        for kind in EmbedKind:
            # straight to the batcher: the probe must exercise the model, not the cache
            vectors = await self._batcher.embed([PROBE_TEXT], kind)
            self._check_shape(vectors, 1)
            if not np.all(np.isfinite(vectors)):
                raise EmbeddingModelError(f"model {self._model.name} returned non-finite values")
            norm = float(np.linalg.norm(vectors[0]))
            if self._model.normalized and abs(norm - 1.0) > 1e-3:
                raise EmbeddingModelError(
                    f"model {self._model.name} claims normalised vectors but returned norm {norm}"
                )
        self._ready = True
        logger.info(
            "embedding engine ready",
            extra={
                "fields": {
                    "model": self._model.name,
                    "dim": self._model.dim,
                    "warm_up_ms": round((time.perf_counter() - started) * 1000, 1),
                }
            },
        )
        return self.model_info()

    async def embed(
        self,
        texts: Sequence[str],
        kind: EmbedKind,
        *,
        tenant: str | None,
        view: str = "",
        expected_model: str | None = None,
    ) -> EmbedResult:
        """Embeds ``texts`` as ``kind``; raises EmbeddingInputError naming the bad field.

        ``tenant`` is whose query cache serves the call (the authenticated tenant, never
        one a request names); None bypasses the cache: nothing read, nothing stored.
        ``view`` is the principal inside the tenant (its signed canonical form; empty for
        a service key): one person's searches never warm another's cache.
        ``expected_model`` guards against mixing vectors from two models in one index.
        """
        self._validate(texts, kind)
        if expected_model and expected_model != self._model.name:
            raise EmbeddingModelMismatchError(expected_model, self._model.name)
        with self._tracer.start_as_current_span("embedding.embed") as span:
            span.set_attributes(
                {
                    KIND: kind.name,
                    COUNT: len(texts),
                    CHARS: sum(len(t) for t in texts),
                    MODEL: self._model.name,
                }
            )
            if kind is EmbedKind.QUERY:
                vectors, hits = await self._embed_queries(texts, tenant, view)
                misses = len(texts) - hits
                span.set_attributes({CACHE_HITS: hits, CACHE_MISSES: misses})
                self._metrics.cache(hits, misses)
            else:
                vectors = await self._batcher.embed(texts, EmbedKind.PASSAGE)
                self._check_shape(vectors, len(texts))
                hits = 0
        return EmbedResult(
            vectors=vectors, model=self._model.name, dim=self._model.dim, cache_hits=hits
        )

    def stats(self) -> EngineStats:
        """A snapshot of the cache and batcher counters."""
        return EngineStats(cache=self._cache.stats(), batcher=self._batcher.stats())

    async def close(self) -> None:
        """Finishes queued work and releases the inference thread."""
        self._ready = False
        await self._batcher.close()

    async def _embed_queries(
        self, texts: Sequence[str], tenant: str | None, view: str
    ) -> tuple[Vectors, int]:
        name = self._model.name
        vectors = np.empty((len(texts), self._model.dim), dtype=np.float32)
        # a text repeated within one request is computed once
        missing: dict[str, list[int]] = {}
        hits = 0
        for index, text in enumerate(texts):
            cached = None if tenant is None else self._cache.get(tenant, name, text, view)
            if cached is None:
                missing.setdefault(text, []).append(index)
            else:
                vectors[index] = cached
                hits += 1
        if missing:
            unique = list(missing)
            computed = await self._batcher.embed(unique, EmbedKind.QUERY)
            self._check_shape(computed, len(unique))
            for text, row in zip(unique, computed, strict=True):
                if tenant is not None:
                    self._cache.put(tenant, name, text, row, view)
                vectors[missing[text]] = row
        return vectors, hits

    def _validate(self, texts: Sequence[str], kind: EmbedKind) -> None:
        if not isinstance(kind, EmbedKind):
            raise EmbeddingInputError("input_type", "must be QUERY or PASSAGE")
        if isinstance(texts, str):
            raise EmbeddingInputError("texts", "must be a list of texts, not a single string")
        if len(texts) == 0:
            raise EmbeddingInputError("texts", "must contain at least one text")
        limits = self._limits
        if len(texts) > limits.max_batch:
            raise EmbeddingInputError(
                "texts",
                f"must contain at most {limits.max_batch} texts, got {len(texts)}",
                reason=REASON_BATCH_TOO_LARGE,
                metadata={"limit": str(limits.max_batch), "actual": str(len(texts))},
            )
        total = 0
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise EmbeddingInputError(f"texts[{index}]", "must be a string")
            if not text.strip():
                raise EmbeddingInputError(
                    f"texts[{index}]",
                    "must not be empty or whitespace-only",
                    reason=REASON_EMPTY_TEXT,
                )
            if len(text) > limits.max_text_chars:
                raise EmbeddingInputError(
                    f"texts[{index}]",
                    f"must be at most {limits.max_text_chars} characters, got {len(text)}",
                    reason=REASON_TEXT_TOO_LONG,
                    metadata={"limit": str(limits.max_text_chars), "actual": str(len(text))},
                )
            total += len(text)
        if total > limits.max_batch_chars:
            raise EmbeddingInputError(
                "texts",
                f"must hold at most {limits.max_batch_chars} characters in all, got {total}",
                reason=REASON_BATCH_TOO_LARGE,
                metadata={"limit": str(limits.max_batch_chars), "actual": str(total)},
            )

    def _check_shape(self, vectors: Vectors, count: int) -> None:
        if vectors.shape != (count, self._model.dim):
            raise EmbeddingModelError(
                f"model {self._model.name} returned shape {vectors.shape}, "
                f"expected ({count}, {self._model.dim})"
            )


def create_engine(
    settings: EmbeddingSettings,
    model: EmbeddingModel,
    *,
    tracer: trace.Tracer | None = None,
    metrics: TandemMetrics | None = None,
) -> EmbeddingEngine:
    """Wires an engine with the cache, batcher and limits the settings describe."""
    return EmbeddingEngine(
        model=model,
        cache=QueryCache(
            settings.cache_size,
            settings.cache_ttl_s,
            max_entries_per_tenant=settings.cache_size_per_tenant,
        ),
        batcher=MicroBatcher(
            model,
            max_wait_s=settings.coalesce_wait_ms / 1000.0,
            max_batch=settings.coalesce_max_batch,
        ),
        limits=EmbeddingLimits(
            max_batch=settings.max_batch,
            max_text_chars=settings.max_text_chars,
            max_batch_chars=settings.max_batch_chars,
        ),
        tracer=tracer,
        metrics=metrics,
    )
