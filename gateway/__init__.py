"""The public gateway: authentication, tenants, quotas, validation, forwarding."""

from gateway._keys import (
    ALL_SCOPES,
    KEY_PREFIX,
    ApiKeys,
    Caller,
    IssuedKey,
    KeyRecord,
    Scope,
    key_kind,
    parse_scopes,
)
from gateway._quota import TokenBuckets

# Not ``migrations``: that name is the package holding the SQL files, which an import of
# it would bind over the function.
from gateway._schema import key_administration
from gateway._schema import migrations as schema_migrations
from gateway._settings import DEFAULT_PORT, GatewaySettings, Limits, UploadSettings, key_pepper

__all__ = [
    "ALL_SCOPES",
    "DEFAULT_PORT",
    "KEY_PREFIX",
    "ApiKeys",
    "Caller",
    "GatewaySettings",
    "IssuedKey",
    "KeyRecord",
    "Limits",
    "Scope",
    "TokenBuckets",
    "UploadSettings",
    "key_administration",
    "key_kind",
    "key_pepper",
    "parse_scopes",
    "schema_migrations",
]
