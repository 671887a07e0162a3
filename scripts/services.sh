#!/usr/bin/env bash
# Local services for scaling out: a PostgreSQL server (databases `mlflow` and `optuna`) and an
# MLflow tracking server backed by it. Usage:
#   scripts/services.sh start    # start both (first start: initdb + databases); prints the URLs
#   scripts/services.sh stop     # stop the MLflow server, then PostgreSQL (data is kept)
#   scripts/services.sh status   # exit 0 when both run
#   scripts/services.sh env      # the export lines, for: eval "$(scripts/services.sh env)"
# Settings (environment): KBX_SERVICES_DIR (.services), KBX_PG_PORT (55432), KBX_MLFLOW_HOST (127.0.0.1),
#   KBX_MLFLOW_PORT (5000), KBX_MLFLOW_WORKERS (2), KBX_PYTHON (.venv/bin/python), KBX_PG_BIN (newest
#   /usr/lib/postgresql/*/bin), KBX_PG_OS_USER (postgres: the account PostgreSQL runs as when this
#   script runs as root, since PostgreSQL refuses to run as root; created if missing).
# Both servers listen on loopback only; PostgreSQL trusts local connections (role `kbx`, no password):
# a single-user development setup, not for shared machines.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${KBX_SERVICES_DIR:-$REPO/.services}"
PG_PORT="${KBX_PG_PORT:-55432}"
HOST="${KBX_MLFLOW_HOST:-127.0.0.1}"
ML_PORT="${KBX_MLFLOW_PORT:-5000}"
ML_WORKERS="${KBX_MLFLOW_WORKERS:-2}"
PY="${KBX_PYTHON:-$REPO/.venv/bin/python}"
OS_USER="${KBX_PG_OS_USER:-postgres}"
PGDIR="$DIR/pg"
PGDATA="$PGDIR/data"
PGLOG="$PGDIR/postgres.log"
ML_PID="$DIR/mlflow.pid"
ML_LOG="$DIR/mlflow.log"
ARTIFACTS="$DIR/mlflow-artifacts"
ROLE=kbx
MLFLOW_DB_URI="postgresql://$ROLE@127.0.0.1:$PG_PORT/mlflow"
OPTUNA_URI="postgresql://$ROLE@127.0.0.1:$PG_PORT/optuna"
TRACKING_URI="http://$HOST:$ML_PORT"
export LITELLM_LOCAL_MODEL_COST_MAP=True  # litellm (imported by plugins) must not fetch a price map offline

die() { echo "services: $*" >&2; exit 1; }

pg_bin() {
    local bin="${KBX_PG_BIN:-}"
    if [ -z "$bin" ]; then
        bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    fi
    if [ -z "$bin" ] && command -v pg_ctl >/dev/null 2>&1; then bin="$(dirname "$(command -v pg_ctl)")"; fi
    [ -n "$bin" ] && [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ] ||
        die "PostgreSQL server binaries not found (Debian: apt-get install -y postgresql; or set KBX_PG_BIN)"
    echo "$bin"
}

# Run a PostgreSQL server command as the unprivileged account when we are root.
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u "$OS_USER" -- "$@"; else "$@"; fi
}

pg_running() { [ -f "$PGDATA/PG_VERSION" ] && as_pg "$BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; }

mlflow_pid() { [ -f "$ML_PID" ] && kill -0 "$(cat "$ML_PID")" 2>/dev/null && cat "$ML_PID"; }

healthy() {
    "$PY" - "$TRACKING_URI" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/health", timeout=3) as r:
    sys.exit(0 if r.status == 200 else 1)
EOF
}

start_pg() {
    mkdir -p "$PGDIR"
    if [ "$(id -u)" = 0 ]; then
        id "$OS_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$OS_USER"
        chown -R "$OS_USER" "$PGDIR"
        runuser -u "$OS_USER" -- test -w "$PGDIR" ||
            die "$OS_USER cannot reach $PGDIR (a parent directory is not searchable): set KBX_SERVICES_DIR"
    fi
    if [ ! -f "$PGDATA/PG_VERSION" ]; then
        echo "services: initdb $PGDATA"
        as_pg "$BIN/initdb" -D "$PGDATA" -U "$ROLE" --auth=trust --encoding=UTF8 --no-locale >"$PGDIR/initdb.log" 2>&1 ||
            die "initdb failed, see $PGDIR/initdb.log"
    fi
    if ! pg_running; then
        echo "services: starting PostgreSQL on 127.0.0.1:$PG_PORT"
        as_pg "$BIN/pg_ctl" -D "$PGDATA" -l "$PGLOG" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PGDATA" start >/dev/null ||
            die "PostgreSQL did not start, see $PGLOG"
    fi
    for db in mlflow optuna; do
        if [ -z "$(psql -h 127.0.0.1 -p "$PG_PORT" -U "$ROLE" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
            psql -h 127.0.0.1 -p "$PG_PORT" -U "$ROLE" -d postgres -qc "CREATE DATABASE $db" >/dev/null
        fi
    done
}

start_mlflow() {
    "$PY" -c "import psycopg" 2>/dev/null || die "psycopg missing in $PY (make services installs .[services])"
    if mlflow_pid >/dev/null; then return; fi
    mkdir -p "$ARTIFACTS"
    echo "services: starting the MLflow server on $TRACKING_URI"
    setsid "$PY" -m mlflow server --backend-store-uri "$MLFLOW_DB_URI" --artifacts-destination "$ARTIFACTS" \
        --host "$HOST" --port "$ML_PORT" --workers "$ML_WORKERS" >"$ML_LOG" 2>&1 </dev/null &
    echo $! >"$ML_PID"
    for _ in $(seq 1 180); do
        if healthy; then return; fi
        mlflow_pid >/dev/null || die "the MLflow server exited, see $ML_LOG"
        sleep 0.5
    done
    die "the MLflow server did not answer within 90 s, see $ML_LOG"
}

stop_mlflow() {
    local pid
    if pid="$(mlflow_pid)"; then
        echo "services: stopping the MLflow server (pid $pid)"
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$ML_PID"
}

print_env() {
    echo "export MLFLOW_TRACKING_URI=$TRACKING_URI"
    echo "export KBX_OPTUNA_STORAGE=$OPTUNA_URI"
}

cmd="${1:-}"
case "$cmd" in
start)
    BIN="$(pg_bin)"
    start_pg
    start_mlflow
    echo "services: up. MLflow UI: $TRACKING_URI  (logs: $DIR)"
    echo "MLflow tracking server:  export MLFLOW_TRACKING_URI=$TRACKING_URI"
    echo "Optuna storage:          $OPTUNA_URI"
    ;;
stop)
    stop_mlflow
    BIN="$(pg_bin 2>/dev/null || true)"
    if [ -n "$BIN" ] && pg_running; then
        echo "services: stopping PostgreSQL"
        as_pg "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
    fi
    ;;
status)
    BIN="$(pg_bin)"
    rc=0
    if pg_running; then echo "postgresql: running on 127.0.0.1:$PG_PORT ($OPTUNA_URI)"; else echo "postgresql: stopped"; rc=1; fi
    if mlflow_pid >/dev/null && healthy; then echo "mlflow: running at $TRACKING_URI"; else echo "mlflow: stopped"; rc=1; fi
    exit $rc
    ;;
env)
    print_env
    ;;
*)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
