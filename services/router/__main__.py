"""``python -m services.router``: run the router service until SIGTERM."""

from __future__ import annotations

import asyncio

from services.router._server import run_until_signalled

if __name__ == "__main__":
    asyncio.run(run_until_signalled())
