"""Flash attention's forward and backward timed two ways on one GPU: a short median of single
calls (torch_reference.bench, 2 s; what ring_attention_probe.py and the attention sweeps do)
and a sustained loop (8 s of back-to-back calls, synchronised every 4), with nvidia-smi sampled
beside it, to see what the power cap leaves of each once it has settled. SDPA's FlashAttention-2
backend and its cuDNN backend, causal, one sequence of L tokens, 32 heads of 128, bf16.

Usage: python3 attention_steady.py OUT.json [L]"""
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from torch_reference import bench

DEV = torch.device("cuda:0")


def sustained(fn, seconds=8.0):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0, n = time.time(), 0
    s.record()
    while time.time() - t0 < seconds:
        fn()
        n += 1
        if n % 4 == 0:
            torch.cuda.synchronize()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) * 1e-3 / n, n


def main():
    path = sys.argv[1]
    L = int(sys.argv[2]) if len(sys.argv) > 2 else 32768
    pairs = L * L / 2 * 32 * 128
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "tokens": L,
           "cases": []}
    for name, backend in (("flash2", SDPBackend.FLASH_ATTENTION),
                          ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        q = torch.randn(1, 32, L, 128, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn_like(q, requires_grad=True)
        v = torch.randn_like(q, requires_grad=True)
        with sdpa_kernel(backend):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            g = torch.randn_like(o)
            fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
            bwd = lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True)  # noqa: E731
            for phase, fn, flops in (("forward", fwd, 4 * pairs), ("backward", bwd, 10 * pairs)):
                time.sleep(2)
                short = bench(fn, 2.0)[0]
                time.sleep(2)
                t0 = time.strftime("%H:%M:%S")
                long_s, n = sustained(fn)
                row = {"kernel": name, "phase": phase, "start": t0, "short_s": short,
                       "sustained_s": long_s, "calls": n,
                       "short_tflops": flops / short / 1e12,
                       "sustained_tflops": flops / long_s / 1e12}
                res["cases"].append(row)
                print(f"{t0} {name} {phase}: short {short * 1e3:.2f} ms "
                      f"({row['short_tflops']:.0f} TFLOP/s), sustained {long_s * 1e3:.2f} ms "
                      f"({row['sustained_tflops']:.0f}) over {n} calls", flush=True)
        del q, k, v, o, g
        torch.cuda.empty_cache()
    with open(path, "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
