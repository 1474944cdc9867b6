#!/usr/bin/env bash
# The main job for a new user: measure a CPU training workload across a discovery space.
#
# Expects `make up` to have started the broker and the services (make demo does). Registers
# examples/cpu-train-space.yaml (a small numpy transformer language model trained on this
# machine's CPU, 24 configurations), runs a random walk over it with a live progress bar,
# prints the results best first, and plots tokens per second against batch size, one line per
# model size. Running it again reuses every measurement from the sample store.
#
# The CLI talks to what `make up` started with the same settings (KAFKA_PORT or
# KAFKA_BOOTSTRAP_SERVERS, DISCOSPACE_PROJECTOR_HTTP_PORT: see settings.sh).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=settings.sh
source "$HERE/settings.sh"
credentials="$(credentials_dir)" # before the exports below: they set KAFKA_BOOTSTRAP_SERVERS
export_client_settings
CLI="${DISCOSPACE_CLI:-$REPO_ROOT/.venv/bin/discospace}"
OUT="${DISCOSPACE_DEMO_DIR:-$REPO_ROOT/demo-output}"
SPACE_FILE="$REPO_ROOT/examples/cpu-train-space.yaml"
WALK_FILE="$REPO_ROOT/examples/demo-walk.yaml"
cd "$REPO_ROOT"
mkdir -p "$OUT"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Waiting for the cpu_train worker to announce its catalog"
for _ in $(seq 1 120); do
  "$CLI" actuators --json 2>/dev/null | grep -q '"cpu_train"' && break
  sleep 0.5
done
"$CLI" actuators

step "The space: $SPACE_FILE"
"$CLI" space describe -f "$SPACE_FILE"
space_id="$("$CLI" space create -f "$SPACE_FILE")"
echo "registered as $space_id"

step "A random walk over every configuration (each trains for 2 s in a child process)"
operation_id="$("$CLI" operation create -f "$WALK_FILE" --space "$space_id")"
echo "operation $operation_id"
"$CLI" operation watch "$operation_id" --interval 0.3
"$CLI" operation show "$operation_id"

step "Results, best configuration first"
"$CLI" space show "$space_id" --include measured --sort train_tokens_per_second
"$CLI" space show "$space_id" --include unmeasured
"$CLI" space show "$space_id" --include all --format csv -o "$OUT/cpu-train.csv"

step "Plot"
"$CLI" space plot "$space_id" --x batch_size --y train_tokens_per_second --line model_size \
  -o "$OUT/tokens-per-second.png"

login=""
if [[ -n "$credentials" && -f "$credentials/cli.env" ]]; then
  login=", and
the CLI's Kafka login with: set -a; . $credentials/cli.env; set +a"
fi
cat <<EOF

Done. Written:
  $OUT/tokens-per-second.png   tokens per second against batch size, one line per model size
  $OUT/cpu-train.csv           every configuration with its measurements

Look further (the CLI here used KAFKA_BOOTSTRAP_SERVERS=$KAFKA_BOOTSTRAP_SERVERS and
DISCOSPACE_PROJECTOR_URL=$DISCOSPACE_PROJECTOR_URL; set them likewise in another shell${login}):
  .venv/bin/discospace space show $space_id --include all     every entity of the space
  .venv/bin/discospace operation show $operation_id           how the operation went
  .venv/bin/discospace --help                                 every command
  make status / make logs                                      the services and their logs
  deploy/local/prometheus.sh start                             Prometheus on 127.0.0.1:${PROMETHEUS_PORT:-9090}, scraping every process above
  Grafana: import deploy/grafana/dashboards/discospace-services.json, with that Prometheus as its datasource
  make down                                                    stop everything
EOF
