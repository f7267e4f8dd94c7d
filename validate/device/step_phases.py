"""The model's forward and backward, each against what validate/device/train_step.py measured.
Usage (after the build; paths from anywhere): python3 validate/device/step_phases.py
[CLUSTERSIM] [CORPUS_DIR ...]
For every corpus file written by train_steps_to_corpus.py (scenarios/published/clustersim-h200/
and clustersim-h100/ by default), the run its citation names is read from the measurement file
it names, and `clustersim plan --engine analytic --json` gives the model's forward_s and
backward_s of the step's one micro-batch. Prints a row per run (error = model / measured - 1)
and the mean |error|, the mean error by GPU and by sequence length. A phase the model splits
wrongly shows here even where the step's sum agrees."""
import glob
import json
import os
import re
import statistics
import subprocess
import sys

# The citation train_steps_to_corpus.py writes: "... run NAME\n    (scenarios/measurements/...json)",
# the measurement file's path from the repository's root.
CITATION = re.compile(r"run (\S+) \((scenarios/measurements/\S+?\.json)\)")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def measured_run(path, measurements):
    """The train_step.py run the corpus file cites, or None; `measurements` caches each
    measurement file's runs by name (many corpus files cite one file)."""
    with open(path) as f:
        text = " ".join(line.strip() for line in f)
    m = CITATION.search(text)
    if not m:
        return None
    name, measurement = m.groups()
    if measurement not in measurements:
        runs = measurements[measurement] = {}
        with open(os.path.join(ROOT, measurement)) as f:
            for r in json.load(f)["runs"]:
                runs.setdefault(r["name"], r)  # the first of a name, as listed
    run = measurements[measurement].get(name)
    return run if run is not None and "forward_s" in run else None


def plan(binary, path):
    try:
        p = subprocess.run([binary, "plan", path, "--engine", "analytic", "--json"],
                           capture_output=True, text=True)
    except OSError as e:
        sys.exit("step_phases.py: cannot run %s: %s" % (binary, e.strerror))
    if p.returncode != 0:
        sys.exit("step_phases.py: %s plan %s exited %d: %s" % (binary, path, p.returncode,
                                                                 p.stderr.strip()))
    return json.loads(p.stdout)


def main(argv):
    binary = argv[1] if len(argv) > 1 else os.path.join(ROOT, "build/tools/clustersim")
    dirs = argv[2:] or [os.path.join(ROOT, "scenarios/published", d)
                        for d in ("clustersim-h200", "clustersim-h100")]
    rows, measurements = [], {}
    for path in sorted(p for d in dirs for p in glob.glob(os.path.join(d, "*.yaml"))):
        run = measured_run(path, measurements)
        if run is None:
            continue
        plan_ = plan(binary, path)
        rows.append(dict(name=os.path.basename(path)[:-5],
                         gpu=os.path.basename(os.path.dirname(os.path.abspath(path))),
                         seq=run["seq_len"],
                         fwd=plan_["forward_s"] / run["forward_s"] - 1,
                         bwd=plan_["backward_s"] / run["backward_s"] - 1,
                         step=plan_["step_time_s"] / run["step_time_s"] - 1))
    if not rows:
        sys.exit("step_phases.py: no corpus file cites a train_step.py run with forward_s")
    print("%-52s %8s %8s %8s" % ("run", "forward", "backward", "step"))
    for r in rows:
        print("%-52s %+7.1f%% %+7.1f%% %+7.1f%%" % (r["name"], 100 * r["fwd"], 100 * r["bwd"],
                                                   100 * r["step"]))

    def summary(label, sel):
        mean = lambda k, f: 100 * statistics.mean(f(r[k]) for r in sel)
        print("%-14s %3d runs: forward mean |error| %.1f%% (bias %+.1f%%), backward %.1f%% "
              "(%+.1f%%), step %.1f%% (%+.1f%%)" % (
                  label, len(sel), mean("fwd", abs), mean("fwd", float), mean("bwd", abs),
                  mean("bwd", float), mean("step", abs), mean("step", float)))

    print()
    summary("all", rows)
    for gpu in sorted({r["gpu"] for r in rows}):
        summary(gpu, [r for r in rows if r["gpu"] == gpu])
    for seq in sorted({r["seq"] for r in rows}):
        summary("seq %d" % seq, [r for r in rows if r["seq"] == seq])


if __name__ == "__main__":
    main(sys.argv)
