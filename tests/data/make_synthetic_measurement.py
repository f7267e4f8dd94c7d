#!/usr/bin/env python3
"""Writes tests/data/synthetic-h200-2gpu.json: a measurement file (clustersim.measurements/1)
with known parameters, for the calibrate / check / verify tests while no real file is needed.

Collective times follow NCCL's shape: the minimum over three protocol lines
(LL, LL128, Simple: latency + size x busbw factor / busbw) with 2 % multiplicative noise
(fixed seed). The parameters below are the ground truth the fits must recover; they are
made up, in the range of a 2 x H200 NVLink node with NVLS off, and prove nothing about
real hardware.
Run: python3 tests/data/make_synthetic_measurement.py > tests/data/synthetic-h200-2gpu.json
     python3 tests/data/make_synthetic_measurement.py 8 > tests/data/synthetic-h200-8gpu.json
The 8-GPU file stands in for the one-node 8 x H200 file that issue 7 will measure, so that the
pipeline (calibrate on 2 GPUs, check the transfer to 8, calibrate on 8) is exercised in CI: its
lines have 8-rank latencies (ring steps over 7 peers) and the 2-GPU busbw, made up likewise.
"""
import json
import random
import sys

random.seed(42)
RANKS = int(sys.argv[1]) if len(sys.argv) > 1 else 2
OPS = {  # op: [(latency_us, busbw_GBps) per protocol line]
    "all_reduce": [(9.0, 30.0), (14.0, 120.0), (30.0, 360.0)],
    "all_gather": [(8.0, 25.0), (12.0, 110.0), (25.0, 330.0)],
    "reduce_scatter": [(8.5, 25.0), (13.0, 105.0), (26.0, 320.0)],
}
if RANKS == 8:
    OPS = {
        "all_reduce": [(16.0, 30.0), (24.0, 120.0), (45.0, 360.0)],
        "all_gather": [(12.0, 25.0), (18.0, 110.0), (34.0, 330.0)],
        "reduce_scatter": [(12.5, 25.0), (19.0, 105.0), (35.0, 320.0)],
    }
# busbw / algbw (nccl-tests): all_reduce 2(n-1)/n, the others (n-1)/n.
BUSBW = {"all_reduce": 2.0 * (RANKS - 1) / RANKS, "all_gather": (RANKS - 1.0) / RANKS,
         "reduce_scatter": (RANKS - 1.0) / RANKS}


def row(op, size):
    t = min(lat * 1e-6 + size * BUSBW[op] / (bw * 1e9) for lat, bw in OPS[op])
    t *= 1 + random.gauss(0, 0.02)
    algbw = size / t / 1e9
    timing = {"time_us": t * 1e6, "algbw_GBps": algbw, "busbw_GBps": algbw * BUSBW[op], "wrong": 0}
    return {"op": op, "ranks": RANKS, "size_bytes": size, "count": size // 4, "type": "float",
            "redop": "sum" if op != "all_gather" else "none", "root": -1,
            "out_of_place": timing, "in_place": dict(timing)}


def gpu(rank):
    return {
        "rank": rank, "host": "synthetic-node", "cuda_index": rank, "name": "NVIDIA H200",
        "uuid": "GPU-synthetic-%d" % rank, "catalog_id": "h200-sxm",
        "pci": {"bus_id": "00000000:%02X:00.0" % (0x18 + rank), "vendor_id": "0x10de",
                "device_id": "0x2335", "subsystem_vendor_id": "0x10de",
                "subsystem_device_id": "0x18be", "nvml_pci_device_id": "0x233510de"},
        "compute_capability": "9.0", "sm_count": 132, "memory_bytes": 143771 * 1024 * 1024,
        "max_sm_clock_MHz": 1980, "max_memory_clock_MHz": 3201,
        "pcie_idle": {"gen_current": 1, "gen_max": 5, "width_current": 16, "width_max": 16},
        "pcie_under_load": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16},
        "nvlink_links": 18, "nvlink_active": 18,
        "ecc": {"supported": True, "enabled": True, "pending_enabled": True,
                "volatile_corrected": 0, "volatile_uncorrected": 0,
                "aggregate_corrected": 0, "aggregate_uncorrected": 0},
        "row_remap": {"supported": True, "corrected_rows": 0, "uncorrected_rows": 0,
                      "pending": False, "failure": False},
        "virtualization": "pass_through", "mig_mode": "disabled",
        "throttle_reasons_during_burn": ["sw_power_cap"], "throttle_mask_during_burn": "0x4",
        "sm_clock_during_burn_MHz": 1755, "max_power_during_burn_W": 699.0,
        "max_temperature_during_burn_C": 61, "notes": []}


sizes = [1 << e for e in range(3, 34)]  # 8 B .. 8 GiB
collectives = [row(op, s) for op in OPS for s in sizes]
gemm = []
for rank in range(RANKS):
    # Short runs (0.2 s, before the power cap settles: models::kPowerCapSettledRunS) at the full
    # clock's rates of ml-engineering's MAMF finder, then a 30 s burn at the cap.
    for m, rate in ((2048, 560.0), (4096, 730.0), (8192, 780.0)):
        gemm.append({"rank": rank, "precision": "bf16", "m": m, "n": m, "k": m, "sustained": False,
                     "seconds": 0.2, "iterations": 100, "tflops": rate * (1 + random.gauss(0, 0.01)),
                     "tflops_min": rate * 0.98})
    gemm.append({"rank": rank, "precision": "bf16", "m": 8192, "n": 8192, "k": 8192, "sustained": True,
                 "seconds": 30.0, "iterations": 20000, "tflops": 660.0 - 5 * rank, "tflops_min": 640.0})
bandwidth = []
for rank in range(RANKS):
    bandwidth += [{"rank": rank, "kind": "hbm_copy", "peer": -1, "bytes": 1 << 32, "GBps": 4300.0 - 10 * rank},
                  {"rank": rank, "kind": "h2d", "peer": -1, "bytes": 1 << 30, "GBps": 53.5},
                  {"rank": rank, "kind": "d2h", "peer": -1, "bytes": 1 << 30, "GBps": 54.0},
                  {"rank": rank, "kind": "p2p", "peer": rank ^ 1, "bytes": 1 << 30, "GBps": 381.0}]
doc = {
    "schema": "clustersim.measurements/1", "complete": True, "tool": "synthetic",
    "tool_version": "tests/data/make_synthetic_measurement.py",
    "run": {"command_line": ["make_synthetic_measurement.py"], "environment": {"NCCL_NVLS_ENABLE": "0"},
            "mode": "single-process", "world_size": RANKS, "processes": 1, "backend": "synthetic",
            "options": {}, "started_utc": "2026-01-01T00:00:00Z", "finished_utc": "2026-01-01T00:10:00Z",
            "wall_time_s": 600.0},
    "hosts": [{"hostname": "synthetic-node", "kernel": "6.8.0", "cpu_model": "synthetic", "cpus": 32,
               "hypervisor": False, "ranks": list(range(RANKS))}],
    "versions": {"driver": "570.00", "cuda_driver": 12080, "cuda_runtime": 12080, "nccl": "2.26.2",
                 "nccl_library": "libnccl.so.2", "cublas": "12.8"},
    "gpus": [gpu(r) for r in range(RANKS)],
    "collectives": collectives, "gemm": gemm, "bandwidth": bandwidth, "attention": [],
    "transports": [{"rank": r, "peer": (r + 1) % RANKS, "transport": "P2P", "detail": "P2P/CUMEM/read",
                    "channels": 24} for r in range(RANKS)],
    "sections_done": ["identity", "collectives", "bandwidth", "gemm"], "errors": []}
print(json.dumps(doc, indent=2))
