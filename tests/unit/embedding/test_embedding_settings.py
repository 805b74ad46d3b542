"""EmbeddingSettings.from_env: defaults, overrides, and failures naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.embedding import EmbeddingSettings, EmbeddingSettingsError


def test_defaults() -> None:
    settings = EmbeddingSettings.from_env({})
    assert settings == EmbeddingSettings()
    assert settings.port == 50054
    assert (settings.max_batch, settings.max_text_chars) == (256, 8192)
    assert settings.max_batch_chars == 1_048_576
    assert (settings.cache_size, settings.cache_ttl_s) == (10_000, 3600.0)
    assert settings.cache_size_per_tenant == 1_000
    assert (settings.coalesce_wait_ms, settings.coalesce_max_batch, settings.threads) == (2, 64, 0)
    assert settings.model is None and settings.model_path is None and settings.dim is None
    assert settings.default_model_dir == Path(".tandem/models/all-MiniLM-L6-v2-int8")


def test_overrides() -> None:
    settings = EmbeddingSettings.from_env(
        {
            "EMBEDDING_MODEL": "BAAI/bge-small-en-v1.5",
            "EMBEDDING_MODEL_PATH": "/models/bge",
            "EMBEDDING_DIM": "384",
            "TANDEM_DATA_DIR": "/var/tandem",
            "EMBEDDING_PORT": "6000",
            "EMBEDDING_MAX_BATCH": "32",
            "EMBEDDING_MAX_TEXT_CHARS": "1000",
            "EMBEDDING_MAX_BATCH_CHARS": "5000",
            "EMBEDDING_CACHE_SIZE": "0",
            "EMBEDDING_CACHE_TTL_S": "1.5",
            "EMBEDDING_CACHE_SIZE_PER_TENANT": "7",
            "EMBEDDING_COALESCE_WAIT_MS": "0",
            "EMBEDDING_COALESCE_MAX_BATCH": "1",
            "EMBEDDING_THREADS": "2",
        }
    )
    assert settings.model == "BAAI/bge-small-en-v1.5"
    assert settings.model_path == Path("/models/bge")
    assert settings.dim == 384
    assert settings.default_model_dir == Path("/var/tandem/models/all-MiniLM-L6-v2-int8")
    assert (settings.port, settings.max_batch, settings.max_text_chars) == (6000, 32, 1000)
    assert settings.max_batch_chars == 5000
    assert (settings.cache_size, settings.cache_ttl_s) == (0, 1.5)
    assert settings.cache_size_per_tenant == 7
    assert (settings.coalesce_wait_ms, settings.coalesce_max_batch, settings.threads) == (0, 1, 2)


def test_empty_values_mean_unset() -> None:
    settings = EmbeddingSettings.from_env({"EMBEDDING_MODEL": " ", "EMBEDDING_MAX_BATCH": ""})
    assert settings.model is None
    assert settings.max_batch == 256


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("EMBEDDING_MAX_BATCH", "many"),
        ("EMBEDDING_MAX_BATCH", "0"),
        ("EMBEDDING_MAX_TEXT_CHARS", "-5"),
        ("EMBEDDING_MAX_BATCH_CHARS", "0"),
        ("EMBEDDING_CACHE_SIZE", "1.5"),
        ("EMBEDDING_CACHE_TTL_S", "soon"),
        ("EMBEDDING_CACHE_TTL_S", "nan"),
        ("EMBEDDING_COALESCE_WAIT_MS", "-1"),
        ("EMBEDDING_COALESCE_WAIT_MS", "inf"),
        ("EMBEDDING_COALESCE_MAX_BATCH", "0"),
        ("EMBEDDING_THREADS", "-1"),
        ("EMBEDDING_PORT", "70000"),
        ("EMBEDDING_DIM", "0"),
    ],
)
def test_bad_value_names_the_variable(name: str, value: str) -> None:
    with pytest.raises(EmbeddingSettingsError, match=name):
        EmbeddingSettings.from_env({name: value})
