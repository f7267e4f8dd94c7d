// The scenario (v1; docs/scenario-format.md for users): a cluster, a workload, cost and
// reliability, loaded from YAML into plain structs with every unit already converted to SI
// (bytes, B/s per direction, seconds, FLOP/s, USD). Catalog entries are copied in, so a
// scenario can override them and outlives nothing. Loading validates: unknown keys, wrong types,
// bare numbers where a unit is needed, unknown catalog ids and impossible combinations are
// errors whose message starts with "file:line:col: key.path:". The loader never throws and
// never prints.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/catalog.h"
#include "models/pipeline_layout.h"
#include "models/result.h"

namespace clustersim::models {

enum class TopologyKind { kFatTree, kLeafSpine, kRailOptimized, kSingleSwitch };
enum class Routing { kAdaptive, kEcmp, kStatic };
// Activation recomputation: none; Megatron's selective (the attention core, Korthikanti et al.
// 2022); PyTorch's op-level selective checkpointing as TorchTitan runs it (the attention output
// and every other matmul output kept, everything else recomputed); full (each layer's input).
enum class Recompute { kNone, kSelective, kSelectiveOp, kFull };
// kDualPipe: DeepSeek-V3's bidirectional schedule (DeepSeek-AI 2024, "DeepSeek-V3 Technical
// Report" sec. 3.2.1, Table 2): micro-batches fed from both ends, each device holding two
// stages (two copies of the parameters, pp + 1 micro-batches of activations), a bubble of
// (pp/2 - 1)(F&B + B - 3W), and a forward and a backward chunk overlapped so that their
// all-to-all and PP communication hide behind each other's compute.
enum class PipelineSchedule { kGpipe, k1F1B, kInterleaved, kDualPipe };

std::string_view to_string(TopologyKind k);
std::string_view to_string(Routing r);
std::string_view to_string(Recompute r);
std::string_view to_string(PipelineSchedule s);

struct SourceLocation {
  std::string file;
  int line = 0;                   // 1-based; 0 when unknown
  int column = 0;                 // 1-based
  std::string to_string() const;  // "file:line:col" (or "file" when line is unknown)
};

// `gpu:`, `scale_up:`, `nic:` and `fabric.switch:` take a catalog id, or a map with `base:` (an
// id) plus fields that override the catalog entry (units required):
//   gpu:      name, bf16, fp16, fp8, tf32, fp32 (FLOP/s), hbm (size), hbm_bandwidth,
//             nvlink_links, nvlink_link_bandwidth (per link per direction), pcie_gen, pcie_lanes,
//             tdp (W), price (USD), sm_count
//   scale_up: bandwidth (per GPU per direction), latency, switch_reduction
//   nic:      line_rate (per link per direction), latency, efficiency (0..1),
//             in_network_reduction_capable, price, cable_price
//   switch:   radix, port_bandwidth, latency, price, power, in_network_reduction
// An overridden entry keeps its base id; its source says which keys the scenario changed.
struct NodeConfig {
  GpuSpec gpu;
  int gpus_per_node = 8;
  // Defaults from the GPU when not given (sm_80 nvlink3, sm_90 nvlink4, sm_100 nvlink5, else
  // PCIe of the GPU's generation). per_gpu_Bps is capped at what the GPU's own links carry
  // (an H800's 8 NVLinks give 200 GB/s on an nvlink4 switch; a gen-4 card on pcie5 gets gen 4).
  ScaleUpSpec scale_up;
  int nics_per_node = 0;
  NicSpec nic;            // empty (id "") for a one-node cluster that names no NIC
  int links_per_nic = 1;  // bonded links per NIC
  // Per-direction bandwidth leaving one node through all its NICs and links.
  double injection_Bps() const { return nics_per_node * links_per_nic * nic.line_rate_Bps; }
};

struct FabricConfig {
  TopologyKind topology = TopologyKind::kFatTree;
  int tiers = 2;                  // fat-tree: 2 or 3
  int switch_radix = 64;          // ports per switch; not given: the switch's own radix
  int leaves = 0;                 // leaf-spine only; 0 = not given
  int spines = 0;                 // leaf-spine only; 0 = not given
  int uplinks_per_leaf = 0;       // leaf-spine only; 0 = spread the leaf's remaining ports evenly
  double oversubscription = 1.0;  // leaf downlink : uplink bandwidth
  Routing routing = Routing::kAdaptive;
  // Queue pairs per NCCL connection across nodes (NCCL_IB_QPS_PER_CONNECTION; NCCL's default 1).
  // Each QP is its own flow to the switches (RoCE's UDP source port comes from the QP number), so
  // an ECMP hash sees qps x channels flows per NIC: more QPs, smaller and better-spread flows
  // (Gangidi et al., "RDMA over Ethernet for Distributed AI Training at Meta Scale", SIGCOMM
  // 2024, sec. 5: QP scaling against ECMP collisions). No effect with adaptive routing.
  int qps_per_connection = 1;
  bool in_network_reduction = false;  // SHARP-style reduction in the switches
  SwitchSpec switch_spec;  // `switch:` id, or the catalog default for the NIC; empty without NIC
};

struct StorageConfig {
  double write_Bps = 0;  // aggregate to the parallel file system; 0 = not given
};

struct ClusterConfig {
  int nodes = 1;
  NodeConfig node;
  FabricConfig fabric;
  StorageConfig storage;
  int total_gpus() const { return nodes * node.gpus_per_node; }
};

// What selective recomputation repeats in the backward instead of keeping (with recompute:
// selective; Megatron-Core's --recompute-modules): bits of ParallelismConfig::recompute_modules.
enum RecomputeModule : unsigned {
  kRecomputeCoreAttn = 1u << 0,      // the attention core (Korthikanti et al. 2022): the default
  kRecomputeLayerNorm = 1u << 1,     // the norms (their outputs not kept)
  kRecomputeMlaUpProj = 1u << 2,     // MLA's query and key/value up-projections (Q, K, V not kept)
  kRecomputeMoeAct = 1u << 3,        // the experts' activation function
  kRecomputeMlp = 1u << 4,           // a dense layer's whole MLP
  kRecomputeMoe = 1u << 5,           // a MoE layer's whole MLP: router, experts, shared experts
  kRecomputeSharedExperts = 1u << 6  // the shared experts
};

struct ParallelismConfig {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;
  bool sp = false;
  int zero = 0;  // 0 | 1 | 2 | 3 (3 = FSDP full shard)
  Recompute recompute = Recompute::kNone;
  PipelineSchedule pp_schedule = PipelineSchedule::k1F1B;
  int virtual_stages = 1;  // interleaved schedule: model chunks per pipeline stage
  // Expert parallelism (mixture-of-experts models): the experts of each MoE layer split over ep
  // GPUs of a pipeline stage, which exchange tokens by all-to-all. As Megatron-Core places it
  // (expert tensor parallelism 1): ep consecutive ranks of the stage's tp x cp x dp, tokens on
  // their sequence-parallel shard; each expert's weights replicated over the
  // tp x cp x dp / (ep x etp) ranks that hold the same experts (the expert data-parallel
  // group).
  int ep = 1;
  // Expert tensor parallelism (Megatron-Core --expert-tensor-parallel-size): each expert's
  // weights split over etp consecutive ranks (up/gate by columns, down by rows), which gather
  // the tokens dispatched to them (all-gather) and reduce-scatter the experts' output; the EP
  // group's ranks are then etp apart (MoE parallel folding: etp x ep ranks of the stage's
  // tp x cp x dp hold one copy of the experts).
  int etp = 1;
  int expert_model_parallel() const { return ep * etp; }
  // Layers on the first and on the last pipeline stage when they differ from the rest
  // (Megatron-Core's num_layers_in_first/last_pipeline_stage; 0: not given): the middle stages
  // split the remaining layers evenly.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  // Megatron-Core's layout string (pipeline_model_parallel_layout, e.g. DeepSeek-V3's
  // "Et*4|(t*4|)*14tmL" for 61 layers over 16 chunks) and the layers of each model chunk it
  // places (not given: the even split or Llama 3's applies).
  PipelineLayout layout;
  unsigned recompute_modules = kRecomputeCoreAttn;  // RecomputeModule bits, recompute: selective
  int gpus() const { return tp * pp * dp * cp; }
  bool operator==(const ParallelismConfig&) const = default;
};

// How the attention scores are computed (workload.framework.attention).
enum class AttentionKernel {
  kFlash,    // fused, no s x s score matrix in memory, the GPU's native kernel (cuDNN, Transformer
             // Engine, FlashAttention-3 on Hopper and later; FlashAttention-2 on Ampere)
  kFlash2,   // fused, FlashAttention-2's kernels on any GPU (the flash-attn 2.x package, PyTorch
             // SDPA's flash backend, Triton ports): written for Ampere's tensor cores, slower on
             // Hopper and later (compute_model.h, flash2_params)
  kFlash1,   // fused, FlashAttention's first kernels (the flash-attn 1.0.x package: Transformer
             // Engine 0.7-0.8's only fused attention, 2022 to mid-2023): about half
             // FlashAttention-2's rate (compute_model.h, flash1_params)
  kUnfused,  // scores written by a batched GEMM, a fused scale-mask-softmax, dropout, a second
             // batched GEMM (Megatron-LM before 2022; Korthikanti et al. 2022 sec. 4.1)
};
std::string_view to_string(AttentionKernel k);
// Whether the kernel keeps no s x s score matrix (flash and flash2).
inline bool fused_attention(AttentionKernel k) { return k != AttentionKernel::kUnfused; }

// How the elementwise work between the GEMMs runs (workload.framework.kernels).
enum class KernelFusion {
  kFused,  // norms, activations, rotary, residual adds fused (Megatron-Core / Transformer
           // Engine): layer_model.h's memory-bound kernels at the copy rate
  kEager,  // PyTorch eager under autocast: one kernel per op, fp32 intermediates
  kCompiled,  // torch.compile (Inductor) under autocast: eager's ops fused, at the share of
              // eager's time measured on our H200 (ComputeParams::compiled_elementwise_share)
};
std::string_view to_string(KernelFusion k);

// Where Transformer Engine's delayed scaling all-reduces a chunk's amaxes
// (framework.fp8_amax_reduction).
enum class AmaxReduction {
  // Synchronously over the TP x CP x DP ranks of a stage (Megatron-Core's amax reduction group
  // before 2024-07-25 and again from 2024-09-06, tp_only_amax_red false; NeMo 1.x / Apex's TP x
  // DP group; Transformer Engine's NVTE_DP_AMAX_REDUCE_INTERVAL default, 1): the default.
  kDataParallel,
  // Synchronously over the TP x CP ranks alone: Megatron-Core between 2024-07-25 and 2024-09-06
  // (its 0.8 release), tp_only_amax_red true, or Transformer Engine 0.8-1.5 with
  // NVTE_DP_AMAX_REDUCE_INTERVAL=0 ("AMAX is reduced only in TP domain").
  kTensorParallel,
  // Launched asynchronously and waited for at the next reduction, hidden: Transformer Engine
  // 0.8-1.5 with NVTE_ASYNC_AMAX_REDUCTION=1 (module/base.py; 1.6 no longer reads it).
  kAsync,
};
std::string_view to_string(AmaxReduction a);

// How fp8 training scales its tensors.
enum class Fp8Recipe {
  // Per tensor, current scaling (Megatron-Core's `tensorwise`, Transformer Engine's
  // Float8CurrentScaling; the default): each tensor's amax is taken from the tensor itself just
  // before its cast, a read of its own unless the norm that produces it computes it.
  kTensorwise,
  // Per tensor, delayed scaling (Transformer Engine's DelayedScaling, Megatron-Core's
  // `delayed`): the scale comes from earlier steps' amax history and the cast records the new
  // amax in the same pass; a norm that feeds the GEMM writes its output in FP8 directly.
  kDelayed,
  // DeepSeek-V3's 1 x 128 / 128 x 128 scales (DeepGEMM, TE's Float8BlockScaling), whose GEMMs
  // pay more per tile (blockwise_fp8_k_overhead).
  kBlockwise,
  // MXFP8 (OCP microscaling: an E8M0 scale per 32 elements along the reduction, TE's
  // MXFP8BlockScaling): applied inside Blackwell's block-scaled tensor cores at the fp8 rate;
  // each tensor is quantized along both of its dimensions (the weight-gradient GEMM reduces
  // over the other one).
  kMxfp8,
};

// What a PyTorch cross-entropy over the vocabulary is given:
// - kFp32: the logits cast to fp32 first (`logits.float()`: TorchTitan, Hugging Face), so its
//   log-softmax runs in fp32;
// - kAutocast: the 16-bit logits as autocast leaves them (F.cross_entropy inside autocast):
//   log-softmax in 16 bits, and autocast runs nll_loss in fp32 on a copy it keeps for the
//   backward;
// - kFused: one fused kernel on the 16-bit logits (flash-attn's CrossEntropyLoss, llm-foundry's
//   default fused_crossentropy; Liger's), holding what the fused kernels' loss does.
enum class LossInput { kFp32, kAutocast, kFused };

// Fused (Megatron-family) kernels: how the vocabulary-parallel cross-entropy runs
// (workload.framework.loss_kernel; layer_model.cc counts each one's bytes):
// - kUnfused: Megatron-LM's VocabParallelCrossEntropy as written, one eager kernel per step
//   (megatron/core/tensor_parallel/cross_entropy.py; Megatron-LM before 2024 and Megatron-Core
//   without --cross-entropy-loss-fusion, its default);
// - kFused: the same steps in three jit-fused functions (megatron/core/fusions/
//   fused_cross_entropy.py: cross_entropy_loss_fusion, which NeMo 2 and Megatron-Bridge turn on);
// - kTe: Transformer Engine's Triton kernels (cross_entropy_fusion_impl "te").
enum class LossKernel { kUnfused, kFused, kTe };
std::string_view to_string(LossKernel k);

// What the training framework does that the step's time depends on (workload.framework).
// Defaults: Megatron-Core / NeMo as commonly configured.
struct FrameworkConfig {
  AttentionKernel attention = AttentionKernel::kFlash;
  KernelFusion kernels = KernelFusion::kFused;
  // TP/SP collectives hidden behind the GEMMs they feed (Transformer Engine userbuffers,
  // NeMo's tp_comm_overlap). false: they sit between the GEMMs (Megatron-LM's default).
  bool tp_comm_overlap = false;
  // With tp_comm_overlap: the share of the hidden TP traffic that copy engines move (Transformer
  // Engine's `ring_exchange` overlaps, use_ce by default) rather than SM kernels (`bulk`,
  // `pipeline`); it costs compute StepParams::overlap_copy_engine_slowdown per second instead of
  // overlap_compute_slowdown. Of a layer's ten TP collectives (four forward, six backward with
  // SP's second gathers), Megatron-Bridge's FP8 userbuffers configurations move six by ring
  // exchange (0.6); its BF16 H100 ones and TE's defaults four (0.4). 0: every overlap on SMs.
  double tp_overlap_copy_engine_share = 0;
  // Of a layer's four TP reduce-scatters (forward: the attention output and MLP down
  // projections; backward: the QKV and MLP-up input gradients), how many copy engines move, given
  // tp_overlap_copy_engine_share: ring exchange takes the four gathers that feed a forward or
  // data-gradient GEMM first (Transformer Engine's defaults, 0.4), then the forward's two
  // reduce-scatters (Megatron-Bridge's FP8 userbuffers configurations, 0.6), then the backward's
  // (PyTorch's symmetric-memory async TP moves every collective it fuses, 1.0; not the
  // backward's without tp_overlap_input_gradients). Each ends in a local reduction on the
  // compute stream (LayerKernels::memory_*_s).
  int copy_engine_reduce_scatters() const;
  // Without tp_comm_overlap: each column-parallel linear's input-gradient reduction in the
  // backward (a reduce-scatter with SP, an all-reduce without) runs while that linear's
  // weight-gradient GEMM computes, and its input's second gather (sp_input_regather) while its
  // data-gradient GEMM does. Megatron-LM and Megatron-Core do it by default since 2022
  // (tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication: the collective
  // is launched asynchronously before the weight-gradient GEMM; Korthikanti et al. 2022, sec.
  // 6.2); PyTorch's DTensor TP does not. The other TP collectives stay exposed.
  bool tp_wgrad_overlap = false;
  // With tp_comm_overlap: the backward's input-gradient reductions of the column-parallel
  // linears (QKV, the MLP's first) are hidden behind GEMMs as well (Transformer Engine, whose
  // fused QKV and MLP-up GEMMs each produce the tensor the reduce-scatter takes). false:
  // PyTorch's async TP, whose Inductor pass (torch/_inductor/fx_passes/micro_pipeline_tp.py,
  // fuse_matmul_reduce_scatter) fuses a reduce-scatter only into the one matmul that produces
  // its input; with separate q/k/v and gate/up projections (TorchTitan's Llama) those input
  // gradients are sums of matmuls, and their reduce-scatters run as NCCL collectives between
  // the block's backward and the norm's, exposed. The recomputed forward's are fused.
  bool tp_overlap_input_gradients = true;
  // With SP: each column-parallel linear (QKV, the MLP's first) keeps its input as the sequence
  // shard and all-gathers it again in the backward for its weight gradient (Megatron-LM/Core
  // and Transformer Engine; under tp_wgrad_overlap the gather runs beside the data-gradient
  // GEMM). false: the gathered input is kept for the backward (PyTorch DTensor SP, where
  // autograd saves the matmul's input), with no second gather.
  bool sp_input_regather = true;
  // How the activations are laid out (workload.framework.activation_layout): Megatron's
  // [sequence, batch, hidden] ("sbh": sequence parallelism shards dim 0, which NCCL gathers and
  // scatters in place) or PyTorch models' [batch, sequence, hidden] ("bsh"). With bsh, DTensor's
  // sequence parallelism shards dim 1, and PyTorch's functional collectives
  // (torch/distributed/_functional_collectives.py: all_gather_tensor with gather_dim 1 ends in
  // torch.cat(torch.chunk(out, group_size), dim=1); reduce_scatter_tensor with scatter_dim 1
  // starts with torch.cat(torch.chunk(x, group_size, dim=1))) copy the whole gathered tensor
  // around every TP collective they run: LayerKernels::memory_*_s. Unset: bsh for PyTorch's
  // kernels (kernels: eager or compiled), sbh for fused ones (batch_first_layout()).
  std::optional<bool> batch_first_activations;
  bool batch_first_layout() const {
    return batch_first_activations.value_or(kernels != KernelFusion::kFused);
  }
  // How the model code projects a block's input (workload.framework.projections): "fused", one
  // GEMM for Q, K and V and one for a gated MLP's gate and up halves (Megatron-LM/Core and
  // Transformer Engine: linear_qkv, linear_fc1; MPT's Wqkv), or "separate", each its own GEMM
  // reading the same input (Hugging Face's and TorchTitan's Llama: q_proj, k_proj, v_proj,
  // gate_proj, up_proj / wq, wk, wv, w1, w3; PyTorch's compiler does not merge them). Narrow
  // ones (K and V at TP 8: 128 columns a rank for Llama 3) are bound by reading the input.
  // Unset: separate for PyTorch's kernels (kernels: eager or compiled), fused for fused ones
  // (separate_projections()).
  std::optional<bool> separate_projection_gemms;
  bool separate_projections() const {
    return separate_projection_gemms.value_or(kernels != KernelFusion::kFused);
  }
  // Full recomputation as PyTorch's non-reentrant checkpoint runs it (torch.utils.checkpoint
  // with use_reentrant=False, TorchTitan's and FSDP's checkpoint wrappers): the recomputed
  // forward stops as soon as every tensor the backward saved is back (early stop, PyTorch's
  // default since 2.1), so a dense block's down projection is not repeated. Megatron-LM's and
  // DeepSpeed's checkpointing rerun the whole forward. Unset: true for PyTorch's kernels
  // (kernels: eager or compiled), false for fused ones (recompute_stops_early()).
  std::optional<bool> recompute_early_stop;
  bool recompute_stops_early() const {
    return recompute_early_stop.value_or(kernels != KernelFusion::kFused);
  }
  // PyTorch kernels (eager, compiled): what the cross-entropy over the vocabulary is given
  // (LossInput; transformer_model.cc counts what each holds).
  LossInput loss_input = LossInput::kFp32;
  // Fused kernels: the cross-entropy's implementation (LossKernel).
  LossKernel loss_kernel = LossKernel::kFused;
  // NCCL's thread blocks per process group (workload.framework.nccl_max_ctas): Megatron-Core's
  // nccl_communicator_config_path gives each group's communicator its own ncclConfig_t maxCTAs
  // (NVIDIA's MLPerf Training NeMo configurations, conf/nccl/custom_communicator_cta.yaml:
  // tp 8, cp 1, dp and dp_cp 8, pp 2). 0: NCCL's own channel counts. A group's collectives run
  // at most that many channels (CollectiveParams::max_channels) and slow the compute beside
  // them by the blocks they hold (StepParams::overlap_reference_blocks). Under tp_comm_overlap
  // TP's collectives run in Transformer Engine's userbuffers, outside NCCL: tp does not apply.
  struct NcclCtas {
    int tp = 0, cp = 0, dp = 0, pp = 0, ep = 0;
    bool operator==(const NcclCtas&) const = default;
  };
  NcclCtas nccl_max_ctas;
  // NCCL's NVLS algorithms where the scale-up switch reduces (workload.framework.nccl_nvls);
  // false: NCCL_NVLS_ENABLE=0 (NVIDIA's MLPerf Training NeMo configurations), NCCL's ring and
  // tree instead (CollectiveParams::nvls_enabled).
  bool nccl_nvls = true;
  // Parameters a gradient bucket holds (workload.framework.grad_bucket_params): Megatron-Core
  // DDP's bucket_size, as a configuration sets it (NVIDIA's MLPerf Llama 3.1 8B: BUCKET_SIZE
  // 768000000). 0: Megatron-Core's default, max(40M, 1M x the DP ranks with CP)
  // (StepParams::dp_bucket_params). The last bucket's reduction, and the first's parameter
  // gather, wait for their pass to end.
  double grad_bucket_params = 0;
  // The optimizer's kernels. false: one fused kernel per step (Megatron's and Apex's fused
  // Adam, torch.optim.AdamW(fused=True)); true: PyTorch's foreach implementation, one pass over
  // the parameters per arithmetic op (TorchTitan's default, optimizer.fused = false).
  bool foreach_optimizer = false;
  // PyTorch kernels under autocast with fp32 parameters: each norm computed in 16 bits on a
  // 16-bit cast of the fp32 residual stream (MosaicML's low_precision_layernorm, which MPT's
  // benchmarks force). false: autocast runs the norm in fp32 on the stream (torch's LayerNorm,
  // fused rms_norm) and the next linear casts its output.
  bool low_precision_norm = false;
  // PyTorch kernels: an RMSNorm written as tensor ops in fp32 (TorchTitan's RMSNorm module,
  // torchtitan/models/norms.py until 2025: x.float(), pow, mean, rsqrt, a multiply by the
  // broadcast rsqrt, type_as, the weight), each op a kernel in eager mode and autograd's
  // backward of each. false: one fused rms_norm kernel each way (torch's, Triton's, Apex's).
  bool fp32_op_norm = false;
  // How context parallelism computes attention (framework.cp_attention). false ("ring"): cp
  // steps, each the local queries against one rank's keys and values, their outputs merged by
  // the log-sum-exps and their gradients accumulated (PyTorch's context_parallel, Transformer
  // Engine's p2p and all-gather modes, Megatron-Core; layer_model.cc ring_attention_passes).
  // true ("allgather"): K and V gathered whole and one attention call for the local queries
  // (Llama 3's "all-gather based method", Dubey et al. 2024 sec. 3.3.2), with no merges.
  bool cp_allgather = false;
  // How fp8 training scales its tensors (Fp8Recipe).
  Fp8Recipe fp8_recipe = Fp8Recipe::kTensorwise;
  // How Transformer Engine's delayed scaling reduces the amaxes (framework.fp8_amax_reduction,
  // AmaxReduction): at the end of every fp8_autocast region's forward (fp8.py,
  // fp8_autocast_exit) and of its first module's backward, once per model chunk and micro-batch
  // each way, an all-reduce the compute stream waits for (step_model.h, amax_reduction_s).
  AmaxReduction fp8_amax_reduction = AmaxReduction::kDataParallel;
  // Quantized weights gathered by ZeRO/FSDP (Megatron-Core --fp8-param-gather and
  // fp4_param_gather, TE's fp8/fp4 model init): the working weights held and all-gathered in the
  // training precision's bytes (fp8 1, NVFP4 0.5625) instead of 2 (fp8 and fp4 training only).
  bool quantized_param_gather = false;
  // Transformer Engine's fp8_dot_product_attention (framework.fp8_attention): the attention
  // core's two matmuls in FP8 (cuDNN's FP8 fused attention), at the FP8 tensor peak, while the
  // softmax's exponentials keep the special-function units' rate (compute_model.h,
  // attention_time). Needs precision fp8.
  bool fp8_attention = false;
  // Pipeline sends and receives posted ahead and waited on only where their data is needed,
  // so that they run beside the neighbouring chunks' compute (Megatron-Core's
  // overlap_p2p_comm, in its interleaved schedule). NeMo's MegatronCommOverlapCallback and
  // Megatron-Bridge's CommOverlapConfig turn it on whenever the interleaved schedule runs
  // ("PP overlap" in their comm_overlap.py: overlap_p2p_comm True, batch_p2p_comm False with
  // virtual stages; batched and waited on with 1F1B). false: Megatron's batched send/recv pairs,
  // waited on before the next compute (Megatron-LM's default).
  bool pp_comm_overlap = false;
  // MoE dispatch and combine all-to-alls overlapped with another micro-batch's compute
  // (DeepSeek-V3's DualPipe; Megatron-Core's --overlap-moe-expert-parallel-comm). false: they
  // sit between the router and the experts (the common default).
  bool ep_comm_overlap = false;
  // How MoE tokens reach experts on other nodes. false (Megatron-Core's alltoall token
  // dispatcher, NCCL all-to-all): every routed copy is its own message, so a token bound for
  // two experts on one node crosses the network twice. true (hierarchical: DeepSeek-V3 sec.
  // 3.2.2, DeepEP; Megatron-Core's flex dispatcher): a token crosses once to each node holding
  // any of its experts, to the GPU of the same index there, which forwards it over NVLink.
  bool ep_hierarchical = false;
  // DP gradient reduction overlapped with the backward bucket by bucket (Megatron-Core
  // --overlap-grad-reduce, PyTorch DDP/FSDP, DeepSpeed). false: after the whole backward
  // (Megatron-LM of 2021).
  bool grad_reduce_overlap = true;
  // ZeRO-1/2's parameter all-gather after the optimizer step overlapped with the next step's
  // forward chunk by chunk (Megatron-Core --overlap-param-gather). false: the whole gather before
  // the first forward (Megatron-Bridge's MXFP8 recipes turn it off: "keeping this enabled causes
  // NaN grad norm").
  bool param_gather_overlap = true;
  // Parameters kept in fp32 and cast to the working precision per use (PyTorch autocast, FSDP
  // mixed precision: 4 bytes + 8 of Adam state). false: 16-bit parameters with an fp32 master
  // copy in the optimizer (Megatron-LM, DeepSpeed: 2 + 12).
  bool weights_in_fp32 = false;
  // 16-bit parameters with an fp32 master copy in the optimizer (true), or the optimizer updating
  // the 16-bit parameters themselves, its Adam moments in the parameters' dtype (false:
  // torch.optim.Adam over bf16 parameters, as NeMo AutoModel's MoE recipes build their models
  // in bf16 under FSDP2: 2 bytes + 4 of Adam state). Ignored with weights_in_fp32.
  bool master_weights = true;
  // The fp32 master copy kept as the bf16 parameter plus the 16 bits of fp32 it drops (Apex's
  // DistributedFusedAdam store_param_remainders, which NeMo 1.x sets for bf16 O2 training;
  // Megatron-Core's precision-aware optimizer with Transformer Engine's FusedAdam): 10 bytes of
  // optimizer state a parameter instead of 12. Needs bf16 parameters with master_weights.
  bool param_remainders = false;
  // ZeRO-3 / FSDP: each layer's gathered weights freed after its forward and gathered again for
  // its backward (true: FSDP2's fully_shard default, TorchTitan's blocks, Megatron-FSDP), or
  // kept from the forward to the backward (false: fully_shard(reshard_after_forward=False), as
  // NeMo AutoModel's MoE parallelizer sets): one all-gather a micro-batch instead of two, and
  // the stage's gathered layers held at the activations' peak.
  bool reshard_after_forward = true;
  // PyTorch FSDP2's root module (fully_shard on the model: the embedding, the final norm and the
  // output head) kept gathered from its forward to its backward (false: fully_shard(model)
  // without reshard_after_forward, FSDP2's heuristic for the root, and any root before torch 2.8,
  // which clamped it), or resharded after the forward and gathered again for the backward
  // (true: fully_shard(model, reshard_after_forward=True) from torch 2.8, pytorch#155319, as
  // TorchTitan without pipelining passes it). Applies to PyTorch FSDP (zero: 3 with
  // weights_in_fp32).
  bool root_reshard_after_forward = false;
  // Gradients allocated by the backward that first produces them and freed between steps
  // (PyTorch's .grad: AccumulateGrad allocates it, optimizer.zero_grad(set_to_none=True), the
  // default since PyTorch 2.0, frees it), so a pipeline stage that runs every forward pass of
  // the step before its first backward holds no gradient at its activations' peak. false:
  // persistent gradient buffers, allocated once (Megatron-LM/Core's contiguous grad buffer,
  // DeepSpeed). weights_in_fp32 implies it.
  bool gradients_in_backward = false;
  // Gradients accumulated and reduced in fp32 (Megatron-LM forces it for bf16:
  // accumulate_allreduce_grads_in_fp32; Llama 3 sec. 3.3.2). false: in the working precision
  // (NeMo's performance recipes, grad_reduce_in_fp32: false).
  bool fp32_gradients = true;
  // ZeRO-1's gradient reduction. false: a reduce-scatter, each rank receiving the shard it
  // updates (Megatron-Core's distributed optimizer, DeepSpeed ZeRO-1 with reduce_scatter).
  // true: an all-reduce of the whole gradient, each rank then updating its shard (DeepSpeed's
  // pipeline engine with its BF16_Optimizer: _bf16_reduce_grads all-reduces the fp32 gradients).
  // That optimizer also keeps every parameter's 16-bit gradient beside the fp32 one it
  // accumulates into (update_hp_grads(clear_lp_grads=False) after each micro-batch's backward;
  // the 16-bit gradients are freed only at the step's zero_grad): e more bytes per parameter.
  bool zero1_all_reduce = false;
  // Host (CPU) time to launch one mixture-of-experts layer's kernels for one micro-batch,
  // forward and backward: Python, PyTorch's dispatcher and the CUDA launches of the router,
  // the token permutation, the dispatcher's preprocessing and the experts. When the layer's
  // kernels take less GPU time than this, the GPU waits for the host (stage_compute). Default
  // kMegatronMoeLayerHostS (Megatron-Core without CUDA graphs over the whole layer); 0 for a
  // layer captured whole in a CUDA graph.
  double moe_layer_host_s = kMegatronMoeLayerHostS;
  // Megatron-Core's MoE layer launched from the host, forward + backward, one micro-batch:
  // 8.2 ms. From NVIDIA's own table, not from the corpus: Megatron-Bridge's performance summary
  // (container 25.11, DGX-B200) runs Qwen3-30B-A3B on 8 B200 (EP 8, MXFP8, seq 4096) at 9,299
  // tokens/s/GPU with one sequence per micro-batch, 9.2 ms per layer and micro-batch, against
  // the layer's 2.7 ms of GPU time (docs/accuracy.md); the same chips run four sequences per
  // micro-batch in 12.8 ms (container 26.02.01), so the time is not the GPU's. The value is the
  // host time that makes the model give the 25.11 row (its recipe: router and preprocessing in
  // CUDA graphs, the rest launched from the host). Its scale measured on our H200's host
  // (scenarios/measurements/call16): the same layer dropless in eager PyTorch, 7.8 ms.
  static constexpr double kMegatronMoeLayerHostS = 8.2e-3;
  // How a MoE model with linear biases (gpt-oss) adds its experts' output biases
  // (`moe_expert_bias`). true ("per_expert"): Megatron-Core's TEGroupedMLP._apply_bias (since
  // a329dd6, 2025-09, "Enable bias in expert mlp"), which leaves the first linear's bias to
  // Transformer Engine's GroupedLinear (in its GEMMs) and adds the second's outside them, expert
  // by expert in eager PyTorch, weighted by each routed copy's router probability: a broadcast
  // product and an add per local expert and a concatenation; in the backward, per expert, the
  // bias's and the probabilities' gradients (a product and a sum each) and the gradient's
  // concatenation: bytes at the eager kernels' rates and a measured GPU and host time per local
  // expert (layer_model.cc, per_expert_bias_path, expert_bias_host_s). false ("grouped"): one fused pass
  // (Transformer Engine's grouped bias; Megatron-Core's packed path of 2026-08), no launches per
  // expert; that pass is not counted (a read and a write of the routed copies, some 0.2 ms of a
  // gpt-oss layer's 6.5 ms at EP 8 on an H100). Default: per_expert where the layer is
  // launched from the host (moe_layer_host_s > 0); grouped where it is captured whole in a CUDA
  // graph, which the per-expert path cannot be (it reads the experts' token counts on the host).
  std::optional<bool> expert_bias_per_expert;
  bool expert_bias_eager() const { return expert_bias_per_expert.value_or(moe_layer_host_s > 0); }
  bool operator==(const FrameworkConfig&) const = default;
};

// How tokens reach the experts during training (workload.moe, beside the MoE dimensions).
struct ExpertRouting {
  // > 0: each expert takes at most capacity_factor x its even share of the tokens and drops
  // the rest, padding to it (GShard, Switch Transformer; Megatron-Core --moe-expert-capacity-
  // factor with padding): the busiest GPU computes exactly this share. 0: dropless.
  double capacity_factor = 0;
  // Dropless: the tokens the busiest GPU's experts receive over the even share (a measured
  // load imbalance; 1 = perfectly balanced, as auxiliary-loss-free balancing aims for).
  double imbalance = 1.0;
  // Node-limited routing (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report" sec. 2.1.2: each
  // token to at most M = 4 nodes): its top_k experts are chosen among those of at most this
  // many nodes. With a hierarchical dispatcher (framework.ep_dispatcher) a token then crosses
  // the network at most M times. 0: no limit.
  int max_nodes_per_token = 0;
  // Which experts a token's top_k are. false: distinct experts, each equally likely (a trained
  // router spread by its balancing loss, Megatron-Core's force-balanced random routing). true:
  // top_k consecutive experts, token i to experts (i x top_k + j) mod experts (NeMo AutoModel's
  // FakeBalancedGate, its benchmarks' "fake balanced gate"): with experts in contiguous blocks
  // per GPU a token meets as few GPUs and nodes as its window spans.
  bool consecutive = false;
  // The busiest GPU's expert tokens over the even share.
  double busiest_share() const { return capacity_factor > 0 ? capacity_factor : imbalance; }
};

struct WorkloadConfig {
  ModelSpec model;  // a preset copied from the catalog, or the given dimensions
  ExpertRouting moe_routing;
  int seq_len = 4096;
  int global_batch = 1024;  // sequences per optimizer step
  int micro_batch = 1;
  Precision precision = Precision::kBf16;
  ParallelismConfig parallelism;
  // Hidden-state and attention-probability dropout probability of the recipe (GPT-3-era
  // Megatron-LM 0.1; Llama-style recipes 0). Above 0 the step runs dropout kernels and keeps
  // their masks for the backward.
  double dropout = 0;
  FrameworkConfig framework;
  double train_tokens = 0;  // 0 = not given (no whole-run figures)
  // Derived: micro-batches per pipeline per step = global_batch / (dp * micro_batch).
  int micro_batches_per_step() const;
  double tokens_per_step() const { return double(global_batch) * seq_len; }
};
// PyTorch autocast over fp32 parameters outside FSDP: the residual stream (the embedding's
// output, each layer's input) stays fp32, and each weight is cast to 16 bits per use.
inline bool fp32_residual_stream(const WorkloadConfig& w) {
  return w.framework.weights_in_fp32 && w.parallelism.zero < 3;
}
// PyTorch FSDP (fully_shard) over fp32 parameters: ZeRO-3 with framework.weights_in_fp32. Its
// mixed precision gathers 16-bit layers and runs them on a 16-bit residual stream.
inline bool pytorch_fsdp(const WorkloadConfig& w) {
  return w.parallelism.zero >= 3 && w.framework.weights_in_fp32;
}

// Section `cost:` (docs/scenario-format.md, docs/cost.md). gpu_hour prices the rented run as
// before; the other keys price owning the cluster against renting it (models/cost/tco_model.h).
// Every field but gpu_hour is kNotGiven (-1) when absent: the model then takes the price book's
// default (models/cost/price_book.h), so that 0 stays a value a user can give.
enum class Facility { kColocation, kOwn };
std::string_view to_string(Facility f);

struct CostConfig {
  static constexpr double kNotGiven = -1;
  bool present = false;     // the scenario has a `cost:` section: cost of owning is estimated
  double gpu_hour_usd = 0;  // gpu_hour: rent, on demand; 0 = not given (no rented prices in
                            // plan's run cost; the price book's on-demand price for owning vs
                            // renting)
  double reserved_1y_usd = kNotGiven;  // reserved_1y: USD per GPU-hour, committed a year
  double reserved_3y_usd = kNotGiven;  // reserved_3y: committed three years
  double utilization = kNotGiven;      // utilization: share of hours the owned cluster works
  double server_usd = kNotGiven;       // server_price: one GPU server with its GPUs, NICs apart
  double installation_share = kNotGiven;  // installation: fraction of the hardware
  double depreciation_s = kNotGiven;      // depreciation: time over which capital is written off
  double electricity_usd_per_kwh = kNotGiven;  // electricity
  double pue = kNotGiven;                      // pue: facility power over IT power, >= 1
  Facility facility = Facility::kColocation;   // facility: colocation | own
  double facility_usd_per_kw_month = kNotGiven;  // facility_kw_month: space, cooling, power
                                                 // capacity, per kW of IT capacity
  double support_share = kNotGiven;   // support: fraction of the capital a year
  double staff_fte = kNotGiven;       // staff: full-time engineers
  double staff_usd_per_year = kNotGiven;  // staff_salary: one engineer a year, loaded
  double server_w_per_gpu = kNotGiven;    // server_power: CPUs, memory, fans per GPU, W
  double storage_bytes = kNotGiven;       // storage_capacity: parallel file system, bytes
  double storage_usd_per_tb = kNotGiven;  // storage_price: owned, per TB (1e12 B)
  double cloud_storage_usd_per_tb_month = kNotGiven;  // cloud_storage_price
  double egress_bytes = kNotGiven;                    // egress: bytes leaving the cloud per run
  double egress_usd_per_gb = kNotGiven;               // egress_price: per GB (1e9 B)
};

struct ReliabilityConfig {
  double gpu_mtbf_s = 0;             // 0 = not given
  double checkpoint_interval_s = 0;  // 0 = derive (Young/Daly optimum)
  double restart_s = 0;              // 0 = default
};

// Section `interference:` (read by the simulator, sim/; the analytic model has no contention and
// ignores it): traffic of others sharing the fabric for the whole step. Defaults: none.
//   interference:
//     neighbour: {nodes: 32, placement: interleaved, pattern: ring, load: 0.8}
//     background: {per_node: 20GB/s}
//     seed: 7
enum class NeighbourPlacement {
  kAfter,        // its nodes follow ours (shares the spine and core tiers)
  kInterleaved,  // ours and its alternate node by node (shares leaves and their uplinks too)
};
enum class NeighbourPattern {
  kRing,      // a data-parallel ring all_reduce: each GPU streams to the next node's GPU
  kAllToAll,  // each node streams to (up to 8) other neighbour nodes
};
std::string_view to_string(NeighbourPlacement p);
std::string_view to_string(NeighbourPattern p);

struct InterferenceConfig {
  int neighbour_nodes = 0;  // neighbour.nodes: a second job's nodes, added to the cluster
  NeighbourPlacement placement = NeighbourPlacement::kAfter;  // neighbour.placement
  NeighbourPattern pattern = NeighbourPattern::kRing;         // neighbour.pattern
  double neighbour_load = 1.0;  // neighbour.load: fraction of its NICs' rate it offers, (0, 1]
  double background_per_node_Bps = 0;  // background.per_node: our nodes to random others
  std::uint64_t seed = 1;              // seed: destinations of background traffic
  bool any() const { return neighbour_nodes > 0 || background_per_node_Bps > 0; }
};

struct Claim;         // models/claims.h
struct PublishedRun;  // models/accuracy/published_run.h

struct Scenario {
  std::string name;
  std::string note;  // optional: where the scenario or its layout comes from (plan prints it)
  std::string path;  // file it came from ("<embedded>" for the default)
  ClusterConfig cluster;
  WorkloadConfig workload;
  CostConfig cost;
  ReliabilityConfig reliability;
  std::string calibration_path;  // resolved relative to the scenario file; "" = none
  InterferenceConfig interference;
  // Top-level `claims:` (optional): figures a seller or a blog gives for this cluster, which
  // `clustersim verify --scenario FILE` holds to the scenario's hardware (models/claims.h). Each
  // entry takes the claims file's form (scenarios/seed/claims.yaml's header) without its
  // hardware keys: the cluster is this one, overridden per claim by nodes, nic, nics_per_node,
  // links_per_nic, in_network_reduction. E.g.
  //   claims:
  //     - id: allreduce-2gb-18ms
  //       says: "2 GB all_reduce in 18 ms"
  //       kind: collective_time
  //       op: all_reduce
  //       size: 2GB
  //       time: 18ms
  //       free: [nics_per_node]
  // Parsed and checked on load (errors cite file:line:col: claims[i].key); shared and
  // immutable; null when the file has no `claims:`. Not a `--set` key.
  std::shared_ptr<const std::vector<Claim>> claims;
  // Top-level `published:` (optional): the figure a paper or a vendor published for this very
  // run, which `clustersim accuracy` scores the model on (docs/accuracy.md). Parsed and checked
  // on load; null when the file has none. Not a `--set` key.
  std::shared_ptr<const PublishedRun> published;

  // Where each key was given in the file (the key's own line:col), by dotted path
  // ("cluster.fabric.switch_radix", "cluster.node.gpu.bf16"), so that later stages (topology
  // builder, planner) can cite file:line:col in their errors.
  std::map<std::string, SourceLocation> locations;

  // "file:line:col: key.path" for a key, or "file: key.path" when the key was defaulted.
  std::string where(const std::string& key_path) const;
};

// Loads and validates a scenario file. Besides each key's own type, unit and range, loading
// checks the keys against each other (each error cites the key to change):
//   - tp x pp x dp x cp == nodes x gpus_per_node; tp <= gpus_per_node and divides it;
//   - heads % tp == 0; kv_heads divides heads and either kv_heads % tp == 0 or tp % kv_heads == 0
//     (KV heads then replicated); hidden % heads == 0;
//   - layers % (pp x virtual_stages) == 0, or (layers + 2) % (pp x virtual_stages) == 0 (Llama 3's
//     layout: embedding and output head take a layer slot in the first and last stage);
//   - global_batch % (dp x micro_batch) == 0; interleaved: pp >= 2 and micro-batches % pp == 0;
//     virtual_stages > 1 only with interleaved;
//   - cp > 1: seq_len % (2 x cp) == 0 (two chunks per rank for causal load balance); sp with
//     tp > 1: (seq_len / cp) % tp == 0;
//   - nodes > 1 needs nics_per_node >= 1, a nic and a `fabric:` section (there is no default
//     topology); a named switch must carry the NIC (same medium, port >= line rate);
//     in_network_reduction needs an IB NIC and a SHARP switch;
//   - tiers (2 or 3) only for fat-tree / rail-optimized; leaves, spines, uplinks_per_leaf only
//     for leaf-spine; oversubscription >= 1; zero in 0..3; the GPU has a peak at the precision.
// Whether the fabric can be built from the given switches (ports, radix) is the topology
// builder's check, and whether the job fits in memory the planner's.
Result<Scenario> load_scenario_file(const std::string& path);
// Same, from text already in memory; `origin` names it in messages (a path or "<embedded>").
Result<Scenario> load_scenario_text(std::string_view yaml_text, const std::string& origin);

// The rules above between the parallel layout and the cluster, the model, the batch and the
// sequence (from tp x pp x dp x cp == GPUs through sp's tokens per rank), for a scenario whose
// parallelism or batch was changed in code (the parallelism search). Ok, or the first rule
// broken as "file:line:col: key.path: what", citing the key to change (Scenario::where).
Status check_parallelism(const Scenario& scenario);

// One edit to a scenario's YAML before it is read (`clustersim sweep --set key=value`): a dotted
// key path and the value as YAML text (a scalar such as 16 or 400Gbps, or a flow map or list).
struct ScenarioOverride {
  std::string key_path;  // "cluster.nodes", "workload.parallelism.tp", "cluster.node.gpu.hbm"
  std::string value;
  std::string origin() const { return "--set " + key_path + "=" + value; }
};

// Loads with the overrides applied in order to the YAML tree, then validates as above. Maps
// missing on the way are created; a catalog id on the way to one of its fields becomes
// {base: id, field: value}. Errors in the file's keys cite file:line:col; errors in or under an
// overridden key cite the override ("--set cluster.nodes=abc: cluster.nodes: ..."). With
// check_layout false, check_parallelism is skipped: for a caller that replaces the layout (the
// parallelism search), the returned scenario's own layout may then be invalid.
Result<Scenario> load_scenario_file(const std::string& path,
                                    const std::vector<ScenarioOverride>& overrides,
                                    bool check_layout = true);
Result<Scenario> load_scenario_text(std::string_view yaml_text, const std::string& origin,
                                    const std::vector<ScenarioOverride>& overrides,
                                    bool check_layout = true);

// Whether `key_path` names a scenario key (this file's sections, e.g. "cluster.node.nic",
// "cluster.node.gpu.hbm"): Ok, or an error naming the first unknown part with the nearest
// known key ("did you mean").
Status check_scenario_key(std::string_view key_path);

// The keys the map at dotted `path` takes ("" is the top, "cluster.fabric", ...; a catalog entry
// such as "cluster.node.gpu" takes `base` and its override fields); empty for a key that takes a
// value. These are the keys --set accepts (claims: and published: are read from files only).
std::vector<std::string> settable_keys_under(std::string_view path);

}  // namespace clustersim::models
