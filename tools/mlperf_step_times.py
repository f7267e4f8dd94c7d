#!/usr/bin/env python3
"""Time per training step in MLPerf Training result logs (the corpus's scenarios/published/mlperf/).

Usage: python3 tools/mlperf_step_times.py result_0.txt [result_1.txt ...]

An MLPerf Training log is ':::MLLOG {json}' lines (some prefix each with the rank). Two measures of
a step are read from it:
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
runs set LOG_METRICS=OFF). Prints both per log, then the median over the logs of each; a line
that is not MLLOG JSON, or a file that cannot be read, exits 2 naming it."""
import json
import statistics
import sys

STEP_KEYS = ("train_step_timing", "train_step_timing in s", "train_step_time")
MARK = ":::MLLOG "


def fail(message):
    """Bad input: the message on stderr, exit 2."""
    print(f"mlperf_step_times.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_log(path):
    """(global batch, sequence length, blocks [(seconds, steps or None)], logged step times after
    the first evaluation). Exits 2 naming the file and line on a line that is not MLLOG JSON."""
    batch = seq = None
    blocks, open_block = [], None
    awaiting_samples = None  # a closed block's start samples_count (v5.0), for the next eval's
    first_eval_done = False
    logged = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            at = line.find(MARK)  # some logs prefix each line with the rank ("   0: ")
            if at < 0:
                continue
            try:
                event = json.loads(line[at + len(MARK):])
                key, meta, t = event["key"], event.get("metadata") or {}, event["time_ms"]
            except (ValueError, KeyError, TypeError) as e:
                fail(f"{path}:{number}: not an MLLOG event ({e})")
            if key == "global_batch_size":
                batch = event["value"]
            elif key == "max_sequence_length":
                seq = event["value"]
            elif key == "tracked_stats" and first_eval_done:
                value = event.get("value") or {}
                logged += [float(value[k]) for k in STEP_KEYS if k in value]
            elif key == "block_start":
                open_block = (t, meta)
            elif key in ("block_stop", "eval_start") and open_block is not None:
                t0, start = open_block
                steps = None
                if "step" in meta and "step" in start:
                    steps = meta["step"] - start["step"]
                elif "samples_count" in start:
                    awaiting_samples = start["samples_count"]
                else:
                    steps = steps_in(start.get("epoch_count"), batch, seq)
                blocks.append([(t - t0) / 1000.0, steps])
                open_block = None
            if key == "eval_start" and awaiting_samples is not None and batch:
                n = (meta.get("samples_count", awaiting_samples) - awaiting_samples) / batch
                if n > 0:
                    blocks[-1][1] = n
                awaiting_samples = None
            if key == "eval_stop":
                first_eval_done = True
    return batch, seq, [tuple(b) for b in blocks], logged


def steps_in(count, batch, seq):
    """Steps in a block of epoch_count `count`: tokens where it is a whole number of steps of
    batch x seq tokens (counted as samples it would be a multiple of seq steps, thousands, where
    a block between evaluations runs tens), else samples; None where neither divides."""
    if count is None or not batch:
        return None
    if seq and count % (batch * seq) == 0:
        return count // (batch * seq)
    if count % batch == 0:
        return count // batch
    return None


def main(paths):
    if not paths:
        fail("no log given\n" + __doc__)
    block_medians, logged_medians = [], []
    for path in paths:
        try:
            batch, seq, blocks, logged = read_log(path)
        except OSError as e:
            fail(f"{path}: {e.strerror}")
        if batch is None:
            print(f"{path}: no global_batch_size")
            continue
        parts = [f"{path}: global batch {batch}, seq {seq}"]
        counted = [(seconds, n) for seconds, n in blocks if n]
        per_step = [seconds / n for seconds, n in counted]
        if len(per_step) >= 2:
            rest = per_step[1:]
            block_medians.append(statistics.median(rest))
            parts.append(f"{len(per_step)} blocks of {counted[-1][1]:g} steps, the first "
                         f"{per_step[0]:.4f} s a step, the rest {block_medians[-1]:.4f} s "
                         f"(median; {min(rest):.4f}-{max(rest):.4f})")
        if logged:
            logged_medians.append(statistics.median(logged))
            parts.append(f"logged step time {logged_medians[-1]:.4f} s (median of {len(logged)} "
                         f"after the first evaluation)")
        print("; ".join(parts))
    if block_medians:
        print(f"blocks: median of {len(block_medians)} runs "
              f"{statistics.median(block_medians):.4f} s a step")
    if logged_medians:
        print(f"logged: median of {len(logged_medians)} runs "
              f"{statistics.median(logged_medians):.4f} s a step")


if __name__ == "__main__":
    main(sys.argv[1:])
