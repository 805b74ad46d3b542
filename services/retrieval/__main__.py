"""``python -m services.retrieval``: run the retrieval service until SIGTERM."""

from __future__ import annotations

import asyncio

from services.retrieval._server import run_until_signalled

if __name__ == "__main__":
    asyncio.run(run_until_signalled())
