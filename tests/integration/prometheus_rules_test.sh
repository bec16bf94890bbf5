#!/usr/bin/env bash
# The shipped Prometheus rules: valid for promtool, their unit tests pass
# (every alert firing and not firing), and each shipped file is exactly what
# `gpulens rules` prints with default thresholds.
#
#   prometheus_rules_test.sh GPULENS
#
# Exits 77 (skipped) when promtool is not installed.
set -euo pipefail
gpulens=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v promtool >/dev/null || { echo "SKIP: promtool not installed"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cd "$root/deploy/prometheus"
promtool check rules gpulens-rules.yml gpulens-rules-dcgm.yml
(cd tests && promtool test rules gpulens-rules.test.yml gpulens-rules-dcgm.test.yml)
promtool check config prometheus.yml >/dev/null
if command -v amtool >/dev/null; then amtool check-config alertmanager.yml >/dev/null; fi

# Shipped files == generator output.
check_same() {  # file, gpulens rules args...
  local file=$1; shift
  "$gpulens" rules "$@" >"$tmp/out" || fail "gpulens rules $* failed"
  diff -u "$root/$file" "$tmp/out" || fail "$file differs from 'gpulens rules $*'"
}
check_same deploy/prometheus/gpulens-rules.yml
check_same deploy/prometheus/gpulens-rules-dcgm.yml --dcgm-names
check_same deploy/kubernetes/base/prometheusrule.yaml --format prometheus-rule
check_same deploy/kubernetes/overlays/dcgm-names/prometheusrule.yaml --dcgm-names --format prometheus-rule
check_same deploy/helm/gpulens/files/gpulens-rules.yml
check_same deploy/helm/gpulens/files/gpulens-rules-dcgm.yml --dcgm-names

# The documented ways to check generated rules with promtool as Debian ships
# it (it reads no "-"; a pipe goes through /dev/stdin), or through a file.
"$gpulens" rules | promtool check rules /dev/stdin >/dev/null || fail "gpulens rules | promtool check rules /dev/stdin"
"$gpulens" rules -o "$tmp/o.yml" && promtool check rules "$tmp/o.yml" >/dev/null || fail "gpulens rules -o FILE"
cmp -s "$tmp/o.yml" "$root/deploy/prometheus/gpulens-rules.yml" || fail "gpulens rules -o wrote other rules than stdout"

# A config with other thresholds gives rules promtool accepts, with them in.
cat >"$tmp/cfg.yaml" <<'YAML'
rules:
  evaluation_interval: 5s
  gpu_util_low: {threshold: 0.35, for: 30s}
  temperature_high: {threshold: 87}
YAML
"$gpulens" rules --config "$tmp/cfg.yaml" --set agent_down.for=1m >"$tmp/custom.yml"
promtool check rules "$tmp/custom.yml" >/dev/null
grep -q 'expr: gpu_utilization_ratio < 0.35' "$tmp/custom.yml" || fail "threshold from --config missing"
grep -q 'gpu_temperature_celsius > 87' "$tmp/custom.yml" || fail "temperature from --config missing"
grep -q 'interval: 5s' "$tmp/custom.yml" || fail "evaluation_interval missing"

# Bad input is a usage error naming the problem.
printf 'rules:\n  gpu_util_low: {threshold: 20}\n' >"$tmp/bad.yaml"
set +e
"$gpulens" rules --config "$tmp/bad.yaml" >/dev/null 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] || fail "bad config exited $rc, want 2"
grep -q 'bad.yaml:2:.*not a ratio' "$tmp/err" || fail "error does not name file, line and problem: $(cat "$tmp/err")"
echo "prometheus rules: ok"
