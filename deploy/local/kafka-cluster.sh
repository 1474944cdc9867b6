#!/usr/bin/env bash
# A 3-broker Apache Kafka cluster (KRaft) on 127.0.0.1, for the chaos suite's broker-loss runs.
#
# Three combined broker+controller nodes form a controller quorum of 3; every topic is replicated
# 3 times and a write needs 2 in-sync replicas, so the cluster loses one node without losing an
# acknowledged message (producers with acks=all). The cluster is PLAINTEXT, explicitly and on
# purpose: it listens on 127.0.0.1 only and holds test data; kafka.sh's secure default
# (SASL_SSL) does not apply here. The jars are the ones `deploy/local/kafka.sh fetch` caches.
#
#   deploy/local/kafka-cluster.sh start         start every node that is not running (formatting a
#                                               fresh cluster once), wait until all 3 answer and
#                                               the quorum has a leader that registered all 3
#   deploy/local/kafka-cluster.sh stop          stop every node by pid (SIGTERM, then SIGKILL)
#   deploy/local/kafka-cluster.sh status        each node; exit 0 when all 3 answer, 3 when none runs
#   deploy/local/kafka-cluster.sh bootstrap     the bootstrap servers (all three addresses)
#   deploy/local/kafka-cluster.sh kill-one [N]  SIGKILL node N (1-3; default: a running one at random)
#   deploy/local/kafka-cluster.sh start-one N   start node N on its data, wait until the cluster
#                                               has all 3 brokers again
#   deploy/local/kafka-cluster.sh logs [N] [-f] the end of node N's log (default 1; -f follows it)
#
# Environment (all optional):
#   KAFKA_CLUSTER_DIR       one state dir per node under it, ports, cluster id (<repo>/.run/kafka-cluster)
#   KAFKA_CLUSTER_PORTS     three client ports "p1,p2,p3" (default: free ports chosen at the first
#                           start and kept in the cluster dir, since the quorum's addresses are)
#   KAFKA_HEAP_OPTS         JVM heap of each node (-Xms128m -Xmx384m)
#   KAFKA_JVM_OPTS          other JVM options (serial GC and C1 only: three JVMs on a small machine)
#   KAFKA_START_TIMEOUT     seconds to wait for the cluster to answer (120)
#   KAFKA_STOP_TIMEOUT      seconds to wait after SIGTERM before SIGKILL (20)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/../.." && pwd)"
CLUSTER_DIR="${KAFKA_CLUSTER_DIR:-$REPO_ROOT/.run/kafka-cluster}"
[[ "$CLUSTER_DIR" == /* ]] || CLUSTER_DIR="$PWD/$CLUSTER_DIR"
NODES=(1 2 3)
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms128m -Xmx384m}"
JVM_OPTS="${KAFKA_JVM_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}"
STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-20}"
PORTS_FILE="$CLUSTER_DIR/ports"

say() { echo "kafka-cluster.sh: $*"; }
die() { echo "kafka-cluster.sh: $*" >&2; exit 1; }
now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
node_dir() { echo "$CLUSTER_DIR/node-$1"; }
config_of() { echo "$(node_dir "$1")/server.properties"; }
pid_file() { echo "$(node_dir "$1")/kafka.pid"; }

# The jars: kafka.sh fetches them (once, into its cache) and says where they are.
libs_dir() {
  local answer
  answer="$(KAFKA_SECURITY=plaintext bash "$HERE/kafka.sh" fetch | tail -n 1)" ||
    die "deploy/local/kafka.sh fetch could not fetch the Kafka jars."
  LIBS_DIR="${answer##* ready in }"
  [[ -d "$LIBS_DIR" ]] || die "kafka.sh fetch did not name a jar folder (it said: $answer)."
}

need_tools() {
  command -v java >/dev/null 2>&1 || die "Java >= 17 is needed to run Kafka and was not found."
  command -v python3 >/dev/null 2>&1 || die "python3 is needed to check that the nodes answer."
}

# Ports: "client1 client2 client3 controller1 controller2 controller3", chosen once per cluster.
choose_ports() {
  [[ -s "$PORTS_FILE" ]] && return 0
  mkdir -p "$CLUSTER_DIR"
  # written aside and moved once whole: a refused KAFKA_CLUSTER_PORTS left an empty file that
  # every later start read as the ports
  python3 - "${KAFKA_CLUSTER_PORTS:-}" >"$PORTS_FILE.partial" <<'PY' || { rm -f "$PORTS_FILE.partial"; exit 1; }
import socket, sys

written = [p.strip() for p in sys.argv[1].split(",") if p.strip()]
if written and (len(written) != 3 or not all(p.isdigit() and 0 < int(p) < 65536 for p in written)):
    sys.exit("kafka-cluster.sh: KAFKA_CLUSTER_PORTS needs three port numbers, e.g. 9192,9193,9194")
given = [int(p) for p in written]
held = [socket.socket() for _ in range(6 - len(given))]
for s in held:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(p) for p in given + [s.getsockname()[1] for s in held]))
for s in held:
    s.close()
PY
  mv "$PORTS_FILE.partial" "$PORTS_FILE"
}

port_of() { awk -v n="$1" '{ print $n }' "$PORTS_FILE"; }
controller_port_of() { awk -v n="$(($1 + 3))" '{ print $n }' "$PORTS_FILE"; }

bootstrap() {
  local node addresses=()
  for node in "${NODES[@]}"; do addresses+=("127.0.0.1:$(port_of "$node")"); done
  (IFS=,; echo "${addresses[*]}")
}

voters() {
  local node voters=()
  for node in "${NODES[@]}"; do voters+=("$node@127.0.0.1:$(controller_port_of "$node")"); done
  (IFS=,; echo "${voters[*]}")
}

write_config() {
  local node="$1" dir port
  dir="$(node_dir "$node")"
  port="$(port_of "$node")"
  mkdir -p "$dir/data" "$dir/logs"
  cat >"$(config_of "$node")" <<EOF
# Node $node of a 3-node KRaft cluster (broker and controller), written by kafka-cluster.sh.
process.roles=broker,controller
node.id=$node
controller.quorum.voters=$(voters)
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$(controller_port_of "$node")
advertised.listeners=PLAINTEXT://127.0.0.1:$port
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data

# Survive the loss of one node without losing an acknowledged write (producers: acks=all).
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
unclean.leader.election.enable=false

# Small: three JVMs share a laptop.
num.network.threads=2
num.io.threads=2
num.replica.fetchers=1
background.threads=2
log.cleaner.threads=1
group.initial.rebalance.delay.ms=0
offsets.topic.num.partitions=10
transaction.state.log.num.partitions=10

# Topics appear on first use with 3 partitions, as with kafka.sh's single broker.
auto.create.topics.enable=true
num.partitions=3
delete.topic.enable=true
log.retention.ms=-1
log.retention.bytes=-1
log.segment.bytes=104857600
EOF
}

java_cmd() {
  local heap jvm node="$1"
  read -r -a heap <<<"$HEAP_OPTS"
  read -r -a jvm <<<"$JVM_OPTS"
  JAVA_CMD=(java "${heap[@]}" "${jvm[@]}" -Djava.awt.headless=true
    -Dkafka.logs.dir="$(node_dir "$node")/logs"
    -Dlog4j2.configurationFile="$HERE/kafka/log4j2.properties" -cp "$LIBS_DIR/*")
}

# Every node is formatted with the one cluster id kept in the cluster dir.
format_node() {
  local node="$1" dir cluster_id
  dir="$(node_dir "$node")"
  [[ -f "$dir/data/meta.properties" ]] && return 0
  if [[ ! -f "$CLUSTER_DIR/cluster.id" ]]; then
    python3 -c 'import base64, uuid
while (i := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"): pass
print(i)' >"$CLUSTER_DIR/cluster.id"
  fi
  cluster_id="$(cat "$CLUSTER_DIR/cluster.id")"
  java_cmd "$node"
  "${JAVA_CMD[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$(config_of "$node")" \
    >>"$dir/logs/format.log" 2>&1 ||
    { tail -n 20 "$dir/logs/format.log" >&2; die "formatting node $node in $dir/data failed."; }
}

# The pid of node N, only while that process is still this node (pids get reused).
node_pid() {
  local file pid args
  file="$(pid_file "$1")"
  [[ -f "$file" ]] || return 1
  pid="$(cat "$file")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  args="$(ps -ww -o stat= -o args= -p "$pid" 2>/dev/null)" || return 1
  [[ "$args" != Z* && "$args" == *kafka.Kafka* && "$args" == *"$(config_of "$1")"* ]] || return 1
  echo "$pid"
}

# setsid: a node outlives the caller's session and ignores its Ctrl-C; $! is the JVM's pid.
launch() {
  local node="$1" dir
  dir="$(node_dir "$node")"
  java_cmd "$node"
  cd "$dir"
  nohup setsid "${JAVA_CMD[@]}" kafka.Kafka "$(config_of "$node")" >>"$dir/logs/kafka.out" 2>&1 </dev/null &
  echo $! >"$(pid_file "$node")"
  cd - >/dev/null
}

# Sends a Kafka Metadata request (v1) to one node and prints how many brokers it lists. A KRaft
# broker lists only brokers the active controller has registered and unfenced, so 3 means the
# quorum has a leader and every node joined it.
brokers_seen() {
  python3 - "$1" <<'PY'
import socket, struct, sys

client = b"kafka-cluster.sh"
request = struct.pack(">hhih", 3, 1, 7, len(client)) + client + struct.pack(">i", -1)
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as conn:
        conn.sendall(struct.pack(">i", len(request)) + request)
        head = conn.recv(4, socket.MSG_WAITALL)
        size = struct.unpack(">i", head)[0]
        body = b""
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                sys.exit(1)
            body += chunk
except (OSError, struct.error):
    sys.exit(1)
correlation_id, brokers = struct.unpack(">ii", body[:8])
if correlation_id != 7:
    sys.exit(1)
print(brokers)
PY
}

cluster_complete() {
  local node
  for node in "${NODES[@]}"; do
    [[ "$(brokers_seen "$(port_of "$node")" 2>/dev/null)" == "3" ]] || return 1
  done
}

fail_start() {
  local node
  for node in "${NODES[@]}"; do
    echo "---- node $node: last lines of server.log" >&2
    tail -n 15 "$(node_dir "$node")/logs/server.log" >&2 2>/dev/null || true
  done
  stop >/dev/null
  die "$1"
}

wait_until_complete() {
  local t0="$1" node
  until cluster_complete; do
    for node in "${NODES[@]}"; do
      node_pid "$node" >/dev/null || fail_start "node $node exited during start (log: $(node_dir "$node")/logs)."
    done
    if awk -v a="$t0" -v b="$(now)" -v t="$START_TIMEOUT" 'BEGIN { exit !(b - a > t) }'; then
      fail_start "the cluster did not answer with 3 brokers within ${START_TIMEOUT}s."
    fi
    sleep 0.5
  done
}

start_node() {
  local node="$1"
  node_pid "$node" >/dev/null && return 0
  write_config "$node"
  format_node "$node"
  launch "$node"
}

start() {
  local node t0
  need_tools
  libs_dir
  choose_ports
  t0="$(now)"
  # every node formatted before any is launched: a format failing for a later node left the
  # nodes launched before it running
  for node in "${NODES[@]}"; do
    node_pid "$node" >/dev/null || { write_config "$node" && format_node "$node"; }
  done
  for node in "${NODES[@]}"; do start_node "$node"; done
  wait_until_complete "$t0"
  say "3 brokers answering on $(bootstrap) after $(since "$t0")s (plaintext; state $CLUSTER_DIR)"
}

start_one() {
  local node="${1:-}" t0
  [[ "$node" =~ ^[123]$ ]] || die "start-one needs a node number, 1, 2 or 3."
  [[ -f "$PORTS_FILE" ]] || die "no cluster in $CLUSTER_DIR yet; run start first."
  need_tools
  libs_dir
  t0="$(now)"
  start_node "$node"
  wait_until_complete "$t0"
  say "node $node back; 3 brokers answering after $(since "$t0")s"
}

kill_one() {
  local node="${1:-}" pid running=()
  if [[ -z "$node" ]]; then
    for node in "${NODES[@]}"; do node_pid "$node" >/dev/null && running+=("$node"); done
    ((${#running[@]})) || die "no node is running."
    node="${running[RANDOM % ${#running[@]}]}"
  fi
  [[ "$node" =~ ^[123]$ ]] || die "kill-one takes a node number, 1, 2 or 3."
  pid="$(node_pid "$node")" || die "node $node is not running."
  kill -KILL "$pid" 2>/dev/null || true
  while node_pid "$node" >/dev/null; do sleep 0.1; done
  rm -f "$(pid_file "$node")"
  say "killed node $node (pid $pid)"
}

# SIGTERM every node at once (one by one, the last would wait for a quorum that is gone).
stop() {
  local node pid t0 pids=()
  t0="$(now)"
  for node in "${NODES[@]}"; do
    if pid="$(node_pid "$node")"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$node:$pid")
    fi
  done
  local deadline=$((SECONDS + STOP_TIMEOUT)) alive
  while :; do
    alive=()
    for node in "${NODES[@]}"; do node_pid "$node" >/dev/null && alive+=("$node"); done
    ((${#alive[@]} == 0 || SECONDS >= deadline)) && break
    sleep 0.2
  done
  for node in "${alive[@]}"; do
    pid="$(node_pid "$node")" || continue
    say "node $node still running after ${STOP_TIMEOUT}s, sending SIGKILL to $pid"
    kill -KILL "$pid" 2>/dev/null || true
    while node_pid "$node" >/dev/null; do sleep 0.1; done
  done
  for node in "${NODES[@]}"; do rm -f "$(pid_file "$node")"; done
  if ((${#pids[@]})); then
    say "stopped ${pids[*]} (node:pid) in $(since "$t0")s"
  else
    say "not running"
  fi
}

status() {
  local node pid running=0 answering=0 seen
  [[ -f "$PORTS_FILE" ]] || { say "no cluster in $CLUSTER_DIR"; return 3; }
  for node in "${NODES[@]}"; do
    if pid="$(node_pid "$node")"; then
      running=$((running + 1))
      if seen="$(brokers_seen "$(port_of "$node")")"; then
        answering=$((answering + 1))
        say "node $node running on 127.0.0.1:$(port_of "$node") (pid $pid), sees $seen brokers"
      else
        say "node $node running as pid $pid, not answering on 127.0.0.1:$(port_of "$node")"
      fi
    else
      say "node $node not running"
    fi
  done
  ((running == 0)) && return 3
  ((answering == 3)) || return 1
}

logs() {
  local node=1 follow=""
  for arg in "$@"; do
    case "$arg" in
      -f) follow=1 ;;
      [123]) node="$arg" ;;
      *) die "logs takes a node number (1-3) and -f." ;;
    esac
  done
  local log
  log="$(node_dir "$node")/logs/server.log"
  [[ -f "$log" ]] || die "no log yet for node $node ($log)."
  [[ -n "$follow" ]] && exec tail -n 50 -F "$log"
  tail -n 50 "$log"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  bootstrap)
    [[ -f "$PORTS_FILE" ]] || die "no cluster in $CLUSTER_DIR yet; run start first."
    bootstrap
    ;;
  kill-one) kill_one "${2:-}" ;;
  start-one) start_one "${2:-}" ;;
  logs) shift; logs "$@" ;;
  *)
    echo "usage: $0 start|stop|status|bootstrap|kill-one [N]|start-one N|logs [N] [-f]" >&2
    exit 2
    ;;
esac
