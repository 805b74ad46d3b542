"""``python -m services.retrieval._extract_main MEMORY_BYTES``: one extraction worker.

A module of its own, which the package does not import, so that running it does not
re-execute a module already loaded with the package (see ``_extract_worker``).
"""

from __future__ import annotations

import sys

from services.retrieval._extract_worker import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
