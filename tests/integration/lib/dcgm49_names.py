#!/usr/bin/env python3
"""Rewrites an OpenMetrics recording in dcgm-exporter's classic names into the
names and units dcgm-exporter 4.9 writes (DCGM 4.7's; the PCIe and NVLink
profiling rates under 4.10's _PER_SECOND names), as DCGM's dcgm_fields.h
(v4.6.0, 4.7) and dcgm-exporter's 4.9.0/4.10.0 release notes give them: each
classic name, its new name and the factor from the old unit to the new. The label Hostname becomes the lowercase
hostname of newer releases, and every GPU series gets an hpc_job label.

    dcgm49_names.py IN OUT
"""
import re
import sys

RENAMES = {
    "DCGM_FI_DEV_GPU_UTIL": ("DCGM_FI_DEV_GPU_UTIL_RATIO", 0.01),      # % -> 0..1
    "DCGM_FI_DEV_FB_USED": ("DCGM_FI_DEV_FB_USED_BYTES", 1048576.0),   # MiB -> bytes
    "DCGM_FI_DEV_FB_FREE": ("DCGM_FI_DEV_FB_FREE_BYTES", 1048576.0),
    "DCGM_FI_DEV_GPU_TEMP": ("DCGM_FI_DEV_GPU_TEMP_CELSIUS", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("DCGM_FI_DEV_BOARD_POWER_WATTS", 1.0),
    "DCGM_FI_DEV_SM_CLOCK": ("DCGM_FI_DEV_SM_CLOCK_HERTZ", 1e6),       # MHz -> Hz
    "DCGM_FI_DEV_XID_ERRORS": ("DCGM_FI_DEV_XID_ERROR", 1.0),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("DCGM_FI_DEV_ROW_REMAP_FAILED", 1.0),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", 1.0),
    "DCGM_FI_PROF_SM_ACTIVE": ("DCGM_FI_PROF_SM_UTIL_RATIO", 1.0),
    "DCGM_FI_PROF_SM_OCCUPANCY": ("DCGM_FI_PROF_SM_OCCUPANCY_RATIO", 1.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("DCGM_FI_PROF_TENSOR_UTIL_RATIO", 1.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("DCGM_FI_PROF_DRAM_UTIL_RATIO", 1.0),
    "DCGM_FI_PROF_PCIE_RX_BYTES": ("DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", 1.0),
    "DCGM_FI_PROF_PCIE_TX_BYTES": ("DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", 1.0),
    "DCGM_FI_PROF_NVLINK_RX_BYTES": ("DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND", 1.0),
    "DCGM_FI_PROF_NVLINK_TX_BYTES": ("DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND", 1.0),
}
SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\} (\S+)( \S+)?$")


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                out.write(f"# TYPE {RENAMES.get(name, (name,))[0]} {kind}\n")
                continue
            m = SAMPLE.match(line)
            if not m:
                out.write(line + "\n")
                continue
            name, labels, value, ts = m.group(1), m.group(2), m.group(3), m.group(4) or ""
            if name.startswith("DCGM_FI_"):
                labels = labels.replace("Hostname=", "hostname=") + ',hpc_job="42"'
            if name in RENAMES:
                name, factor = RENAMES[name]
                value = repr(float(value) * factor)
            out.write(f"{name}{{{labels}}} {value}{ts}\n")


if __name__ == "__main__":
    main()
