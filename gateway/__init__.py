"""The public gateway: authentication, tenants, quotas, validation, forwarding."""

from gateway._keys import (
    ALL_SCOPES,
    KEY_PREFIX,
    ApiKeys,
    IssuedKey,
    KeyRecord,
    Scope,
    parse_scopes,
)
from gateway._quota import TokenBuckets
from gateway._server import migrations
from gateway._settings import DEFAULT_PORT, GatewaySettings, Limits, key_pepper

__all__ = [
    "ALL_SCOPES",
    "DEFAULT_PORT",
    "KEY_PREFIX",
    "ApiKeys",
    "GatewaySettings",
    "IssuedKey",
    "KeyRecord",
    "Limits",
    "Scope",
    "TokenBuckets",
    "key_pepper",
    "migrations",
    "parse_scopes",
]
