"""``python -m gateway``: run the public gateway until SIGTERM."""

from __future__ import annotations

from gateway._server import run_until_signalled
from services.common import run_service

if __name__ == "__main__":
    run_service(run_until_signalled)
