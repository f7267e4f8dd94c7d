#!/usr/bin/env python3
"""What a training step's cross-entropy holds over the vocabulary, bytes per logit, on one GPU.

docs/accuracy.md counts the loss's tensors per logit at its forward and its backward by how the
framework computes it (framework.loss_input): fp32 (F.cross_entropy(logits.float()): 2 + 8
forward, 12 backward), autocast (on the 16-bit logits inside autocast: 2 x 2 + 4, 2 + 8), fused
in PyTorch (one kernel on the 16-bit logits, e.g. Inductor's compiled
F.cross_entropy(logits.float()) as TorchTitan compiles its loss: 2, 4), and with TP PyTorch's
loss_parallel, whose log-softmax is DTensor's decomposition (2 + 12 forward, 12 backward). This
measures each on bf16 logits of N tokens x V (a non-leaf copy, as the output head leaves them):
the allocated peak during the loss's forward (the logits themselves counted, 2 bytes), what the
graph holds once the logits are dropped (TorchTitan's `del pred`), and the peak during its
backward (the leaf's 16-bit gradient, the head's input gradient in a step, included), from
torch.cuda.max_memory_allocated, all above the allocation before the logits.

Usage: python3 loss_memory.py OUT.json [TOKENS=16384] [VOCAB=128256]
"""
import contextlib
import json
import os
import sys

import torch
import torch.nn.functional as F


def measure(name, loss_fn, logits_of, n, v, dev, context=contextlib.nullcontext):
    """`context` wraps the loss's forward and backward (loss_parallel needs both inside)."""
    with context():
        return _measure(name, loss_fn, logits_of, n, v, dev)


def _measure(name, loss_fn, logits_of, n, v, dev):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    labels = torch.randint(0, v, (n,), device=dev)
    base = torch.cuda.memory_allocated()
    leaf = torch.randn(n, v, device=dev, dtype=torch.bfloat16, requires_grad=True)
    for _ in range(2):  # warm-up (compilation); the leaf's .grad freed after each
        logits = logits_of(leaf)
        loss_fn(logits, labels).backward()
        del logits
        leaf.grad = None
    torch.cuda.synchronize()
    # The head's output stands in for the logits: a non-leaf bf16 tensor, 2 bytes a logit.
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    logits = logits_of(leaf)
    loss = loss_fn(logits, labels)
    torch.cuda.synchronize()
    fwd_peak = torch.cuda.max_memory_allocated() - start
    after_fwd = torch.cuda.memory_allocated() - start
    del logits  # TorchTitan's `del pred`: only the autograd graph holds them now
    held = torch.cuda.memory_allocated() - start
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    torch.cuda.synchronize()
    # Above the same start: what the graph held after `del` and the backward's transients,
    # the leaf's 16-bit gradient (the head's input gradient in a real step) included.
    bwd_peak = torch.cuda.max_memory_allocated() - start
    out = {"name": name, "tokens": n, "vocab": v,
           "forward_peak_bytes_per_logit": fwd_peak / (n * v),
           "after_forward_bytes_per_logit": after_fwd / (n * v),
           "held_for_backward_bytes_per_logit": held / (n * v),
           "backward_peak_bytes_per_logit": bwd_peak / (n * v)}
    del loss, leaf, labels
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    out["left_allocated_bytes"] = torch.cuda.memory_allocated() - base
    print("%-14s forward %.2f (after %.2f, held %.2f), backward %.2f bytes a logit" % (
        name, out["forward_peak_bytes_per_logit"], out["after_forward_bytes_per_logit"],
        out["held_for_backward_bytes_per_logit"], out["backward_peak_bytes_per_logit"]),
        flush=True)
    return out


def main():
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 16384
    v = int(sys.argv[3]) if len(sys.argv) > 3 else 128256
    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    copy = lambda leaf: leaf * 1  # noqa: E731 (the head's output: a non-leaf copy)
    fp32_loss = lambda x, y: F.cross_entropy(x.float(), y)  # noqa: E731 (logits.float())
    runs = []
    runs.append(measure("fp32", fp32_loss, copy, n, v, dev))

    def autocast_loss(x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return F.cross_entropy(x, y)
    runs.append(measure("autocast", autocast_loss, copy, n, v, dev))
    runs.append(measure("compiled", torch.compile(fp32_loss), copy, n, v, dev))
    # loss_parallel over a one-rank mesh: the logits a DTensor sharded on the vocabulary, so
    # that DTensor's log-softmax decomposition and nll handlers run as under TP.
    try:
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import DTensor, Shard
        from torch.distributed.tensor.parallel import loss_parallel
        if not dist.is_initialized():
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", "29513")
            dist.init_process_group("nccl", rank=0, world_size=1)
        mesh = init_device_mesh("cuda", (1,))

        def sharded(leaf):
            return DTensor.from_local(leaf * 1, mesh, [Shard(1)], run_check=False)

        runs.append(measure("loss_parallel", fp32_loss, sharded, n, v, dev, context=loss_parallel))
    except Exception as e:  # noqa: BLE001 (reported, the other cases kept)
        print("loss_parallel: %r" % (e,), flush=True)
        runs.append({"name": "loss_parallel", "error": repr(e)})
    json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
               "runs": runs}, open(path, "w"), indent=1)


if __name__ == "__main__":
    main()
