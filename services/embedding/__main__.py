"""``python -m services.embedding``: run the embedding service until SIGTERM."""

from __future__ import annotations

from services.common import run_service
from services.embedding._server import run_until_signalled

if __name__ == "__main__":
    run_service(run_until_signalled)
