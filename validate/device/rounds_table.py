"""Medians and spreads of interleaved clustersim-probe / nccl-tests rounds (compare_rounds.sh):
for each (op, size, placement), the median busbw of each tool over the rounds, their min..max,
and the difference of the medians. Runs on the device after the rounds and here on the fetched
files (validate/NOTES.md quotes its output).
Usage: python3 rounds_table.py DIR ROUNDS"""
import json
import re
import statistics
import sys


def nccl_tests_rows(text):
    """{(op, size, placement): busbw} from nccl-tests output (one or more ops)."""
    rows, op = {}, None
    for line in text.splitlines():
        m = re.match(r"# Collective test starting: (\w+)_perf", line)
        if m:
            op = m.group(1)
            continue
        f = line.split()
        if op and len(f) == 13 and f[0].isdigit():
            size = int(f[0])
            rows[(op, size, "out_of_place")] = float(f[7])
            rows[(op, size, "in_place")] = float(f[11])
    return rows


def probe_rows(path):
    rows = {}
    for r in json.load(open(path))["collectives"]:
        for p in ("out_of_place", "in_place"):
            rows[(r["op"], r["size_bytes"], p)] = r[p]["busbw_GBps"]
    return rows


def main():
    d, rounds = sys.argv[1], int(sys.argv[2])
    ours, theirs = {}, {}
    for r in range(1, rounds + 1):
        for key, v in probe_rows(f"{d}/probe-round{r}.json").items():
            ours.setdefault(key, []).append(v)
        for key, v in nccl_tests_rows(open(f"{d}/nccl-tests-round{r}.txt").read()).items():
            theirs.setdefault(key, []).append(v)
    print(f"busbw GB/s, median (min..max) over {rounds} rounds")
    print(f"{'op':15} {'size':>6} {'place':6} {'clustersim':>24} {'nccl-tests':>24} {'diff':>7}")
    worst = 0
    for key in sorted(ours, key=lambda k: (k[0], k[1], k[2] != "out_of_place")):
        if key not in theirs:
            continue
        a, b = ours[key], theirs[key]
        ma, mb = statistics.median(a), statistics.median(b)
        diff = ma / mb - 1
        worst = max(worst, abs(diff))
        op, size, place = key
        print(f"{op:15} {size >> 20:5}M {place[:6]:6} "
              f"{ma:7.1f} ({min(a):6.1f}..{max(a):6.1f}) {mb:7.1f} ({min(b):6.1f}..{max(b):6.1f}) "
              f"{100 * diff:+6.1f}%")
    print(f"largest |difference of medians|: {100 * worst:.1f}%")


if __name__ == "__main__":
    main()
