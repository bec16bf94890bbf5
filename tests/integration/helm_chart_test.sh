#!/usr/bin/env bash
# The Helm chart deploy/helm/gpulens, rendered without a helm binary by
# tests/helm/render.go (Helm's template functions and value merging on
# Debian's Go toolchain and Sprig): the harness holds Helm's semantics on a
# fixture chart; the default values and every documented combination
# (deploy/helm/gpulens/ci/*-values.yaml) render, every object passes the
# offline validator (API types, CRD schemas), the pod is least-privileged,
# every flag the chart passes is a flag of `gpulens serve`, the config file
# it writes passes `gpulens check-config`; the chart's DaemonSet and the
# kustomize one do not drift apart in their security-relevant fields.
#
#   helm_chart_test.sh GPULENS BUILD_DIR
#
# Exits 77 (skipped) without Go, Debian's Sprig/yaml Go sources, kubectl or
# python3-kubernetes/jsonschema/yaml.
set -euo pipefail
gpulens=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
chart=$root/deploy/helm/gpulens
py=/usr/bin/python3
gopath=/usr/share/gocode
command -v go >/dev/null || { echo "SKIP: go not installed (golang-go)"; exit 77; }
[[ -d $gopath/src/github.com/Masterminds/sprig && -d $gopath/src/gopkg.in/yaml.v2 ]] ||
  { echo "SKIP: golang-github-masterminds-sprig-dev / golang-gopkg-yaml.v2-dev missing"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: kubectl not installed"; exit 77; }
$py -c 'import kubernetes, jsonschema, yaml' 2>/dev/null || { echo "SKIP: python3-kubernetes/jsonschema/yaml missing"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The harness: Debian's Go packages only, offline (GOPATH mode, no proxy).
mkdir -p "$build/helm"
render=$build/helm/render
GO111MODULE=off GOPATH=$gopath GOPROXY=off GOFLAGS= GOCACHE=$build/helm/go-cache \
  go build -o "$render" "$root/tests/helm/render.go" || fail "building the render harness"

# Helm's semantics on a fixture: value merging (maps merge, lists replace,
# null deletes), --set, include, tpl, toYaml, fromYaml, .Chart/.Release/
# .Template, missing keys as "", dropped empty documents, float64 numbers.
fx=$root/tests/helm/testdata/semantics
"$render" --name rel --namespace ns -f "$fx/user.yaml" --set fromSet=true "$fx" >"$tmp/fx.yaml" || fail "fixture render"
diff -u "$fx/expected.yaml" "$tmp/fx.yaml" || fail "harness output differs from Helm's on the fixture"
printf 'x: {{ required "x is required" .Values.nope }}\n' >"$tmp/req.yaml"
mkdir -p "$tmp/req/templates" && cp "$fx/Chart.yaml" "$tmp/req/" && : >"$tmp/req/values.yaml" && mv "$tmp/req.yaml" "$tmp/req/templates/"
if "$render" "$tmp/req" 2>"$tmp/err"; then fail "required did not fail"; fi
grep -q 'x is required' "$tmp/err" || fail "required: $(cat "$tmp/err")"

validate() { timeout 60 $py "$here/k8s_validate.py" "$root/deploy/kubernetes/schemas" <"$1" >/dev/null; }
"$gpulens" serve --help >"$tmp/serve-help"

# Every combination the chart's README documents, and the defaults.
combos=(default)
for f in "$chart"/ci/*-values.yaml; do
  name=$(basename "$f" -values.yaml)
  grep -q "ci/$name-values.yaml" "$chart/README.md" || fail "ci/$name-values.yaml is not documented in the chart's README"
  combos+=("$name")
done
for name in "${combos[@]}"; do
  args=(--name gpulens --namespace gpulens)
  [[ $name != default ]] && args+=(-f "$chart/ci/$name-values.yaml")
  out=$tmp/$name.yaml
  "$render" "${args[@]}" "$chart" >"$out" || fail "$name: render failed"
  validate "$out" || fail "$name: invalid objects: $(validate "$out" 2>&1)"
  $py "$here/k8s_pod_checks.py" least-privilege "$out" || fail "$name: the pod is not least-privileged"
  $py "$here/k8s_pod_checks.py" args "$out" >"$tmp/args"
  [[ $(head -1 "$tmp/args") == --* ]] || fail "$name: the first argument is not a flag (the image's entrypoint is gpulens serve)"
  while read -r flag; do
    grep -q -- "  $flag\b" "$tmp/serve-help" || fail "$name: the chart passes $flag, which gpulens serve does not have"
  done < <(grep -o -- '^--[a-z-]*' "$tmp/args")
  $py "$here/k8s_pod_checks.py" config "$out" >"$tmp/config.yaml"
  if [[ -s $tmp/config.yaml ]]; then
    # The push token is a mounted Secret in the pod: check-config reads the
    # file, so a stand-in token takes its path here.
    printf 'stand-in-token\n' >"$tmp/token"
    sed -i -E "s#^( *token_file:).*#\1 $tmp/token#" "$tmp/config.yaml"
    "$gpulens" check-config -q "$tmp/config.yaml" || fail "$name: gpulens check-config rejects the chart's config file"
  fi
done

# Each combination does what its file says.
has() { grep -q -- "$2" "$tmp/$1.yaml" || fail "$1: lacks $2"; }
lacks() { if grep -q -- "$2" "$tmp/$1.yaml"; then fail "$1: has $2"; fi; }
has default 'image: gpulens/gpulens:0.1.0$'
has default '^    release: kube-prometheus-stack$'
has default 'nvidia.com/gpu.present: "true"'
has default 'jobLabel: app.kubernetes.io/name'
has default 'app.kubernetes.io/managed-by: Helm'
has default 'alert: GPULowUtilization'
lacks default 'kind: ConfigMap'
lacks default 'DCGM_FI_'
has dcgm-names '- --dcgm-names$'
has dcgm-names '- --dcgm-hostname-label=hostname$'
has dcgm-names 'DCGM_FI_DEV_GPU_UTIL <'
has push-remote-write '- --push$'
has push-remote-write '- --remote-write=http://vminsert'
has push-remote-write 'token_file: /etc/gpulens/push/token'
has push-remote-write 'secretName: gpulens-push-token'
has push-remote-write 'checksum/config: '
has minimal 'image: registry.example.com/gpulens@sha256:0000'
has minimal 'namespace: observability'
has minimal 'name: gpu-agent'
has minimal '- --source=nvml,host$'
has default '- --source=nvml,host,kubelet,kmsg$'
has default 'add: \[SYSLOG\]'
has default 'path: /dev/kmsg'
lacks minimal 'path: /dev/kmsg'
lacks minimal 'add: \[SYSLOG\]'
has minimal '- "--history=2h"'
lacks minimal 'pod-resources'
lacks minimal 'kind: ServiceMonitor'
lacks minimal 'kind: ServiceAccount'
lacks minimal 'nodeSelector:'
lacks minimal 'release: '
has scrape '- --source=nvml,host,kubelet,kmsg,scrape$'
has scrape '- --scrape=http://nvidia-dcgm-exporter.gpu-operator.svc:9400/metrics$'
has scrape '- --scrape=http://$(NODE_IP):9100/metrics$'
has scrape 'fieldPath: status.hostIP'
has scrape 'interval: 5s'
lacks default 'NODE_IP'
lacks default '- --scrape='
has web-config '- --web-config-file=/etc/gpulens/web/web-config.yml$'
has web-config 'secretName: gpulens-web-config'
has web-config 'tcpSocket:'
has web-config 'scheme: https'
has web-config 'insecureSkipVerify: true'
lacks web-config 'path: /healthz'
lacks default 'web-config'
has kube-owner-labels '- --kube-owner-labels$'
has kube-owner-labels 'automountServiceAccountToken: true'
has kube-owner-labels 'fieldPath: spec.nodeName'
has kube-owner-labels 'kind: ClusterRoleBinding'
has kube-owner-labels 'verbs: \[get, list\]'
lacks default 'kube-owner-labels'
lacks default 'kind: ClusterRole'
lacks default 'automountServiceAccountToken: true'
[[ $(grep -c '^kind:' "$tmp/minimal.yaml") == 2 ]] || fail "minimal: want a DaemonSet and a Service"

# The chart's PrometheusRule carries exactly `gpulens rules` (native and dcgm).
for name in default dcgm-names; do
  flags=(--format prometheus-rule); [[ $name == dcgm-names ]] && flags+=(--dcgm-names)
  "$gpulens" rules "${flags[@]}" | $py -c 'import sys, yaml; print(yaml.safe_dump(yaml.safe_load(sys.stdin)["spec"]))' >"$tmp/want"
  $py -c 'import sys, yaml; d = next(x for x in yaml.safe_load_all(open(sys.argv[1])) if x and x["kind"] == "PrometheusRule"); print(yaml.safe_dump(d["spec"]))' \
    "$tmp/$name.yaml" >"$tmp/got"
  diff -u "$tmp/want" "$tmp/got" >/dev/null || fail "$name: the PrometheusRule differs from gpulens rules ${flags[*]}"
done

# Bad values get a clear error, not a manifest.
printf 'sources: [sim]\n' >"$tmp/sim.yaml"
if "$render" -f "$tmp/sim.yaml" "$chart" >/dev/null 2>"$tmp/err"; then fail "sources [sim] rendered"; fi
grep -q 'sim serves made-up data' "$tmp/err" || fail "sources [sim]: $(cat "$tmp/err")"
printf 'scrape: {targets: [127.0.0.1:9401/metrics]}\n' >"$tmp/scrape.yaml"
if "$render" -f "$tmp/scrape.yaml" "$chart" >/dev/null 2>"$tmp/err"; then fail "a scrape target without a scheme rendered"; fi
grep -q 'scrape.targets: "127.0.0.1:9401/metrics" is not an http:// or https:// URL' "$tmp/err" ||
  fail "scrape.targets: $(cat "$tmp/err")"

# No drift: the security-relevant fields of the chart's DaemonSet and the
# kustomize base's are the same; the check itself sees a difference.
kubectl kustomize "$root/deploy/kubernetes/base" >"$tmp/kustomize.yaml"
$py "$here/k8s_pod_checks.py" drift "$tmp/kustomize.yaml" "$tmp/default.yaml" || fail "the chart's DaemonSet drifted from deploy/kubernetes/base"
"$render" --set resources.limits.memory=1Gi "$chart" >"$tmp/drifted.yaml"
if $py "$here/k8s_pod_checks.py" drift "$tmp/kustomize.yaml" "$tmp/drifted.yaml" 2>"$tmp/err"; then fail "drift check missed a changed limit"; fi
grep -q 'container.resources' "$tmp/err" || fail "drift message: $(cat "$tmp/err")"
# ... and the least-privilege check sees a writable mount and a host PID namespace.
sed 's/readOnly: true/readOnly: false/' "$tmp/default.yaml" >"$tmp/rw.yaml"
if $py "$here/k8s_pod_checks.py" least-privilege "$tmp/rw.yaml" 2>"$tmp/err"; then fail "writable mount accepted"; fi
grep -q 'mount proc is writable' "$tmp/err" || fail "least-privilege message: $(cat "$tmp/err")"
sed 's/^      automountServiceAccountToken: false/      hostPID: true\n      automountServiceAccountToken: false/' "$tmp/default.yaml" >"$tmp/pid.yaml"
if $py "$here/k8s_pod_checks.py" least-privilege "$tmp/pid.yaml" 2>"$tmp/err"; then fail "hostPID accepted"; fi
grep -q 'hostPID is set' "$tmp/err" || fail "least-privilege message: $(cat "$tmp/err")"
# ... SYSLOG without the kmsg source, and a kmsg source without /dev/kmsg mounted.
sed 's/drop: \[ALL\]/drop: [ALL]\n              add: [SYSLOG]/' "$tmp/minimal.yaml" >"$tmp/cap.yaml"
if $py "$here/k8s_pod_checks.py" least-privilege "$tmp/cap.yaml" 2>"$tmp/err"; then fail "SYSLOG without kmsg accepted"; fi
grep -q "added none" "$tmp/err" || fail "least-privilege message: $(cat "$tmp/err")"
sed 's#path: /dev/kmsg#path: /var/log#' "$tmp/default.yaml" >"$tmp/kmsg.yaml"
if $py "$here/k8s_pod_checks.py" least-privilege "$tmp/kmsg.yaml" 2>"$tmp/err"; then fail "kmsg volume on /var/log accepted"; fi
grep -q 'volume kmsg mounts /var/log' "$tmp/err" || fail "least-privilege message: $(cat "$tmp/err")"
# ... and a ClusterRole that grants more than get/list on pods.
sed 's/verbs: \[get, list\]/verbs: [get, list, watch, delete]/' "$tmp/kube-owner-labels.yaml" >"$tmp/rbac.yaml"
if $py "$here/k8s_pod_checks.py" least-privilege "$tmp/rbac.yaml" 2>"$tmp/err"; then fail "a wider ClusterRole accepted"; fi
grep -q 'want only get and list on pods' "$tmp/err" || fail "least-privilege message: $(cat "$tmp/err")"
printf 'kubeOwnerLabels: {enabled: true}\nsources: [nvml, host]\n' >"$tmp/owner.yaml"
if "$render" -f "$tmp/owner.yaml" "$chart" >/dev/null 2>"$tmp/err"; then fail "kubeOwnerLabels without kubelet rendered"; fi
grep -q 'kubeOwnerLabels.enabled needs kubelet in sources' "$tmp/err" || fail "kubeOwnerLabels: $(cat "$tmp/err")"
echo "helm chart: ok (${#combos[@]} combinations: ${combos[*]})"
