#!/usr/bin/env python3
"""Time per training step in MLPerf Training result logs (the corpus's scenarios/published/mlperf/).

Usage: python3 tools/mlperf_step_times.py result_0.txt [result_1.txt ...]

An MLPerf Training log is ':::MLLOG {json}' lines (some prefix each with the rank). Two measures of a step are read from it:
  logged   NeMo's own time of each training step where the log records it (tracked_stats with
           train_step_timing up to v3.1, train_step_time from v4.1 on): the median over the steps
           logged after the first evaluation (the steps before it hold the warm-up). This is the
           step time NVIDIA's other published tables report (train_step_timing).
  blocks   wall-clock time of the training between two evaluations: block_start to block_stop,
           or to the next eval_start where the log has no block_stop (v3.0). A block's steps come
           from the step numbers its events carry (v5.1), the samples_count of its start and of
           the next evaluation (v5.0), or its epoch_count, in samples or, where it is a whole
           number of steps of global_batch_size x max_sequence_length, tokens (GPT-3 in v3.0 to
           v4.1). The median block after the first. Beside the steps it holds what the trainer
           does between them (callbacks, logging, the data loader's stalls).
The corpus files take `logged` where the log has it and `blocks` where it does not (v4.0, whose
runs set LOG_METRICS=OFF). Prints both per log, then the median over the logs of each."""
import json
import statistics
import sys

STEP_KEYS = ("train_step_timing", "train_step_timing in s", "train_step_time")
MARK = ":::MLLOG "


def read_log(path):
    """(global batch, sequence length, blocks [(seconds, steps or None, epoch_count or None)],
    logged step times after the first evaluation)."""
    batch = seq = None
    blocks, open_block, position = [], None, {}
    first_eval_done = False
    logged = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            at = line.find(MARK)  # some logs prefix each line with the rank ("   0: ")
            if at < 0:
                continue
            event = json.loads(line[at + len(MARK):])
            key, meta, t = event["key"], event.get("metadata", {}), event["time_ms"]
            if key == "global_batch_size":
                batch = event["value"]
            elif key == "max_sequence_length":
                seq = event["value"]
            elif key == "tracked_stats" and first_eval_done:
                value = event.get("value") or {}
                for k in STEP_KEYS:
                    if k in value:
                        logged.append(float(value[k]))
            elif key == "block_start":
                open_block = {"t0": t, "meta": meta}
            elif key in ("block_stop", "eval_start") and open_block is not None:
                start = open_block["meta"]
                steps = None
                if "step" in meta and "step" in start:
                    steps = meta["step"] - start["step"]
                elif "samples_count" in start and batch:
                    position = {"t": t, "start": start, "seconds": (t - open_block["t0"]) / 1e3}
                blocks.append([(t - open_block["t0"]) / 1000.0, steps, start.get("epoch_count")])
                open_block = None
            if key == "eval_start":
                if position and "samples_count" in meta and blocks:
                    n = (meta["samples_count"] - position["start"]["samples_count"]) / batch
                    if n > 0 and blocks[-1][1] is None:
                        blocks[-1][1] = n
                    position = {}
            if key == "eval_stop":
                first_eval_done = True
    return batch, seq, [tuple(b) for b in blocks], logged


def steps_in(count, batch, seq):
    """Steps in a block of epoch_count `count`: tokens where it is a whole number of steps of
    batch x seq tokens (counted as samples it would be a multiple of seq steps, thousands, where
    a block between evaluations runs tens), else samples."""
    if count is None:
        return None
    if seq and count % (batch * seq) == 0:
        return count // (batch * seq)
    if count % batch == 0:
        return count // batch
    return None


def main(paths):
    if not paths:
        sys.exit(__doc__)
    block_medians, logged_medians = [], []
    for path in paths:
        batch, seq, blocks, logged = read_log(path)
        if batch is None:
            print(f"{path}: no global_batch_size")
            continue
        parts = [f"{path}: global batch {batch}, seq {seq}"]
        steps = [n if n else steps_in(count, batch, seq) for _, n, count in blocks]
        per_step = [s / n for (s, _, _), n in zip(blocks, steps) if n]
        if len(per_step) >= 2:
            rest = per_step[1:]
            block_medians.append(statistics.median(rest))
            parts.append(f"{len(per_step)} blocks of {steps[-1]:g} steps, the first "
                         f"{per_step[0]:.4f} s a step, the rest {block_medians[-1]:.4f} s "
                         f"(median; {min(rest):.4f}-{max(rest):.4f})")
        if logged:
            logged_medians.append(statistics.median(logged))
            parts.append(f"logged step time {logged_medians[-1]:.4f} s (median of {len(logged)} "
                         f"after the first evaluation)")
        print("; ".join(parts))
    if block_medians:
        print(f"blocks: median of {len(block_medians)} runs {statistics.median(block_medians):.4f} s a step")
    if logged_medians:
        print(f"logged: median of {len(logged_medians)} runs {statistics.median(logged_medians):.4f} s a step")


if __name__ == "__main__":
    main(sys.argv[1:])
