#!/usr/bin/env bash
# A real Prometheus server, for the scrape tests (`make test`) and for watching what `make up` runs.
#
#   deploy/local/prometheus.sh fetch    put prometheus and promtool into a cache outside the repo
#                                       (idempotent; checks that both run)
#   deploy/local/prometheus.sh path     print the prometheus binary's path (fetching it first)
#   deploy/local/prometheus.sh start    run it on 127.0.0.1:PROMETHEUS_PORT, scraping every process
#                                       `make up` started (.run/prometheus.yml, from services.sh)
#   deploy/local/prometheus.sh stop     stop it by pid; `make down` does this too
#   deploy/local/prometheus.sh status   exit 0 when running, 3 when not
#
# Where the binaries come from (PROMETHEUS_SOURCE; default: apt where apt-get exists, else go):
#   apt  Debian's (or Ubuntu's) `prometheus` package, downloaded by apt-get and unpacked into the
#        cache. No root needed: when the system's package lists do not have it, apt-get reads
#        fresh lists into the cache instead of /var/lib/apt.
#   go   built from the Prometheus Go module (PROMETHEUS_GO_VERSION) by `go install`, without
#        the cloud service discoveries (build tag remove_all_sd); needs Go, about 1 GB of modules
#        and up to 20 minutes on 2 cores.
#
# Environment (all optional):
#   PROMETHEUS_BIN          use this prometheus binary: fetch nothing
#   PROMETHEUS_CACHE_DIR    where the binaries go (${XDG_CACHE_HOME:-~/.cache}/discospace/prometheus)
#   PROMETHEUS_SOURCE       apt or go (above)
#   PROMETHEUS_GO_VERSION   the Go module version for `go` (v0.316.0, which is Prometheus 3.16.0)
#   PROMETHEUS_PORT         the port `start` listens on (9090)
#   PROMETHEUS_START_TIMEOUT seconds `start` waits for the server to be ready (120)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=settings.sh
source "$HERE/settings.sh"
CACHE_DIR="${PROMETHEUS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/discospace/prometheus}"
[[ "$CACHE_DIR" == /* ]] || CACHE_DIR="$PWD/$CACHE_DIR"
BIN_DIR="$CACHE_DIR/bin"
GO_VERSION="${PROMETHEUS_GO_VERSION:-v0.316.0}"
PORT="${PROMETHEUS_PORT:-9090}"
START_TIMEOUT="${PROMETHEUS_START_TIMEOUT:-120}"
STATE_DIR="$RUN_DIR/prometheus"
PID_FILE="$STATE_DIR/prometheus.pid"
GO_MODULE=github.com/prometheus/prometheus

say() { echo "prometheus.sh: $*"; }
die() { echo "prometheus.sh: $*" >&2; exit 1; }
now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

runs() { [[ -x "$1" ]] && "$1" --version >/dev/null 2>&1; }
fetched() { runs "$BIN_DIR/prometheus" && runs "$BIN_DIR/promtool"; }
version_of() { "$1" --version 2>&1 | head -n 1; }

source_to_use() {
  case "${PROMETHEUS_SOURCE:-}" in
    apt | go) echo "$PROMETHEUS_SOURCE" ;;
    "")
      if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
        echo apt
      elif command -v go >/dev/null; then
        echo go
      else
        die "neither apt-get (Debian, Ubuntu) nor Go is here to fetch Prometheus with; install Prometheus and set PROMETHEUS_BIN to its binary (promtool beside it), or install Go."
      fi
      ;;
    *) die "PROMETHEUS_SOURCE is apt or go, not '$PROMETHEUS_SOURCE'." ;;
  esac
}

# apt-get with its lists, archives and lock in the cache: works without root.
private_apt() {
  local apt_dir="$CACHE_DIR/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
  apt-get -q -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir" \
    -o Dir::Cache::Archives="$apt_dir/archives" -o Debug::NoLocking=1 \
    -o APT::Sandbox::User="$(id -un)" "$@"
}

# Into $1/bin: the package's own binaries, unpacked from the .deb (no install, no root).
from_apt() {
  local into="$1" log="$CACHE_DIR/fetch.log" deb
  mkdir -p "$into/deb"
  if ! (cd "$into/deb" && apt-get -q download prometheus) >>"$log" 2>&1; then
    say "reading Debian's package lists into $CACHE_DIR/apt ..."
    private_apt update >>"$log" 2>&1 || { tail -n 5 "$log" >&2; die "apt-get update failed (log: $log)."; }
    (cd "$into/deb" && private_apt download prometheus) >>"$log" 2>&1 ||
      { tail -n 5 "$log" >&2; die "apt-get could not download the prometheus package (log: $log)."; }
  fi
  deb="$(find "$into/deb" -name 'prometheus_*.deb' | head -n 1)"
  dpkg-deb -x "$deb" "$into/root"
  mkdir -p "$into/bin"
  mv "$into/root/usr/bin/prometheus" "$into/root/usr/bin/promtool" "$into/bin/"
  rm -rf "$into/deb" "$into/root"
}

from_go() {
  local into="$1" log="$CACHE_DIR/fetch.log"
  command -v go >/dev/null || die "Go is needed to build Prometheus (PROMETHEUS_SOURCE=go) and was not found."
  say "building Prometheus $GO_VERSION with $(go version | cut -d' ' -f3) (up to 20 minutes the first time) ..."
  GOBIN="$into/bin" GOFLAGS="${GOFLAGS:-} -trimpath" go install -tags remove_all_sd \
    -ldflags "-X github.com/prometheus/common/version.Version=$GO_VERSION" \
    "$GO_MODULE/cmd/prometheus@$GO_VERSION" "$GO_MODULE/cmd/promtool@$GO_VERSION" >>"$log" 2>&1 ||
    { tail -n 10 "$log" >&2; die "go install of Prometheus $GO_VERSION failed (log: $log)."; }
}

# The binaries land in a fresh folder, swapped in only once both run, under a lock so that two
# sessions fetching at once do not trample each other.
fetch() {
  if [[ -n "${PROMETHEUS_BIN:-}" ]]; then
    runs "$PROMETHEUS_BIN" || die "PROMETHEUS_BIN=$PROMETHEUS_BIN does not run."
    return 0
  fi
  fetched && return 0
  mkdir -p "$CACHE_DIR"
  exec 9>"$CACHE_DIR/.lock"
  flock 9
  if ! fetched; then
    local t0 source tmp="$CACHE_DIR/partial"
    t0="$(now)"
    source="$(source_to_use)"
    rm -rf "$tmp"
    "from_$source" "$tmp"
    runs "$tmp/bin/prometheus" && runs "$tmp/bin/promtool" ||
      die "the fetched prometheus does not run: $("$tmp/bin/prometheus" --version 2>&1 | head -n 1)"
    rm -rf "$BIN_DIR"
    mv "$tmp/bin" "$BIN_DIR"
    rm -rf "$tmp"
    say "fetched $(version_of "$BIN_DIR/prometheus") ($source) in $(since "$t0")s"
  fi
  flock -u 9
  exec 9>&-
}

binary() { echo "${PROMETHEUS_BIN:-$BIN_DIR/prometheus}"; }

# The pid in the pid file, only while that process is still our server (pids get reused).
server_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--storage.tsdb.path=$STATE_DIR/data" || return 1
  echo "$pid"
}

ready() { curl -s -o /dev/null --fail --max-time 2 "http://127.0.0.1:$PORT/-/ready"; }

start() {
  local pid t0
  if pid="$(server_pid)"; then
    say "already running on http://127.0.0.1:$(cat "$STATE_DIR/port") (pid $pid)"
    return 0
  fi
  fetch
  if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/"; then # another checkout's?
    die "port $PORT is already in use by another process: stop it, or set PROMETHEUS_PORT to a free port."
  fi
  bash "$HERE/services.sh" scrape-config >/dev/null
  mkdir -p "$STATE_DIR/data"
  t0="$(now)"
  echo "$PORT" >"$STATE_DIR/port"
  nohup setsid "$(binary)" --config.file="$RUN_DIR/prometheus.yml" \
    --storage.tsdb.path="$STATE_DIR/data" --storage.tsdb.retention.time=7d \
    --web.listen-address="127.0.0.1:$PORT" >>"$STATE_DIR/prometheus.log" 2>&1 </dev/null &
  echo $! >"$PID_FILE"
  local deadline=$((SECONDS + START_TIMEOUT))
  until ready; do
    server_pid >/dev/null || { tail -n 5 "$STATE_DIR/prometheus.log" >&2; die "prometheus exited during start (log: $STATE_DIR/prometheus.log)."; }
    if ((SECONDS >= deadline)); then # a server that runs but never gets ready held the start
      tail -n 5 "$STATE_DIR/prometheus.log" >&2
      stop >/dev/null
      die "prometheus was not ready after ${START_TIMEOUT}s; it was stopped (log: $STATE_DIR/prometheus.log; PROMETHEUS_START_TIMEOUT sets the wait)."
    fi
    sleep 0.2
  done
  say "Prometheus on http://127.0.0.1:$PORT after $(since "$t0")s, scraping what $RUN_DIR/prometheus.yml lists (pid $(cat "$PID_FILE"))"
}

stop() {
  local pid
  if ! pid="$(server_pid)"; then
    rm -f "$PID_FILE"
    say "not running"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 20))
  while server_pid >/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  server_pid >/dev/null && kill -KILL "$pid" 2>/dev/null
  rm -f "$PID_FILE"
  say "stopped (pid $pid)"
}

status() {
  local pid
  pid="$(server_pid)" || { say "not running"; return 3; }
  say "running on http://127.0.0.1:$(cat "$STATE_DIR/port") (pid $pid)"
}

if [[ "${1:-}" == start ]] && ! command -v curl >/dev/null; then
  die "needs curl to see the server answer (Debian: apt-get install curl)."
fi

case "${1:-}" in
  fetch) fetch && say "$(version_of "$(binary)") ready: $(binary)" ;;
  path) fetch >&2 && binary ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  *)
    echo "usage: $0 fetch|path|start|stop|status" >&2
    exit 2
    ;;
esac
