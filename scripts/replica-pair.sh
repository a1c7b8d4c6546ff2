#!/usr/bin/env bash
# A throwaway PostgreSQL primary and its streaming replica on loopback, for the replica tests and
# bench (docs/replicas.md). The replica is a `pg_basebackup -R` copy of the primary.
#
#   scripts/replica-pair.sh start   # prints the two URLs as shell exports
#   scripts/replica-pair.sh stop    # stops both clusters and removes their folder
#
# Settings: REPLICA_PAIR_DIR (default /tmp/flint-replica-pair), PRIMARY_PORT (default: the first
# free one of 5434, 5436...), REPLICA_PORT (5433, 5435...), PG_BIN (the newest /usr/lib/postgresql/*/bin). Run as root, the clusters
# belong to the `postgres` OS user; run as another user, they belong to that user.
set -euo pipefail

DIR="${REPLICA_PAIR_DIR:-/tmp/flint-replica-pair}"

# The first port from $1 up that nothing listens on (another pair, a developer's cluster).
free_port() {
  local port="$1"
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 2)); done
  echo "$port"
}
PRIMARY_PORT="${PRIMARY_PORT:-$(free_port 5434)}"
REPLICA_PORT="${REPLICA_PORT:-$(free_port 5433)}"
PG_BIN="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

wait_ready() {
  for _ in $(seq 1 60); do
    "$PG_BIN/pg_isready" -h 127.0.0.1 -p "$1" -q && return 0
    sleep 0.5
  done
  echo "PostgreSQL on port $1 did not start; see $DIR/*.log" >&2
  return 1
}

start() {
  if [ -d "$DIR" ]; then stop >/dev/null; fi
  mkdir -p "$DIR"
  [ "$(id -u)" = 0 ] && chown postgres "$DIR"
  as_owner "$PG_BIN/initdb" -D "$DIR/primary" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
  # Throwaway data: durability settings off, replication open to loopback.
  cat >>"$DIR/primary/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PRIMARY_PORT
unix_socket_directories = '$DIR'
wal_level = replica
max_wal_senders = 4
fsync = off
full_page_writes = off
shared_buffers = 32MB
EOF
  echo "host replication all 127.0.0.1/32 trust" >>"$DIR/primary/pg_hba.conf"
  as_owner "$PG_BIN/pg_ctl" -D "$DIR/primary" -l "$DIR/primary.log" -w start >/dev/null
  wait_ready "$PRIMARY_PORT"
  as_owner "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -D "$DIR/replica" -R -X stream --no-sync
  as_owner sed -i "s/^port = .*/port = $REPLICA_PORT/" "$DIR/replica/postgresql.conf"
  as_owner "$PG_BIN/pg_ctl" -D "$DIR/replica" -l "$DIR/replica.log" -w start >/dev/null
  wait_ready "$REPLICA_PORT"
  echo "export TEST_PRIMARY_URL=postgres://postgres@127.0.0.1:$PRIMARY_PORT/postgres"
  echo "export TEST_REPLICA_URL=postgres://postgres@127.0.0.1:$REPLICA_PORT/postgres"
}

stop() {
  for cluster in replica primary; do
    if [ -f "$DIR/$cluster/postmaster.pid" ]; then
      as_owner "$PG_BIN/pg_ctl" -D "$DIR/$cluster" -m immediate -w stop >/dev/null || true
    fi
  done
  rm -rf "$DIR"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
