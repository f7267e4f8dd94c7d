// The built-in hardware and model catalog: GPUs, scale-up links (NVLink / PCIe), NICs,
// switches and transformer presets. Every entry cites its source (datasheet, paper or a
// measurement file under scenarios/measurements/). Units are SI with the unit in the name:
// FLOP/s, bytes, bytes per second *per direction*, seconds, watts, USD.
// Entries are immutable and live for the whole program; find_* return borrowed pointers
// (nullptr when the id is unknown). A scenario or a calibration overlay copies an entry and
// overrides fields; the catalog itself never changes.
#pragma once

#include <algorithm>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::models {

// kFp4: NVFP4 (E2M1 values, an E4M3 scale per 16 and an fp32 one per tensor: Transformer
// Engine's NVFP4BlockScaling, the FP4 training recipe), on Blackwell's block-scaled tensor cores.
enum class Precision { kFp32, kTf32, kBf16, kFp16, kFp8, kFp4 };

// "bf16" -> kBf16 ...; returns false for an unknown name.
bool parse_precision(std::string_view name, Precision* out);
std::string_view to_string(Precision p);
// fp8 and fp4 training quantize the GEMMs' operands (the rest of the layer runs in bf16).
bool quantized(Precision p);
// Bytes per element of a tensor stored in this precision (fp32/tf32 4, bf16/fp16 2, fp8 1, fp4
// 0.5625: half a byte and an E4M3 scale per 16 elements).
double bytes_per_element(Precision p);

struct GpuSpec {
  std::string id;    // catalog id, e.g. "h100-sxm"
  std::string name;  // marketing name as NVML reports it, e.g. "NVIDIA H100 80GB HBM3"
  std::string vendor;  // "nvidia" | "amd"
  // Dense tensor-core peaks (no sparsity), FLOP/s. fp8 and fp4 are 0 where unsupported.
  double bf16_flops = 0;
  double fp16_flops = 0;
  double fp8_flops = 0;
  double fp4_flops = 0;  // NVFP4 (Blackwell)
  double tf32_flops = 0;
  double fp32_flops = 0;  // plain (non-tensor) fp32
  // Device memory capacity: the datasheet's "80 GB" read as GiB (HBM stacks are binary-sized:
  // H100 = 5 x 16 GiB). NVML's memory.total is 0.4-0.7% lower (H100 81559 MiB of 81920,
  // H200 143771 MiB of 144384) after the driver's reservation; the planner subtracts its own.
  double hbm_bytes = 0;
  double hbm_Bps = 0;     // device memory bandwidth (datasheet)
  int nvlink_links = 0;   // 0: no NVLink (PCIe only)
  double nvlink_link_Bps = 0;  // per link, per direction
  int pcie_gen = 0;
  int pcie_lanes = 16;
  double tdp_w = 0;
  // Board power idle with the SMs at their floor clock (nvidia-smi's power.draw, measured): the
  // part of the board's power that a lower clock does not reduce (HBM, PHYs, the board), which a
  // cap below the datasheet's takes out of the clock's share first (tdp_clock_factor). 0: not
  // measured (the whole cap scales with the clock).
  double idle_w = 0;
  double list_price_usd = 0;
  int sm_count = 0;
  std::string arch;  // CUDA arch, e.g. "sm_90"; "" for non-NVIDIA
  std::vector<std::uint16_t> pci_device_ids;  // PCI device ids this SKU reports (vendor below)
  std::string source;
  std::uint16_t pci_vendor_id = 0x10de;  // 0x10de NVIDIA, 0x1002 AMD

  double peak_flops(Precision p) const;
  // Aggregate NVLink bandwidth per direction (links x per-link); 0 without NVLink.
  double nvlink_Bps() const { return nvlink_links * nvlink_link_Bps; }
  // PCIe host link bandwidth per direction (raw, after 128b/130b encoding).
  double pcie_Bps() const;
};

// The architecture whose constants a CUDA arch takes where it has none of its own: Blackwell
// Ultra (sm_103: GB300, B300) takes Blackwell's (sm_100) NCCL tuning tables (NCCL keys them by
// the major compute capability), NVLink figures and GEMM constants; every other arch is its own.
std::string arch_family(const std::string& arch);
// Blackwell Ultra (sm_103: GB300, B300): Blackwell's SM with twice its exponentials and 1.5x its
// NVFP4 per clock, the two places where it does not take sm_100's constants.
bool blackwell_ultra(const std::string& arch);

enum class LinkTechnology { kNvlink, kPcie, kInfiniband, kRoce, kEthernetTcp };
std::string_view to_string(LinkTechnology t);

// Inside a node: how GPUs reach each other.
struct ScaleUpSpec {
  std::string id;  // "nvlink3" | "nvlink4" | "nvlink5" | "pcie4" | "pcie5"
  LinkTechnology technology = LinkTechnology::kNvlink;
  double per_gpu_Bps = 0;  // per GPU, per direction, all links together
  double latency_s = 0;    // one hop GPU -> switch -> GPU
  bool has_switch = false;        // NVSwitch (or a PCIe switch)
  bool switch_reduction = false;  // NVLink SHARP (NVLS) multicast/reduce in the switch
  std::string source;
};

// Between nodes: one NIC port technology. Bonded links multiply line_rate_Bps (scenario).
struct NicSpec {
  std::string id;  // "ib-ndr", "roce-400", "eth-tcp-100", ...
  LinkTechnology technology = LinkTechnology::kInfiniband;
  double line_rate_Bps = 0;        // per link, per direction (400 Gb/s NDR = 50e9)
  double latency_s = 0;            // NIC-to-NIC one way through one switch, small message
  double protocol_efficiency = 1;  // achievable fraction of line rate, large messages
  bool in_network_reduction_capable = false;  // SHARP-capable switches exist for it
  double price_usd = 0;            // one NIC
  double cable_price_usd = 0;      // one link with its two transceivers
  std::string source;
};

struct SwitchSpec {
  std::string id;  // "quantum-2-qm9700", ...
  LinkTechnology technology = LinkTechnology::kInfiniband;
  int radix = 0;           // ports at port_Bps
  double port_Bps = 0;     // per port, per direction
  double latency_s = 0;    // port to port, cut-through
  double price_usd = 0;
  double power_w = 0;
  bool in_network_reduction = false;  // SHARP
  std::string source;
};

// Transformer dimensions (decoder-only).
// Layer normalisation: LayerNorm (GPT, BLOOM, OPT, MPT) keeps a mean and a variance, RMSNorm
// (Llama) only the mean square; the kernels move the same bytes, their backward differs.
enum class Normalization { kLayerNorm, kRmsNorm };
// How positions enter: rotary embedding of Q and K in every layer (Llama), a learned absolute
// table added once to the input (GPT-2/3), or ALiBi's per-head bias on the attention scores
// (MPT, BLOOM), which fused attention kernels apply for free.
enum class PositionEmbedding { kRope, kLearned, kAlibi };
std::string_view to_string(Normalization n);
std::string_view to_string(PositionEmbedding p);

// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2; DeepSeek-AI 2024, "DeepSeek-V3
// Technical Report" sec. 2.1.1): queries through a low-rank latent of q_lora_rank (0: projected
// directly), keys and values through a shared latent of kv_lora_rank plus a decoupled rotary key
// of qk_rope_head_dim; each head's query and key have qk_nope_head_dim + qk_rope_head_dim
// dimensions, its value v_head_dim. Training materialises every head's K and V (no KV sharing).
struct MlaSpec {
  int q_lora_rank = 0;
  int kv_lora_rank = 0;  // > 0: MLA
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

// Mixture of experts (Shazeer et al. 2017; Mixtral, DeepSeek-V3): after the first dense_layers
// layers (which keep the dense MLP of ffn_hidden), every layer's MLP is `experts` routed experts,
// of which a router (a hidden x experts matmul) sends each token to top_k, plus shared_experts
// that every token goes through; each expert is an MLP of expert_ffn_hidden, gated like the
// model's dense MLP.
struct MoeSpec {
  int experts = 0;  // 0: a dense model
  int top_k = 0;
  int expert_ffn_hidden = 0;
  int shared_experts = 0;
  int dense_layers = 0;
  bool enabled() const { return experts > 0; }
};

struct ModelSpec {
  std::string id;    // "llama2-70b"
  std::string name;  // "Llama 2 70B"
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;     // == heads without grouped-query attention
  int ffn_hidden = 0;   // the dense MLP (MoE models: of their dense_layers)
  int vocab = 0;
  bool gated_ffn = true;        // SwiGLU: three FFN matrices instead of two
  bool tied_embeddings = false;  // input and output embedding share weights
  // Biases on the linears (GPT-2, GPT-3, MPT, BLOOM); only PyTorch eager's bias-gradient
  // reductions are timed (their parameters, under 0.1%, are not counted).
  bool linear_biases = false;
  Normalization normalization = Normalization::kRmsNorm;
  PositionEmbedding position_embedding = PositionEmbedding::kRope;
  int head_dim_override = 0;  // 0: hidden / heads (Qwen3-235B-A22B: 128 with 64 heads of 4096)
  MlaSpec mla;
  MoeSpec moe;
  // Multi-token-prediction modules (DeepSeek-V3 sec. 2.2: one, D = 1), trained beside the model
  // on its last pipeline stage: each a transformer layer like the model's last (a MoE layer in
  // DeepSeek-V3), a projection of 2 x hidden to hidden, and a second pass through the shared
  // output head and the loss. Timed, and held, on the last stage; not in the model's parameter
  // count (DeepSeek-V3's 671B excludes its 14B MTP module).
  int mtp_layers = 0;
  // Sliding-window attention: sliding_window_layers of the layers let each query see only the
  // sliding_window tokens before it (itself included); the rest attend to the whole causal
  // prefix. gpt-oss: 18 of 36 layers, 128 tokens (alternating); Mistral 7B: every layer, 4096.
  // 0: none.
  int sliding_window = 0;
  int sliding_window_layers = 0;
  std::string source;
  // Other names find_model accepts for this architecture: point releases that changed no
  // dimension (Llama 3.1 8B is Llama 3 8B's shape) and Hugging Face repository ids.
  std::vector<std::string> aliases;

  // Attention geometry: a query (and key) head's dimension, a value head's, the widths of all
  // query heads and of the K and V projections (MLA: every head, as training materialises them).
  double head_dim() const { return head_dim_override > 0 ? head_dim_override : double(hidden) / heads; }
  double qk_head_dim() const { return mla.enabled() ? mla.qk_head_dim() : head_dim(); }
  double v_head_dim() const { return mla.enabled() ? mla.v_head_dim : head_dim(); }
  double q_width() const { return heads * qk_head_dim(); }
  double kv_width() const { return (mla.enabled() ? heads : kv_heads) * qk_head_dim(); }
  double v_width() const { return (mla.enabled() ? heads : kv_heads) * v_head_dim(); }
  // The width of an MLP's up projection of `ffn` (the gate and up halves when gated).
  double up_width(double ffn) const { return (gated_ffn ? 2.0 : 1.0) * ffn; }
  // Layers whose MLP is a mixture of experts.
  int moe_layers() const { return moe.enabled() ? std::max(0, layers - moe.dense_layers) : 0; }
  // The share of the layers whose attention is windowed (0 without a window).
  double windowed_share() const {
    return sliding_window > 0 && layers > 0 ? double(sliding_window_layers) / layers : 0;
  }
};

const std::vector<GpuSpec>& gpu_catalog();
const std::vector<ScaleUpSpec>& scale_up_catalog();
const std::vector<NicSpec>& nic_catalog();
const std::vector<SwitchSpec>& switch_catalog();
const std::vector<ModelSpec>& model_catalog();

const GpuSpec* find_gpu(std::string_view id);
const ScaleUpSpec* find_scale_up(std::string_view id);
const NicSpec* find_nic(std::string_view id);
const SwitchSpec* find_switch(std::string_view id);
// A model by its id or one of its aliases, ignoring case and '_' for '-'
// ("Qwen/Qwen2.5-72B", "llama3.1_70b").
const ModelSpec* find_model(std::string_view id);

// The GPU whose PCI ids these are (validate's identity check); nullptr when none matches.
const GpuSpec* find_gpu_by_pci_id(std::uint16_t vendor_id, std::uint16_t device_id);

// True when `sw` can carry `nic`'s links: the same medium (InfiniBand with InfiniBand; RoCE and
// TCP both run on Ethernet switches) and a port at least as fast as one NIC link.
bool switch_serves(const SwitchSpec& sw, const NicSpec& nic);

// The switch a fabric of this NIC uses when the scenario names none: of the switches that
// serve it (switch_serves), the one with the slowest sufficient port, then the cheapest.
// Never nullptr for a catalog NIC; nullptr for a NIC no catalog switch serves.
const SwitchSpec* default_switch_for(const NicSpec& nic);

// "a, b, c" of all ids in one catalog, for error messages ("unknown gpu 'h100'; known: ...").
std::string known_gpu_ids();
std::string known_scale_up_ids();
std::string known_nic_ids();
std::string known_switch_ids();
std::string known_model_ids();

}  // namespace clustersim::models
