#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests (issue #18), with Debian's binaries (/usr/lib/postgresql/<ver>/bin).
#
#   scripts/pg-cluster.sh start DIR PORT   initialise DIR (if needed) and start; prints the URL on stdout:
#                                          postgres://postgres@127.0.0.1:PORT/postgres
#   scripts/pg-cluster.sh stop DIR         stop it (fast mode); nothing to do when it is not running
#
# Data in DIR/data, the unix socket in DIR, the server log in DIR/postgres.log. Listens on 127.0.0.1:PORT only;
# trust auth for local-socket and 127.0.0.1 connections; superuser `postgres`; UTF8 in the C.UTF-8 locale, as a
# machine's default gives it (opdesk declares byte-order text on its own columns, migration 0020). PG_FAST=1 turns durability off (fsync, synchronous_commit,
# full_page_writes); otherwise the defaults stay. PG_BIN overrides the binaries directory; PG_START_TIMEOUT (s,
# default 30) bounds the wait for connections.
#
# PostgreSQL refuses to run as root: as root, initdb/pg_ctl run as the `postgres` system user and DIR is
# created and chowned to it; DIR's parent must let that user through, e.g. DIR="$(mktemp -d /tmp/opdesk-pg.XXXXXX)".
set -euo pipefail

die() {
    printf 'pg-cluster: %s\n' "$*" >&2
    exit 1
}

usage() {
    die "usage: $0 start DIR PORT | stop DIR"
}

pg_bin() {
    if [[ -n "${PG_BIN:-}" ]]; then
        [[ -x "$PG_BIN/pg_ctl" ]] || die "PG_BIN=$PG_BIN has no pg_ctl"
        printf '%s\n' "$PG_BIN"
        return
    fi
    local best="" d
    while IFS= read -r d; do
        [[ -x "$d/pg_ctl" && -x "$d/initdb" ]] && best="$d"
    done < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V)
    [[ -n "$best" ]] || die "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)"
    printf '%s\n' "$best"
}

is_root() {
    [[ "$(id -u)" -eq 0 ]]
}

# Runs a command as the cluster's owner: `postgres` when we are root, else ourselves. From / so that the
# postgres user never needs our working directory.
as_owner() {
    if is_root; then
        if command -v runuser >/dev/null 2>&1; then
            (cd / && runuser -u postgres -- "$@")
        else
            local cmd
            cmd="$(printf '%q ' "$@")"
            (cd / && su postgres -s /bin/sh -c "$cmd")
        fi
    else
        (cd / && "$@")
    fi
}

# A value quoted for postgresql.conf.
conf_quote() {
    printf "'%s'" "${1//\'/\'\'}"
}

is_running() {
    local bin="$1" data="$2"
    [[ -f "$data/PG_VERSION" ]] || return 1
    as_owner "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1
}

show_log() {
    local log="$1"
    if [[ -f "$log" ]]; then
        printf -- '--- %s (last 40 lines) ---\n' "$log" >&2
        tail -n 40 "$log" >&2 || true
    fi
}

cmd_start() {
    [[ $# -eq 2 ]] || usage
    local dir="$1" port="$2"
    [[ "$port" =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "bad port: $port"
    local bin
    bin="$(pg_bin)"

    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    local data="$dir/data" log="$dir/postgres.log"
    if is_root; then
        id postgres >/dev/null 2>&1 || die "running as root but there is no postgres system user"
        chown postgres: "$dir"
        chmod 0700 "$dir"
        as_owner test -w "$dir" -a -x "$dir" ||
            die "the postgres user cannot reach $dir: its parent is not traversable (use mktemp -d /tmp/...)"
    fi

    if [[ ! -f "$data/PG_VERSION" ]]; then
        as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
            {
                cat "$dir/initdb.log" >&2
                die "initdb failed"
            }
        # only the socket in DIR and loopback TCP, no password
        as_owner sh -c 'cat > "$1"' sh "$data/pg_hba.conf" <<'EOF'
# pg-cluster.sh: a throwaway test cluster, trust for the local socket and 127.0.0.1 only
local   all   all                 trust
host    all   all   127.0.0.1/32  trust
EOF
        as_owner sh -c 'printf "\ninclude_if_exists = '\''pg-cluster.conf'\''\n" >> "$1"' sh "$data/postgresql.conf"
    fi

    if is_running "$bin" "$data"; then
        local running_port
        running_port="$(sed -n 4p "$data/postmaster.pid" 2>/dev/null || true)"
        [[ "$running_port" == "$port" ]] || die "already running in $dir on port ${running_port:-?}, not $port"
    else
        # settings rewritten at each start: the port and mode may change between starts
        {
            printf 'listen_addresses = %s\n' "$(conf_quote 127.0.0.1)"
            printf 'port = %s\n' "$port"
            printf 'unix_socket_directories = %s\n' "$(conf_quote "$dir")"
            printf 'max_connections = 200\n'
            if [[ "${PG_FAST:-0}" == 1 ]]; then
                printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n'
            fi
        } | as_owner sh -c 'cat > "$1"' sh "$data/pg-cluster.conf"
        as_owner "$bin/pg_ctl" -D "$data" -l "$log" -w -t "${PG_START_TIMEOUT:-30}" start >&2 || {
            show_log "$log"
            die "the server did not start (see $log)"
        }
    fi

    # bounded wait until it accepts TCP connections on 127.0.0.1:PORT
    local deadline=$((SECONDS + ${PG_START_TIMEOUT:-30}))
    until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres; do
        if ((SECONDS >= deadline)); then
            show_log "$log"
            die "no connections accepted on 127.0.0.1:$port after ${PG_START_TIMEOUT:-30}s"
        fi
        sleep 0.2
    done
    printf 'postgres://postgres@127.0.0.1:%s/postgres\n' "$port"
}

cmd_stop() {
    [[ $# -eq 1 ]] || usage
    local dir="$1"
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
        printf 'pg-cluster: no cluster in %s, nothing to stop\n' "$dir" >&2
        return 0
    fi
    dir="$(cd "$dir" && pwd)"
    local bin data="$dir/data"
    bin="$(pg_bin)"
    if ! is_running "$bin" "$data"; then
        printf 'pg-cluster: not running in %s\n' "$dir" >&2
        return 0
    fi
    as_owner "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >&2 || {
        show_log "$dir/postgres.log"
        die "stop failed"
    }
}

[[ $# -ge 1 ]] || usage
sub="$1"
shift
case "$sub" in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
*) usage ;;
esac
