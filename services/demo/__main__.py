"""``python -m services.demo load|status|show|write``."""

from __future__ import annotations

import sys

from services.demo._cli import main

sys.exit(main())
