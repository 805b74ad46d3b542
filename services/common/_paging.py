"""Page tokens (AIP-158): opaque to clients, a few fields of the last row served inside.

A token is the URL-safe base64 of its parts joined by ``|``; what the parts mean (a
timestamp and an id, an event id and a digest of the filters) is each listing's own. A
token that does not decode into what the listing expects is INVALID_ARGUMENT naming
``page_token``, never a server error.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TypeVar

from services.common._errors import InvalidArgument

T = TypeVar("T")


def encode_page_token(*parts: object) -> str:
    """The token carrying ``parts`` (none of which may hold ``|``)."""
    raw = "|".join(str(p) for p in parts).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(
    token: str,
    parse: Callable[[list[str]], T],
    *,
    description: str = "not a token this RPC issued",
) -> T:
    """``parse`` of the token's parts; INVALID_ARGUMENT naming ``page_token`` when the token
    is not base64 text or ``parse`` raises ValueError (a wrong count, an unreadable part)."""
    try:
        padded = token + "=" * (-len(token) % 4)
        return parse(base64.urlsafe_b64decode(padded).decode().split("|"))
    except (ValueError, UnicodeDecodeError):
        raise InvalidArgument.field("page_token", description) from None
