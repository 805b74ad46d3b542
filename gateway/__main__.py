"""``python -m gateway``: run the public gateway until SIGTERM."""

from __future__ import annotations

import asyncio

from gateway._server import run_until_signalled

if __name__ == "__main__":
    asyncio.run(run_until_signalled())
