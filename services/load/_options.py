"""ghz's option formats: Go durations (``10s``, ``1m30s``, ``250ms``) and config files."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.load._methods import LoadConfigError

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")

# ghz config keys the driver understands → LoadOptions fields. ``proto``, ``protoset``
# and ``import-paths`` are accepted and ignored: descriptors come from the generated code.
_IGNORED = {"proto", "protoset", "import-paths", "format", "output", "cpus", "tags"}


def parse_duration(raw: str | float | int, what: str = "duration") -> float:
    """Seconds from a Go duration string or a plain number of seconds."""
    if isinstance(raw, int | float):
        return float(raw)
    text = raw.strip()
    try:
        return float(text)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise LoadConfigError(f"{what} {raw!r} is not a duration like 10s, 1m30s or 250ms")
    return total


def from_ghz_config(path: Path) -> dict[str, Any]:
    """Reads a ghz JSON config into ``LoadOptions`` keyword arguments.

    Relative ``data-file`` / ``metadata-file`` paths resolve against the config's folder.
    """
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise LoadConfigError(f"cannot read ghz config {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise LoadConfigError(f"ghz config {path} must be a JSON object")
    return config_values(raw, path.parent)


def config_values(raw: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """The ``LoadOptions`` fields a ghz config object sets."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _IGNORED:
            continue
        match key:
            case "call" | "host" | "name":
                out[key] = str(value)
            case "insecure" | "count-errors":
                out[key.replace("-", "_")] = bool(value)
            case "total" | "concurrency" | "connections" | "skipFirst":
                field = {"skipFirst": "skip_first"}.get(key, key)
                out[field] = int(value)
            case "rps" | "qps":
                out["rps"] = float(value)
            case "duration" | "max-duration":
                out["duration_s"] = parse_duration(value, key)
            case "timeout":
                out["timeout_s"] = parse_duration(value, key)
            case "connect-timeout":
                out["connect_timeout_s"] = parse_duration(value, key)
            case "data":
                out["data"] = value
            case "data-file":
                out["data"] = _json_file(base / str(value), key)
            case "metadata":
                out["metadata"] = value
            case "metadata-file":
                out["metadata"] = _json_file(base / str(value), key)
            case "cacert":
                out["cacert"] = base / str(value)
            case _:
                raise LoadConfigError(f"ghz config key {key!r} is not supported by tandem load")
    return out


def _json_file(path: Path, key: str) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise LoadConfigError(f"{key} {path}: {exc}") from None
