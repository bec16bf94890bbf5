#!/usr/bin/env bash
# The C client (clients/c/gpulens_push.h) from a C program against a live
# agent: its gauges and counter arrive on the GPU it names with its pid, every
# error path answers as documented (the program checks those), and DELETE
# removes the group.
#
#   c_push_test.sh GPULENS GPULENS_PUSH_C_TEST
set -euo pipefail
GPULENS=$1
PROGRAM=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/stack.sh"
stack_init curl

port=$(free_port)
dead=$(free_port)
start_agent push "$port" --source sim --scenario healthy-training --interval 1s --push
uuid=$(curl -fsS "http://127.0.0.1:$port/api/v1/current" |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["gpus"][2]["uuid"])')

mkfifo "$STACK/in"
"$PROGRAM" "http://127.0.0.1:$port" "$uuid" "127.0.0.1:$dead" <"$STACK/in" >"$STACK/out" 2>"$STACK/err" &
prog=$!
exec 3>"$STACK/in"  # holds the program until we write a line
deadline=$((SECONDS + 15))
until grep -q '^pushed' "$STACK/out"; do
  kill -0 "$prog" 2>/dev/null || { cat "$STACK/err"; stack_fail "the C program failed"; }
  ((SECONDS < deadline)) || stack_fail "the C program did not push"
  sleep 0.2
done
pid=$(awk '{print $2}' "$STACK/out")
sleep 1.5  # a collection after the push
m=$(curl -fsS "http://127.0.0.1:$port/metrics")
line() { grep "^$1{" <<<"$m" | grep "pid=\"$pid\"" || stack_fail "no $1 for pid $pid"; }
line gpu_allocator_reserved_bytes | grep "gpu=\"2\",gpu_uuid=\"$uuid\"" | grep ' 8500000000$' >/dev/null ||
  stack_fail "reserved: $(line gpu_allocator_reserved_bytes)"
line gpu_allocator_allocated_bytes | grep ' 5000000000$' >/dev/null || stack_fail "allocated"
line gpu_memory_fragmentation_ratio | grep ' 0.41176470588235' >/dev/null || stack_fail "fragmentation: $(line gpu_memory_fragmentation_ratio)"
line gpu_allocator_retries_total | grep ' 4$' >/dev/null || stack_fail "retries"
echo >&3  # let it delete and exit
exec 3>&-
wait "$prog" || { cat "$STACK/err"; stack_fail "the C program's checks failed"; }
sleep 1.5
curl -fsS "http://127.0.0.1:$port/metrics" | grep "pid=\"$pid\"" >/dev/null && stack_fail "the group survived DELETE"
echo "c push client: ok"
