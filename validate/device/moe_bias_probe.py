#!/usr/bin/env python3
"""What a MoE layer's expert output bias costs in Megatron-Core's eager path, on one GPU.

gpt-oss has biases on its expert linears. Megatron-Core (megatron/core/transformer/moe/
experts.py, TEGroupedMLP, since a329dd6 "Enable bias in expert mlp [gpt-oss 5/5]", 2025-09)
lets Transformer Engine's GroupedLinear add the first linear's bias inside its GEMMs but
applies the second linear's (fc2's) outside them, expert by expert, in eager PyTorch, where
the router's probability of each routed copy weights it (TEGroupedMLP._apply_bias):

    torch.cat([t + b * p for t, b, p in zip(torch.split(out, tokens_per_expert), biases,
                                            torch.split(probs, tokens_per_expert))]).to(dtype)

with `out` the grouped fc2 output [routed copies, hidden] and `probs` [routed copies, 1]. This
probe runs exactly that, forward and backward (autograd: the biases' and the probabilities'
gradients, the output's gradient split back per expert), for E local experts at gpt-oss-120b's
hidden size (2880), bf16 and (moe_router_dtype fp32) fp32 probabilities, at routed-copy counts
from a few (the host's time: one call's ops launched from Python) to a micro-batch's (4096
tokens x top-4 = 16,384 copies on a GPU of an EP-8 group, balanced), and reports per
configuration the median wall time of forward + backward with a synchronize after it, the GPU
span between two events, the kernels' own GPU time from the profiler and their count.

Usage (from validate/device, beside moe_host_probe.py, whose timing it shares):
    python3 moe_bias_probe.py OUT.json [ROUNDS=30]
"""
import json
import sys

import torch

from moe_host_probe import wall_and_span

HIDDEN = 2880  # gpt-oss-120b and gpt-oss-20b


def apply_bias(out, biases, tokens_per_expert, probs):
    """Megatron-Core's TEGroupedMLP._apply_bias (the eager, host-metadata path)."""
    shape = out.shape
    return (
        torch.cat([t + b * p for t, b, p in zip(torch.split(out.view(-1, shape[-1]),
                                                            tokens_per_expert),
                                               biases,
                                               torch.split(probs, tokens_per_expert))])
        .view(shape)
        .to(out.dtype)
    )


def setup(experts, copies, probs_dtype):
    dev = "cuda"
    out = torch.randn(copies, HIDDEN, device=dev, dtype=torch.bfloat16, requires_grad=True)
    probs = torch.rand(copies, 1, device=dev, dtype=probs_dtype, requires_grad=True)
    biases = [torch.nn.Parameter(torch.randn(HIDDEN, device=dev, dtype=torch.bfloat16) * 0.02)
              for _ in range(experts)]
    split = [copies // experts] * experts
    split[-1] += copies - sum(split)
    grad = torch.randn(copies, HIDDEN, device=dev, dtype=torch.bfloat16)
    return out, probs, biases, split, grad


def once(out, probs, biases, split, grad):
    y = apply_bias(out, biases, split, probs)
    y.backward(grad)


def measure(experts, copies, probs_dtype, rounds):
    args = setup(experts, copies, probs_dtype)
    wall, span = wall_and_span(lambda: once(*args), rounds, warmup=5)
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(5):
            once(*args)
        torch.cuda.synchronize()
    events = [e for e in p.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    kt = sum(getattr(e, "self_device_time_total", 0) or e.self_cuda_time_total for e in events)
    kernels = sum(e.count for e in events)
    top = sorted(((getattr(e, "self_device_time_total", 0) or e.self_cuda_time_total, e.count,
                   e.key[:100]) for e in events), reverse=True)[:8]
    return {"experts": experts, "copies": copies, "hidden": HIDDEN,
            "probs_dtype": str(probs_dtype).replace("torch.", ""),
            "wall_s": wall, "gpu_span_s": span,
            "kernel_time_s": kt / 1e6 / 5, "kernels": kernels / 5,
            "top_kernels": [{"us": t / 5, "calls": c / 5, "kernel": k} for t, c, k in top]}


def main():
    out_path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    torch.manual_seed(0)
    rows = []
    for probs_dtype in (torch.bfloat16, torch.float32):
        for experts in (4, 16, 32):
            for copies in (64 * experts, 16384, 32768):
                r = measure(experts, copies, probs_dtype, rounds)
                rows.append(r)
                print(json.dumps({k: v for k, v in r.items() if k != "top_kernels"}), flush=True)
    info = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}
    with open(out_path, "w") as f:
        json.dump({"info": info, "rows": rows}, f, indent=1)
    print(f"{'probs':9s} {'E':>3s} {'copies':>7s} {'wall ms':>8s} {'span ms':>8s} "
          f"{'kern ms':>8s} {'kernels':>7s}")
    for r in rows:
        print(f"{r['probs_dtype']:9s} {r['experts']:3d} {r['copies']:7d} {r['wall_s']*1e3:8.3f} "
              f"{r['gpu_span_s']*1e3:8.3f} {r['kernel_time_s']*1e3:8.3f} {r['kernels']:7.0f}")


if __name__ == "__main__":
    main()
