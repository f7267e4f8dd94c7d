// The kernels of a transformer training step on one GPU, timed: one decoder layer's GEMMs,
// attention and memory-bound kernels for one micro-batch (TP-local shapes), and what each
// pipeline stage runs per micro-batch (its layers, the embedding on the first, the output head
// and the loss on the last). Units: seconds. Pure functions of the workload and ComputeParams;
// the analytic step model and the simulator both take their compute from here.
#pragma once

#include <vector>

#include "models/compute_model.h"
#include "models/scenario.h"

namespace clustersim::models {

// The weight GEMMs beside which TP communication overlap (FrameworkConfig::tp_comm_overlap) can
// hide one TP block's collectives: Transformer Engine's userbuffers and PyTorch's async TP fuse a
// collective with the GEMM it feeds or drains, never with another block's (Transformer Engine's
// ub_overlap_ag / ub_overlap_rs / ub_bulk_* per linear; PyTorch's fused_all_gather_matmul and
// fused_matmul_reduce_scatter). A block is the attention, or the MLP (dense, or a MoE layer's
// shared experts): its input gathered for its column-parallel GEMMs, its output reduce-scattered
// from its row-parallel one. Summed over a stage's layers; seconds per micro-batch.
struct TpBlockGemms {
  double blocks = 0;               // occurrences (a MoE layer without shared experts has no MLP's)
  double gathered_forward_s = 0;   // what the input's gather feeds (QKV; the MLP's up and gate)
  double reduced_forward_s = 0;    // what the output's reduce-scatter drains (out; down)
  double reduced_dgrad_s = 0;      // that GEMM's data gradient: what the output gradient's gather feeds
  double gathered_backward_s = 0;  // the gathered GEMMs' data and weight gradients
  double gathered_dgrad_s = 0;     // of them, the data gradients: what the input's regather runs
                                   // beside (the weight gradients: the input gradient's reduction)
  TpBlockGemms& operator+=(const TpBlockGemms& o);
  TpBlockGemms scaled(double f) const;
};
struct TpGemms {
  TpBlockGemms attention, mlp;
  TpGemms& operator+=(const TpGemms& o) {
    attention += o.attention;
    mlp += o.mlp;
    return *this;
  }
  TpGemms scaled(double f) const { return {attention.scaled(f), mlp.scaled(f)}; }
};

// One layer, one micro-batch, forward and backward (backward excludes recomputation).
struct LayerKernels {
  // QKV, attention output, MLP up (+ gate) and down projections. Backward runs each shape's
  // data gradient and weight gradient (reduction over the tokens), timed separately.
  double gemm_forward_s = 0;
  double gemm_backward_s = 0;
  // The attention core. Flash: one fused kernel each way (compute_model.h attention_time).
  // Unfused: QK^T and AV as batched GEMMs writing and reading the s x s scores, with the
  // fused scale-mask-softmax and the dropout of the probabilities between them (Megatron-LM
  // before 2022; Korthikanti et al. 2022 sec. 4.1 names the 5 a s^2 b bytes they store).
  double attention_forward_s = 0;
  double attention_backward_s = 0;
  // Memory-bound kernels at the achievable HBM rate (bytes read + written): the two norms,
  // the two residual adds (with dropout: bias-dropout-add, writing its 1-byte mask), the MLP
  // activation (GeLU: read f, write f; SwiGLU: read 2f, write f), rotary embedding of Q and K,
  // and with unfused attention the context's transpose back to [s, b, h]. Norms and residual
  // adds run on the sequence-parallel shard. Backward moves twice the forward's bytes (each
  // kernel's backward reads the output gradient and its saved inputs, writes input gradients).
  double memory_forward_s = 0;
  double memory_backward_s = 0;
  // The forward GEMMs op-level selective checkpointing recomputes: of TorchTitan's seven
  // matmuls (wq, wk, wv, wo, w1, w3, w2) every other one, wk, wo and w3: the K share of the
  // fused QKV GEMM, the output projection and the up half of the gated up GEMM.
  double gemm_recomputed_by_op_s = 0;
  // Parts of the forward that selective recomputation's modules repeat (recompute_modules):
  // GEMMs of MLA's up-projections, of the MLP (dense: up and down; MoE: router and routed
  // experts) and of the shared experts; memory-bound time of the norms, of the MLP's
  // activation and of a MoE layer's token permutation.
  double gemm_mla_up_forward_s = 0;
  double gemm_mlp_forward_s = 0;
  double gemm_shared_forward_s = 0;
  double memory_norm_forward_s = 0;
  double memory_act_forward_s = 0;
  double memory_permute_forward_s = 0;
  // What full recomputation leaves out (FrameworkConfig::recompute_stops_early): PyTorch's
  // non-reentrant checkpoint stops recomputing once the tensors the backward saved are back, so
  // a dense block's last GEMM, the MLP's down projection (whose output only the residual add
  // reads, and that add saves nothing), runs once, and so do the add and (autocast) the down
  // weight's cast: GEMM and memory-bound seconds. 0 where the whole forward is repeated.
  double full_recompute_skipped_gemm_s = 0;
  double full_recompute_skipped_memory_s = 0;
  // Of memory_forward_s, the forward's layout copies around TP collectives on batch-first
  // activations (FrameworkConfig::batch_first_layout), which op-level checkpointing does not
  // repeat: it keeps the reduce-scatters' outputs and gathers the inputs again (counted with
  // sp_input_regather in memory_backward_s).
  double sp_copy_forward_s = 0;
  // Of memory_forward_s, PyTorch FSDP's casts and copies of the gathered weights, which no
  // recomputation repeats: the backward gathers the weights before it (counted in
  // memory_backward_s) and the recomputed forward uses them.
  double fsdp_forward_s = 0;
  TpGemms tp_gemms;  // the GEMMs each TP block's collectives can hide behind
  bool moe = false;  // a mixture-of-experts layer
  // Whether the modules recompute this layer's whole MLP (mlp for a dense layer, moe for a MoE
  // one).
  bool recomputes_whole_mlp(unsigned modules) const {
    return (modules & (moe ? kRecomputeMoe : kRecomputeMlp)) != 0;
  }

  double forward_s() const { return gemm_forward_s + attention_forward_s + memory_forward_s; }
  double backward_s() const { return gemm_backward_s + attention_backward_s + memory_backward_s; }
  // What recomputation adds to the backward: full repeats the whole forward, selective the
  // modules given (default the attention core, Korthikanti et al. 2022), op-level selective
  // every memory-bound kernel and every other matmul (not attention).
  double recompute_s(Recompute r, unsigned modules = kRecomputeCoreAttn) const;
  // Of it, the GEMMs (the weight GEMMs recomputation repeats: what TP overlap and the power
  // model count as GEMM time).
  double recompute_gemm_s(Recompute r, unsigned modules = kRecomputeCoreAttn) const;
};

// The vocabulary-parallel cross-entropy's HBM traffic per logit, bytes, beyond the GEMM writing
// the logits and the forward's read of them (FrameworkConfig::loss_kernel). Forward, Megatron's
// steps (megatron/core/tensor_parallel/cross_entropy.py): an fp32 copy written (4), its max
// (read 4), the max subtracted in place (read + write 8), exponentiated in place (8), summed
// (read 4), divided by the sum in place (8): 36 one kernel per step (unfused); the three
// jit-fused functions of fused_cross_entropy.py write the copy beside the max (4), subtract,
// exponentiate and sum in one pass (8) and divide in another (8): 20 (fused); Transformer
// Engine's Triton kernels (transformer_engine/pytorch/triton/cross_entropy.py, 2.1-2.17) read
// the logits a second time and write the gradient over them in 16 bits (2 + 2: 4).
// Backward: Megatron's steps scale the fp32 gradient by the loss's in place (read + write 8)
// and cast it to 16 bits for the GEMM (read 4, write 2): 14; Transformer Engine scales its
// 16-bit gradient in place (2 + 2: 4). (Transformer Engine 2.18, 2026-07, keeps an fp32
// gradient instead: 6 and 14; not told apart.)
double loss_forward_bytes_per_logit(LossKernel k);
double loss_backward_bytes_per_logit(LossKernel k);

// Whether a MoE layer adds its experts' output biases one local expert at a time in eager
// PyTorch (Megatron-Core's experts, FrameworkConfig::expert_bias_per_expert): a MoE model with
// linear biases, on fused (Megatron) kernels, with the per-expert path in force.
bool per_expert_bias_path(const WorkloadConfig& workload);
// The host's time that path adds to a MoE layer's launch, per micro-batch, forward and backward
// (measured in device call 34: a fixed part and one per local expert); 0 without it.
double expert_bias_host_s(const WorkloadConfig& workload);

// One layer of the model. moe_layer: a mixture-of-experts layer (ModelSpec::moe), whose MLP is
// the router (hidden x experts), the routed experts this GPU holds (experts / ep of them, each a
// gated MLP of expert_ffn_hidden over the tokens routed to it: the GPU's sequence-parallel
// shard x top_k x the busiest GPU's share, ExpertRouting) and the shared experts (TP-split like
// the dense MLP); its memory-bound kernels add the tokens' permutation into expert order and
// back (read + write of top_k x hidden per token each way) and the experts' activation.
// Attention: MLA runs its query and key/value down projections unsplit (replicated over TP) and
// its up projections and the output projection TP-split; the attention core has qk_dim = 192
// and v_dim = 128 per head.
LayerKernels layer_kernels(const GpuSpec& gpu, const WorkloadConfig& workload,
                           const ComputeParams& params, bool moe_layer = false);

// Of each stage's layers, how many are mixture-of-experts layers (the model's first
// dense_layers layers, in model order: the first chunk of every stage before any second chunk,
// keep the dense MLP); moe_layers_of_stage for one stage.
std::vector<int> moe_layers_of_stages(const WorkloadConfig& workload);
int moe_layers_of_stage(const WorkloadConfig& workload, int stage);

// The MoE layers the collective list counts the expert all-to-alls for: the stage with the most
// of them, at most layers_per_stage (as the TP and CP calls count ceil(layers / pp) layers).
int moe_layers_per_stage(const WorkloadConfig& workload);

// One pipeline stage's work per micro-batch, all its model chunks together.
struct StageCompute {
  int stage = 0;
  int layers = 0;
  double forward_s = 0;
  double backward_s = 0;  // including recomputation
  // The layers' weight GEMMs, backward with those recomputation repeats: what TP overlap hides
  // the layers' collectives behind (not the output head's).
  double gemm_forward_s = 0;
  double gemm_backward_s = 0;
  double attention_forward_s = 0;  // the attention cores (what ring attention hides behind)
  double attention_backward_s = 0;
  TpGemms tp_gemms;  // of the layers' weight GEMMs, those each TP block's collectives hide behind
  // Of forward + backward, the time in tensor-core-bound kernels (weight and head GEMMs, flash
  // attention, with recomputation): what draws the power that sets the clock (power_clock).
  double tensor_s = 0;
  // Of forward + backward, the time the GPU waits for the host to launch the MoE layers'
  // kernels (FrameworkConfig::moe_layer_host_s): nothing runs on the GPU then.
  double host_wait_s = 0;
  // Of forward + backward, Transformer Engine's synchronous amax all-reduces (delayed FP8
  // scaling; step_model.h amax_reduction_s), set by predict_step.
  double amax_reduction_s = 0;
  double total_s() const { return forward_s + backward_s; }
};

// Model chunks per stage: virtual_stages under the interleaved schedule, else 1.
int chunks_per_stage(const WorkloadConfig& workload);

// Megatron-LM's interleaved 1F1B (schedules.py, micro-batch groups of pp, its default
// microbatch_group_size_per_vp_stage): a stage runs 2 (pp - stage - 1) + (chunks - 1) pp
// warm-up forward passes before its first backward, never more than its micro_batches x chunks,
// and all of them when micro_batches = pp (all_warmup_microbatches); then one forward before
// each backward. Pass k (forward or backward, counted apart) runs model chunk (k mod pp chunks)
// / pp, the backwards in mirror order (chunks - 1 minus that), of micro-batch
// (k / (pp chunks)) pp + k mod pp (get_model_chunk_id, get_microbatch_id_in_model_chunk).
int interleaved_warmup_passes(int pp, int stage, int micro_batches, int chunks);
struct InterleavedPass {
  int chunk = 0;
  int micro_batch = 0;
};
InterleavedPass interleaved_pass(int pass, int pp, int chunks, bool forward);

// Layers on each pipeline stage: layers / pp each when that divides (Megatron's split); under
// Llama 3's layout ((layers + 2) divisible by pp x virtual_stages but layers not) the embedding
// takes a layer's slot on the first stage and the output head one on the last (Llama Team 2024
// sec. 3.3.2, Megatron's account_for_embedding/loss_in_pipeline_split); with
// first_stage_layers and last_stage_layers given, those on the first and last stage and the
// rest split evenly over the middle ones; with a pipeline_layout, the layers of its chunks c pp + s
// on stage s. The multi-token-prediction layers count on the last stage. REQUIRES: a workload the
// scenario loader accepted.
std::vector<int> layers_of_stages(const WorkloadConfig& workload);

// The layers of each model chunk of `stage`, in the order the chunks run: under the interleaved
// schedule virtual_stages chunks (Megatron's layout: chunk c of stage s holds model chunk
// c pp + s), else one. Under Llama 3's layout the first chunk of the first stage holds only the
// embedding and the last chunk of the last stage only the output head and loss (Llama Team 2024
// sec. 3.3.2): each a layer fewer than the others; a pipeline_layout gives each chunk's own.
// Sums to layers_of_stages(workload)[stage].
std::vector<int> layers_of_chunks(const WorkloadConfig& workload, int stage);

// Of a MoE layer's host time, the share spent launching its forward (the rest launches the
// backward, which runs two kernels for most forward ones: data and weight gradients, and the
// backward of each permutation, as the FLOPs split 1 : 2).
inline constexpr double kHostForwardShare = 1.0 / 3;

// `params` with the attention ceilings the framework's kernel reaches: FlashAttention-2's
// (flash2_params) for flash2, the GPU's native kernels' otherwise.
ComputeParams attention_kernel_params(const ComputeParams& params, AttentionKernel kernel);

// Every stage's compute per micro-batch: its layers, plus the embedding lookup on the first and
// the output head GEMM with the fp32 softmax cross-entropy over the vocabulary (Megatron's
// vocab-parallel loss: logits read and an fp32 copy written, max and sum passes, the gradient
// written back) on the last. A MoE layer lasts, each way, at least the host's time to launch it
// (FrameworkConfig::moe_layer_host_s, kHostForwardShare of it forward; full recomputation
// launches the forward again in the backward): the host runs ahead of the GPU while the
// kernels are longer than their launches and holds it back when they are shorter (small
// experts, one sequence per micro-batch).
std::vector<StageCompute> stage_compute(const GpuSpec& gpu, const WorkloadConfig& workload,
                                        const ComputeParams& params);

}  // namespace clustersim::models
