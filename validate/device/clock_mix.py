"""Does a GEMM run faster when memory-bound kernels sit between GEMMs? A check of the model's
mix-based clock (models/compute_model.cc: the step's kernel mix sets one clock under the power
cap, so a step with more memory-bound time runs its GEMMs at a higher clock).

Loop: one bf16 GEMM (8192^3, cuBLAS through torch.matmul) then k device-to-device copies of
1 GiB (memory-bound, far below the GEMM's power), for k = 0, 1, 2, 4, 8, each for a few seconds
so that the power controller settles. Each GEMM and each copy is timed with CUDA events; the
GEMM's median over the second half of the run is what changes if the clock follows the mix.
nvidia-smi logs clocks and power every 100 ms beside it (smi-clock-mix.csv, started by the
caller).

Usage: python3 clock_mix.py OUT.json [seconds_per_k]"""
import json
import sys
import time

import torch

DEV = torch.device("cuda:0")


def run(k, seconds, a, b, c, srcs, dsts):
    gemm_ms, copy_ms = [], []
    t_end = time.time() + seconds
    events = []
    i = 0
    while time.time() < t_end:
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.matmul(a, b, out=c)
        e1.record()
        ce = []
        for j in range(k):
            s0 = torch.cuda.Event(enable_timing=True)
            s1 = torch.cuda.Event(enable_timing=True)
            s0.record()
            dsts[(i + j) % 2].copy_(srcs[(i + j) % 2])
            s1.record()
            ce.append((s0, s1))
        events.append((e0, e1, ce))
        i += 1
        if len(events) >= 64:
            e0_, e1_, ce_ = events.pop(0)
            (ce_[-1][1] if ce_ else e1_).synchronize()
            gemm_ms.append(e0_.elapsed_time(e1_))
            copy_ms.extend(s0.elapsed_time(s1) for s0, s1 in ce_)
    torch.cuda.synchronize()
    for e0_, e1_, ce_ in events:
        gemm_ms.append(e0_.elapsed_time(e1_))
        copy_ms.extend(s0.elapsed_time(s1) for s0, s1 in ce_)
    half = gemm_ms[len(gemm_ms) // 2:]
    half.sort()
    copies = copy_ms[len(copy_ms) // 2:]
    copies.sort()
    g = half[len(half) // 2]
    cp = copies[len(copies) // 2] if copies else 0.0
    return {"k": k, "gemms": len(gemm_ms), "gemm_ms": g,
            "gemm_tflops": 2 * 8192 ** 3 / (g * 1e-3) / 1e12,
            "copy_ms": cp, "copy_TBps": (2 * 2 ** 30 / (cp * 1e-3) / 1e12) if cp else 0.0,
            "memory_share": (k * cp) / (g + k * cp) if cp else 0.0}


def main():
    out_path = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
    n = 8192
    a = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    c = torch.empty(n, n, device=DEV, dtype=torch.bfloat16)
    elems = 2 ** 30 // 2
    srcs = [torch.randn(elems, device=DEV, dtype=torch.bfloat16) for _ in range(2)]
    dsts = [torch.empty_like(s) for s in srcs]
    ref = (a.double() @ b.double())
    torch.matmul(a, b, out=c)
    err = ((c.double() - ref).norm() / ref.norm()).item()
    del ref
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
              "gemm_rel_error": err, "runs": []}
    for k in (0, 1, 2, 4, 8, 0):
        t0 = time.time()
        r = run(k, seconds, a, b, c, srcs, dsts)
        r["t_start"] = t0
        result["runs"].append(r)
        print("k %d  gemm %.3f ms (%.1f TFLOP/s)  copy %.3f ms (%.2f TB/s)  memory share %.2f" %
              (k, r["gemm_ms"], r["gemm_tflops"], r["copy_ms"], r["copy_TBps"], r["memory_share"]),
              flush=True)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
