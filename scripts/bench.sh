#!/usr/bin/env bash
# `make bench`: every benchmark plus gateway load, written to bench/results/.
#
# With TANDEM_API_KEY set, the report loads the gateway that is already running
# (TANDEM_GATEWAY). Otherwise this starts the whole stack with `tandem run` (quota raised
# so the load measures the system, not the rate limiter), runs the report against it with
# the demo key, and stops the stack on exit.
set -euo pipefail
BIN=${BIN:-.venv/bin}

if [[ -n "${TANDEM_API_KEY:-}" ]]; then
  exec "$BIN/tandem" bench report "$@"
fi

log=$(mktemp)
# No span store unless asked for (TANDEM_TRACE_DIR=DIR make bench): the report measures
# the services; `tandem bench cost --traces` measures what recording every span adds.
export TANDEM_TRACE_DIR=${TANDEM_TRACE_DIR:-}
GATEWAY_RATE_PER_S=${GATEWAY_RATE_PER_S:-100000} GATEWAY_BURST=${GATEWAY_BURST:-100000} \
  "$BIN/tandem" run >"$log" 2>&1 &
stack=$!
trap 'kill -INT "$stack" 2>/dev/null || true; wait "$stack" 2>/dev/null || true; rm -f "$log"' EXIT

for _ in $(seq 1 900); do
  if grep -q "export TANDEM_API_KEY=" "$log"; then break; fi
  if ! kill -0 "$stack" 2>/dev/null; then cat "$log" >&2; exit 1; fi
  sleep 1
done
key=$(sed -n 's/.*export TANDEM_API_KEY=//p' "$log" | head -1)
if [[ -z "$key" ]]; then cat "$log" >&2; echo "the stack did not come up" >&2; exit 1; fi
# TANDEM_STACK_PID: `tandem bench cost` reads the CPU of this stack's processes.
TANDEM_API_KEY="$key" TANDEM_STACK_PID="$stack" "$BIN/tandem" bench report "$@"
