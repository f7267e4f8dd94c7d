"""Writes the accuracy-corpus files (scenarios/published/clustersim-h200/) for the real training
steps that validate/device/train_step.py measured on one H200.
Usage: python3 train_steps_to_corpus.py OUT_DIR STEPS.json [STEPS.json ...]
One YAML per measured configuration: a one-GPU H200 cluster, the decoder's dimensions, the
PyTorch recipe as framework keys, and the measured median step time and peak reserved memory
under published:."""
import json
import os
import sys

HEADER = """# A real training step on one H200, measured by clustersim (device call 9, {date}):
# validate/device/train_step.py run {name}, {file}.
# Llama-style decoder: {layers} layers, hidden {hidden}, {heads} heads (no GQA), SwiGLU MLP
# {ffn}, vocabulary {vocab} (untied head), RMSNorm (torch's fused rms_norm), rotary embedding
# computed in fp32 (cos/sin tables in fp32: q and k promoted), causal attention through
# scaled_dot_product_attention (cuDNN flash kernels), cross-entropy over the vocabulary.
# Recipe: fp32 parameters under bf16 autocast, fused AdamW (torch.optim.AdamW(fused=True)),
# {recompute}{compiled}. {parameters:,} parameters.
# Measured: median of {steps} timed steps (wall clock, CUDA-synchronised) after 3 warm-up steps:
# {step:.4f} s (forward {fwd:.4f} s, backward {bwd:.4f} s, optimizer {opt:.4f} s, each
# synchronised in two further steps); peak allocated {alloc:.2f} GiB, peak reserved {res:.2f} GiB.
# Framework keys: weights_in_fp32 and fp32_gradients (the parameters and their .grad are fp32);
# flash attention; no dropout; one GPU, so no communication.
"""


def yaml_for(run, file, date):
    name = run["name"]
    recompute = ("every block checkpointed (torch.utils.checkpoint, full recompute)"
                 if run["recompute"] == "full" else "no activation checkpointing")
    compiled = (", each block compiled (torch.compile per block, default mode)"
                if run["compiled"] else ", eager (no torch.compile)")
    text = HEADER.format(date=date, name=name, file=file, layers=run["layers"],
                         hidden=run["hidden"], heads=run["heads"], ffn=run["ffn_hidden"],
                         vocab=run["vocab"], recompute=recompute, compiled=compiled,
                         parameters=run["parameters"], steps=len(run["step_times_s"]),
                         step=run["step_time_s"], fwd=run["forward_s"], bwd=run["backward_s"],
                         opt=run["optimizer_s"], alloc=run["peak_allocated_bytes"] / 2**30,
                         res=run["peak_reserved_bytes"] / 2**30)
    text += f"""name: clustersim-h200-{name}
cluster:
  nodes: 1
  node:
    gpu: h200-sxm
    gpus_per_node: 1
workload:
  layers: {run['layers']}
  hidden: {run['hidden']}
  heads: {run['heads']}
  kv_heads: {run['kv_heads']}
  ffn_hidden: {run['ffn_hidden']}
  vocab: {run['vocab']}
  gated_ffn: true
  tied_embeddings: false
  normalization: rmsnorm
  position_embedding: rope
  seq_len: {run['seq_len']}
  global_batch: {run['micro_batch']}
  micro_batch: {run['micro_batch']}
  precision: bf16
  framework:
    attention: flash
    kernels: {'compiled' if run['compiled'] else 'eager'}
    loss_input: autocast       # F.cross_entropy on the 16-bit logits inside autocast (train_step.py)
    weights_in_fp32: true
    fp32_gradients: true
  parallelism:
    tp: 1
    pp: 1
    dp: 1
    recompute: {run['recompute']}
published:
  source: clustersim-h200
  citation: "clustersim device call 9, validate/device/train_step.py, run {name}
    (scenarios/measurements/call9/{file})"
  metric: step_time
  value: {run['step_time_s']:.5f}s
  memory_per_gpu: {run['peak_reserved_bytes']}B
"""
    return f"clustersim-h200-{name}.yaml", text


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        data = json.load(open(path))
        for run in data["runs"]:
            if "error" in run:
                continue
            fname, text = yaml_for(run, os.path.basename(path), "2026-12-01")
            with open(os.path.join(out, fname), "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
