#!/usr/bin/env bash
# The agent's CPU per /metrics scrape over plain HTTP, over TLS and over TLS
# with basic auth, in one run against one agent each (same scenario, same
# machine, interleaved), as Prometheus scrapes: one kept-alive connection.
# Also TLS with a new connection (a full handshake) per scrape. CPU is the
# agent's CPU time over the scrapes (its threads' schedstat, in nanoseconds),
# minus the same agent's idle CPU over the same wall time measured just
# before.
#
#   bench/tls_scrape_cost.sh build/release/gpulens [SCRAPES]   # default 5000 (500 with handshakes)
# The first round's basic-auth case includes the one bcrypt run (cost 10)
# of the first request; later scrapes hit the credential cache.
# ENCODING=gzip sends "Accept-Encoding: gzip" with every scrape, as
# Prometheus does (the agent answers from its cached gzip page).
set -euo pipefail
# cpu_ns PID: CPU time in nanoseconds, summed over the agent's threads.
source "$(dirname "$(realpath "$0")")/../tests/integration/lib/stack.sh"
GPULENS=$(realpath "$1")
N=${2:-5000}            # scrapes per kept-alive case
H=$((N / 10))           # scrapes with a handshake each
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
cd "$work"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost -keyout server.key -out server.crt 2>/dev/null
hash=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("pw", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))')
printf 'tls_server_config: {cert_file: server.crt, key_file: server.key}\n' >tls.yml
printf 'tls_server_config: {cert_file: server.crt, key_file: server.key}\nbasic_auth_users: {u: "%s"}\n' "$hash" >auth.yml
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() {  # port args...
  local p=$1; shift
  "$GPULENS" serve --source sim --listen "127.0.0.1:$p" "$@" >/dev/null 2>&1 &
  pids+=($!)
  echo $!
}
hz=1000000000
p1=$(port); p2=$(port); p3=$(port)
a1=$(start "$p1"); a2=$(start "$p2" --web-config-file tls.yml); a3=$(start "$p3" --web-config-file auth.yml)
pids+=("$a1" "$a2" "$a3")  # start runs in a subshell: its pids+= is lost
sleep 3
curl_opts=(-s -o /dev/null --cacert server.crt)
[[ -z "${ENCODING:-}" ]] || curl_opts+=(-H "Accept-Encoding: $ENCODING")
# A curl config: N transfers of one URL over one connection, bodies discarded.
urls() { for _ in $(seq "$N"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$1"; done; }
urls "http://127.0.0.1:$p1/metrics" >plain.txt
urls "https://localhost:$p2/metrics" >tls.txt
urls "https://localhost:$p3/metrics" >auth.txt
measure() {  # name pid command...
  local name=$1 pid=$2; shift 2
  local idle0 idle1 t0 t1 w0 w1
  idle0=$(cpu_ns "$pid"); w0=$(date +%s.%N); sleep 2; idle1=$(cpu_ns "$pid"); w1=$(date +%s.%N)
  local idle_rate
  idle_rate=$(echo "($idle1 - $idle0) / ($w1 - $w0)" | bc -l)
  t0=$(cpu_ns "$pid"); w0=$(date +%s.%N)
  "$@"
  t1=$(cpu_ns "$pid"); w1=$(date +%s.%N)
  echo "$N $t0 $t1 $w0 $w1 $idle_rate $hz" | awk -v name="$name" '{
    cpu = ($3 - $2) / $7 - $6 / $7 * ($5 - $4);
    printf "%-28s %5d scrapes  %6.2f s wall  agent CPU %6.3f s  %7.1f us/scrape  %6.0f scrapes per CPU second\n",
           name, $1, $5 - $4, cpu, cpu / $1 * 1e6, $1 / cpu }'
}
for round in 1 2; do
  echo "round $round"
  measure "plain HTTP, keep-alive" "$a1" curl "${curl_opts[@]}" -K plain.txt
  measure "TLS, keep-alive" "$a2" curl "${curl_opts[@]}" -K tls.txt
  measure "TLS + basic auth, keep-alive" "$a3" curl "${curl_opts[@]}" -u u:pw -K auth.txt
  N=$H measure "TLS, handshake per scrape" "$a2" bash -c "for i in \$(seq $H); do curl $(printf '%q ' "${curl_opts[@]}") https://localhost:$p2/metrics; done"
done
