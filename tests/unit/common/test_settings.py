"""Settings fail fast with the variable's name; defaults apply when unset."""

from __future__ import annotations

import pytest

from services.common import Deadlines, Env, ServerSettings, SettingsError, TelemetrySettings


def test_defaults_when_unset():
    settings = ServerSettings.from_env("embedding", 50054, environ={})
    assert (settings.host, settings.port, settings.default_deadline_s) == ("127.0.0.1", 50054, 30.0)


def test_service_prefixed_port_and_shared_knobs():
    settings = ServerSettings.from_env(
        "embedding", 50054, environ={"EMBEDDING_PORT": "6000", "GRPC_GRACE_PERIOD_S": "2.5"}
    )
    assert (settings.port, settings.grace_period_s) == (6000, 2.5)


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"EMBEDDING_PORT": "http"}, "EMBEDDING_PORT"),
        ({"EMBEDDING_PORT": "-1"}, "EMBEDDING_PORT"),
        ({"GRPC_DEFAULT_DEADLINE_S": "soon"}, "GRPC_DEFAULT_DEADLINE_S"),
        ({"GRPC_MAX_MESSAGE_BYTES": "10"}, "GRPC_MAX_MESSAGE_BYTES"),
    ],
)
def test_bad_values_name_the_variable(environ, variable):
    with pytest.raises(SettingsError, match=variable):
        ServerSettings.from_env("embedding", 50054, environ=environ)


def test_log_level_and_bool_parsing():
    with pytest.raises(SettingsError, match="LOG_LEVEL"):
        TelemetrySettings.from_env("x", environ={"LOG_LEVEL": "LOUD"})
    env = Env({"A": "yes", "B": "off", "C": "maybe"})
    assert env.get_bool("A", False) is True
    assert env.get_bool("B", True) is False
    assert env.get_bool("MISSING", True) is True
    with pytest.raises(SettingsError, match="C must be a boolean"):
        env.get_bool("C", False)


def test_a_connection_past_its_age_keeps_its_calls_for_the_longest_deadline():
    """Issue 46 item 7: the grace was a fixed 30 s under a 300 s ingest deadline."""
    defaults = ServerSettings.from_env("retrieval", 50053, {})
    assert defaults.longest_deadline_s == 300.0
    assert defaults.connection_age_grace_s >= 300.0
    longer = ServerSettings.from_env(
        "retrieval", 50053, {"GATEWAY_INGEST_DEADLINE_S": "900", "GRPC_MAX_CONNECTION_AGE_S": "60"}
    )
    assert longer.connection_age_grace_s >= 900.0 and longer.max_connection_age_s == 60.0
    assert longer.max_deadline_s is None  # internal servers honour what they are asked
    assert Deadlines.from_env({"GRPC_DEFAULT_DEADLINE_S": "600"}).longest_s == 600.0
