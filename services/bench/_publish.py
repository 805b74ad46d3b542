"""How a benchmark leaves its result: the table printed, the JSON written beside it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def publish(results: Mapping[str, Any], table: str, out: Path) -> None:
    """Print ``table``, write ``results`` as JSON to ``out`` and say where."""
    print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")
