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
    nginx = subprocess.Popen([str(binary), "-p", str(files), "-e", "stderr", "-c", str(config)])

    def graceful(_signum: int, _frame: object) -> None:
        if nginx.poll() is None:
            nginx.send_signal(signal.SIGQUIT)

    signal.signal(signal.SIGTERM, graceful)
    signal.signal(signal.SIGINT, graceful)
    print(f"edge: nginx {binary} on {settings.listen} -> gateway {settings.upstream}", flush=True)
    rotation = AccessLogRotation.of(access_log, settings)
    while True:
        try:
            return nginx.wait(timeout=settings.access_log_check_s)
        except subprocess.TimeoutExpired:
            if rotation is not None and rotation.due():
                rotation.rotate()


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(main())
