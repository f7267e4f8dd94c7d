#!/usr/bin/env bash
# `clustersim accuracy`: the published-run corpus (scenarios/published/) scored by both engines.
# Gates the corpus: at least 30 runs from 6 sources, every file loads and both engines predict
# every run (the simulator every run but DeepSeek-V3's DualPipe one), and the errors stay within
# the gates (mean |error| 6.0% and leave-one-source-out 8.0%: regression gates at the corpus's
# figures plus a margin, 5.33% and 7.24% (analytic), 5.21% and 6.99% (simulator); of the targets
# of docs/accuracy.md, 5% and 8%, the leave-one-source-out one is met, the means are 0.33 and
# 0.21 points above (MLPerf Training's 61 runs, 6.4% mean: its first GPT-3 round 14%, its
# v5.1 Llama 3.1 8B rows at one sequence a GPU on 64-256 GPUs up to 33% fast; NeMo
# AutoModel's six MoE rows, 16.7% mean, all fast; Megatron-Bridge's Qwen3-30B-A3B pair, both
# +24%; TorchTitan's async-TP and context-parallel rows), and the max 15% is not met: 21 runs
# at or above it (19 in the simulator), the gpt-oss rows among them (the model 20-27% fast)
# and Megatron-Core's 32B weak-scaling row (+47%), each
# file's not_modelled says why; the closing notes give the table); a corpus-fitted constant
# ships at the corpus's best value.
# Also: the per-source, per-kind and leave-one-source-out figures in the JSON agree with the rows,
# the committed errors by kind of run (scenarios/published/accuracy-classes.json, which `plan`
# quotes) are this corpus's, --source,
# the text report, and bad input (no corpus, a file without published:, a bad value) exiting 2.
# Usage: accuracy_cli.sh <clustersim binary> <source dir>
source "$(dirname "$0")/cli_test_lib.bash"
corpus="$src/scenarios/published"

# The gates of this commit, both engines: mean |error| 6.0% (analytic 5.53%, simulator 5.34%;
# the target 5%), leave-one-source-out 8.0% (analytic 7.60%, simulator 7.36%; the target 8%),
# and the H200 and H100 steps we measured ourselves.
# The contention measurements (scenarios/published/contention/) are scored apart, the simulator
# gated at its current largest error (23.3%, Meta's) plus a margin: 25% (it overstates ECMP
# collisions, docs/collectives.md; a regression gate, not the 15% target).
"$bin" accuracy "$corpus" --json --max-mean-error 0.060 --max-loso-error 0.080 \
  --max-collective-error 0.25 --write-classes "$tmp/classes.json" >"$tmp/acc.json" 2>"$tmp/err.txt"
rc=$?
[ "$rc" -eq 0 ] || fail "accuracy --max-mean-error 0.060 --max-loso-error 0.080 --max-collective-error 0.25 exited $rc ($(tail -3 "$tmp/err.txt"))"
# The errors by kind of run that `plan` quotes (scenarios/published/accuracy-classes.json, built
# into the binary) are this corpus's under this model: a change that moves them regenerates the
# file (the command in its "about"), reviewed like any golden file.
cmp -s "$tmp/classes.json" "$corpus/accuracy-classes.json" ||
  fail "scenarios/published/accuracy-classes.json is stale: rerun clustersim accuracy scenarios/published --write-classes scenarios/published/accuracy-classes.json ($(diff "$tmp/classes.json" "$corpus/accuracy-classes.json" | head -6 | tr '\n' ' '))"
python3 - "$tmp/acc.json" "$src" <<'PY' || fail "accuracy --json content"
import json, os, re, statistics, sys
d = json.load(open(sys.argv[1]))
runs = d["runs"]
sources = {r["source"] for r in runs}
assert len(runs) >= 30 and len(sources) >= 6, (len(runs), sources)
for r in runs:
    for engine in ("analytic", "des"):
        e = r[engine]
        if engine == "des" and e["step_time_s"] is None:
            # The simulator has no DualPipe schedule (DeepSeek-V3's run): said, not hidden.
            assert "DualPipe" in (e.get("failure") or ""), (r["name"], e.get("failure"))
            continue
        assert e["step_time_s"] is not None, (r["name"], engine, e.get("failure"))
        assert abs(e["error"] - (e["step_time_s"] / r["published_step_time_s"] - 1)) < 1e-12
    assert r["published_step_time_s"] > 0 and r["memory_per_gpu_bytes"] > 0
    assert 0 < r["allocator_memory_per_gpu_bytes"] < 2 * r["memory_per_gpu_bytes"]
for engine in ("analytic", "des"):
    s = d[engine]
    errs = [abs(r[engine]["error"]) for r in runs if r[engine]["step_time_s"] is not None]
    assert abs(s["overall"]["mean_abs_error"] - sum(errs) / len(errs)) < 1e-12
    assert abs(s["overall"]["median_abs_error"] - statistics.median(errs)) < 1e-12
    assert abs(s["overall"]["max_abs_error"] - max(errs)) < 1e-12
    means = []
    for src in s["sources"]:
        own = [abs(r[engine]["error"]) for r in runs
               if r["source"] == src["source"] and r[engine]["step_time_s"] is not None]
        assert src["runs"] == len(own)
        assert abs(src["mean_abs_error"] - sum(own) / len(own)) < 1e-12
        means.append(src["left_out_mean_abs_error"])
    assert abs(s["leave_one_source_out_mean_abs_error"] - sum(means) / len(means)) < 1e-12
    # By kind of run: each class's runs, median and 90th percentile (nearest rank) from the rows.
    kinds = sorted({r["class"] for r in runs})
    assert [c["class"] for c in s["classes"]] == kinds, (s["classes"], kinds)
    for c in s["classes"]:
        own = sorted(abs(r[engine]["error"]) for r in runs
                     if r["class"] == c["class"] and r[engine]["step_time_s"] is not None)
        assert c["runs"] == len(own)
        assert abs(c["median_abs_error"] - statistics.median(own)) < 1e-12
        assert abs(c["p90_abs_error"] - own[-(-9 * len(own) // 10) - 1]) < 1e-12
    # 6.0% (5.10 / 4.99% now over 299 runs with delayed scaling's amax all-reduces; 5.13 / 5.02% with NVFP4's amax pass; 5.18 / 5.06% with MLPerf v3.0's and v3.1's GPT-3 attention read as
    # flash-attn 1.x and 2.0.8 (their 13 rows 7.9 / 3.5% from 14.4 / 5.5%); 5.33 / 5.21% before: NeMo 24.07's twelve FP8 H100 rows at 4.4 / 4.5% with
    # the launcher's FlashAttention-2 (7.9 / 7.8% and their small models 10-15% fast read as cuDNN's
    # attention), NeMo 24.03's long-sequence Llama 2 7B rows 5.7 / 5.8% since the context-parallel
    # exchange costs attention only its SMs (12.1 / 12.3% before, 128K-1M 17-26% slow);
    # 5.34 / 5.18% over 278 before,
    # with Megatron-Core's gradient buckets and FSDP's units each one NCCL call (grad_buckets); 5.53 / 5.34% before, with Blackwell Ultra's NVFP4 GEMM rate fitted on the
    # corpus and Megatron-Bridge 26.04.01's ten GB200 / GB300 rows; 5.62 / 5.42% over 268 before,
    # with MLPerf's NCCL block caps, gradient buckets and
    # NVLS off (nccl_max_ctas, grad_bucket_params, nccl_nvls; 5.85 / 5.53% before them): MLPerf
    # Training's 61 LLM runs joined at 7.8 / 6.8%, now 6.4 / 5.9%,
    # and the Blackwell clock refitted on them, 0.92 -> 0.87; 5.6% before them, gating 5.24 / 5.11%
    # over 207; 5.30 / 5.16% over 204 before call 48's MoE steps, 5.13 /
    # 4.98% before Megatron-Bridge's Qwen3-30B-A3B pair and
    # DeepSeek-V3 card joined; 6.0% before PyTorch's FP8 casts, FSDP's root module and the fp32
    # loss were counted (device call 41), 6.2% while TorchTitan's TP rows matched their
    # collectives against a layer's GEMMs together; 5.5% before TorchTitan's TP and
    # context-parallel rows joined: its async-TP rows and the 128K-256K CP rows run 12-34% fast;
    # docs/accuracy.md), above the issue's target of 5%. Leave-one-source-out 8.0%, the
    # target (7.24 / 6.99% now over 38 sources; 7.31 / 7.02% over 36 before NeMo's two; 7.78 / 7.61% over 28 sources, one of them the Qwen3-30B-A3B pair at
    # 24%; 7.37 / 7.13% before it, gated at 7.5%; 7.26 / 7.03% before call 42's and
    # 44's steps joined).
    assert s["overall"]["mean_abs_error"] <= 0.060, s["overall"]
    assert s["leave_one_source_out_mean_abs_error"] <= 0.080, s
    h200 = [x for x in s["sources"] if x["source"] == "clustersim-h200"][0]
    assert h200["runs"] >= 16 and h200["mean_abs_error"] <= 0.07, h200
    # Our H100 steps (device call 32, predicted before they ran; call 41's float8 steps, call 43's
    # MoE steps, call 44's full-recompute pair predicted before it ran, call 42's eight-layer
    # steps, call 48's MoE layers with one EP-16 GPU's experts, predicted before they ran): 1.83%
    # now (1.84% over 32 before call 48; 2.03% with call 48's compiled step paced at +11.8% by
    # Megatron-Core's MoE host time before call 49 measured this block's); largest 8.3%, call
    # 42's eight float8 layers with the caching allocator at the card's capacity (call 46: 16-36
    # retries, which move the step by -15 to +23%; 6% gated before they joined).
    h100 = [x for x in s["sources"] if x["source"] == "clustersim-h100"][0]
    assert h100["runs"] == 35 and h100["mean_abs_error"] <= 0.035, h100
    assert h100["max_abs_error"] <= 0.09, h100
    # The public runs alone (6.44% analytic, 6.27% simulator over 227, gated at 7.5%; 6.56 / 6.34%
    # over 206 before NeMo's two sources, 6.82 / 6.56% before the gradient buckets' calls; 7.00 / 6.73%
    # over 196 before Blackwell Ultra's NVFP4 rate and 26.04.01's rows; 7.32 / 6.89%
    # before MLPerf's NCCL settings; 7.06 / 6.86%
    # over 135 before MLPerf's rows; 6.84 / 6.62% and a
    # 7.3% gate before the Qwen3-30B-A3B pair and the DeepSeek-V3 card; 7.40 / 7.18% before call 41's
    # terms, gated at 7.7% then; 7.7% / 7.5% when TorchTitan's TP and CP rows joined; 7% gated
    # before NeMo AutoModel's MoE rows): our own steps must not hide a regression there.
    public = [abs(r[engine]["error"]) for r in runs if not r["source"].startswith("clustersim-")]
    assert len(public) >= 190 and sum(public) / len(public) <= 0.075, sum(public) / len(public)
    # Published memory (PyTorch's reserved peak) within 10% on our own H200 steps (at most 8.1%
    # now; gated at 20% before FSDP's root module was counted, 15.1% once) and 15% on our H100
    # steps (at most 14.5%: call 42's fused float8 layers, whose allocator at the card's
    # capacity frees its cache instead, +12.0% before the root was counted; -11.6% the compiled
    # MoE steps of call 43, whose allocator caches 16-19 GiB beyond their allocated peak; call
    # 48's eager MoE step -15.2 -> -10.8% with the root), and every run on the GPUs it ran on
    # but one of Meta's Llama 3 405B runs.
    for r in runs:
        if r["source"] in ("clustersim-h200", "clustersim-h100"):
            err = r["allocator_memory_per_gpu_bytes"] / r["published_memory_per_gpu_bytes"] - 1
            assert abs(err) < (0.10 if r["source"] == "clustersim-h200" else 0.15), (r["name"], err)
    unfit = sorted(r["name"] for r in runs if not r["fits"])
    # Meta's 8K-GPU layout: 32 micro-batches per pipeline under Megatron's interleaved
    # schedule hold 17.6 micro-batches beside the FP32 gradients (its not_modelled says why).
    assert unfit == ["llama3-t4-405b-8k-8192gpu"], unfit
assert d["gates_missed"] == []
# Contention measurements: their own rows and scores, never among the training runs.
coll = d["collective_runs"]
assert len(coll) >= 7 and len({c["source"] for c in coll}) >= 3, coll
assert not ({c["source"] for c in coll} & sources), "a contention source among the training runs"
for c in coll:
    assert c["metric"] in ("busbw", "busbw_ratio"), c
    for engine in ("analytic", "des"):
        e = c[engine]
        assert e["time_s"] is not None, (c["name"], engine, e.get("failure"))
        ref = c["published_time_ratio"] if c["metric"] == "busbw_ratio" else c["published_time_s"]
        assert abs(e["error"] - (e["time_s"] / ref - 1)) < 1e-12
    if c["metric"] == "busbw_ratio" and list(c["versus"]) == ["cluster.fabric.routing"]:
        # No contention in the analytic model: routing alone changes nothing there.
        assert abs(c["analytic"]["time_s"] - 1) < 1e-12, c
errs = [abs(c["des"]["error"]) for c in coll]
assert abs(d["collective_des"]["overall"]["max_abs_error"] - max(errs)) < 1e-12
# On ECMP fabrics the simulator's figure is the default seed's draw of the hash, and the draws'
# spread and median come beside it; the median's score is its own (a comparison of two
# collision-free fabrics has one figure, its own in both scores).
median_errs = []
for c in coll:
    h = c["des"].get("hash_draws")
    # ECMP on one side (Meta's E-ECMP, Tolly #225112): the file's own fabric, or its versus.
    with open(os.path.join(sys.argv[2], c["file"])) as f:
        hashed = re.search(r"^ *routing: *ecmp\b", f.read(), re.M) is not None or \
            "ecmp" in c["versus"].values()
    assert (h is not None) == hashed, c["name"]
    if h is None:
        median_errs.append(abs(c["des"]["error"]))
        continue
    assert h["count"] == 16 and h["min_time_s"] <= c["des"]["time_s"] <= h["max_time_s"], h
    assert h["min_time_s"] <= h["median_time_s"] <= h["max_time_s"], h
    ref = c["published_time_ratio"] if c["metric"] == "busbw_ratio" else c["published_time_s"]
    assert abs(h["median_error"] - (h["median_time_s"] / ref - 1)) < 1e-12, h
    median_errs.append(abs(h["median_error"]))
m = d["collective_des_median_hash_draw"]["overall"]
assert abs(m["max_abs_error"] - max(median_errs)) < 1e-12, (m, median_errs)
assert max(errs) <= 0.25, errs
# The corpus-fitted constants: the shipped value is the corpus's best, refitted per source.
for c in d["fitted_constants"]:
    assert abs(c["shipped"] - c["corpus_best"]) < 1e-9, c
    # Fitted on the runs it applies to, from at least three sources (each left out); the
    # simulator's contention constant on the contention sources' seven measurements.
    if c["name"].endswith("(simulator)"):
        assert len(c["without_source"]) >= 3 and c["runs"] >= 7, c
    else:
        assert len(c["without_source"]) >= 3 and c["runs"] >= 6, c
PY

# The contention table in the text report, and its gate when missed.
"$bin" accuracy "$corpus/contention" --engine des --max-collective-error 0.05 >"$tmp/coll.txt" 2>/dev/null
rc=$?
[ "$rc" -eq 1 ] || fail "a missed --max-collective-error exited $rc, want 1"
for want in "Contention: " "tolly-225112-h3c-64xh20-ecmp-16gib" "vs cluster.fabric.routing=adaptive" \
            "collectives, des:" "over 16 draws of the hash" "collectives, des at the median hash draw:" \
            "GATE MISSED: collectives (des): max |error|"; do
  grep -qF -- "$want" "$tmp/coll.txt" || fail "accuracy contention text lacks '$want'"
done
grep -qF "Accuracy on" "$tmp/coll.txt" && fail "a contention-only folder printed a training table"

# The published row the MoE host constant is read from (not a corpus run): the shipped constant
# reproduces it, both engines, within 2% (FrameworkConfig::kMegatronMoeLayerHostS).
"$bin" accuracy "$src/scenarios/measurements/public/moe-host" --json --max-error 0.02 \
  >"$tmp/host.json" 2>"$tmp/err.txt" || fail "the MoE host row is not reproduced within 2% ($(tail -2 "$tmp/err.txt"))"
python3 - "$tmp/host.json" <<'PY' || fail "moe-host --json content"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["runs"]) == 1 and d["runs"][0]["source"] == "mbridge-25.11-b200-moe-host", d["runs"]
for engine in ("analytic", "des"):
    assert abs(d["runs"][0][engine]["error"]) <= 0.02, d["runs"][0][engine]
PY

# A gate missed: exit 1, and the text names it.
"$bin" accuracy "$corpus" --source clustersim-h200 --engine analytic --max-error 0.001 \
  >"$tmp/gate.txt" 2>/dev/null
rc=$?
[ "$rc" -eq 1 ] || fail "a missed --max-error exited $rc, want 1"
grep -qF "GATE MISSED: analytic: max |error|" "$tmp/gate.txt" || fail "no GATE MISSED line"

# Text report of one source: its rows, the per-source table and the leave-one-out line.
"$bin" accuracy "$corpus" --source clustersim-h200 --engine analytic >"$tmp/h200.txt" 2>&1 ||
  fail "accuracy --source clustersim-h200 exited $?"
for want in "Accuracy on 37 published runs" "clustersim-h200-4.3b-s8k-b1-compiled" "analytic:" "leave one source out" \
            "published mem"; do
  grep -qF -- "$want" "$tmp/h200.txt" || fail "accuracy text lacks '$want'"
done
grep -qF " des " "$tmp/h200.txt" && fail "--engine analytic printed a des column"
# Our H200 steps depend on no corpus-fitted constant (A100 GEMMs, Blackwell's clock): each is
# named with its shipped value, not scored over no runs.
grep -qF "(no run scored here depends on it)" "$tmp/h200.txt" || fail "a constant with no run"
grep -qF "over 0 runs" "$tmp/h200.txt" && fail "a constant scored over no runs"

# Our steps' forward and backward, each against the model (validate/device/step_phases.py: the
# split a step's sum can hide; scenarios/measurements/README.md, call 35).
python3 "$src/validate/device/step_phases.py" "$bin" >"$tmp/phases.txt" 2>&1 ||
  fail "step_phases.py exited $? ($(tail -2 "$tmp/phases.txt"))"
python3 - "$tmp/phases.txt" <<'PY' || fail "the steps' forward or backward off the model"
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^all +(\d+) runs: forward mean \|error\| ([\d.]+)% .*?, backward ([\d.]+)%", text, re.M)
assert m, text[-800:]
runs, fwd, bwd = int(m.group(1)), float(m.group(2)), float(m.group(3))
# Forward 5.3% now (3.6% before device call 41's terms): the FSDP steps' forward is +6 to +14%
# where their backward is -11 to +8% and their step -4 to +7%. The FSDP casts and copies, the
# root module's gather and the fp32 loss's passes agree with the profiled kernel totals (calls
# 41 and 43), but FSDP2 runs each all-gather's copy-in on a stream of its own, beside the
# previous layer's compute, which the model puts in series: not measured apart.
assert runs >= 54 and fwd <= 6 and bwd <= 3.5, (runs, fwd, bwd)
PY

# The MLPerf corpus files' step times (tools/mlperf_step_times.py): a block's epoch_count in
# tokens (GPT-3 175B) or in samples, the first block (warm-up) left out of each run; NeMo's logged
# step times after the first evaluation, in a log whose lines carry the rank ("   0: ").
mlperf_log() {  # FILE BATCH SEQ COUNT MS_PER_BLOCK...: a log of one block per duration
  local file="$1" batch="$2" seq="$3" count="$4" t=1000 e=0
  shift 4
  printf ':::MLLOG {"time_ms": 0, "key": "global_batch_size", "value": %s, "metadata": {}}\n' "$batch" >"$file"
  printf ':::MLLOG {"time_ms": 0, "key": "max_sequence_length", "value": %s, "metadata": {}}\n' "$seq" >>"$file"
  for ms in "$@"; do
    printf ':::MLLOG {"time_ms": %s, "key": "block_start", "value": null, "metadata": {"first_epoch_num": %s, "epoch_count": %s}}\n' "$t" "$e" "$count" >>"$file"
    t=$((t + ms))
    printf ':::MLLOG {"time_ms": %s, "key": "block_stop", "value": null, "metadata": {"first_epoch_num": %s, "epoch_count": %s}}\n' "$t" "$e" "$count" >>"$file"
    e=$((e + count)); t=$((t + 5000))
  done
}
# 11 steps of 2304 x 2048 tokens; 10 steps of 1152 samples.
mlperf_log "$tmp/tokens.txt" 2304 2048 51904512 130000 110000 121000 99000
mlperf_log "$tmp/samples.txt" 1152 8192 11520 9000 6000 5000 7000
{
  echo '   0: :::MLLOG {"time_ms": 0, "key": "global_batch_size", "value": 64, "metadata": {}}'
  echo '   0: :::MLLOG {"time_ms": 1, "key": "tracked_stats", "value": {"train_step_time": 9.0}, "metadata": {"step": 1}}'
  echo '   0: :::MLLOG {"time_ms": 2, "key": "eval_stop", "value": null, "metadata": {}}'
  for v in 2.0 1.0 3.0 2.5 1.5; do
    echo "   0: :::MLLOG {\"time_ms\": 3, \"key\": \"tracked_stats\", \"value\": {\"train_step_timing in s\": $v}, \"metadata\": {}}"
  done
} >"$tmp/logged.txt"
python3 "$src/tools/mlperf_step_times.py" "$tmp/tokens.txt" "$tmp/samples.txt" "$tmp/logged.txt" \
  >"$tmp/mlperf.txt" 2>&1 || fail "mlperf_step_times.py exited $?"
grep -qF "4 blocks of 11 steps, the first 11.8182 s a step, the rest 10.0000 s (median; 9.0000-11.0000)" \
  "$tmp/mlperf.txt" || fail "tokens log: $(cat "$tmp/mlperf.txt")"
grep -qF "4 blocks of 10 steps, the first 0.9000 s a step, the rest 0.6000 s (median; 0.5000-0.7000)" \
  "$tmp/mlperf.txt" || fail "samples log: $(cat "$tmp/mlperf.txt")"
grep -qF "blocks: median of 2 runs 5.3000 s a step" "$tmp/mlperf.txt" || fail "$(cat "$tmp/mlperf.txt")"
grep -qF "logged step time 2.0000 s (median of 5 after the first evaluation)" "$tmp/mlperf.txt" ||
  fail "logged log: $(cat "$tmp/mlperf.txt")"
# A line that is not MLLOG JSON: exit 2, naming the file and line.
{ head -2 "$tmp/tokens.txt"; echo ':::MLLOG {"time_ms": 5, "key": '; } >"$tmp/broken.txt"
python3 "$src/tools/mlperf_step_times.py" "$tmp/broken.txt" >/dev/null 2>"$tmp/broken.err"
rc=$?
[ "$rc" -eq 2 ] || fail "mlperf_step_times.py on a broken line exited $rc, want 2"
grep -qF "broken.txt:3: not an MLLOG event" "$tmp/broken.err" || fail "$(cat "$tmp/broken.err")"

# Bad input: exit 2, a message naming the file.
expect_bad accuracy "not a directory" "$tmp/nowhere"
mkdir -p "$tmp/c"
cp "$src/scenarios/llama3-8b-8xh100.yaml" "$tmp/c/plain.yaml"
expect_bad accuracy "plain.yaml: no published: section" "$tmp/c"
sed -e '/^published:/,$d' "$corpus/clustersim-h200/clustersim-h200-134m-s2k-b8.yaml" >"$tmp/c/plain.yaml"
cat >>"$tmp/c/plain.yaml" <<'EOF'
published:
  source: x
  citation: y
  metric: tokens_per_s_per_gpu
  value: fast
EOF
expect_bad accuracy "published.value" "$tmp/c"
expect_bad accuracy "no corpus run of source nobody" "$corpus" --source nobody
expect_bad accuracy "--engine" "$corpus" --engine fast
# The by-kind table needs both engines over the whole corpus: refused before any run, no file.
expect_bad accuracy "--write-classes needs both engines" "$corpus" --engine analytic \
  --write-classes "$tmp/k.json"
expect_bad accuracy "--write-classes needs both engines" "$corpus" --source torchtitan \
  --write-classes "$tmp/k.json"
[ -e "$tmp/k.json" ] && fail "a refused --write-classes wrote its file"

finish accuracy_cli
