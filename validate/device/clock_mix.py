"""Does a GEMM run faster when memory-bound kernels sit between GEMMs? A check of the model's
mix-based clock (models/compute_model.cc: the step's kernel mix sets one clock under the power
cap, so a step with more memory-bound time runs its GEMMs at a higher clock).

Loop: one bf16 GEMM (8192^3, cuBLAS through torch.matmul) then k device-to-device copies of
1 GiB (memory-bound, far below the GEMM's power), for k = 0, 1, 2, 4, 8, each for a few seconds
so that the power controller settles. Each GEMM and each copy is timed with CUDA events; the
GEMM's median over the second half of the run is what changes if the clock follows the mix.
nvidia-smi logs clocks and power every 100 ms beside it (smi-clock-mix.csv, started by the
caller).

Then the same with other kernels between the GEMMs (a transposing copy, an up-cast, GELU, an idle
sleep), each repeated to take about the GEMM's time.

Usage: python3 clock_mix.py OUT.json [seconds_per_k] [--fillers-only]"""
import json
import sys
import time

import torch

DEV = torch.device("cuda:0")


def run(k, seconds, a, b, c, srcs, dsts, filler=None):
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
            if filler is None:
                dsts[(i + j) % 2].copy_(srcs[(i + j) % 2])
            else:
                filler(i + j)
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
    for k in (0, 1, 2, 4, 8, 0) if "--fillers-only" not in sys.argv else (0,):
        t0 = time.time()
        r = run(k, seconds, a, b, c, srcs, dsts)
        r["t_start"] = t0
        result["runs"].append(r)
        print("k %d  gemm %.3f ms (%.1f TFLOP/s)  copy %.3f ms (%.2f TB/s)  memory share %.2f" %
              (k, r["gemm_ms"], r["gemm_tflops"], r["copy_ms"], r["copy_TBps"], r["memory_share"]),
              flush=True)
    # Other memory-bound kernels between the GEMMs, each repeated to take about as long as the
    # GEMM (half the time): does a kernel that moves fewer bytes per second draw less power?
    m2 = [s.view(2 ** 14, -1) for s in srcs]               # 16384 x 32768 bf16 (1 GiB)
    half_elems = elems // 2
    ups = [torch.empty(half_elems, device=DEV, dtype=torch.float32) for _ in range(2)]
    fillers = {
        "copy": None,
        "transpose": lambda i: dsts[i % 2].view(32768, -1).copy_(m2[i % 2].t()),
        "cast_up": lambda i: ups[i % 2].copy_(srcs[i % 2][:half_elems]),
        "gelu": lambda i: torch.nn.functional.gelu(srcs[i % 2]),
        "sleep": lambda i: torch.cuda._sleep(1_000_000),
    }
    for name, fn in fillers.items():
        # the filler's own duration, then as many as fill about the GEMM's time
        if fn is None:
            one = lambda: dsts[0].copy_(srcs[0])
        else:
            one = lambda fn=fn: fn(0)
        for _ in range(3):
            one()
        torch.cuda.synchronize()
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            one()
        e1.record()
        e1.synchronize()
        t_one = e0.elapsed_time(e1) / 10
        k = max(1, round(1.6 / t_one))
        t0 = time.time()
        r = run(k, seconds, a, b, c, srcs, dsts, fn)
        r["filler"] = name
        r["filler_ms"] = t_one
        r["t_start"] = t0
        result["runs"].append(r)
        print("%-9s k %d  gemm %.3f ms (%.1f TFLOP/s)  filler %.3f ms  memory share %.2f" %
              (name, k, r["gemm_ms"], r["gemm_tflops"], r["copy_ms"], r["memory_share"]),
              flush=True)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
