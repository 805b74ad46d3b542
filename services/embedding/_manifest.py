"""The ``tandem-model.json`` manifest that describes an assembled local model directory.

Kept free of heavy imports so the assembler and the loader share one schema cheaply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

MANIFEST_NAME = "tandem-model.json"
# Where `make models` puts the default model, relative to TANDEM_DATA_DIR
DEFAULT_MODEL_DIR_NAME = "all-MiniLM-L6-v2-int8"
MANIFEST_FORMAT = 1
POOLING_TYPES = frozenset({"mean", "cls", "last_token", "disabled"})

_T = TypeVar("_T")
_KIND_NAMES: dict[type, str] = {str: "a string", int: "an integer", bool: "a boolean"}


class ManifestError(ValueError):
    """A manifest is missing fields or holds values the loader cannot use."""


@dataclass(frozen=True)
class ManifestSource:
    """One PyPI distribution a model directory was assembled from."""

    package: str
    version: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class ModelManifest:
    """Name, shape and provenance of a local ONNX model directory."""

    name: str
    dim: int
    pooling: str
    normalization: bool
    model_file: str
    sha256: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[ManifestSource, ...] = ()

    def to_json(self) -> str:
        """Serialises with sorted keys so an unchanged model rewrites byte-identically."""
        payload: dict[str, Any] = {
            "format": MANIFEST_FORMAT,
            "name": self.name,
            "dim": self.dim,
            "pooling": self.pooling,
            "normalization": self.normalization,
            "model_file": self.model_file,
            "sha256": dict(self.sha256),
            "sources": [
                {"package": s.package, "version": s.version, "files": list(s.files)}
                for s in self.sources
            ],
        }
        return json.dumps(payload, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ModelManifest:
        """Parses and checks a manifest; every problem names the offending key."""
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{MANIFEST_NAME} is not valid JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise ManifestError(f"{MANIFEST_NAME} must hold a JSON object")
        name = _require(raw, "name", str)
        dim = _require(raw, "dim", int)
        pooling = _require(raw, "pooling", str).lower()
        normalization = _require(raw, "normalization", bool)
        model_file = _require(raw, "model_file", str)
        if not name.strip():
            raise ManifestError(f"{MANIFEST_NAME}: 'name' must not be empty")
        if dim <= 0:
            raise ManifestError(f"{MANIFEST_NAME}: 'dim' must be positive, got {dim}")
        if pooling not in POOLING_TYPES:
            raise ManifestError(
                f"{MANIFEST_NAME}: 'pooling' must be one of {sorted(POOLING_TYPES)}, "
                f"got {pooling!r}"
            )
        sha = raw.get("sha256", {})
        if not isinstance(sha, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in sha.items()
        ):
            raise ManifestError(f"{MANIFEST_NAME}: 'sha256' must map file names to digests")
        sources = tuple(_parse_source(s) for s in raw.get("sources", []))
        return cls(
            name=name,
            dim=dim,
            pooling=pooling,
            normalization=normalization,
            model_file=model_file,
            sha256=sha,
            sources=sources,
        )

    @classmethod
    def read(cls, directory: Path) -> ModelManifest | None:
        """The manifest in ``directory``, or None when the directory has none."""
        path = directory / MANIFEST_NAME
        if not path.is_file():
            return None
        return cls.from_json(path.read_text(encoding="utf-8"))


def default_model_dir(data_dir: Path) -> Path:
    """Where ``make models`` puts the default model under ``TANDEM_DATA_DIR``."""
    return data_dir / "models" / DEFAULT_MODEL_DIR_NAME


def _require(raw: Mapping[str, Any], key: str, kind: type[_T]) -> _T:
    value = raw.get(key)
    # bool is an int subclass; a manifest saying "dim": true is a mistake, not 1
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        noun = _KIND_NAMES.get(kind, kind.__name__)
        raise ManifestError(f"{MANIFEST_NAME}: '{key}' must be {noun}")
    return value


def _parse_source(raw: object) -> ManifestSource:
    if not isinstance(raw, dict):
        raise ManifestError(f"{MANIFEST_NAME}: each entry of 'sources' must be an object")
    files = raw.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ManifestError(f"{MANIFEST_NAME}: 'sources[].files' must be a list of names")
    return ManifestSource(
        package=_require(raw, "package", str),
        version=_require(raw, "version", str),
        files=tuple(files),
    )
