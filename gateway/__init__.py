"""The public gateway: authentication, tenants, quotas, validation, forwarding."""

from gateway._keys import KEY_PREFIX, ApiKeys, IssuedKey, KeyRecord
from gateway._quota import TokenBuckets

__all__ = ["KEY_PREFIX", "ApiKeys", "IssuedKey", "KeyRecord", "TokenBuckets"]
