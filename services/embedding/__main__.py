"""``python -m services.embedding``: run the embedding service until SIGTERM."""

from __future__ import annotations

import asyncio

from services.embedding._server import run_until_signalled

if __name__ == "__main__":
    asyncio.run(run_until_signalled())
