"""The public gateway: authentication, tenants, quotas, validation, forwarding."""

from gateway._keys import KEY_PREFIX, ApiKeys, IssuedKey, KeyRecord
from gateway._quota import TokenBuckets
from gateway._settings import DEFAULT_PORT, GatewaySettings, Limits, key_pepper

__all__ = [
    "DEFAULT_PORT",
    "KEY_PREFIX",
    "ApiKeys",
    "GatewaySettings",
    "IssuedKey",
    "KeyRecord",
    "Limits",
    "TokenBuckets",
    "key_pepper",
]
