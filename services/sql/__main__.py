"""``python -m services.sql``: run the SQL service until SIGTERM."""

from __future__ import annotations

import asyncio

from services.sql._server import run_until_signalled

if __name__ == "__main__":
    asyncio.run(run_until_signalled())
