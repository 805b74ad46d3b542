"""``tandem backup`` and ``tandem restore``: the command line of ``services.backup``.

``tandem backup`` takes a physical base backup (``--logical``: ``pg_dump`` archives) of
the server ``tandem run`` uses (``DATABASE_URL``, else the embedded one under
``TANDEM_DATA_DIR``) into ``TANDEM_BACKUP_DIR``; ``tandem backup status`` says what a
restore can reach; ``tandem restore`` brings a backup back into a fresh data directory
(or, logical, an empty server) and prints the point in time it reached. Everything
printed is paths, names, LSNs and times: nothing of what the databases hold.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from services.cli._main import Commands


def register(commands: Commands) -> None:
    backup = commands.top.add_parser(
        "backup",
        help="back up the database: a base backup (+ WAL archive), or --logical pg_dump",
        description="Take a verified backup into TANDEM_BACKUP_DIR (or --dir).",
    )
    _dir(backup)
    backup.add_argument(
        "--logical", action="store_true", help="pg_dump -Fc of every database (no PITR)"
    )
    backup.add_argument(
        "--keep", type=int, default=None, help="keep only the newest N backups of this kind"
    )
    backup.add_argument("--json", action="store_true", help="print the result as JSON")
    backup.set_defaults(handler=_backup)
    actions = backup.add_subparsers(dest="action", required=False)
    state = actions.add_parser(
        "status", help="last base backup, last archived WAL, what is not archived yet"
    )
    _dir(state)
    state.add_argument(
        "--offline", action="store_true", help="read the backup directory only, not the server"
    )
    state.add_argument("--json", action="store_true", help="print the report as JSON")
    state.set_defaults(handler=_status)

    restore = commands.top.add_parser(
        "restore",
        help="restore a backup into a fresh data directory, to a point in time or the latest",
        description="Restore a base backup (+ archived WAL) or a logical backup.",
    )
    restore.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=None,
        help="a backup directory (its newest fitting backup) or one backup in it "
        "(default: TANDEM_BACKUP_DIR)",
    )
    restore.add_argument(
        "--to", type=Path, default=None, help="the new TANDEM_DATA_DIR (Postgres goes in <to>/pg)"
    )
    restore.add_argument(
        "--to-url", default=None, help="logical only: an empty server to restore into"
    )
    restore.add_argument(
        "--to-time",
        default=None,
        help="ISO time to recover to (UTC unless it names a zone); default: the latest",
    )
    restore.add_argument("--logical", action="store_true", help="restore a logical backup")
    restore.add_argument(
        "--force", action="store_true", help="replace a non-empty target (its data is lost)"
    )
    restore.add_argument("--json", action="store_true", help="print the result as JSON")
    restore.set_defaults(handler=_restore)

    drill = commands.bench.add_parser(
        "restore-drill",
        help="back up a private stack, write more, restore to a time T and to the latest "
        "into fresh data directories: counts and search results compared",
    )
    drill.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".tandem/bench-restore-drill"),
        help="where its stacks and backups go (emptied first)",
    )
    drill.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON report, markdown beside it (default bench/results/restore-drill-<commit>.json)",
    )
    drill.add_argument("--port-offset", type=int, default=3000, help="ports of its stacks")
    drill.set_defaults(handler=_restore_drill)


def _dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir", type=Path, default=None, help="the backup directory (default: TANDEM_BACKUP_DIR)"
    )


def _backup_dir(given: Path | None) -> Path:
    from services.backup import BackupError, BackupSettings  # noqa: PLC0415

    directory = given or BackupSettings.from_env().backup_dir
    if directory is None:
        raise BackupError("no backup directory: set TANDEM_BACKUP_DIR or pass --dir")
    return directory


def _server_url() -> str:
    from services.common import DatabaseSettings, resolve_url  # noqa: PLC0415

    return resolve_url(DatabaseSettings.from_env())


def _print(result: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    print(json.dumps(result, indent=2, default=str) if as_json else "\n".join(lines))


def _backup(args: argparse.Namespace) -> int:
    from services.backup import save_secrets, take_base_backup, take_logical_backup  # noqa: PLC0415
    from services.common import DatabaseSettings  # noqa: PLC0415

    directory = _backup_dir(args.dir)
    url = _server_url()
    if args.logical:
        logical = take_logical_backup(url, directory, keep=args.keep)
        result = {
            "kind": "logical",
            "path": str(logical.path),
            "databases": list(logical.databases),
            "bytes": logical.bytes,
        }
        lines = [
            f"logical backup {logical.path} ({logical.bytes / 1e6:.1f} MB): "
            + ", ".join(logical.databases)
        ]
    else:
        base = take_base_backup(url, directory, keep=args.keep)
        result = {
            "kind": "base",
            "path": str(base.path),
            "started": base.started.isoformat(),
            "start_wal": base.start_segment,
            "bytes": base.bytes,
        }
        lines = [
            f"base backup {base.path} ({base.bytes / 1e6:.1f} MB), verified; "
            f"starts at WAL {base.start_segment}"
        ]
    # The key pepper: without it the restored API keys would not verify.
    saved = save_secrets(DatabaseSettings.from_env().data_dir, directory)
    result["secrets"] = saved
    if saved:
        lines.append(f"secrets copied: {', '.join(saved)} (keep the backup private)")
    _print(result, args.json, lines)
    return 0


def _status(args: argparse.Namespace) -> int:
    from services.backup import status  # noqa: PLC0415

    report = status(_backup_dir(args.dir), None if args.offline else _server_url())
    lines = [
        f"backup directory   {report['backup_dir']}",
        f"last base backup   {report['last_base_backup'] or 'none'}"
        f" ({len(report['base_backups'])} kept)",
        f"last archived WAL  {report['last_archived_wal'] or 'none'}"
        + (f" at {report['last_archived_at']}" if report["last_archived_at"] else ""),
    ]
    pending = report.get("not_archived_yet")
    if report.get("archive_mode") == "off":
        lines.append("WAL archiving       OFF on the server: start `tandem run` with it set")
    if pending:
        lines.append(
            f"not archived yet   segment {pending['segment']} (up to LSN {pending['current_lsn']}):"
            " writes in it are not restorable until it is archived"
        )
    if report.get("last_failed_wal"):
        lines.append(
            f"ARCHIVING FAILED   {report['last_failed_wal']} at {report['last_failed_at']}"
        )
    window = report["restore_window"]
    lines.append(
        f"restore window     {window['from']} .. {window['to']}"
        if window
        else "restore window none"
    )
    _print(report, args.json, lines)
    return 0


def _time(value: str | None) -> datetime | None:
    from services.backup import BackupError  # noqa: PLC0415

    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise BackupError(f"--to-time: not an ISO time: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _restore(args: argparse.Namespace) -> int:
    from services.backup import (  # noqa: PLC0415
        BackupError,
        restore_base_backup,
        restore_logical_backup,
        restore_secrets,
        root_of,
    )

    source = args.source or _backup_dir(None)
    to_time = _time(args.to_time)
    secrets = restore_secrets(root_of(source), args.to, force=args.force) if args.to else []
    if args.logical:
        if to_time is not None:
            raise BackupError("--to-time needs a physical backup (a logical one is one moment)")
        if (args.to is None) == (args.to_url is None):
            raise BackupError("name one target: --to DIR (a fresh embedded server) or --to-url")
        url = args.to_url
        if url is None:
            from services.common import embedded_server_url  # noqa: PLC0415

            url = embedded_server_url(args.to)
        result = restore_logical_backup(source, url, force=args.force)
        lines = [
            f"restored logical backup {result['backup']} ({', '.join(result['databases'])}): "
            f"the data as of {result['reached']}"
        ]
    else:
        if args.to is None or args.to_url is not None:
            raise BackupError("a physical restore needs --to DIR (a fresh data directory)")
        restored = restore_base_backup(source, args.to / "pg", to_time=to_time, force=args.force)
        result = restored.as_dict()
        lines = [
            f"restored base backup {restored.base_backup} + archived WAL into {restored.data_dir}",
            f"target {restored.target}; reached the commit of {restored.reached or 'none'} "
            f"(timeline {restored.timeline})",
            f"start it: TANDEM_DATA_DIR={args.to} tandem run",
        ]
    if secrets:
        result["secrets"] = secrets
        lines.append(f"secrets restored into {args.to / 'secrets'}: {', '.join(secrets)}")
    _print(result, args.json, lines)
    return 0


def _restore_drill(args: argparse.Namespace) -> int:
    from services.bench.restore_drill import RestoreDrillSettings, commit  # noqa: PLC0415
    from services.bench.restore_drill import main as drill  # noqa: PLC0415

    out = args.out or Path(f"bench/results/restore-drill-{commit()}.json")
    results = drill(
        RestoreDrillSettings(data_dir=args.data_dir, out=out, port_offset=args.port_offset)
    )
    return 0 if results["target_met"] else 1
