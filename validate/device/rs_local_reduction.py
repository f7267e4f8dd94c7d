"""The local reduction that ends a copy-engine reduce-scatter, timed on one GPU, to check the
rate models/layer_model.cc charges for it (the fused elementwise rate, 0.73 of the HBM).

A TP reduce-scatter moved by copy engines (PyTorch's async TP, _fused_matmul_reduce_scatter_impl;
Transformer Engine's ring-exchange split_overlap_rs_p2p) cannot add while it moves: each rank
receives the tp partial outputs of its rows and sums them on the compute stream. PyTorch does it
with torch.sum over the stacked partials [tp, M / tp, N]; TE with its reduce_bf16 kernel (the
same bytes). Bytes: read tp x (M / tp) x N, write (M / tp) x N, 16-bit.

Also times a device-to-device copy of the same size (the copy ceiling) for the ratio.

Usage: python3 rs_local_reduction.py OUT.json [seconds_per_case]"""
import json
import sys

import torch

from torch_reference import bench

DEV = torch.device("cuda:0")

# (name, tokens M, hidden N, tp): the corpus layouts that reduce-scatter by copy engine.
CASES = [
    ("torchtitan-70b-asynctp", 16 * 8192, 8192, 8),   # local batch 16 x 8192 tokens, TP 8
    ("mbridge-405b-fp8", 8192, 16384, 8),             # one 8K sequence, h 16384, TP 8
    ("mbridge-70b-fp8", 8192, 8192, 4),                # one 8K sequence, h 8192, TP 4
    ("gb-405b-tp4", 8192, 16384, 4),                  # one 8K sequence, h 16384, TP 4
    ("small-tp2", 4096, 4096, 2),
]


def case(name, m, n, tp, seconds):
    rows = m // tp
    parts = [torch.randn(tp, rows, n, device=DEV, dtype=torch.bfloat16) for _ in range(3)]
    out = torch.empty(rows, n, device=DEV, dtype=torch.bfloat16)
    turn = [0]

    def reduce():  # rotate over three inputs so that L2 does not hold the operands
        p = parts[turn[0] % 3]
        turn[0] += 1
        torch.sum(p, dim=0, out=out)

    ref = parts[0].double().sum(0)
    torch.sum(parts[0], dim=0, out=out)
    err = ((out.double() - ref).norm() / ref.norm()).item()
    t, reps = bench(reduce, seconds)
    nbytes = (tp + 1) * rows * n * 2
    src = torch.randn(tp * rows * n // 2, device=DEV, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    tc, _ = bench(lambda: dst.copy_(src), seconds)
    copy_bytes = 2 * src.numel() * 2
    return {"name": name, "tokens": m, "hidden": n, "tp": tp, "rel_error": err,
            "reduce_ms": t * 1e3, "reduce_reps": reps, "bytes": nbytes,
            "reduce_TBps": nbytes / t / 1e12, "copy_TBps": copy_bytes / tc / 1e12}


def main():
    out_path = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    result = {"torch": torch.__version__, "cuda": torch.version.cuda,
              "device": torch.cuda.get_device_name(0), "cases": []}
    for c in CASES:
        r = case(*c, seconds)
        result["cases"].append(r)
        print("%-24s tp %d  %8.3f ms  %5.2f TB/s reduce  %5.2f TB/s copy  err %.1e" %
              (r["name"], r["tp"], r["reduce_ms"], r["reduce_TBps"], r["copy_TBps"],
               r["rel_error"]), flush=True)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
