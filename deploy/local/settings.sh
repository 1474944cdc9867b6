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
#   KAFKA_SECURITY                   the local broker's mode: sasl_ssl (default) or plaintext
#   DISCOSPACE_KAFKA_CREDENTIALS     a folder of <principal>.env files (KAFKA_SECURITY_PROTOCOL,
#                                    KAFKA_SASL_USERNAME, ...), one per service and `cli`; by
#                                    default those the local secure broker wrote in
#                                    <KAFKA_STATE_DIR>/credentials, none for KAFKA_BOOTSTRAP_SERVERS

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

# Where each principal's Kafka settings are: DISCOSPACE_KAFKA_CREDENTIALS, else those of the local
# broker when it is secure; nothing (plaintext, or an external cluster's settings already in the
# environment) otherwise.
credentials_dir() {
  if [[ -n "${DISCOSPACE_KAFKA_CREDENTIALS:-}" ]]; then
    echo "$DISCOSPACE_KAFKA_CREDENTIALS"
  elif [[ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" && "${KAFKA_SECURITY:-sasl_ssl}" != plaintext ]]; then
    echo "${KAFKA_STATE_DIR:-$RUN_DIR/kafka}/credentials"
  fi
}

# Exports the Kafka settings of principal $1 (registry, explorer, sampler, actuator, projector,
# cli) from its .env file, when there are credentials (a local broker never started secure has
# none yet); the bootstrap servers stay those chosen here (bootstrap), not the file's.
load_credentials() {
  local dir servers="${KAFKA_BOOTSTRAP_SERVERS:-}"
  dir="$(credentials_dir)"
  [[ -n "$dir" && -d "$dir" ]] || return 0
  if [[ ! -f "$dir/$1.env" ]]; then
    echo "settings.sh: no Kafka credentials for '$1' in $dir (deploy/local/kafka.sh start writes them)." >&2
    return 1
  fi
  set -a
  # shellcheck source=/dev/null
  source "$dir/$1.env"
  set +a
  if [[ -n "$servers" ]]; then export KAFKA_BOOTSTRAP_SERVERS="$servers"; else unset KAFKA_BOOTSTRAP_SERVERS; fi
}

# What the CLI needs to talk to the processes `make up` started with these settings (its
# principal's login too, when the broker is secure).
export_client_settings() {
  load_credentials cli
  KAFKA_BOOTSTRAP_SERVERS="$(bootstrap)"
  DISCOSPACE_PROJECTOR_URL="$(projector_url)"
  export KAFKA_BOOTSTRAP_SERVERS DISCOSPACE_PROJECTOR_URL
  local token="${DISCOSPACE_API_TOKEN:-${DISCOSPACE_PROJECTOR_API_TOKEN:-}}"
  if [[ -n "$token" ]]; then
    export DISCOSPACE_API_TOKEN="$token"
  fi
}
