// A decoder-only transformer's arithmetic: parameters, FLOPs per token, memory per GPU under
// TP/SP/PP/DP/CP/ZeRO/recompute, and the collectives each parallel dimension issues per step.
// Units: parameter counts, FLOPs, bytes. Pure functions of ModelSpec / WorkloadConfig; the
// collectives are described here and timed by the step model with the collective model.
// Sources: Narayanan et al. 2021 (Megatron-LM FLOPs), Korthikanti et al. 2022 (activation
// memory, sequence parallelism, selective recompute), Rajbhandari et al. 2020 (ZeRO).
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "models/catalog.h"
#include "models/collective_model.h"
#include "models/scenario.h"

namespace clustersim::models {

// Weights, gradients and activations are kept in 16 bits under mixed precision (bf16, fp16,
// and fp8, whose training keeps bf16 copies: Transformer Engine), in 32 bits for fp32/tf32.
bool mixed_precision(Precision p);
double working_bytes(Precision p);
// MXFP8 or NVFP4: block scales along each GEMM's reduction, so every tensor is quantized along
// both of its dimensions (the forward and the gradient GEMMs reduce over different ones).
bool block_scaled(const WorkloadConfig& w);
// fp8_param_gather / fp4_param_gather under quantized training: ZeRO/FSDP holds and gathers the
// quantized weights themselves.
bool gathers_quantized_weights(const WorkloadConfig& w);
// SP with framework.sp_input_regather: each column-parallel linear keeps its input as the sequence
// shard and all-gathers it again in the backward for its weight gradient.
bool sp_regathers_inputs(const WorkloadConfig& w);
// PyTorch FSDP's root module (fully_shard on the model: the embedding, the final norm and the
// output head) on a pipeline stage's GPU, parameters: vocab x hidden / tp for each embedding
// matrix the stage holds (the embedding on the first, an untied head on the last); 0 unless
// PyTorch FSDP in mixed precision, which gathers and casts it as it does the blocks.
double fsdp_root_parameters(const WorkloadConfig& w, int stage);
// Bytes per element of a tensor quantized for a GEMM (0 when the workload is not quantized):
// fp8 1 (MXFP8 1 + 1/32: an E8M0 scale per 32), NVFP4 0.5625.
double quantized_tensor_bytes(const WorkloadConfig& w);
// Bytes per parameter of a quantized training's working copy of its weights (0 when the
// workload is not quantized): per-tensor and blockwise fp8 1; block-scaled formats scale along
// the reduction, which the forward and the input-gradient GEMMs take along different
// dimensions of the weight, so Transformer Engine keeps both quantizations: MXFP8 2 x (1 +
// 1/32), NVFP4 2 x 0.5625 (what Megatron's MXFP8 weight all-gather moves into the 2-byte
// gradient buffer it reuses: reuse_grad_buf_for_mxfp8_param_ag).
double quantized_weight_bytes(const WorkloadConfig& w);

// Weights by role. Biases are not counted (Llama has none; GPT-3's are ~0.01% of it).
struct ParameterCount {
  double embedding = 0;            // vocab x hidden (input)
  double output_head = 0;          // vocab x hidden; 0 when tied to the embedding
  // Q: h x heads*qk_dim, K, V: h x kv_heads*head_dim each, O: heads*v_dim x h. MLA: the query
  // down (h x q_lora) and up (q_lora x heads*qk_dim) projections, the joint KV down projection
  // with the rotary key (h x (kv_lora + rope)), the KV up projection (kv_lora x heads*(nope +
  // v)) and O.
  double attention_per_layer = 0;
  double ffn_per_layer = 0;        // the dense MLP: gated 3 h x ffn; else 2
  double norms_per_layer = 0;      // two norm weight vectors of h (MLA: + its latents' norms)
  double final_norm = 0;           // h
  int layers = 0;
  // Mixture of experts: moe_layers of the layers replace the dense MLP by `experts` routed
  // experts (`expert` weights each, top_k of them per token), shared experts and a router.
  int moe_layers = 0;
  int experts = 0;
  int top_k = 0;
  double expert = 0;            // one routed expert's MLP
  double shared_per_layer = 0;  // the shared experts of one MoE layer
  double router_per_layer = 0;  // h x experts

  int dense_layers() const { return layers - moe_layers; }
  // The weights of one dense layer's matmuls (what 2 x params FLOPs per token multiplies).
  double matmul_per_layer() const { return attention_per_layer + ffn_per_layer; }
  // One MoE layer's MLP weights: every expert, and what one token multiplies.
  double moe_mlp_per_layer() const {
    return experts * expert + shared_per_layer + router_per_layer;
  }
  // The output head's weights on the last of `pp` stages: its own, or with tied embeddings a
  // copy of the embedding there when the pipeline puts the two on different stages.
  double head_on_last_stage(int pp) const {
    return output_head > 0 ? output_head : (pp > 1 ? embedding : 0);
  }
  double moe_active_mlp_per_layer() const {
    return top_k * expert + shared_per_layer + router_per_layer;
  }
  double total() const {
    return embedding + output_head + layers * (attention_per_layer + norms_per_layer) +
           dense_layers() * ffn_per_layer + moe_layers * moe_mlp_per_layer() + final_norm;
  }
  // What one token passes through (the model cards' "activated parameters").
  double active() const {
    return embedding + output_head + layers * (attention_per_layer + norms_per_layer) +
           dense_layers() * ffn_per_layer + moe_layers * moe_active_mlp_per_layer() + final_norm;
  }
  // Matmul weights one token multiplies in all layers (not the output head).
  double active_layer_matmuls() const {
    return layers * attention_per_layer + dense_layers() * ffn_per_layer +
           moe_layers * moe_active_mlp_per_layer();
  }
};

ParameterCount count_parameters(const ModelSpec& model);

// Forward FLOPs per token of a sequence of seq_len tokens (the training figures follow).
struct FlopsPerToken {
  double dense_forward = 0;      // 2 x (layer matmul weights + the output head's vocab x hidden)
  // QK^T and AV: 2 s heads (qk_dim + v_dim) per layer (4 s h for ordinary attention), halved
  // when causal.
  double attention_forward = 0;
  double head_forward = 0;       // the part of dense_forward that is the output head: 2 V h
  double op_recomputed_forward = 0;  // op-level selective checkpointing's recomputed matmuls
  // What selective recomputation's modules repeat (recompute_modules): MLA's up-projections,
  // the dense layers' MLPs, the MoE layers' router and activated experts, their shared experts.
  double mla_up_forward = 0;
  double dense_mlp_forward = 0;
  double moe_routed_forward = 0;
  double moe_shared_forward = 0;

  double forward() const { return dense_forward + attention_forward; }
  // Model FLOPs of a training step per token: forward + backward (2x forward), no recompute.
  // The MFU numerator (PaLM, Chowdhery et al. 2022, appendix B; the "6N" rule plus attention).
  double training() const { return 3 * forward(); }
};

// causal = false counts full attention, as Narayanan et al. 2021's formula does.
FlopsPerToken flops_per_token(const ModelSpec& model, int seq_len, bool causal = true);

// Hardware FLOPs per token of a training step: model FLOPs plus what recomputation repeats:
// full adds the forward of every layer (not the output head), selective adds the forward of
// its modules (by default the attention core, QK^T, softmax, AV: Korthikanti et al. 2022),
// op-level selective the wk, wo and w3 matmuls.
double hardware_flops_per_token(const FlopsPerToken& flops, Recompute recompute,
                                unsigned recompute_modules = kRecomputeCoreAttn);

// Memory assumptions that the scenario does not spell out.
struct MemoryParams {
  // Memory outside PyTorch's allocator: the CUDA context with cuBLAS and cuDNN workspaces
  // (~0.5-1 GiB), and NCCL's buffers per communicator the GPU is in (4 MiB NCCL_BUFFSIZE plus
  // LL/LL128 buffers per channel per peer: ~0.6 GiB at 32 channels x 2 peers; NCCL docs, env
  // NCCL_BUFFSIZE). Assumptions; validate measures the real figure.
  double context_bytes = 1.0 * 1024 * 1024 * 1024;
  double nccl_bytes_per_communicator = 0.6 * 1024 * 1024 * 1024;
  // PyTorch's caching allocator reserves more than it hands out: beyond the segments of the
  // loss's tensors (MemoryBreakdown::allocator_bytes), the transients of a layer's forward and
  // backward, freed layer by layer and kept cached, which no stored activation can use at the
  // peak: a multiple of one layer's activations (one micro-batch), whatever the number of layers
  // or micro-batches in flight. Where the backward recomputes the layer, its rebuilt activations
  // take one layer's worth of that cache (MemoryBreakdown::allocator_slack_bytes). The median
  // over our 26 single-H200 steps (device calls 9, 20 and 21; scenarios/measurements/call21 has
  // the allocator's own trace of 13 of them): 2.2 layers without recompute, 1.8 with. Five more
  // steps, predicted before they ran (call 22), came out within 5.3%.
  double allocator_layer_slack = 2.0;
};

// Peak memory of one GPU in the busiest pipeline stage, by kind, bytes. Each kind is given at
// its own peak; they do not all peak at one moment (tensor_bytes()).
struct MemoryBreakdown {
  double weights_bytes = 0;           // half-precision working weights (sharded under ZeRO-3)
  double gradients_bytes = 0;         // (sharded under ZeRO-2/3)
  double optimizer_bytes = 0;         // fp32 master weights + Adam moments (sharded under ZeRO-1+)
  double activations_bytes = 0;       // stored for backward, all micro-batches in flight
  // Of activations_bytes: the one layer that full or op-level selective recomputation rebuilds
  // in the backward. It lives only then, after the loss has freed its tensors.
  double recompute_layer_bytes = 0;
  double logits_bytes = 0;            // embedding output, and the loss's tensors at their peak
  // Of logits_bytes: the loss's tensors at its backward (its peak), and at its forward; and
  // what the caching allocator reserves for them (each of the loss's tensors in a segment of
  // its own unless a freed one is large enough).
  double loss_backward_bytes = 0;
  double loss_forward_bytes = 0;
  double loss_reserved_bytes = 0;
  // 16-bit weight copies: ZeRO-3's current and prefetched layer, unsharded; autocast's casts of
  // fp32 weights (workload.framework.weights_in_fp32); under fp8 training the FP8 copy of every
  // weight held.
  double gathered_weights_bytes = 0;
  // Of gathered_weights_bytes: autocast's casts. The linears save them for their backward;
  // under full recomputation nothing saves them and they live only in autocast's cache, until
  // the forward leaves autocast.
  double cast_weights_bytes = 0;
  bool casts_freed_after_forward = false;
  // Of cast_weights_bytes: what autocast's cache still holds when the forward ends. All of them,
  // but for torch.compile'd blocks under full recomputation: they cast inside their graphs,
  // which autocast's cache never sees, and checkpointing drops what the graphs save; only the
  // eager ops' casts (the output head's) are cached (call 18).
  double forward_end_casts_bytes = 0;
  // Of gathered_weights_bytes: what PyTorch FSDP holds of its blocks' two-layer window only while
  // the blocks run. It reshards each block after its forward, so while the loss runs forward and
  // backward one block is gathered (TorchTitan keeps the last block's forward gather for its
  // backward; plain fully_shard prefetches it then), not two.
  double gathered_window_idle_bytes = 0;
  double outside_allocator_bytes = 0;  // the CUDA context and NCCL's buffers
  // One layer's activations of one micro-batch (the layer the backward rebuilds under
  // recompute), and the allocator's cache of transients: MemoryParams::allocator_layer_slack of
  // them, one fewer where the layer is recomputed.
  double layer_activations_bytes = 0;
  double allocator_slack_bytes = 0;
  // PyTorch FSDP (fully_shard with mixed precision) allocates the reduce-scattered gradient
  // shards on its reduce-scatter stream, and the caching allocator keeps a pool per stream:
  // what they free serves no activation, and the gradients add to the reserve (measured on one
  // H200, device call 21: that stream's pool is the fp32 gradients, 4.95 GiB for 4.90).
  bool gradients_own_pool = false;
  // PyTorch frees every gradient between steps (zero_grad(set_to_none=True), its default since
  // 2.0) and allocates them as the backward frees the activations, so the two do not add up:
  // the peak holds the larger. Megatron-LM and DeepSpeed keep persistent gradient buffers.
  bool gradients_replace_activations = false;
  // Parameters this GPU holds before ZeRO sharding: the dense ones (replicated over dp x cp),
  // and besides them its routed experts (replicated over the expert data-parallel group).
  double parameters = 0;
  double expert_parameters = 0;
  int stage = 0;                      // the pipeline stage (0-based) this breakdown is for

  // The moments whose live tensors (beyond weights and optimizer state) can be the peak:
  // - kForwardEnd: the loss computed in the forward, autocast's cache of weight casts still
  //   held (forward_end_casts_bytes);
  // - kLossBackward: the loss's backward (its largest tensors);
  // - kRecompute: a layer rebuilt for its backward, the loss's tensors freed;
  // - kGradients: (with gradients_replace_activations) the backward's end, every gradient
  //   allocated and the stored activations freed.
  // Without gradients_replace_activations every moment also holds the gradient buffers.
  enum class Moment { kForwardEnd, kLossBackward, kRecompute, kGradients };
  double live_bytes(Moment moment) const {
    const double stored = activations_bytes - recompute_layer_bytes + logits_bytes -
                          loss_backward_bytes;  // activations and the embedding output
    const double persistent = gathered_weights_bytes - cast_weights_bytes;
    const double held = persistent + (casts_freed_after_forward ? 0 : cast_weights_bytes);
    const double grads = gradients_replace_activations ? 0 : gradients_bytes;
    const double at_loss = gathered_window_idle_bytes;  // the loss runs between the blocks
    switch (moment) {
      case Moment::kForwardEnd:
        return grads + stored + persistent - at_loss + forward_end_casts_bytes +
               loss_forward_bytes;
      case Moment::kLossBackward:
        return grads + stored + held - at_loss + loss_backward_bytes;
      case Moment::kRecompute:
        return grads + stored + held + recompute_layer_bytes;
      case Moment::kGradients:
        return gradients_bytes + persistent + recompute_layer_bytes;
    }
    return 0;
  }
  Moment peak_moment() const {
    Moment best = Moment::kForwardEnd;
    for (Moment m : {Moment::kLossBackward, Moment::kRecompute, Moment::kGradients}) {
      if (live_bytes(m) > live_bytes(best)) best = m;
    }
    return best;
  }
  // What the tensors need at the peak (the allocator's allocated peak): the busiest moment.
  double tensor_bytes() const {
    return weights_bytes + optimizer_bytes +
           std::max({live_bytes(Moment::kForwardEnd), live_bytes(Moment::kLossBackward),
                     live_bytes(Moment::kRecompute), live_bytes(Moment::kGradients)});
  }
  // What PyTorch's caching allocator reserves at the peak (torch.cuda.max_memory_reserved, the
  // figure frameworks publish). A freed block stays cached and serves a later request only
  // where it fits, and the moments above allocate tensors of different sizes (the loss's
  // vocabulary-wide ones, a recomputed layer's, the gradients), so the cache grows to about
  // every kind at its own peak, the loss at its segments (loss_reserved_bytes), plus
  // allocator_slack_bytes.
  double allocator_bytes() const {
    const double transient = activations_bytes + logits_bytes - loss_backward_bytes +
                             loss_reserved_bytes + gathered_weights_bytes;
    const double during_backward = gradients_replace_activations && !gradients_own_pool
                                       ? std::max(gradients_bytes, transient)
                                       : gradients_bytes + transient;
    return std::max(tensor_bytes(), weights_bytes + optimizer_bytes + during_backward) +
           allocator_slack_bytes;
  }
  // The allocator's cache at the peak: what it reserves beyond the tensors.
  double allocator_cache_bytes() const { return allocator_bytes() - tensor_bytes(); }
  // What must fit in the GPU's memory: the tensors and what lives outside the allocator. The
  // allocator's cache is not counted: under pressure PyTorch frees it and retries before it
  // fails an allocation.
  double total() const { return tensor_bytes() + outside_allocator_bytes; }
};

// Memory per GPU of the busiest stage (the first or the last), by kind. Weights, gradients and
// optimizer state by the framework's precision layout (workload.framework: 16-bit weights with
// fp32 masters, 2 + 12 bytes per parameter, Megatron-LM and DeepSpeed; or fp32 parameters,
// 4 + 8, PyTorch autocast and FSDP mixed precision), fp32 or 16-bit gradients; ZeRO shards over
// dp x cp (Rajbhandari et al. 2020). Activations per token and layer, counted tensor by tensor
// as Megatron-Core keeps them for the backward: the two norms' inputs and outputs (on the
// sequence-parallel shard; an fp32 residual stream with fp32 parameters), Q, K, V (GQA: K and V
// of kv_heads) and the attention output, the MLP's up (+ gate) output and activation output,
// 1-byte dropout masks, and with unfused attention the softmax output (and the dropout's output
// and mask) of a/t x s scores per token; flash attention keeps none. For GPT (4h MLP, dropout,
// 16-bit, SP) this is Korthikanti et al. 2022's 34 s b h / t (eq. 2-4; 10 + 24/t without SP)
// plus 5 a s^2 b / t with unfused attention. Full recompute keeps each layer's input and one
// layer being recomputed; s is seq_len / cp. Stage 0 holds pp micro-batches in flight under
// 1F1B (pp + (pp-1)/v interleaved: Megatron's warm-up of 2(pp-1) + (v-1) pp model chunks), all
// m under GPipe. Logits: fp32 and 16-bit, s b V / t on the last stage.
// Mixtures of experts: a MoE layer keeps, per routed copy of a token, its permuted input, the
// expert's up (+ gate) output and activation; its experts are sharded over ep and sharded by
// ZeRO over their expert data-parallel group. DualPipe: a device holds two stages (two copies
// of the parameters) and pp + 1 micro-batches. fp8: FP8-saved GEMM inputs, an FP8 weight copy.
// Selective recomputation drops what its modules recompute (recompute_modules).
// REQUIRES: a workload the scenario loader accepted (divisibility checked there).
MemoryBreakdown memory_per_gpu(const WorkloadConfig& workload, const MemoryParams& params = {});

// Which parallel dimension a collective belongs to.
// kEp: the expert-parallel all-to-all of mixture-of-experts layers.
enum class ParallelDim { kTp, kPp, kDp, kCp, kEp };
inline constexpr ParallelDim kParallelDims[] = {ParallelDim::kTp, ParallelDim::kPp,
                                                ParallelDim::kDp, ParallelDim::kCp,
                                                ParallelDim::kEp};
std::string_view to_string(ParallelDim d);

// When a collective runs: inside the forward or backward pass of each micro-batch (backward
// includes the forward recomputation of full recompute), or once per optimizer step.
enum class CommPhase { kForward, kBackward, kStep };

// What decides how many of a MoE layer's routed token copies cross the network in its
// all-to-all (CommCall::dispatch).
struct ExpertDispatch {
  int experts = 0;     // routed experts; 0: not a MoE all-to-all
  int top_k = 0;       // experts per token
  int max_nodes = 0;   // node-limited routing (ExpertRouting::max_nodes_per_token); 0: none
  bool hierarchical = false;  // FrameworkConfig::ep_hierarchical
  bool consecutive = false;   // ExpertRouting::consecutive
};

// One kind of collective a GPU takes part in, with how many times per micro-batch (forward,
// backward) or per step, on which group. size_bytes is nccl-tests' size column (the gathered
// total for all_gather/reduce_scatter).
struct CommCall {
  ParallelDim dim = ParallelDim::kTp;
  CommPhase phase = CommPhase::kForward;
  CollectiveOp op = CollectiveOp::kAllReduce;
  double size_bytes = 0;
  double count = 0;  // calls per micro-batch (forward/backward) or per step (kStep)
  int group_size = 1;
  int group_stride = 1;   // global-rank distance between group members (rank order tp, cp, dp, pp)
  const char* what = "";  // "attention+MLP outputs", "ZeRO-3 parameter gather", ...
  ExpertDispatch dispatch;  // alltoall of a MoE layer
  // SP: the column-parallel linears' inputs all-gathered again in the backward for their
  // weight gradients (FrameworkConfig::sp_input_regather).
  bool regather = false;
  // DP: the pipeline stage whose weights the call carries (the one holding the most), and
  // whether they are its routed experts' (a MoE model's second DP group).
  int dp_stage = 0;
  bool experts = false;
};

// An all-to-all's CollectiveRequest::dispatch on its group (`group`: parallel_group_topology of
// the call's size and stride, whose nodes it spans): forwarded inside the receiving node with a
// hierarchical dispatcher; its network share 1 for
// NCCL's all-to-all (every routed copy is its own message). With a hierarchical dispatcher a
// token crosses once to each of the D nodes that hold any of its experts, and D / top_k of its
// copies cross. Node-limited routing to M nodes picks the nodes whose experts score highest for
// the token, so each holds some of them: D = min(M, top_k). Without a limit, E experts spread
// evenly over the N nodes of the EP group, top_k of them distinct and equally likely:
// D = N (1 - C(E - E/N, top_k) / C(E, top_k)) (DeepSeek-V3's 256 experts, top 8, over 8 nodes:
// 5.29; limited to M = 4: 4). The same dispatcher sends a token once to each of the G GPUs of
// the group that hold any of its experts (G from the same count over the group's GPUs: Qwen3's
// 128 experts, top 8, over 8 GPUs: 5.33), so G / top_k of its copies cross the scale-up links
// (rank_share). Consecutive routing (ExpertRouting::consecutive) counts the nodes and GPUs its
// windows of top_k experts span, averaged over the windows' starts (DeepSeek-V3's 256 experts
// over 64 GPUs: 2 GPUs, 1 node a token).
AllToAllDispatch alltoall_dispatch(const CommCall& call, const CollectiveTopology& group);

// The ranks that hold the same experts and reduce their gradients: tp x cp x dp / ep (expert
// tensor parallelism 1, Megatron-Core's expert data-parallel group); 1 for a dense model.
int expert_data_parallel(const WorkloadConfig& workload);

// Bytes per gradient element as the framework accumulates and reduces them: 4 with
// fp32_gradients or fp32 training, else the working precision's (workload.framework).
double gradient_bytes(const WorkloadConfig& workload);
// ZeRO-1 whose gradient reduction is a whole all-reduce (framework.zero1_grad_reduce).
bool zero1_all_reduce(const WorkloadConfig& workload);
// The optimizer updates the 16-bit parameters themselves, its Adam moments in their dtype, with
// no fp32 master copy (framework.master_weights: false under mixed precision; fp32 parameters,
// weights_in_fp32 or fp32 training, have none to drop).
bool updates_16bit_parameters(const WorkloadConfig& workload);

// The collectives one GPU of the busiest stage issues per micro-batch / per step:
// TP: per layer 2 all-reduces of s b h forward and 2 backward (with SP: 2 all-gathers + 2
// reduce-scatters each way), repeated in the recompute forward; PP: one activation send per
// micro-batch and model chunk each way, s b h / t (Megatron's scatter/gather); DP over
// dp x cp ranks: gradient all-reduce (ZeRO-0), reduce-scatter + parameter all-gather once per
// step (ZeRO-1), reduce-scatter per micro-batch (ZeRO-2), and ZeRO-3's parameter all-gathers in
// forward and backward of every micro-batch; CP: cp-1 ring steps of K and V per layer forward,
// K, V and their gradients backward; EP (MoE, ep > 1): a dispatch and a combine all-to-all per
// MoE layer each way (alltoall_dispatch), the experts' gradients over their
// expert data-parallel group.
std::vector<CommCall> communication_per_step(const WorkloadConfig& workload);

// Layers of the busiest stage: ceil(layers / pp).
int layers_per_stage(const WorkloadConfig& workload);

}  // namespace clustersim::models
