"""Megatron-LM's unfused attention core (before FlashAttention, 2021-2022: the corpus's SC21,
Korthikanti et al., MT-NLG and BLOOM runs) timed kernel by kernel at those runs' per-GPU shapes,
to check models/layer_model.cc (unfused_attention) on our GPU.

Per micro-batch of b sequences of s tokens, heads_local = heads / tp heads of dim d, in 16-bit:
  forward:  scores = baddbmm(Q, K^T) [b*heads, s, s]; probs = softmax(scale * scores) (one
            kernel: Megatron's fused scale-mask-softmax reads the scores once and writes the
            probabilities once, as torch's softmax does); dropout(probs, 0.1) (writes the
            output and a 1-byte mask); context = bmm(probs, V);
  backward: autograd of the same four.
Each piece is timed with CUDA events (torch_reference.bench, the median of repeated launches);
the whole forward + backward too.

Usage: python3 unfused_attention.py OUT.json [seconds_per_case]"""
import json
import sys

import torch
import torch.nn.functional as F

from torch_reference import bench

DEV = torch.device("cuda:0")

# (name, heads_local, head_dim, micro_batch): the corpus runs' per-GPU attention, s = 2048.
CASES = [
    ("sc21-1.7b", 24, 96, 1),        # h 2304, a 24, tp 1
    ("sc21-3.6b", 16, 96, 1),        # h 3072, a 32, tp 2
    ("sc21-7.5b", 8, 128, 1),        # h 4096, a 32, tp 4
    ("korthikanti-22b", 8, 96, 4),   # h 6144, a 64, tp 8
    ("korthikanti-175b", 12, 128, 1),  # h 12288, a 96, tp 8
    ("mtnlg-530b", 16, 160, 1),      # h 20480, a 128, tp 8
    ("bloom-176b", 28, 128, 2),      # h 14336, a 112, tp 4
]
SEQ = 2048


def case(name, heads, d, b, seconds):
    dt = torch.float16
    n = b * heads
    q = torch.randn(n, SEQ, d, device=DEV, dtype=dt, requires_grad=True)
    k = torch.randn(n, SEQ, d, device=DEV, dtype=dt, requires_grad=True)
    v = torch.randn(n, SEQ, d, device=DEV, dtype=dt, requires_grad=True)
    scale = d ** -0.5
    scores0 = torch.empty(n, SEQ, SEQ, device=DEV, dtype=dt)
    out = {"name": name, "heads_local": heads, "head_dim": d, "micro_batch": b, "seq_len": SEQ}

    qd, kd = q.detach(), k.detach()

    def qk():  # the scores, outside autograd
        return torch.baddbmm(scores0, qd, kd.transpose(1, 2), beta=0.0, alpha=1.0)

    scores = qk()
    probs = torch.softmax(scores, dim=-1)
    dropped = F.dropout(probs, 0.1, training=True)

    out["qk_ms"] = bench(qk, seconds)[0] * 1e3
    out["softmax_ms"] = bench(lambda: torch.softmax(scores, dim=-1), seconds)[0] * 1e3
    out["dropout_ms"] = bench(lambda: F.dropout(probs, 0.1, training=True), seconds)[0] * 1e3
    out["av_ms"] = bench(lambda: torch.bmm(dropped, v.detach()), seconds)[0] * 1e3

    def forward():
        s = torch.baddbmm(scores0, q, k.transpose(1, 2), beta=0.0, alpha=scale)
        p = torch.softmax(s, dim=-1)
        p = F.dropout(p, 0.1, training=True)
        return torch.bmm(p, v)

    grad = torch.randn(n, SEQ, d, device=DEV, dtype=dt)
    out["forward_ms"] = bench(forward, seconds)[0] * 1e3

    def fwd_bwd():
        o = forward()
        o.backward(grad)

    out["forward_backward_ms"] = bench(fwd_bwd, seconds)[0] * 1e3
    out["backward_ms"] = out["forward_backward_ms"] - out["forward_ms"]
    # The backward's pieces: the softmax backward (reads probabilities and their gradient,
    # writes the scores' gradient) and the dropout backward (reads gradient and mask).
    gp = torch.randn_like(probs)
    out["softmax_backward_ms"] = bench(
        lambda: torch._softmax_backward_data(gp, probs, -1, dt), seconds)[0] * 1e3
    mask = torch.rand(probs.shape, device=DEV) > 0.1
    out["dropout_backward_ms"] = bench(
        lambda: torch.ops.aten.native_dropout_backward(gp, mask, 1 / 0.9), seconds)[0] * 1e3
    print(json.dumps(out), flush=True)
    return out


def main():
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.3
    result = {"torch": torch.__version__, "cuda": torch.version.cuda,
              "device": torch.cuda.get_device_name(0), "cases": []}
    for c in CASES:
        result["cases"].append(case(*c, seconds))
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
