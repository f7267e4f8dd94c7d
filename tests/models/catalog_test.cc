// Catalog invariants and datasheet spot checks. Figures cite their source next to the check.
#include "models/catalog.h"

#include <doctest/doctest.h>

#include <cctype>
#include <set>
#include <string>

#include "models/units.h"

namespace clustersim::models {
namespace {

template <class Spec>
void check_ids_and_sources(const std::vector<Spec>& specs, const Spec* (*find)(std::string_view)) {
  std::set<std::string> ids;
  for (const auto& s : specs) {
    CAPTURE(s.id);
    CHECK_FALSE(s.id.empty());
    CHECK(s.source.size() > 20);  // a real citation, not a placeholder
    CHECK(ids.insert(s.id).second);
    CHECK(find(s.id) == &s);
  }
  CHECK(find("no-such-id") == nullptr);
}

// Parameters of a decoder-only transformer from its dimensions, written out independently of
// the transformer model so that a typo in a catalog dimension shows up against the published
// parameter count. Biases, norms and learned position embeddings are left out (< 1%).
double approx_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  const double kv_dim = h / m.heads * m.kv_heads;
  const double attention = 2 * h * h + 2 * h * kv_dim;  // q, o and k, v projections
  const double ffn = (m.gated_ffn ? 3 : 2) * h * m.ffn_hidden;
  const double embeddings = (m.tied_embeddings ? 1 : 2) * double(m.vocab) * h;
  return m.layers * (attention + ffn) + embeddings;
}

TEST_SUITE("models") {
  TEST_CASE("catalog ids are unique, findable and every entry cites a source") {
    check_ids_and_sources(gpu_catalog(), find_gpu);
    check_ids_and_sources(scale_up_catalog(), find_scale_up);
    check_ids_and_sources(nic_catalog(), find_nic);
    check_ids_and_sources(switch_catalog(), find_switch);
    check_ids_and_sources(model_catalog(), find_model);
  }

  TEST_CASE("the ids docs/scenario-format.md promises exist") {
    for (const char* id : {"a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm", "h100-pcie", "h200-sxm",
                           "b200", "b300", "gb200", "gb300", "rtx-4090", "l40s",
                           "mi300x"}) {
      CAPTURE(id);
      CHECK(find_gpu(id) != nullptr);
    }
    for (const char* id : {"gpt2-124m", "gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b",
                           "llama3-8b", "llama3-70b", "llama3-405b"}) {
      CAPTURE(id);
      CHECK(find_model(id) != nullptr);
    }
    for (const char* id : {"nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5"}) {
      CHECK(find_scale_up(id) != nullptr);
    }
    for (const char* id : {"ib-hdr", "ib-ndr", "ib-xdr", "roce-100", "roce-200", "roce-400",
                           "roce-800", "eth-tcp-100", "eth-tcp-200", "eth-tcp-400"}) {
      CHECK(find_nic(id) != nullptr);
    }
    CHECK(known_gpu_ids().find("h100-sxm, ") != std::string::npos);
    for (const char* id : {"llama3-405b", "mixtral-8x7b", "mixtral-8x22b", "deepseek-v3",
                           "qwen3-235b-a22b", "kimi-k2"}) {
      CHECK(find_model(id) != nullptr);
      CHECK(known_model_ids().find(id) != std::string::npos);
    }
  }

  TEST_CASE("a model is found by its aliases and Hugging Face ids, whatever the case") {
    CHECK(find_model("llama3.1-8b") == find_model("llama3-8b"));
    CHECK(find_model("llama3.3-70b") == find_model("llama3-70b"));
    CHECK(find_model("llama3.1-405b") == find_model("llama3-405b"));
    CHECK(find_model("meta-llama/Llama-3.1-70B") == find_model("llama3-70b"));
    CHECK(find_model("Qwen/Qwen2.5-72B") == find_model("qwen2.5-72b"));
    CHECK(find_model("QWEN3_32B") == find_model("qwen3-32b"));
    CHECK(find_model("LLAMA3.1_8B") == find_model("llama3-8b"));
    CHECK(find_model("llama3.1") == nullptr);
    CHECK(find_model("") == nullptr);
    // Ids are lower case, and every alias finds its own model: an alias that also named an
    // earlier model, or another model's id, would find that one instead (and an id shadowed by
    // an earlier model's alias fails the id check above).
    for (const auto& m : model_catalog()) {
      CAPTURE(m.id);
      for (char c : m.id) CHECK_FALSE(std::isupper(static_cast<unsigned char>(c)));
      for (const auto& a : m.aliases) {
        CAPTURE(a);
        CHECK(find_model(a) == &m);
      }
    }
  }

  TEST_CASE("GPU peaks are ordered fp8 >= bf16 >= tf32 >= fp32 and fields are filled") {
    for (const auto& g : gpu_catalog()) {
      CAPTURE(g.id);
      if (g.fp8_flops > 0) CHECK(g.fp8_flops >= g.bf16_flops);
      CHECK(g.bf16_flops == g.fp16_flops);
      CHECK(g.bf16_flops > g.tf32_flops);
      CHECK(g.tf32_flops >= g.fp32_flops);  // equal on the RTX 4090 (82.6 TFLOP/s both)
      CHECK(g.fp32_flops > 0);
      CHECK(g.hbm_bytes >= 24 * kGiB);
      CHECK(g.hbm_Bps > 800e9);
      CHECK(g.sm_count > 0);
      CHECK(g.tdp_w >= 250);
      CHECK(g.list_price_usd > 1000);
      CHECK(g.pcie_gen >= 4);
      CHECK_FALSE(g.pci_device_ids.empty());
      CHECK(g.peak_flops(Precision::kBf16) == g.bf16_flops);
      CHECK(g.peak_flops(Precision::kFp8) == g.fp8_flops);
      CHECK(g.peak_flops(Precision::kFp32) == g.fp32_flops);
    }
    CHECK(find_gpu("a100-sxm-80gb")->peak_flops(Precision::kFp8) == 0);  // no fp8 on Ampere
  }

  TEST_CASE("H100 SXM matches its datasheet") {
    // NVIDIA H100 datasheet: 1,979 TFLOP/s bf16 with sparsity (989 dense), 3.35 TB/s, 80 GB,
    // NVLink 900 GB/s bidirectional over 18 links, 700 W; 132 SMs (NVIDIA H100 whitepaper).
    const GpuSpec& h = *find_gpu("h100-sxm");
    CHECK(h.bf16_flops == doctest::Approx(989e12).epsilon(0.001));
    CHECK(h.fp8_flops == doctest::Approx(2 * 989e12).epsilon(0.001));
    CHECK(h.tf32_flops == doctest::Approx(989e12 / 2).epsilon(0.001));
    CHECK(h.fp32_flops == doctest::Approx(67e12));
    CHECK(h.hbm_Bps == doctest::Approx(3.35e12));
    CHECK(h.hbm_bytes == 80 * kGiB);
    CHECK(h.hbm_bytes > 81559 * kMiB);  // NVML's memory.total on an H100 80GB HBM3
    CHECK(h.sm_count == 132);
    CHECK(h.tdp_w == 700);
    CHECK(h.nvlink_links == 18);
    CHECK(h.nvlink_Bps() == doctest::Approx(450e9));  // 900 GB/s bidirectional
    CHECK(h.arch == "sm_90");
    CHECK(h.name == "NVIDIA H100 80GB HBM3");
    // PCIe Gen5 x16: 32 GT/s x 16 x 128/130 / 8 = 63.0 GB/s per direction.
    CHECK(h.pcie_Bps() == doctest::Approx(63.015e9).epsilon(0.001));
  }

  TEST_CASE("H200, A100, B200 memory and NVLink match their datasheets") {
    const GpuSpec& h200 = *find_gpu("h200-sxm");
    CHECK(h200.bf16_flops == find_gpu("h100-sxm")->bf16_flops);  // same GH100 compute
    CHECK(h200.hbm_Bps == doctest::Approx(4.8e12));
    CHECK(h200.hbm_bytes == 141 * kGiB);
    CHECK(h200.hbm_bytes > 143771 * kMiB);  // NVML memory.total on an H200
    CHECK(h200.sm_count == 132);
    const GpuSpec& a100 = *find_gpu("a100-sxm-80gb");
    CHECK(a100.nvlink_Bps() == doctest::Approx(300e9));  // 600 GB/s bidirectional, 12 links
    CHECK(a100.bf16_flops == doctest::Approx(312e12));
    CHECK(a100.sm_count == 108);
    CHECK(find_gpu("a100-sxm-40gb")->hbm_Bps == doctest::Approx(1555e9));
    const GpuSpec& b200 = *find_gpu("b200");
    CHECK(b200.nvlink_Bps() == doctest::Approx(900e9));  // 1.8 TB/s bidirectional, 18 links
    CHECK(b200.bf16_flops == doctest::Approx(2.25e15));
    // GB200 / GB300 NVL72 per GPU: 5 PFLOP/s bf16 sparse (2.5 dense), 10 fp8 sparse, NVLink 5.
    for (const char* id : {"gb200", "gb300"}) {
      CAPTURE(id);
      const GpuSpec& g = *find_gpu(id);
      CHECK(g.bf16_flops == doctest::Approx(2.5e15));
      CHECK(g.fp8_flops == doctest::Approx(5e15));
      CHECK(g.nvlink_Bps() == doctest::Approx(900e9));
      CHECK(g.hbm_Bps == doctest::Approx(8e12));
    }
    CHECK(find_gpu("gb200")->hbm_bytes > 189471 * kMiB);  // NVML memory.total on a GB200
    CHECK(find_gpu("gb200")->tdp_w == 1200);
    CHECK(find_gpu("gb300")->sm_count == 160);
    CHECK(find_gpu("gb300")->tdp_w == 1400);
    // HGX B300: Blackwell Ultra at the B200's peaks and 1,100 W.
    CHECK(find_gpu("b300")->bf16_flops == doctest::Approx(2.25e15));
    CHECK(find_gpu("b300")->arch == "sm_103");
    CHECK(find_gpu("b300")->hbm_bytes > 269 * kGiB);
    // Blackwell Ultra takes Blackwell's family constants (NCCL's tables, the NVLink default).
    CHECK(arch_family("sm_103") == "sm_100");
    CHECK(arch_family("sm_100") == "sm_100");
    CHECK(arch_family("sm_90") == "sm_90");
    CHECK(find_gpu("rtx-4090")->nvlink_links == 0);
    CHECK(find_gpu("rtx-4090")->pcie_Bps() == doctest::Approx(31.5e9).epsilon(0.001));
  }

  TEST_CASE("PCI device ids identify the SKU (pci.ids; acceptance check 1)") {
    const std::pair<std::uint16_t, const char*> kIds[] = {
        {0x2330, "h100-sxm"},      {0x2331, "h100-pcie"},      {0x2335, "h200-sxm"},
        {0x233B, "h200-nvl"},      {0x20B0, "a100-sxm-40gb"},  {0x20B2, "a100-sxm-80gb"},
        {0x20B1, "a100-pcie-40gb"}, {0x20B5, "a100-pcie-80gb"}, {0x2901, "b200"},
        {0x2324, "h800"},          {0x2684, "rtx-4090"},       {0x26B9, "l40s"},
        {0x2941, "gb200"},         {0x31C2, "gb300"},          {0x31C3, "gb300"},
        {0x3182, "b300"}};
    for (const auto& [device, id] : kIds) {
      CAPTURE(id);
      const GpuSpec* g = find_gpu_by_pci_id(0x10de, device);
      REQUIRE(g != nullptr);
      CHECK(g->id == id);
    }
    CHECK(find_gpu_by_pci_id(0x1002, 0x74A1)->id == "mi300x");
    CHECK(find_gpu_by_pci_id(0x10de, 0x74A1) == nullptr);  // AMD's id under NVIDIA's vendor
    CHECK(find_gpu_by_pci_id(0x10de, 0x2339) == nullptr);  // H100 SXM5 94GB: not catalogued
    std::set<std::pair<int, int>> seen;
    for (const auto& g : gpu_catalog()) {
      for (auto d : g.pci_device_ids) CHECK(seen.insert({g.pci_vendor_id, d}).second);
    }
  }

  TEST_CASE("scale-up links: per GPU per direction, NVLS from NVLink4 on") {
    CHECK(find_scale_up("nvlink3")->per_gpu_Bps == doctest::Approx(300e9));
    CHECK(find_scale_up("nvlink4")->per_gpu_Bps == doctest::Approx(450e9));
    CHECK(find_scale_up("nvlink5")->per_gpu_Bps == doctest::Approx(900e9));
    CHECK_FALSE(find_scale_up("nvlink3")->switch_reduction);
    CHECK(find_scale_up("nvlink4")->switch_reduction);
    CHECK(find_scale_up("nvlink5")->switch_reduction);
    // PCIe x16 raw rates after 128b/130b encoding.
    CHECK(find_scale_up("pcie4")->per_gpu_Bps == doctest::Approx(31.5e9).epsilon(0.001));
    CHECK(find_scale_up("pcie5")->per_gpu_Bps == doctest::Approx(63.0e9).epsilon(0.001));
    // Measured Gen5 pinned copies (48-55 GB/s: Azure/azurehpc-health-checks asks 48, our H200s
    // reach 55.5) stay below the raw rate.
    CHECK(find_scale_up("pcie5")->per_gpu_Bps > 55e9);
    CHECK(find_scale_up("pcie5")->switch_reduction == false);
    for (const auto& s : scale_up_catalog()) {
      CAPTURE(s.id);
      CHECK(s.latency_s > 0);
      CHECK(s.latency_s < 5e-6);
    }
    CHECK(find_scale_up("nvlink4")->latency_s < find_scale_up("pcie5")->latency_s);
  }

  TEST_CASE("NIC line rates follow their names, IB beats RoCE beats TCP") {
    for (const auto& n : nic_catalog()) {
      CAPTURE(n.id);
      // "ib-ndr" -> 400 Gb/s; the others carry the rate in the id ("roce-400").
      std::string gbps = n.id.substr(n.id.rfind('-') + 1);
      if (gbps == "hdr") gbps = "200";
      if (gbps == "ndr") gbps = "400";
      if (gbps == "xdr") gbps = "800";
      CHECK(n.line_rate_Bps == *parse_bandwidth_Bps(gbps + "Gbps"));
      CHECK(n.protocol_efficiency > 0.5);
      CHECK(n.protocol_efficiency <= 1.0);
      CHECK(n.in_network_reduction_capable == (n.technology == LinkTechnology::kInfiniband));
      CHECK(n.price_usd > 0);
      CHECK(n.cable_price_usd > 0);
    }
    const NicSpec& ndr = *find_nic("ib-ndr");
    const NicSpec& roce = *find_nic("roce-400");
    const NicSpec& tcp = *find_nic("eth-tcp-400");
    // 46-48 GB/s busbw per 400G NDR NIC (NVIDIA in nccl-tests #290; also #319).
    CHECK(ndr.line_rate_Bps * ndr.protocol_efficiency >= 46e9);
    CHECK(ndr.line_rate_Bps * ndr.protocol_efficiency <= 48e9);
    CHECK(ndr.protocol_efficiency > roce.protocol_efficiency);
    CHECK(roce.protocol_efficiency > tcp.protocol_efficiency);
    CHECK(ndr.latency_s < roce.latency_s);
    CHECK(roce.latency_s < tcp.latency_s);
    CHECK(ndr.latency_s >= 0.5e-6);
    CHECK(tcp.latency_s <= 30e-6);
  }

  TEST_CASE("every NIC has a default switch of its medium with fast-enough ports") {
    for (const auto& n : nic_catalog()) {
      CAPTURE(n.id);
      const SwitchSpec* sw = default_switch_for(n);
      REQUIRE(sw != nullptr);
      CHECK(switch_serves(*sw, n));
      CHECK(sw->port_Bps >= n.line_rate_Bps);
      CHECK(sw->in_network_reduction == (n.technology == LinkTechnology::kInfiniband));
    }
    CHECK(default_switch_for(*find_nic("ib-hdr"))->id == "quantum-qm8700");
    CHECK(default_switch_for(*find_nic("ib-ndr"))->id == "quantum-2-qm9700");
    CHECK(default_switch_for(*find_nic("ib-xdr"))->id == "quantum-x800-q3400");
    CHECK(default_switch_for(*find_nic("eth-tcp-100"))->id == "spectrum-3-sn4600c");
    CHECK(default_switch_for(*find_nic("roce-200"))->id == "spectrum-3-sn4700-2x200g");
    CHECK(default_switch_for(*find_nic("roce-400"))->id == "spectrum-3-sn4700");
    CHECK(default_switch_for(*find_nic("roce-800"))->id == "spectrum-4-sn5600");
    // Media do not mix; a slower switch cannot carry a faster NIC.
    CHECK_FALSE(switch_serves(*find_switch("spectrum-4-sn5600"), *find_nic("ib-ndr")));
    CHECK_FALSE(switch_serves(*find_switch("quantum-2-qm9700"), *find_nic("roce-400")));
    CHECK_FALSE(switch_serves(*find_switch("quantum-qm8700"), *find_nic("ib-ndr")));
    CHECK(switch_serves(*find_switch("spectrum-3-sn4700"), *find_nic("eth-tcp-400")));
    NicSpec fast = *find_nic("ib-xdr");
    fast.line_rate_Bps *= 2;
    CHECK(default_switch_for(fast) == nullptr);
  }

  TEST_CASE("switches: radix x port rate is the advertised capacity") {
    // QM8700 16 Tb/s, QM9700 51.2 Tb/s, Q3400 230.4 Tb/s (bidirectional, product briefs).
    CHECK(find_switch("quantum-qm8700")->radix * find_switch("quantum-qm8700")->port_Bps * 2 * 8 ==
          doctest::Approx(16e12));
    CHECK(find_switch("quantum-2-qm9700")->radix * find_switch("quantum-2-qm9700")->port_Bps * 16 ==
          doctest::Approx(51.2e12));
    CHECK(find_switch("quantum-x800-q3400")->radix *
              find_switch("quantum-x800-q3400")->port_Bps * 16 ==
          doctest::Approx(230.4e12));
    for (const auto& s : switch_catalog()) {
      CAPTURE(s.id);
      CHECK(s.radix >= 32);
      CHECK(s.price_usd > 0);
      CHECK(s.power_w > 0);
      // IB cut-through 130-230 ns; Ethernet 300-600 ns.
      if (s.technology == LinkTechnology::kInfiniband) {
        CHECK(s.latency_s <= 230e-9);
      } else {
        CHECK(s.latency_s >= 300e-9);
        CHECK(s.latency_s <= 600e-9);
      }
    }
  }

  TEST_CASE("model presets reproduce their published parameter counts") {
    // Published totals: Hugging Face model cards / config-derived counts; GPT-3: Brown et al.
    // 2020 Table 2.1 (175.0B); GPT-2 small: 124M (incl. 0.8M position embeddings).
    const std::pair<const char*, double> kParams[] = {
        {"gpt2-124m", 124.4e6},  {"gpt3-175b", 174.6e9},  {"llama2-7b", 6.738e9},
        {"llama2-13b", 13.016e9}, {"llama2-70b", 68.977e9}, {"llama3-8b", 8.030e9},
        {"llama3-70b", 70.554e9}, {"llama3-405b", 405.85e9}};
    for (const auto& [id, params] : kParams) {
      CAPTURE(id);
      const ModelSpec& m = *find_model(id);
      CHECK(approx_parameters(m) == doctest::Approx(params).epsilon(0.012));
      CHECK(m.hidden % m.heads == 0);
      CHECK(m.heads % m.kv_heads == 0);
    }
    const ModelSpec& l70 = *find_model("llama2-70b");
    CHECK(l70.layers == 80);
    CHECK(l70.kv_heads == 8);
    CHECK(l70.ffn_hidden == 28672);
    CHECK(l70.gated_ffn);
    CHECK_FALSE(l70.tied_embeddings);
    CHECK(find_model("gpt2-124m")->tied_embeddings);
    CHECK_FALSE(find_model("gpt3-175b")->gated_ffn);
    CHECK(find_model("llama3-405b")->layers == 126);
  }

  TEST_CASE("precision names and element sizes") {
    Precision p = Precision::kFp32;
    for (const char* name : {"fp32", "tf32", "bf16", "fp16", "fp8"}) {
      REQUIRE(parse_precision(name, &p));
      CHECK(to_string(p) == name);
    }
    CHECK_FALSE(parse_precision("BF16", &p));
    CHECK_FALSE(parse_precision("int8", &p));
    CHECK(bytes_per_element(Precision::kBf16) == 2);
    CHECK(bytes_per_element(Precision::kFp8) == 1);
    CHECK(bytes_per_element(Precision::kTf32) == 4);
    CHECK(to_string(LinkTechnology::kRoce) == "roce");
  }
}

}  // namespace
}  // namespace clustersim::models
