#!/usr/bin/python3
"""Strict offline validation of rendered Kubernetes manifests.

    k8s_validate.py SCHEMA_DIR < rendered.yaml

Built-in kinds are checked against the Kubernetes API types of Debian's
python3-kubernetes (generated from the Kubernetes OpenAPI spec): every field
must exist in the type (no unknown fields, as with kubectl --validate=strict),
have the right type, and required fields must be present. CRD kinds
(ServiceMonitor, PrometheusRule) are checked against the JSON schemas in
SCHEMA_DIR. Exits 1 naming the object and field path of every problem.
"""
import json
import re
import sys

import jsonschema
import kubernetes.client as k8s
import yaml

BUILTIN = {  # kind -> (apiVersion, namespaced)
    "Namespace": ("v1", False),
    "ServiceAccount": ("v1", True),
    "Service": ("v1", True),
    "ConfigMap": ("v1", True),
    "Secret": ("v1", True),
    "DaemonSet": ("apps/v1", True),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", False),
}
CRDS = {"ServiceMonitor": "servicemonitor", "PrometheusRule": "prometheusrule"}
PRIMITIVES = {"str": str, "bool": bool, "int": int, "float": (int, float), "datetime": str, "date": str}


def check(value, typ, path, errors):
    """Walks value against the python-client type name typ."""
    if typ == "object":  # IntOrString, Quantity, RawExtension: any scalar or map
        return
    if typ in PRIMITIVES:
        ok = isinstance(value, PRIMITIVES[typ]) and not (typ in ("int", "float") and isinstance(value, bool))
        if not ok:
            errors.append(f"{path}: expected {typ}, got {type(value).__name__} {value!r}")
        return
    m = re.fullmatch(r"list\[(.+)\]", typ)
    if m:
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list")
            return
        for i, item in enumerate(value):
            check(item, m.group(1), f"{path}[{i}]", errors)
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", typ)
    if m:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map")
            return
        for k, v in value.items():
            check(v, m.group(1), f"{path}.{k}", errors)
        return
    cls = getattr(k8s, typ)
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object ({typ})")
        return
    by_json = {j: a for a, j in cls.attribute_map.items()}
    for key, v in value.items():
        if key not in by_json:
            errors.append(f"{path}.{key}: unknown field in {typ}")
            continue
        check(v, cls.openapi_types[by_json[key]], f"{path}.{key}", errors)
    # The generated constructors reject a missing required field.
    try:
        cls(**{by_json[k]: v for k, v in value.items() if k in by_json})
    except ValueError as e:
        errors.append(f"{path}: {typ}: {e}")


def validate(obj, schema_dir):
    kind = obj.get("kind")
    name = f"{kind}/{obj.get('metadata', {}).get('name')}"
    errors = []
    if kind in BUILTIN:
        api_version, namespaced = BUILTIN[kind]
        if obj.get("apiVersion") != api_version:
            errors.append(f"apiVersion {obj.get('apiVersion')!r}, want {api_version!r}")
        check(obj, "V1" + kind, "", errors)
    elif kind in CRDS:
        namespaced = True
        with open(f"{schema_dir}/{CRDS[kind]}.schema.json") as f:
            schema = json.load(f)
        for e in jsonschema.Draft7Validator(schema).iter_errors(obj):
            errors.append(f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}")
    else:
        return [f"{name}: no schema for kind {kind!r}"]
    ns = obj.get("metadata", {}).get("namespace")
    if namespaced and not ns:
        errors.append("metadata.namespace: missing on a namespaced kind")
    if not namespaced and ns:
        errors.append("metadata.namespace: set on a cluster-scoped kind")
    return [f"{name}: {e}" for e in errors]


def main():
    schema_dir = sys.argv[1]
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d is not None]
    if not docs:
        print("no objects in input", file=sys.stderr)
        return 1
    errors = []
    for obj in docs:
        errors += validate(obj, schema_dir)
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{len(docs)} objects, {len(errors)} problems: " + ", ".join(d["kind"] for d in docs))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
