#!/usr/bin/env bash
# The Kubernetes manifests (infra/k8s), played under `podman kube play` with the images
# `make container-test` builds (run that first, once): every Deployment runs with its
# replicas, the manifests' startup, readiness and liveness probes pass, and the smoke
# (scripts/container_smoke.py) passes through the edge. infra/README.md, "Kubernetes
# manifests, played", says what podman 4.3 cannot emulate and how that is checked instead.
#
#  1. containers.conf as container-test.sh writes it (runc, cgroupfs, no default ulimits)
#  2. certificates (`tandem certs issue DIR --split`) and the rendering
#     (scripts/k8s_play.py render): kustomize's output, checked against
#     `kubectl kustomize infra/k8s` where kubectl is installed, then adapted to podman 4.3
#     (bench-results/k8s-play/rendered/adaptations.txt lists every change)
#  3. the network tandem-k8s-net, the secrets, then each Deployment in dependency order
#     with `podman kube play --network tandem-k8s-net:alias=<svc>,alias=<svc>.tandem.svc.
#     cluster.local`; each pod's startup, readiness and liveness probes run until they pass
#     (scripts/k8s_play.py wait: podman's own health check where podman made one of the
#     livenessProbe, else the probe the way a kubelet runs it)
#  4. the demo warehouse the SQL manifest reads (WAREHOUSE_DATABASE_URL), a demo API key
#     and the demo documents; the Services' DNS names answer with every pod's address
#  5. a TCP load balancer in front of the edge pods on 127.0.0.1:59050, the smoke through
#     it, then every probe of every pod once more
#  6. logs, probe results and a summary in bench-results/k8s-play/ (kept on failure too);
#     everything named tandem-k8s-* is removed unless K8S_PLAY_KEEP=1
#
# Environment: K8S_PLAY_OUT (bench-results/k8s-play), K8S_PLAY_PORT (59050),
# K8S_PLAY_KEEP (0), K8S_PLAY_REPLICAS (the manifests' own: 2), CONTAINER_TEST_CACHE
# (/var/cache/tandem-containers).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CACHE=${CONTAINER_TEST_CACHE:-/var/cache/tandem-containers}
OUT=${K8S_PLAY_OUT:-$ROOT/bench-results/k8s-play}
VENV_PY=${VENV_PY:-$ROOT/.venv/bin/python}
PORT=${K8S_PLAY_PORT:-59050}
KEEP=${K8S_PLAY_KEEP:-0}
REPLICAS=${K8S_PLAY_REPLICAS:-0}
PREFIX=tandem-k8s
NET=$PREFIX-net
RUN="$CACHE/k8s-play"            # certificates and secret values: not kept in $OUT
RENDERED="$OUT/rendered"
RESULTS="$OUT/probes.jsonl"
BASE_IMAGE=localhost/tandem/base:bookworm-py311
IMAGES=(embedding retrieval sql router gateway postgres-test edge-test)

started_at=$(date +%s)
mkdir -p "$OUT"
rm -rf "$OUT/logs" "$RENDERED" "$RESULTS" "$OUT/dns.txt" "$OUT/smoke.jsonl"
mkdir -p "$OUT/logs"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"

log() { printf '[k8s-play %4ss] %s\n' "$(($(date +%s) - started_at))" "$*" | tee -a "$SUMMARY"; }
die() { log "FAILED: $*"; exit 1; }

if [[ $(id -u) -ne 0 ]]; then
  echo "k8s-play: needs root (rootful podman, as make container-test); run it with sudo" >&2
  exit 2
fi

# ---- 1. podman, as container-test.sh sets it up ------------------------------------------
command -v podman >/dev/null || die "no podman: run make container-test first"
# shellcheck source=scripts/podman-env.sh
source "$ROOT/scripts/podman-env.sh"
for image in "${IMAGES[@]}"; do
  podman image exists "localhost/tandem/$image:dev" || die "no localhost/tandem/$image:dev: run make container-test first"
done
podman image exists "$BASE_IMAGE" || die "no $BASE_IMAGE: run make container-test first"

# Only what this script creates: names starting with tandem-k8s.
mine() {  # kind (pod|container|secret|volume)
  case $1 in
    pod) podman pod ls --format '{{.Name}}' ;;
    container) podman ps -a --format '{{.Names}}' ;;
    secret) podman secret ls --format '{{.Name}}' ;;
    volume) podman volume ls --format '{{.Name}}' ;;
  esac 2>/dev/null | grep "^$PREFIX-" || true
}
clean() {
  local name
  for name in $(mine container); do
    podman pod exists "${name%-*}" 2>/dev/null && continue   # a pod's: removed with the pod
    podman rm -f -t 5 "$name" >/dev/null 2>&1 || true
  done
  local pods
  pods=$(mine pod)
  # shellcheck disable=SC2086 # one call for every pod: they stop in parallel
  [[ -z $pods ]] || podman pod rm -f -t 10 $pods 2>&1 | quiet >/dev/null
  for name in $(mine container); do podman rm -f -t 5 "$name" >/dev/null 2>&1 || true; done
  for name in $(mine secret); do podman secret rm "$name" >/dev/null 2>&1 || true; done
  for name in $(mine volume); do podman volume rm -f "$name" >/dev/null 2>&1 || true; done
  podman network exists "$NET" 2>/dev/null && podman network rm -f "$NET" >/dev/null 2>&1 || true
}
collect_logs() {
  local name
  podman pod ls --format '{{.Name}} {{.Status}}' 2>/dev/null | grep "^$PREFIX-" >"$OUT/logs/pods.txt" || true
  podman ps -a --format '{{.Names}} {{.Status}} {{.Image}}' 2>/dev/null | grep "^$PREFIX-" >"$OUT/logs/ps.txt" || true
  for name in $(mine container); do
    [[ $name == *-infra ]] && continue
    podman logs "$name" >"$OUT/logs/$name.log" 2>&1 || true
    podman inspect --format '{{json .Config.Healthcheck}} restarts={{.RestartCount}} state={{.State.Status}}' \
      "$name" >"$OUT/logs/$name.state.txt" 2>/dev/null || true
  done
}
on_exit() {
  local rc=$?
  if [[ -n ${PLAYED:-} ]]; then
    collect_logs
    if [[ $KEEP == 1 ]]; then
      log "K8S_PLAY_KEEP=1: the pods stay up ($PREFIX-*); the edge through 127.0.0.1:$PORT"
    else
      clean
    fi
  fi
  log "wall time $(($(date +%s) - started_at)) s; exit $rc; logs in $OUT"
  exit $rc
}
trap on_exit EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

log "clearing an earlier run ($PREFIX-*)"
clean
PLAYED=1

# ---- 2. certificates and the rendering -------------------------------------------------------
rm -rf "$RUN" && mkdir -p "$RUN"
chmod 700 "$RUN"
"$ROOT/.venv/bin/tandem" certs issue "$RUN/tls" --split >"$OUT/logs/certs.log" 2>&1 \
  || { cat "$OUT/logs/certs.log"; die "tandem certs issue"; }
kustomized=()
if command -v kubectl >/dev/null && kubectl kustomize infra/k8s >"$RUN/kustomized.yaml" 2>"$OUT/logs/kustomize.log"; then
  kustomized=(--kustomized "$RUN/kustomized.yaml")
fi
render_args=(--out "$RENDERED" --secrets "$RUN/secrets" --tls "$RUN/tls")
((REPLICAS > 0)) && render_args+=(--replicas "$REPLICAS")
log "rendering infra/k8s for podman kube play"
"$VENV_PY" scripts/k8s_play.py render "${render_args[@]}" "${kustomized[@]}" | tee -a "$SUMMARY" \
  || die "render"
[[ ${PIPESTATUS[0]} -eq 0 ]] || die "render"
PLAN="$RENDERED/plan.json"
plan() { "$VENV_PY" -c "import json,sys; p=json.load(open('$PLAN')); $1" "${@:2}"; }

# ---- 3. network, secrets, Deployments ----------------------------------------------------
podman network create "$NET" >/dev/null
podman secret create "$PREFIX-secrets" "$RUN/secrets/$PREFIX-secrets.json" >/dev/null
for file in "$RUN/secrets/$PREFIX"-tls-*.yaml; do
  name=$(basename "$file" .yaml)
  podman secret create "$name" "$file" >/dev/null || die "podman secret create $name"
done
log "network $NET, podman secrets: $(mine secret | tr '\n' ' ')"

play() {  # deployment
  local name=$1 args=() alias_opt cm
  alias_opt="$NET:$(plan 'd=[d for d in p["deployments"] if d["name"]==sys.argv[1]][0]; print(",".join("alias="+a for a in d["aliases"]))' "$name")"
  while read -r cm; do [[ -n $cm ]] && args+=(--configmap "$cm"); done \
    < <(plan 'd=[d for d in p["deployments"] if d["name"]==sys.argv[1]][0]; print("\n".join(d["configmaps"]))' "$name")
  podman kube play --network "$alias_opt" "${args[@]}" "$RENDERED/$PREFIX-$name.yaml" \
    >>"$OUT/logs/play-$name.log" 2>&1 || { quiet <"$OUT/logs/play-$name.log" | tail -20; die "kube play $name"; }
  log "played $name: $(podman pod ls --format '{{.Name}}' | grep -c "^$PREFIX-$name-pod-") pod(s), aliases ${alias_opt#*:}"
}
wait_probes() {  # deployment timeout
  "$VENV_PY" scripts/k8s_play.py wait --plan "$PLAN" --deployment "$1" --results "$RESULTS" \
    --timeout "$2" 2>>"$OUT/logs/wait-$1.log" | tee -a "$SUMMARY"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || { tail -30 "$OUT/logs/wait-$1.log"; die "$1: probes"; }
}

play postgres
wait_probes postgres 120
# The warehouse the SQL manifest reads (WAREHOUSE_DATABASE_URL: a replica's read-only
# role, outside the manifests): the demo warehouse, set up once as a Job would.
podman run --rm --name "$PREFIX-warehouse-setup" --network "$NET" --read-only \
  -e "DATABASE_URL=$(cat "$RUN/secrets/database-url")" --entrypoint python localhost/tandem/sql:dev -c \
  'import asyncio, os; from services.sql import ensure_warehouse; w = asyncio.run(ensure_warehouse(os.environ["DATABASE_URL"], database="warehouse", reader_role="tandem_reader")); print("warehouse", w.database, "loaded" if w.loaded else "present")' \
  >"$OUT/logs/warehouse-setup.log" 2>&1 || { quiet <"$OUT/logs/warehouse-setup.log" | tail -20; die "warehouse setup"; }
log "demo warehouse: $(quiet <"$OUT/logs/warehouse-setup.log" | tail -1)"

for name in embedding retrieval sql router gateway rest edge; do
  play "$name"
  case $name in
    embedding | sql) wait_probes "$name" 300 ;;
    *) wait_probes "$name" 180 ;;
  esac
done

# The manifests' securityContext, as podman applied it: non-root, read-only root.
"$VENV_PY" scripts/k8s_play.py list --plan "$PLAN" pods >"$RENDERED/pods.txt"
[[ -s "$RENDERED/pods.txt" ]] || die "no pods in the plan"
while read -r deployment pod container; do
  [[ $deployment == postgres ]] && continue
  ro=$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$pod-$container")
  uid=$(podman exec "$pod-$container" id -u 2>/dev/null) || die "$pod: exec id -u"
  [[ $ro == true && -n $uid && $uid != 0 ]] || die "$pod: read-only root $ro, uid $uid"
done <"$RENDERED/pods.txt"
log "every Tandem pod runs non-root on a read-only root filesystem"

# Service DNS: each name answers with every pod's address (headless: callers balance per
# call; the gateway and edge Services' ClusterIP is not emulated, their names do the same).
gw="$PREFIX-gateway-pod-0-gateway"
"$VENV_PY" scripts/k8s_play.py list --plan "$PLAN" hosts >"$RENDERED/hosts.txt"
while read -r host replicas; do
  addresses=$(podman exec "$gw" python -c 'import socket, sys
print(" ".join(sorted({a[4][0] for a in socket.getaddrinfo(sys.argv[1], None, type=socket.SOCK_STREAM)})))' \
    "$host" 2>/dev/null) || die "$host does not resolve in $gw"
  echo "$host $addresses" >>"$OUT/dns.txt"
  n=$(wc -w <<<"$addresses")
  [[ $n == "$replicas" ]] || die "$host answers $n address(es) ($addresses), not $replicas"
done <"$RENDERED/hosts.txt"
log "Service DNS: each <service>.tandem.svc.cluster.local answers with all of its pods' addresses ($OUT/dns.txt)"

# ---- 4. demo key and documents -------------------------------------------------------------
api_key=$(podman exec "$gw" tandem keys create --tenant demo --scope all --label k8s-play --json 2>/dev/null \
  | "$VENV_PY" -c 'import json, sys; print(json.load(sys.stdin)["api_key"])') || die "tandem keys create"
log "demo API key created (tenant demo), in $gw"
# In two of five runs here every document of the first load failed DEPENDENCY_UNAVAILABLE
# (retrieval -> embedding: no Embed call arrived) with every probe green; an open finding
# (infra/README.md). The load is idempotent: a second try, said in the summary, with the
# first one's output kept.
demo_load() {
  podman exec "$gw" tandem demo load --addr retrieval.tandem.svc.cluster.local:50053 --tenant demo --json \
    >"$OUT/logs/demo-load.json" 2>&1
}
if ! demo_load; then
  cp "$OUT/logs/demo-load.json" "$OUT/logs/demo-load-first-try.json"
  log "demo load: first try failed ($(grep -o '"failed": [0-9]*' "$OUT/logs/demo-load.json" || echo no JSON)); once more in 5 s"
  sleep 5
  demo_load || { quiet <"$OUT/logs/demo-load.json" | tail -20; die "tandem demo load"; }
fi
log "demo documents loaded through retrieval.tandem.svc.cluster.local: $("$VENV_PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["documents"], "documents,", r["chunks_written"], "chunks written,", r["failed"], "failed")' "$OUT/logs/demo-load.json" 2>/dev/null || echo see demo-load.json)"

# ---- 5. the load balancer in front of the edge, the smoke, the probes again -------------------
podman run -d --name "$PREFIX-lb" --network "$NET" --read-only --user 65534:65534 \
  -p "127.0.0.1:$PORT:$PORT" -v "$ROOT/scripts/k8s_play.py:/opt/k8s_play.py:ro" \
  "$BASE_IMAGE" python3 /opt/k8s_play.py lb --listen "0.0.0.0:$PORT" \
  --target edge.tandem.svc.cluster.local:50050 >/dev/null 2>"$OUT/logs/lb-run.log" \
  || { quiet <"$OUT/logs/lb-run.log"; die "the load balancer"; }
for _ in $(seq 1 20); do
  "$VENV_PY" -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 1).close()" 2>/dev/null && break
  sleep 0.5
done
log "smoke through the edge pods (127.0.0.1:$PORT -> edge.tandem.svc.cluster.local:50050)"
if ! PYTHONPATH="$ROOT/gen:$ROOT" "$VENV_PY" scripts/container_smoke.py \
    --addr "127.0.0.1:$PORT" --api-key "$api_key" | tee "$OUT/smoke.jsonl"; then
  die "smoke"
fi
"$VENV_PY" scripts/k8s_play.py check --plan "$PLAN" --results "$RESULTS" --phase after-smoke \
  | tee -a "$SUMMARY" "$OUT/logs/check.log" >/dev/null
[[ ${PIPESTATUS[0]} -eq 0 ]] || { grep FAILED "$OUT/logs/check.log"; die "probes after the smoke"; }
log "every pod's readiness and liveness probes still pass after the smoke"
"$VENV_PY" - "$RESULTS" <<'EOF' | tee -a "$SUMMARY"
import collections, json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
by = collections.Counter((r["probe"], r.get("type"), r.get("runner", "").split(" (")[0]) for r in rows if r.get("ok"))
for (probe, kind, runner), n in sorted(by.items()):
    print(f"  passed: {n:3d} x {probe:15s} {kind or '-':10s} run by {runner}")
slow = [f"{r['pod']} {r['probe']} {r['waited_s']} s > {r['manifest_budget_s']} s"
        for r in rows if r.get("within_manifest_budget") is False]
print("  over the manifest's probe budget (a kubelet would have restarted it): " + (", ".join(slow) or "none"))
EOF
log "PASSED: infra/k8s played under podman kube play, probes green, smoke green through the edge"
