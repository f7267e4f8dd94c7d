"""One context-parallel rank's attention work as PyTorch's ring attention does it (torch's
context_parallel, the load-balanced causal sharding, TorchTitan's Table 2 runs of December 2024),
timed on one GPU, to check the model's ring attention (models/layer_model.cc: cp chunks of the
local queries against the local keys) against the causal attention of the same local tokens.

A rank holds L local tokens in two chunks of L / 2 (chunk r and chunk 2 cp - 1 - r of the
sequence). Forward, for each of the cp ring steps one FlashAttention-2 call
(aten::_scaled_dot_product_flash_attention, [batch, heads, tokens, head_dim], 16-bit):
  step 0:   the local queries against the local keys, causal (L x L / 2 query-key pairs);
  step i>0: either all local queries against the first half of the received keys, or the
            second half of the queries against all received keys (L x L / 2 pairs, no mask);
then the block's output merged into the running one in fp32 by its log-sum-exp
(out = out e^(lse - lse') + o e^(lse_b - lse'), lse' = logaddexp(lse, lse_b)), and the keys and
values concatenated for the next rotation (torch.cat of both, a copy). Backward, per step the
flash backward against the merged output and log-sum-exp, its gradients added into fp32
accumulators for the queries, keys and values. The rotations themselves (NCCL) are not run:
one GPU. K and V have the query heads (TorchTitan's Llama repeats the KV heads before SDPA).

Prints and writes, per cp, the forward and backward medians (CUDA events) and their ratio to
the cp = 1 causal call of the same L (plain SDPA, no merges): the model charges cp x that.

Usage: python3 ring_attention_probe.py OUT.json [L] [cps] [seconds]"""
import json
import sys

import torch

from torch_reference import bench

DEV = torch.device("cuda:0")
HEADS, HEAD_DIM = 32, 128   # Llama 3 8B's 32 query heads of 128 (KV repeated to 32)


def flash(q, k, v, causal):
    r = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal)
    return r[0], r[1], r


def flash_backward(grad, q, k, v, out, lse, r, causal):
    return torch.ops.aten._scaled_dot_product_flash_attention_backward(
        grad, q, k, v, out, lse, r[2], r[3], r[4], r[5], 0.0, causal, r[6], r[7])


def blocks(L, cp, rank):
    """(query slice, key slice, causal) of each ring step for `rank`."""
    half = L // 2
    out = [(slice(0, L), slice(0, L), True)]
    for i in range(1, cp):
        if i <= rank:
            out.append((slice(0, L), slice(0, half), False))
        else:
            out.append((slice(half, L), slice(0, L), False))
    return out


def ring_case(L, cp, rank, seconds):
    dt = torch.bfloat16
    q = torch.randn(1, HEADS, L, HEAD_DIM, device=DEV, dtype=dt)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    steps = blocks(L, cp, rank)

    def forward():
        out = torch.zeros(1, HEADS, L, HEAD_DIM, device=DEV, dtype=torch.float32)
        lse = torch.full((1, HEADS, L), float("-inf"), device=DEV, dtype=torch.float32)
        saved = []
        for qs, ks, causal in steps:
            if cp > 1:
                torch.cat([k.flatten(), v.flatten()])  # the next rotation's buffer
            o, l, r = flash(q[:, :, qs], k[:, :, ks], v[:, :, ks], causal)
            saved.append(r)
            new = torch.logaddexp(lse[:, :, qs], l)
            out[:, :, qs] = (out[:, :, qs] * torch.exp(lse[:, :, qs] - new).unsqueeze(-1) +
                             o.float() * torch.exp(l - new).unsqueeze(-1))
            lse[:, :, qs] = new
        return out.to(dt), lse, saved

    out, lse, saved = forward()
    grad = torch.randn_like(out)

    def backward():
        dq = torch.zeros(q.shape, device=DEV, dtype=torch.float32)
        dk = torch.zeros_like(dq)
        dv = torch.zeros_like(dq)
        for (qs, ks, causal), r in zip(steps, saved):
            gq, gk, gv = flash_backward(grad[:, :, qs], q[:, :, qs], k[:, :, ks], v[:, :, ks],
                                        out[:, :, qs], lse[:, :, qs].contiguous(), r, causal)
            dq[:, :, qs] += gq
            dk[:, :, ks] += gk
            dv[:, :, ks] += gv
        return dq, dk, dv

    fwd = bench(forward, seconds)[0]
    bwd = bench(backward, seconds)[0]
    return fwd, bwd


def causal_case(L, seconds):
    q = torch.randn(1, HEADS, L, HEAD_DIM, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn_like(q, requires_grad=True)
    v = torch.randn_like(q, requires_grad=True)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        g = torch.randn_like(o)
        fwd = bench(lambda: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True), seconds)[0]
        bwd = bench(lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True),
                    seconds)[0]
    return fwd, bwd


def main():
    path = sys.argv[1]
    L = int(sys.argv[2]) if len(sys.argv) > 2 else 32768
    cps = [int(c) for c in (sys.argv[3] if len(sys.argv) > 3 else "1,2,4,8").split(",")]
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 2.0
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "local_tokens": L, "heads": HEADS, "head_dim": HEAD_DIM, "cases": []}
    f1, b1 = causal_case(L, seconds)
    pairs = L * L / 2 * HEADS * HEAD_DIM  # a causal call's query-key pairs x heads x dim
    res["causal"] = {"forward_s": f1, "backward_s": b1,
                     "forward_tflops": 4 * pairs / f1 / 1e12,
                     "backward_tflops": 10 * pairs / b1 / 1e12}
    print(f"causal L={L}: forward {f1 * 1e3:.2f} ms ({res['causal']['forward_tflops']:.0f} "
          f"TFLOP/s), backward {b1 * 1e3:.2f} ms ({res['causal']['backward_tflops']:.0f})",
          flush=True)
    for cp in cps:
        for rank in sorted({0, cp - 1}):
            f, b = ring_case(L, cp, rank, seconds)
            row = {"cp": cp, "rank": rank, "forward_s": f, "backward_s": b,
                   "forward_over_cp_causal": f / (cp * f1),
                   "backward_over_cp_causal": b / (cp * b1)}
            res["cases"].append(row)
            print(f"cp {cp} rank {rank}: forward {f * 1e3:.2f} ms ({row['forward_over_cp_causal']:.3f}"
                  f" of cp x causal), backward {b * 1e3:.2f} ms "
                  f"({row['backward_over_cp_causal']:.3f})", flush=True)
    with open(path, "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
