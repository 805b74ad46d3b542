"""Call resolution, call data, metadata, durations and ghz config files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.load import (
    LoadConfigError,
    RequestFactory,
    from_ghz_config,
    parse_duration,
    parse_metadata,
    resolve_method,
)
from tandem.v1 import gateway_service_pb2 as gateway_pb


@pytest.mark.parametrize(
    "call", ["tandem.v1.GatewayService.Search", "tandem.v1.GatewayService/Search"]
)
def test_both_ghz_call_forms_resolve(call: str) -> None:
    method = resolve_method(call)

    assert method.path == "/tandem.v1.GatewayService/Search"
    assert method.request_class.DESCRIPTOR.full_name == "tandem.v1.GatewayServiceSearchRequest"
    assert not method.server_streaming


def test_streaming_shape_comes_from_the_descriptor() -> None:
    assert resolve_method("tandem.v1.GatewayService.StreamAsk").server_streaming


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("tandem.v1.NoSuchService.Search", "unknown service"),
        ("tandem.v1.GatewayService.Nope", "has no method 'Nope'"),
        ("Search", "must be 'package.Service.Method'"),
    ],
)
def test_a_bad_call_names_the_problem(call: str, message: str) -> None:
    with pytest.raises(LoadConfigError, match=message):
        resolve_method(call)


def test_json_data_becomes_the_request_message() -> None:
    method = resolve_method("tandem.v1.GatewayService.Ask")
    factory = RequestFactory(method, {"question": "who?", "mode": "ASK_MODE_RETRIEVE"})

    request = gateway_pb.GatewayServiceAskRequest.FromString(factory.build(0, "0"))
    assert request.question == "who?"
    assert request.mode == 2


def test_data_that_does_not_fit_the_message_is_refused_up_front() -> None:
    method = resolve_method("tandem.v1.GatewayService.Search")
    with pytest.raises(LoadConfigError, match="no_such_field"):
        RequestFactory(method, {"no_such_field": 1})


def test_metadata_expands_environment_references() -> None:
    env = {"KEY": "tdm_x"}
    assert parse_metadata({"Authorization": "Bearer ${KEY}"}, env) == (
        ("authorization", "Bearer tdm_x"),
    )
    with pytest.raises(LoadConfigError, match=r"\$\{MISSING\}"):
        parse_metadata({"authorization": "Bearer ${MISSING}"}, env)
    with pytest.raises(LoadConfigError, match="object of strings"):
        parse_metadata({"n": 1}, env)


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("10s", 10.0), ("1m30s", 90.0), ("250ms", 0.25), ("1h", 3600.0), ("2.5", 2.5), (3, 3.0)],
)
def test_go_durations_parse(raw: str | int, seconds: float) -> None:
    assert parse_duration(raw) == pytest.approx(seconds)


def test_a_bad_duration_is_refused() -> None:
    with pytest.raises(LoadConfigError, match="not a duration"):
        parse_duration("ten seconds")


def test_a_ghz_config_maps_to_options(tmp_path: Path) -> None:
    (tmp_path / "data.json").write_text('{"query": "q"}')
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps(
            {
                "proto": "ignored.proto",
                "call": "tandem.v1.GatewayService.Search",
                "host": "h:1",
                "insecure": True,
                "concurrency": 8,
                "total": 100,
                "rps": 50,
                "duration": "30s",
                "timeout": "2s",
                "data-file": "data.json",
                "metadata": {"authorization": "Bearer ${K}"},
                "skipFirst": 5,
            }
        )
    )

    values = from_ghz_config(config)
    assert values == {
        "call": "tandem.v1.GatewayService.Search",
        "host": "h:1",
        "insecure": True,
        "concurrency": 8,
        "total": 100,
        "rps": 50.0,
        "duration_s": 30.0,
        "timeout_s": 2.0,
        "data": {"query": "q"},
        "metadata": {"authorization": "Bearer ${K}"},
        "skip_first": 5,
    }


def test_an_unknown_config_key_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text('{"load-schedule": "step"}')
    with pytest.raises(LoadConfigError, match="load-schedule"):
        from_ghz_config(config)
