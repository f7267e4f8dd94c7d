#include "validate/measurement_samples.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "models/catalog.h"
#include "models/cluster_sketch.h"
#include "models/text_file.h"
#include "validate/nccl_tests_output.h"
#include "validate/sha256.h"

namespace clustersim::validate {

models::Result<MeasurementFile> load_measurement_file(const std::string& path) {
  auto bytes = models::read_text_file(path);
  if (!bytes) return bytes.error();
  return measurement_from_text(path, *bytes);
}

models::Result<MeasurementFile> measurement_from_text(const std::string& path,
                                                      const std::string& text) {
  auto m = parse_measurement(text, path);
  if (!m) return m.error();
  return MeasurementFile{path, sha256_hex(text), std::move(*m)};
}

bool is_nccl_tests_text(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] != '{';
}

models::Result<MeasurementFile> load_nccl_tests_files(const std::vector<std::string>& paths,
                                                      const models::Scenario& scenario) {
  std::vector<FileText> logs;
  for (const std::string& path : paths) {
    auto text = models::read_text_file(path);
    if (!text) return text.error();
    logs.push_back({path, std::move(*text)});
  }
  return nccl_tests_measurement(logs, scenario);
}

models::Result<MeasurementFile> nccl_tests_measurement(const std::vector<FileText>& logs,
                                                       const models::Scenario& scenario) {
  const models::ClusterConfig& cluster = scenario.cluster;
  const int total = cluster.total_gpus();
  static constexpr std::string_view kOps[] = {"all_reduce", "all_gather", "reduce_scatter",
                                              "alltoall",   "broadcast",  "sendrecv", "reduce"};
  MeasurementFile out;
  Measurement& m = out.data;
  m.tool = "nccl-tests";
  m.complete = true;
  std::string all_bytes;
  for (const FileText& log : logs) {
    const std::string& path = log.path;
    all_bytes += log.text;
    std::vector<CollectiveRow> rows = parse_nccl_tests_output(log.text);
    if (rows.empty()) return models::Error{path + ": no nccl-tests data line"};
    // A "## ranks: N" comment names the communicator where the log shows no "#  Rank" lines.
    int ranks_comment = 0;
    if (const auto at = log.text.find("## ranks:"); at != std::string::npos) {
      std::istringstream in(log.text.substr(at + 9, log.text.find('\n', at) - at - 9));
      std::string rest;
      if (!(in >> ranks_comment) || ranks_comment < 1 || (in >> rest)) {
        return models::Error{path + ": '## ranks:' needs a whole number of ranks"};
      }
    }
    const std::string stem = std::filesystem::path(path).stem().string();
    std::string op_from_name;
    for (auto op : kOps) {
      if (stem.find(op) != std::string::npos && op_from_name.size() < op.size()) {
        op_from_name = std::string(op);  // "reduce_scatter" over "reduce"
      }
    }
    for (CollectiveRow& r : rows) {
      if (r.op.empty()) r.op = op_from_name;
      if (r.op.empty()) {
        return models::Error{path + ": which collective? Neither a '# Collective test starting: "
                                    "<op>_perf' line nor the file name says (all_reduce, ...)"};
      }
      if (r.ranks <= 0) r.ranks = ranks_comment > 0 ? ranks_comment : total;
      if (r.ranks > total) {
        return models::Error{path + ": " + std::to_string(r.ranks) + " ranks, but the scenario's "
                             "cluster has " + std::to_string(total) + " GPUs"};
      }
      m.collectives.push_back(r);
    }
    out.path += (out.path.empty() ? "" : " + ") + path;
  }
  // The cluster's GPUs and hosts, as a measurement of it would list them.
  const models::GpuSpec& gpu = cluster.node.gpu;
  const int gpn = cluster.node.gpus_per_node;
  for (int node = 0; node < cluster.nodes; ++node) {
    HostInfo h;
    h.hostname = "node" + std::to_string(node);
    for (int i = 0; i < gpn; ++i) h.ranks.push_back(node * gpn + i);
    m.hosts.push_back(h);
  }
  for (int r = 0; r < total; ++r) {
    GpuInfo g;
    g.rank = r;
    g.host = "node" + std::to_string(r / gpn);
    g.cuda_index = r % gpn;
    g.name = gpu.name;
    g.pci.vendor_id = gpu.pci_vendor_id;
    g.pci.device_id = gpu.pci_device_ids.empty() ? 0 : gpu.pci_device_ids.front();
    g.sm_count = gpu.sm_count;
    m.gpus.push_back(g);
  }
  m.run.world_size = total;
  m.run.mode = "nccl-tests";
  // NVLink without in-switch reduction in the scenario: the run had NVLS off.
  if (cluster.node.scale_up.technology == models::LinkTechnology::kNvlink &&
      !cluster.node.scale_up.switch_reduction) {
    m.run.environment["NCCL_NVLS_ENABLE"] = "0";
  }
  out.sha256_hex = sha256_hex(all_bytes);
  return out;
}

models::Result<std::string> measured_gpu_id(const Measurement& m) {
  if (m.gpus.empty()) return models::Error{"the measurement lists no GPUs"};
  std::string id;
  for (const GpuInfo& g : m.gpus) {
    const models::GpuSpec* spec = models::find_gpu_by_pci_id(
        static_cast<std::uint16_t>(g.pci.vendor_id), static_cast<std::uint16_t>(g.pci.device_id));
    if (spec == nullptr) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "%04x:%04x", g.pci.vendor_id, g.pci.device_id);
      return models::Error{"GPU of rank " + std::to_string(g.rank) + " (" + g.name + ", PCI id " +
                           hex + ") is not in the catalog"};
    }
    if (!id.empty() && spec->id != id) {
      return models::Error{"the GPUs are of different models (" + id + " and " + spec->id + ")"};
    }
    id = spec->id;
  }
  return id;
}

models::Result<models::ClusterConfig> measured_cluster(const Measurement& m) {
  auto gpu = measured_gpu_id(m);
  if (!gpu) return gpu.error();
  if (m.hosts.size() > 1) {
    return models::Error{"the file spans " + std::to_string(m.hosts.size()) +
                         " nodes and does not say what their NICs are: give --scenario"};
  }
  models::ClusterSketch s;
  s.gpu = *gpu;
  s.gpus_per_node = std::max<int>(static_cast<int>(m.gpus.size()), m.run.world_size);
  return models::cluster_from_sketch(s, "the measured cluster");
}

int nodes_of(const Measurement& m, int ranks) {
  int nodes = 0;
  for (const HostInfo& h : m.hosts) {
    if (std::any_of(h.ranks.begin(), h.ranks.end(), [&](int r) { return r < ranks; })) ++nodes;
  }
  return std::max(1, nodes);
}

double row_time_s(const CollectiveRow& row) {
  const double oop = row.out_of_place.time_us, ip = row.in_place.time_us;
  if (oop > 0 && ip > 0) return 0.5 * (oop + ip) * 1e-6;
  return (oop > 0 ? oop : ip > 0 ? ip : 0) * 1e-6;
}

std::vector<std::string> nccl_disabled_algorithms(const Measurement& m) {
  std::set<std::string> off;
  auto env = [&](const std::string& k) {
    auto it = m.run.environment.find(k);
    return it == m.run.environment.end() ? std::string() : it->second;
  };
  if (env("NCCL_NVLS_ENABLE") == "0") off.insert("nvls");
  if (env("NCCL_COLLNET_ENABLE") == "0") off.insert("collnet");
  std::string algo = env("NCCL_ALGO");
  if (!algo.empty()) {
    const bool exclude = algo[0] == '^';
    if (exclude) algo.erase(0, 1);
    std::set<std::string> listed;
    std::stringstream items(algo);
    for (std::string a; std::getline(items, a, ',');) {
      std::transform(a.begin(), a.end(), a.begin(),
                     [](unsigned char ch) { return std::tolower(ch); });
      // NCCL's names: Ring, Tree, NVLS, NVLSTree, CollnetDirect, CollnetChain, PAT.
      if (a == "nvlstree") a = "nvls";
      if (a.rfind("collnet", 0) == 0) a = "collnet";
      listed.insert(a);
    }
    for (const char* a : {"ring", "tree", "nvls", "collnet"}) {
      if (listed.count(a) == (exclude ? 1u : 0u)) off.insert(a);
    }
  }
  return {off.begin(), off.end()};
}

std::vector<bool> held_out_rows(const Measurement& m, Holdout holdout) {
  std::vector<bool> out(m.collectives.size(), false);
  if (holdout == Holdout::kNone) return out;
  // Per (op, ranks): the distinct sizes in order; a row is held out by its size's position.
  std::map<std::pair<std::string, int>, std::set<std::uint64_t>> sizes;
  for (const auto& r : m.collectives) sizes[{r.op, r.ranks}].insert(r.size_bytes);
  for (std::size_t i = 0; i < m.collectives.size(); ++i) {
    const auto& r = m.collectives[i];
    const auto& s = sizes[{r.op, r.ranks}];
    const auto pos = static_cast<std::size_t>(std::distance(s.begin(), s.find(r.size_bytes)));
    out[i] = holdout == Holdout::kEveryOther ? pos % 2 == 1 : pos >= (s.size() + 1) / 2;
  }
  return out;
}

models::Result<models::CalibrationInput> calibration_input(
    const std::vector<MeasurementFile>& files, const std::vector<std::vector<bool>>& skip) {
  models::CalibrationInput in;
  std::set<std::string> disabled;
  for (std::size_t f = 0; f < files.size(); ++f) {
    const Measurement& m = files[f].data;
    auto gpu = measured_gpu_id(m);
    if (!gpu) return models::Error{files[f].path + ": " + gpu.message()};
    if (!in.gpu_id.empty() && in.gpu_id != *gpu) {
      return models::Error{files[f].path + ": measured " + *gpu + ", the other files " + in.gpu_id +
                           ": one calibration is for one GPU model"};
    }
    in.gpu_id = *gpu;
    in.sources.push_back(files[f].path + " sha256:" + files[f].sha256_hex);
    for (const auto& a : nccl_disabled_algorithms(m)) disabled.insert(a);
    for (std::size_t i = 0; i < m.collectives.size(); ++i) {
      const CollectiveRow& r = m.collectives[i];
      if (f < skip.size() && i < skip[f].size() && skip[f][i]) continue;
      if (r.out_of_place.wrong > 0 || r.in_place.wrong > 0) continue;  // wrong results: no data
      models::CollectiveOp op;
      if (!models::parse_collective_op(r.op, &op) || row_time_s(r) <= 0) continue;
      in.collectives.push_back(
          {op, r.ranks, nodes_of(m, r.ranks), static_cast<double>(r.size_bytes), row_time_s(r)});
    }
    for (const GemmRate& g : m.gemm) {
      models::Precision p;
      if (!models::parse_precision(g.precision, &p) || g.tflops <= 0) continue;
      in.gemm.push_back(
          {p, double(g.m), double(g.n), double(g.k), g.tflops * 1e12, g.sustained, g.seconds});
    }
    for (const AttentionRate& a : m.attention) {
      if (a.tflops <= 0 || a.seq_len <= 0) continue;
      in.attention.push_back({a.direction == "backward", double(a.seq_len), a.tflops * 1e12,
                              a.implementation == models::kAttentionProductionKernel, a.causal});
    }
    for (const BandwidthRate& b : m.bandwidth) {
      const double Bps = b.GBps * 1e9;
      if (Bps <= 0) continue;
      if (b.kind == "hbm_copy")
        in.hbm_copy_Bps.push_back(Bps);
      else if (b.kind == "h2d")
        in.h2d_Bps.push_back(Bps);
      else if (b.kind == "d2h")
        in.d2h_Bps.push_back(Bps);
      else if (b.kind == "p2p")
        in.p2p_Bps.push_back(Bps);
    }
  }
  in.nccl_disabled_algorithms.assign(disabled.begin(), disabled.end());
  return in;
}

models::Result<AttentionReference> load_attention_reference(const std::string& path) {
  auto text = models::read_text_file(path);
  if (!text) return text.error();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    return models::Error{path + ": not JSON (" + e.what() + ")"};
  }
  if (!j.is_object() || !j.contains("sdpa") || !j["sdpa"].is_array() || j["sdpa"].empty()) {
    return models::Error{path + ": no \"sdpa\" rows (a validate/device/torch_reference.py file)"};
  }
  AttentionReference out;
  for (std::size_t i = 0; i < j["sdpa"].size(); ++i) {
    const auto& r = j["sdpa"][i];
    const std::string at = path + ": sdpa[" + std::to_string(i) + "]";
    if (!r.is_object() || !r.contains("seq_len") || !r.contains("direction") ||
        !r.contains("tflops") || !r["seq_len"].is_number() || !r["tflops"].is_number() ||
        !r["direction"].is_string()) {
      return models::Error{at + ": needs seq_len, direction and tflops"};
    }
    const std::string dir = r["direction"].get<std::string>();
    if (dir != "forward" && dir != "backward") {
      return models::Error{at + ": direction must be forward or backward, got '" + dir + "'"};
    }
    if (r.contains("causal") && !r["causal"].is_boolean()) {
      return models::Error{at + ": causal must be true or false"};
    }
    const double seq = r["seq_len"].get<double>(), tflops = r["tflops"].get<double>();
    if (!(seq > 0) || !(tflops > 0)) return models::Error{at + ": seq_len and tflops must be > 0"};
    models::AttentionSample a;
    a.backward = dir == "backward";
    a.kv_tokens = seq;
    a.flops_per_s = tflops * 1e12;
    a.production = true;
    a.causal = r.value("causal", false);
    out.samples.push_back(a);
  }
  auto text_of = [&](const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string("?");
  };
  out.source = path + " sha256:" + sha256_hex(*text) + " (torch " + text_of("torch") +
               " scaled_dot_product_attention on " + text_of("device") + ")";
  return out;
}

}  // namespace clustersim::validate
