"""Serving the face: one uvicorn server (HTTP/1.1) on REST_HOST:REST_PORT, one gRPC
channel to the gateway shared by every request. The edge (nginx) sits in front of it,
so rate limiting by key, TLS and HTTP/2 to browsers are the edge's."""

from __future__ import annotations

import logging
import sys

import grpc

from services.common import configure_logging, running_loop_kind
from services.rest._app import Transcoder
from services.rest._openapi import load_comments, openapi_document, render
from services.rest._routes import gateway_routes
from services.rest._settings import RestSettings

_log = logging.getLogger("services.rest")
# The web server's loggers would print request lines (paths hold document ids); they
# stay at WARNING whatever LOG_LEVEL says, and the access log is off.
_QUIET_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


def gateway_channel(settings: RestSettings) -> grpc.aio.Channel:
    """The channel to the gateway: its own message limit both ways, quick reconnects
    after a gateway restart. No retry policy: a retry is the caller's decision, as for
    any external client (Ask is not idempotent)."""
    limit = settings.max_body_bytes
    return grpc.aio.insecure_channel(
        settings.gateway,
        options=[
            ("grpc.max_send_message_length", limit),
            ("grpc.max_receive_message_length", limit),
            ("grpc.keepalive_time_ms", 30_000),
            ("grpc.keepalive_timeout_ms", 10_000),
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 2_000),
            ("grpc.enable_retries", 0),
        ],
    )


def build_app(channel: grpc.aio.Channel, settings: RestSettings) -> Transcoder:
    """The face over ``channel``: every GatewayService route and the OpenAPI document."""
    routes = gateway_routes()
    document = render(openapi_document(routes, load_comments()))
    return Transcoder(channel, routes, settings, document)


async def serve(settings: RestSettings) -> None:
    """Serve until SIGTERM/SIGINT (uvicorn's graceful stop: requests in flight finish)."""
    import uvicorn  # noqa: PLC0415 — only the process needs it, not the generator

    configure_logging("rest", settings.log_level, sys.stderr)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
    channel = gateway_channel(settings)
    app = build_app(channel, settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=10,
        # Longer than the edge's upstream keepalive_timeout (60 s): nginx must close an
        # idle connection before the face does, or it may send a request on a connection
        # the face is closing (a 502 for the caller).
        timeout_keep_alive=75,
        server_header=False,
    )
    _log.info(
        "listening",
        extra={
            "fields": {
                "port": settings.port,
                "gateway": settings.gateway,
                "transport": "http",
                "event_loop": running_loop_kind(),
            }
        },
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        await channel.close()
