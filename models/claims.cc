#include "models/claims.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "models/cluster_sketch.h"
#include "models/physical_floor.h"
#include "models/transformer_model.h"
#include "models/units.h"
#include "models/yaml_reader.h"

namespace clustersim::models {

std::string_view to_string(ClaimKind k) {
  switch (k) {
    case ClaimKind::kCollectiveTime: return "collective_time";
    case ClaimKind::kCollectiveBandwidth: return "collective_bandwidth";
    case ClaimKind::kLinkRate: return "link_rate";
    case ClaimKind::kAttentionFlops: return "attention_flops";
    case ClaimKind::kComputeTime: return "compute_time";
    case ClaimKind::kThroughput: return "throughput";
  }
  return "?";
}

std::string_view to_string(ClaimVerdict v) {
  switch (v) {
    case ClaimVerdict::kPossible: return "POSSIBLE";
    case ClaimVerdict::kBeyondProtocolRate:
      return "BEYOND_PROTOCOL_RATE";
    case ClaimVerdict::kPossibleOnlyIf: return "POSSIBLE_ONLY_IF";
    case ClaimVerdict::kImpossible: return "IMPOSSIBLE";
  }
  return "?";
}

namespace {

// Figures equal to their floor to this relative precision are possible (exactly at the floor).
constexpr double kTolerance = 1e-9;
// A figure that needs more than this fraction of the raw capability gets a note: real links,
// protocols and kernels stop short of their datasheet.
constexpr double kTightFraction = 0.9;

bool is_free(const Claim& c, std::string_view what) {
  return std::find(c.free.begin(), c.free.end(), what) != c.free.end();
}

std::string pct(double fraction) { return format_significant(100 * fraction, 3) + "%"; }

// Large counts in scientific notation ("3.28e+16"), 3 significant digits.
std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

ClaimResult start(const Claim& c) {
  ClaimResult r;
  r.id = c.id;
  r.says = c.says;
  r.source = c.source;
  r.hardware = c.hardware;
  r.kind = c.kind;
  return r;
}

// Sets the verdict from the readings (interpretations) that hold on the stated hardware, and
// the hardware conditions found for the others.
void decide(ClaimResult* r, std::size_t readings, const std::vector<std::string>& ok_readings,
            std::vector<std::string> hardware_conditions) {
  if (ok_readings.size() == readings) {
    r->verdict = ClaimVerdict::kPossible;
  } else if (!ok_readings.empty()) {
    r->verdict = ClaimVerdict::kPossibleOnlyIf;
    r->conditions = ok_readings;
  } else if (!hardware_conditions.empty()) {
    r->verdict = ClaimVerdict::kPossibleOnlyIf;
    r->conditions = std::move(hardware_conditions);
  } else {
    r->verdict = ClaimVerdict::kImpossible;
  }
}

// ---- collectives ----------------------------------------------------------------------------

double nic_Bps(const ClusterConfig& c) {
  double b = c.node.links_per_nic * c.node.nic.line_rate_Bps;
  if (c.node.gpu.pcie_Bps() > 0) b = std::min(b, c.node.gpu.pcie_Bps());
  return b;
}

// The time the figure stands for under one reading of a bandwidth claim.
double claimed_time(const Claim& c, BandwidthMetric m, int ranks) {
  if (c.kind == ClaimKind::kCollectiveTime) return c.time_s;
  const double algbw =
      m == BandwidthMetric::kAlgbw ? c.bandwidth_Bps
                                   : c.bandwidth_Bps / bus_bandwidth_factor(c.op, ranks);
  return c.size_bytes / algbw;
}

bool fits(const FloorHardware& hw, const Claim& c, double t) {
  return collective_floor(hw, c.op, c.size_bytes).time_s <= t * (1 + kTolerance);
}

// The fewest NICs per node (of the stated kind) that bring the floor to t; 0 when none does
// (the GPUs' own links bind first).
int min_nics(FloorHardware hw, const Claim& c, double t, double per_nic) {
  const int have = c.cluster.node.nics_per_node;
  double last = collective_floor(hw, c.op, c.size_bytes).time_s;
  for (int k = std::max(1, have + 1); k <= 4096; ++k) {
    hw.node_network_Bps = k * per_nic;
    const double f = collective_floor(hw, c.op, c.size_bytes).time_s;
    if (f <= t * (1 + kTolerance)) return k;
    if (f >= last * (1 - 1e-12)) return 0;  // no longer falling: another bound holds
    last = f;
  }
  return 0;
}

std::string metric_reading(BandwidthMetric m) {
  return m == BandwidthMetric::kAlgbw ? "the figure is algorithm bandwidth (size / time)"
                                      : "the figure is nccl-tests' bus bandwidth (busbw)";
}

// What holds for each reading of a collective claim on `hw` (raw or achievable rates): the
// readings that fit as stated, and the hardware changes left open that would make the others fit.
struct CollectiveSearch {
  std::vector<std::string> ok, conditions;
  bool all_fit(std::size_t readings) const { return ok.size() == readings; }
  bool any() const { return !ok.empty() || !conditions.empty(); }
};

// `per_nic` is one NIC's rate at the same basis as `hw` (raw, or times the protocol efficiency).
CollectiveSearch search_collective(const Claim& c, const FloorHardware& hw, double per_nic,
                                   bool sharp_possible,
                                   const std::vector<BandwidthMetric>& readings) {
  CollectiveSearch s;
  FloorHardware sharp = hw;
  sharp.in_network_reduction = true;
  for (BandwidthMetric m : readings) {
    const double t = claimed_time(c, m, hw.ranks);
    const std::string prefix = readings.size() > 1 ? metric_reading(m) + " and " : "";
    if (fits(hw, c, t)) {
      s.ok.push_back(metric_reading(m));
      continue;
    }
    if (sharp_possible && fits(sharp, c, t)) {
      s.conditions.push_back(prefix + "in-network reduction (SHARP) runs the all_reduce");
    }
    if (is_free(c, "nics_per_node") && hw.nodes > 1 && per_nic > 0) {
      const auto& node = c.cluster.node;
      const double raw_nic = nic_Bps(c.cluster);
      const bool capped = raw_nic < node.links_per_nic * node.nic.line_rate_Bps;
      const std::string nic =
          node.nic.id +
          (node.links_per_nic > 1 ? " of " + std::to_string(node.links_per_nic) + " links" : "") +
          " (" + format_bandwidth_bits(raw_nic) + (capped ? ": its PCIe x16 link caps it" : "") +
          ")";
      const int k = min_nics(hw, c, t, per_nic);
      if (k > 0)
        s.conditions.push_back(prefix + ">= " + std::to_string(k) + " x " + nic + " per node");
      const int ks = sharp_possible ? min_nics(sharp, c, t, per_nic) : 0;
      if (ks > 0 && (k == 0 || ks < k)) {
        s.conditions.push_back(prefix + ">= " + std::to_string(ks) + " x " + nic +
                               " per node with in-network reduction (SHARP)");
      }
    }
  }
  return s;
}

ClaimResult evaluate_collective(const Claim& c) {
  ClaimResult r = start(c);
  FloorHardware hw = floor_hardware(c.cluster, c.ranks);
  if (c.ring_only) hw.switch_reduction = hw.in_network_reduction = false;
  // The same hardware at the rate its network protocol achieves (catalog protocol_efficiency:
  // TCP 0.7, RoCE 0.9, IB 0.94); scale-up links carry no such factor in the catalog.
  const double efficiency =
      c.cluster.node.nic.id.empty() ? 1.0 : c.cluster.node.nic.protocol_efficiency;
  FloorHardware real = hw;
  real.node_network_Bps *= efficiency;
  const CollectiveFloor f = collective_floor(hw, c.op, c.size_bytes);
  const CollectiveFloor fr = collective_floor(real, c.op, c.size_bytes);
  const bool bandwidth = c.kind == ClaimKind::kCollectiveBandwidth;
  const BandwidthMetric shown = c.metric == BandwidthMetric::kAlgbw ? BandwidthMetric::kAlgbw
                                                                    : BandwidthMetric::kBusbw;
  if (bandwidth) {
    r.claimed = c.bandwidth_Bps;
    r.unit = "B/s";
    r.floor_kind = "maximum";
    r.floor = shown == BandwidthMetric::kAlgbw ? f.max_algbw_Bps : f.max_busbw_Bps;
    r.achievable_floor = shown == BandwidthMetric::kAlgbw ? fr.max_algbw_Bps : fr.max_busbw_Bps;
    r.required_fraction = r.floor > 0 ? r.claimed / r.floor : 0;
  } else {
    r.claimed = c.time_s;
    r.unit = "s";
    r.floor_kind = "minimum";
    r.floor = f.time_s;
    r.achievable_floor = fr.time_s;
    r.required_fraction = c.time_s > 0 ? f.time_s / c.time_s : 0;
  }
  r.floor_why = std::string(to_string(c.op)) + " of " + format_size(c.size_bytes) + " over " +
                std::to_string(hw.ranks) + " GPUs" +
                (c.ring_only ? " (ring: no in-switch reduction)" : "") + ": " + f.explanation +
                ": at least " + format_time(f.time_s) + ", so busbw <= " +
                format_bandwidth(f.max_busbw_Bps) + ", algbw <= " +
                format_bandwidth(f.max_algbw_Bps);
  if (fr.time_s > f.time_s * (1 + kTolerance)) {
    r.achievable_why = c.cluster.node.nic.id + " at its catalog protocol efficiency " +
                       format_significant(efficiency, 2) +
                       ": busbw <= " + format_bandwidth(fr.max_busbw_Bps) +
                       ", algbw <= " + format_bandwidth(fr.max_algbw_Bps);
  }

  std::vector<BandwidthMetric> readings{c.metric};
  if (bandwidth && c.metric == BandwidthMetric::kUnstated) {
    readings = {BandwidthMetric::kBusbw, BandwidthMetric::kAlgbw};
  }
  const double per_nic = nic_Bps(c.cluster);
  const bool sharp_possible = is_free(c, "in_network_reduction") && !c.ring_only && hw.nodes > 1 &&
                              c.op == CollectiveOp::kAllReduce && !hw.in_network_reduction &&
                              c.cluster.node.nic.in_network_reduction_capable;
  if (sharp_possible) {
    FloorHardware sharp = hw;
    sharp.in_network_reduction = true;
    r.notes.push_back("with in-network reduction (SHARP) the floor is " +
                      format_time(collective_floor(sharp, c.op, c.size_bytes).time_s));
  }
  // Held twice: to physics (raw line rates) and to what the protocol achieves. The conditions
  // named are those under which the protocol achieves the figure, where there are any.
  const CollectiveSearch at_line = search_collective(c, hw, per_nic, sharp_possible, readings);
  const CollectiveSearch achieved =
      efficiency < 1 ? search_collective(c, real, per_nic * efficiency, sharp_possible, readings)
                     : at_line;
  const std::size_t n = readings.size();
  if (achieved.all_fit(n)) {
    r.verdict = ClaimVerdict::kPossible;
  } else if (at_line.all_fit(n)) {
    r.verdict = ClaimVerdict::kBeyondProtocolRate;
    r.conditions = !achieved.ok.empty() ? achieved.ok : achieved.conditions;
  } else if (achieved.any()) {
    decide(&r, n, achieved.ok, achieved.conditions);
  } else if (at_line.any()) {
    decide(&r, n, at_line.ok, at_line.conditions);
    for (auto& condition : r.conditions) {
      condition +=
          " (only at the full line rate: beyond what " + c.cluster.node.nic.id + " achieves)";
    }
  } else {
    r.verdict = ClaimVerdict::kImpossible;
  }
  if (r.verdict == ClaimVerdict::kBeyondProtocolRate) {
    r.notes.push_back("needs " + pct(r.required_fraction) + " of the raw line rate; " +
                      c.cluster.node.nic.id + " achieves about " + pct(efficiency) +
                      " of it (catalog protocol efficiency)");
  } else if (r.verdict == ClaimVerdict::kPossible && r.required_fraction > kTightFraction) {
    r.notes.push_back("needs " + pct(r.required_fraction) +
                      " of the raw link rate; real transports stop short of it (catalog " +
                      c.cluster.node.nic.id + " efficiency " + format_significant(efficiency, 2) +
                      ")");
  }
  return r;
}

// ---- links, FLOPs, throughput ---------------------------------------------------------------

ClaimResult evaluate_link(const Claim& c) {
  ClaimResult r = start(c);
  double cap = c.scale_up_link ? c.cluster.node.scale_up.per_gpu_Bps
                               : c.cluster.node.links_per_nic * c.cluster.node.nic.line_rate_Bps;
  const std::string what = c.scale_up_link ? c.cluster.node.scale_up.id + " per GPU"
                                           : std::to_string(c.cluster.node.links_per_nic) +
                                                 " x " + c.cluster.node.nic.id + " link";
  r.claimed = c.bandwidth_Bps;
  r.unit = "B/s";
  r.floor_kind = "maximum";
  r.floor = cap;
  r.required_fraction = cap > 0 ? c.bandwidth_Bps / cap : 0;
  r.floor_why = what + ": " + format_bandwidth_bits(cap) + " (" + format_bandwidth(cap) +
                ") per direction, line rate";
  std::vector<LinkCounting> readings{c.counting};
  if (c.counting == LinkCounting::kUnstated) {
    readings = {LinkCounting::kPerDirection, LinkCounting::kBidirectional};
  }
  std::vector<std::string> ok;
  for (LinkCounting k : readings) {
    const double limit = k == LinkCounting::kBidirectional ? 2 * cap : cap;
    if (c.bandwidth_Bps <= limit * (1 + kTolerance)) {
      ok.push_back(k == LinkCounting::kBidirectional
                       ? "the figure adds both directions (bidirectional)"
                       : "the figure is per direction");
    }
  }
  decide(&r, readings.size(), ok, {});
  if (c.counting == LinkCounting::kPerDirection && c.bandwidth_Bps > cap &&
      c.bandwidth_Bps <= 2 * cap) {
    r.notes.push_back("only a bidirectional sum (both directions added) reaches it");
  }
  if (!c.scale_up_link && c.bandwidth_Bps > cap) {
    // The slowest catalog port of the same technology that would carry it.
    const NicSpec* better = nullptr;
    for (const NicSpec& n : nic_catalog()) {
      if (n.technology == c.cluster.node.nic.technology &&
          n.line_rate_Bps >= c.bandwidth_Bps / c.cluster.node.links_per_nic &&
          (better == nullptr || n.line_rate_Bps < better->line_rate_Bps)) {
        better = &n;
      }
    }
    if (better) {
      r.notes.push_back("one " + better->id + " port (" +
                        format_bandwidth_bits(better->line_rate_Bps) + ") would carry it");
    }
  }
  return r;
}

ClaimResult evaluate_attention_flops(const Claim& c) {
  ClaimResult r = start(c);
  const double need = c.layers * attention_forward_flops_per_layer(c.tokens, c.hidden, c.causal);
  r.claimed = c.claimed_flops;
  r.unit = "FLOP";
  r.floor_kind = "minimum";
  r.floor = need;
  r.required_fraction = c.claimed_flops > 0 ? need / c.claimed_flops : 0;
  r.floor_why = "dense attention forward (QK^T and AV) = 4 s^2 h" +
                std::string(c.causal ? " / 2 (causal)" : "") + " per layer, s = " +
                format_count(c.tokens) + " tokens, h = " + format_significant(c.hidden, 6) +
                (c.layers > 1 ? ", x " + std::to_string(c.layers) + " layers" : "") + " = " +
                sci(need) + " FLOP";
  decide(&r, 1, c.claimed_flops >= need * (1 - kTolerance) ? std::vector<std::string>{"-"}
                                                           : std::vector<std::string>{},
         {});
  if (r.verdict == ClaimVerdict::kImpossible) {
    r.notes.push_back("undercounts by x" + format_significant(need / c.claimed_flops, 3) +
                      "; only a sparse attention pattern does less work");
  }
  return r;
}

double peak_of(const Claim& c) { return c.cluster.node.gpu.peak_flops(c.precision); }

ClaimResult evaluate_compute_time(const Claim& c) {
  ClaimResult r = start(c);
  const double flops = c.layers * attention_forward_flops_per_layer(c.tokens, c.hidden, c.causal);
  const double rate = c.rate_flops > 0 ? c.rate_flops : peak_of(c);
  const int gpus = std::max(1, c.gpus > 0 ? c.gpus : c.cluster.total_gpus());
  const double floor_s = flops / (gpus * rate);
  r.claimed = c.time_s;
  r.unit = "s";
  r.floor_kind = "minimum";
  r.floor = floor_s;
  r.required_fraction = c.time_s > 0 ? floor_s / c.time_s : 0;
  r.floor_why = "attention forward alone: " + std::to_string(c.layers) + " layers x 4 s^2 h" +
                (c.causal ? " / 2" : "") + " (s = " + format_count(c.tokens) + ", h = " +
                format_significant(c.hidden, 6) + ") = " + sci(flops) +
                " FLOP over " + std::to_string(gpus) + " GPU" + (gpus > 1 ? "s" : "") + " at " +
                format_flops(rate) + " each (the dense matmuls only add to it)";
  std::vector<std::string> conditions;
  const bool ok = floor_s <= c.time_s * (1 + kTolerance);
  if (!ok && is_free(c, "gpus")) {
    const double k = std::ceil(flops / (rate * c.time_s) * (1 - kTolerance));
    conditions.push_back(">= " + format_significant(k, 6) + " GPUs at " + format_flops(rate) +
                         " each, perfectly parallel");
  }
  decide(&r, 1, ok ? std::vector<std::string>{"-"} : std::vector<std::string>{}, conditions);
  if (c.claimed_flops > 0) {
    const double own_s = c.claimed_flops / (gpus * rate);
    if (std::fabs(own_s - c.time_s) > 0.1 * c.time_s) {
      r.notes.push_back("its own numbers give " + sci(c.claimed_flops) +
                        " FLOP / " + format_flops(gpus * rate) + " = " + format_time(own_s) +
                        ", not " + format_time(c.time_s));
    }
    if (c.claimed_flops < flops * (1 - kTolerance)) {
      r.notes.push_back("its FLOP count " + sci(c.claimed_flops) +
                        " is x" + format_significant(flops / c.claimed_flops, 3) + " too low");
    }
  }
  if (c.rate_flops > 0 && peak_of(c) > c.rate_flops) {
    r.notes.push_back("even at the " + c.cluster.node.gpu.id + "'s dense " +
                      std::string(to_string(c.precision)) + " peak (" +
                      format_flops(peak_of(c)) + ") it takes at least " +
                      format_time(flops / (gpus * peak_of(c))));
  }
  return r;
}

ClaimResult evaluate_throughput(const Claim& c) {
  ClaimResult r = start(c);
  const int gpus = c.gpus > 0 ? c.gpus : c.cluster.total_gpus();
  const double peak = peak_of(c);
  const FlopsPerToken fpt = flops_per_token(c.model, c.seq_len, true);
  const double weight_bytes = count_parameters(c.model).total() * bytes_per_element(c.precision);
  // Tokens/s ceilings for the whole job, then in the claim's own basis.
  const double train_max = gpus * peak / fpt.training();
  // Decoding b sequences: every step reads every weight once across the GPUs (HBM bound) and
  // does 2 FLOPs per weight per sequence (compute bound).
  const double decode_max = std::min(c.batch * gpus * c.cluster.node.gpu.hbm_Bps / weight_bytes,
                                     gpus * peak / fpt.forward());
  const double basis = c.per_gpu ? gpus : 1.0;
  const double claimed_total = c.tokens_per_s * (c.per_gpu ? gpus : 1);
  r.claimed = c.tokens_per_s;
  r.unit = c.per_gpu ? "tokens/s/GPU" : "tokens/s";
  r.floor_kind = "maximum";
  const bool decode_first = c.mode == ThroughputMode::kDecode;
  r.floor = (decode_first ? decode_max : train_max) / basis;
  r.required_fraction = r.floor > 0 ? r.claimed / r.floor : 0;
  const std::string train_why =
      "training: " + std::to_string(gpus) + " x " + format_flops(peak) + " / " +
      sci(fpt.training()) + " FLOP per token (6N + attention at " +
      std::to_string(c.seq_len) + " tokens) = " + format_significant(train_max / basis, 4) + " " +
      r.unit;
  const std::string decode_why =
      "decoding at batch " + std::to_string(c.batch) + ": each step reads " +
      format_size(weight_bytes) + " of weights at " + format_bandwidth(c.cluster.node.gpu.hbm_Bps) +
      " per GPU = " + format_significant(decode_max / basis, 4) + " " + r.unit;
  r.floor_why = decode_first ? decode_why : train_why;
  std::vector<ThroughputMode> readings{c.mode};
  if (c.mode == ThroughputMode::kUnstated) {
    readings = {ThroughputMode::kTraining, ThroughputMode::kDecode};
    r.notes.push_back(decode_why);
  }
  std::vector<std::string> ok;
  for (ThroughputMode m : readings) {
    const double max = m == ThroughputMode::kDecode ? decode_max : train_max;
    if (claimed_total <= max * (1 + kTolerance)) {
      ok.push_back(m == ThroughputMode::kDecode
                       ? "it counts decoded tokens at batch " + std::to_string(c.batch)
                       : "it counts training tokens, at " + pct(claimed_total / train_max) +
                             " of the dense peak (MFU)");
    }
  }
  decide(&r, readings.size(), ok, {});
  if (c.mode == ThroughputMode::kTraining) {
    r.notes.push_back("that is " + pct(claimed_total / train_max) +
                      " of the cluster's dense peak (MFU)");
  }
  if (claimed_total <= train_max && claimed_total / train_max > 0.6 &&
      c.mode != ThroughputMode::kDecode) {
    r.notes.push_back("an MFU of " + pct(claimed_total / train_max) +
                      " is above any published dense training run (PaLM 46%, Chowdhery et al. "
                      "2022; Llama 3 405B 38-43%, Llama Team 2024)");
  }
  if (c.has_workload && c.mode != ThroughputMode::kDecode) {
    // What the network can explain: the gradient all_reduce of a step against the step time.
    const double step_s = c.workload.tokens_per_step() / claimed_total;
    const double grad_bytes = count_parameters(c.model).total() * gradient_bytes(c.workload);
    const double ar_s =
        collective_floor(floor_hardware(c.cluster), CollectiveOp::kAllReduce, grad_bytes).time_s;
    r.notes.push_back("a step of " + format_count(c.workload.tokens_per_step()) +
                      " tokens takes " + format_time(step_s) + " at this rate; its gradient "
                      "all_reduce (" + format_size(grad_bytes) + ") needs at least " +
                      format_time(ar_s) + " on this network (" + pct(ar_s / step_s) +
                      " of the step)");
  }
  return r;
}

// Kinds with no network protocol between the figure and its floor: held to the raw floor only.
ClaimResult raw_floor_only(ClaimResult r) {
  r.achievable_floor = r.floor;
  return r;
}

}  // namespace

ClaimResult evaluate_claim(const Claim& c) {
  switch (c.kind) {
    case ClaimKind::kCollectiveTime:
    case ClaimKind::kCollectiveBandwidth: return evaluate_collective(c);
    case ClaimKind::kLinkRate:
      return raw_floor_only(evaluate_link(c));
    case ClaimKind::kAttentionFlops:
      return raw_floor_only(evaluate_attention_flops(c));
    case ClaimKind::kComputeTime:
      return raw_floor_only(evaluate_compute_time(c));
    case ClaimKind::kThroughput:
      return raw_floor_only(evaluate_throughput(c));
  }
  return start(c);
}

// ---- reading claims ---------------------------------------------------------------------------

namespace {

std::string describe_cluster(const ClusterConfig& c) {
  std::string s = std::to_string(c.nodes) + " node" + (c.nodes > 1 ? "s" : "") + " x " +
                  std::to_string(c.node.gpus_per_node) + " " + c.node.gpu.id + " (" +
                  c.node.scale_up.id + ")";
  if (c.node.nics_per_node > 0 && !c.node.nic.id.empty()) {
    s += ", " + std::to_string(c.node.nics_per_node) + " x " + c.node.nic.id;
    if (c.node.links_per_nic > 1) s += " of " + std::to_string(c.node.links_per_nic) + " links";
    s += " per node";
    s += c.fabric.in_network_reduction ? ", SHARP on" : ", SHARP off";
  }
  return s;
}

Result<double> size_arg(std::string_view t) { return parse_size_bytes(t); }

// The entries of a `claims:` list read by `in` (errors cite in.origin()). Each claim's hardware
// is its own `scenario:` (relative to the list's file), its inline keys, or, for a list inside a
// scenario (`own`), that scenario; the override keys apply to either scenario.
Result<std::vector<Claim>> read_claims_list(YamlReader& in, const YAML::Node& list,
                                            const Scenario* own) {
  const std::string& path = in.origin();
  auto failed = [&]() -> Result<std::vector<Claim>> { return in.error(); };
  auto bad = [&](const YAML::Node& n, const std::string& at, const std::string& what) {
    in.fail(n, at, what);
    return failed();
  };
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<Claim> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string p = "claims[" + std::to_string(i) + "]";
    Claim c;
    std::string kind, scenario, gpu, scale_up, nic, op, algorithm = "any", metric = "busbw";
    std::string link = "nic", counting = "per_direction", model, mode = "training", precision;
    int nodes = 0, gpus_per_node = 0, nics = -1, links = 0, sharp = -1;
    bool sharp_flag = false;
    YAML::Node free;
    if (!in.open_map(e, p, {"id", "source", "says", "kind", "scenario", "gpu", "gpus_per_node",
                            "nodes", "scale_up", "nic", "nics_per_node", "links_per_nic",
                            "in_network_reduction", "free", "op", "ranks", "algorithm", "size",
                            "time", "bandwidth", "metric", "link", "rate", "counting", "tokens",
                            "hidden", "layers", "causal", "flops", "flops_rate", "gpus", "model",
                            "seq_len", "tokens_per_s", "per_gpu", "batch", "mode", "precision"}) ||
        !in.text(e, p, "id", &c.id, true) || !in.text(e, p, "source", &c.source) ||
        !in.text(e, p, "says", &c.says, true) || !in.text(e, p, "kind", &kind, true) ||
        !in.text(e, p, "scenario", &scenario) || !in.text(e, p, "gpu", &gpu) ||
        !in.integer(e, p, "gpus_per_node", &gpus_per_node) || !in.integer(e, p, "nodes", &nodes) ||
        !in.text(e, p, "scale_up", &scale_up) || !in.text(e, p, "nic", &nic) ||
        !in.integer(e, p, "nics_per_node", &nics) || !in.integer(e, p, "links_per_nic", &links) ||
        !in.flag(e, p, "in_network_reduction", &sharp_flag) || !in.list(e, p, "free", &free) ||
        !in.text(e, p, "op", &op) || !in.integer(e, p, "ranks", &c.ranks) ||
        !in.text(e, p, "algorithm", &algorithm) ||
        !in.quantity(e, p, "size", size_arg, &c.size_bytes) ||
        !in.quantity(e, p, "time", parse_time_s, &c.time_s) ||
        !in.quantity(e, p, "bandwidth", parse_bandwidth_Bps, &c.bandwidth_Bps) ||
        !in.text(e, p, "metric", &metric) || !in.text(e, p, "link", &link) ||
        !in.quantity(e, p, "rate", parse_bandwidth_Bps, &c.bandwidth_Bps) ||
        !in.text(e, p, "counting", &counting) ||
        !in.quantity(e, p, "tokens", parse_count, &c.tokens) || !in.number(e, p, "hidden", &c.hidden) ||
        !in.integer(e, p, "layers", &c.layers) || !in.flag(e, p, "causal", &c.causal) ||
        !in.number(e, p, "flops", &c.claimed_flops) ||
        !in.quantity(e, p, "flops_rate", parse_flops, &c.rate_flops) ||
        !in.integer(e, p, "gpus", &c.gpus) || !in.text(e, p, "model", &model) ||
        !in.integer(e, p, "seq_len", &c.seq_len) ||
        !in.quantity(e, p, "tokens_per_s", parse_count, &c.tokens_per_s) ||
        !in.flag(e, p, "per_gpu", &c.per_gpu) || !in.integer(e, p, "batch", &c.batch) ||
        !in.text(e, p, "mode", &mode) || !in.text(e, p, "precision", &precision)) {
      return failed();
    }
    if (e["in_network_reduction"].IsDefined()) sharp = sharp_flag ? 1 : 0;
    for (const auto& f : free) {
      static constexpr std::string_view kFree[] = {"nics_per_node", "in_network_reduction", "gpus"};
      if (!f.IsScalar() || std::find(std::begin(kFree), std::end(kFree), f.Scalar()) == std::end(kFree)) {
        return bad(f, p + ".free", "expected nics_per_node, in_network_reduction or gpus");
      }
      c.free.push_back(f.Scalar());
    }
    // Kind and its own fields.
    static constexpr ClaimKind kKinds[] = {
        ClaimKind::kCollectiveTime, ClaimKind::kCollectiveBandwidth, ClaimKind::kLinkRate,
        ClaimKind::kAttentionFlops, ClaimKind::kComputeTime,         ClaimKind::kThroughput};
    const auto* k = std::find_if(std::begin(kKinds), std::end(kKinds),
                                 [&](ClaimKind x) { return to_string(x) == kind; });
    if (k == std::end(kKinds)) {
      return bad(e["kind"], p + ".kind",
                 "unknown kind '" + kind + "' (collective_time, collective_bandwidth, "
                 "link_rate, attention_flops, compute_time, throughput)");
    }
    c.kind = *k;
    auto need = [&](bool have, std::string_view key) {
      return have || in.fail(e, p + "." + std::string(key), "missing (needed by " + kind + ")");
    };
    const bool collective =
        c.kind == ClaimKind::kCollectiveTime || c.kind == ClaimKind::kCollectiveBandwidth;
    if (collective) {
      if (!need(!op.empty(), "op") || !need(c.size_bytes > 0, "size") ||
          !need(c.kind == ClaimKind::kCollectiveBandwidth || c.time_s > 0, "time") ||
          !need(c.kind == ClaimKind::kCollectiveTime || c.bandwidth_Bps > 0, "bandwidth")) {
        return failed();
      }
      if (!parse_collective_op(op, &c.op)) return bad(e["op"], p + ".op", "unknown op '" + op + "'");
      if (algorithm != "any" && algorithm != "ring") {
        return bad(e["algorithm"], p + ".algorithm", "any or ring");
      }
      c.ring_only = algorithm == "ring";
      if (metric == "busbw") c.metric = BandwidthMetric::kBusbw;
      else if (metric == "algbw") c.metric = BandwidthMetric::kAlgbw;
      else if (metric == "unstated") c.metric = BandwidthMetric::kUnstated;
      else return bad(e["metric"], p + ".metric", "busbw, algbw or unstated");
    }
    if (c.kind == ClaimKind::kLinkRate) {
      if (!need(c.bandwidth_Bps > 0, "rate")) return failed();
      if (link != "nic" && link != "scale_up") return bad(e["link"], p + ".link", "nic or scale_up");
      c.scale_up_link = link == "scale_up";
      if (counting == "per_direction") c.counting = LinkCounting::kPerDirection;
      else if (counting == "bidirectional") c.counting = LinkCounting::kBidirectional;
      else if (counting == "unstated") c.counting = LinkCounting::kUnstated;
      else return bad(e["counting"], p + ".counting", "per_direction, bidirectional or unstated");
    }
    if (c.kind == ClaimKind::kAttentionFlops || c.kind == ClaimKind::kComputeTime) {
      if (!need(c.tokens > 0, "tokens") || !need(c.hidden > 0, "hidden") ||
          !need(c.kind == ClaimKind::kComputeTime || c.claimed_flops > 0, "flops") ||
          !need(c.kind == ClaimKind::kAttentionFlops || c.time_s > 0, "time")) {
        return failed();
      }
    }
    if (c.kind == ClaimKind::kThroughput) {
      if (!need(!model.empty(), "model") || !need(c.seq_len > 0, "seq_len") ||
          !need(c.tokens_per_s > 0, "tokens_per_s")) {
        return failed();
      }
      const ModelSpec* m = find_model(model);
      if (m == nullptr) return bad(e["model"], p + ".model", "unknown model '" + model + "' (known: " + known_model_ids() + ")");
      c.model = *m;
      if (mode == "training") c.mode = ThroughputMode::kTraining;
      else if (mode == "decode") c.mode = ThroughputMode::kDecode;
      else if (mode == "unstated") c.mode = ThroughputMode::kUnstated;
      else return bad(e["mode"], p + ".mode", "training, decode or unstated");
    }
    if (!precision.empty() && !parse_precision(precision, &c.precision)) {
      return bad(e["precision"], p + ".precision", "unknown precision");
    }
    // The hardware: a scenario with overrides, or a sketch from the inline keys.
    const Scenario* base = own;
    std::string label = own != nullptr ? own->path : "";
    Result<Scenario> named = Error{};
    if (!scenario.empty()) {
      if (own != nullptr) {
        return bad(e["scenario"], p + ".scenario",
                   "a claim inside a scenario is held to that scenario's hardware (override "
                   "only nodes, nic, nics_per_node, links_per_nic, in_network_reduction)");
      }
      named = load_scenario_file((dir / scenario).lexically_normal().string());
      if (!named) return bad(e["scenario"], p + ".scenario", named.message());
      base = &*named;
      label = scenario;
    }
    if (base != nullptr) {
      c.cluster = base->cluster;
      c.workload = base->workload;
      c.has_workload = true;
      if (!gpu.empty() || !scale_up.empty() || gpus_per_node > 0) {
        return bad(e, p, "with a scenario, override only nodes, nic, nics_per_node, "
                         "links_per_nic, in_network_reduction");
      }
      if (nodes > 0) c.cluster.nodes = nodes;
      if (!nic.empty()) {
        const NicSpec* n = find_nic(nic);
        if (n == nullptr) return bad(e["nic"], p + ".nic", "unknown NIC '" + nic + "' (known: " + known_nic_ids() + ")");
        c.cluster.node.nic = *n;
      }
      if (nics >= 0) c.cluster.node.nics_per_node = nics;
      if (links > 0) c.cluster.node.links_per_nic = links;
      if (sharp >= 0) c.cluster.fabric.in_network_reduction = sharp == 1;
      c.hardware = describe_cluster(c.cluster) + " (" + label + ")";
    } else if (!gpu.empty()) {
      ClusterSketch s;
      s.gpu = gpu;
      s.gpus_per_node = gpus_per_node > 0 ? gpus_per_node : 8;
      s.nodes = nodes > 0 ? nodes : 1;
      s.scale_up = scale_up;
      s.nic = nic;
      s.nics_per_node = nics > 0 ? nics : (nic.empty() ? 0 : 1);
      s.links_per_nic = links > 0 ? links : 1;
      s.in_network_reduction = sharp == 1;
      auto cl = cluster_from_sketch(s, path + ": " + p);
      if (!cl) return bad(e, p, cl.message());
      c.cluster = *cl;
      c.hardware = describe_cluster(c.cluster);
    } else if (c.kind == ClaimKind::kLinkRate && (!nic.empty() || !scale_up.empty())) {
      if (!nic.empty()) {
        const NicSpec* n = find_nic(nic);
        if (n == nullptr) return bad(e["nic"], p + ".nic", "unknown NIC '" + nic + "' (known: " + known_nic_ids() + ")");
        c.cluster.node.nic = *n;
        c.cluster.node.links_per_nic = links > 0 ? links : 1;
        c.hardware = std::to_string(c.cluster.node.links_per_nic) + " x " + n->id;
      } else {
        const ScaleUpSpec* s = find_scale_up(scale_up);
        if (s == nullptr) return bad(e["scale_up"], p + ".scale_up", "unknown scale-up link '" + scale_up + "' (known: " + known_scale_up_ids() + ")");
        c.cluster.node.scale_up = *s;
        c.hardware = s->id;
      }
    } else if (c.kind != ClaimKind::kAttentionFlops) {  // a FLOP count needs no hardware
      return bad(e, p, "give the hardware: scenario, or gpu (with nodes, nic, ...)");
    }
    if (c.kind == ClaimKind::kLinkRate && c.scale_up_link && c.cluster.node.scale_up.id.empty()) {
      return bad(e, p + ".scale_up", "a scale_up link rate needs the scale-up link");
    }
    if (c.kind == ClaimKind::kLinkRate && !c.scale_up_link && c.cluster.node.nic.id.empty()) {
      return bad(e, p + ".nic", "a nic link rate needs the NIC");
    }
    if ((c.kind == ClaimKind::kComputeTime || c.kind == ClaimKind::kThroughput) &&
        c.cluster.node.gpu.peak_flops(c.precision) <= 0) {
      return bad(e, p, "the GPU has no " + std::string(to_string(c.precision)) + " peak");
    }
    if (collective && c.ranks > c.cluster.total_gpus()) {
      return bad(e["ranks"], p + ".ranks", "more ranks than the cluster's GPUs");
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

Result<std::vector<Claim>> load_claims_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return load_claims_text(*text, path);
}

Result<std::vector<Claim>> load_claims_text(std::string_view text, const std::string& path) {
  YamlReader in(path);
  YAML::Node root, list;
  if (!in.parse(text, &root) || !in.open_map(root, "", {"name", "claims"}) ||
      !in.list(root, "", "claims", &list, true)) {
    return in.error();
  }
  return read_claims_list(in, list, nullptr);
}

Result<std::vector<Claim>> read_scenario_claims(std::string_view yaml_text,
                                                const Scenario& scenario) {
  YamlReader in(scenario.path);
  YAML::Node root, list;
  if (!in.parse(yaml_text, &root) || !root.IsMap() || !in.list(root, "", "claims", &list)) {
    return in.ok() ? Result<std::vector<Claim>>(std::vector<Claim>{}) : in.error();
  }
  return read_claims_list(in, list, &scenario);
}

Result<Claim> parse_claim_line(const std::string& line, const ClusterConfig& cluster,
                               const std::string& hardware) {
  std::istringstream words(line);
  std::vector<std::string> w;
  for (std::string s; words >> s;) w.push_back(s);
  Claim c;
  c.id = "claim";
  c.says = line;
  c.cluster = cluster;
  c.hardware = describe_cluster(cluster) + (hardware.empty() ? "" : " (" + hardware + ")");
  c.free = {"nics_per_node", "in_network_reduction"};
  std::size_t i = 0;
  if (i < w.size() && w[i] == "ring") {
    c.ring_only = true;
    ++i;
  }
  const std::string form =
      "expected '[ring] OP SIZE TIME' or '[ring] OP SIZE BANDWIDTH [busbw|algbw]', e.g. "
      "'all_reduce 2GB 18ms'";
  if (w.size() < i + 3) return Error{"--claim '" + line + "': " + form};
  if (!parse_collective_op(w[i], &c.op)) {
    return Error{"--claim: '" + w[i] + "' is not a collective (all_reduce, all_gather, ...)"};
  }
  auto size = parse_size_bytes(w[i + 1], true);
  if (!size) return Error{"--claim: " + size.message()};
  c.size_bytes = *size;
  if (auto t = parse_time_s(w[i + 2])) {
    c.kind = ClaimKind::kCollectiveTime;
    c.time_s = *t;
  } else if (auto b = parse_bandwidth_Bps(w[i + 2])) {
    c.kind = ClaimKind::kCollectiveBandwidth;
    c.bandwidth_Bps = *b;
    c.metric = BandwidthMetric::kUnstated;
  } else {
    return Error{"--claim: '" + w[i + 2] + "' is neither a time (18ms) nor a bandwidth (300GB/s)"};
  }
  if (w.size() > i + 3) {
    if (c.kind != ClaimKind::kCollectiveBandwidth || w.size() > i + 4 ||
        (w[i + 3] != "busbw" && w[i + 3] != "algbw")) {
      return Error{"--claim '" + line + "': " + form};
    }
    c.metric = w[i + 3] == "busbw" ? BandwidthMetric::kBusbw : BandwidthMetric::kAlgbw;
  }
  if (c.size_bytes <= 0) return Error{"--claim: the size must be positive"};
  return c;
}

}  // namespace clustersim::models
