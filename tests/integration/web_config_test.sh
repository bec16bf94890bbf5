#!/usr/bin/env bash
# serve --web-config-file end to end on loopback, with certificates made here
# by the openssl CLI and bcrypt hashes by libxcrypt (python3's crypt):
# - a real Prometheus scrapes the agent over TLS with basic auth: the job
#   with the right password is up, the one with a wrong password is down
#   with 401, and one without TLS cannot scrape at all;
# - curl with client certificates against RequireAndVerifyClientCert and
#   client_allowed_sans: a certificate of the CA with an allowed SAN gets
#   200; no certificate, one of another CA, or one without the SAN is
#   refused in the handshake;
# - a rotated server certificate is served to new connections without a
#   restart; a broken web config (then SIGHUP) keeps the running one;
# - check-config names file:line of a bad web config and exits 2, and
#   accepts deploy/systemd/web-config.yml with its certificate in place.
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init prometheus curl openssl python3
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$STACK"

# --- certificates ---------------------------------------------------------
ca() {  # name
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$1" \
    -keyout "$1.key" -out "$1.crt" 2>/dev/null
}
leaf() {  # name ca san
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
    -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
ca ca
ca other-ca
leaf server ca "DNS:localhost,IP:127.0.0.1"
leaf server2 ca "DNS:localhost,IP:127.0.0.1"
leaf scraper ca "DNS:scraper.example"
leaf stranger other-ca "DNS:scraper.example"
leaf unnamed ca "DNS:someone.else"
hash=$(python3 -W ignore -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' 's3cret')
[[ $hash == '$2b$04$'* ]] || stack_fail "no bcrypt hash from libxcrypt: $hash"

# --- check-config ---------------------------------------------------------
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: "%s"\n' \
  "$hash" >web.yml
"$GPULENS" check-config --web-config-file web.yml >check.out || stack_fail "check-config refused web.yml"
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth: Require\n' >bad.yml
set +e
"$GPULENS" check-config --web-config-file bad.yml 2>bad.err
rc=$?
set -e
[[ $rc == 2 ]] || stack_fail "check-config of a bad web config exited $rc, not 2"
grep -q 'bad.yml:4:3: tls_server_config: unknown key "client_auth"' bad.err || stack_fail "no file:line: $(cat bad.err)"
printf 'basic_auth_users:\n  prometheus: "abJnggxhB/yWI"\n' >des.yml   # a DES crypt hash
"$GPULENS" check-config --web-config-file des.yml 2>des.err && stack_fail "a DES hash was accepted"
grep -q 'des.yml:2:15: basic_auth_users.prometheus: not a bcrypt hash' des.err || stack_fail "$(cat des.err)"
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: other-ca.key\n' >mismatch.yml
"$GPULENS" check-config --web-config-file mismatch.yml 2>mismatch.err && stack_fail "a key of another certificate was accepted"
grep -q 'key_file .*other-ca.key: key values mismatch' mismatch.err || stack_fail "$(cat mismatch.err)"

# The systemd example, with its certificate names, as the unit's config would use it.
cp "$root/deploy/systemd/web-config.yml" example.yml
cp server.crt gpulens.crt && cp server.key gpulens.key
"$GPULENS" check-config --web-config-file example.yml >/dev/null || stack_fail "deploy/systemd/web-config.yml is refused"

# --- agent 1: TLS + basic auth, scraped by Prometheus ---------------------
port=$(free_port)
"$GPULENS" serve --source sim --interval 200ms --listen "127.0.0.1:$port" --web-config-file web.yml \
  >agent-tls.log 2>&1 &
STACK_PIDS+=($!)
agent_pid=$!
url="https://localhost:$port"
for _ in $(seq 100); do
  curl -fs -o /dev/null --cacert ca.crt -u prometheus:s3cret "$url/healthz" && break
  sleep 0.2
done
curl -fs -o /dev/null --cacert ca.crt -u prometheus:s3cret "$url/healthz" || stack_fail "agent not serving over TLS"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert ca.crt "$@"; }
[[ $(code "$url/metrics") == 401 ]] || stack_fail "no password: not 401"
[[ $(code -u prometheus:wrong "$url/api/v1/current") == 401 ]] || stack_fail "wrong password: not 401"
[[ $(code -u prometheus:s3cret "$url/") == 200 ]] || stack_fail "the web page refused the right password"
curl -s -D headers.txt -o /dev/null --cacert ca.crt "$url/metrics"
grep -qi '^WWW-Authenticate: Basic' headers.txt || stack_fail "401 without WWW-Authenticate: Basic"
curl -s -o /dev/null --max-time 3 "http://127.0.0.1:$port/metrics" && stack_fail "plain HTTP answered on a TLS listener"

printf 's3cret\n' >good.pw
printf 'guess\n' >bad.pw
prom_port=$(free_port)
cat >prometheus.yml <<EOF
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: good
    scheme: https
    tls_config: {ca_file: $STACK/ca.crt, server_name: localhost}
    basic_auth: {username: prometheus, password_file: $STACK/good.pw}
    static_configs: [{targets: ["127.0.0.1:$port"]}]
  - job_name: wrong_password
    scheme: https
    tls_config: {ca_file: $STACK/ca.crt, server_name: localhost}
    basic_auth: {username: prometheus, password_file: $STACK/bad.pw}
    static_configs: [{targets: ["127.0.0.1:$port"]}]
  - job_name: plain_http
    basic_auth: {username: prometheus, password_file: $STACK/good.pw}
    static_configs: [{targets: ["127.0.0.1:$port"]}]
EOF
start_prometheus "$prom_port" prometheus.yml
deadline=$((SECONDS + 30))
until prom_query "$prom_port" 'gpu_temperature_celsius{job="good"}' | grep '"value"' >/dev/null; do
  ((SECONDS < deadline)) || stack_fail "Prometheus got no GPU series over TLS with basic auth"
  sleep 0.5
done
for _ in $(seq 40); do
  curl -fsS "http://127.0.0.1:$prom_port/api/v1/targets" >targets.json
  python3 - targets.json <<'EOF' && break
import json, sys
t = {a["labels"]["job"]: a for a in json.load(open(sys.argv[1]))["data"]["activeTargets"]}
sys.exit(0 if all(t[j]["health"] != "unknown" for j in ("good", "wrong_password", "plain_http")) else 1)
EOF
  sleep 0.5
done
python3 - targets.json <<'EOF' || stack_fail "targets: $(cat targets.json)"
import json, sys
t = {a["labels"]["job"]: a for a in json.load(open(sys.argv[1]))["data"]["activeTargets"]}
assert t["good"]["health"] == "up", t["good"]
assert t["wrong_password"]["health"] == "down", t["wrong_password"]
assert "401" in t["wrong_password"]["lastError"], t["wrong_password"]["lastError"]
assert t["plain_http"]["health"] == "down", t["plain_http"]
EOF
prom_query "$prom_port" 'up{job="wrong_password"}' | grep '"0"\]' >/dev/null || stack_fail "up{job=wrong_password} is not 0"

# --- rotation: a new certificate in place of the old, no restart ----------
serial() { openssl s_client -connect "127.0.0.1:$port" -servername localhost </dev/null 2>/dev/null |
           openssl x509 -noout -serial; }
old=$(serial)
[[ $old == "$(openssl x509 -noout -serial -in server.crt)" ]] || stack_fail "served serial $old is not server.crt's"
cp server2.key server.key.new && cp server2.crt server.crt.new
mv server.key.new server.key && mv server.crt.new server.crt
want=$(openssl x509 -noout -serial -in server2.crt)
for _ in $(seq 30); do [[ $(serial) == "$want" ]] && break; sleep 0.2; done
[[ $(serial) == "$want" ]] || stack_fail "rotated certificate not served (still $(serial))"
grep -q 'web_config.*reloaded' agent-tls.log || stack_fail "no reload logged for the rotation"
# A broken web config, then SIGHUP: the running one stays and says why.
printf 'tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n' >web.yml
kill -HUP "$agent_pid"
for _ in $(seq 30); do grep -q 'kept the running web config' agent-tls.log && break; sleep 0.2; done
grep -q 'kept the running web config.*missing.crt' agent-tls.log || stack_fail "no log line naming the broken file"
[[ $(code -u prometheus:s3cret "$url/metrics") == 200 ]] || stack_fail "a broken web config stopped serving"
kill -0 "$agent_pid" || stack_fail "SIGHUP stopped the agent"

# --- agent 2: client certificates -----------------------------------------
cat >mtls.yml <<'EOF'
tls_server_config:
  cert_file: server2.crt
  key_file: server2.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  client_allowed_sans: [scraper.example]
  min_version: TLS12
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
  curve_preferences: [CurveP256, X25519]
EOF
port2=$(free_port)
"$GPULENS" serve --source sim --listen "127.0.0.1:$port2" --web-config-file mtls.yml >agent-mtls.log 2>&1 &
STACK_PIDS+=($!)
url2="https://localhost:$port2/metrics"
for _ in $(seq 100); do
  curl -fs -o /dev/null --cacert ca.crt --cert scraper.crt --key scraper.key "$url2" && break
  sleep 0.2
done
[[ $(code --cert scraper.crt --key scraper.key "$url2") == 200 ]] || stack_fail "the allowed client certificate was refused"
[[ $(code "$url2") == 000 ]] || stack_fail "no client certificate was not refused in the handshake"
[[ $(code --cert stranger.crt --key stranger.key "$url2") == 000 ]] || stack_fail "a certificate of another CA was let in"
[[ $(code --cert unnamed.crt --key unnamed.key "$url2") == 000 ]] || stack_fail "a certificate without an allowed SAN was let in"
# TLS 1.2 with the one suite configured, and TLS 1.3.
curl -fs -o /dev/null --cacert ca.crt --cert scraper.crt --key scraper.key --tlsv1.2 --tls-max 1.2 "$url2" \
  || stack_fail "TLS 1.2 handshake failed"
openssl s_client -connect "127.0.0.1:$port2" -tls1_2 -cipher ECDHE-ECDSA-AES256-GCM-SHA384 -cert scraper.crt \
  -key scraper.key </dev/null >/dev/null 2>&1 && stack_fail "a suite outside cipher_suites was negotiated"
curl -fs -o /dev/null --cacert ca.crt --cert scraper.crt --key scraper.key --tlsv1.3 "$url2" || stack_fail "TLS 1.3 failed"
echo "web config: TLS, basic auth with Prometheus, client certificates, rotation and reload all behave"
