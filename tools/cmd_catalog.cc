// `clustersim catalog`: lists the built-in GPUs, scale-up links, NICs, switches and model presets
// with their units and the source of every entry. Human tables by default; --json prints one
// object with an array per kind, numbers in SI units (field names carry the unit).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "models/catalog.h"
#include "models/units.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/text_table.h"

namespace clustersim::tools {
namespace {

using models::format_bandwidth;
using models::format_bandwidth_bits;
using models::format_flops;
using models::format_significant;
using models::format_size;
using models::format_time;
using models::format_usd;
using Align = TextTable::Align;

struct CatalogArgs {
  bool json = false;
  std::string kind;  // "" = all
};

std::string hex(std::uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04X", v);
  return buf;
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

// "-" for a figure the entry does not have (no fp8, no NVLink).
std::string or_dash(double v, std::string (*format)(double)) { return v > 0 ? format(v) : "-"; }

// Prints a table, then each entry's source under it.
template <class Spec>
void print_section(const char* title, const TextTable& table, const std::vector<Spec>& specs) {
  std::printf("%s\n%s\n  sources:\n", title, table.render(2).c_str());
  for (const auto& s : specs) std::printf("    %s: %s\n", s.id.c_str(), s.source.c_str());
  std::printf("\n");
}

void print_gpus() {
  TextTable t({"id", "bf16", "fp8", "fp4", "tf32", "fp32", "memory", "mem BW", "NVLink/dir", "PCIe/dir",
               "TDP", "price", "SMs", "arch", "PCI id"});
  for (const auto& g : models::gpu_catalog()) {
    std::string ids;
    for (auto d : g.pci_device_ids) ids += (ids.empty() ? "" : ",") + hex(d);
    t.add_row({g.id, format_flops(g.bf16_flops), or_dash(g.fp8_flops, format_flops),
               or_dash(g.fp4_flops, format_flops),
               format_flops(g.tf32_flops), format_flops(g.fp32_flops), format_size(g.hbm_bytes),
               format_bandwidth(g.hbm_Bps),
               g.nvlink_links > 0 ? std::to_string(g.nvlink_links) + " x " +
                                        format_bandwidth(g.nvlink_link_Bps)
                                  : "-",
               "gen" + std::to_string(g.pcie_gen) + " " + format_bandwidth(g.pcie_Bps()),
               format_significant(g.tdp_w) + " W", format_usd(g.list_price_usd),
               std::to_string(g.sm_count), g.arch.empty() ? "-" : g.arch, ids});
  }
  print_section("GPUs (dense tensor-core peaks, FLOP/s; bandwidths per direction)", t,
                models::gpu_catalog());
}

void print_scale_up() {
  TextTable t({"id", "technology", "per GPU/dir", "hop latency", "switch", "in-switch reduce"});
  for (const auto& s : models::scale_up_catalog()) {
    t.add_row({s.id, std::string(models::to_string(s.technology)), format_bandwidth(s.per_gpu_Bps),
               format_time(s.latency_s), yes_no(s.has_switch), yes_no(s.switch_reduction)});
  }
  print_section("Scale-up links (inside a node)", t, models::scale_up_catalog());
}

void print_nics() {
  TextTable t({"id", "technology", "line rate", "per dir", "efficiency", "achievable", "latency",
               "SHARP", "NIC price", "link price"});
  for (const auto& n : models::nic_catalog()) {
    t.add_row({n.id, std::string(models::to_string(n.technology)),
               format_bandwidth_bits(n.line_rate_Bps), format_bandwidth(n.line_rate_Bps),
               format_significant(n.protocol_efficiency, 2),
               format_bandwidth(n.line_rate_Bps * n.protocol_efficiency), format_time(n.latency_s),
               yes_no(n.in_network_reduction_capable), format_usd(n.price_usd),
               format_usd(n.cable_price_usd)});
  }
  print_section("NICs (one link, per direction; latency one way through one switch)", t,
                models::nic_catalog());
}

void print_switches() {
  TextTable t({"id", "technology", "ports", "port rate", "latency", "SHARP", "power", "price"});
  for (const auto& s : models::switch_catalog()) {
    t.add_row({s.id, std::string(models::to_string(s.technology)), std::to_string(s.radix),
               format_bandwidth_bits(s.port_Bps), format_time(s.latency_s),
               yes_no(s.in_network_reduction), format_significant(s.power_w) + " W",
               format_usd(s.price_usd)});
  }
  print_section("Switches (port rate per direction; latency port to port)", t,
                models::switch_catalog());
}

void print_models() {
  TextTable t({"id", "name", "layers", "hidden", "heads", "kv heads", "ffn hidden", "vocab", "ffn",
               "embeddings"},
              {Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight,
               Align::kRight, Align::kRight, Align::kRight, Align::kLeft, Align::kLeft});
  for (const auto& m : models::model_catalog()) {
    t.add_row({m.id, m.name, std::to_string(m.layers), std::to_string(m.hidden),
               std::to_string(m.heads), std::to_string(m.kv_heads), std::to_string(m.ffn_hidden),
               std::to_string(m.vocab), m.gated_ffn ? "gated" : "2-matrix",
               m.tied_embeddings ? "tied" : "untied"});
  }
  print_section("Models (decoder-only transformers)", t, models::model_catalog());
  std::printf("  also accepted as workload.model (any case, '_' for '-'):\n");
  for (const auto& m : models::model_catalog()) {
    if (m.aliases.empty()) continue;
    std::string names;
    for (const auto& a : m.aliases) names += (names.empty() ? "" : ", ") + a;
    std::printf("    %s: %s\n", m.id.c_str(), names.c_str());
  }
  std::printf("\n");
}

nlohmann::json gpus_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : models::gpu_catalog()) {
    nlohmann::json ids = nlohmann::json::array();
    for (auto d : g.pci_device_ids) ids.push_back(hex(d));
    out.push_back({{"id", g.id},
                   {"name", g.name},
                   {"vendor", g.vendor},
                   {"bf16_flops", g.bf16_flops},
                   {"fp16_flops", g.fp16_flops},
                   {"fp8_flops", g.fp8_flops},
                   {"fp4_flops", g.fp4_flops},
                   {"tf32_flops", g.tf32_flops},
                   {"fp32_flops", g.fp32_flops},
                   {"hbm_bytes", g.hbm_bytes},
                   {"hbm_Bps", g.hbm_Bps},
                   {"nvlink_links", g.nvlink_links},
                   {"nvlink_link_Bps", g.nvlink_link_Bps},
                   {"nvlink_Bps", g.nvlink_Bps()},
                   {"pcie_gen", g.pcie_gen},
                   {"pcie_lanes", g.pcie_lanes},
                   {"pcie_Bps", g.pcie_Bps()},
                   {"tdp_w", g.tdp_w},
                   {"list_price_usd", g.list_price_usd},
                   {"sm_count", g.sm_count},
                   {"arch", g.arch},
                   {"pci_vendor_id", hex(g.pci_vendor_id)},
                   {"pci_device_ids", ids},
                   {"source", g.source}});
  }
  return out;
}

nlohmann::json scale_up_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : models::scale_up_catalog()) {
    out.push_back({{"id", s.id},
                   {"technology", models::to_string(s.technology)},
                   {"per_gpu_Bps", s.per_gpu_Bps},
                   {"latency_s", s.latency_s},
                   {"has_switch", s.has_switch},
                   {"switch_reduction", s.switch_reduction},
                   {"source", s.source}});
  }
  return out;
}

nlohmann::json nics_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& n : models::nic_catalog()) {
    const models::SwitchSpec* sw = models::default_switch_for(n);
    out.push_back({{"id", n.id},
                   {"technology", models::to_string(n.technology)},
                   {"line_rate_Bps", n.line_rate_Bps},
                   {"latency_s", n.latency_s},
                   {"protocol_efficiency", n.protocol_efficiency},
                   {"in_network_reduction_capable", n.in_network_reduction_capable},
                   {"price_usd", n.price_usd},
                   {"cable_price_usd", n.cable_price_usd},
                   {"default_switch", sw != nullptr ? sw->id : ""},
                   {"source", n.source}});
  }
  return out;
}

nlohmann::json switches_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : models::switch_catalog()) {
    out.push_back({{"id", s.id},
                   {"technology", models::to_string(s.technology)},
                   {"radix", s.radix},
                   {"port_Bps", s.port_Bps},
                   {"latency_s", s.latency_s},
                   {"price_usd", s.price_usd},
                   {"power_w", s.power_w},
                   {"in_network_reduction", s.in_network_reduction},
                   {"source", s.source}});
  }
  return out;
}

nlohmann::json models_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : models::model_catalog()) {
    out.push_back({{"id", m.id},
                   {"name", m.name},
                   {"layers", m.layers},
                   {"hidden", m.hidden},
                   {"heads", m.heads},
                   {"kv_heads", m.kv_heads},
                   {"ffn_hidden", m.ffn_hidden},
                   {"vocab", m.vocab},
                   {"gated_ffn", m.gated_ffn},
                   {"tied_embeddings", m.tied_embeddings},
                   {"aliases", m.aliases},
                   {"source", m.source}});
  }
  return out;
}

// One row per kind: its --kind name, JSON key, table printer and JSON builder.
struct Kind {
  const char* name;
  const char* json_key;
  void (*print)();
  nlohmann::json (*to_json)();
};

constexpr Kind kKinds[] = {
    {"gpus", "gpus", print_gpus, gpus_json},
    {"scale-up", "scale_up", print_scale_up, scale_up_json},
    {"nics", "nics", print_nics, nics_json},
    {"switches", "switches", print_switches, switches_json},
    {"models", "models", print_models, models_json},
};

int run_catalog(const CatalogArgs& a) {
  nlohmann::json out = nlohmann::json::object();
  for (const Kind& k : kKinds) {
    if (!a.kind.empty() && a.kind != k.name) continue;
    if (a.json) {
      out[k.json_key] = k.to_json();
    } else {
      k.print();
    }
  }
  if (a.json) std::printf("%s\n", out.dump(2).c_str());
  return kExitOk;
}

const bool kRegistered = register_command(
    {"catalog", "list the built-in GPUs, scale-up links, NICs, switches and models, with sources",
     90, [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<CatalogArgs>();
       sub.add_flag("--json", a->json, "one JSON object, an array per kind, SI units");
       sub.add_option("--kind", a->kind, "only one kind: gpus | scale-up | nics | switches | models")
           .check_member({"gpus", "scale-up", "nics", "switches", "models"});
       return [a] { return run_catalog(*a); };
     },
     {"clustersim catalog",
      "clustersim catalog --kind gpus"}});

}  // namespace
}  // namespace clustersim::tools
