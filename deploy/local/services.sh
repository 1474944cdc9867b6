#!/usr/bin/env bash
# The local broker and the five discospace services as background processes.
#
#   deploy/local/services.sh start          start the broker (deploy/local/kafka.sh) and every
#                                           service, wait until each answers /health, and write
#                                           the Prometheus scrape config for them (.run/prometheus.yml)
#   deploy/local/services.sh worker NAME    start one more actuator worker (its settings from the
#                                           DISCOSPACE_ACTUATOR_* variables), scraped like the others
#   deploy/local/services.sh stop           stop every service and worker by pid (SIGTERM, then
#                                           SIGKILL), then Prometheus and the broker this script
#                                           started; nothing is left running
#   deploy/local/services.sh status         a table: name, pid, port, health (exit 3 if any is down)
#   deploy/local/services.sh logs           follow every log (-n N: lines of history, default 20)
#   deploy/local/services.sh scrape-config  only write the scrape config and its target files
#
# Pid and log files live in .run/ (DISCOSPACE_RUN_DIR). With KAFKA_BOOTSTRAP_SERVERS set, the
# services use that cluster and no broker is started. Ports: DISCOSPACE_<NAME>_HTTP_PORT
# (defaults 8101-8106), KAFKA_PORT for the local broker (9092); see settings.sh.
#
# The local broker is secure (SASL_SSL, ACLs) unless KAFKA_SECURITY=plaintext: each process logs
# in as its own principal (registry, explorer, sampler, actuator for every worker, projector),
# with the settings kafka.sh wrote to <KAFKA_STATE_DIR>/credentials/<principal>.env, or those
# in DISCOSPACE_KAFKA_CREDENTIALS (e.g. for an external cluster).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=settings.sh
source "$HERE/settings.sh"
PY="${DISCOSPACE_PYTHON:-$REPO_ROOT/.venv/bin/python}"
KAFKA_SH="$HERE/kafka.sh"
# Two actuator workers: the synthetic one (pool `default`, a test and demo device) and a
# cpu_train worker (pool `cpu`) that trains a small numpy language model on this machine.
SERVICES=(registry explorer sampler actuator actuator-cpu projector)
HEALTH_TIMEOUT="${DISCOSPACE_HEALTH_TIMEOUT:-60}"
STOP_TIMEOUT="${DISCOSPACE_STOP_TIMEOUT:-20}"
FIRST_WORKER_PORT=8107
TARGETS_DIR="$RUN_DIR/targets"
export KAFKA_STATE_DIR="${KAFKA_STATE_DIR:-$RUN_DIR/kafka}"

say() { echo "services.sh: $*"; }
die() { echo "services.sh: $*" >&2; exit 1; }
now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The Python module of a process, which is also its Prometheus job: `actuator-cpu` and the extra
# workers (`worker-NAME`) are more workers of `discospace.actuator`.
module_of() {
  case "$1" in
    worker-*) echo actuator ;;
    *) echo "${1%%-*}" ;;
  esac
}

# Settings of one process beyond the shared ones (its port, plugin and pool).
worker_env() {
  local module
  module="$(module_of "$1")"
  export "DISCOSPACE_${module^^}_HTTP_PORT=$(port_of "$1")"
  if [[ "$1" == actuator-cpu ]]; then
    export DISCOSPACE_ACTUATOR_ACTUATOR=cpu_train DISCOSPACE_ACTUATOR_POOL=cpu
    export DISCOSPACE_ACTUATOR_WORKER_ID="${DISCOSPACE_ACTUATOR_CPU_WORKER_ID:-local-cpu}"
  elif [[ "$1" == worker-* ]]; then
    export DISCOSPACE_ACTUATOR_WORKER_ID="${DISCOSPACE_ACTUATOR_WORKER_ID:-${1#worker-}}"
  fi
}

# The pool label of an actuator's scrape target.
pool_of() {
  if [[ "$1" == actuator-cpu ]]; then echo cpu; else echo "${DISCOSPACE_ACTUATOR_POOL:-default}"; fi
}

# Every process started here: the services, then the extra workers that have a pid file.
processes() {
  local file
  printf '%s\n' "${SERVICES[@]}"
  for file in "$RUN_DIR"/worker-*.pid; do
    [[ -e "$file" ]] && basename "$file" .pid
  done
  return 0
}

# Running, and not a zombie waiting for whoever adopted it to reap it.
alive() {
  local state
  state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [[ -n "$state" && "$state" != Z* ]]
}

pid_file() { echo "$RUN_DIR/$1.pid"; }
log_file() { echo "$RUN_DIR/$1.log"; }

# The pid of a running process started here; a stale pid file (or a recycled pid) gives nothing.
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

# One Prometheus file_sd target file per process: targets/<job>/<name>.json, written whole
# and then renamed, so Prometheus never reads half a file.
write_target() {
  local name="$1" job dir labels
  job="$(module_of "$name")"
  dir="$TARGETS_DIR/$job"
  labels="\"process\": \"$name\""
  [[ "$job" == actuator ]] && labels+=", \"pool\": \"$(pool_of "$name")\""
  mkdir -p "$dir"
  printf '[{"targets": ["127.0.0.1:%s"], "labels": {%s}}]\n' "$(port_of "$name")" "$labels" \
    >"$dir/$name.json.partial"
  mv "$dir/$name.json.partial" "$dir/$name.json"
}

# The scrape config of everything `make up` runs: one job per service (the dashboards group by
# `job`), its targets read from targets/<job>/*.json, so that a worker started later with
# `services.sh worker` is scraped as soon as its file appears.
write_scrape_config() {
  local name job
  mkdir -p "$TARGETS_DIR"
  for name in "${SERVICES[@]}"; do write_target "$name"; done
  {
    echo "# Written by deploy/local/services.sh from the ports it uses; run it with"
    echo "# deploy/local/prometheus.sh start. Targets: one file per process under $TARGETS_DIR."
    echo "global: {scrape_interval: 5s, scrape_timeout: 4s, evaluation_interval: 5s, external_labels: {deployment: local}}"
    echo "scrape_configs:"
    for job in $(for name in "${SERVICES[@]}"; do module_of "$name"; done | awk '!seen[$0]++'); do
      echo "  - job_name: $job"
      echo "    file_sd_configs: [{files: [\"$TARGETS_DIR/$job/*.json\"], refresh_interval: 30s}]"
      # a worker's metrics carry the pool it serves: that label wins over its target's
      if [[ "$job" == actuator ]]; then echo "    honor_labels: true"; fi
    done
  } >"$RUN_DIR/prometheus.yml.partial"
  mv "$RUN_DIR/prometheus.yml.partial" "$RUN_DIR/prometheus.yml"
}

start_broker() {
  if [[ -n "${KAFKA_BOOTSTRAP_SERVERS:-}" ]]; then
    say "using the Kafka cluster at $KAFKA_BOOTSTRAP_SERVERS"
    return 0
  fi
  touch "$RUN_DIR/kafka.ours" # first: a start interrupted while the broker comes up is ours too
  bash "$KAFKA_SH" start
}

# Exit when `name`'s port answers and `name` is not running: another checkout's, or anything else.
refuse_taken_port() {
  local name="$1"
  service_pid "$name" >/dev/null && return 0
  if [[ "$(health_of "$name")" != "no answer" ]]; then
    die "port $(port_of "$name") of $name is already in use by another process: stop it (\`make down\` in its checkout), or set its port (DISCOSPACE_<SERVICE>_HTTP_PORT)."
  fi
}

launch() {
  local name="$1" servers="$2"
  if service_pid "$name" >/dev/null; then
    say "$name already running (pid $(service_pid "$name"))"
    return 0
  fi
  refuse_taken_port "$name"
  (
    cd "$REPO_ROOT"
    local module
    module="$(module_of "$name")"
    load_credentials "$module" >>"$(log_file "$name")" 2>&1 || exit 2
    export KAFKA_BOOTSTRAP_SERVERS="$servers"
    export DISCOSPACE_STORE_DATA_DIR="${DISCOSPACE_STORE_DATA_DIR:-$RUN_DIR/store}"
    worker_env "$name"
    if command -v setsid >/dev/null; then
      exec setsid "$PY" -m "discospace.$module" >>"$(log_file "$name")" 2>&1 </dev/null
    fi
    exec "$PY" -m "discospace.$module" >>"$(log_file "$name")" 2>&1 </dev/null
  ) &
  echo $! >"$(pid_file "$name")"
}

wait_healthy() {
  local name="$1" t0="$2" deadline=$((SECONDS + HEALTH_TIMEOUT)) pid
  pid="$(cat "$(pid_file "$name")" 2>/dev/null)" || pid=""
  while [[ "$(health_of "$name")" != ok ]]; do
    # alive, not service_pid: until its subshell execs Python, its command line is bash's
    if [[ ! "$pid" =~ ^[0-9]+$ ]] || ! alive "$pid"; then
      echo "services.sh: $name exited during start; the end of $(log_file "$name"):" >&2
      tail -n 5 "$(log_file "$name")" >&2
      return 1
    fi
    ((SECONDS < deadline)) || { echo "services.sh: $name not healthy after ${HEALTH_TIMEOUT}s" >&2; return 1; }
    sleep 0.1
  done
  service_pid "$name" >/dev/null || { echo "services.sh: $name exited during start; the end of $(log_file "$name"):" >&2; tail -n 5 "$(log_file "$name")" >&2; return 1; }
  say "$name healthy on port $(port_of "$name") after $(since "$t0")s"
}

need_python() { [[ -x "$PY" ]] || die "$PY not found: run \`make setup\` first."; }

start() {
  need_python
  mkdir -p "$RUN_DIR"
  local servers name t0
  # every port first: a taken one found later left the services launched before it running
  for name in "${SERVICES[@]}"; do refuse_taken_port "$name"; done
  write_scrape_config
  start_broker
  servers="$(bootstrap)"
  t0="$(now)"
  for name in "${SERVICES[@]}"; do launch "$name" "$servers"; done
  for name in "${SERVICES[@]}"; do
    wait_healthy "$name" "$t0" || { stop; die "start failed; everything was stopped."; }
  done
  say "all services healthy after $(since "$t0")s"
}

port_in_use() { curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1/" 2>/dev/null || [[ $? -ne 7 ]]; }

free_worker_port() {
  local port="$FIRST_WORKER_PORT"
  while port_in_use "$port" || grep -qx "$port" "$RUN_DIR"/worker-*.port 2>/dev/null; do
    port=$((port + 1))
  done
  echo "$port"
}

# One more actuator worker, named NAME (its worker id unless DISCOSPACE_ACTUATOR_WORKER_ID is
# set), on DISCOSPACE_ACTUATOR_HTTP_PORT or the first free port from 8107; `stop` stops it too.
worker() {
  local name="${1:-}" t0
  [[ "$name" =~ ^[a-z0-9][a-z0-9-]*$ ]] ||
    die "usage: $0 worker NAME (lowercase letters, digits and dashes), settings in DISCOSPACE_ACTUATOR_*."
  need_python
  mkdir -p "$RUN_DIR"
  name="worker-$name"
  if ! service_pid "$name" >/dev/null; then
    echo "${DISCOSPACE_ACTUATOR_HTTP_PORT:-$(free_worker_port)}" >"$RUN_DIR/$name.port"
  fi
  t0="$(now)"
  launch "$name" "$(bootstrap)"
  wait_healthy "$name" "$t0" || { stop_service "$name"; die "$name did not start."; }
  write_target "$name"
}

stop_service() {
  local name="$1" pid deadline
  if pid="$(service_pid "$name")"; then
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + STOP_TIMEOUT))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
    if alive "$pid"; then
      say "$name (pid $pid) still running after ${STOP_TIMEOUT}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    say "$name stopped"
  fi
  rm -f "$(pid_file "$name")"
  if [[ "$name" == worker-* ]]; then
    rm -f "$RUN_DIR/$name.port" "$TARGETS_DIR/actuator/$name.json"
  fi
}

stop() {
  local names index
  mapfile -t names < <(processes)
  for ((index = ${#names[@]} - 1; index >= 0; index--)); do stop_service "${names[index]}"; done
  bash "$HERE/prometheus.sh" stop | grep -v "not running" || true
  if [[ -f "$RUN_DIR/kafka.ours" ]]; then
    bash "$KAFKA_SH" stop
    rm -f "$RUN_DIR/kafka.ours"
  fi
}

status() {
  local name pid health down=0
  printf '%-13s %-8s %-6s %s\n' NAME PID PORT HEALTH
  while read -r name; do
    if pid="$(service_pid "$name")"; then health="$(health_of "$name")"; else pid="-" health="stopped"; fi
    [[ "$health" == ok ]] || down=1
    printf '%-13s %-8s %-6s %s\n' "$name" "$pid" "$(port_of "$name")" "$health"
  done < <(processes)
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
  local lines=20 name
  [[ "${1:-}" == "-n" && -n "${2:-}" ]] && lines="$2"
  local files=()
  while read -r name; do [[ -f "$(log_file "$name")" ]] && files+=("$(log_file "$name")"); done < <(processes)
  [[ -f "$KAFKA_STATE_DIR/logs/server.log" ]] && files+=("$KAFKA_STATE_DIR/logs/server.log")
  ((${#files[@]})) || die "no logs in $RUN_DIR yet: run \`make up\` first."
  exec tail -n "$lines" -F "${files[@]}"
}

for tool in curl ps; do # health checks, free ports and pids: without them starts never end
  command -v "$tool" >/dev/null || die "needs $tool (Debian: apt-get install curl procps)."
done

case "${1:-}" in
  start) start ;;
  worker) worker "${2:-}" ;;
  stop) stop ;;
  status) status ;;
  logs) shift; logs "$@" ;;
  scrape-config) mkdir -p "$RUN_DIR" && write_scrape_config && say "wrote $RUN_DIR/prometheus.yml" ;;
  *) echo "usage: $0 start|worker NAME|stop|status|logs [-n N]|scrape-config" >&2; exit 2 ;;
esac
