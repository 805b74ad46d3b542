"""``python -m gateway.edge``: render the edge's nginx configuration and run nginx.

nginx runs in the foreground as this process's child. SIGTERM and SIGINT become nginx's
graceful stop (SIGQUIT: stop accepting, let calls in flight finish, at most the grace
period), so the edge drains like every other service; this process exits with nginx's
status. Files live under ``$TANDEM_DATA_DIR/edge/<port>/``; the access log (no metadata,
no bodies) goes to ``EDGE_ACCESS_LOG`` (default: that directory's ``access.log``), which
this process rotates by size (``AccessLogRotation``: ``EDGE_ACCESS_LOG_MAX_BYTES``,
``EDGE_ACCESS_LOG_KEEP``) while nginx runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from gateway.edge import (
    ACCESS_LOG,
    AccessLogRotation,
    EdgeSettings,
    main_config,
    nginx_binary,
    render,
    run_dir,
    template_variables,
)
from services.common import Env


def main() -> int:
    env = Env()
    settings = EdgeSettings.from_env()
    binary = nginx_binary(settings)
    if binary is None or not binary.exists():
        print(
            "edge: no nginx found; run `make edge` (builds it into the virtualenv) or set "
            "EDGE_NGINX",
            file=sys.stderr,
        )
        return 2
    files = run_dir(Path(env.get_str("TANDEM_DATA_DIR", ".tandem")), settings.port)
    files.mkdir(parents=True, exist_ok=True)
    access_log = env.get_str("EDGE_ACCESS_LOG", str(files / ACCESS_LOG))
    http_config = files / "tandem-edge.conf"
    http_config.write_text(render(template_variables(settings, access_log)), encoding="utf-8")
    config = files / "nginx.conf"
    config.write_text(main_config(settings, files, http_config), encoding="utf-8")
    if not (Path(settings.playground_dir) / "index.html").is_file():
        print(
            f"edge: no playground page in {settings.playground_dir} (`make web` builds it); "
            "until then `/` answers 404",
            file=sys.stderr,
        )
    nginx = subprocess.Popen([str(binary), "-p", str(files), "-e", "stderr", "-c", str(config)])

    def graceful(_signum: int, _frame: object) -> None:
        if nginx.poll() is None:
            nginx.send_signal(signal.SIGQUIT)

    signal.signal(signal.SIGTERM, graceful)
    signal.signal(signal.SIGINT, graceful)
    print(f"edge: nginx {binary} on {settings.listen} -> gateway {settings.upstream}", flush=True)
    rotation = AccessLogRotation.of(access_log, settings)
    if rotation is not None:
        # A thread that wakes once a check interval: waiting on nginx stays a blocking
        # wait (no polling loop in the main thread, whose signal handlers still run).
        threading.Thread(
            target=_rotate_forever, args=(rotation, settings.access_log_check_s), daemon=True
        ).start()
    return nginx.wait()


def _rotate_forever(rotation: AccessLogRotation, every_s: float) -> None:
    while True:
        time.sleep(every_s)
        try:
            if rotation.due():
                rotation.rotate()
        except OSError as exc:  # a full disk, the file moved away: try again next time
            print(f"edge: access log not rotated: {exc}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(main())
