"""Embedding service: fastembed text embeddings with micro-batching and a query cache."""

from __future__ import annotations

from services.embedding._batcher import BatcherStats, MicroBatcher
from services.embedding._cache import CacheStats, QueryCache
from services.embedding._errors import (
    REASON_BATCH_TOO_LARGE,
    REASON_EMPTY_TEXT,
    REASON_INVALID_ARGUMENT,
    REASON_MODEL_MISMATCH,
    REASON_TEXT_TOO_LONG,
    EmbeddingInputError,
    EmbeddingModelError,
    EmbeddingModelMismatchError,
    EmbeddingUnavailableError,
)
from services.embedding._logic import (
    PROBE_TEXT,
    EmbeddingEngine,
    EmbeddingLimits,
    EmbedResult,
    EngineStats,
    ModelInfo,
    create_engine,
)
from services.embedding._manifest import (
    MANIFEST_NAME,
    ManifestError,
    ModelManifest,
    default_model_dir,
)
from services.embedding._model import Embedder
from services.embedding._server import EmbeddingDeps, create_server, ready
from services.embedding._settings import EmbeddingSettings, EmbeddingSettingsError
from services.embedding._types import EmbeddingModel, EmbedKind, ModelOrigin, Vectors

__all__ = [
    "MANIFEST_NAME",
    "PROBE_TEXT",
    "REASON_BATCH_TOO_LARGE",
    "REASON_EMPTY_TEXT",
    "REASON_INVALID_ARGUMENT",
    "REASON_MODEL_MISMATCH",
    "REASON_TEXT_TOO_LONG",
    "BatcherStats",
    "CacheStats",
    "EmbedKind",
    "EmbedResult",
    "Embedder",
    "EmbeddingDeps",
    "EmbeddingEngine",
    "EmbeddingInputError",
    "EmbeddingLimits",
    "EmbeddingModel",
    "EmbeddingModelError",
    "EmbeddingModelMismatchError",
    "EmbeddingSettings",
    "EmbeddingSettingsError",
    "EmbeddingUnavailableError",
    "EngineStats",
    "ManifestError",
    "MicroBatcher",
    "ModelInfo",
    "ModelManifest",
    "ModelOrigin",
    "QueryCache",
    "Vectors",
    "create_engine",
    "create_server",
    "default_model_dir",
    "ready",
]
