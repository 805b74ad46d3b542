"""A service process runs on uvloop unless ``TANDEM_EVENT_LOOP=asyncio`` says otherwise; a
misspelt value fails at start naming the variable; the startup line says which loop."""

from __future__ import annotations

import asyncio
import builtins
import logging
from typing import Any

import pytest

from services.common import ServerSettings, SettingsError, Telemetry, TelemetrySettings
from services.common._event_loop import event_loop_kind, run_service, running_loop_kind
from services.common._server import GrpcServer


def _loop_of_a_run(environ: dict[str, str]) -> str:
    seen: list[str] = []

    async def main() -> None:
        seen.append(type(asyncio.get_running_loop()).__module__)

    run_service(main, environ)
    return seen[0]


def test_uvloop_is_the_default():
    assert event_loop_kind({}) == "uvloop"
    assert _loop_of_a_run({}).startswith("uvloop")


def test_asyncio_keeps_the_standard_loop():
    assert event_loop_kind({"TANDEM_EVENT_LOOP": " Asyncio "}) == "asyncio"
    assert _loop_of_a_run({"TANDEM_EVENT_LOOP": "asyncio"}).startswith("asyncio")


def test_an_unknown_loop_names_the_variable_and_runs_nothing():
    ran: list[bool] = []

    async def main() -> None:
        ran.append(True)

    with pytest.raises(SettingsError, match="TANDEM_EVENT_LOOP must be one of uvloop, asyncio"):
        run_service(main, {"TANDEM_EVENT_LOOP": "trio"})
    assert ran == []


def test_uvloop_asked_for_but_missing_says_how_to_go_on(monkeypatch):
    real_import = builtins.__import__

    def without_uvloop(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "uvloop":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_uvloop)

    async def main() -> None:
        pass

    with pytest.raises(SettingsError, match="TANDEM_EVENT_LOOP=asyncio"):
        run_service(main, {})


def test_the_listening_line_names_the_loop(caplog):
    async def main() -> None:
        telemetry = Telemetry(TelemetrySettings("loop-test"))
        server = GrpcServer(ServerSettings("loop-test"), telemetry)
        await server.start()
        await server.stop(0)
        telemetry.shutdown()
        assert running_loop_kind() == "uvloop"

    with caplog.at_level(logging.INFO, logger="tandem"):
        run_service(main, {})
    listening = [r for r in caplog.records if r.getMessage() == "listening"]
    assert [r.fields["event_loop"] for r in listening] == ["uvloop"]
