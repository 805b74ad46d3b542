"""The retrieval service's view of the embedding service: a typed client over its stub."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import grpc
import numpy as np
import numpy.typing as npt
from google.rpc import error_details_pb2, status_pb2

from tandem.v1 import embedding_service_pb2 as pb
from tandem.v1 import embedding_service_pb2_grpc as pb_grpc

Matrix = npt.NDArray[np.float32]


class EmbeddingError(Exception):
    """The embedding service failed a call; ``code`` and ``reason`` say how (no text)."""

    def __init__(self, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(f"embedding service failed: {code.name} {reason}".strip())
        self.code = code
        self.reason = reason

    @property
    def model_mismatch(self) -> bool:
        return self.code is grpc.StatusCode.FAILED_PRECONDITION and self.reason == "MODEL_MISMATCH"


@dataclass(frozen=True)
class EmbedderInfo:
    """The serving model's identity and the request limits batches must respect."""

    model_name: str
    dimension: int
    max_batch_size: int
    max_text_chars: int
    max_batch_chars: int


def _reason(error: grpc.aio.AioRpcError) -> str:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Is(info.DESCRIPTOR):
                    detail.Unpack(info)
                    return str(info.reason)
    return ""


def _rows(reply: pb.EmbedResponse) -> Matrix:
    if not reply.embeddings:
        return np.empty((0, reply.dimension), dtype=np.float32)
    return np.array([e.values for e in reply.embeddings], dtype=np.float32)


class EmbeddingClient:
    """Queries and passages through ``tandem.v1.EmbeddingService``; failures raise
    EmbeddingError so callers decide between failing a document and degrading a search."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = pb_grpc.EmbeddingServiceStub(channel)

    async def model_info(self, *, timeout_s: float) -> EmbedderInfo:
        try:
            reply = await self._stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise EmbeddingError(exc.code(), _reason(exc)) from None
        return EmbedderInfo(
            model_name=reply.model_name,
            dimension=reply.dimension,
            max_batch_size=reply.max_batch_size,
            max_text_chars=reply.max_text_chars,
            max_batch_chars=reply.max_batch_chars,
        )

    async def embed_passages(
        self, texts: Sequence[str], *, expected_model: str, timeout_s: float
    ) -> Matrix:
        """One vector per text; refused unless the service still runs ``expected_model``."""
        reply = await self._embed(texts, pb.INPUT_TYPE_PASSAGE, expected_model, timeout_s)
        return _rows(reply)

    async def embed_query(self, text: str, *, timeout_s: float) -> tuple[Matrix, str]:
        """The query's vector and the model that made it."""
        reply = await self._embed([text], pb.INPUT_TYPE_QUERY, "", timeout_s)
        return _rows(reply)[0], reply.model_name

    async def _embed(
        self, texts: Sequence[str], kind: int, expected_model: str, timeout_s: float
    ) -> pb.EmbedResponse:
        request = pb.EmbedRequest(
            texts=list(texts),
            input_type=kind,  # type: ignore[arg-type]
            expected_model_name=expected_model,
        )
        try:
            reply = await self._stub.Embed(request, timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise EmbeddingError(exc.code(), _reason(exc)) from None
        if len(reply.embeddings) != len(texts):
            raise EmbeddingError(grpc.StatusCode.INTERNAL, "WRONG_VECTOR_COUNT")
        return reply
