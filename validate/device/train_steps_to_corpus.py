"""Writes the accuracy-corpus files (scenarios/published/clustersim-h200/, clustersim-h100/) for the
real training steps that validate/device/train_step.py measured on one H200 or H100.
Usage: python3 train_steps_to_corpus.py OUT_DIR STEPS.json [STEPS.json ...]
One YAML per measured configuration: a one-GPU H200 cluster, the decoder's dimensions, the
PyTorch recipe as framework keys, and the measured median step time and peak reserved memory
under published:. The GPU is the file's "device" (torch.cuda.get_device_name)."""
import json
import os
import sys

HEADER = """# A real training step on one {gpu_name}, measured by clustersim (device call {call}, {date}):
# validate/device/train_step.py run {name}, {file}.
# {architecture}
# Recipe: {recipe}, {recompute}{compiled}. {parameters:,} parameters.
# Measured: median of {steps} timed steps (wall clock, CUDA-synchronised) after 3 warm-up steps:
# {step:.4f} s (forward {fwd:.4f} s, backward {bwd:.4f} s, optimizer {opt:.4f} s, each
# synchronised in two further steps); peak allocated {alloc:.2f} GiB, peak reserved {res:.2f} GiB.
# {keys}
"""

LLAMA = """Llama-style decoder: {layers} layers, hidden {hidden}, {heads} heads ({gqa}), SwiGLU MLP
# {ffn}, vocabulary {vocab} (untied head), RMSNorm (torch's fused rms_norm), fused QKV and
# gate-up projections, rotary embedding computed in fp32 (cos/sin tables in fp32: q and k
# promoted), causal attention through scaled_dot_product_attention (cuDNN flash kernels),
# cross-entropy over the vocabulary."""
TITAN = """Llama-style decoder as TorchTitan's model code has it (torchtitan/models/llama/model.py
# and norms.py at 9dec370): {layers} layers, hidden {hidden}, {heads} heads ({gqa}, repeat_kv by
# expand + reshape), separate wq/wk/wv/wo and w1/w2/w3 projections, SwiGLU MLP {ffn},
# vocabulary {vocab} (untied head), TorchTitan's RMSNorm (on an fp32 copy, cast back, times the
# weight), rotary embedding as fp32 complex products, causal attention through
# scaled_dot_product_attention (cuDNN flash kernels), cross-entropy over the vocabulary."""
# The qwen3-30b-a3b preset's experts and top_k (models/catalog.cc; Hugging Face config.json).
QWEN3_30B_EXPERTS_TOP_K = (128, 8)
MOE = """Qwen3-30B-A3B's mixture-of-experts layer as TorchTitan's MoE code runs it
# (train_step.py's MoEBlock): {layers} of its 48 layers, hidden {hidden}, {heads} heads of
# {head_dim} ({gqa}), {experts} experts of {ffn} (SwiGLU), top {top_k}, vocabulary {vocab} (untied
# head), TorchTitan's RMSNorm, fp32 complex rotary, causal SDPA (cuDNN flash kernels); the router's
# softmax and top-k in fp32, the routed copies sorted, gathered and scaled by their scores, the
# experts as torch._grouped_mm, the outputs scatter-added back; routing balanced (copy j of
# token i to expert (i top_k + j) mod experts)."""
GPT = """GPT-style decoder as MosaicML's MPT has it: {layers} layers, hidden {hidden}, {heads} heads,
# a 4h GELU MLP ({ffn}) and linears with biases, {norm} with biases, learned positions added
# to the token embedding, vocabulary {vocab} with the output head tied to the embedding, causal
# attention through scaled_dot_product_attention (cuDNN flash kernels), cross-entropy over the
# vocabulary."""
AUTOCAST = ("fp32 parameters under bf16 autocast, fused AdamW (torch.optim.AdamW(fused=True))")
FSDP = ("FSDP2 on a one-rank process group (fully_shard per block and on the model,\n"
        "# MixedPrecisionPolicy: bf16 parameters, fp32 gradient reduction; no autocast; the logits\n"
        "# cast to fp32 for the loss), AdamW(foreach=True) on the fp32 shards")
KEYS_AUTOCAST = ("Framework keys: weights_in_fp32 and fp32_gradients (the parameters and their .grad "
                 "are fp32);\n# flash attention; no dropout; one GPU, so no communication.")
FLOAT8 = ("\n# Float8: the blocks' linears as torchao's Float8Linear computes them (train_step.py's Float8MM:\n"
          "# tensorwise dynamic scaling, e4m3 operands forward, e5m2 output gradients, torch._scaled_mm,\n"
          "# 16-bit outputs); the output head in bf16.")
KEYS_FSDP = ("Framework keys: zero 3 with weights_in_fp32 and fp32_gradients (FSDP's fp32 shards "
             "and fp32\n# reduction); flash attention; no dropout; one GPU: the all-gathers and "
             "reduce-scatters are copies.")


# torch.cuda.get_device_name -> (the catalog's GPU, the corpus source, the name in the header).
GPUS = {"H200": ("h200-sxm", "clustersim-h200", "H200"),
        "H100 80GB HBM3": ("h100-sxm", "clustersim-h100", "H100 SXM")}


def gpu_of(device):
    for key, value in GPUS.items():
        if key in device:
            return value
    raise SystemExit("no catalog GPU for device %r" % device)


def yaml_for(run, file, date, call, device="NVIDIA H200"):
    name = run["name"]
    gpu, source, gpu_name = gpu_of(device)
    arch = run.get("architecture", "llama")
    fsdp = run.get("recipe", "autocast") == "fsdp"
    recompute = {"full": "every block checkpointed (torch.utils.checkpoint, full recompute)",
                 "op": "\n# TorchTitan's op-level selective checkpointing per block (attention's output "
                       "and every\n# other matmul's saved, the rest recomputed)"}.get(
                     run["recompute"], "no activation checkpointing")
    compiled = ((",\n# each block compiled (torch.compile per block, fullgraph, after the checkpoint "
                 "wrapper and\n# before fully_shard: TorchTitan's order)" if fsdp else
                 ", each block compiled (torch.compile per block, default mode)")
                if run["compiled"] else ", eager (no torch.compile)")
    kv = run.get("kv_heads", run["heads"])
    dims = dict(layers=run["layers"], hidden=run["hidden"], heads=run["heads"],
                ffn=run["ffn_hidden"], vocab=run["vocab"],
                gqa="no GQA" if kv == run["heads"] else "GQA, %d key-value heads" % kv)
    llama = arch in ("llama", "titan", "moe")
    norm = ("llm-foundry's low_precision_layernorm (computed in bf16)" if arch == "mpt"
            else "torch's nn.LayerNorm (fp32 under autocast)")
    if arch == "moe":
        dims.update(experts=run["experts"], top_k=run["top_k"], head_dim=run["head_dim"])
    architecture = {"llama": LLAMA, "titan": TITAN, "moe": MOE}.get(arch, GPT).format(
        norm=norm, **dims)
    if run.get("float8_linears", False):
        architecture += FLOAT8
    text = HEADER.format(gpu_name=gpu_name, call=call, date=date, name=name, file=file, architecture=architecture,
                         recipe=FSDP if fsdp else AUTOCAST, keys=KEYS_FSDP if fsdp else KEYS_AUTOCAST,
                         recompute=recompute, compiled=compiled,
                         parameters=run["parameters"], steps=len(run["step_times_s"]),
                         step=run["step_time_s"], fwd=run["forward_s"], bwd=run["backward_s"],
                         opt=run["optimizer_s"], alloc=run["peak_allocated_bytes"] / 2**30,
                         res=run["peak_reserved_bytes"] / 2**30)
    loss_input = ("fp32         # logits.float() before F.cross_entropy (train_step.py, FSDP recipe)"
                  if fsdp else
                  "autocast       # F.cross_entropy on the 16-bit logits inside autocast (train_step.py)")
    zero = "\n    zero: 3" if fsdp else ""
    recompute_key = {"op": "selective-op"}.get(run["recompute"], run["recompute"])
    biases = "" if llama else "\n  linear_biases: true"
    optimizer = "\n    optimizer_kernel: foreach   # AdamW(foreach=True)" if fsdp else ""
    if arch == "mpt":
        optimizer += "\n    low_precision_norm: true   # llm-foundry's low_precision_layernorm"
    if arch in ("titan", "moe"):
        optimizer += "\n    norm_kernel: fp32-ops   # TorchTitan's RMSNorm: fp32 tensor ops"
    if arch == "llama":
        optimizer += "\n    projections: fused     # train_step.py's Block: fused QKV and gate-up projections"
    float8 = run.get("float8_linears", False)
    precision = "fp8                # float8 linears (train_step.py's Float8MM)" if float8 else "bf16"
    if float8:
        optimizer += ("\n    fp8_recipe: tensorwise   # torchao's dynamic per-tensor scaling"
                      "\n    fp8_param_gather: false  # weights cast in each forward and backward")
    if arch == "moe":
        # The preset's 128 experts and top 8 unless the run had others (one EP-16 GPU's 8 local
        # experts: call 48).
        local = ("" if (run["experts"], run["top_k"]) == QWEN3_30B_EXPERTS_TOP_K else
                 f"experts: {run['experts']}, top_k: {run['top_k']}, ")
        dims_yaml = (f"  model: qwen3-30b-a3b           # its preset: 128 experts of 768, top 8, heads of 128\n"
                     f"  layers: {run['layers']}\n"
                     f"  moe: {{{local}imbalance: 1, routing: consecutive}}   # balanced (MoEBlock)")
    else:
        dims_yaml = (f"  layers: {run['layers']}\n  hidden: {run['hidden']}\n  heads: {run['heads']}\n"
                     f"  kv_heads: {run['kv_heads']}\n  ffn_hidden: {run['ffn_hidden']}\n"
                     f"  vocab: {run['vocab']}\n  gated_ffn: {'true' if llama else 'false'}\n"
                     f"  tied_embeddings: {'false' if llama else 'true'}{biases}\n"
                     f"  normalization: {'rmsnorm' if llama else 'layernorm'}\n"
                     f"  position_embedding: {'rope' if llama else 'learned'}")
    text += f"""name: {source}-{name}
cluster:
  nodes: 1
  node:
    gpu: {gpu}
    gpus_per_node: 1
workload:
{dims_yaml}
  seq_len: {run['seq_len']}
  global_batch: {run['micro_batch']}
  micro_batch: {run['micro_batch']}
  precision: {precision}
  framework:
    attention: flash
    kernels: {'compiled' if run['compiled'] else 'eager'}
    loss_input: {loss_input}{optimizer}
    weights_in_fp32: true
    fp32_gradients: true
  parallelism:
    tp: 1
    pp: 1
    dp: 1{zero}
    recompute: {recompute_key}
published:
  source: {source}
  citation: "clustersim device call {call}, validate/device/train_step.py, run {name}
    (scenarios/measurements/call{call}/{file})"
  metric: step_time
  value: {run['step_time_s']:.5f}s
  memory_per_gpu: {run['peak_reserved_bytes']}B
"""
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return f"{source}-{name}.yaml", text


# The device call and date of each measurement file (scenarios/measurements/callN/).
CALLS = {"train-steps-eager.json": (9, "2026-12-01"), "train-steps-compiled.json": (9, "2026-12-01"),
         "train-steps-gpt.json": (20, "2026-12-04"), "train-steps-memory.json": (21, "2026-12-04"),
         "train-steps-layers.json": (22, "2026-12-04"),
         "train-steps-llama3-8b-fused.json": (23, "2026-12-04"),
         "train-steps-llama3-8b-titan.json": (23, "2026-12-04"),
         "train-steps-h100-a.json": (32, "2026-12-05"), "train-steps-h100-b.json": (32, "2026-12-05"),
         "train-steps-float8-h100.json": (41, "2026-12-06"),
         "train-steps-8l-h100.json": (42, "2026-12-06"),
         "train-steps-moe-h100.json": (43, "2026-12-06"),
         "train-steps-full-h100.json": (44, "2026-12-06"),
         "train-steps-moe8e-h100.json": (48, "2026-12-07")}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    only = set(os.environ.get("ONLY", "").split(",")) - {""}
    for path in sys.argv[2:]:
        data = json.load(open(path))
        call, date = CALLS.get(os.path.basename(path), (9, "2026-12-01"))
        for run in data["runs"]:
            if "error" in run or (only and run["name"] not in only):
                continue
            fname, text = yaml_for(run, os.path.basename(path), date, call,
                                   data.get("device", "NVIDIA H200"))
            with open(os.path.join(out, fname), "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
