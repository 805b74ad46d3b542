"""The edge's configuration (gateway.edge): settings from the environment, the precomputed
trailers-only refusals, the filled nginx template, and nginx itself checking the result."""

from __future__ import annotations

import base64
import math
import re
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from gateway import edge
from gateway._admission import CANONICAL_AUTHORIZATION, malformed_authorization
from gateway._quota import quota_exceeded
from gateway.edge import (
    NGINX_LOG_BUFFER,
    TEMPLATE,
    AccessLogRotation,
    EdgeSettings,
    main_config,
    nginx_binary,
    refusal_variables,
    render,
    template_variables,
)
from services.common import SettingsError, Unavailable, status_for

_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# nginx's own variables the template uses; filling it must leave every one alone.
NGINX_VARIABLES = (
    "$http_authorization",
    "$time_iso8601",
    "$uri",
    "$status",
    "$sent_http_grpc_status",
    "$upstream_trailer_grpc_status",
    "$edge_reply",
    "$request_time",
    "$upstream_response_time",
)


def _directives(text: str) -> str:
    """The configuration without its comments (which show the ``${LIKE_THIS}`` syntax)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _status(header: str) -> status_pb2.Status:
    """A ``grpc-status-details-bin`` value as gRPC decodes it (padding optional)."""
    assert "=" not in header
    padded = header + "=" * (-len(header) % 4)
    return status_pb2.Status.FromString(base64.b64decode(padded, validate=True))


def _retry_delay_ns(status: status_pb2.Status) -> int:
    retries = []
    for detail in status.details:
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(retry):
            retries.append(int(retry.retry_delay.ToNanoseconds()))
    assert len(retries) == 1, status
    return retries[0]


def _error_infos(status: status_pb2.Status) -> list[error_details_pb2.ErrorInfo]:
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            infos.append(info)
    return infos


# -- settings ---------------------------------------------------------------------------


def test_defaults_are_the_gateways_quota_and_match_the_dataclass():
    settings = EdgeSettings.from_env({})
    assert settings == EdgeSettings()
    assert settings.listen == f"0.0.0.0:{edge.DEFAULT_PORT}"
    assert settings.upstream == "127.0.0.1:50051"
    assert settings.quota_rate_per_s == 20.0
    assert settings.rate_per_s == 20.0
    assert settings.burst == 40
    assert settings.nginx is None


@pytest.mark.parametrize(
    ("rate", "burst", "edge_rate", "edge_burst"),
    [("5", "20", 5.0, 20), ("0.5", "7.3", 0.5, 8), ("50", "1", 50.0, 1)],
)
def test_defaults_follow_the_gateways_quota(
    rate: str, burst: str, edge_rate: float, edge_burst: int
) -> None:
    settings = EdgeSettings.from_env({"GATEWAY_RATE_PER_S": rate, "GATEWAY_BURST": burst})
    assert settings.quota_rate_per_s == float(rate)
    assert settings.rate_per_s == edge_rate
    # ceil(burst): a fractional gateway burst never gives the edge less than it.
    assert settings.burst == edge_burst == math.ceil(float(burst))


def test_every_setting_can_be_overridden():
    settings = EdgeSettings.from_env(
        {
            "GATEWAY_RATE_PER_S": "5",
            "GATEWAY_BURST": "20",
            "EDGE_RATE_PER_S": "5",  # equal to the quota is allowed
            "EDGE_BURST": "0",
            "EDGE_HOST": "127.0.0.1",
            "EDGE_PORT": "8443",
            "GATEWAY_ADDR": "gateway:50051",
            "EDGE_WORKERS": "4",
            "GRPC_GRACE_PERIOD_S": "2.5",
            "EDGE_NGINX": "/opt/nginx/sbin/nginx",
        }
    )
    assert settings == EdgeSettings(
        listen="127.0.0.1:8443",
        upstream="gateway:50051",
        rate_per_s=5.0,
        burst=0,
        quota_rate_per_s=5.0,
        workers=4,
        grace_s=2.5,
        nginx="/opt/nginx/sbin/nginx",
    )


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"GATEWAY_RATE_PER_S": "5", "EDGE_RATE_PER_S": "4.9"}, "EDGE_RATE_PER_S"),
        ({"EDGE_RATE_PER_S": "10"}, "EDGE_RATE_PER_S"),  # below the default quota, 20
        ({"EDGE_RATE_PER_S": "fast"}, "EDGE_RATE_PER_S"),
        ({"EDGE_RATE_PER_S": "nan"}, "EDGE_RATE_PER_S"),
        ({"EDGE_PORT": "0"}, "EDGE_PORT"),
        ({"EDGE_PORT": "65536"}, "EDGE_PORT"),
        ({"EDGE_PORT": "http"}, "EDGE_PORT"),
        ({"EDGE_BURST": "-1"}, "EDGE_BURST"),
        ({"EDGE_BURST": "2.5"}, "EDGE_BURST"),
        ({"EDGE_WORKERS": "0"}, "EDGE_WORKERS"),
        ({"GATEWAY_RATE_PER_S": "0"}, "GATEWAY_RATE_PER_S"),
        ({"GATEWAY_BURST": "many"}, "GATEWAY_BURST"),
        ({"GRPC_GRACE_PERIOD_S": "-1"}, "GRPC_GRACE_PERIOD_S"),
    ],
)
def test_bad_values_fail_fast_naming_the_variable(environ: dict[str, str], variable: str) -> None:
    with pytest.raises(SettingsError, match=f"^{variable} "):
        EdgeSettings.from_env(environ)


# -- the precomputed refusals -----------------------------------------------------------


@pytest.mark.parametrize(
    ("quota", "delay_ms"),
    [(20.0, 50), (3.0, 334), (0.5, 2000), (7.0, 143), (1000.0, 1), (3000.0, 1)],
)
def test_over_quota_is_the_gateways_own_refusal(quota: float, delay_ms: int) -> None:
    variables = refusal_variables(quota)
    status = _status(variables["EDGE_QUOTA_STATUS"])
    # One quota interval, rounded up to whole milliseconds (never zero).
    assert delay_ms == max(1, math.ceil(1000 / quota))
    assert _retry_delay_ns(status) == delay_ms * 1_000_000
    assert status == status_for(quota_exceeded(delay_ms / 1000))
    assert status.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
    [info] = _error_infos(status)
    assert (info.reason, info.domain) == ("QUOTA_EXCEEDED", "tandem")
    assert urllib.parse.unquote(variables["EDGE_QUOTA_MESSAGE"]) == status.message


def test_gateway_unavailable_is_unavailable_with_retry_info():
    variables = refusal_variables(20.0)
    status = _status(variables["EDGE_UNAVAILABLE_STATUS"])
    assert status == status_for(Unavailable(edge.UNAVAILABLE_MESSAGE, retry_after_s=1.0))
    assert status.code == grpc.StatusCode.UNAVAILABLE.value[0]
    assert _retry_delay_ns(status) == 1_000_000_000
    [info] = _error_infos(status)
    assert (info.reason, info.domain) == ("UNAVAILABLE", "tandem")
    assert urllib.parse.unquote(variables["EDGE_UNAVAILABLE_MESSAGE"]) == status.message
    # The unavailable reply does not depend on the quota.
    other = refusal_variables(0.5)
    assert other["EDGE_UNAVAILABLE_STATUS"] == variables["EDGE_UNAVAILABLE_STATUS"]


@pytest.mark.parametrize(
    ("name", "what"),
    [("MALFORMED", "malformed authorization header"),
     ("DUPLICATE", "more than one authorization header")],
)  # fmt: skip
def test_another_spelling_or_a_second_header_is_the_gateways_refusal(name: str, what: str):
    variables = refusal_variables(20.0)
    status = _status(variables[f"EDGE_{name}_STATUS"])
    assert status == status_for(malformed_authorization(what))
    assert status.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
    assert "`authorization: Bearer <key>`" in status.message
    [info] = _error_infos(status)
    assert (info.reason, info.domain) == ("AUTHORIZATION_MALFORMED", "tandem")
    assert urllib.parse.unquote(variables[f"EDGE_{name}_MESSAGE"]) == status.message


def test_the_edge_keys_its_limit_on_the_gateways_one_form():
    # The map's pattern is the gateway's, anchored: one key, one spelling, one bucket.
    template = _directives(TEMPLATE.read_text(encoding="utf-8"))
    patterns = re.findall(r'"~\^(.*)\$"', template)
    assert patterns == [CANONICAL_AUTHORIZATION.pattern] * 2
    assert "limit_req_zone $tandem_api_key " in template


@pytest.mark.parametrize(
    "text",
    [
        "tenant rate limit exceeded",
        "100% sure",
        'say "hi" \\ bye',
        "costs $5; see ${EDGE_X} {or} $uri",
        "ünïcödé ✓ 日本",
        "line\nbreak\ttab\r",
        "",
    ],
)
def test_grpc_message_round_trips_and_is_safe_in_an_nginx_string(text: str) -> None:
    encoded = edge._grpc_message(text)
    assert urllib.parse.unquote(encoded) == text
    # Printable ASCII only, and nothing nginx reads in a quoted string: no quote,
    # backslash, variable or whitespace.
    assert all(0x21 <= ord(c) <= 0x7E for c in encoded), encoded
    assert not set(encoded) & set('"\\$'), encoded


# -- the access log ---------------------------------------------------------------------


def test_the_access_log_rotates_by_size_keeping_a_bounded_number(tmp_path: Path):
    log = tmp_path / "access.log"
    rotation = AccessLogRotation(log, max_bytes=100, keep=2)
    assert not rotation.due()  # no log yet
    written = []
    for i in range(5):
        line = f"{i}".encode() * 150
        written.append(line)
        with log.open("ab") as out:
            out.write(line)
        assert rotation.due()
        rotation.rotate()
        assert log.stat().st_size == 0 and not rotation.due()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["access.log", "access.log.1", "access.log.2"]
    assert (tmp_path / "access.log.1").read_bytes() == written[-1]
    assert (tmp_path / "access.log.2").read_bytes() == written[-2]


def test_the_access_log_rotation_settings(tmp_path: Path):
    settings = EdgeSettings.from_env(
        {"EDGE_ACCESS_LOG_MAX_BYTES": "4096", "EDGE_ACCESS_LOG_KEEP": "1",
         "EDGE_ACCESS_LOG_CHECK_S": "0.5"}
    )  # fmt: skip
    assert (settings.access_log_max_bytes, settings.access_log_keep) == (4096, 1)
    assert settings.access_log_check_s == 0.5
    rotation = AccessLogRotation.of(str(tmp_path / "access.log"), settings)
    assert rotation == AccessLogRotation(tmp_path / "access.log", 4096, 1)
    # Containers log to stdout (the runtime rotates it); nothing to rotate there.
    for target in ("/dev/stdout", "/dev/stderr", "off"):
        assert AccessLogRotation.of(target, settings) is None
    with pytest.raises(SettingsError, match=r"^EDGE_ACCESS_LOG_KEEP "):
        EdgeSettings.from_env({"EDGE_ACCESS_LOG_KEEP": "0"})


# -- the template -----------------------------------------------------------------------


def _settings(**overrides: object) -> EdgeSettings:
    base: dict[str, object] = {"listen": "127.0.0.1:28080", "upstream": "127.0.0.1:28081"}
    return EdgeSettings(**{**base, **overrides})  # type: ignore[arg-type]


def test_template_variables_name_exactly_what_the_template_uses():
    used = set(_BRACED.findall(_directives(TEMPLATE.read_text(encoding="utf-8"))))
    assert used == set(template_variables(_settings(), "/tmp/access.log"))
    assert all(name.startswith("EDGE_") for name in used)


def test_render_fills_every_edge_variable_and_leaves_nginxs_own_alone():
    settings = _settings(rate_per_s=0.5, burst=3, quota_rate_per_s=0.25)
    variables = template_variables(settings, "/var/log/edge/access.log")
    rendered = render(variables)
    assert "${" not in _directives(rendered)
    for name in NGINX_VARIABLES:
        assert name in rendered, name
    assert "zone=tandem_tenants:10m rate=30r/m;" in rendered
    assert "burst=3 nodelay;" in rendered
    assert "server 127.0.0.1:28081;" in rendered
    assert "listen 127.0.0.1:28080;" in rendered
    assert "access_log /var/log/edge/access.log tandem_edge" in rendered
    assert f'grpc-status-details-bin "{variables["EDGE_QUOTA_STATUS"]}" always;' in rendered
    assert f'grpc-message "{variables["EDGE_UNAVAILABLE_MESSAGE"]}" always;' in rendered
    # Everything outside the variables is the template, unchanged.
    template = TEMPLATE.read_text(encoding="utf-8")
    assert _BRACED.sub(lambda m: variables.get(m.group(1), m.group(0)), template) == rendered


def test_render_names_every_variable_without_a_value():
    variables = template_variables(_settings(), "/tmp/access.log")
    del variables["EDGE_BURST"], variables["EDGE_QUOTA_STATUS"]
    with pytest.raises(SettingsError) as missing:
        render(variables)
    assert str(missing.value).endswith(": EDGE_BURST, EDGE_QUOTA_STATUS")
    with pytest.raises(SettingsError, match="EDGE_LISTEN"):
        render({})
    # A template of someone else's: only ${EDGE_*} are ours to demand.
    assert render({"EDGE_A": "1"}, "a ${EDGE_A} $uri ${host}") == "a 1 $uri ${host}"


@pytest.mark.parametrize(
    ("rate_per_s", "expected"),
    [(0.017, "1r/m"), (1 / 3, "20r/m"), (0.5, "30r/m"), (2.5, "150r/m"), (40.0, "2400r/m")],
)
def test_rates_are_per_minute_so_fractions_survive(rate_per_s: float, expected: str) -> None:
    assert edge._nginx_rate(rate_per_s) == expected


def test_main_config_runs_in_the_foreground_and_includes_the_rendered_file(tmp_path: Path):
    http_config = tmp_path / "tandem-edge.conf"
    config = main_config(_settings(workers=3, grace_s=2.2), tmp_path, http_config)
    lines = [line.strip() for line in config.splitlines()]
    assert f"include {http_config};" in lines
    assert "daemon off;" in lines
    assert "worker_processes 3;" in lines
    assert f"pid {tmp_path / 'nginx.pid'};" in lines
    # The graceful stop waits at most the grace period (whole seconds, at least one).
    assert "worker_shutdown_timeout 3s;" in lines
    zero = main_config(_settings(grace_s=0.0), tmp_path, http_config)
    assert "worker_shutdown_timeout 1s;" in zero


def test_nginx_binary_prefers_edge_nginx_then_the_built_one_then_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = EdgeSettings.from_env({"EDGE_NGINX": "/opt/nginx/sbin/nginx"})
    assert nginx_binary(chosen) == Path("/opt/nginx/sbin/nginx")
    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    on_path = tmp_path / "path" / "nginx"
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(shutil, "which", lambda name: str(on_path))
    assert nginx_binary(EdgeSettings()) == on_path
    built = prefix / "bin" / "tandem-nginx"
    built.touch()
    assert nginx_binary(EdgeSettings()) == built
    assert nginx_binary() == built
    monkeypatch.setattr(shutil, "which", lambda name: None)
    built.unlink()
    assert nginx_binary() is None


def test_the_entry_point_says_how_to_get_nginx_when_there_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gateway.edge.__main__ import main

    monkeypatch.setenv("EDGE_NGINX", str(tmp_path / "no-nginx"))
    monkeypatch.setenv("TANDEM_DATA_DIR", str(tmp_path))
    assert main() == 2
    assert "make edge" in capsys.readouterr().err
    assert not (tmp_path / "edge").exists()


def test_nginx_accepts_the_rendered_configuration(tmp_path: Path):
    binary = nginx_binary()
    if binary is None:
        pytest.skip("no nginx for the edge: `make edge` (part of `make setup`) builds it")
    settings = _settings(rate_per_s=0.5, burst=1, quota_rate_per_s=0.25, workers=2)
    http_config = tmp_path / "tandem-edge.conf"
    http_config.write_text(render(template_variables(settings, str(tmp_path / "access.log"))))
    config = tmp_path / "nginx.conf"
    config.write_text(main_config(settings, tmp_path, http_config))
    checked = subprocess.run(
        [str(binary), "-t", "-p", str(tmp_path), "-e", "stderr", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr


def test_an_old_access_log_keeps_a_bounded_tail_of_whole_lines(tmp_path: Path):
    """A flood can write several nginx buffers between two checks; the old file keeps the
    log's last ``max_bytes`` and one buffer, from a whole line."""
    log = tmp_path / "access.log"
    rotation = AccessLogRotation(log, max_bytes=1024, keep=1)
    lines = [f"{i:06d} {'x' * 140}\n".encode() for i in range(2000)]  # about 300 KB
    log.write_bytes(b"".join(lines))
    rotation.rotate()
    kept = (tmp_path / "access.log.1").read_bytes()
    assert len(kept) <= 1024 + NGINX_LOG_BUFFER
    assert kept.endswith(lines[-1]) and kept.split(b"\n")[0] + b"\n" in lines
    assert log.stat().st_size == 0
