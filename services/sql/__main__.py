"""``python -m services.sql``: run the SQL service until SIGTERM."""

from __future__ import annotations

import sys

from services.common import SettingsError, run_service
from services.sql._server import run_until_signalled

if __name__ == "__main__":
    try:
        run_service(run_until_signalled)
    except SettingsError as exc:
        # A configuration the operator must fix (a variable, an unsafe role): one line,
        # already logged in full; a traceback would only bury it.
        print(f"tandem-sql: {exc}", file=sys.stderr)
        sys.exit(2)
