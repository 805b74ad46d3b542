#!/bin/sh
# One node of the compose primary + synchronous standby pair (infra/compose.ha.yaml): the
# entrypoint of both Postgres containers, wrapping the image's own (docker-entrypoint.sh).
# What the node becomes is decided here, at every start, from its data directory and its
# peer, so that a node never comes back as a second primary:
#
#   empty data directory, the peer a primary     -> pg_basebackup from it; a standby
#   empty, no primary anywhere, TANDEM_PG_BOOTSTRAP=1, the peer not reachable at all
#                                                 -> initdb (the image's entrypoint): the
#                                                    first start of the pair
#   empty otherwise                               -> wait for a primary (the peer is a
#                                                    standby the monitor may promote)
#   data, standby.signal                          -> a standby of the peer
#   data, no standby.signal (it was a primary), the peer now a primary (promoted while
#   this node was down: a newer timeline)         -> pg_rewind from the peer, then a
#                                                    standby; if pg_rewind fails, a fresh
#                                                    pg_basebackup (its own extra WAL was
#                                                    never acknowledged: commits wait for
#                                                    the standby, synchronous_standby_names)
#   data, no standby.signal, the peer a standby or down -> the primary again
#
# Promotion is not done here: `tandem postgres supervise` (the postgres-monitor service)
# watches both nodes over SQL and promotes the standby when the primary is gone.
#
# Environment (compose.ha.yaml sets them):
#   TANDEM_PG_NODE        this node's name: its host name and its application_name
#   TANDEM_PG_PEER        the other node, host[:port]
#   TANDEM_PG_BOOTSTRAP   1 on the node that initialises the pair on first start
#   TANDEM_PG_SYNC_NAMES  synchronous_standby_names [ANY 1 ("<node>", "<peer>")]
#   REPLICATION_USER / REPLICATION_PASSWORD   the streaming role [tandem_replicator]
#   POSTGRES_USER / POSTGRES_PASSWORD         the superuser (pg_rewind reads the peer as it)
# `sh ha-node.sh conf` writes the replication settings and access rule into $PGDATA
# (ha-init.sh calls it while the image initialises a new data directory).
set -eu

PGDATA=${PGDATA:-/var/lib/postgresql/data}
NODE=${TANDEM_PG_NODE:?TANDEM_PG_NODE is required}
PEER=${TANDEM_PG_PEER:?TANDEM_PG_PEER is required}
PEER_HOST=${PEER%:*}
PEER_PORT=5432
[ "$PEER_HOST" = "$PEER" ] || PEER_PORT=${PEER##*:}
: "${POSTGRES_USER:=postgres}"
: "${REPLICATION_USER:=tandem_replicator}"
: "${REPLICATION_PASSWORD:=tandem_replicator}"
# Names double-quoted: a node name with a hyphen (postgres-standby) is not a bare identifier.
SYNC_NAMES=${TANDEM_PG_SYNC_NAMES:-ANY 1 (\"$NODE\", \"$PEER_HOST\")}
IMAGE_ENTRYPOINT=${TANDEM_PG_IMAGE_ENTRYPOINT:-/usr/local/bin/docker-entrypoint.sh}
export PGDATA

log() { echo "ha-node[$NODE]: $*" >&2; }

if [ "$(id -u)" = 0 ]; then
  # The official image starts as root: the data directory is the postgres user's, as its
  # own entrypoint would make it, then everything below runs as that user.
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec gosu postgres sh "$0" "$@"
fi

# The settings both nodes run with, in a file of the data directory that postgresql.conf
# includes (postgresql.auto.conf, ALTER SYSTEM, still overrides them: the monitor may
# relax synchronous_standby_names while the pair is down to one node).
write_conf() {
  cat >"$PGDATA/tandem-ha.conf" <<EOF
# Written by infra/postgres/ha-node.sh at every start; edits are lost.
wal_level = replica
# pg_rewind needs hint bits in the WAL to rewind an old primary.
wal_log_hints = on
max_wal_senders = 10
max_replication_slots = 10
# WAL kept for a standby that was away (a restart, a rewind) to catch up by streaming.
wal_keep_size = '1GB'
hot_standby = on
# A standby whose primary went away (a restart) tries again after 1 s, not the default 5 s:
# until it is back, commits on the primary wait for it (container test: writes back 15.1 s
# after a SIGKILLed primary, 4.6 s of it this wait).
wal_retrieve_retry_interval = 1s
hot_standby_feedback = on
# Bounded staleness of reads on the standby: replay waits at most this for a query.
max_standby_streaming_delay = 30s
# A commit returns once the standby has flushed its WAL: an acknowledged write is on both.
synchronous_commit = on
synchronous_standby_names = '$SYNC_NAMES'
EOF
  grep -q "^include_if_exists = 'tandem-ha.conf'" "$PGDATA/postgresql.conf" \
    || echo "include_if_exists = 'tandem-ha.conf'" >>"$PGDATA/postgresql.conf"
  # Streaming replication (and pg_basebackup) as the replication role, with a password.
  grep -q "^host replication $REPLICATION_USER all scram-sha-256" "$PGDATA/pg_hba.conf" \
    || echo "host replication $REPLICATION_USER all scram-sha-256" >>"$PGDATA/pg_hba.conf"
}

if [ "${1:-}" = conf ]; then
  write_conf
  exit 0
fi

# t: a primary; f: a standby; empty: not reachable (down, or not started yet).
peer_state() {
  PGPASSWORD=$POSTGRES_PASSWORD psql -X -A -t -q -w \
    "host=$PEER_HOST port=$PEER_PORT dbname=postgres user=$POSTGRES_USER connect_timeout=3" \
    -c "SELECT NOT pg_is_in_recovery()" 2>/dev/null || true
}

# The standby's connection to the primary: written into postgresql.auto.conf (which
# pg_basebackup copies from the primary: any earlier primary_conninfo is replaced).
make_standby() {
  auto="$PGDATA/postgresql.auto.conf"
  touch "$auto"
  grep -v '^primary_conninfo' "$auto" >"$auto.tmp" || true
  echo "primary_conninfo = 'host=$PEER_HOST port=$PEER_PORT user=$REPLICATION_USER password=$REPLICATION_PASSWORD application_name=$NODE'" >>"$auto.tmp"
  mv "$auto.tmp" "$auto"
  chmod 600 "$auto"
  touch "$PGDATA/standby.signal"
}

basebackup() {
  log "copying the primary $PEER (pg_basebackup)"
  find "$PGDATA" -mindepth 1 -delete
  PGPASSWORD=$REPLICATION_PASSWORD pg_basebackup -w \
    -d "host=$PEER_HOST port=$PEER_PORT user=$REPLICATION_USER application_name=$NODE" \
    -D "$PGDATA" -X stream -c fast
  chmod 700 "$PGDATA"
  make_standby
}

wait_for_primary() {
  while [ "$(peer_state)" != t ]; do
    log "waiting for a primary at $PEER (the monitor promotes a standby)"
    sleep 2
  done
}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  state=$(peer_state)
  if [ "$state" = t ]; then
    basebackup
  elif [ "$state" = "" ] && [ "${TANDEM_PG_BOOTSTRAP:-0}" = 1 ]; then
    log "no data and no peer: initialising the pair (the image's entrypoint)"
    exec "$IMAGE_ENTRYPOINT" "$@"
  else
    wait_for_primary
    basebackup
  fi
elif [ ! -e "$PGDATA/standby.signal" ] && [ "$(peer_state)" = t ]; then
  # This node was the primary; the peer was promoted while it was down.
  log "the peer $PEER is the primary now: rejoining as its standby (pg_rewind)"
  rm -f "$PGDATA/postmaster.pid"
  if PGPASSWORD=$POSTGRES_PASSWORD pg_rewind --target-pgdata="$PGDATA" --progress \
      --source-server="host=$PEER_HOST port=$PEER_PORT dbname=postgres user=$POSTGRES_USER"; then
    make_standby
  else
    log "pg_rewind failed: a fresh copy of the primary instead"
    basebackup
  fi
fi

write_conf
[ -e "$PGDATA/standby.signal" ] && role=standby || role=primary
log "starting as the $role"
exec "$IMAGE_ENTRYPOINT" "$@"
