#!/usr/bin/env bash
# The local broker and the five discospace services as background processes.
#
#   deploy/local/services.sh start   start the broker (deploy/local/kafka.sh) and every service,
#                                    wait until each answers /health
#   deploy/local/services.sh stop    stop every service by pid (SIGTERM, then SIGKILL), then the
#                                    broker this script started; nothing is left running
#   deploy/local/services.sh status  a table: name, pid, port, health (exit 3 if any is down)
#   deploy/local/services.sh logs    follow every log (-n N: lines of history, default 20)
#
# Pid and log files live in .run/ (DISCOSPACE_RUN_DIR). With KAFKA_BOOTSTRAP_SERVERS set, the
# services use that cluster and no broker is started. Ports: DISCOSPACE_<NAME>_HTTP_PORT
# (defaults 8101-8105), KAFKA_PORT for the local broker (9092).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/../.." && pwd)"
RUN_DIR="${DISCOSPACE_RUN_DIR:-$REPO_ROOT/.run}"
[[ "$RUN_DIR" == /* ]] || RUN_DIR="$PWD/$RUN_DIR"
PY="${DISCOSPACE_PYTHON:-$REPO_ROOT/.venv/bin/python}"
KAFKA_SH="$HERE/kafka.sh"
# Two actuator workers: the synthetic one (pool `default`, a test and demo device) and a
# cpu_train worker (pool `cpu`) that trains a small numpy language model on this machine.
SERVICES=(registry explorer sampler actuator actuator-cpu projector)
HEALTH_TIMEOUT="${DISCOSPACE_HEALTH_TIMEOUT:-60}"
STOP_TIMEOUT="${DISCOSPACE_STOP_TIMEOUT:-20}"
export KAFKA_STATE_DIR="${KAFKA_STATE_DIR:-$RUN_DIR/kafka}"

say() { echo "services.sh: $*"; }
die() { echo "services.sh: $*" >&2; exit 1; }
now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

default_port() {
  case "$1" in
    registry) echo 8101 ;; explorer) echo 8102 ;; sampler) echo 8103 ;;
    actuator) echo 8104 ;; projector) echo 8105 ;; actuator-cpu) echo 8106 ;;
  esac
}

# The Python module of a service: `actuator-cpu` is another worker of `discospace.actuator`.
module_of() { echo "${1%%-*}"; }

port_of() {
  local variable="DISCOSPACE_${1^^}_HTTP_PORT"
  variable="${variable//-/_}"
  echo "${!variable:-$(default_port "$1")}"
}

# Settings of one worker beyond the shared ones (its port, plugin and pool).
worker_env() {
  local module
  module="$(module_of "$1")"
  export "DISCOSPACE_${module^^}_HTTP_PORT=$(port_of "$1")"
  if [[ "$1" == actuator-cpu ]]; then
    export DISCOSPACE_ACTUATOR_ACTUATOR=cpu_train DISCOSPACE_ACTUATOR_POOL=cpu
    export DISCOSPACE_ACTUATOR_WORKER_ID="${DISCOSPACE_ACTUATOR_CPU_WORKER_ID:-local-cpu}"
  fi
}

# Running, and not a zombie waiting for whoever adopted it to reap it.
alive() {
  local state
  state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [[ -n "$state" && "$state" != Z* ]]
}

pid_file() { echo "$RUN_DIR/$1.pid"; }
log_file() { echo "$RUN_DIR/$1.log"; }

# The pid of a running service started here; a stale pid file (or a recycled pid) gives nothing.
service_pid() {
  local file pid
  file="$(pid_file "$1")"
  [[ -f "$file" ]] || return 1
  pid="$(cat "$file")"
  [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "-m discospace.$(module_of "$1")" || return 1
  echo "$pid"
}

health_of() {
  local code
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$(port_of "$1")/health" 2>/dev/null)" || true
  case "$code" in 200) echo ok ;; 000 | "") echo "no answer" ;; *) echo "HTTP $code" ;; esac
}

bootstrap() {
  if [[ -n "${KAFKA_BOOTSTRAP_SERVERS:-}" ]]; then
    echo "$KAFKA_BOOTSTRAP_SERVERS"
  else
    echo "127.0.0.1:${KAFKA_PORT:-9092}"
  fi
}

start_broker() {
  if [[ -n "${KAFKA_BOOTSTRAP_SERVERS:-}" ]]; then
    say "using the Kafka cluster at $KAFKA_BOOTSTRAP_SERVERS"
    return 0
  fi
  bash "$KAFKA_SH" start
  touch "$RUN_DIR/kafka.ours"
}

launch() {
  local name="$1" servers="$2"
  if service_pid "$name" >/dev/null; then
    say "$name already running (pid $(service_pid "$name"))"
    return 0
  fi
  (
    cd "$REPO_ROOT"
    export KAFKA_BOOTSTRAP_SERVERS="$servers"
    export DISCOSPACE_STORE_DATA_DIR="${DISCOSPACE_STORE_DATA_DIR:-$RUN_DIR/store}"
    worker_env "$name"
    local module
    module="$(module_of "$name")"
    if command -v setsid >/dev/null; then
      exec setsid "$PY" -m "discospace.$module" >>"$(log_file "$name")" 2>&1 </dev/null
    fi
    exec "$PY" -m "discospace.$module" >>"$(log_file "$name")" 2>&1 </dev/null
  ) &
  echo $! >"$(pid_file "$name")"
}

wait_healthy() {
  local name="$1" t0="$2" deadline=$((SECONDS + HEALTH_TIMEOUT))
  while [[ "$(health_of "$name")" != ok ]]; do
    if ! service_pid "$name" >/dev/null; then
      echo "services.sh: $name exited during start; the end of $(log_file "$name"):" >&2
      tail -n 5 "$(log_file "$name")" >&2
      return 1
    fi
    ((SECONDS < deadline)) || { echo "services.sh: $name not healthy after ${HEALTH_TIMEOUT}s" >&2; return 1; }
    sleep 0.1
  done
  say "$name healthy on port $(port_of "$name") after $(since "$t0")s"
}

start() {
  [[ -x "$PY" ]] || die "$PY not found: run \`make setup\` first."
  mkdir -p "$RUN_DIR"
  start_broker
  local servers name t0
  servers="$(bootstrap)"
  t0="$(now)"
  for name in "${SERVICES[@]}"; do launch "$name" "$servers"; done
  for name in "${SERVICES[@]}"; do
    wait_healthy "$name" "$t0" || { stop; die "start failed; everything was stopped."; }
  done
  say "all services healthy after $(since "$t0")s"
}

stop_service() {
  local name="$1" pid deadline
  if ! pid="$(service_pid "$name")"; then
    rm -f "$(pid_file "$name")"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + STOP_TIMEOUT))
  while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  if alive "$pid"; then
    say "$name (pid $pid) still running after ${STOP_TIMEOUT}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$(pid_file "$name")"
  say "$name stopped"
}

stop() {
  local index
  for ((index = ${#SERVICES[@]} - 1; index >= 0; index--)); do stop_service "${SERVICES[index]}"; done
  if [[ -f "$RUN_DIR/kafka.ours" ]]; then
    bash "$KAFKA_SH" stop
    rm -f "$RUN_DIR/kafka.ours"
  fi
}

status() {
  local name pid health down=0
  printf '%-13s %-8s %-6s %s\n' NAME PID PORT HEALTH
  for name in "${SERVICES[@]}"; do
    if pid="$(service_pid "$name")"; then health="$(health_of "$name")"; else pid="-" health="stopped"; fi
    [[ "$health" == ok ]] || down=1
    printf '%-13s %-8s %-6s %s\n' "$name" "$pid" "$(port_of "$name")" "$health"
  done
  if [[ -n "${KAFKA_BOOTSTRAP_SERVERS:-}" ]]; then
    printf '%-13s %-8s %-6s %s\n' kafka - - "external: $KAFKA_BOOTSTRAP_SERVERS"
  elif [[ -f "$KAFKA_STATE_DIR/kafka.pid" ]] && bash "$KAFKA_SH" status >/dev/null 2>&1; then
    printf '%-13s %-8s %-6s %s\n' kafka "$(cat "$KAFKA_STATE_DIR/kafka.pid")" \
      "$(cat "$KAFKA_STATE_DIR/port" 2>/dev/null || echo "${KAFKA_PORT:-9092}")" ok
  else
    printf '%-13s %-8s %-6s %s\n' kafka - "${KAFKA_PORT:-9092}" stopped
    down=1
  fi
  return $((down ? 3 : 0))
}

logs() {
  local lines=20
  [[ "${1:-}" == "-n" && -n "${2:-}" ]] && lines="$2"
  local files=()
  for name in "${SERVICES[@]}"; do [[ -f "$(log_file "$name")" ]] && files+=("$(log_file "$name")"); done
  [[ -f "$KAFKA_STATE_DIR/logs/server.log" ]] && files+=("$KAFKA_STATE_DIR/logs/server.log")
  ((${#files[@]})) || die "no logs in $RUN_DIR yet: run \`make up\` first."
  exec tail -n "$lines" -F "${files[@]}"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  logs) shift; logs "$@" ;;
  *) echo "usage: $0 start|stop|status|logs [-n N]" >&2; exit 2 ;;
esac
