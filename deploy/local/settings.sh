# Sourced by the scripts in deploy/local/: the settings they share, read from the environment
# in one place, so that `make up`, `make demo` and the Prometheus scrape config agree on every
# port. Every variable read here is listed in the README ("Settings of make up, make demo and
# make test").
#
#   KAFKA_BOOTSTRAP_SERVERS          an existing Kafka cluster (then no local broker is started)
#   KAFKA_PORT                       the local broker's port (9092)
#   DISCOSPACE_RUN_DIR               pid files, logs, the scrape config and its targets (.run)
#   DISCOSPACE_<NAME>_HTTP_PORT      a process's /health and /metrics port (NAME: REGISTRY,
#                                    EXPLORER, SAMPLER, ACTUATOR, PROJECTOR, ACTUATOR_CPU)
#   DISCOSPACE_PROJECTOR_URL         where the CLI reads the store (the projector's port)
#   DISCOSPACE_PROJECTOR_API_TOKEN   the projector's API token (none by default: it listens on
#                                    127.0.0.1); the demo's CLI sends it as DISCOSPACE_API_TOKEN
#   DISCOSPACE_API_TOKEN             the token the CLI sends (default: the projector's)

SETTINGS_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
RUN_DIR="${DISCOSPACE_RUN_DIR:-$SETTINGS_REPO_ROOT/.run}"
[[ "$RUN_DIR" == /* ]] || RUN_DIR="$PWD/$RUN_DIR"

default_port() {
  case "$1" in
    registry) echo 8101 ;; explorer) echo 8102 ;; sampler) echo 8103 ;;
    actuator) echo 8104 ;; projector) echo 8105 ;; actuator-cpu) echo 8106 ;;
    *) return 1 ;;
  esac
}

# The port of a process `make up` runs: DISCOSPACE_<NAME>_HTTP_PORT, else its default. An extra
# worker (`services.sh worker NAME`) keeps the port it was started on in .run/worker-NAME.port.
port_of() {
  if [[ "$1" == worker-* ]]; then
    cat "$RUN_DIR/$1.port" 2>/dev/null || echo "-"
    return 0
  fi
  local variable="DISCOSPACE_${1^^}_HTTP_PORT"
  variable="${variable//-/_}"
  echo "${!variable:-$(default_port "$1")}"
}

# The Kafka cluster every process and the CLI use.
bootstrap() {
  if [[ -n "${KAFKA_BOOTSTRAP_SERVERS:-}" ]]; then
    echo "$KAFKA_BOOTSTRAP_SERVERS"
  else
    echo "127.0.0.1:${KAFKA_PORT:-9092}"
  fi
}

projector_url() { echo "${DISCOSPACE_PROJECTOR_URL:-http://127.0.0.1:$(port_of projector)}"; }

# What the CLI needs to talk to the processes `make up` started with these settings.
export_client_settings() {
  KAFKA_BOOTSTRAP_SERVERS="$(bootstrap)"
  DISCOSPACE_PROJECTOR_URL="$(projector_url)"
  export KAFKA_BOOTSTRAP_SERVERS DISCOSPACE_PROJECTOR_URL
  local token="${DISCOSPACE_API_TOKEN:-${DISCOSPACE_PROJECTOR_API_TOKEN:-}}"
  if [[ -n "$token" ]]; then
    export DISCOSPACE_API_TOKEN="$token"
  fi
}
