#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft, one combined broker/controller) on 127.0.0.1, from Maven.
#
# Secure by default: a SASL_SSL listener (TLS with a certificate of a local CA; SCRAM-SHA-512,
# SCRAM-SHA-256 or PLAIN logins), the StandardAuthorizer, and one principal per service with
# ACLs that allow exactly its topics (see acl_spec below). The first start of a state dir makes the CA, the broker's
# certificate and every principal's password there; <state>/credentials/<principal>.env holds
# the settings a process needs to log in as that principal (KAFKA_SECURITY_PROTOCOL, ...).
# KAFKA_SECURITY=plaintext starts the broker of old instead: one PLAINTEXT listener, no login,
# no ACLs (what the test suite and the chaos harness ask for).
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
#   KAFKA_SECURITY          sasl_ssl (default) or plaintext; a state dir keeps the mode it was
#                           formatted with, and starting it in the other mode is refused
#   DISCOSPACE_TOPIC_PREFIX the topic prefix the ACLs are written for (discospace)
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
SECURITY="${KAFKA_SECURITY:-sasl_ssl}"
SECURITY_FILE="$STATE_DIR/security"
TLS_DIR="$STATE_DIR/tls"
CREDENTIALS_DIR="$STATE_DIR/credentials"
TOPIC_PREFIX="${DISCOSPACE_TOPIC_PREFIX:-discospace}"
# One login per service, the CLI, and `discospace store import` (the only client besides the
# services that writes measurements); admin is the super user the broker itself logs in as.
PRINCIPALS=(registry explorer sampler projector actuator cli importer)

say() { echo "kafka.sh: $*"; }
die() { echo "kafka.sh: $*" >&2; exit 1; }
now() { echo "${EPOCHREALTIME:-$(date +%s)}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

need_java() {
  command -v java >/dev/null 2>&1 ||
    die "Java >= 17 is needed to run Kafka and was not found; install a JDK (apt-get install openjdk-17-jdk-headless: the secure broker's ACL tool needs its compiler) or set KAFKA_BOOTSTRAP_SERVERS to an existing cluster."
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
# In secure mode over TLS, checking the broker's certificate: ApiVersions needs no login.
answers() {
  local cafile=""
  [[ "$(running_security)" == sasl_ssl ]] && cafile="$TLS_DIR/ca.crt"
  python3 - "$1" "$cafile" <<'PY'
import socket, ssl, struct, sys

request = struct.pack(">hhih", 18, 0, 1, 8) + b"kafka.sh"
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as raw:
        conn = raw
        if sys.argv[2]:
            conn = ssl.create_default_context(cafile=sys.argv[2]).wrap_socket(
                raw, server_hostname="127.0.0.1"
            )
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

# The config holds the admin and keystore passwords in secure mode: only the owner reads it.
write_config() {
  local controller_port="$1" admin_password="" keystore_password="" plain_users=""
  mkdir -p "$DATA_DIR" "$LOG_DIR"
  if [[ "$SECURITY" == sasl_ssl ]]; then
    admin_password="$(cat "$CREDENTIALS_DIR/admin.password")"
    keystore_password="$(cat "$TLS_DIR/keystore.password")"
    plain_users="$(plain_users)"
  fi
  (
    umask 077
    # substituted by bash, not sed: a command's arguments show in every user's process list
    shopt -u patsub_replacement 2>/dev/null || true # "&" in a value stays "&" (bash 5.2)
    local text
    text="$(cat "$CONF_DIR/server.properties.in" "$CONF_DIR/listeners-$SECURITY.properties.in")"
    text="${text//@PORT@/$PORT}"
    text="${text//@CONTROLLER_PORT@/$controller_port}"
    text="${text//@DATA_DIR@/$DATA_DIR}"
    text="${text//@TLS_DIR@/$TLS_DIR}"
    text="${text//@ADMIN_PASSWORD@/$admin_password}"
    text="${text//@KEYSTORE_PASSWORD@/$keystore_password}"
    text="${text//@PLAIN_USERS@/$plain_users}"
    printf '%s\n' "$text" >"$CONFIG.partial"
    mv "$CONFIG.partial" "$CONFIG"
  )
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

# One argument as a `java @file` line reads it whole: in double quotes, with \ and " escaped.
java_quoted() {
  local arg="${1//\\/\\\\}"
  printf '"%s"' "${arg//\"/\\\"}"
}

# One line of a settings file that bash sources (and dotenv reads): the value in single quotes,
# so a path holding a space stays one value.
env_line() {
  printf "%s='%s'\n" "$1" "${2//\'/\'\\\'\'}"
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
  # The arguments go in a file the JVM reads (`java @file`), so that the SCRAM passwords never
  # appear in the process list.
  local args="$STATE_DIR/format.args"
  (
    umask 077
    # quoted: an argument file splits on whitespace, and the state dir may hold a space
    printf '%s\n' kafka.tools.StorageTool format -t "$cluster_id" -c "$(java_quoted "$CONFIG")" >"$args"
    [[ "$SECURITY" == plaintext ]] || scram_arguments >>"$args"
  )
  if ! run_java "@$args" >>"$LOG_DIR/format.log" 2>&1; then
    rm -f "$args"
    tail -n 20 "$LOG_DIR/format.log" >&2
    die "formatting KRaft storage in $DATA_DIR failed."
  fi
  rm -f "$args"
  echo "$SECURITY" >"$SECURITY_FILE"
}

# The mode a formatted state dir was made for: what it says, plaintext when it predates modes.
state_security() {
  if [[ -f "$SECURITY_FILE" ]]; then cat "$SECURITY_FILE"; else echo plaintext; fi
}

# The mode of the broker this state dir runs (or is about to run).
running_security() {
  if [[ -f "$DATA_DIR/meta.properties" ]]; then state_security; else echo "$SECURITY"; fi
}

check_security_mode() {
  [[ "$SECURITY" == plaintext || "$SECURITY" == sasl_ssl ]] ||
    die "KAFKA_SECURITY must be sasl_ssl (the default) or plaintext, not '$SECURITY'."
  [[ -f "$DATA_DIR/meta.properties" ]] || return 0
  local formatted
  formatted="$(state_security)"
  [[ "$formatted" == "$SECURITY" ]] ||
    die "the broker state in $STATE_DIR was made for KAFKA_SECURITY=$formatted; start it with KAFKA_SECURITY=$formatted, or remove $STATE_DIR (its topics go with it) to start afresh with $SECURITY."
}

# ---- Secure mode: the local CA, the principals, their ACLs ----

need_secure_tools() {
  command -v openssl >/dev/null 2>&1 ||
    die "openssl is needed to make the broker's TLS certificate (apt-get install openssl), or start with KAFKA_SECURITY=plaintext."
  local javac
  javac="$(dirname "$(readlink -f "$(command -v java)")")/javac"
  [[ -x "$javac" ]] ||
    die "a JDK (not only a JRE) is needed to set the broker's ACLs (apt-get install openjdk-17-jdk-headless), or start with KAFKA_SECURITY=plaintext."
}

new_password() { python3 -c 'import secrets; print(secrets.token_hex(24))'; }

# A local CA, and the broker's key and certificate (for 127.0.0.1 and localhost, signed by it) in
# a PKCS12 keystore: made once per state dir, readable by its owner only. Clients trust ca.crt.
make_tls() {
  [[ -f "$TLS_DIR/broker.p12" ]] && return 0
  local tmp="$TLS_DIR.partial"
  rm -rf "$tmp"
  (
    umask 077
    mkdir -p "$tmp"
    cd "$tmp"
    new_password >keystore.password
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -keyout ca.key -out ca.crt \
      -subj "/CN=discospace local CA" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>>openssl.log
    openssl req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr \
      -subj "/CN=discospace-broker" 2>>openssl.log
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth,clientAuth" \
      "subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid,issuer" >broker.ext
    openssl x509 -req -in broker.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 \
      -extfile broker.ext -out broker.crt 2>>openssl.log
    openssl pkcs12 -export -in broker.crt -inkey broker.key -certfile ca.crt -name broker \
      -passout file:keystore.password -out broker.p12 2>>openssl.log
    rm -f broker.csr broker.ext ca.srl
    chmod 644 ca.crt
    # set -e does not hold left of ||: the keystore is the proof every step went through
    [[ -s broker.p12 ]]
  ) || { cat "$tmp/openssl.log" >&2 2>/dev/null; rm -rf "$tmp"; die "openssl could not make the broker's certificate."; }
  rm -rf "$TLS_DIR" # an earlier, unfinished one: moved into it, the new one was never read
  mv "$tmp" "$TLS_DIR"
}

# A password per principal (and admin), generated once, each in its own file, mode 600.
make_passwords() {
  local principal
  (
    umask 077
    mkdir -p "$CREDENTIALS_DIR"
    for principal in admin "${PRINCIPALS[@]}"; do
      [[ -s "$CREDENTIALS_DIR/$principal.password" ]] && continue
      new_password >"$CREDENTIALS_DIR/$principal.password.partial"
      mv "$CREDENTIALS_DIR/$principal.password.partial" "$CREDENTIALS_DIR/$principal.password"
    done
  )
}

# `--add-scram` arguments of the storage format: every principal's SCRAM-SHA-512 and
# SCRAM-SHA-256 credentials are in the cluster's metadata from its first record, before anyone
# can connect. (A state dir formatted before SCRAM-SHA-256 was added holds only SCRAM-SHA-512.)
scram_arguments() {
  local principal mechanism
  for principal in admin "${PRINCIPALS[@]}"; do
    for mechanism in SCRAM-SHA-512 SCRAM-SHA-256; do
      printf '%s\n' --add-scram \
        "$mechanism=[name=$principal,password=$(cat "$CREDENTIALS_DIR/$principal.password")]"
    done
  done
}

# The ` user_<principal>="<password>"` options of the PLAIN login module's JAAS line: the
# passwords PLAIN logins are checked against (the same as the principals' SCRAM ones; they are
# hex, so nothing in them needs quoting).
plain_users() {
  local principal
  for principal in admin "${PRINCIPALS[@]}"; do
    printf ' user_%s="%s"' "$principal" "$(cat "$CREDENTIALS_DIR/$principal.password")"
  done
}

# <credentials>/<principal>.env: what a process needs to log in as <principal> (the password by
# file, never in the environment); admin.properties: the same for Kafka's Java admin client.
write_credentials() {
  local principal
  (
    umask 077
    for principal in admin "${PRINCIPALS[@]}"; do
      {
        echo "# Kafka settings of the principal '$principal', written by deploy/local/kafka.sh."
        env_line KAFKA_BOOTSTRAP_SERVERS "127.0.0.1:$PORT"
        env_line KAFKA_SECURITY_PROTOCOL SASL_SSL
        env_line KAFKA_SASL_USERNAME "$principal"
        env_line KAFKA_SASL_PASSWORD_FILE "$CREDENTIALS_DIR/$principal.password"
        env_line KAFKA_SSL_CAFILE "$TLS_DIR/ca.crt"
      } >"$CREDENTIALS_DIR/$principal.env"
    done
    {
      echo "security.protocol=SASL_SSL"
      echo "sasl.mechanism=SCRAM-SHA-512"
      printf 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="%s";\n' \
        "$(cat "$CREDENTIALS_DIR/admin.password")"
      echo "ssl.truststore.type=PEM"
      echo "ssl.truststore.location=$TLS_DIR/ca.crt"
    } >"$CREDENTIALS_DIR/admin.properties"
  )
}

prepare_security() {
  [[ "$SECURITY" == sasl_ssl ]] || return 0
  need_secure_tools
  make_tls
  make_passwords
  write_credentials
}

# One ACL line: PRINCIPAL OPERATION RESOURCE_TYPE PATTERN_TYPE NAME (KafkaAcls.java reads them).
acl() { printf 'User:%s %s %s %s %s\n' "$1" "$2" "$3" "$4" "$5"; }

# Reads (and creates, when missing) the named topics: `reads USER TOPIC...`.
reads() {
  local user="$1" topic
  shift
  for topic in "$@"; do acl "$user" READ TOPIC LITERAL "$TOPIC_PREFIX.$topic"; acl "$user" CREATE TOPIC LITERAL "$TOPIC_PREFIX.$topic"; configs "$user" LITERAL "$TOPIC_PREFIX.$topic"; done
}

writes() {
  local user="$1" topic
  shift
  for topic in "$@"; do acl "$user" WRITE TOPIC LITERAL "$TOPIC_PREFIX.$topic"; acl "$user" CREATE TOPIC LITERAL "$TOPIC_PREFIX.$topic"; configs "$user" LITERAL "$TOPIC_PREFIX.$topic"; done
}

# A service reads the configs of the topics it creates when they exist already, to warn about
# one that deletes old events (DescribeConfigs: READ does not imply DESCRIBE_CONFIGS).
configs() { acl "$1" DESCRIBE_CONFIGS TOPIC "$2" "$3"; }

# Each principal's topics, as its code reads and writes them (the `service.consumer`,
# `service.follow` and `service.publisher` calls of each app, and the AsyncAPI documents in
# proto/asyncapi). A service creates the topics it uses when they are missing, hence CREATE on
# exactly those. Every pool's measure topic is `<prefix>.measure.<pool>`: a PREFIXED pattern.
acl_spec() {
  local measure="$TOPIC_PREFIX.measure."
  reads registry space-submissions actuators spaces
  writes registry spaces dead-letter
  acl registry READ GROUP LITERAL "$TOPIC_PREFIX.registry"

  reads explorer spaces operations measurements
  writes explorer operations space-submissions dead-letter
  acl explorer READ GROUP LITERAL "$TOPIC_PREFIX.explorer"

  reads sampler spaces actuators measurements operations
  writes sampler operations measurements dead-letter
  acl sampler READ TOPIC PREFIXED "$measure"
  acl sampler WRITE TOPIC PREFIXED "$measure"
  acl sampler CREATE TOPIC PREFIXED "$measure"
  configs sampler PREFIXED "$measure"
  acl sampler READ GROUP LITERAL "$TOPIC_PREFIX.sampler"

  # A worker reads its pool's requests and the operations (to stop the work of those that
  # ended), writes measurement events, its catalog and dead letters; its group is per pool.
  acl actuator READ TOPIC PREFIXED "$measure"
  acl actuator CREATE TOPIC PREFIXED "$measure"
  configs actuator PREFIXED "$measure"
  reads actuator operations
  writes actuator measurements actuators dead-letter
  acl actuator READ GROUP PREFIXED "$TOPIC_PREFIX.actuator."

  reads projector space-submissions spaces actuators operations measurements dead-letter
  writes projector dead-letter
  acl projector READ TOPIC PREFIXED "$measure"
  acl projector READ GROUP LITERAL "$TOPIC_PREFIX.projector"

  # The CLI publishes requests and reads the answers to them (a registration, an operation to
  # cancel); every view comes from the projector's HTTP API. No group: it reads by assignment.
  writes cli space-submissions operations
  reads cli spaces operations

  reads importer spaces measurements
  writes importer measurements
}

# Applies the ACLs when they differ from those applied last (a new topic prefix, a changed spec).
apply_acls() {
  [[ "$SECURITY" == sasl_ssl ]] || return 0
  local spec="$STATE_DIR/acls" applied="$STATE_DIR/acls.applied" out
  acl_spec >"$spec"
  cmp -s "$spec" "$applied" 2>/dev/null && return 0
  if ! out="$(run_java "$CONF_DIR/KafkaAcls.java" "127.0.0.1:$PORT" \
    "$CREDENTIALS_DIR/admin.properties" "$spec" 2>&1)"; then
    echo "$out" | tail -n 20 >&2
    fail_start "the broker's ACLs could not be set."
  fi
  cp "$spec" "$applied"
  say "ACLs set for topic prefix '$TOPIC_PREFIX': $out"
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
  check_security_mode
  controller_port="${KAFKA_CONTROLLER_PORT:-$(free_port)}"
  t0="$(now)"
  prepare_security
  write_config "$controller_port"
  format_storage
  echo "$PORT" >"$PORT_FILE"
  launch
  wait_until_answering "$t0"
  apply_acls
  say "broker answering on 127.0.0.1:$PORT after $(since "$t0")s (pid $(cat "$PID_FILE"), state $STATE_DIR)"
  [[ "$SECURITY" == plaintext ]] ||
    say "SASL_SSL with ACLs; each principal's settings: $CREDENTIALS_DIR/<principal>.env"
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
