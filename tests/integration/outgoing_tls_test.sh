#!/usr/bin/env bash
# The outgoing clients over TLS with authentication, against a real
# Prometheus (its --web.config.file: TLS with a required client certificate,
# basic auth with a bcrypt hash) acting as a remote_write receiver:
# - serve pushes over https with ca_file, a client certificate, basic auth
#   from a password file and an extra header; the samples are queried back;
# - diagnose --prometheus https://... reads them with the config's
#   prometheus: section;
# - a wrong password is a logged 401 rejection, a missing CA a logged
#   verification failure naming the fix, and diagnose exits 1 naming the 401.
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init prometheus openssl curl python3
cd "$STACK"

# A CA, a server certificate for 127.0.0.1 and a client certificate.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout ca.key -out ca.pem 2>/dev/null
for who in server client; do
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$who" -keyout $who.key -out $who.csr 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n' \
    "$([[ $who == server ]] && echo serverAuth || echo clientAuth)" > $who.ext
  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile $who.ext \
    -out $who.pem 2>/dev/null
done
hash=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH)))')
cat > web.yml <<YAML
tls_server_config:
  cert_file: $STACK/server.pem
  key_file: $STACK/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: $STACK/ca.pem
basic_auth_users:
  gpulens: '$hash'
YAML
printf 'global: {scrape_interval: 1h}\n' > prom.yml
pport=$(free_port)
prometheus --config.file=prom.yml --storage.tsdb.path=prom-data --web.listen-address="127.0.0.1:$pport" \
  --web.config.file=web.yml --web.enable-remote-write-receiver --log.level=warn >prometheus.log 2>&1 &
STACK_PIDS+=($!)
pcurl() {  # path [curl args]: as an authorised client
  local path=$1; shift
  curl -fsS --max-time 10 --cacert ca.pem --cert client.pem --key client.key -u gpulens:s3cret "$@" \
    "https://127.0.0.1:$pport$path"
}
deadline=$((SECONDS + 30))
until pcurl /-/ready -o /dev/null 2>/dev/null; do
  ((SECONDS < deadline)) || stack_fail "Prometheus over TLS not ready"
  sleep 0.3
done
# The receiver really demands both: no client certificate, or no password, is refused.
! curl -fsS --max-time 5 --cacert ca.pem -u gpulens:s3cret "https://127.0.0.1:$pport/-/ready" -o /dev/null 2>/dev/null ||
  stack_fail "Prometheus accepted a client without a certificate"
code=$(curl -s --max-time 5 --cacert ca.pem --cert client.pem --key client.key -o /dev/null -w '%{http_code}' \
  "https://127.0.0.1:$pport/-/ready")
[[ $code == 401 ]] || stack_fail "Prometheus without a password answered $code"

printf 's3cret\n' > password
client_yaml() {  # password_file ca_file
  cat <<YAML
  tls_config: {ca_file: "$2", cert_file: $STACK/client.pem, key_file: $STACK/client.key}
  basic_auth: {username: gpulens, password_file: $1}
  headers: {X-Scope-OrgID: tenant-a}
YAML
}
{ printf 'interval: 200ms\nremote_write:\n  url: "https://127.0.0.1:%s/api/v1/write"\n  job: tls\n' "$pport"
  client_yaml "$STACK/password" "$STACK/ca.pem"; } > agent.yaml
"$GPULENS" check-config agent.yaml >/dev/null || stack_fail "check-config refused the TLS remote_write config"
port=$(free_port)
start_agent tls "$port" --source sim --config agent.yaml

deadline=$((SECONDS + 30))
until [[ $(pcurl /api/v1/query --data-urlencode 'query=count(gpu_power_watts{job="tls"})' 2>/dev/null |
           python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)') \
         -ge 1 ]]; do
  ((SECONDS < deadline)) || stack_fail "no pushed gpu_power_watts in Prometheus after 30 s"
  sleep 0.5
done

# diagnose --prometheus over the same TLS and basic auth; its name listing
# ends at a whole second, so let a few seconds of samples arrive first.
sleep 3
{ printf 'prometheus:\n'; client_yaml "$STACK/password" "$STACK/ca.pem"; } > diag.yaml
set +e
"$GPULENS" diagnose --prometheus "https://127.0.0.1:$pport" --config diag.yaml --range 5m --step 1s --fail-on never \
  >diag.out 2>diag.err
rc=$?
set -e
((rc == 0)) || stack_fail "diagnose over TLS exited $rc: $(cat diag.err)"
grep -q "GPU" diag.out || stack_fail "diagnose over TLS read no GPU: $(head -5 diag.out)"

# Wrong password: a 401, logged as a rejection; diagnose exits 1 naming it.
printf 'wrong\n' > bad-password
{ printf 'interval: 200ms\nremote_write:\n  url: "https://127.0.0.1:%s/api/v1/write"\n' "$pport"
  client_yaml "$STACK/bad-password" "$STACK/ca.pem"; } > bad.yaml
port2=$(free_port)
start_agent bad "$port2" --source sim --config bad.yaml
deadline=$((SECONDS + 15))
until grep -q 'remote_write_rejected.*HTTP 401' agent-bad.log; do
  ((SECONDS < deadline)) || stack_fail "no 401 rejection logged for a wrong password"
  sleep 0.3
done
{ printf 'prometheus:\n'; client_yaml "$STACK/bad-password" "$STACK/ca.pem"; } > bad-diag.yaml
set +e
"$GPULENS" diagnose --prometheus "https://127.0.0.1:$pport" --config bad-diag.yaml --range 5m >/dev/null 2>bad-diag.err
rc=$?
set -e
((rc == 1)) && grep -q "HTTP 401" bad-diag.err || stack_fail "diagnose with a wrong password: exit $rc, $(cat bad-diag.err)"

# No CA: the system's CAs do not know ours; the log says so and names the fix.
{ printf 'interval: 200ms\nremote_write:\n  url: "https://127.0.0.1:%s/api/v1/write"\n' "$pport"
  client_yaml "$STACK/password" ""; } > noca.yaml
port3=$(free_port)
start_agent noca "$port3" --source sim --config noca.yaml
deadline=$((SECONDS + 15))
until grep -q 'remote_write_retrying.*certificate verify failed.*tls_config.ca_file' agent-noca.log; do
  ((SECONDS < deadline)) || stack_fail "no verification failure logged without the CA"
  sleep 0.3
done
echo PASS
