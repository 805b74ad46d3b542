"""The ghz config files parse, name RPCs that exist, and carry data that fits them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.load import RequestFactory, from_ghz_config, resolve_method
from tests.unit.infra.conftest import INFRA

CONFIGS = sorted((INFRA / "ghz").glob("*.json"))


def test_the_main_gateway_calls_have_configs() -> None:
    calls = {json.loads(p.read_text())["call"] for p in CONFIGS}
    assert {
        "tandem.v1.GatewayService.Search",
        "tandem.v1.GatewayService.Ask",
        "tandem.v1.GatewayService.AskSql",
    } <= calls


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_names_a_real_rpc_and_valid_data(path: Path) -> None:
    values = from_ghz_config(path)
    method = resolve_method(values["call"])
    factory = RequestFactory(method, values["data"])

    assert method.path.startswith("/tandem.v1.GatewayService/")
    assert factory.build(0, "0")
    assert values["insecure"] is True
    assert values["host"].endswith(":50051")
    # The key comes from the environment, never from the file.
    assert values["metadata"] == {"authorization": "Bearer ${TANDEM_API_KEY}"}


def test_the_ask_config_uses_retrieve_mode() -> None:
    values = from_ghz_config(INFRA / "ghz" / "ask_retrieve.json")
    assert {item["mode"] for item in values["data"]} == {"ASK_MODE_RETRIEVE"}
