#include "models/catalog.h"

#include <cctype>
#include <utility>

#include "models/units.h"

// Conventions for the numbers below:
// - Tensor-core peaks are the datasheet's *dense* figures. NVIDIA datasheets print the sparse
//   (2:4) figure with an asterisk; the dense one is half of it.
// - Bandwidths are per direction. NVIDIA's "900 GB/s NVLink" is bidirectional: 18 links x 25 GB/s
//   x 2 directions, so 450 GB/s per direction.
// - Prices are approximate planning figures (street / reseller prices seen 2023-2025, not
//   quotes); a scenario overrides them. Each source string says which figures are approximate.
namespace clustersim::models {
namespace {

constexpr double kT = 1e12;  // tera, for FLOP/s and B/s literals
constexpr double kG = 1e9;   // giga

std::vector<GpuSpec> make_gpus() {
  return {
      {.id = "a100-sxm-40gb",
       .name = "NVIDIA A100-SXM4-40GB",
       .vendor = "nvidia",
       .bf16_flops = 312 * kT,
       .fp16_flops = 312 * kT,
       .fp8_flops = 0,
       .tf32_flops = 156 * kT,
       .fp32_flops = 19.5 * kT,
       .hbm_bytes = 40 * kGiB,
       .hbm_Bps = 1555 * kG,
       .nvlink_links = 12,
       .nvlink_link_Bps = 25 * kG,
       .pcie_gen = 4,
       .tdp_w = 400,
       .list_price_usd = 10000,
       .sm_count = 108,
       .arch = "sm_80",
       .pci_device_ids = {0x20B0},
       .source = "NVIDIA A100 Tensor Core GPU datasheet (2021): 312 TFLOP/s bf16/fp16 dense, 156 "
                 "tf32, 19.5 fp32, 40 GB HBM2 at 1,555 GB/s, NVLink3 600 GB/s bidirectional "
                 "(12 links), 400 W; 108 SMs: NVIDIA A100 whitepaper; PCI id: pci.ids "
                 "(pci-ids.ucw.cz); price approximate"},
      {.id = "a100-sxm-80gb",
       .name = "NVIDIA A100-SXM4-80GB",
       .vendor = "nvidia",
       .bf16_flops = 312 * kT,
       .fp16_flops = 312 * kT,
       .fp8_flops = 0,
       .tf32_flops = 156 * kT,
       .fp32_flops = 19.5 * kT,
       .hbm_bytes = 80 * kGiB,
       .hbm_Bps = 2039 * kG,
       .nvlink_links = 12,
       .nvlink_link_Bps = 25 * kG,
       .pcie_gen = 4,
       .tdp_w = 400,
       .list_price_usd = 15000,
       .sm_count = 108,
       .arch = "sm_80",
       .pci_device_ids = {0x20B2},
       .source = "NVIDIA A100 Tensor Core GPU datasheet (2021): 312 TFLOP/s bf16 dense, 80 GB "
                 "HBM2e at 2,039 GB/s, NVLink3 600 GB/s bidirectional (12 links), 400 W; PCI id: "
                 "pci.ids (pci-ids.ucw.cz); price approximate"},
      {.id = "a100-pcie-40gb",
       .name = "NVIDIA A100-PCIE-40GB",
       .vendor = "nvidia",
       .bf16_flops = 312 * kT,
       .fp16_flops = 312 * kT,
       .fp8_flops = 0,
       .tf32_flops = 156 * kT,
       .fp32_flops = 19.5 * kT,
       .hbm_bytes = 40 * kGiB,
       .hbm_Bps = 1555 * kG,
       .nvlink_links = 0,  // an optional bridge pairs two cards only: no node-wide NVLink
       .nvlink_link_Bps = 0,
       .pcie_gen = 4,
       .tdp_w = 250,
       .list_price_usd = 9000,
       .sm_count = 108,
       .arch = "sm_80",
       .pci_device_ids = {0x20B1},
       .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), PCIe 40GB column: 312 TFLOP/s "
                 "bf16 dense, 1,555 GB/s, 250 W; PCI id: pci.ids (pci-ids.ucw.cz); price "
                 "approximate"},
      {.id = "a100-pcie-80gb",
       .name = "NVIDIA A100 80GB PCIe",
       .vendor = "nvidia",
       .bf16_flops = 312 * kT,
       .fp16_flops = 312 * kT,
       .fp8_flops = 0,
       .tf32_flops = 156 * kT,
       .fp32_flops = 19.5 * kT,
       .hbm_bytes = 80 * kGiB,
       .hbm_Bps = 1935 * kG,
       .nvlink_links = 0,  // bridge pairs two cards only
       .nvlink_link_Bps = 0,
       .pcie_gen = 4,
       .tdp_w = 300,
       .list_price_usd = 14000,
       .sm_count = 108,
       .arch = "sm_80",
       .pci_device_ids = {0x20B5},
       .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), 80GB PCIe column: 312 TFLOP/s "
                 "bf16 dense, 1,935 GB/s, 300 W; PCI id: pci.ids (pci-ids.ucw.cz); price "
                 "approximate"},
      {.id = "h100-sxm",
       .name = "NVIDIA H100 80GB HBM3",
       .vendor = "nvidia",
       .bf16_flops = 989 * kT,
       .fp16_flops = 989 * kT,
       .fp8_flops = 1979 * kT,
       .tf32_flops = 494.5 * kT,
       .fp32_flops = 67 * kT,
       .hbm_bytes = 80 * kGiB,
       .hbm_Bps = 3350 * kG,
       .nvlink_links = 18,
       .nvlink_link_Bps = 25 * kG,
       .pcie_gen = 5,
       .tdp_w = 700,
       .idle_w = 71,  // device call 45: 70.7-71.2 W at 345 MHz
       .list_price_usd = 30000,
       .sm_count = 132,
       .arch = "sm_90",
       .pci_device_ids = {0x2330},
       .source = "NVIDIA H100 Tensor Core GPU datasheet (SXM5): 1,979 TFLOP/s bf16 and 3,958 fp8 "
                 "with sparsity (dense = half), 989 tf32 sparse, 67 fp32, 80 GB HBM3 at 3.35 "
                 "TB/s, NVLink4 900 GB/s bidirectional = 18 links x 25 GB/s/dir, up to 700 W; 132 "
                 "SMs: NVIDIA H100 Tensor Core GPU Architecture whitepaper; PCI id 0x2330: "
                 "pci.ids (pci-ids.ucw.cz); price approximate"},
      {.id = "h100-pcie",
       .name = "NVIDIA H100 PCIe",
       .vendor = "nvidia",
       .bf16_flops = 756 * kT,
       .fp16_flops = 756 * kT,
       .fp8_flops = 1513 * kT,
       .tf32_flops = 378 * kT,
       .fp32_flops = 51 * kT,
       .hbm_bytes = 80 * kGiB,
       .hbm_Bps = 2000 * kG,
       .nvlink_links = 0,  // the optional NVLink bridge pairs two cards only
       .nvlink_link_Bps = 0,
       .pcie_gen = 5,
       .tdp_w = 350,
       .list_price_usd = 25000,
       .sm_count = 114,
       .arch = "sm_90",
       .pci_device_ids = {0x2331},
       .source = "NVIDIA H100 Tensor Core GPU datasheet (PCIe): 1,513 TFLOP/s bf16 and 3,026 fp8 "
                 "sparse (dense = half), 756 tf32 sparse, 51 fp32, 80 GB HBM2e at 2 TB/s, 300-350 "
                 "W; 114 SMs: NVIDIA H100 whitepaper; PCI id: pci.ids (pci-ids.ucw.cz); price "
                 "approximate"},
      {.id = "h800",
       .name = "NVIDIA H800",
       .vendor = "nvidia",
       .bf16_flops = 989 * kT,
       .fp16_flops = 989 * kT,
       .fp8_flops = 1979 * kT,
       .tf32_flops = 494.5 * kT,
       .fp32_flops = 67 * kT,
       .hbm_bytes = 80 * kGiB,
       .hbm_Bps = 3350 * kG,
       .nvlink_links = 8,
       .nvlink_link_Bps = 25 * kG,
       .pcie_gen = 5,
       .tdp_w = 700,
       .list_price_usd = 30000,
       .sm_count = 132,
       .arch = "sm_90",
       .pci_device_ids = {0x2324},
       .source = "NVIDIA H800 SXM5 product brief: H100 SXM compute and memory with NVLink cut to "
                 "400 GB/s bidirectional (8 links x 25 GB/s/dir); PCI id: pci.ids "
                 "(pci-ids.ucw.cz); price approximate"},
      {.id = "h200-sxm",
       .name = "NVIDIA H200",
       .vendor = "nvidia",
       .bf16_flops = 989 * kT,
       .fp16_flops = 989 * kT,
       .fp8_flops = 1979 * kT,
       .tf32_flops = 494.5 * kT,
       .fp32_flops = 67 * kT,
       .hbm_bytes = 141 * kGiB,
       .hbm_Bps = 4800 * kG,
       .nvlink_links = 18,
       .nvlink_link_Bps = 25 * kG,
       .pcie_gen = 5,
       .tdp_w = 700,
       .idle_w = 78,  // device call 19: 78.4 W at 345 MHz
       .list_price_usd = 35000,
       .sm_count = 132,
       .arch = "sm_90",
       .pci_device_ids = {0x2335},
       .source = "NVIDIA H200 Tensor Core GPU datasheet (SXM): 1,979 TFLOP/s bf16 and 3,958 fp8 "
                 "sparse (dense = half), 67 fp32, 141 GB HBM3e at 4.8 TB/s, NVLink 900 GB/s "
                 "bidirectional, up to 700 W; 132 SMs as NVML reports them on our H200s "
                 "(scenarios/measurements/h200-1gpu.json); PCI id 0x2335: pci.ids "
                 "(pci-ids.ucw.cz); price approximate"},
      {.id = "h200-nvl",
       .name = "NVIDIA H200 NVL",
       .vendor = "nvidia",
       .bf16_flops = 835.5 * kT,
       .fp16_flops = 835.5 * kT,
       .fp8_flops = 1670.5 * kT,
       .tf32_flops = 417.5 * kT,
       .fp32_flops = 60 * kT,
       .hbm_bytes = 141 * kGiB,
       .hbm_Bps = 4800 * kG,
       .nvlink_links = 0,  // 2- or 4-way NVLink bridges only: no node-wide NVLink
       .nvlink_link_Bps = 0,
       .pcie_gen = 5,
       .tdp_w = 600,
       .list_price_usd = 32000,
       .sm_count = 132,
       .arch = "sm_90",
       .pci_device_ids = {0x233B},
       .source = "NVIDIA H200 Tensor Core GPU datasheet (NVL): 1,671 TFLOP/s bf16 and 3,341 fp8 "
                 "sparse (dense = half), 835 tf32 sparse, 60 fp32, 141 GB at 4.8 TB/s, up to 600 "
                 "W; PCI id: pci.ids (pci-ids.ucw.cz); price approximate"},
      {.id = "b200",
       .name = "NVIDIA B200",
       .vendor = "nvidia",
       .bf16_flops = 2250 * kT,
       .fp16_flops = 2250 * kT,
       .fp8_flops = 4500 * kT,
       .fp4_flops = 9000 * kT,
       .tf32_flops = 1100 * kT,
       .fp32_flops = 75 * kT,
       .hbm_bytes = 180 * kGiB,
       .hbm_Bps = 7700 * kG,
       .nvlink_links = 18,
       .nvlink_link_Bps = 50 * kG,
       .pcie_gen = 5,
       .tdp_w = 1000,
       .list_price_usd = 40000,
       .sm_count = 148,
       .arch = "sm_100",
       .pci_device_ids = {0x2901},
       .source = "NVIDIA HGX B200 specifications (per GPU): 4.5 PFLOP/s fp16/bf16, 9 fp8 and 18 "
                 "fp4 sparse (dense = half), 2.2 tf32 sparse, 75 TFLOP/s fp32, 180 GB HBM3e at 7.7 "
                 "TB/s, NVLink5 1.8 TB/s bidirectional (18 links x 50 GB/s/dir), up to 1,000 W; "
                 "148 SMs (74 of 80 per die): Chips and Cheese, 'Nvidia's B200: Keeping the CUDA "
                 "Juggernaut Rolling' (2025); PCI id: pci.ids (pci-ids.ucw.cz); price approximate"},
      {.id = "b300",
       .name = "NVIDIA B300 SXM6 AC",
       .vendor = "nvidia",
       .bf16_flops = 2250 * kT,
       .fp16_flops = 2250 * kT,
       .fp8_flops = 4500 * kT,
       .fp4_flops = 13500 * kT,
       .tf32_flops = 1125 * kT,
       .fp32_flops = 75 * kT,
       .hbm_bytes = 270 * kGiB,
       .hbm_Bps = 8000 * kG,
       .nvlink_links = 18,
       .nvlink_link_Bps = 50 * kG,
       .pcie_gen = 6,
       .tdp_w = 1100,
       .list_price_usd = 50000,
       .sm_count = 160,
       .arch = "sm_103",
       .pci_device_ids = {0x3182},
       .source = "NVIDIA HGX B300 specifications (8 GPUs): 36 PFLOP/s fp16/bf16 and 72 fp8 sparse "
                 "(per GPU dense = 2.25 and 4.5), 108 fp4 dense (13.5 per GPU), 2.3 TB of HBM3e "
                 "(288 GB per GPU) at up to 8 TB/s, NVLink5 1.8 TB/s bidirectional per GPU, 2x "
                 "attention performance (Blackwell Ultra: 160 SMs, doubled SFU exponentials; "
                 "NVIDIA, 'Inside NVIDIA Blackwell Ultra'); 270 GiB usable (NVML reports 269 GiB) "
                 "and a 1,100 W cap as NVML reports them; PCI id 0x3182: NVIDIA "
                 "open-gpu-kernel-modules README; price approximate"},
      // GB200 NVL72 and GB300 NVL72: 72 GPUs joined by NVLink 5 through the rack's NVSwitch
      // trays, one 900 GB/s-per-direction domain across 18 compute trays of 4 GPUs. clustersim's
      // node is its NVLink domain: an NVL72 rack (or the part of it a job uses, e.g. 64 GPUs on
      // 16 trays) is one node of 72 (64) GPUs on nvlink5 with one NIC per GPU
      // (docs/scenario-format.md, "Rack-scale NVLink").
      {.id = "gb200",
       .name = "NVIDIA GB200",
       .vendor = "nvidia",
       .bf16_flops = 2500 * kT,
       .fp16_flops = 2500 * kT,
       .fp8_flops = 5000 * kT,
       .fp4_flops = 10000 * kT,
       .tf32_flops = 1250 * kT,
       .fp32_flops = 80 * kT,
       .hbm_bytes = 186 * kGiB,
       .hbm_Bps = 8000 * kG,
       .nvlink_links = 18,
       .nvlink_link_Bps = 50 * kG,
       .pcie_gen = 5,
       .tdp_w = 1200,
       .list_price_usd = 45000,
       .sm_count = 148,
       .arch = "sm_100",
       .pci_device_ids = {0x2941},
       .source = "NVIDIA GB200 NVL72 specifications, per Blackwell GPU: 5 PFLOP/s fp16/bf16, 10 "
                 "fp8 and 20 fp4 sparse (dense = half), 2.5 tf32 sparse, 80 TFLOP/s fp32, 186 GB "
                 "HBM3e at 8 TB/s, NVLink5 1.8 TB/s bidirectional (18 links x 50 GB/s/dir) in a "
                 "72-GPU domain, configurable up to 1,200 W (NVML reports 189,471 MiB and a 1,200 "
                 "W cap); the B200's die, 148 SMs; PCI id 0x2941: NVIDIA open-gpu-kernel-modules "
                 "README (compatible GPUs); price approximate (a share of an NVL72 rack)"},
      {.id = "gb300",
       .name = "NVIDIA GB300",
       .vendor = "nvidia",
       .bf16_flops = 2500 * kT,
       .fp16_flops = 2500 * kT,
       .fp8_flops = 5000 * kT,
       .fp4_flops = 15000 * kT,
       .tf32_flops = 1250 * kT,
       .fp32_flops = 80 * kT,
       .hbm_bytes = 279 * kGiB,
       .hbm_Bps = 8000 * kG,
       .nvlink_links = 18,
       .nvlink_link_Bps = 50 * kG,
       .pcie_gen = 6,
       .tdp_w = 1400,
       .list_price_usd = 55000,
       .sm_count = 160,
       .arch = "sm_103",
       .pci_device_ids = {0x31C2, 0x31C3},
       .source = "NVIDIA, 'Inside NVIDIA Blackwell Ultra: The Chip Powering the AI Factory Era' "
                 "(developer blog, 2025): 160 SMs, 15 PFLOP/s dense NVFP4 (GB300 NVL72: 1,080 "
                 "dense), attention-layer acceleration (SFU exponentials 10.7 T/s, twice "
                 "Blackwell's), 288 GB HBM3e at 8 TB/s, NVLink5 1.8 TB/s bidirectional, PCIe 6; "
                 "GB300 NVL72 specifications per GPU: 5 PFLOP/s fp16/bf16 and 10 fp8 sparse (dense "
                 "= half), up to 1,400 W; 279 GiB usable (NVML reports 278 GiB of the 288 GB); PCI "
                 "ids 0x31C2, 0x31C3: NVIDIA open-gpu-kernel-modules README; price approximate"},
      {.id = "rtx-4090",
       .name = "NVIDIA GeForce RTX 4090",
       .vendor = "nvidia",
       .bf16_flops = 165.2 * kT,
       .fp16_flops = 165.2 * kT,
       .fp8_flops = 330.3 * kT,
       .tf32_flops = 82.6 * kT,
       .fp32_flops = 82.6 * kT,
       .hbm_bytes = 24 * kGiB,
       .hbm_Bps = 1008 * kG,
       .nvlink_links = 0,
       .nvlink_link_Bps = 0,
       .pcie_gen = 4,
       .tdp_w = 450,
       .list_price_usd = 1599,
       .sm_count = 128,
       .arch = "sm_89",
       .pci_device_ids = {0x2684},
       .source = "NVIDIA Ada Lovelace architecture whitepaper, RTX 4090 column: 165.2 TFLOP/s "
                 "fp16/bf16 tensor with fp32 accumulate (training; 330 with fp16 accumulate), "
                 "330.3 fp8, 82.6 tf32, 82.6 fp32, 24 GB GDDR6X at 1,008 GB/s, 450 W, 128 SMs, no "
                 "NVLink; $1,599 launch MSRP; PCI id: pci.ids"},
      {.id = "l40s",
       .name = "NVIDIA L40S",
       .vendor = "nvidia",
       .bf16_flops = 362.05 * kT,
       .fp16_flops = 362.05 * kT,
       .fp8_flops = 733 * kT,
       .tf32_flops = 183 * kT,
       .fp32_flops = 91.6 * kT,
       .hbm_bytes = 48 * kGiB,
       .hbm_Bps = 864 * kG,
       .nvlink_links = 0,
       .nvlink_link_Bps = 0,
       .pcie_gen = 4,
       .tdp_w = 350,
       .list_price_usd = 8000,
       .sm_count = 142,
       .arch = "sm_89",
       .pci_device_ids = {0x26B9},
       .source = "NVIDIA L40S datasheet: 362.05 TFLOP/s bf16/fp16 dense (733 sparse), 733 fp8 "
                 "dense, 183 tf32 dense, 91.6 fp32, 48 GB GDDR6 at 864 GB/s, 350 W, 142 SMs, no "
                 "NVLink; PCI id: pci.ids; price approximate"},
      {.id = "mi300x",
       .name = "AMD Instinct MI300X",
       .vendor = "amd",
       .bf16_flops = 1307.4 * kT,
       .fp16_flops = 1307.4 * kT,
       .fp8_flops = 2614.9 * kT,
       .tf32_flops = 653.7 * kT,
       .fp32_flops = 163.4 * kT,
       .hbm_bytes = 192 * kGiB,
       .hbm_Bps = 5300 * kG,
       // Infinity Fabric (xGMI), not NVLink: 7 point-to-point links to the other 7 GPUs of the
       // platform (a full mesh, no switch), 128 GB/s bidirectional each.
       .nvlink_links = 7,
       .nvlink_link_Bps = 64 * kG,
       .pcie_gen = 5,
       .tdp_w = 750,
       .list_price_usd = 15000,
       .sm_count = 304,  // compute units
       .arch = "",
       .pci_device_ids = {0x74A1},
       .source = "AMD Instinct MI300X datasheet: 1,307.4 TFLOP/s bf16/fp16 dense, 2,614.9 fp8 "
                 "dense, 653.7 tf32, 163.4 fp32, 192 GB HBM3 at 5.3 TB/s, 7 Infinity Fabric links "
                 "at 128 GB/s bidirectional, 304 CUs, 750 W; PCI id 0x74A1 (vendor 0x1002): "
                 "pci.ids; price approximate (press reports)",
       .pci_vendor_id = 0x1002},
  };
}

// Per-hop latency of GPU -> switch -> GPU: NCCL's own hardware latency for its low-latency (LL)
// protocol, which is the closest published figure to one small transfer (NVIDIA/nccl
// src/graph/tuning.cc, hwLat: NVLink 0.6 us, PCIe 1.0 us).
constexpr double kNvlinkHopLatencyS = 0.6e-6;
constexpr double kPcieHopLatencyS = 1.0e-6;

std::vector<ScaleUpSpec> make_scale_up() {
  return {
      {.id = "nvlink3",
       .technology = LinkTechnology::kNvlink,
       .per_gpu_Bps = 12 * 25 * kG,
       .latency_s = kNvlinkHopLatencyS,
       .has_switch = true,
       .switch_reduction = false,
       .source = "HGX A100: 12 NVLink3 links x 25 GB/s/dir = 300 GB/s per GPU per direction (600 "
                 "GB/s bidirectional, A100 datasheet) through 2nd-gen NVSwitch, no in-switch "
                 "reduction; latency: NCCL src/graph/tuning.cc, NVLink LL"},
      {.id = "nvlink4",
       .technology = LinkTechnology::kNvlink,
       .per_gpu_Bps = 18 * 25 * kG,
       .latency_s = kNvlinkHopLatencyS,
       .has_switch = true,
       .switch_reduction = true,
       .source = "HGX H100/H200: 18 NVLink4 links x 25 GB/s/dir = 450 GB/s per GPU per direction "
                 "(900 GB/s bidirectional, H100 datasheet) through 3rd-gen NVSwitch with NVLink "
                 "SHARP (NVLS); latency: NCCL src/graph/tuning.cc, NVLink LL"},
      {.id = "nvlink5",
       .technology = LinkTechnology::kNvlink,
       .per_gpu_Bps = 18 * 50 * kG,
       .latency_s = kNvlinkHopLatencyS,
       .has_switch = true,
       .switch_reduction = true,
       .source = "HGX B200: 18 NVLink5 links x 50 GB/s/dir = 900 GB/s per GPU per direction (1.8 "
                 "TB/s bidirectional, HGX B200 specifications) through 4th-gen NVSwitch with "
                 "NVLS; latency: NCCL src/graph/tuning.cc, NVLink LL"},
      {.id = "pcie4",
       .technology = LinkTechnology::kPcie,
       .per_gpu_Bps = 16 * 16e9 * 128 / 130 / 8,
       .latency_s = kPcieHopLatencyS,
       .has_switch = true,
       .switch_reduction = false,
       .source = "PCIe 4.0 x16: 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s per direction (PCI-SIG "
                 "PCIe 4.0 base spec); GPUs meet through a PCIe switch or the CPU root complex; "
                 "latency: NCCL src/graph/tuning.cc, PCIe LL"},
      {.id = "pcie5",
       .technology = LinkTechnology::kPcie,
       .per_gpu_Bps = 32 * 16e9 * 128 / 130 / 8,
       .latency_s = kPcieHopLatencyS,
       .has_switch = true,
       .switch_reduction = false,
       .source = "PCIe 5.0 x16: 32 GT/s x 16 lanes, 128b/130b = 63.0 GB/s per direction (PCI-SIG "
                 "PCIe 5.0 base spec); pinned copies reach 48-55 GB/s "
                 "(Azure/azurehpc-health-checks asks 48; 55.5 measured on our H200s); latency: "
                 "NCCL src/graph/tuning.cc, PCIe LL"},
  };
}

// Achievable fraction of line rate for large messages. InfiniBand: the 46-48 GB/s busbw per 400G
// NDR NIC that NVIDIA gives in nccl-tests #290 (also #319) -> 47/50 = 0.94; the same RDMA
// transport is assumed for HDR and XDR. RoCEv2 carries ~2% more header per 4 KiB MTU than IB
// and a well-tuned fabric reaches ~0.90; a mistuned one can deliver half (nccl #2409).
// Kernel TCP (NCCL's socket transport): ~0.7 with several sockets per peer.
constexpr double kIbEfficiency = 0.94;
constexpr double kRoceEfficiency = 0.90;
constexpr double kTcpEfficiency = 0.70;
// One-way small-message latency NIC -> switch -> NIC. IB: ConnectX-6/7 product briefs quote
// sub-600 ns per NIC and perftest ib_write_lat reads about 1 us through one switch. RoCE: the
// Ethernet switch adds ~0.3-0.5 us (port-to-port figures below). Kernel TCP: socket stack and
// interrupts, ~15 us one way (netperf TCP_RR round trips of ~30 us on 100 GbE).
constexpr double kIbLatencyS = 1.0e-6;
constexpr double kRoceLatencyS = 1.5e-6;
constexpr double kTcpLatencyS = 15e-6;

NicSpec nic(std::string id, LinkTechnology tech, double gbps, double price, double cable,
            std::string source) {
  NicSpec n;
  n.id = std::move(id);
  n.technology = tech;
  n.line_rate_Bps = gbps * kG / 8;
  switch (tech) {
    case LinkTechnology::kInfiniband:
      n.latency_s = kIbLatencyS;
      n.protocol_efficiency = kIbEfficiency;
      n.in_network_reduction_capable = true;  // SHARP in Quantum switches
      break;
    case LinkTechnology::kRoce:
      n.latency_s = kRoceLatencyS;
      n.protocol_efficiency = kRoceEfficiency;
      break;
    default:
      n.latency_s = kTcpLatencyS;
      n.protocol_efficiency = kTcpEfficiency;
      break;
  }
  n.price_usd = price;
  n.cable_price_usd = cable;
  n.source = std::move(source);
  return n;
}

std::vector<NicSpec> make_nics() {
  using LT = LinkTechnology;
  const std::string ib_common =
      "; efficiency 0.94 from 46-48 GB/s per 400G NDR NIC (NVIDIA in nccl-tests #290; also "
      "#319); latency ~1 us (perftest ib_write_lat through one switch); SHARP-capable; NIC "
      "and cable (link with transceivers/AOC) prices approximate reseller figures";
  const std::string roce_common =
      "; efficiency 0.90 for a well-tuned RoCEv2 fabric (a mistuned one can reach half: "
      "NVIDIA/nccl issue #2409); latency ~1.5 us (IB plus ~0.5 us Ethernet switch); no "
      "in-network reduction; prices approximate reseller figures";
  const std::string tcp_common =
      "; efficiency 0.70 for NCCL's socket transport (kernel TCP); latency ~15 us one way "
      "(kernel stack, netperf TCP_RR); prices approximate (commodity Ethernet NICs)";
  return {
      nic("ib-hdr", LT::kInfiniband, 200, 1100, 500,
          "InfiniBand HDR 200 Gb/s per port (IBTA; NVIDIA ConnectX-6 VPI product brief)" +
              ib_common),
      nic("ib-ndr", LT::kInfiniband, 400, 2000, 1500,
          "InfiniBand NDR 400 Gb/s per port (NVIDIA ConnectX-7 product brief)" + ib_common),
      nic("ib-xdr", LT::kInfiniband, 800, 3000, 3000,
          "InfiniBand XDR 800 Gb/s per port (NVIDIA ConnectX-8 SuperNIC product brief)" +
              ib_common),
      nic("roce-100", LT::kRoce, 100, 800, 300,
          "100 GbE RoCEv2 (NVIDIA ConnectX-6 Dx product brief)" + roce_common),
      nic("roce-200", LT::kRoce, 200, 1200, 600,
          "200 GbE RoCEv2 (NVIDIA ConnectX-6 Dx product brief)" + roce_common),
      nic("roce-400", LT::kRoce, 400, 2000, 1500,
          "400 GbE RoCEv2 (NVIDIA ConnectX-7 product brief)" + roce_common),
      nic("roce-800", LT::kRoce, 800, 3000, 3000,
          "800 GbE RoCEv2 (NVIDIA ConnectX-8 SuperNIC product brief)" + roce_common),
      nic("eth-tcp-100", LT::kEthernetTcp, 100, 700, 300,
          "100 GbE, TCP sockets (IEEE 802.3ba/cd line rate)" + tcp_common),
      nic("eth-tcp-200", LT::kEthernetTcp, 200, 1100, 600,
          "200 GbE, TCP sockets (IEEE 802.3bs/cd line rate)" + tcp_common),
      nic("eth-tcp-400", LT::kEthernetTcp, 400, 1800, 1500,
          "400 GbE, TCP sockets (IEEE 802.3bs line rate)" + tcp_common),
  };
}

std::vector<SwitchSpec> make_switches() {
  using LT = LinkTechnology;
  return {
      {.id = "quantum-qm8700",
       .technology = LT::kInfiniband,
       .radix = 40,
       .port_Bps = 200 * kG / 8,
       .latency_s = 130e-9,
       .price_usd = 22000,
       .power_w = 500,
       .in_network_reduction = true,
       .source = "NVIDIA Quantum QM8700 HDR switch product brief: 40 x 200 Gb/s, 130 ns "
                 "port-to-port, SHARPv2; power (with passive cables) and price approximate"},
      {.id = "quantum-2-qm9700",
       .technology = LT::kInfiniband,
       .radix = 64,
       .port_Bps = 400 * kG / 8,
       .latency_s = 200e-9,
       .price_usd = 33000,
       .power_w = 750,
       .in_network_reduction = true,
       .source = "NVIDIA Quantum-2 QM9700 NDR switch product brief: 64 x 400 Gb/s (32 twin-port "
                 "OSFP), 51.2 Tb/s, SHARPv3; NVIDIA publishes no port-to-port latency, resellers "
                 "quote 150-330 ns: 200 ns assumed; power and price approximate"},
      {.id = "quantum-x800-q3400",
       .technology = LT::kInfiniband,
       .radix = 144,
       .port_Bps = 800 * kG / 8,
       .latency_s = 200e-9,
       .price_usd = 150000,
       .power_w = 4000,
       .in_network_reduction = true,
       .source = "NVIDIA Quantum-X800 Q3400 XDR switch (GTC 2024 announcement): 144 x 800 Gb/s, "
                 "SHARPv4; latency assumed as Quantum-2; power and price rough estimates"},
      {.id = "spectrum-3-sn4600c",
       .technology = LT::kRoce,
       .radix = 64,
       .port_Bps = 100 * kG / 8,
       .latency_s = 450e-9,
       .price_usd = 25000,
       .power_w = 450,
       .in_network_reduction = false,
       .source = "NVIDIA Spectrum SN4600C product brief: 64 x 100 GbE, 12.8 Tb/s, RoCE; "
                 "cut-through latency ~450 ns (Spectrum-3 class); power and price approximate"},
      {.id = "spectrum-3-sn4700-2x200g",
       .technology = LT::kRoce,
       .radix = 64,
       .port_Bps = 200 * kG / 8,
       .latency_s = 450e-9,
       .price_usd = 35000,
       .power_w = 550,
       .in_network_reduction = false,
       .source = "NVIDIA Spectrum SN4700 product brief: 32 x 400 GbE, split 2 x 200 GbE per "
                 "port with breakout cables = 64 x 200 GbE, 12.8 Tb/s; latency ~450 ns; power "
                 "and price approximate"},
      {.id = "spectrum-3-sn4700",
       .technology = LT::kRoce,
       .radix = 32,
       .port_Bps = 400 * kG / 8,
       .latency_s = 450e-9,
       .price_usd = 35000,
       .power_w = 550,
       .in_network_reduction = false,
       .source = "NVIDIA Spectrum SN4700 product brief: 32 x 400 GbE, 12.8 Tb/s, RoCE; latency "
                 "~450 ns; power and price approximate"},
      {.id = "spectrum-4-sn5600-2x400g",
       .technology = LT::kRoce,
       .radix = 128,
       .port_Bps = 400 * kG / 8,
       .latency_s = 550e-9,
       .price_usd = 60000,
       .power_w = 1500,
       .in_network_reduction = false,
       .source = "NVIDIA Spectrum-4 SN5600 product brief: 64 x 800 GbE OSFP, split 2 x 400 GbE "
                 "per port = 128 x 400 GbE, 51.2 Tb/s; latency ~550 ns assumed; power and price "
                 "approximate"},
      {.id = "spectrum-4-sn5600",
       .technology = LT::kRoce,
       .radix = 64,
       .port_Bps = 800 * kG / 8,
       .latency_s = 550e-9,
       .price_usd = 60000,
       .power_w = 1500,
       .in_network_reduction = false,
       .source = "NVIDIA Spectrum-4 SN5600 product brief: 64 x 800 GbE (or 128 x 400 GbE), 51.2 "
                 "Tb/s, RoCE, Spectrum-X; latency ~550 ns assumed; power and price approximate"},
  };
}

// gpt-oss (both sizes): residual width 2880, 64 query heads of 64 and 8 KV heads, experts of
// 2880 (SwiGLU), top 4, a 128-token window on every other layer, vocabulary 201,088; biases on
// the attention's and the experts' linears (config.json "attention_bias": true, the experts'
// gate_up_proj_bias and down_proj_bias).
ModelSpec gpt_oss(const char* id, int layers, int experts, const char* source) {
  ModelSpec m{.id = id,
              .name = id,
              .layers = layers,
              .hidden = 2880,
              .heads = 64,
              .kv_heads = 8,
              .ffn_hidden = 2880,
              .vocab = 201088,
              .gated_ffn = true,
              .tied_embeddings = false,
              .linear_biases = true,
              .head_dim_override = 64,
              .moe = {.experts = experts, .top_k = 4, .expert_ffn_hidden = 2880},
              .sliding_window = 128,
              .sliding_window_layers = layers / 2,
              .source = source};
  return m;
}

// "qwen2.5-72b" -> "72B": the size as a Hugging Face repository spells it.
std::string upper_size(std::string_view id, std::string_view prefix) {
  std::string size(id.substr(prefix.size()));
  for (char& c : size) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return size;
}

// Qwen2.5's base models (Qwen Team 2024, 'Qwen2.5 Technical Report', Table 1; Hugging Face
// Qwen/Qwen2.5-<size> config.json): SwiGLU, RMSNorm, RoPE, untied above 3B, vocabulary 152,064.
// Their Q/K/V biases are not timed.
ModelSpec qwen25(const char* id, int layers, int hidden, int heads, int kv_heads, int ffn,
                 const char* params) {
  const std::string name = "Qwen2.5-" + upper_size(id, "qwen2.5-");
  const std::string repo = "Qwen/" + name;
  return {.id = id,
          .name = name,
          .layers = layers,
          .hidden = hidden,
          .heads = heads,
          .kv_heads = kv_heads,
          .ffn_hidden = ffn,
          .vocab = 152064,
          .gated_ffn = true,
          .tied_embeddings = false,
          .source = "Qwen Team 2024, 'Qwen2.5 Technical Report' Table 1 (" +
                    std::to_string(layers) + " layers, " + std::to_string(heads) + " Q / " +
                    std::to_string(kv_heads) + " KV heads, untied; " + params +
                    " parameters); Hugging Face " + repo + " config.json (hidden " +
                    std::to_string(hidden) + ", intermediate " + std::to_string(ffn) +
                    ", vocab 152064). Its Q/K/V biases are not timed",
          .aliases = {repo}};
}

// Qwen3's dense models (Qwen Team 2025, 'Qwen3 Technical Report', Table 1; Hugging Face
// Qwen/Qwen3-<size> config.json): 8 KV heads, heads of 128 whatever the residual width, SwiGLU,
// RMSNorm, RoPE, untied from 8B up, vocabulary 151,936. Their Q/K RMSNorms are not timed.
// with_base: a -Base repository was released beside the post-trained one (not for 32B).
ModelSpec qwen3_dense(const char* id, int layers, int hidden, int heads, int ffn,
                      const char* params, bool with_base) {
  const std::string name = "Qwen3-" + upper_size(id, "qwen3-");
  const std::string repo = "Qwen/" + name;
  std::vector<std::string> aliases = {repo};
  if (with_base) aliases.push_back(repo + "-Base");
  return {.id = id,
          .name = name,
          .layers = layers,
          .hidden = hidden,
          .heads = heads,
          .kv_heads = 8,
          .ffn_hidden = ffn,
          .vocab = 151936,
          .gated_ffn = true,
          .tied_embeddings = false,
          .head_dim_override = 128,
          .source = "Qwen Team 2025, 'Qwen3 Technical Report' Table 1 (" +
                    std::to_string(layers) + " layers, " + std::to_string(heads) +
                    " Q / 8 KV heads, untied; " + params + " parameters); Hugging Face " + repo +
                    " config.json (hidden " + std::to_string(hidden) + ", head_dim 128, "
                    "intermediate " + std::to_string(ffn) + ", vocab 151936). Its Q/K RMSNorms "
                    "are not timed",
          .aliases = aliases};
}

std::vector<ModelSpec> make_models() {
  return {
      {.id = "gpt2-124m",
       .name = "GPT-2 124M",
       .layers = 12,
       .hidden = 768,
       .heads = 12,
       .kv_heads = 12,
       .ffn_hidden = 3072,
       .vocab = 50257,
       .gated_ffn = false,
       .tied_embeddings = true,
       .linear_biases = true,
       .normalization = Normalization::kLayerNorm,
       .position_embedding = PositionEmbedding::kLearned,
       .source = "Radford et al. 2019, 'Language Models are Unsupervised Multitask Learners'; "
                 "Hugging Face openai-community/gpt2 config.json (n_layer 12, n_embd 768, n_head "
                 "12, vocab 50257, tied lm_head)"},
      {.id = "gpt3-175b",
       .name = "GPT-3 175B",
       .layers = 96,
       .hidden = 12288,
       .heads = 96,
       .kv_heads = 96,
       .ffn_hidden = 49152,
       .vocab = 50257,
       .gated_ffn = false,
       .tied_embeddings = true,
       .linear_biases = true,
       .normalization = Normalization::kLayerNorm,
       .position_embedding = PositionEmbedding::kLearned,
       .source = "Brown et al. 2020, 'Language Models are Few-Shot Learners', Table 2.1 (96 "
                 "layers, d_model 12288, 96 heads, d_ff = 4 d_model, GPT-2 tokenizer); embeddings "
                 "tied as in GPT-2 and Narayanan et al. 2021's parameter count"},
      {.id = "llama2-7b",
       .name = "Llama 2 7B",
       .layers = 32,
       .hidden = 4096,
       .heads = 32,
       .kv_heads = 32,
       .ffn_hidden = 11008,
       .vocab = 32000,
       .gated_ffn = true,
       .tied_embeddings = false,
       .source = "Touvron et al. 2023, 'Llama 2'; Hugging Face meta-llama/Llama-2-7b-hf "
                 "config.json"},
      {.id = "llama2-13b",
       .name = "Llama 2 13B",
       .layers = 40,
       .hidden = 5120,
       .heads = 40,
       .kv_heads = 40,
       .ffn_hidden = 13824,
       .vocab = 32000,
       .gated_ffn = true,
       .tied_embeddings = false,
       .source = "Touvron et al. 2023, 'Llama 2'; Hugging Face meta-llama/Llama-2-13b-hf "
                 "config.json"},
      {.id = "llama2-70b",
       .name = "Llama 2 70B",
       .layers = 80,
       .hidden = 8192,
       .heads = 64,
       .kv_heads = 8,
       .ffn_hidden = 28672,
       .vocab = 32000,
       .gated_ffn = true,
       .tied_embeddings = false,
       .source = "Touvron et al. 2023, 'Llama 2' (GQA with 8 KV heads); Hugging Face "
                 "meta-llama/Llama-2-70b-hf config.json"},
      {.id = "llama3-8b",
       .name = "Llama 3 8B",
       .layers = 32,
       .hidden = 4096,
       .heads = 32,
       .kv_heads = 8,
       .ffn_hidden = 14336,
       .vocab = 128256,
       .gated_ffn = true,
       .tied_embeddings = false,
       .source = "Llama Team 2024, 'The Llama 3 Herd of Models', Table 3; Hugging Face "
                 "meta-llama/Meta-Llama-3-8B config.json; Llama 3.1 8B has the same shape",
       .aliases = {"llama3.1-8b", "meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-3.1-8B"}},
      {.id = "llama3-70b",
       .name = "Llama 3 70B",
       .layers = 80,
       .hidden = 8192,
       .heads = 64,
       .kv_heads = 8,
       .ffn_hidden = 28672,
       .vocab = 128256,
       .gated_ffn = true,
       .tied_embeddings = false,
       .source = "Llama Team 2024, 'The Llama 3 Herd of Models', Table 3; Hugging Face "
                 "meta-llama/Meta-Llama-3-70B config.json; Llama 3.1 and 3.3 70B have the same "
                 "shape",
       .aliases = {"llama3.1-70b", "llama3.3-70b", "meta-llama/Meta-Llama-3-70B",
                   "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.3-70B-Instruct"}},
      {.id = "llama3-405b",
       .name = "Llama 3.1 405B",
       .layers = 126,
       .hidden = 16384,
       .heads = 128,
       .kv_heads = 8,
       .ffn_hidden = 53248,
       .vocab = 128256,
       .gated_ffn = true,
       .tied_embeddings = false,
       .source = "Llama Team 2024, 'The Llama 3 Herd of Models', Table 3; Hugging Face "
                 "meta-llama/Llama-3.1-405B config.json",
       .aliases = {"llama3.1-405b", "meta-llama/Llama-3.1-405B"}},
      {.id = "llama3.2-1b",
       .name = "Llama 3.2 1B",
       .layers = 16,
       .hidden = 2048,
       .heads = 32,
       .kv_heads = 8,
       .ffn_hidden = 8192,
       .vocab = 128256,
       .gated_ffn = true,
       .tied_embeddings = true,
       .source = "Meta 2024, Llama 3.2 model card (1.23B parameters); Hugging Face "
                 "meta-llama/Llama-3.2-1B config.json (16 layers, hidden 2048, 32 heads of 64, "
                 "8 KV heads, intermediate 8192, tie_word_embeddings true)",
       .aliases = {"meta-llama/Llama-3.2-1B"}},
      {.id = "llama3.2-3b",
       .name = "Llama 3.2 3B",
       .layers = 28,
       .hidden = 3072,
       .heads = 24,
       .kv_heads = 8,
       .ffn_hidden = 8192,
       .vocab = 128256,
       .gated_ffn = true,
       .tied_embeddings = true,
       .source = "Meta 2024, Llama 3.2 model card (3.21B parameters); Hugging Face "
                 "meta-llama/Llama-3.2-3B config.json (28 layers, hidden 3072, 24 heads of "
                 "128, 8 KV heads, intermediate 8192, tie_word_embeddings true)",
       .aliases = {"meta-llama/Llama-3.2-3B"}},
      {.id = "mistral-7b",
       .name = "Mistral 7B",
       .layers = 32,
       .hidden = 4096,
       .heads = 32,
       .kv_heads = 8,
       .ffn_hidden = 14336,
       .vocab = 32000,
       .gated_ffn = true,
       .tied_embeddings = false,
       .sliding_window = 4096,
       .sliding_window_layers = 32,
       .source = "Jiang et al. 2023, 'Mistral 7B', Table 1 (32 layers, dim 4096, 32 heads of "
                 "128, 8 KV heads, hidden_dim 14336, window 4096, vocab 32000); Hugging Face "
                 "mistralai/Mistral-7B-v0.1 config.json (7.24B parameters)",
       .aliases = {"mistralai/Mistral-7B-v0.1"}},
      qwen25("qwen2.5-7b", 28, 3584, 28, 4, 18944, "7.61B"),
      qwen25("qwen2.5-14b", 48, 5120, 40, 8, 13824, "14.7B"),
      qwen25("qwen2.5-32b", 64, 5120, 40, 8, 27648, "32.5B"),
      qwen25("qwen2.5-72b", 80, 8192, 64, 8, 29568, "72.7B"),
      qwen3_dense("qwen3-8b", 36, 4096, 32, 12288, "8.2B", true),
      qwen3_dense("qwen3-14b", 40, 5120, 40, 17408, "14.8B", true),
      qwen3_dense("qwen3-32b", 64, 5120, 64, 25600, "32.8B", false),
      {.id = "nemotron4-15b",
       .name = "Nemotron-4 15B",
       .layers = 32,
       .hidden = 6144,
       .heads = 48,
       .kv_heads = 8,
       .ffn_hidden = 24576,
       .vocab = 256000,
       .gated_ffn = false,
       .tied_embeddings = false,
       .normalization = Normalization::kLayerNorm,
       .source = "Parmar et al. 2024, 'Nemotron-4 15B Technical Report' Table 1 (32 layers, "
                 "hidden 6144, 48 heads, 8 KV heads, vocab 256,000; 3.2B embedding and 12.5B "
                 "non-embedding parameters), sec. 2: squared-ReLU MLP of 4h (two matrices), "
                 "RoPE, untied embeddings, no biases"},
      {.id = "nemotron4-340b",
       .name = "Nemotron-4 340B",
       .layers = 96,
       .hidden = 18432,
       .heads = 96,
       .kv_heads = 8,
       .ffn_hidden = 73728,
       .vocab = 256000,
       .gated_ffn = false,
       .tied_embeddings = false,
       .normalization = Normalization::kLayerNorm,
       .source = "NVIDIA 2024, 'Nemotron-4 340B Technical Report' Table 1 (96 layers, hidden "
                 "18432, 96 heads, 8 KV heads, vocab 256,000; 9.4B embedding and 331.6B "
                 "non-embedding parameters), sec. 2.1: as Nemotron-4 15B (squared-ReLU MLP of "
                 "4h, RoPE, untied, no biases)",
       .aliases = {"nvidia/Nemotron-4-340B-Base"}},
      {.id = "opt-175b",
       .name = "OPT-175B",
       .layers = 96,
       .hidden = 12288,
       .heads = 96,
       .kv_heads = 96,
       .ffn_hidden = 49152,
       .vocab = 50272,
       .gated_ffn = false,
       .tied_embeddings = true,
       .linear_biases = true,
       .normalization = Normalization::kLayerNorm,
       .position_embedding = PositionEmbedding::kLearned,
       .source = "Zhang et al. 2022, 'OPT: Open Pre-trained Transformer Language Models', Table 1 "
                 "(96 layers, 96 heads, embedding 12288; GPT-3's shape, ReLU MLP of 4h); "
                 "the OPT family's Hugging Face config.json files (vocab 50272, learned "
                 "positions, tied output projection, biases)"},
      {.id = "bloom-176b",
       .name = "BLOOM 176B",
       .layers = 70,
       .hidden = 14336,
       .heads = 112,
       .kv_heads = 112,
       .ffn_hidden = 57344,
       .vocab = 250880,
       .gated_ffn = false,
       .tied_embeddings = true,
       .linear_biases = true,
       .normalization = Normalization::kLayerNorm,
       .position_embedding = PositionEmbedding::kAlibi,
       .source = "BigScience 2022, bigscience-workshop/bigscience train/tr11-176B-ml/README.md "
                 "(NLAYERS 70, NHIDDEN 14336, NHEADS 112, vocabulary padded to 250,880, ALiBi, "
                 "GELU MLP of 4h, tied embeddings); Hugging Face bigscience/bloom config.json. "
                 "Its embedding LayerNorm is not timed",
       .aliases = {"bigscience/bloom"}},
      {.id = "mpt-7b",
       .name = "MPT-7B",
       .layers = 32,
       .hidden = 4096,
       .heads = 32,
       .kv_heads = 32,
       .ffn_hidden = 16384,
       .vocab = 50432,
       .gated_ffn = false,
       .tied_embeddings = true,
       .normalization = Normalization::kLayerNorm,
       .position_embedding = PositionEmbedding::kAlibi,
       .source = "MosaicML 2023, 'Introducing MPT-7B' (6.7B parameters); Hugging Face "
                 "mosaicml/mpt-7b config.json (d_model 4096, n_heads 32, n_layers 32, "
                 "expansion_ratio 4, vocab 50432, alibi, no_bias, tied embeddings)",
       .aliases = {"mosaicml/mpt-7b"}},
      {.id = "mpt-30b",
       .name = "MPT-30B",
       .layers = 48,
       .hidden = 7168,
       .heads = 64,
       .kv_heads = 64,
       .ffn_hidden = 28672,
       .vocab = 50432,
       .gated_ffn = false,
       .tied_embeddings = true,
       .normalization = Normalization::kLayerNorm,
       .position_embedding = PositionEmbedding::kAlibi,
       .source = "MosaicML 2023, 'MPT-30B' (29.95B parameters); Hugging Face mosaicml/mpt-30b "
                 "config.json (d_model 7168, n_heads 64, n_layers 48, expansion_ratio 4, vocab "
                 "50432, alibi, no_bias, tied embeddings)",
       .aliases = {"mosaicml/mpt-30b"}},
      // Mixtures of experts. Total and activated parameters as the model cards state them are
      // checked in tests/models/transformer_model_test.cc.
      {.id = "mixtral-8x7b",
       .name = "Mixtral 8x7B",
       .layers = 32,
       .hidden = 4096,
       .heads = 32,
       .kv_heads = 8,
       .ffn_hidden = 14336,
       .vocab = 32000,
       .gated_ffn = true,
       .tied_embeddings = false,
       .moe = {.experts = 8, .top_k = 2, .expert_ffn_hidden = 14336},
       .source = "Jiang et al. 2024, 'Mixtral of Experts' (8 experts, top-2, 46.7B total, 12.9B "
                 "active); Hugging Face mistralai/Mixtral-8x7B-v0.1 config.json"},
      {.id = "mixtral-8x22b",
       .name = "Mixtral 8x22B",
       .layers = 56,
       .hidden = 6144,
       .heads = 48,
       .kv_heads = 8,
       .ffn_hidden = 16384,
       .vocab = 32768,
       .gated_ffn = true,
       .tied_embeddings = false,
       .moe = {.experts = 8, .top_k = 2, .expert_ffn_hidden = 16384},
       .source = "Mistral AI, 'Cheaper, Better, Faster, Stronger' (2024-04-17: 141B total, 39B "
                 "active); Hugging Face mistralai/Mixtral-8x22B-v0.1 config.json"},
      {.id = "dbrx",
       .name = "DBRX",
       .layers = 40,
       .hidden = 6144,
       .heads = 48,
       .kv_heads = 8,
       .ffn_hidden = 10752,
       .vocab = 100352,
       .gated_ffn = true,
       .tied_embeddings = false,
       .normalization = Normalization::kLayerNorm,
       .moe = {.experts = 16, .top_k = 4, .expert_ffn_hidden = 10752},
       .source = "Databricks 2024, 'Introducing DBRX' (16 experts, 4 per token; 132B total, 36B "
                 "active); Hugging Face databricks/dbrx-base config.json (40 layers, d_model "
                 "6144, 48 heads, 8 KV heads, ffn_hidden_size 10752, vocab 100352)",
       .aliases = {"databricks/dbrx-base"}},
      {.id = "deepseek-v3",
       .name = "DeepSeek-V3",
       .layers = 61,
       .hidden = 7168,
       .heads = 128,
       .kv_heads = 128,
       .ffn_hidden = 18432,
       .vocab = 129280,
       .gated_ffn = true,
       .tied_embeddings = false,
       .mla = {.q_lora_rank = 1536,
               .kv_lora_rank = 512,
               .qk_nope_head_dim = 128,
               .qk_rope_head_dim = 64,
               .v_head_dim = 128},
       .moe = {.experts = 256,
               .top_k = 8,
               .expert_ffn_hidden = 2048,
               .shared_experts = 1,
               .dense_layers = 3},
       .mtp_layers = 1,
       .source = "DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report' sec. 4.2 (61 layers, hidden "
                 "7168, MLA with 128 heads, kv rank 512, q rank 1536, head dims 128 + 64 rotary; "
                 "first 3 layers dense, then 1 shared + 256 routed experts of 2048, 8 per token; "
                 "671B total, 37B activated; sec. 2.2 and 4.2: one multi-token-prediction "
                 "module, timed on the last stage, its 14B weights not counted); "
                 "Hugging Face deepseek-ai/DeepSeek-V3 config.json (num_nextn_predict_layers 1)"},
      {.id = "qwen3-235b-a22b",
       .name = "Qwen3-235B-A22B",
       .layers = 94,
       .hidden = 4096,
       .heads = 64,
       .kv_heads = 4,
       .ffn_hidden = 12288,
       .vocab = 151936,
       .gated_ffn = true,
       .tied_embeddings = false,
       .head_dim_override = 128,
       .moe = {.experts = 128, .top_k = 8, .expert_ffn_hidden = 1536},
       .source = "Qwen Team 2025, 'Qwen3 Technical Report' Table 2 (94 layers, 64 Q / 4 KV heads "
                 "of 128, 128 experts, 8 activated, no shared expert; 235B total, 22B "
                 "activated); Hugging Face Qwen/Qwen3-235B-A22B config.json (hidden 4096, "
                 "moe_intermediate_size 1536; every layer MoE, intermediate_size unused)"},
      {.id = "qwen3-30b-a3b",
       .name = "Qwen3-30B-A3B",
       .layers = 48,
       .hidden = 2048,
       .heads = 32,
       .kv_heads = 4,
       .ffn_hidden = 6144,
       .vocab = 151936,
       .gated_ffn = true,
       .tied_embeddings = false,
       .head_dim_override = 128,
       .moe = {.experts = 128, .top_k = 8, .expert_ffn_hidden = 768},
       .source = "Qwen Team 2025, 'Qwen3 Technical Report' Table 2 (48 layers, 32 Q / 4 KV heads "
                 "of 128, 128 experts, 8 activated; 30.5B total, 3.3B activated); Hugging Face "
                 "Qwen/Qwen3-30B-A3B config.json (hidden 2048, moe_intermediate_size 768)"},
      gpt_oss("gpt-oss-120b", 36, 128,
              "OpenAI 2025, 'gpt-oss-120b & gpt-oss-20b Model Card', Table 1 and sec. 2.1 (36 "
              "layers, residual width 2880, 128 experts, top 4; 64 query heads of 64, 8 KV "
              "heads; attention alternating between a 128-token band and dense; 116.8B total, "
              "5.1B active); Hugging Face openai/gpt-oss-120b config.json (intermediate_size "
              "2880, vocab_size 201088, sliding_window 128, layer_types)"),
      gpt_oss("gpt-oss-20b", 24, 32,
              "OpenAI 2025, 'gpt-oss-120b & gpt-oss-20b Model Card', Table 1 (24 layers, 32 "
              "experts, top 4; 20.9B total, 3.6B active; otherwise as gpt-oss-120b); Hugging "
              "Face openai/gpt-oss-20b config.json"),
      {.id = "kimi-k2",
       .name = "Kimi K2",
       .layers = 61,
       .hidden = 7168,
       .heads = 64,
       .kv_heads = 64,
       .ffn_hidden = 18432,
       .vocab = 163840,
       .gated_ffn = true,
       .tied_embeddings = false,
       .mla = {.q_lora_rank = 1536,
               .kv_lora_rank = 512,
               .qk_nope_head_dim = 128,
               .qk_rope_head_dim = 64,
               .v_head_dim = 128},
       .moe = {.experts = 384,
               .top_k = 8,
               .expert_ffn_hidden = 2048,
               .shared_experts = 1,
               .dense_layers = 1},
       .source = "Kimi Team 2025, 'Kimi K2: Open Agentic Intelligence' (DeepSeek-V3's "
                 "architecture with 64 heads, 384 experts, 1 dense layer; 1.04T total, 32B "
                 "activated); Hugging Face moonshotai/Kimi-K2-Base config.json"},
  };
}

template <class Spec>
const Spec* find_by_id(const std::vector<Spec>& specs, std::string_view id) {
  for (const auto& s : specs) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

template <class Spec>
std::string join_ids(const std::vector<Spec>& specs) {
  std::string out;
  for (const auto& s : specs) {
    if (!out.empty()) out += ", ";
    out += s.id;
  }
  return out;
}

// RoCE and TCP are two protocols over the same Ethernet switches.
bool is_ethernet(LinkTechnology t) {
  return t == LinkTechnology::kRoce || t == LinkTechnology::kEthernetTcp;
}

}  // namespace

bool parse_precision(std::string_view name, Precision* out) {
  static constexpr std::pair<std::string_view, Precision> kNames[] = {
      {"fp32", Precision::kFp32}, {"tf32", Precision::kTf32}, {"bf16", Precision::kBf16},
      {"fp16", Precision::kFp16}, {"fp8", Precision::kFp8}, {"fp4", Precision::kFp4}};
  for (const auto& [n, p] : kNames) {
    if (n == name) {
      *out = p;
      return true;
    }
  }
  return false;
}

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp8: return "fp8";
    case Precision::kFp4: return "fp4";
  }
  return "?";
}

bool quantized(Precision p) { return p == Precision::kFp8 || p == Precision::kFp4; }

double bytes_per_element(Precision p) {
  switch (p) {
    case Precision::kFp32:
    case Precision::kTf32: return 4;
    case Precision::kBf16:
    case Precision::kFp16: return 2;
    case Precision::kFp8: return 1;
    case Precision::kFp4: return 0.5 + 1.0 / 16;
  }
  return 0;
}

std::string_view to_string(LinkTechnology t) {
  switch (t) {
    case LinkTechnology::kNvlink: return "nvlink";
    case LinkTechnology::kPcie: return "pcie";
    case LinkTechnology::kInfiniband: return "infiniband";
    case LinkTechnology::kRoce: return "roce";
    case LinkTechnology::kEthernetTcp: return "ethernet-tcp";
  }
  return "?";
}

std::string_view to_string(Normalization n) {
  switch (n) {
    case Normalization::kLayerNorm: return "layernorm";
    case Normalization::kRmsNorm: return "rmsnorm";
  }
  return "?";
}

std::string_view to_string(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::kRope: return "rope";
    case PositionEmbedding::kLearned: return "learned";
    case PositionEmbedding::kAlibi: return "alibi";
  }
  return "?";
}

double GpuSpec::peak_flops(Precision p) const {
  switch (p) {
    case Precision::kFp32: return fp32_flops;
    case Precision::kTf32: return tf32_flops;
    case Precision::kBf16: return bf16_flops;
    case Precision::kFp16: return fp16_flops;
    case Precision::kFp8: return fp8_flops;
    case Precision::kFp4: return fp4_flops;
  }
  return 0;
}

std::string arch_family(const std::string& arch) {
  return blackwell_ultra(arch) ? std::string("sm_100") : arch;
}

bool blackwell_ultra(const std::string& arch) { return arch == "sm_103"; }

double GpuSpec::pcie_Bps() const {
  // Per lane per direction: transfer rate x encoding efficiency / 8 bits (PCI-SIG base specs).
  // Gen 1-2 use 8b/10b, gen 3-5 128b/130b, gen 6 FLIT mode (242 payload bytes of 256).
  double lane_Bps = 0;
  switch (pcie_gen) {
    case 1: lane_Bps = 2.5e9 * 8 / 10 / 8; break;
    case 2: lane_Bps = 5e9 * 8 / 10 / 8; break;
    case 3: lane_Bps = 8e9 * 128 / 130 / 8; break;
    case 4: lane_Bps = 16e9 * 128 / 130 / 8; break;
    case 5: lane_Bps = 32e9 * 128 / 130 / 8; break;
    case 6: lane_Bps = 64e9 * 242 / 256 / 8; break;
    default: return 0;
  }
  return lane_Bps * pcie_lanes;
}

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> kGpus = make_gpus();
  return kGpus;
}
const std::vector<ScaleUpSpec>& scale_up_catalog() {
  static const std::vector<ScaleUpSpec> kScaleUp = make_scale_up();
  return kScaleUp;
}
const std::vector<NicSpec>& nic_catalog() {
  static const std::vector<NicSpec> kNics = make_nics();
  return kNics;
}
const std::vector<SwitchSpec>& switch_catalog() {
  static const std::vector<SwitchSpec> kSwitches = make_switches();
  return kSwitches;
}
const std::vector<ModelSpec>& model_catalog() {
  static const std::vector<ModelSpec> kModels = make_models();
  return kModels;
}

const GpuSpec* find_gpu(std::string_view id) { return find_by_id(gpu_catalog(), id); }
const ScaleUpSpec* find_scale_up(std::string_view id) {
  return find_by_id(scale_up_catalog(), id);
}
const NicSpec* find_nic(std::string_view id) { return find_by_id(nic_catalog(), id); }
const SwitchSpec* find_switch(std::string_view id) { return find_by_id(switch_catalog(), id); }
namespace {
// Lower case, '_' as '-': the spelling find_model compares.
std::string model_key(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}
}  // namespace

const ModelSpec* find_model(std::string_view id) {
  const std::string key = model_key(id);
  for (const auto& m : model_catalog()) {
    if (model_key(m.id) == key) return &m;
    for (const auto& a : m.aliases) {
      if (model_key(a) == key) return &m;
    }
  }
  return nullptr;
}

const GpuSpec* find_gpu_by_pci_id(std::uint16_t vendor_id, std::uint16_t device_id) {
  for (const auto& g : gpu_catalog()) {
    if (g.pci_vendor_id != vendor_id) continue;
    for (auto id : g.pci_device_ids) {
      if (id == device_id) return &g;
    }
  }
  return nullptr;
}

bool switch_serves(const SwitchSpec& sw, const NicSpec& nic) {
  const bool same_medium = sw.technology == nic.technology ||
                           (is_ethernet(sw.technology) && is_ethernet(nic.technology));
  return same_medium && sw.port_Bps >= nic.line_rate_Bps;
}

const SwitchSpec* default_switch_for(const NicSpec& nic) {
  const SwitchSpec* best = nullptr;
  for (const auto& sw : switch_catalog()) {
    if (!switch_serves(sw, nic)) continue;
    if (best == nullptr || sw.port_Bps < best->port_Bps ||
        (sw.port_Bps == best->port_Bps && sw.price_usd < best->price_usd)) {
      best = &sw;
    }
  }
  return best;
}

std::string known_gpu_ids() { return join_ids(gpu_catalog()); }
std::string known_scale_up_ids() { return join_ids(scale_up_catalog()); }
std::string known_nic_ids() { return join_ids(nic_catalog()); }
std::string known_switch_ids() { return join_ids(switch_catalog()); }
std::string known_model_ids() { return join_ids(model_catalog()); }

}  // namespace clustersim::models
