"""Settings fail fast with the variable's name; defaults apply when unset."""

from __future__ import annotations

import pytest

from services.common import Env, ServerSettings, SettingsError, TelemetrySettings


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
