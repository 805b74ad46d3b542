"""Vega-Lite v5's own JSON schema (as shipped in altair) for validating chart specs."""

from __future__ import annotations

import functools
import importlib.resources
import json
from typing import Any

import jsonschema


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    text = (
        importlib.resources.files("altair.vegalite.v5.schema")
        .joinpath("vega-lite-schema.json")
        .read_text(encoding="utf-8")
    )
    schema = json.loads(text)
    return jsonschema.validators.validator_for(schema)(schema)


def schema_errors(spec: dict[str, Any]) -> list[str]:
    """Every way ``spec`` breaks the Vega-Lite v5 schema (empty when it is valid)."""
    return [error.message for error in _validator().iter_errors(spec)]
