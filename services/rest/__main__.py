"""``python -m services.rest``: the HTTP/JSON face (``tandem run`` starts it beside the
gateway, behind the edge). ``--openapi FILE`` writes the OpenAPI document and exits."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from services.common import run_service
from services.rest._openapi import load_comments, openapi_document, render
from services.rest._routes import gateway_routes
from services.rest._settings import RestSettings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.rest")
    parser.add_argument("--openapi", metavar="FILE", help="write the OpenAPI document and exit")
    args = parser.parse_args(argv)
    if args.openapi:
        Path(args.openapi).write_bytes(render(openapi_document(gateway_routes(), load_comments())))
        return 0
    from services.rest._server import serve  # noqa: PLC0415

    settings = RestSettings.from_env()
    run_service(lambda: serve(settings))  # uvloop by default, as every service
    return 0


if __name__ == "__main__":
    sys.exit(main())
