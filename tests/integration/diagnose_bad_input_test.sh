#!/usr/bin/env bash
# Bad diagnosis input ends in a clear error, never a crash, hang or "no
# findings": out-of-range timestamps in a recording and in a server's answer
# (1e300, 1e19, negative, NaN), /dev/zero and an endless stream, a million
# series past --max-series, and a vector answer where a matrix was asked. The
# server is a loopback stand-in (lib/fake_query_api.py) that answers exactly
# what each case needs; a real Prometheus never sends these.
#
#   diagnose_bad_input_test.sh GPULENS SOURCE_DIR
set -euo pipefail
gpulens=$1 src=$2
source "$src/tests/integration/lib/stack.sh"
stack_init python3 timeout
tmp=$STACK

# expect_error RC PATTERN CMD...: exits with RC and prints PATTERN on stderr.
expect_error() {
  local want=$1 pattern=$2 rc=0
  shift 2
  timeout 60 "$@" > "$tmp/out.txt" 2> "$tmp/err.txt" || rc=$?
  [[ $rc == "$want" ]] || stack_fail "$*: exit $rc, want $want; stderr: $(head -c 500 "$tmp/err.txt")"
  grep -qF -- "$pattern" "$tmp/err.txt" || stack_fail "$*: stderr lacks '$pattern': $(head -c 500 "$tmp/err.txt")"
}

line='DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1"} 50'
for ts in 1e300 1e19 -5 NaN; do
  printf '%s 1764410400\n%s %s\n# EOF\n' "$line" "$line" "$ts" > "$tmp/ts.om"
  expect_error 1 "ts.om:2: timestamp \"$ts\" out of range" "$gpulens" diagnose --replay "$tmp/ts.om" --format json
done

expect_error 1 "/dev/zero:1: line longer than 1048576 bytes" "$gpulens" diagnose --replay /dev/zero
# An endless stream of valid samples stops at the sample bound.
expect_error 1 "more than 1000 samples" bash -c \
  "yes '$line 1764410400' | '$gpulens' diagnose --replay /dev/stdin --max-samples 1000"
python3 -c '
import sys
for i in range(200000):
    sys.stdout.write("DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",Hostname=\"h%d\"} 50 1764410400\n" % (i % 8, i))
' > "$tmp/many.om"
expect_error 1 "many.om:100001: more than 100000 distinct series of the families read (raise --max-series, or split the input)" "$gpulens" diagnose --replay "$tmp/many.om"

# start_fake MODE: a stand-in query API on a free loopback port ($fake_port).
start_fake() {
  rm -f "$tmp/fake.port"
  python3 "$src/tests/integration/lib/fake_query_api.py" "$1" > "$tmp/fake.port" 2> "$tmp/fake.log" &
  STACK_PIDS+=($!)
  for _ in $(seq 400); do [[ -s $tmp/fake.port ]] && break; sleep 0.05; done
  fake_port=$(cat "$tmp/fake.port")
  [[ -n $fake_port ]] || stack_fail "fake query API did not start"
}
stop_fake() { kill "${STACK_PIDS[-1]}"; wait "${STACK_PIDS[-1]}" 2>/dev/null || true; unset 'STACK_PIDS[-1]'; }

common=(--end 1764410500 --range 10m --format json)
start_fake matrix
rc=0; "$gpulens" diagnose --prometheus "http://127.0.0.1:$fake_port" "${common[@]}" > "$tmp/ok.json" 2>&1 || rc=$?
[[ $rc == 0 || $rc == 3 ]] || stack_fail "well-formed answer: exit $rc: $(cat "$tmp/ok.json")"
grep -q '"host":"n1"' "$tmp/ok.json" || stack_fail "well-formed answer not diagnosed: $(head -c 300 "$tmp/ok.json")"
stop_fake
for ts in 1e300 1e19 -5; do
  start_fake "ts:$ts"
  expect_error 1 "prometheus http://127.0.0.1:$fake_port query DCGM_FI_DEV_GPU_UTIL: timestamp" \
    "$gpulens" diagnose --prometheus "http://127.0.0.1:$fake_port" "${common[@]}"
  grep -q "out of range" "$tmp/err.txt" || stack_fail "ts $ts: $(cat "$tmp/err.txt")"
  stop_fake
done
start_fake "ts:NaN"
expect_error 1 "query DCGM_FI_DEV_GPU_UTIL: malformed response" \
  "$gpulens" diagnose --prometheus "http://127.0.0.1:$fake_port" "${common[@]}"
stop_fake
start_fake vector
expect_error 1 "prometheus http://127.0.0.1:$fake_port query DCGM_FI_DEV_GPU_UTIL: answered a \"vector\"" \
  "$gpulens" diagnose --prometheus "http://127.0.0.1:$fake_port" "${common[@]}"
stop_fake
echo "ok"
