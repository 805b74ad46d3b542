"""``python -m gateway``: run the public gateway until SIGTERM."""

from __future__ import annotations

from gateway._server import run_until_signalled
from gateway._upload import return_large_blocks
from services.common import run_service

if __name__ == "__main__":
    return_large_blocks()  # uploads' pieces go back to the system when freed
    run_service(run_until_signalled)
