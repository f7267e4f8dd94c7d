"""What is allocated at the start of a training step, and who allocated it: train_step.py's
decoder (fp32 parameters, bf16 autocast, fused AdamW), eager and torch.compile'd per block, with
and without full recompute (torch.utils.checkpoint, non-reentrant). Call 17 found the compiled
1.4B with full recompute starting every step 4.8 GiB above its eager twin; this takes each
configuration's step start apart:
- what Python can see: parameters, gradients, optimizer states, and any other CUDA tensor
  reachable through the garbage collector (grouped by dtype and shape);
- what the allocator holds (torch.cuda.memory._snapshot with allocation stacks recorded from the
  step before): the live blocks grouped by the innermost frames of the Python stack that
  allocated them, largest first.

Usage: python3 memory_snapshot.py OUT.json [--only NAME,...] [--sequence]"""
import argparse
import collections
import gc
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step  # noqa: E402

CONFIGS = [
    # name, model, seq, micro-batch, recompute, compile
    ("1.4b-s8k-b2-full", "1.4b", 8192, 2, "full", False),
    ("1.4b-s8k-b2-full-compiled", "1.4b", 8192, 2, "full", True),
    ("1.4b-s8k-b2-compiled", "1.4b", 8192, 2, "none", True),
]
GiB = 2**30


def frame_key(frames, depth=4):
    """The innermost `depth` frames of the allocating Python stack, as file:line:function."""
    py = [f for f in frames if f.get("filename", "").endswith(".py")]
    keep = py[:depth]
    return " <- ".join("%s:%s:%s" % (os.path.basename(f["filename"]), f["line"], f["name"])
                       for f in keep) or "(no python frame)"


def run(cfg, dev):
    name, _, _, _, recompute, compiled = cfg
    model, opt, cos, sin, tokens, targets = train_step.build(cfg, dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, targets, cos, sin)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    # Recording allocation stacks breaks the compiled blocks' recompute under checkpoint (torch
    # 2.11: "apply ... returned NULL without setting an exception"): only where it works.
    stacks = not (compiled and recompute == "full")
    if stacks:
        torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
    step()
    torch.cuda.synchronize()
    gc.collect()
    out = {"name": name, "allocated_gib": torch.cuda.memory_allocated() / GiB}

    params = list(model.parameters())
    ids = {id(p) for p in params}
    out["parameters_gib"] = sum(p.numel() * p.element_size() for p in params) / GiB
    out["gradients_gib"] = sum(p.grad.numel() * p.grad.element_size()
                               for p in params if p.grad is not None) / GiB
    state = [t for s in opt.state.values() for t in s.values() if torch.is_tensor(t)]
    ids |= {id(t) for t in state}
    out["optimizer_gib"] = sum(t.numel() * t.element_size() for t in state) / GiB
    others = collections.Counter()
    seen = set()
    for o in gc.get_objects():
        try:
            if not torch.is_tensor(o) or not o.is_cuda or id(o) in ids:
                continue
            ptr = o.untyped_storage().data_ptr()
            if ptr in seen:
                continue
            seen.add(ptr)
            others[(str(o.dtype), tuple(o.shape))] += o.untyped_storage().nbytes()
        except Exception:  # noqa: BLE001 - some objects refuse inspection
            continue
    out["other_python_tensors"] = [
        {"dtype": k[0], "shape": list(k[1]), "gib": v / GiB} for k, v in others.most_common(20)]
    out["other_python_gib"] = sum(others.values()) / GiB

    snap = torch.cuda.memory._snapshot()
    if stacks:
        torch.cuda.memory._record_memory_history(enabled=None)
    groups = collections.Counter()
    counts = collections.Counter()
    sizes = collections.Counter()
    for seg in snap["segments"]:
        for blk in seg["blocks"]:
            if blk["state"] != "active_allocated":
                continue
            key = frame_key(blk.get("frames", []))
            groups[key] += blk["size"]
            counts[key] += 1
            sizes[blk["size"]] += 1
    # Without stacks the live blocks by size: a parameter-shaped size n times says whose.
    out["live_by_size"] = [{"bytes": b, "count": n, "gib": b * n / GiB}
                           for b, n in sorted(sizes.items(), key=lambda kv: -kv[0] * kv[1])[:25]]
    out["parameter_sizes"] = sorted({p.numel() for p in params})
    out["live_by_stack"] = [{"stack": k, "gib": v / GiB, "blocks": counts[k]}
                            for k, v in groups.most_common(25)]
    del model, opt, state, params
    gc.collect()
    torch.cuda.empty_cache()
    return out


def sequence_check(dev, result, path):
    """train_step.py's order: the compiled 1.4B, then the compiled 1.4B with full recompute, each
    through train_step.run_config (which deletes its model and optimizer but runs no garbage
    collection), first as train_step.py ran them in calls 9 and 17, then with gc.collect() between.
    Records what the first leaves allocated and the second's peaks."""
    cfgs = {c[0]: c for c in train_step.CONFIGS}
    first, second = cfgs["1.4b-s8k-b2-compiled"], cfgs["1.4b-s8k-b2-full-compiled"]
    for collect in (False, True):
        gc.collect()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
        train_step.run_config(first, 2, False, dev)
        torch.cuda.empty_cache()
        left = torch.cuda.memory_allocated() - base
        if collect:
            gc.collect()
            torch.cuda.empty_cache()
        left_at_start = torch.cuda.memory_allocated() - base
        r = train_step.run_config(second, 6, False, dev)
        row = {"gc_between": collect, "left_by_first_gib": left / GiB,
               "left_at_second_start_gib": left_at_start / GiB,
               "second_peak_allocated_gib": r["peak_allocated_bytes"] / GiB,
               "second_peak_reserved_gib": r["peak_reserved_bytes"] / GiB,
               "second_step_time_s": r["step_time_s"]}
        result.setdefault("sequence", []).append(row)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print("sequence, gc between %s: the first left %.3f GiB (%.3f at the second's start); "
              "the second's peak %.3f GiB allocated, %.3f reserved, step %.4f s" %
              (collect, left / GiB, left_at_start / GiB, row["second_peak_allocated_gib"],
               row["second_peak_reserved_gib"], row["second_step_time_s"]))
        sys.stdout.flush()
        gc.collect()
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--sequence", action="store_true",
                    help="only the train_step.py order check (see sequence_check)")
    a = ap.parse_args()
    dev = torch.device("cuda")
    only = set(filter(None, a.only.split(",")))
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "runs": []}
    if a.sequence:
        sequence_check(dev, result, a.out)
        return
    for cfg in CONFIGS:
        if only and cfg[0] not in only:
            continue
        r = run(cfg, dev)
        result["runs"].append(r)
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
        print("%s: allocated %.2f GiB = parameters %.2f + gradients %.2f + optimizer %.2f + "
              "other Python tensors %.2f" % (r["name"], r["allocated_gib"], r["parameters_gib"],
                                             r["gradients_gib"], r["optimizer_gib"],
                                             r["other_python_gib"]))
        for t in r["other_python_tensors"][:8]:
            print("    python %-16s %-24s %.3f GiB" % (t["dtype"], t["shape"], t["gib"]))
        for g in r["live_by_stack"][:12]:
            print("    %.3f GiB in %d blocks: %s" % (g["gib"], g["blocks"], g["stack"]))
        for g in r["live_by_size"][:12]:
            print("    %d blocks of %d bytes: %.3f GiB" % (g["count"], g["bytes"], g["gib"]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
