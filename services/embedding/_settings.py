"""Embedding service settings, read once from the environment at start."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.embedding._manifest import default_model_dir

DEFAULT_PORT = 50054


class EmbeddingSettingsError(ValueError):
    """A malformed embedding variable; the message names it so start-up fails fast."""


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
        env = _Env(os.environ if environ is None else environ)
        model_path = env.optional("EMBEDDING_MODEL_PATH")
        return cls(
            model=env.optional("EMBEDDING_MODEL"),
            model_path=Path(model_path) if model_path is not None else None,
            dim=env.optional_int("EMBEDDING_DIM", minimum=1),
            data_dir=Path(env.optional("TANDEM_DATA_DIR") or ".tandem"),
            port=env.integer("EMBEDDING_PORT", DEFAULT_PORT, minimum=0, maximum=65535),
            max_batch=env.integer("EMBEDDING_MAX_BATCH", 256, minimum=1),
            max_text_chars=env.integer("EMBEDDING_MAX_TEXT_CHARS", 8192, minimum=1),
            max_batch_chars=env.integer("EMBEDDING_MAX_BATCH_CHARS", 1_048_576, minimum=1),
            cache_size=env.integer("EMBEDDING_CACHE_SIZE", 10_000, minimum=0),
            cache_ttl_s=env.number("EMBEDDING_CACHE_TTL_S", 3600.0, minimum=0.0),
            coalesce_wait_ms=env.number("EMBEDDING_COALESCE_WAIT_MS", 2.0, minimum=0.0),
            coalesce_max_batch=env.integer("EMBEDDING_COALESCE_MAX_BATCH", 64, minimum=1),
            threads=env.integer("EMBEDDING_THREADS", 0, minimum=0),
        )


class _Env:
    """Typed reads where an empty value means unset and a bad one names its variable."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def optional(self, name: str) -> str | None:
        value = self._environ.get(name, "").strip()
        return value or None

    def optional_int(self, name: str, *, minimum: int) -> int | None:
        raw = self.optional(name)
        if raw is None:
            return None
        return self._parse_int(name, raw, minimum=minimum, maximum=None)

    def integer(self, name: str, default: int, *, minimum: int, maximum: int | None = None) -> int:
        raw = self.optional(name)
        if raw is None:
            return default
        return self._parse_int(name, raw, minimum=minimum, maximum=maximum)

    def number(self, name: str, default: float, *, minimum: float) -> float:
        raw = self.optional(name)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise EmbeddingSettingsError(f"{name} must be a number, got {raw!r}") from None
        # float() accepts "nan" and "inf", which would disable a limit silently
        if not math.isfinite(value):
            raise EmbeddingSettingsError(f"{name} must be a finite number, got {raw!r}")
        if value < minimum:
            raise EmbeddingSettingsError(f"{name} must be >= {minimum:g}, got {raw!r}")
        return value

    @staticmethod
    def _parse_int(name: str, raw: str, *, minimum: int, maximum: int | None) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise EmbeddingSettingsError(f"{name} must be an integer, got {raw!r}") from None
        if value < minimum:
            raise EmbeddingSettingsError(f"{name} must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise EmbeddingSettingsError(f"{name} must be <= {maximum}, got {value}")
        return value
