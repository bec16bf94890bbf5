#!/usr/bin/python3
"""Checks of the agent's pod in rendered manifests (the Helm chart, kustomize).

    k8s_pod_checks.py least-privilege RENDERED.yaml
    k8s_pod_checks.py drift KUSTOMIZE.yaml CHART.yaml
    k8s_pod_checks.py args RENDERED.yaml        # the agent's args, one a line
    k8s_pod_checks.py config RENDERED.yaml      # the ConfigMap's gpulens.yaml

least-privilege: every DaemonSet's pod holds no more host access than the
agent needs: no host network/PID/IPC, no API token (except with --kube-owner-labels, whose
ClusterRole grants get and list on pods only), no privilege escalation,
a read-only root, host paths only /proc, /sys and the kubelet's
pod-resources directory, and /dev/kmsg (a character device, mounted at
/dev/kmsg) with the one capability SYSLOG only when kmsg is a source, no
other capability, every mount read-only, no GPU taken from the scheduler,
real GPU sources pinned (never the simulator).

drift: the security-relevant fields of the two DaemonSets are equal (pod
host access, service account token, runtime and priority class, scheduling,
the container's security context, host volumes and their mounts, resources,
probes, environment, ports and the pinned sources).

Exits 1 naming every difference or violation.
"""
import sys

import yaml

ALLOWED_HOST = {"proc": "/proc", "sys": "/sys"}


def load(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]


def daemonsets(docs):
    return [d for d in docs if d["kind"] == "DaemonSet"]


def arg_value(args, flag):
    for a in args:
        if a.startswith(flag + "="):
            return a[len(flag) + 1:]
    return None


def least_privilege(docs):
    errors = []
    for ds in daemonsets(docs):
        name = ds["metadata"]["name"]
        pod = ds["spec"]["template"]["spec"]
        err = lambda m: errors.append(f"DaemonSet/{name}: {m}")  # noqa: E731
        for key in ("hostPID", "hostNetwork", "hostIPC"):
            if pod.get(key):
                err(f"{key} is set")
        # The API token only for the pods' owner labels, with get/list on pods only (below).
        owner_labels = any("--kube-owner-labels" in c.get("args", []) for c in pod["containers"])
        if owner_labels:
            if pod.get("automountServiceAccountToken") is not True:
                err("--kube-owner-labels without the API token (automountServiceAccountToken: true)")
            bound = [b for b in docs if b["kind"] == "ClusterRoleBinding"
                     and any(s.get("kind") == "ServiceAccount" and s.get("name") == pod.get("serviceAccountName")
                             for s in b.get("subjects", []))]
            if not bound:
                err("--kube-owner-labels but no ClusterRoleBinding for the pod's service account")
        elif pod.get("automountServiceAccountToken") is not False:
            err("automountServiceAccountToken is not false")
        if pod.get("securityContext", {}).get("sysctls"):
            err("sysctls set")
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        kmsg = any(
            "kmsg" in (arg_value(c.get("args", []), "--source") or "").split(",") for c in pod["containers"]
        )
        for vname, v in volumes.items():
            if "hostPath" in v:
                path = v["hostPath"]["path"]
                if vname == "kmsg":
                    if not kmsg or path != "/dev/kmsg" or v["hostPath"].get("type") != "CharDevice":
                        err(f"volume kmsg mounts {path} (type {v['hostPath'].get('type')}): only the character "
                            "device /dev/kmsg, only for the kmsg source")
                elif vname == "pod-resources":
                    if not path.rstrip("/").endswith("pod-resources"):
                        err(f"volume pod-resources mounts {path}")
                elif ALLOWED_HOST.get(vname) != path:
                    err(f"host path {vname}={path} is not allowed")
            elif not ({"configMap", "secret"} & v.keys()):
                err(f"volume {vname}: only hostPath (proc, sys, pod-resources), configMap and secret are expected")
        for c in pod.get("initContainers", []) + pod["containers"]:
            cname = c["name"]
            sc = c.get("securityContext", {})
            if sc.get("privileged") is not False:
                err(f"{cname}: privileged is not false")
            if sc.get("allowPrivilegeEscalation") is not False:
                err(f"{cname}: allowPrivilegeEscalation is not false")
            if sc.get("readOnlyRootFilesystem") is not True:
                err(f"{cname}: root filesystem is writable")
            caps = sc.get("capabilities", {})
            own_kmsg = "kmsg" in (arg_value(c.get("args", []), "--source") or "").split(",")
            want_add = ["SYSLOG"] if own_kmsg else []
            if caps.get("drop") != ["ALL"] or (caps.get("add") or []) != want_add:
                err(f"{cname}: capabilities {caps}, want drop [ALL] and added {want_add or 'none'}")
            for m in c.get("volumeMounts", []):
                if m.get("readOnly") is not True:
                    err(f"{cname}: mount {m['name']} is writable")
                if m["name"] == "kmsg" and m["mountPath"] != "/dev/kmsg":
                    err(f"{cname}: kmsg mounted at {m['mountPath']}, the source reads /dev/kmsg")
            if own_kmsg and not any(m["name"] == "kmsg" for m in c.get("volumeMounts", [])):
                err(f"{cname}: kmsg is a source but the node's /dev/kmsg is not mounted")
            if "nvidia.com/gpu" in c.get("resources", {}).get("limits", {}):
                err(f"{cname}: takes a GPU from the scheduler")
            sources = arg_value(c.get("args", []), "--source")
            if sources is None:
                err(f"{cname}: --source is not pinned")
            elif "sim" in sources.split(",") or "nvml" not in sources.split(","):
                err(f"{cname}: --source={sources}: want real GPUs (nvml), never the simulator")
        if "pod-resources" in volumes and not any(
            m["name"] == "pod-resources" for c in pod["containers"] for m in c.get("volumeMounts", [])
        ):
            err("pod-resources volume is not mounted")
    for role in (d for d in docs if d["kind"] in ("ClusterRole", "Role")):
        want = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
        if role.get("rules") != want:
            errors.append(f"{role['kind']}/{role['metadata']['name']}: rules {role.get('rules')}, want only get and "
                          "list on pods")
    for sa in (d for d in docs if d["kind"] == "ServiceAccount"):
        if sa.get("automountServiceAccountToken") is not False:
            errors.append(f"ServiceAccount/{sa['metadata']['name']}: automountServiceAccountToken is not false")
    if not daemonsets(docs):
        errors.append("no DaemonSet")
    return errors


def security_view(ds):
    pod = ds["spec"]["template"]["spec"]
    c = pod["containers"][0]
    host = {v["name"]: v["hostPath"] for v in pod.get("volumes", []) if "hostPath" in v}
    args = c.get("args", [])
    return {
        "pod.hostPID": pod.get("hostPID", False),
        "pod.hostNetwork": pod.get("hostNetwork", False),
        "pod.hostIPC": pod.get("hostIPC", False),
        "pod.automountServiceAccountToken": pod.get("automountServiceAccountToken"),
        "pod.securityContext": pod.get("securityContext"),
        "pod.runtimeClassName": pod.get("runtimeClassName"),
        "pod.priorityClassName": pod.get("priorityClassName"),
        "pod.nodeSelector": pod.get("nodeSelector"),
        "pod.tolerations": sorted(pod.get("tolerations", []), key=repr),
        "pod.hostVolumes": host,
        "container.securityContext": c.get("securityContext"),
        "container.hostMounts": sorted(
            (m["name"], m["mountPath"], m.get("readOnly")) for m in c.get("volumeMounts", []) if m["name"] in host
        ),
        "container.resources": c.get("resources"),
        "container.readinessProbe": c.get("readinessProbe"),
        "container.livenessProbe": c.get("livenessProbe"),
        "container.env": c.get("env"),
        "container.ports": c.get("ports"),
        "args": {f: arg_value(args, f) for f in ("--source", "--listen", "--proc-root", "--sys-root", "--interval")},
    }


def drift(a_docs, b_docs):
    (a,), (b,) = daemonsets(a_docs), daemonsets(b_docs)
    va, vb = security_view(a), security_view(b)
    return [f"{k}: kustomize {va[k]!r} != chart {vb[k]!r}" for k in va if va[k] != vb[k]]


def main():
    cmd = sys.argv[1]
    if cmd == "least-privilege":
        errors = least_privilege(load(sys.argv[2]))
    elif cmd == "drift":
        errors = drift(load(sys.argv[2]), load(sys.argv[3]))
    elif cmd == "args":
        (ds,) = daemonsets(load(sys.argv[2]))
        print("\n".join(ds["spec"]["template"]["spec"]["containers"][0]["args"]))
        return 0
    elif cmd == "config":
        cms = [d for d in load(sys.argv[2]) if d["kind"] == "ConfigMap"]
        if cms:
            sys.stdout.write(cms[0]["data"]["gpulens.yaml"])
        return 0
    else:
        print(f"unknown command {cmd}", file=sys.stderr)
        return 2
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
