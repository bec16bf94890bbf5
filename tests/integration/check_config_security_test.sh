#!/usr/bin/env bash
# check-config refuses, naming the file, what serve would run with but
# should not: a bcrypt cost above 18 (one login check would take minutes to
# hours), a push.token_file that is missing or empty, a server certificate
# that has expired or is not valid yet; and accepts the same files fixed.
#   check_config_security_test.sh GPULENS
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init python3
cd "$STACK"

# expect_refused WHAT PATTERN ARGS...: exit 2 and PATTERN in the message.
expect_refused() {
  local what=$1 pattern=$2 rc=0; shift 2
  "$GPULENS" check-config "$@" >out.txt 2>err.txt || rc=$?
  ((rc == 2)) || stack_fail "$what: exit $rc, expected 2 ($(cat err.txt))"
  grep -qF -- "$pattern" err.txt || stack_fail "$what: the message lacks \"$pattern\": $(cat err.txt)"
}

# Certificates: expired, not yet valid, valid (python3-cryptography).
python3 - <<'PY' || { echo "SKIP: python3-cryptography is not installed"; exit 77; }
import datetime
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
key = ec.generate_private_key(ec.SECP256R1())
open("server.key", "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()))
now = datetime.datetime.now(datetime.timezone.utc)
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpulens-test")])
for file, start, end in [("expired.crt", now - datetime.timedelta(days=30), now - datetime.timedelta(days=1)),
                         ("future.crt", now + datetime.timedelta(days=10), now + datetime.timedelta(days=40)),
                         ("valid.crt", now - datetime.timedelta(days=1), now + datetime.timedelta(days=30))]:
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
            .sign(key, hashes.SHA256()))
    open(file, "wb").write(cert.public_bytes(serialization.Encoding.PEM))
PY
for c in expired future valid; do
  printf 'tls_server_config:\n  cert_file: %s.crt\n  key_file: server.key\n' "$c" >"web-$c.yml"
done
expect_refused "expired certificate" \
  "$STACK/web-expired.yml: tls_server_config.cert_file $STACK/expired.crt: the certificate expired on" \
  --web-config-file "$STACK/web-expired.yml"
expect_refused "not yet valid certificate" "future.crt: the certificate is not valid before" \
  --web-config-file "$STACK/web-future.yml"
"$GPULENS" check-config -q --web-config-file "$STACK/web-valid.yml" || stack_fail "a valid certificate was refused"
# The same through a config file's web_config_file.
printf 'web_config_file: %s/web-expired.yml\n' "$STACK" >agent-expired.yaml
expect_refused "expired certificate via the config file" "web_config_file: $STACK/web-expired.yml" agent-expired.yaml

# bcrypt cost: 18 is the most; 19 and 31 are refused, naming the user.
fake='QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi'
for cost in 19 31; do
  printf 'basic_auth_users:\n  prom: $2y$%s$%s\n' "$cost" "$fake" >"web-cost$cost.yml"
  expect_refused "cost $cost" "basic_auth_users.prom: bcrypt cost $cost is above 18" --web-config-file "web-cost$cost.yml"
done
printf 'basic_auth_users:\n  prom: $2y$18$%s\n' "$fake" >web-cost18.yml
"$GPULENS" check-config -q --web-config-file web-cost18.yml || stack_fail "cost 18 was refused"

# push.token_file: missing, empty, then present.
printf 'push: {enabled: true, token_file: %s/token}\n' "$STACK" >push.yaml
expect_refused "missing token_file" "push.token_file: cannot read $STACK/token" push.yaml
: >token
expect_refused "empty token_file" "push.token_file: $STACK/token is empty" push.yaml
echo s3cret >token
"$GPULENS" check-config -q push.yaml || stack_fail "a readable token_file was refused: $(cat err.txt)"
echo "PASS: check-config refuses an expired or future certificate, bcrypt cost > 18, a missing or empty token_file"
