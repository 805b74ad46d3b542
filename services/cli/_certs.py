"""``tandem certs``: the internal CA and the services' certificates, for deployments that
do not start through ``tandem run`` (which issues them itself on first start).

``issue`` creates what is missing (and renews what expires within 30 days) and, with
``--split``, one folder per service holding only that service's key: the content of its
Kubernetes secret or compose mount. Rotation: issue into a new folder, replace the
secrets, restart the deployments (callers reconnect; each side trusts the new CA then).
"""

from __future__ import annotations

import argparse
import datetime
import os
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography import x509

from services.common import IDENTITIES, ensure_directory, tls_directory, write_bundles

if TYPE_CHECKING:
    from services.cli._main import Commands


def _directory(args: argparse.Namespace) -> Path:
    if args.dir:
        return Path(args.dir).resolve()
    found = tls_directory(os.environ)
    if found is None:
        raise SystemExit("error: TANDEM_INSECURE_INTERNAL is set: there is no TLS directory")
    return found


def _issue(args: argparse.Namespace) -> int:
    directory = _directory(args)
    issued = ensure_directory(directory, hosts=args.host or ())
    print(f"{directory}: " + (f"issued {', '.join(issued)}" if issued else "all current"))
    if args.split:
        for bundle in write_bundles(directory):
            print(f"  {bundle}/  (mount as the {bundle.name} service's TANDEM_TLS_DIR)")
    return 0


def _show(args: argparse.Namespace) -> int:
    directory = _directory(args)
    now = datetime.datetime.now(datetime.UTC)
    for name in ("ca", *IDENTITIES):
        path = directory / f"{name}.pem"
        if not path.is_file():
            print(f"  {name:<11} missing")
            continue
        cert = x509.load_pem_x509_certificate(path.read_bytes())
        left = (cert.not_valid_after_utc - now).days
        print(f"  {name:<11} {cert.subject.rfc4514_string():<16} expires in {left} days")
    return 0


def register(commands: Commands) -> None:
    certs = commands.top.add_parser(
        "certs", help="the internal CA and each service's mutual-TLS certificate"
    )
    sub = certs.add_subparsers(dest="action", required=True)
    issue = sub.add_parser("issue", help="create the CA and every missing or expiring certificate")
    issue.add_argument(
        "dir", nargs="?", help="where (default: TANDEM_TLS_DIR, else <TANDEM_DATA_DIR>/tls)"
    )
    issue.add_argument(
        "--host",
        action="append",
        help="an extra name or IP every certificate is valid for (repeatable)",
    )
    issue.add_argument(
        "--split", action="store_true", help="also write one folder per service (its secret)"
    )
    issue.set_defaults(handler=_issue)
    show = sub.add_parser("show", help="each certificate's identity and expiry")
    show.add_argument("dir", nargs="?", help="default: TANDEM_TLS_DIR, else <TANDEM_DATA_DIR>/tls")
    show.set_defaults(handler=_show)
