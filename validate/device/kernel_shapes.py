"""GEMM rates over the shapes transformer layers run (m tokens x n outputs x k inputs) and the
bandwidth of the memory-bound kernels around them, on one GPU through PyTorch: the ground of
the step model's GEMM-by-shape and memory-bound terms (models/compute_model.h).
Usage: python3 kernel_shapes.py OUT.json [--graphs] [--gemm-only] [--fp8] [--shapes MxNxK,...]
GEMM: bf16 torch.matmul, A [m x k] row-major times B [k x n], 10 products per timed call
(with --graphs captured in a CUDA graph and replayed), median of CUDA-event timings over
>= 0.15 s. --fp8: the same shapes as torch._scaled_mm with per-tensor scales (e4m3 operands,
A row-major, B column-major as Hopper's FP8 tensor cores take them, bf16 out), each timed with
fp32 accumulation promoted as cuBLAS does by default ("s": Transformer Engine's data- and
weight-gradient GEMMs) and with fast accumulation ("s_fast_accum": its forward GEMMs); the
ground of compute_model.h's fp8_gemm_ratio and of the tile's fixed time at the fp8 peak over
shapes (call 8 measured two). --shapes: these GEMMs instead of the 147 (m x n x k each; GEMMs
only). Memory-bound: bytes read + written per second."""
import json
import sys

import torch
import torch.nn.functional as F

import torch_reference  # the same folder: its CUDA-event median timer


GRAPHS = "--graphs" in sys.argv  # time GEMMs as CUDA-graph replays (no host launch pacing)
FP8 = "--fp8" in sys.argv  # per-tensor-scaled e4m3 GEMMs (torch._scaled_mm) instead of bf16


def parse_shapes(argv):
    """--shapes MxNxK,...: these GEMMs only (a training layout's own shapes); None without it."""
    if "--shapes" not in argv:
        return None
    i = argv.index("--shapes") + 1
    try:
        shapes = [tuple(int(v) for v in s.split("x")) for s in argv[i].split(",")]
    except (IndexError, ValueError):
        shapes = []
    if not shapes or any(len(s) != 3 or min(s) <= 0 for s in shapes):
        raise SystemExit("--shapes: expected MxNxK,... with positive integers, got %r"
                         % (argv[i] if i < len(argv) else ""))
    return shapes


SHAPES = parse_shapes(sys.argv)


def bench(fn, seconds=0.15, inner=10, min_reps=3, graph=False):
    """Median seconds of one fn() call: torch_reference.bench over `inner` back-to-back calls,
    captured in a CUDA graph when `graph` (from Python a small GEMM's launch, ~20 us, paces an
    uncaptured loop: call 9's GEMMs under ~25 us were host-bound)."""
    if graph:
        return torch_reference.bench_graph(fn, seconds, inner, min_reps)

    def loop():
        for _ in range(inner):
            fn()
    t, _ = torch_reference.bench(loop, seconds, min_reps)
    return t / inner


def fp8_row(m, n, k, dev):
    """One shape as per-tensor-scaled e4m3 GEMMs: with cuBLAS's default accumulation and with
    fast accumulation."""
    a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major [k x n]
    scale_a = torch.tensor(1.0, device=dev)
    scale_b = torch.tensor(1.0 / k, device=dev)
    row = {"m": m, "n": n, "k": k}
    for key, fast in (("s", False), ("s_fast_accum", True)):
        t = bench(lambda: torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16,
                                           use_fast_accum=fast), graph=GRAPHS)
        row[key] = t
        row["tflops" if key == "s" else "tflops_fast_accum"] = 2 * m * n * k / t / 1e12
    del a, b
    return row


def main():
    dev = torch.device("cuda:0")
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
           "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
           "gemm": [], "memory_bound": []}
    dims = [768, 1024, 2048, 3072, 4096, 8192, 16384]
    shapes = SHAPES or [(m, n, k) for m in [2048, 8192, 32768] for n in dims for k in dims]
    for m, n, k in shapes:
        if FP8:
            out["gemm"].append(fp8_row(m, n, k, dev))
        else:
            a = torch.randn(m, k, dtype=torch.bfloat16, device=dev)
            b = torch.randn(k, n, dtype=torch.bfloat16, device=dev)
            c = torch.empty(m, n, dtype=torch.bfloat16, device=dev)
            t = bench(lambda: torch.matmul(a, b, out=c), graph=GRAPHS)
            out["gemm"].append({"m": m, "n": n, "k": k, "s": t,
                                "tflops": 2 * m * n * k / t / 1e12})
            del a, b, c
        if len(out["gemm"]) % 49 == 0:  # after each m of the 7 x 7 grid: a timeout keeps them
            with open(sys.argv[1], "w") as f:
                json.dump(out, f, indent=1)
    if "--gemm-only" in sys.argv or FP8 or SHAPES:
        out["graphs"] = GRAPHS
        out["precision"] = "fp8_e4m3_tensorwise" if FP8 else "bf16"
        with open(sys.argv[1], "w") as f:
            json.dump(out, f, indent=1)
        print("done", len(out["gemm"]), "gemm shapes")
        return
    # Memory-bound kernels at 16M-256M elements.
    for elems in [1 << 24, 1 << 26, 1 << 28]:
        x = torch.randn(elems, dtype=torch.bfloat16, device=dev)
        y = torch.randn(elems, dtype=torch.bfloat16, device=dev)
        w = torch.ones(4096, dtype=torch.bfloat16, device=dev)
        cases = {
            "add_bf16": (lambda: x + y, 6 * elems),
            "silu_mul_bf16": (lambda: F.silu(x) * y, 6 * elems),  # eager: two kernels
            "copy_bf16": (lambda: x.clone(), 4 * elems),
            "rms_norm_bf16_h4096": (lambda: F.rms_norm(x.view(-1, 4096), (4096,), w), 4 * elems),
            "to_fp32": (lambda: x.float(), 6 * elems),
        }
        for name, (fn, nbytes) in cases.items():
            t = bench(fn, inner=5)
            out["memory_bound"].append({"kernel": name, "elements": elems, "s": t,
                                        "bytes": nbytes, "GBps": nbytes / t / 1e9})
        del x, y
    # Cross-entropy over a 32000 vocabulary, bf16 logits as autocast leaves them.
    for tokens in [8192, 32768]:
        logits = torch.randn(tokens, 32000, dtype=torch.bfloat16, device=dev, requires_grad=True)
        tgt = torch.randint(0, 32000, (tokens,), device=dev)
        def ce():
            loss = F.cross_entropy(logits.float(), tgt)
            loss.backward()
        t = bench(ce, inner=2)
        out["memory_bound"].append({"kernel": "cross_entropy_fwd_bwd_v32000", "elements":
                                    tokens * 32000, "s": t})
    # Launch overhead: an empty-ish kernel back to back.
    z = torch.zeros(1, device=dev)
    out["tiny_kernel_s"] = bench(lambda: z.add_(1), inner=200)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)
    print("done", len(out["gemm"]), "gemm shapes")


if __name__ == "__main__":
    main()
