"""Request validation and settings: every bad field named; env variables named."""

from __future__ import annotations

import pytest

from services.common import InvalidArgument, SettingsError
from services.router import Mode, RouterSettings
from services.router._convert import ask_input
from tandem.v1 import router_service_pb2 as pb

SETTINGS = RouterSettings()


def test_defaults_fill_zero_options():
    ask = ask_input(pb.AskRequest(tenant_id="acme", question=" Hi there "), SETTINGS)
    assert ask.mode is Mode.AUTO and ask.question == "Hi there"
    assert ask.options.top_k == 8 and ask.options.max_tool_calls == 12


def test_every_violation_is_named_at_once():
    request = pb.AskRequest(
        tenant_id="",
        question="",
        options=pb.AskOptions(top_k=99, max_tool_calls=-1, max_rows=5000),
    )
    with pytest.raises(InvalidArgument) as caught:
        ask_input(request, SETTINGS)
    assert [v.field for v in caught.value.violations] == [
        "tenant_id",
        "question",
        "options.top_k",
        "options.max_tool_calls",
        "options.max_rows",
    ]


def test_settings_from_env_name_the_variable():
    settings = RouterSettings.from_env(
        {"RETRIEVAL_ADDR": "r:1", "SQL_ADDR": "s:2", "ROUTER_GUARD_OUTPUT_CHECK": "off"}
    )
    assert (settings.retrieval_addr, settings.sql_addr) == ("r:1", "s:2")
    assert not settings.guardrails.output_check and settings.guardrails.injection_scan
    with pytest.raises(SettingsError, match="ROUTER_MAX_REPLANS"):
        RouterSettings.from_env({"ROUTER_MAX_REPLANS": "3"})
    with pytest.raises(SettingsError, match="ROUTER_MAX_TOOL_CALLS"):
        RouterSettings.from_env({"ROUTER_MAX_TOOL_CALLS": "zero"})
