"""Embedding service settings, read once from the environment at start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.common import Env, SettingsError
from services.embedding._manifest import default_model_dir

DEFAULT_PORT = 50054


# Kept as a name of its own so callers can catch embedding configuration errors.
EmbeddingSettingsError = SettingsError


@dataclass(frozen=True)
class EmbeddingSettings:
    """Everything the embedding service reads from the environment, with defaults."""

    model: str | None = None
    model_path: Path | None = None
    dim: int | None = None
    data_dir: Path = Path(".tandem")
    port: int = DEFAULT_PORT
    max_batch: int = 256
    max_text_chars: int = 8192
    max_batch_chars: int = 1_048_576
    cache_size: int = 10_000
    cache_size_per_tenant: int = 1_000
    cache_ttl_s: float = 3600.0
    coalesce_wait_ms: float = 2.0
    coalesce_max_batch: int = 64
    threads: int = 0

    @property
    def default_model_dir(self) -> Path:
        """The directory ``make models`` assembles, used when nothing else is named."""
        return default_model_dir(self.data_dir)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EmbeddingSettings:
        """Reads the variables; tests pass a plain dict instead of ``os.environ``."""
        env = Env(environ)
        model_path = env.get_optional("EMBEDDING_MODEL_PATH")
        return cls(
            model=env.get_optional("EMBEDDING_MODEL"),
            model_path=Path(model_path) if model_path is not None else None,
            dim=env.get_optional_int("EMBEDDING_DIM", minimum=1),
            data_dir=Path(env.get_optional("TANDEM_DATA_DIR") or ".tandem"),
            port=env.get_int("EMBEDDING_PORT", DEFAULT_PORT, minimum=0, maximum=65535),
            max_batch=env.get_int("EMBEDDING_MAX_BATCH", 256, minimum=1),
            max_text_chars=env.get_int("EMBEDDING_MAX_TEXT_CHARS", 8192, minimum=1),
            max_batch_chars=env.get_int("EMBEDDING_MAX_BATCH_CHARS", 1_048_576, minimum=1),
            cache_size=env.get_int("EMBEDDING_CACHE_SIZE", 10_000, minimum=0),
            cache_size_per_tenant=env.get_int("EMBEDDING_CACHE_SIZE_PER_TENANT", 1_000, minimum=0),
            cache_ttl_s=env.get_float("EMBEDDING_CACHE_TTL_S", 3600.0, minimum=0.0),
            coalesce_wait_ms=env.get_float("EMBEDDING_COALESCE_WAIT_MS", 2.0, minimum=0.0),
            coalesce_max_batch=env.get_int("EMBEDDING_COALESCE_MAX_BATCH", 64, minimum=1),
            threads=env.get_int("EMBEDDING_THREADS", 0, minimum=0),
        )
