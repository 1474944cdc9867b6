#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft, one combined broker/controller) on 127.0.0.1, from Maven.
#
#   deploy/local/kafka.sh fetch      fetch the broker jars into a cache outside the repo (idempotent)
#   deploy/local/kafka.sh start      format storage once, start, wait until it answers Kafka requests
#   deploy/local/kafka.sh stop       stop it by pid (SIGTERM, then SIGKILL), leave nothing running
#   deploy/local/kafka.sh status     exit 0 when running, 3 when not
#   deploy/local/kafka.sh logs [-f]  the end of the broker log (-f follows it)
#
# Environment (all optional):
#   KAFKA_PORT              client port (9092)
#   KAFKA_CONTROLLER_PORT   KRaft controller port (default: a free port chosen at start)
#   KAFKA_STATE_DIR         data, logs, config and pid file (<repo>/.run/kafka)
#   KAFKA_CACHE_DIR         jars and Maven repository (${XDG_CACHE_HOME:-~/.cache}/discospace/kafka-<version>)
#   KAFKA_HEAP_OPTS         JVM heap (-Xms128m -Xmx512m)
#   KAFKA_START_TIMEOUT     seconds to wait for the broker to answer (90)
#   KAFKA_STOP_TIMEOUT      seconds to wait after SIGTERM before SIGKILL (30)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/../.." && pwd)"
CONF_DIR="$HERE/kafka"
POM="$CONF_DIR/pom.xml"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")"
CACHE_DIR="${KAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/discospace/kafka-$KAFKA_VERSION}"
LIBS_DIR="$CACHE_DIR/libs"
STATE_DIR="${KAFKA_STATE_DIR:-$REPO_ROOT/.run/kafka}"
PORT="${KAFKA_PORT:-9092}"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"

[[ "$STATE_DIR" == /* ]] || STATE_DIR="$PWD/$STATE_DIR"
PID_FILE="$STATE_DIR/kafka.pid"
PORT_FILE="$STATE_DIR/port"
LOG_DIR="$STATE_DIR/logs"
DATA_DIR="$STATE_DIR/data"
CONFIG="$STATE_DIR/server.properties"

say() { echo "kafka.sh: $*"; }
die() { echo "kafka.sh: $*" >&2; exit 1; }
now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

need_java() {
  command -v java >/dev/null 2>&1 ||
    die "Java >= 17 is needed to run Kafka and was not found; install a JDK (apt-get install openjdk-17-jre-headless) or set KAFKA_BOOTSTRAP_SERVERS to an existing cluster."
  local major
  major="$(java -version 2>&1 | sed -n -E '1s/.*version "([0-9]+)(\.[0-9]+)?.*/\1/p')"
  [[ "$major" =~ ^[0-9]+$ && "$major" -ge 17 ]] ||
    die "Java >= 17 is needed to run Kafka $KAFKA_VERSION (found: $(java -version 2>&1 | head -1))."
}

need_mvn() {
  command -v mvn >/dev/null 2>&1 ||
    die "Maven (mvn) is needed to fetch the Kafka jars and was not found; install it (apt-get install maven) or set KAFKA_BOOTSTRAP_SERVERS to an existing cluster."
}

need_python() {
  command -v python3 >/dev/null 2>&1 || die "python3 is needed to check that the broker answers."
}

pom_stamp() { sha256sum "$POM" | cut -c1-64; }

jars_fetched() { [[ -f "$LIBS_DIR/.fetched" && "$(cat "$LIBS_DIR/.fetched")" == "$(pom_stamp)" ]]; }

# Maven resolves the broker's runtime classpath into a fresh folder, swapped in only when complete,
# under a lock so two sessions fetching at once do not trample each other.
fetch() {
  jars_fetched && return 0
  need_java
  need_mvn
  mkdir -p "$CACHE_DIR"
  exec 9>"$CACHE_DIR/.lock"
  flock 9
  if ! jars_fetched; then
    local t0 tmp="$LIBS_DIR.partial"
    t0="$(now)"
    say "fetching Kafka $KAFKA_VERSION jars with Maven into $CACHE_DIR ..."
    rm -rf "$tmp"
    if ! mvn -q -B -f "$POM" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$tmp" -Dmaven.repo.local="$CACHE_DIR/m2" >"$CACHE_DIR/mvn.log" 2>&1; then
      tail -n 20 "$CACHE_DIR/mvn.log" >&2
      die "Maven could not fetch the Kafka jars (full log: $CACHE_DIR/mvn.log)."
    fi
    pom_stamp >"$tmp/.fetched"
    rm -rf "$LIBS_DIR"
    mv "$tmp" "$LIBS_DIR"
    say "fetched $(find "$LIBS_DIR" -name '*.jar' | wc -l) jars in $(since "$t0")s"
  fi
  flock -u 9
  exec 9>&-
}

# The pid in the pid file, only while that process is still our broker (pids get reused).
broker_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid args
  pid="$(cat "$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  args="$(ps -ww -o stat= -o args= -p "$pid" 2>/dev/null)" || return 1
  [[ "$args" != Z* && "$args" == *kafka.Kafka* && "$args" == *"$CONFIG"* ]] || return 1
  echo "$pid"
}

# Sends a Kafka ApiVersions request: succeeds only once the broker really serves requests,
# which is later than the moment its port accepts TCP connections.
answers() {
  python3 - "$1" <<'PY'
import socket, struct, sys

request = struct.pack(">hhih", 18, 0, 1, 8) + b"kafka.sh"
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as conn:
        conn.sendall(struct.pack(">i", len(request)) + request)
        head = b""
        while len(head) < 10:
            chunk = conn.recv(10 - len(head))
            if not chunk:
                sys.exit(1)
            head += chunk
except OSError:
    sys.exit(1)
_size, correlation_id, error_code = struct.unpack(">iih", head)
sys.exit(0 if (correlation_id, error_code) == (1, 0) else 1)
PY
}

port_in_use() {
  python3 - "$1" <<'PY'
import socket, sys

with socket.socket() as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", int(sys.argv[1])))
    except OSError:
        sys.exit(0)
sys.exit(1)
PY
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

write_config() {
  local controller_port="$1"
  mkdir -p "$DATA_DIR" "$LOG_DIR"
  sed -e "s|@PORT@|$PORT|g" -e "s|@CONTROLLER_PORT@|$controller_port|g" \
    -e "s|@DATA_DIR@|$DATA_DIR|g" "$CONF_DIR/server.properties.in" >"$CONFIG"
}

java_cmd() {
  local heap
  read -r -a heap <<<"$HEAP_OPTS"
  JAVA_CMD=(java "${heap[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError
    -Djava.awt.headless=true -Dkafka.logs.dir="$LOG_DIR"
    -Dlog4j2.configurationFile="$CONF_DIR/log4j2.properties" -cp "$LIBS_DIR/*")
}

run_java() {
  java_cmd
  "${JAVA_CMD[@]}" "$@"
}

# KRaft storage is formatted once per state dir; the cluster id is kept next to it.
format_storage() {
  [[ -f "$DATA_DIR/meta.properties" ]] && return 0
  local cluster_id
  # Like Kafka's own Uuid.randomUuid: never one that starts with '-' (1 in 64 of them would),
  # which the storage tool would read as an option ("argument --cluster-id: expected one argument").
  cluster_id="$(python3 -c 'import base64, uuid
while (i := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"): pass
print(i)')"
  echo "$cluster_id" >"$STATE_DIR/cluster.id"
  run_java kafka.tools.StorageTool format -t "$cluster_id" -c "$CONFIG" >>"$LOG_DIR/format.log" 2>&1 ||
    { tail -n 20 "$LOG_DIR/format.log" >&2; die "formatting KRaft storage in $DATA_DIR failed."; }
}

# setsid detaches the broker from the caller's session, so it outlives `make up` and ignores the
# caller's Ctrl-C; it execs without forking here, so $! is the JVM's own pid.
launch() {
  java_cmd
  cd "$STATE_DIR"
  nohup setsid "${JAVA_CMD[@]}" kafka.Kafka "$CONFIG" >>"$LOG_DIR/kafka.out" 2>&1 </dev/null &
  echo $! >"$PID_FILE"
  cd - >/dev/null
}

fail_start() {
  echo "---- last lines of $LOG_DIR/server.log and kafka.out" >&2
  tail -n 25 "$LOG_DIR/server.log" "$LOG_DIR/kafka.out" >&2 2>/dev/null || true
  stop >/dev/null
  die "$1"
}

wait_until_answering() {
  local t0="$1"
  until answers "$PORT"; do
    broker_pid >/dev/null || fail_start "the broker exited during start (log: $LOG_DIR/server.log)."
    if awk -v a="$t0" -v b="$(now)" -v t="$START_TIMEOUT" 'BEGIN { exit !(b - a > t) }'; then
      fail_start "the broker did not answer on 127.0.0.1:$PORT within ${START_TIMEOUT}s."
    fi
    sleep 0.2
  done
}

start() {
  local pid t0 controller_port
  if pid="$(broker_pid)"; then
    say "already running on 127.0.0.1:$(cat "$PORT_FILE") (pid $pid)"
    return 0
  fi
  need_java
  need_python
  fetch
  port_in_use "$PORT" &&
    die "port $PORT is already in use; set KAFKA_PORT to a free port, or KAFKA_BOOTSTRAP_SERVERS to use the broker there."
  controller_port="${KAFKA_CONTROLLER_PORT:-$(free_port)}"
  t0="$(now)"
  write_config "$controller_port"
  format_storage
  echo "$PORT" >"$PORT_FILE"
  launch
  wait_until_answering "$t0"
  say "broker answering on 127.0.0.1:$PORT after $(since "$t0")s (pid $(cat "$PID_FILE"), state $STATE_DIR)"
}

stop() {
  local pid t0
  if ! pid="$(broker_pid)"; then
    rm -f "$PID_FILE"
    say "not running"
    return 0
  fi
  t0="$(now)"
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + STOP_TIMEOUT))
  while broker_pid >/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if broker_pid >/dev/null; then
    say "still running after ${STOP_TIMEOUT}s, sending SIGKILL to $pid"
    kill -KILL "$pid" 2>/dev/null || true
    while broker_pid >/dev/null; do sleep 0.1; done
  fi
  rm -f "$PID_FILE"
  say "stopped (pid $pid) in $(since "$t0")s"
}

status() {
  local pid port
  if ! pid="$(broker_pid)"; then
    say "not running (state $STATE_DIR)"
    return 3
  fi
  port="$(cat "$PORT_FILE")"
  if answers "$port"; then
    say "running on 127.0.0.1:$port (pid $pid)"
  else
    say "running as pid $pid but not answering on 127.0.0.1:$port yet"
  fi
}

logs() {
  [[ -f "$LOG_DIR/server.log" ]] || die "no broker log yet in $LOG_DIR."
  if [[ "${1:-}" == "-f" ]]; then
    exec tail -n 50 -F "$LOG_DIR/server.log"
  fi
  tail -n 50 "$LOG_DIR/server.log"
}

case "${1:-}" in
  fetch) fetch && say "Kafka $KAFKA_VERSION jars ready in $LIBS_DIR" ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  logs) logs "${2:-}" ;;
  *)
    echo "usage: $0 fetch|start|stop|status|logs [-f]" >&2
    exit 2
    ;;
esac
