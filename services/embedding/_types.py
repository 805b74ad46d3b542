"""Shared value types and the model interface the batcher and engine depend on."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

Vectors = NDArray[np.float32]


class EmbedKind(enum.StrEnum):
    """How a text is used: some models prefix queries and passages differently."""

    QUERY = "query"
    PASSAGE = "passage"


class ModelOrigin(enum.StrEnum):
    """Where a model was loaded from, reported with the model info."""

    LOCAL_DIRECTORY = "local_directory"
    HUB = "hub"


class EmbeddingModel(Protocol):
    """A loaded text embedding model; blocking calls, run off the event loop."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def origin(self) -> ModelOrigin: ...

    @property
    def pooling(self) -> str:
        """e.g. "mean" or "cls"; empty when the library does not say."""
        ...

    @property
    def normalized(self) -> bool:
        """True when every vector has unit length, so cosine equals the dot product."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """One row per text, shape ``(len(texts), dim)``, float32."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """One row per text, shape ``(len(texts), dim)``, float32."""
        ...
