// Is a seller's or a blog's figure physically possible on the stated hardware, and under which
// assumptions? A claim (a collective's time or bandwidth, a link rate, a FLOP count, a compute
// time, a training or decoding throughput) is held to its physical floor (physical_floor.h:
// raw datasheet rates, the best algorithm there is). Verdicts: POSSIBLE on the hardware as
// stated; BEYOND_PROTOCOL_RATE when a collective's figure is within the raw floor but needs more
// than the network protocol achieves (line rate x the NIC's catalog protocol efficiency: TCP
// 0.7, RoCE 0.9, IB 0.94); POSSIBLE_ONLY_IF one of the listed assumptions holds (more NICs per
// node, in-network reduction, the figure being busbw or a bidirectional sum, more GPUs...);
// IMPOSSIBLE when it beats the raw floor and no listed assumption helps.
// The claims file format is documented in scenarios/seed/claims.yaml's header. Units: SI.
#pragma once

#include <string>
#include <vector>

#include "models/collective_model.h"
#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::models {

enum class ClaimKind {
  kCollectiveTime,       // op of size S takes t
  kCollectiveBandwidth,  // op of size S reaches B (busbw or algbw)
  kLinkRate,             // one NIC port or scale-up link carries R
  kAttentionFlops,       // dense attention over s tokens at width h costs F FLOPs
  kComputeTime,          // the FLOPs of a pass take t at a rate on some GPUs
  kThroughput,           // a model trains (or decodes) at T tokens/s
};
enum class ClaimVerdict {
  kPossible,            // the protocol achieves it on the stated hardware
  kBeyondProtocolRate,  // within the raw floor, beyond line rate x protocol efficiency
  kPossibleOnlyIf,      // beats the raw floor as stated; one of `conditions` makes it possible
  kImpossible,          // beats the raw floor under every assumption left open
};
// How a bandwidth figure is counted where the claim does not say.
enum class BandwidthMetric { kBusbw, kAlgbw, kUnstated };
enum class LinkCounting { kPerDirection, kBidirectional, kUnstated };
enum class ThroughputMode { kTraining, kDecode, kUnstated };

std::string_view to_string(ClaimKind k);     // "collective_time", ...
// "POSSIBLE", "BEYOND_PROTOCOL_RATE", "POSSIBLE_ONLY_IF", "IMPOSSIBLE"
std::string_view to_string(ClaimVerdict v);

struct Claim {
  std::string id;
  std::string source;  // where it was said ("field guide, interconnect table, 400 GbE RoCE row")
  std::string says;    // the figure in the author's words
  ClaimKind kind = ClaimKind::kCollectiveTime;
  ClusterConfig cluster;     // the stated hardware
  std::string hardware;      // how it was given ("scenarios/seed/x.yaml, nics_per_node 1")
  // Assumptions the claim leaves open, searched for the conditions under which it holds:
  // "nics_per_node", "in_network_reduction", "gpus".
  std::vector<std::string> free;
  // Collective claims.
  CollectiveOp op = CollectiveOp::kAllReduce;
  int ranks = 0;  // 0 = every GPU of the cluster
  bool ring_only = false;  // "a ring all-reduce": no switch or in-network reduction
  double size_bytes = 0;
  double time_s = 0;       // collective_time, compute_time
  double bandwidth_Bps = 0;  // collective_bandwidth, link_rate
  BandwidthMetric metric = BandwidthMetric::kBusbw;
  // Link rate: the NIC (links x line rate) or, when scale_up_link is set, the GPU's scale-up.
  bool scale_up_link = false;
  LinkCounting counting = LinkCounting::kPerDirection;
  // Attention / compute.
  double tokens = 0;
  double hidden = 0;
  int layers = 1;
  bool causal = true;
  double claimed_flops = 0;  // the count the claim states (attention_flops; compute_time: its own)
  double rate_flops = 0;     // compute_time: per GPU; 0 = the GPU's dense peak
  int gpus = 0;              // compute_time / throughput; 0 = every GPU of the cluster
  // Throughput.
  ModelSpec model;
  int seq_len = 0;
  double tokens_per_s = 0;
  bool per_gpu = false;
  int batch = 1;             // decode: sequences decoded together
  ThroughputMode mode = ThroughputMode::kTraining;
  Precision precision = Precision::kBf16;
  WorkloadConfig workload;   // the scenario's, where one was given (tokens per step)
  bool has_workload = false;
};

struct ClaimResult {
  std::string id, says, source, hardware;
  ClaimKind kind = ClaimKind::kCollectiveTime;
  ClaimVerdict verdict = ClaimVerdict::kPossible;
  double claimed = 0;     // the figure, SI
  std::string unit;       // "s", "B/s", "FLOP", "tokens/s"
  // The floor on the hardware as stated: a least time / FLOP count ("minimum") or a most rate
  // ("maximum"), in `unit`, with how it follows.
  double floor = 0;
  std::string floor_kind;  // "minimum" | "maximum"
  std::string floor_why;
  // The same floor at the rate the network protocol achieves (line rate x the NIC's catalog
  // protocol efficiency), in `unit`; equal to `floor` where no protocol factor applies (one
  // node, link rates, FLOPs, throughput). achievable_why says how, empty when equal.
  double achievable_floor = 0;
  std::string achievable_why;
  // How much of the stated hardware's raw capability the figure needs (floor / claimed for
  // minima, claimed / floor for maxima): above 1 is beyond physics.
  double required_fraction = 0;
  // POSSIBLE_ONLY_IF: any one of them makes it possible (suffixed "only at the full line rate"
  // where the protocol would still fall short); BEYOND_PROTOCOL_RATE: any one of them lets the
  // protocol achieve it (may be empty).
  std::vector<std::string> conditions;
  std::vector<std::string> notes;       // context: other interpretations, what is typical
};

// Judges one claim.
ClaimResult evaluate_claim(const Claim& claim);

// Reads a claims file (format: scenarios/seed/claims.yaml's header). Scenario paths are relative
// to the file. Fails with "file:line:col: claims[i].key: what is wrong".
Result<std::vector<Claim>> load_claims_file(const std::string& path);
// The same for a file's text already read (`path` names it in errors and anchors its scenario
// paths).
Result<std::vector<Claim>> load_claims_text(std::string_view text, const std::string& path);

// Reads the top-level `claims:` list of a scenario document (`yaml_text`, loaded as `scenario`;
// errors cite scenario.path). Entries take the claims file's form, except that the hardware is
// the scenario's own (cluster and workload): no `scenario:`, `gpu:`, `gpus_per_node:` or
// `scale_up:`; nodes, nic, nics_per_node, links_per_nic and in_network_reduction may override it.
// No `claims:` key: an empty list. The scenario loader calls it (Scenario::claims); other
// callers read scenario.claims instead.
Result<std::vector<Claim>> read_scenario_claims(std::string_view yaml_text,
                                                const Scenario& scenario);

// A one-line collective claim on a cluster: "all_reduce 2GB 18ms", "all_gather 1GiB 300GB/s
// busbw" (metric word optional: unstated then), "ring all_reduce 2GB 300GB/s". NICs per node and
// in-network reduction are left open (the verdict says what it would take). Fails naming the
// word it cannot read.
Result<Claim> parse_claim_line(const std::string& line, const ClusterConfig& cluster,
                               const std::string& hardware);

}  // namespace clustersim::models
