"""The event loop a service process runs on.

uvloop by default: every hop of a request is mostly event-loop and gRPC plumbing (socket
readiness, callbacks, the wake-ups of grpc.aio's completion-queue poller), and uvloop
runs that part in C. Side by side on the demo stack it cut the CPU per request of every
gateway RPC (AskSql the most). ``TANDEM_EVENT_LOOP=asyncio`` keeps the standard loop, for
a platform without uvloop or to compare.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from services.common._settings import Env, SettingsError

EVENT_LOOP_VARIABLE = "TANDEM_EVENT_LOOP"
_KINDS = ("uvloop", "asyncio")


def event_loop_kind(environ: Mapping[str, str] | None = None) -> str:
    """``uvloop`` (the default) or ``asyncio``; anything else names the variable."""
    kind = Env(environ).get_str(EVENT_LOOP_VARIABLE, "uvloop").strip().lower()
    if kind not in _KINDS:
        raise SettingsError(
            f"{EVENT_LOOP_VARIABLE} must be one of {', '.join(_KINDS)}, got {kind!r}"
        )
    return kind


def run_service(
    main: Callable[[], Coroutine[Any, Any, None]], environ: Mapping[str, str] | None = None
) -> None:
    """Run a service's main coroutine to completion on the configured event loop."""
    if event_loop_kind(environ) == "uvloop":
        try:
            import uvloop  # noqa: PLC0415 - optional on platforms without it
        except ImportError:
            raise SettingsError(
                f"{EVENT_LOOP_VARIABLE}=uvloop but uvloop is not installed; install it "
                f"or set {EVENT_LOOP_VARIABLE}=asyncio"
            ) from None
        uvloop.run(main())
        return
    asyncio.run(main())


def running_loop_kind() -> str:
    """What the running loop is (``uvloop`` or ``asyncio``), for the startup log line."""
    return type(asyncio.get_running_loop()).__module__.split(".", 1)[0]
