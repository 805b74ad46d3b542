"""Embedder resolution errors that need no model files: each names what to set or run."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.embedding import Embedder, EmbeddingModelError, EmbeddingSettings


def test_missing_default_model_says_make_models(tmp_path: Path) -> None:
    settings = EmbeddingSettings(data_dir=tmp_path)
    with pytest.raises(EmbeddingModelError) as caught:
        Embedder.from_settings(settings)
    message = str(caught.value)
    assert "make models" in message
    assert "EMBEDDING_MODEL_PATH" in message
    assert str(tmp_path) in message


def test_model_path_must_be_a_directory(tmp_path: Path) -> None:
    settings = EmbeddingSettings(model_path=tmp_path / "nowhere", data_dir=tmp_path)
    with pytest.raises(EmbeddingModelError, match="EMBEDDING_MODEL_PATH"):
        Embedder.from_settings(settings)


def test_model_path_without_onnx_file(tmp_path: Path) -> None:
    settings = EmbeddingSettings(model_path=tmp_path, data_dir=tmp_path)
    with pytest.raises(EmbeddingModelError, match=r"EMBEDDING_MODEL_PATH=.*no ONNX model"):
        Embedder.from_settings(settings)


def test_model_path_without_dim_asks_for_embedding_dim(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"")
    settings = EmbeddingSettings(model_path=tmp_path, data_dir=tmp_path)
    with pytest.raises(EmbeddingModelError, match="EMBEDDING_DIM"):
        Embedder.from_settings(settings)


def test_unknown_model_name_names_the_variable(tmp_path: Path) -> None:
    settings = EmbeddingSettings(model="no-such/model", data_dir=tmp_path)
    with pytest.raises(EmbeddingModelError, match="EMBEDDING_MODEL='no-such/model'"):
        Embedder.from_settings(settings)


def test_broken_manifest_is_reported(tmp_path: Path) -> None:
    (tmp_path / "tandem-model.json").write_text('{"name": "x", "dim": "384"}')
    settings = EmbeddingSettings(model_path=tmp_path, data_dir=tmp_path)
    with pytest.raises(EmbeddingModelError, match="'dim' must be an integer"):
        Embedder.from_settings(settings)
