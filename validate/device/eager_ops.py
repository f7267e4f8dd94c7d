"""The rates of PyTorch's eager elementwise kernels at training shapes, by the kind the
eager op list (models/layer_model.cc, layer_kernels) counts their bytes in: dtype-converting
copies, mixed-dtype binary ops, same-dtype contiguous ops, ops on strided or broadcast
operands, the norms and their backwards, concatenations and transposing copies.

Each op is timed with CUDA events (torch_reference.bench: the median of 40 launches after one
warm-up) on random data rotated among buffers larger than the L2 cache; bytes are the fewest the op must move (each
input read once, each output written once). Sizes: tokens 16384 (2 x 8192) by widths 2048,
4096 and 5632.

Usage: python3 eager_ops.py OUT.json"""
import json
import sys

import torch
import torch.nn.functional as F

from torch_reference import bench  # this directory's CUDA-event median timer

DEV = torch.device("cuda:0")
BF16, F32 = torch.bfloat16, torch.float32


def rotating(make, n=3):
    """n independent inputs (together beyond the 50 MB L2), used in turn."""
    bufs = [make() for _ in range(n)]
    state = {"i": 0}

    def next_buf():
        state["i"] = (state["i"] + 1) % n
        return bufs[state["i"]]

    return next_buf


def ops_for(tokens, width, heads_dim=128):
    """(name, kind, bytes, fn) for one [tokens, width] activation."""
    n = tokens * width
    b, s = 2, tokens // 2
    heads = width // heads_dim
    x32 = rotating(lambda: torch.randn(tokens, width, device=DEV, dtype=F32))
    x16 = rotating(lambda: torch.randn(tokens, width, device=DEV, dtype=BF16))
    y16 = rotating(lambda: torch.randn(tokens, width, device=DEV, dtype=BF16))
    y32 = rotating(lambda: torch.randn(tokens, width, device=DEV, dtype=F32))
    w32 = torch.ones(width, device=DEV, dtype=F32)
    w16 = torch.ones(width, device=DEV, dtype=BF16)
    bias16 = torch.zeros(width, device=DEV, dtype=BF16)
    half = heads_dim // 2
    cos = torch.randn(s, half, device=DEV, dtype=F32)
    out = []

    def add(name, kind, nbytes, fn):
        out.append((name, kind, nbytes, fn))

    # dtype-converting copies
    add("cast_f32_to_bf16", "cast", 6 * n, lambda: x32().to(BF16))
    add("cast_bf16_to_f32", "cast", 6 * n, lambda: x16().to(F32))
    # binary ops
    add("add_f32_bf16", "mixed", 10 * n, lambda: x32() + y16())
    add("add_f32_f32", "same32", 12 * n, lambda: x32() + y32())
    add("add_bf16_bf16", "same16", 6 * n, lambda: x16() + y16())
    add("mul_bf16_bf16", "same16", 6 * n, lambda: x16() * y16())
    # unary activations (bf16)
    add("silu_bf16", "same16", 4 * n, lambda: F.silu(x16()))
    add("gelu_bf16", "same16", 4 * n, lambda: F.gelu(x16()))
    add("silu_backward_bf16", "same16", 6 * n,
        lambda: torch.ops.aten.silu_backward(y16(), x16()))
    add("gelu_backward_bf16", "same16", 6 * n,
        lambda: torch.ops.aten.gelu_backward(y16(), x16()))
    # norms, forward and backward
    add("rms_norm_f32", "norm", 8 * n, lambda: F.rms_norm(x32(), (width,), w32))
    add("rms_norm_bf16", "norm", 4 * n, lambda: F.rms_norm(x16(), (width,), w16))
    add("layer_norm_bf16", "norm", 4 * n,
        lambda: F.layer_norm(x16(), (width,), w16, bias16))

    def norm_backward(x_of, w, fn):
        x = x_of().detach().requires_grad_(True)
        y = fn(x, w)
        g = torch.randn_like(y)
        return lambda: torch.autograd.grad(y, (x,), g, retain_graph=True)

    nb32 = norm_backward(x32, w32, lambda x, w: F.rms_norm(x, (width,), w))
    add("rms_norm_backward_f32", "norm", 12 * n, nb32)
    nb16 = norm_backward(x16, w16, lambda x, w: F.rms_norm(x, (width,), w))
    add("rms_norm_backward_bf16", "norm", 6 * n, nb16)
    # layouts: the attention output's transpose back to [b, s, heads x dim], a strided view's
    # copy, the rotary halves (strided bf16 views times a broadcast fp32 table), their fp32 sum,
    # the concatenation of the two fp32 halves
    add("transpose_copy_bf16", "layout", 4 * n,
        lambda: x16().view(b, heads, s, heads_dim).transpose(1, 2).contiguous())
    add("strided_half_copy_bf16", "layout", 4 * (n // 2),
        lambda: x16().view(b, s, heads, heads_dim)[..., :half].contiguous())
    add("rope_mul_bf16_view_f32_table", "strided",
        (2 + 4) * (n // 2),
        lambda: x16().view(b, s, heads, heads_dim).transpose(1, 2)[..., :half] * cos[None, None])
    add("sub_f32_halves", "same32", 12 * (n // 2),
        lambda: x32().view(-1)[: n // 2] - y32().view(-1)[: n // 2])
    add("cat_f32_halves", "layout", 8 * n,
        lambda: torch.cat((x32().view(-1)[: n // 2].view(-1, half),
                           y32().view(-1)[: n // 2].view(-1, half)), dim=-1))
    add("cast_f32_to_bf16_strided", "cast", 6 * n,
        lambda: x32().view(b, s, heads, heads_dim).transpose(1, 2).to(BF16))
    return out


def main():
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
              "hbm_note": "bytes: each input read once, each output written once", "ops": []}
    for width in (2048, 4096, 5632):
        tokens = 16384
        for name, kind, nbytes, fn in ops_for(tokens, width):
            with torch.no_grad() if "backward" not in name else torch.enable_grad():
                s, _ = bench(fn, 0, min_reps=40)
            r = {"op": name, "kind": kind, "tokens": tokens, "width": width, "bytes": nbytes,
                 "s": s, "TBps": nbytes / s / 1e12}
            result["ops"].append(r)
            print("%-30s %-7s w %5d %8.1f us %6.2f TB/s" % (name, kind, width, s * 1e6, r["TBps"]),
                  flush=True)
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
