#!/usr/bin/env python3
"""How long the host takes to launch train_step.py's MoE block (TorchTitan's MoE layer as calls 43
and 48 run it: FSDP2 on one rank, bf16 parameters, eager or each block torch.compile'd).

docs/accuracy.md gives a mixture-of-experts layer a host floor (framework.moe_layer_host_time,
8.2 ms forward + backward, Megatron-Core's, read from NVIDIA's B200 row). moe_host_probe.py
measured a per-expert eager layer (7.8 ms on the H200's host); train_step.py's MoEBlock launches
its experts as one torch._grouped_mm and has no per-expert loop. This probe measures its host
time the way the training step pays it: the whole model (embedding, the blocks under FSDP2, the
norm, the output head and the loss) forward + backward with a synchronize after it, with four
blocks and with none, at a few tokens per sequence. Where the GPU's work is short the wall time
is the host's, and the difference over four blocks is four blocks' host time, FSDP's hooks
included. The profiler's kernel time of the same pass says how short the GPU's work was.

Usage: python3 moe_fsdp_host.py OUT.json [SEQS=128,512,4096] [ROUNDS=20]
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step as ts  # noqa: E402
from host_overhead import timed  # noqa: E402

BLOCKS = "qwen3-30b-a3b-8e-4l"
NONE = "qwen3-30b-a3b-8e-0l"  # the same model without its blocks
ts.MODELS[NONE] = (0,) + tuple(ts.MODELS[BLOCKS][1:])
ts.MOE[NONE] = ts.MOE[BLOCKS]


def kernel_s(fb):
    """GPU kernel time of one pass (the profiler's sum over kernels and copies)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fb()
        torch.cuda.synchronize()
    total = 0.0
    for e in p.key_averages():
        t = e.self_device_time_total if hasattr(e, "self_device_time_total") else e.self_cuda_time_total
        total += max(t, 0) * 1e-6
    return total


def measure(model_name, seq, compiled, rounds, dev):
    cfg = (f"{model_name}-s{seq}", model_name, seq, 1, "none", compiled, "fsdp")
    model, opt, cos, sin, tokens, targets = ts.build(cfg, dev)

    def fb():
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, targets, cos, sin)
        loss.backward()

    for _ in range(3):  # warm-up (and compilation)
        fb()
    torch.cuda.synchronize()
    out = {"model": model_name, "seq": seq, "compiled": compiled,
           "wall_s": timed(fb, rounds), "kernel_s": kernel_s(fb)}
    del model, opt
    torch.cuda.empty_cache()
    return out


def main():
    path = sys.argv[1]
    seqs = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "128,512,4096").split(",")]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    dev = torch.device("cuda:0")
    runs = []
    for compiled in (False, True):
        for seq in seqs:
            for name in (NONE, BLOCKS):
                r = measure(name, seq, compiled, rounds, dev)
                runs.append(r)
                print("%-22s seq %5d %-8s wall %.2f ms, kernels %.2f ms" % (
                    name, seq, "compiled" if compiled else "eager", r["wall_s"] * 1e3,
                    r["kernel_s"] * 1e3), flush=True)
    # Per block: (with blocks - without) / 4, wall and kernels.
    per_block = []
    for compiled in (False, True):
        for seq in seqs:
            a = next(r for r in runs if r["model"] == BLOCKS and r["seq"] == seq and r["compiled"] == compiled)
            b = next(r for r in runs if r["model"] == NONE and r["seq"] == seq and r["compiled"] == compiled)
            layers = ts.MODELS[BLOCKS][0]
            per_block.append({"seq": seq, "compiled": compiled,
                              "wall_per_block_s": (a["wall_s"] - b["wall_s"]) / layers,
                              "kernel_per_block_s": (a["kernel_s"] - b["kernel_s"]) / layers})
            print("per block, seq %5d %-8s: wall %.3f ms, kernels %.3f ms" % (
                seq, "compiled" if compiled else "eager", per_block[-1]["wall_per_block_s"] * 1e3,
                per_block[-1]["kernel_per_block_s"] * 1e3))
    json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
               "runs": runs, "per_block": per_block}, open(path, "w"), indent=1)


if __name__ == "__main__":
    main()
