"""The HTTP/JSON face: gRPC transcoding of GatewayService (``google.api.http``
annotations), served by ``python -m services.rest`` behind the edge, with its OpenAPI
document at ``/openapi.json``. A client of the gateway like any other: every call goes
through the gateway's checks with the caller's own key."""

from services.rest._app import FORWARDED_HEADERS, TIMEOUT_HEADER, Transcoder, message_json
from services.rest._errors import HTTP_STATUS, http_status, status_json
from services.rest._openapi import DESCRIPTOR_SET, load_comments, openapi_document, render
from services.rest._routes import HttpRoute, RouteError, gateway_routes, route_of, rule_of
from services.rest._server import build_app, gateway_channel, serve
from services.rest._settings import DEFAULT_PORT, RestSettings

__all__ = [
    "DEFAULT_PORT",
    "DESCRIPTOR_SET",
    "FORWARDED_HEADERS",
    "HTTP_STATUS",
    "TIMEOUT_HEADER",
    "HttpRoute",
    "RestSettings",
    "RouteError",
    "Transcoder",
    "build_app",
    "gateway_channel",
    "gateway_routes",
    "http_status",
    "load_comments",
    "message_json",
    "openapi_document",
    "render",
    "route_of",
    "rule_of",
    "serve",
    "status_json",
]
