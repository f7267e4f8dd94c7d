#!/usr/bin/env python3
"""How long the host takes to launch one dropless MoE layer from PyTorch eager, on one GPU.

docs/accuracy.md gives a mixture-of-experts layer a floor: the host's time to launch it
(framework.moe_layer_host_time, 8.2 ms forward + backward for Megatron-Core, read from NVIDIA's
published B200 row). This probe builds a Qwen3-30B-A3B-shaped decoder layer (hidden 2048, 32
query and 4 key/value heads of 128, RMSNorm, rotary omitted, 128 experts of which this GPU holds
LOCAL, top-8 routing with softmax, SwiGLU experts of 768) the way a dropless framework runs it in
eager PyTorch: router GEMM, softmax, top-k, per-expert token counts copied to the host (the
device-to-host sync Megatron-Core's alltoall dispatcher makes to size its all-to-all), a sort
that permutes the tokens into expert order, one SwiGLU MLP per local expert on its slice, the
un-permutation and the weighted sum. There is no all-to-all (one GPU): the local experts receive
as many routed copies as this GPU's own tokens make (tokens x top_k, as a balanced EP group
sends them), so each expert GEMM has its real shape. With dispatcher_sync false the split sizes
are fixed on the host (a padded, capacity-bound dispatcher: no sync).

For each token count it reports the median wall time of one layer's forward + backward (bf16,
autograd) with a synchronize after it, the same for 8 layers back to back (the host may run
ahead except at the dispatcher's sync), the GPU span between two events, the kernels' own time
from the profiler and their count. At a token count whose kernels are short the wall time is
the host's. Usage: python3 moe_host_probe.py OUT.json [LOCAL=8] [ROUNDS=20]
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HIDDEN, HEADS, KV_HEADS, HEAD_DIM = 2048, 32, 4, 128
EXPERTS, TOP_K, EXPERT_FFN = 128, 8, 768


class Layer(torch.nn.Module):
    def __init__(self, local, sync):
        super().__init__()
        d = dict(device="cuda", dtype=torch.bfloat16)
        self.local, self.sync = local, sync
        self.norm1 = torch.nn.RMSNorm(HIDDEN, **d)
        self.qkv = torch.nn.Linear(HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD_DIM, bias=False, **d)
        self.proj = torch.nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False, **d)
        self.norm2 = torch.nn.RMSNorm(HIDDEN, **d)
        self.router = torch.nn.Linear(HIDDEN, EXPERTS, bias=False, **d)
        self.fc1 = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(2 * EXPERT_FFN, HIDDEN, **d) * 0.02) for _ in range(local)])
        self.fc2 = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(HIDDEN, EXPERT_FFN, **d) * 0.02) for _ in range(local)])

    def forward(self, x):  # x: [tokens, hidden], one sequence
        t = x.shape[0]
        h = self.norm1(x)
        q, k, v = self.qkv(h).split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], -1)
        q = q.view(1, t, HEADS, HEAD_DIM).transpose(1, 2)
        k = k.view(1, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = v.view(1, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.proj(a.transpose(1, 2).reshape(t, HEADS * HEAD_DIM))
        h = self.norm2(x)
        probs = torch.softmax(self.router(h).float(), dim=-1)
        weights, experts = torch.topk(probs, TOP_K, dim=-1)
        weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
        # The tokens a balanced EP group sends this GPU's experts: as many routed copies as this
        # GPU's own tokens make (t x top_k), spread over the local experts by the router's choice
        # modulo LOCAL, so every expert's GEMM has the shape it has in the real layer.
        flat = experts.reshape(-1) % self.local
        counts = torch.bincount(flat, minlength=self.local)
        splits = counts.tolist() if self.sync else [t * TOP_K // self.local] * self.local
        order = torch.argsort(flat, stable=True)
        src = order // TOP_K
        permuted = h.index_select(0, src)
        if not self.sync:
            permuted = permuted[: sum(splits)]
        outs = []
        for e, chunk in enumerate(permuted.split(splits)):
            g, u = (chunk @ self.fc1[e].t()).chunk(2, dim=-1)
            outs.append((F.silu(g) * u) @ self.fc2[e].t())
        y = torch.cat(outs)
        y = y * weights.reshape(-1).index_select(0, order)[: y.shape[0]].unsqueeze(-1)
        combined = torch.zeros_like(h).index_add_(0, src[: y.shape[0]], y)
        return x + combined


def wall_and_span(step, rounds, warmup=3, repeat=1):
    """Medians over `rounds` of `step`'s wall time (the host's clock around it and a synchronize
    after it) and of its GPU span (two CUDA events), each divided by `repeat` (what one call of
    `step` does), after `warmup` calls."""
    for _ in range(warmup):
        step()
    wall, gpu = [], []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) / repeat)
        gpu.append(start.elapsed_time(end) / 1e3 / repeat)
    return statistics.median(wall), statistics.median(gpu)


def measure(layer, tokens, rounds, repeat):
    x = torch.randn(tokens, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn_like(x)

    def step():
        for _ in range(repeat):
            layer(x).backward(grad)

    return wall_and_span(step, rounds, warmup=3, repeat=repeat)


def kernel_time(layer, tokens, rounds):
    """GPU time of the layer's kernels alone: the forward + backward captured as seen by the
    profiler, summed over kernels (host gaps excluded)."""
    x = torch.randn(tokens, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn_like(x)
    for _ in range(3):
        layer(x).backward(grad)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(rounds):
            layer(x).backward(grad)
        torch.cuda.synchronize()
    total_us = sum(e.device_time_total for e in prof.key_averages() if e.device_time_total > 0
                   and e.device_type == torch.autograd.DeviceType.CUDA)
    kernels = sum(e.count for e in prof.key_averages()
                  if e.device_type == torch.autograd.DeviceType.CUDA)
    return total_us / 1e6 / rounds, kernels / rounds


def main():
    out_path = sys.argv[1]
    local = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    torch.manual_seed(0)
    rows = []
    for sync in (True, False):
        layer = Layer(local, sync)
        for tokens in (128, 1024, 4096, 16384):
            wall, span = measure(layer, tokens, rounds, repeat=1)
            wall8, span8 = measure(layer, tokens, max(3, rounds // 4), repeat=8)
            try:
                ktime, kernels = kernel_time(layer, tokens, 5)
            except Exception as err:  # the profiler's API moves between releases
                print("kernel_time:", err, flush=True)
                ktime, kernels = None, None
            row = {"local_experts": local, "dispatcher_sync": sync, "tokens": tokens,
                   "wall_s": wall, "wall_s_8_back_to_back": wall8, "gpu_span_s": span,
                   "kernel_time_s": ktime, "kernels": kernels}
            rows.append(row)
            print(json.dumps(row), flush=True)
    info = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
            "shape": {"hidden": HIDDEN, "heads": HEADS, "kv_heads": KV_HEADS, "head_dim": HEAD_DIM,
                      "experts": EXPERTS, "top_k": TOP_K, "expert_ffn": EXPERT_FFN}}
    with open(out_path, "w") as f:
        json.dump({"info": info, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
