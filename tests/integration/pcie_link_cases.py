#!/usr/bin/env python3
"""The link states of the pcie_link_definition test, written twice: as a
promtool rule test of the alert GPUPCIeLinkDegraded (its expr and `for` taken
from `gpulens rules`) and as an OpenMetrics recording of the same series for
`gpulens diagnose --replay`; the expected verdict of each case is beside it.

    pcie_link_cases.py RULES_YML OUT_DIR MINUTES

writes OUT_DIR/link.test.yml, OUT_DIR/link-rule.yml, OUT_DIR/link.om (MINUTES
of data at 15 s) and prints the GPUs expected degraded, one per line.
"""
import sys

import yaml

# gpu: (description, series values, expected degraded once `for` has passed)
# None leaves a series out.
CASES = {
    0: ("gen below max", dict(gen=3, gen_max=4, width=16, width_max=16, util=0.9), True),
    1: ("width below max", dict(gen=4, gen_max=4, width=8, width_max=16, util=0.9), True),
    2: ("at max, busy", dict(gen=4, gen_max=4, width=16, width_max=16, util=0.9), False),
    3: ("calibrated on the degraded link, still on it", dict(gen=4, gen_max=5, gen_cal=4, width=16, width_max=16, width_cal=16, util=0.9), True),
    4: ("below calibrated", dict(gen=4, gen_max=5, gen_cal=5, width=16, width_max=16, width_cal=16, util=0.9), True),
    5: ("copies on a degraded link, GPU util low", dict(gen=3, gen_max=4, width=16, width_max=16, util=0.1, pcie=0.3), True),
    6: ("idle link down-shifted", dict(gen=1, gen_max=4, width=16, width_max=16, util=0.2, pcie=0.02), False),
    7: ("util exactly at the threshold", dict(gen=3, gen_max=4, width=16, width_max=16, util=0.5), True),
    8: ("only a calibrated width to compare with", dict(gen=4, width=8, width_cal=16, util=0.9), True),
    9: ("at its calibrated link and its max", dict(gen=5, gen_max=5, gen_cal=5, width=16, width_max=16, width_cal=16, util=0.9, pcie=0.5), False),
}

NAMES = {
    "gen": "gpu_pcie_link_generation", "gen_max": "gpu_pcie_link_generation_max",
    "gen_cal": "gpu_pcie_link_generation_calibrated", "width": "gpu_pcie_link_width",
    "width_max": "gpu_pcie_link_width_max", "width_cal": "gpu_pcie_link_width_calibrated",
    "util": "gpu_utilization_ratio",
}


def labels(gpu):
    return f'instance="n1",job="gpulens",gpu="{gpu}",gpu_uuid="GPU-{gpu}",gpu_name="H100"'


def series(gpu, case):
    for key, value in case.items():
        if key == "pcie":
            for d in ("tx", "rx"):
                yield f"gpu_pcie_{d}_bandwidth_util_ratio", value
        else:
            yield NAMES[key], value


def main():
    rules_path, out, minutes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rule = None
    for g in yaml.safe_load(open(rules_path))["groups"]:
        for r in g["rules"]:
            if r.get("alert") == "GPUPCIeLinkDegraded":
                rule = r
    assert rule, "GPUPCIeLinkDegraded not in " + rules_path
    # The alert as generated, without its annotations (promtool would compare them).
    yaml.safe_dump({"groups": [{"name": "link", "rules": [
        {"alert": "GPUPCIeLinkDegraded", "expr": rule["expr"], "for": rule["for"]}]}]},
        open(f"{out}/link-rule.yml", "w"))
    points = minutes * 4  # at 15 s
    inputs = []
    for gpu, (_, case, _) in CASES.items():
        for name, value in series(gpu, case):
            inputs.append({"series": f"{name}{{{labels(gpu)}}}", "values": f"{value}x{points}"})
    expected = [gpu for gpu, (_, _, degraded) in CASES.items() if degraded]
    # Evaluated at the last point: after `for` with a long window, before it with a short one.
    at = f"{(points - 1) * 15}s"
    for_s = int(rule["for"].rstrip("m")) * 60 if rule["for"].endswith("m") else None
    assert for_s, "expected a `for` in minutes, got " + rule["for"]
    firing = expected if (points - 1) * 15 >= for_s else []
    exp = [{"exp_labels": {"instance": "n1", "job": "gpulens", "gpu": str(g), "gpu_uuid": f"GPU-{g}",
                           "gpu_name": "H100"}} for g in firing]
    yaml.safe_dump({"rule_files": ["link-rule.yml"], "evaluation_interval": "15s", "tests": [{
        "interval": "15s", "input_series": inputs,
        "alert_rule_test": [{"eval_time": at, "alertname": "GPUPCIeLinkDegraded", "exp_alerts": exp}]}]},
        open(f"{out}/link.test.yml", "w"))
    start = 1_700_000_000
    with open(f"{out}/link.om", "w") as f:
        by_name = {}
        for gpu, (_, case, _) in CASES.items():
            for name, value in series(gpu, case):
                by_name.setdefault(name, []).append((gpu, value))
        for name, rows in by_name.items():
            f.write(f"# TYPE {name} gauge\n")
            for gpu, value in rows:
                for i in range(points):
                    f.write(f"{name}{{{labels(gpu)}}} {value} {start + i * 15}\n")
        f.write("# EOF\n")
    for g in expected:
        print(g)


if __name__ == "__main__":
    main()
