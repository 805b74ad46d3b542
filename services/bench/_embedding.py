"""The embedding service in a process of its own, for the benchmarks and evals that need
it beside the services they measure (the answer memory, the SQL linker's meanings)."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import grpc

from services.launch import launch, wait_serving
from tandem.v1 import embedding_service_pb2 as epb
from tandem.v1 import embedding_service_pb2_grpc as epb_grpc


@dataclass
class EmbeddingProcess:
    """The embedding service in a process of its own, as deployed: the SQL service's
    work while a question is embedded then overlaps the model, as it does in production
    (in one process the model's event loop would wait for it)."""

    process: subprocess.Popen[bytes]
    address: str
    model_name: str = ""

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_embedding(timeout_s: float = 180.0) -> EmbeddingProcess:
    """``python -m services.embedding`` on a free loopback port, once it is SERVING."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "EMBEDDING_HOST": "127.0.0.1",
        "EMBEDDING_PORT": str(port),
        # A harness's own model server on loopback, called by the in-process services it
        # measures (plaintext, as they are): the development switch, said in its log.
        "TANDEM_INSECURE_INTERNAL": "true",
    }
    env.pop("TANDEM_TLS_DIR", None)
    log = Path(tempfile.gettempdir()) / f"tandem-bench-embedding-{os.getpid()}.log"
    process = launch("services.embedding", env, log)
    embedding = EmbeddingProcess(process, f"127.0.0.1:{port}")
    try:
        wait_serving(embedding.address, timeout_s, alive=lambda: process.poll() is None)
    except (TimeoutError, ProcessLookupError) as exc:
        embedding.stop()
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"the embedding service did not start ({exc}):\n{tail}") from exc
    with grpc.insecure_channel(embedding.address) as channel:
        info = epb_grpc.EmbeddingServiceStub(channel).GetModelInfo(epb.GetModelInfoRequest())
    embedding.model_name = info.model_name
    return embedding
