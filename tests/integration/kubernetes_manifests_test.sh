#!/usr/bin/env bash
# Kubernetes manifests: every kustomize overlay renders with `kubectl
# kustomize`, and every rendered object passes strict offline validation
# (k8s_validate.py: Kubernetes API types for built-in kinds, JSON schemas for
# the prometheus-operator CRDs). The validator is shown to reject broken
# objects, and the DaemonSet to hold no more host access than it documents.
#
#   kubernetes_manifests_test.sh
#
# Exits 77 (skipped) without kubectl or Debian's python3-kubernetes,
# python3-jsonschema, python3-yaml.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
command -v kubectl >/dev/null || { echo "SKIP: kubectl not installed"; exit 77; }
$py -c 'import kubernetes, jsonschema, yaml' 2>/dev/null || { echo "SKIP: python3-kubernetes/jsonschema/yaml missing"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
validate() { timeout 60 $py "$here/k8s_validate.py" "$root/deploy/kubernetes/schemas"; }

dirs=("$root/deploy/kubernetes/base" "$root"/deploy/kubernetes/overlays/*/)
for d in "${dirs[@]}"; do
  name=${d#"$root/"}
  timeout 60 kubectl kustomize "$d" >"$tmp/out.yaml" || fail "kubectl kustomize $name"
  validate <"$tmp/out.yaml" || fail "$name: invalid objects"
done

# The overlays do what they say.
kubectl kustomize "$root/deploy/kubernetes/overlays/dcgm-names" >"$tmp/dcgm.yaml"
grep -q -- '- --dcgm-names' "$tmp/dcgm.yaml" || fail "dcgm-names overlay lacks --dcgm-names"
grep -q 'DCGM_FI_DEV_GPU_UTIL <' "$tmp/dcgm.yaml" || fail "dcgm-names overlay lacks the DCGM rules"
[[ $(grep -c '^kind: PrometheusRule' "$tmp/dcgm.yaml") == 1 ]] || fail "dcgm-names overlay must have exactly one PrometheusRule"
kubectl kustomize "$root/deploy/kubernetes/overlays/my-namespace" >"$tmp/ns.yaml"
[[ $(grep -c 'namespace: monitoring' "$tmp/ns.yaml") == 5 ]] || fail "my-namespace overlay: not every object in namespace monitoring"
grep -q '^kind: Namespace' "$tmp/ns.yaml" && fail "my-namespace overlay still creates namespace gpulens"
grep -q 'image: registry.example.com/gpulens:0.1.0$' "$tmp/ns.yaml" || fail "my-namespace overlay's image is not applied"
kubectl kustomize "$root/deploy/kubernetes/overlays/tls-basic-auth" >"$tmp/tls.yaml"
grep -q -- '- --web-config-file=/etc/gpulens/web/web-config.yml' "$tmp/tls.yaml" || fail "tls-basic-auth overlay lacks --web-config-file"
grep -q 'scheme: https' "$tmp/tls.yaml" || fail "tls-basic-auth overlay: the ServiceMonitor does not scrape https"
grep -q 'basicAuth:' "$tmp/tls.yaml" || fail "tls-basic-auth overlay: the ServiceMonitor sends no basic auth"
grep -q 'httpGet' "$tmp/tls.yaml" && fail "tls-basic-auth overlay: an HTTP probe would need the password"
kubectl kustomize "$root/deploy/kubernetes/overlays/kube-owner-labels" >"$tmp/owner.yaml"
grep -q -- '- --kube-owner-labels' "$tmp/owner.yaml" || fail "kube-owner-labels overlay lacks --kube-owner-labels"
grep -q 'fieldPath: spec.nodeName' "$tmp/owner.yaml" || fail "kube-owner-labels overlay sets no NODE_NAME"
$py "$here/k8s_pod_checks.py" least-privilege "$tmp/owner.yaml" || fail "kube-owner-labels overlay: more than get/list on pods"

# Least privilege of the agent pod.
kubectl kustomize "$root/deploy/kubernetes/base" >"$tmp/base.yaml"
$py - "$tmp/base.yaml" <<'PY' || fail "DaemonSet grants more host access than documented"
import sys, yaml
ds = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
for key in ("hostPID", "hostNetwork", "hostIPC"):
    assert not pod.get(key), key
c = pod["containers"][0]
sc = c["securityContext"]
assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
# The kmsg source: CAP_SYSLOG alone (kernel.dmesg_restrict), the node's /dev/kmsg read-only.
assert sc["capabilities"]["add"] == ["SYSLOG"], sc["capabilities"]
host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
assert host == {"proc": "/proc", "sys": "/sys", "pod-resources": "/var/lib/kubelet/pod-resources",
                "kmsg": "/dev/kmsg"}, host
assert {"name": "kmsg", "mountPath": "/dev/kmsg", "readOnly": True} in c["volumeMounts"], c["volumeMounts"]
assert all(m["readOnly"] for m in c["volumeMounts"]), "a host mount is writable"
assert not c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu"), "must not take a GPU from the scheduler"
# Real GPUs only: never a silent fallback to the simulator on a node.
assert "--source=nvml,host,kubelet,kmsg" in c["args"], c["args"]
PY

# The validator rejects what it should (each a broken copy of a good object).
broken() {  # python expression editing `d` (the object of kind $1), expected message
  $py - "$tmp/base.yaml" "$1" "$2" >"$tmp/broken.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
d = next(x for x in docs if x["kind"] == sys.argv[2])
exec(sys.argv[3])
yaml.safe_dump_all(docs, sys.stdout)
PY
  if validate <"$tmp/broken.yaml" 2>"$tmp/err" >/dev/null; then fail "validator accepted: $2"; fi
  grep -q -- "$3" "$tmp/err" || fail "validator message for '$2' lacks '$3': $(cat "$tmp/err")"
}
broken DaemonSet 'd["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"' 'unknown field'
broken DaemonSet 'd["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "9400"' 'expected int'
broken DaemonSet 'del d["spec"]["template"]["spec"]["containers"][0]["name"]' 'name'
broken DaemonSet 'del d["spec"]["selector"]' 'selector'
broken Service 'd["metadata"].pop("namespace")' 'metadata.namespace'
broken ServiceMonitor 'd["spec"]["endpoints"][0]["intervall"] = "15s"' 'intervall'
broken ServiceMonitor 'd["spec"]["endpoints"][0]["interval"] = "15 seconds"' 'does not match'
broken PrometheusRule 'd["spec"]["groups"][0]["rules"][0].pop("expr")' 'expr'
echo "kubernetes manifests: ok (${#dirs[@]} renderings)"
