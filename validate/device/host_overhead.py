#!/usr/bin/env python3
"""Host cost of issuing GPU work from PyTorch eager, on the device's own CPU.

When kernels are shorter than the time the host takes to issue them, a training step runs at the
host's pace, not the GPU's (small mixture-of-experts layers at one sequence per micro-batch: see
docs/accuracy.md). This measures that pace for the three kinds of work a framework issues:

  launch       a tiny in-place op (x.add_(1) on 256 floats), N times, then one synchronize: the
               eager dispatcher plus the CUDA launch, per op;
  autograd     forward and backward through a chain of L small Linear+SiLU layers (64 x 64, 8
               rows): per op issued, forward and backward (the backward issues from C++);
  sync         a device-to-host copy of one integer after a tiny kernel (what a dropless MoE
               dispatcher does to size its all-to-all): per round trip;
  graph        the same chain replayed as one CUDA graph: per op, for comparison.

Each case runs R rounds after a warm-up and reports the median per-op time in microseconds, with
the GPU time the profiler sees for the same ops (kernels far shorter than the host time: the
numbers are the host's). Usage: python3 host_overhead.py OUT.json [ROUNDS]
"""
import json
import statistics
import sys
import time

import torch


def timed(fn, rounds):
    samples = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main():
    out_path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    dev = torch.device("cuda")
    x = torch.zeros(256, device=dev)
    n_launch = 10000

    def launches():
        for _ in range(n_launch):
            x.add_(1)

    layers = 64
    chain = torch.nn.Sequential(*[m for _ in range(layers)
                                  for m in (torch.nn.Linear(64, 64), torch.nn.SiLU())]).to(dev)
    inp = torch.randn(8, 64, device=dev, requires_grad=True)

    def fwd():
        with torch.no_grad():
            chain(inp)

    def fwd_bwd():
        chain(inp).sum().backward()

    n_sync = 1000
    counts = torch.zeros(1, dtype=torch.int64, device=dev)

    def syncs():
        for _ in range(n_sync):
            counts.add_(1)
            int(counts.item())

    # One CUDA graph of the forward chain.
    static_in = torch.randn(8, 64, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            chain(static_in)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        chain(static_in)

    for fn in (launches, fwd, fwd_bwd, syncs, graph.replay):  # warm-up
        fn()
    results = {
        "launch_us_per_op": timed(launches, rounds) / n_launch * 1e6,
        "forward_us_per_layer": timed(fwd, rounds) / layers * 1e6,
        "forward_backward_us_per_layer": timed(fwd_bwd, rounds) / layers * 1e6,
        "sync_us_per_round_trip": timed(syncs, rounds) / n_sync * 1e6,
        "graph_replay_us_per_layer": timed(graph.replay, rounds) / layers * 1e6,
    }
    # GPU time of the same forward, for contrast (the kernels are tiny).
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fwd()
        torch.cuda.synchronize()
    gpu_us = sum(e.device_time_total for e in prof.key_averages()) / layers
    out = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "rounds": rounds,
        "chain": {"layers": layers, "linear": "64x64", "rows": 8, "ops_per_layer_forward": 2},
        "results": results,
        "forward_gpu_us_per_layer": gpu_us,
        "cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t"),
    }
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
