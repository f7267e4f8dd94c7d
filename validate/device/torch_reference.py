"""PyTorch reference numbers on the same GPU as clustersim-probe, for validate/NOTES.md:
a plain bf16 torch.matmul loop on random data (the "what cuBLAS reaches there" of issue 5) and
scaled_dot_product_attention forward and backward, causal and full, bf16, batch 1, 16 heads,
head dim 128, over the probe's sequence lengths. Times are CUDA-event medians after warm-up.
Usage: python3 torch_reference.py OUT.json [seq,...] [seconds_per_case] [MxNxK,...] [HxD,...]
[BACKEND] [DROPOUT]
(the matmul shapes default to 4096^3 and 8192^3; HxD: attention heads x head dim, default 16x128,
or BxHxD with a batch of B sequences;
an empty MxNxK list skips the matmuls; BACKEND: flash | cudnn | efficient forces SDPA's backend,
e.g. flash = PyTorch's FlashAttention-2 kernels; default: the one SDPA picks; DROPOUT: the
attention probabilities' dropout, e.g. 0.1, each case timed without and with it, default none)"""
import contextlib
import json
import sys
import time

import torch
import torch.nn.functional as F


def bench(fn, seconds, min_reps=3):
    fn()
    torch.cuda.synchronize()
    times = []
    start_wall = time.time()
    while len(times) < min_reps or time.time() - start_wall < seconds:
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    times.sort()
    return times[len(times) // 2], len(times)


def bench_graph(fn, seconds, inner, min_reps=3):
    """Median seconds of one fn() call: `inner` calls captured in one CUDA graph (warmed up on a
    side stream first: cuBLAS handles, workspaces), its replays timed by bench. From Python a
    small kernel's launch (~20 us) would otherwise pace the loop."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(inner):
            fn()
    t, _ = bench(graph.replay, seconds, min_reps)
    return t / inner


def parse_dims(text, forms):
    """Comma-separated lists of positive integers joined by x (empty entries skipped), each in
    one of `forms` ("MxNxK", "HxD", ...: as many numbers as the form has letters); a malformed
    list exits with what was expected."""
    out = []
    for t in filter(None, text.split(",")):
        try:
            v = tuple(int(x) for x in t.split("x"))
        except ValueError:
            v = ()
        if len(v) not in [len(f.split("x")) for f in forms] or min(v) <= 0:
            raise SystemExit("expected %s with positive integers, got %r" % (" or ".join(forms), t))
        out.append(v)
    return out


def main():
    out_path = sys.argv[1]
    seqs = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else
                             "4096,8192,16384,32768,65536,131072").split(",")]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
    dev = torch.device("cuda:0")
    result = {"torch": torch.__version__, "cuda": torch.version.cuda,
              "device": torch.cuda.get_device_name(0), "matmul": [], "sdpa": []}
    shapes = parse_dims(sys.argv[4] if len(sys.argv) > 4 else "4096x4096x4096,8192x8192x8192",
                        ["MxNxK"])
    # HxD (batch 1) or BxHxD: batch x heads x head dim.
    head_shapes = [(1,) * (3 - len(v)) + v for v in
                   parse_dims(sys.argv[5] if len(sys.argv) > 5 else "16x128", ["HxD", "BxHxD"])]
    for m, n, kk in shapes:
        a = torch.randn(m, kk, dtype=torch.bfloat16, device=dev)
        b = torch.randn(kk, n, dtype=torch.bfloat16, device=dev)
        # 20 products per timed call so launch gaps vanish, as the probe's batches do.
        def loop():
            for _ in range(20):
                torch.matmul(a, b)
        t, reps = bench(loop, 2.0)
        result["matmul"].append({"m": m, "n": n, "k": kk, "dtype": "bf16",
                                 "tflops": 2.0 * m * n * kk * 20 / t / 1e12, "reps": reps})
        print("matmul", m, n, kk, result["matmul"][-1]["tflops"], flush=True)
    backend = sys.argv[6] if len(sys.argv) > 6 else ""
    result["sdpa_backend"] = backend or "default"
    if backend:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        chosen = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                  "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]
        forced = lambda: sdpa_kernel([chosen])
    else:
        forced = contextlib.nullcontext
    dropout = 0.0
    if len(sys.argv) > 7:
        try:
            dropout = float(sys.argv[7])
        except ValueError:
            sys.exit(f"DROPOUT: a probability in [0, 1), not {sys.argv[7]!r}")
        if not 0 <= dropout < 1:
            sys.exit(f"DROPOUT: a probability in [0, 1), not {dropout}")
    dropouts = [0.0] + ([dropout] if dropout > 0 else [])
    with forced():
        for p in dropouts:
            sdpa_cases(result, head_shapes, seqs, seconds, dev, p)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=2)


def sdpa_cases(result, head_shapes, seqs, seconds, dev, dropout=0.0):
    for batch, heads, dim in head_shapes:
        for s in seqs:
            q, k, v = (torch.randn(batch, heads, s, dim, dtype=torch.bfloat16, device=dev)
                       for _ in range(3))
            for causal in (True, False):
                flops = 4.0 * batch * heads * s * s * dim / (2 if causal else 1)
                t, reps = bench(lambda: F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal, dropout_p=dropout), seconds)
                result["sdpa"].append({"seq_len": s, "batch": batch, "heads": heads,
                                       "head_dim": dim, "causal": causal, "dropout": dropout,
                                       "direction": "forward",
                                       "time_ms": t * 1e3, "tflops": flops / t / 1e12,
                                       "reps": reps})
                print("sdpa fwd", batch, heads, dim, s, causal, dropout,
                      result["sdpa"][-1]["tflops"], flush=True)
                qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
                grad = torch.randn_like(q)

                def fwd_bwd():
                    o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal,
                                                       dropout_p=dropout)
                    o.backward(grad)
                tb, reps = bench(fwd_bwd, seconds)
                bwd = max(tb - t, 1e-9)
                # Backward: 2.5x the forward FLOPs (FlashAttention-2 paper's convention).
                result["sdpa"].append({"seq_len": s, "batch": batch, "heads": heads,
                                       "head_dim": dim, "causal": causal, "dropout": dropout,
                                       "direction": "backward",
                                       "time_ms": bwd * 1e3, "tflops": 2.5 * flops / bwd / 1e12,
                                       "reps": reps})
                print("sdpa bwd", batch, heads, dim, s, causal, dropout,
                      result["sdpa"][-1]["tflops"], flush=True)
                del qg, kg, vg, grad
            del q, k, v
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
