#include "sim/step_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "models/compute_model.h"
#include "models/units.h"
#include "sim/pipeline_schedule.h"

namespace clustersim::sim {
namespace {

using models::CollectiveOp;
using models::CommPhase;
using models::ParallelDim;
using models::TimedComm;

constexpr int kLaneCompute = 0, kLaneTp = 1, kLanePp = 2, kLaneDp = 3, kLaneCp = 4, kLaneEp = 5;

// Global rank order tp, cp, dp, pp (transformer_model.h); physical GPUs through the placement.
struct Layout {
  int tp = 1, cp = 1, dp = 1, pp = 1, gpn = 1;
  NodePlacement placement;
  int rank(int t, int c, int d, int p) const { return t + tp * (c + cp * (d + dp * p)); }
  int gpu(int rank) const { return placement.physical_gpu(rank, gpn); }
  int rep(int stage) const { return gpu(rank(0, 0, 0, stage)); }
  // The group of `size` ranks `stride` apart that holds `rank`, in physical GPUs.
  Communicator group_of(int r, int size, int stride) const {
    const int base = r - ((r / stride) % size) * stride;
    Communicator c;
    for (int k = 0; k < size; ++k) c.push_back(gpu(base + k * stride));
    return c;
  }
  // Every group of this shape among the ranks of one pipeline stage (the siblings that run a
  // collective together).
  std::vector<Communicator> stage_groups(int stage, int size, int stride) const {
    std::vector<Communicator> out;
    for (int d = 0; d < dp; ++d)
      for (int c = 0; c < cp; ++c)
        for (int t = 0; t < tp; ++t) {
          const int r = rank(t, c, d, stage);
          if ((r / stride) % size == 0) out.push_back(group_of(r, size, stride));
        }
    return out;
  }
};

// A distinct collective of the step: simulated once on the whole fabric (the pattern), then
// reused, as the representative GPU's flows capped at the pattern's rate, at every call.
struct CommKind {
  const TimedComm* timed = nullptr;
  double latency_s = 0;        // one call
  double pattern_s = 0;        // simulated bandwidth term of one call on the whole fabric
  // Per stage: the representative's flows for one full-size call (bytes, routes on its own
  // links) and their rate caps.
  std::map<int, std::vector<SimFlow>> footprint;
};

struct TaskInfo {
  std::string name;
  std::string category;
  int stage = 0;
  int lane = 0;
  bool comm = false;
  ParallelDim dim = ParallelDim::kTp;
  std::vector<int> preds;
};

std::string dim_name(ParallelDim d) { return std::string(models::to_string(d)); }

// A collective's entry in the op graph: its name, trace category and lane, and dimension.
TaskInfo comm_info(std::string name, const char* category, int lane, ParallelDim dim) {
  TaskInfo info;
  info.name = std::move(name);
  info.category = category;
  info.lane = lane;
  info.dim = dim;
  return info;
}

class StepBuilder {
 public:
  StepBuilder(const models::Scenario& sc, const models::StepParams& params,
              const StepSimOptions& opt, const models::StepResult& analytic, Layout layout,
              FabricModel& fabric, std::vector<SimFlow> background)
      : sc_(sc), params_(params), opt_(opt), an_(analytic), lay_(std::move(layout)),
        fabric_(fabric), background_(std::move(background)), graph_(lay_.pp) {}

  models::Status build(DesStepResult* out);
  models::Status run(DesStepResult* out);

 private:
  // --- progress --------------------------------------------------------------------------
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void tell(const PatternReport& rep) const {
    if (!opt_.progress) return;
    opt_.progress("pattern " + rep.what + ": " + std::to_string(rep.flows) + " flows, simulated in " +
                      models::format_time(rep.wall_s),
                  elapsed_s());
  }

  // --- resources the representatives own -------------------------------------------------
  const std::set<int>& owned(int stage) {
    auto [it, inserted] = owned_.try_emplace(stage);
    if (inserted) {
      // Its own links (NVLink port, PCIe link) both ways, and its NIC's path to the leaf.
      const int gpu = lay_.rep(stage);
      const auto& g = fabric_.graph();
      for (int link : g.links_of(g.gpu_vertex(gpu))) {
        it->second.insert(fabric_.link_resource(link, true));
        it->second.insert(fabric_.link_resource(link, false));
      }
      if (fabric_.graph().node_count() > 1 && fabric_.graph().plane_count() > 0) {
        for (int r : fabric_.to_leaf(gpu).resources) it->second.insert(r);
        for (int r : fabric_.from_leaf(gpu).resources) it->second.insert(r);
      }
    }
    return it->second;
  }
  // The part of `flows` on the links of the given stages' representatives.
  std::vector<SimFlow> on_owned(const std::vector<SimFlow>& flows, std::initializer_list<int> stages) {
    std::vector<SimFlow> out;
    for (const SimFlow& f : flows) {
      SimFlow kept;
      kept.bytes = f.bytes;
      kept.max_rate_Bps = f.max_rate_Bps;
      for (int r : f.route) {
        for (int s : stages) {
          if (owned(s).count(r)) {
            kept.route.push_back(r);
            break;
          }
        }
      }
      if (!kept.route.empty()) out.push_back(std::move(kept));
    }
    return out;
  }

  // --- patterns ----------------------------------------------------------------------------
  models::Status prepare_kinds(DesStepResult* out);
  models::Status prepare_collective(CommKind& kind, DesStepResult* out);
  models::Status prepare_pp(CommKind& kind, DesStepResult* out);
  const std::vector<SimFlow>& footprint(CommKind& kind, int stage);
  // A stage-boundary send: NCCL's p2p spreads it over channels_per_nic connections per peer
  // across nodes, each of qps_per_connection queue pairs (each its own ECMP hash), one flow
  // inside a node.
  void pp_flows(int src, int dst, double bytes, int boundary, std::vector<SimFlow>& out) {
    const int gpn = fabric_.graph().gpus_per_node();
    const int k = src / gpn == dst / gpn ? 1 : flows_per_nic(opt_.sim.lowering);
    for (int c = 0; c < k; ++c) {
      FabricRoute r = fabric_.route(src, dst, 0x5eed0000ULL + static_cast<std::uint64_t>(boundary) * 64 + c);
      const double cap = fabric_.window_cap_Bps(r);
      out.push_back({std::move(r.resources), bytes / k, cap});
    }
  }

  // --- graph -------------------------------------------------------------------------------
  int add(int task, TaskInfo info) {
    CS_ASSERT(task == static_cast<int>(info_.size()), "task ids out of step");
    info_.push_back(std::move(info));
    return task;
  }
  void dep(int before, int after) {
    if (before < 0 || after < 0 || before == after) return;
    auto& preds = info_[after].preds;
    if (std::find(preds.begin(), preds.end(), before) != preds.end()) return;
    graph_.depend(before, after);
    preds.push_back(before);
  }
  // A transfer of several kinds' calls at once: calls[i] full-size calls of kinds[i] (a
  // fraction of a call when below 1: a gradient bucket). The kinds (a layer's TP gathers and
  // reduce-scatters) run one after another on the GPU's channels, as the formula adds them: each
  // flow runs no faster than its bytes over the sum of the kinds' pattern times (their link
  // shares alone would let a channel-bound pair overlap).
  int transfer(int stage, const std::vector<std::pair<CommKind*, double>>& calls, TaskInfo info) {
    std::vector<SimFlow> flows;
    double latency = 0, patterns_s = 0;
    for (const auto& [kind, n] : calls) {
      if (n > 0) patterns_s += kind->pattern_s * n;
    }
    for (const auto& [kind, n] : calls) {
      if (n <= 0) continue;
      // A share of one call (a layer group's part of a once-per-step DP collective) pays its
      // share of the call's latency: the analytic model pays it once per call, not per share.
      latency += kind->latency_s * (n < 1 ? n : std::floor(n));
      for (const SimFlow& f : footprint(*kind, stage)) {
        double cap = f.max_rate_Bps;
        if (calls.size() > 1 && patterns_s > 0) {
          const double in_turn = f.bytes * n / patterns_s;
          cap = cap > 0 ? std::min(cap, in_turn) : in_turn;
        }
        flows.push_back({f.route, f.bytes * n, cap});
      }
    }
    info.comm = true;
    info.stage = stage;
    return add(graph_.add_transfer(latency, std::move(flows)), std::move(info));
  }
  int compute(int stage, double seconds, std::string name) {
    TaskInfo info;
    info.name = std::move(name);
    info.category = "compute";
    info.stage = stage;
    info.lane = kLaneCompute;
    return add(graph_.add_compute(stage, seconds), std::move(info));
  }
  // An op on a stage's compute stream: after the previous one.
  void on_stream(int stage, int task) {
    dep(last_stream_[stage], task);
    last_stream_[stage] = task;
    stream_[stage].push_back(task);
  }
  void on_dp_stream(int stage, int task) {
    dep(last_dp_[stage], task);
    last_dp_[stage] = task;
  }

  // Calls of the kinds of one dimension and phase per layer (count / layers).
  std::vector<std::pair<CommKind*, double>> per_layer(ParallelDim dim, CommPhase phase,
                                                      double layers) {
    std::vector<std::pair<CommKind*, double>> out;
    for (auto& k : kinds_) {
      const auto& call = k.timed->call;
      if (call.dim == dim && call.phase == phase) out.push_back({&k, call.count / layers_ * layers});
    }
    return out;
  }
  // Calls of the expert-parallel kinds of one phase per MoE layer, for `moe_layers` of them.
  std::vector<std::pair<CommKind*, double>> per_moe_layer(CommPhase phase, double moe_layers) {
    std::vector<std::pair<CommKind*, double>> out;
    for (auto& k : kinds_) {
      const auto& call = k.timed->call;
      if (call.dim == ParallelDim::kEp && call.phase == phase && moe_ref_ > 0) {
        out.push_back({&k, call.count / moe_ref_ * moe_layers});
      }
    }
    return out;
  }
  CommKind* find_kind(ParallelDim dim, CommPhase phase, CollectiveOp op) {
    for (auto& k : kinds_) {
      const auto& call = k.timed->call;
      if (call.dim == dim && call.phase == phase && call.op == op) return &k;
    }
    return nullptr;
  }
  // Every kind of the dimension, phase and op (a MoE model's dense weights and experts reduce in
  // two groups), each `share` of its calls (a once-a-step reduction's buckets).
  std::vector<std::pair<CommKind*, double>> all_kinds(ParallelDim dim, CommPhase phase,
                                                      CollectiveOp op, double share) {
    std::vector<std::pair<CommKind*, double>> out;
    for (auto& k : kinds_) {
      const auto& call = k.timed->call;
      if (call.dim == dim && call.phase == phase && call.op == op) {
        out.push_back({&k, share * call.count});
      }
    }
    return out;
  }  // `share` of the once-per-step gradient reduction (ZeRO 0 all-reduces, 1 reduce-scatters
  // unless the framework all-reduces: models::zero1_all_reduce).
  std::vector<std::pair<CommKind*, double>> step_grad_reduction(double share) {
    const auto& w = sc_.workload;
    return all_kinds(ParallelDim::kDp, CommPhase::kStep,
                     w.parallelism.zero == 0 || models::zero1_all_reduce(w)
                         ? CollectiveOp::kAllReduce
                         : CollectiveOp::kReduceScatter,
                     share);
  }


  void emit_dp_start_gathers(int stage);
  void emit_op(int stage, const PipelineOp& op, int input, bool last_backward_of_chunk);
  void emit_optimizer(int stage);
  void account(DesStepResult* out, const RunStats& run);

  const models::Scenario& sc_;
  const models::StepParams& params_;
  const StepSimOptions& opt_;
  const models::StepResult& an_;
  Layout lay_;
  FabricModel& fabric_;
  std::vector<SimFlow> background_;
  TaskGraph graph_;
  std::vector<TaskInfo> info_;
  std::vector<CommKind> kinds_;
  std::map<int, std::set<int>> owned_;
  std::vector<int> last_stream_, last_dp_;
  std::vector<std::vector<int>> stream_;
  // Per stage, chunk, layer group: the ZeRO-1/2 parameter gather the first forward waits for.
  std::map<std::tuple<int, int, int>, int> start_gather_;
  std::map<std::tuple<int, int, int, int>, int> fwd_out_, bwd_out_;  // (stage, mb, chunk) PP sends
  std::map<std::pair<int, int>, int> first_forward_;  // (stage, chunk) -> mb
  // (stage, chunk) -> the position in the stage's schedule of the op that completes the chunk's
  // weight gradients: its last backward, or DualPipe's last deferred weight pass.
  std::map<std::pair<int, int>, size_t> last_gradients_op_;
  int first_forward_mb(int stage, int chunk) const {
    auto it = first_forward_.find({stage, chunk});
    return it == first_forward_.end() ? -1 : it->second;
  }
  double layers_ = 1;      // layers the collective list counts per stage (ceil(layers / pp))
  double moe_ref_ = 0;     // MoE layers the list counts the expert all-to-alls for
  int chunks_ = 1;         // virtual stages
  int groups_ = 1;         // layer groups per chunk
  // A gradient bucket's share of the rank's gradients (models::grad_bucket_fraction), and the
  // rounding of the layer groups' shares summed towards it.
  double bucket_share_ = 0;
  static constexpr double kBucketSumSlack = 1e-12;
  // Per stage (the stages differ: embedding, output head, Llama 3's layout): layers per group,
  // a group's compute per pass, its weight GEMMs (what TP overlap hides behind) and its
  // attention (what ring attention hides behind).
  struct GroupCompute {
    double layers = 1;
    double moe_layers = 0;  // of them, mixture-of-experts layers
    double fwd_s = 0, bwd_s = 0;
    double gemm_fwd_s = 0, gemm_bwd_s = 0;
    double att_fwd_s = 0, att_bwd_s = 0;
    models::TpGemms tp_gemms;  // what each TP block's collectives hide behind (tp_comm_overlap)
  };
  std::vector<GroupCompute> group_;
  // DualPipe: the mirrored stage's groups a device runs for direction 1 (model stage
  // pp - 1 - s), empty otherwise.
  std::vector<GroupCompute> mirror_group_;
  const GroupCompute& group_for(int stage, int chunk) const {
    const auto& g = chunk == 1 && !mirror_group_.empty() ? mirror_group_ : group_;
    return g[static_cast<size_t>(stage)];
  }
  // The weight-gradient GEMMs of a group's backward (the analytic model's W).
  static double weight_pass_s(const GroupCompute& g) {
    return models::weight_gradient_s(g.gemm_bwd_s);
  }
  bool dualpipe_ = false;
  size_t pattern_flows_ = 0;
  models::TpCallTimes tp_times_;  // one call of each TP collective (the analytic list's timing)
};

// The representative's flows of one full-size call on this stage.
const std::vector<SimFlow>& StepBuilder::footprint(CommKind& kind, int stage) {
  auto found = kind.footprint.find(stage);
  if (found != kind.footprint.end()) return found->second;
  std::vector<SimFlow>& out = kind.footprint[stage];
  const auto& call = kind.timed->call;
  std::vector<SimFlow> flows;
  if (call.dim == ParallelDim::kPp) {
    // Stage boundary: activations to the next stage, gradients to the previous one (around the
    // ring at the interleaved schedule's chunk boundaries), each in its own link direction.
    const int next = call.phase == CommPhase::kForward ? (stage + 1) % lay_.pp
                                                       : (stage + lay_.pp - 1) % lay_.pp;
    pp_flows(lay_.rep(stage), lay_.rep(next), call.size_bytes, stage, flows);
    out = on_owned(flows, {stage, next});
  } else {
    const int rep_rank = lay_.rank(0, 0, 0, stage);
    auto topo = models::parallel_group_topology(sc_.cluster, call.group_size, call.group_stride);
    CS_ASSERT(topo.ok(), "the analytic model accepted this group");
    const CollectiveShape shape{call.op, kind.timed->estimate.algorithm, kind.timed->estimate.protocol,
                                call.size_bytes,
                                models::alltoall_dispatch(call, *topo)};
    auto lowered = lower_collective(shape, {lay_.group_of(rep_rank, call.group_size, call.group_stride)},
                                    *topo, fabric_,
                                    models::group_collective_params(
                                        params_.collective, sc_.workload.framework, call.dim),
                                    opt_.sim.lowering);
    CS_ASSERT(lowered.ok(), "the pattern of this collective lowered already");
    for (auto& phase : lowered->phases)
      for (auto& f : phase) flows.push_back(std::move(f));
    out = on_owned(flows, {stage});
  }
  // Never faster than the pattern: the flows' bytes over the pattern's simulated time.
  for (SimFlow& f : out) {
    if (kind.pattern_s > 0) {
      const double cap = f.bytes / kind.pattern_s;
      f.max_rate_Bps = f.max_rate_Bps > 0 ? std::min(f.max_rate_Bps, cap) : cap;
    }
  }
  return out;
}

models::Status StepBuilder::prepare_collective(CommKind& kind, DesStepResult* out) {
  const auto& call = kind.timed->call;
  auto topo = models::parallel_group_topology(sc_.cluster, call.group_size, call.group_stride);
  if (!topo) return models::Error{dim_name(call.dim) + " group: " + topo.message()};
  const models::CollectiveRequest request{call.op, call.size_bytes, kind.timed->estimate.algorithm,
                                          kind.timed->estimate.protocol,
                                          models::alltoall_dispatch(call, *topo)};
  // Siblings: every group of this shape on stage 0 runs it at the same time.
  const auto siblings = lay_.stage_groups(0, call.group_size, call.group_stride);
  SimParams group_opt = opt_.sim;  // the group's communicator: its channel cap
  group_opt.collective =
      models::group_collective_params(opt_.sim.collective, sc_.workload.framework, call.dim);
  auto sim = simulate_collective(fabric_, request, siblings, *topo, group_opt, background_);
  if (!sim) return models::Error{dim_name(call.dim) + " " + call.what + ": " + sim.message()};
  kind.pattern_s = sim->bandwidth_s;
  pattern_flows_ += sim->flows;
  PatternReport rep;
  rep.dim = call.dim;
  rep.what = dim_name(call.dim) + " " + std::string(models::to_string(call.op)) + " " +
             models::format_size(call.size_bytes) + " on " + std::to_string(call.group_size) +
             " GPUs (" + std::to_string(siblings.size()) + " groups, " +
             std::string(models::to_string(kind.timed->estimate.algorithm)) + ")";
  rep.uncontended_s = kind.timed->estimate.bandwidth_s;
  rep.simulated_s = sim->bandwidth_s;
  rep.flows = sim->flows;
  rep.wall_s = sim->wall_s;
  rep.loads = sim->loads;
  tell(rep);
  out->patterns.push_back(std::move(rep));
  return models::Status::Ok();
}

models::Status StepBuilder::prepare_pp(CommKind& kind, DesStepResult* out) {
  // Every pipeline's every stage boundary at once (1F1B's steady state).
  const auto& call = kind.timed->call;
  std::vector<std::vector<SimFlow>> phases(1);  // one phase: every send at once
  std::vector<SimFlow>& flows = phases.front();
  for (int p = 0; p + 1 < lay_.pp; ++p)
    for (int d = 0; d < lay_.dp; ++d)
      for (int c = 0; c < lay_.cp; ++c)
        for (int t = 0; t < lay_.tp; ++t) {
          pp_flows(lay_.gpu(lay_.rank(t, c, d, p)), lay_.gpu(lay_.rank(t, c, d, p + 1)),
                   call.size_bytes, p, flows);
        }
  auto run = run_phases(phases, background_, fabric_.table(), opt_.sim.engine);
  if (!run) return models::Error{"pp pattern: " + run.message()};
  // As for collectives: a congested boundary stays busy through the send's latency.
  kind.pattern_s = contended_bandwidth_s(run->makespan_s, kind.latency_s,
                                         kind.timed->estimate.bandwidth_s);
  pattern_flows_ += flows.size();
  std::vector<const SimFlow*> ptrs;
  for (const SimFlow& f : flows) ptrs.push_back(&f);
  PatternReport rep;
  rep.dim = ParallelDim::kPp;
  rep.what = "pp sends " + models::format_size(call.size_bytes) + " at every stage boundary (" +
             std::to_string(flows.size()) + " flows)";
  rep.uncontended_s = kind.timed->estimate.bandwidth_s;
  rep.simulated_s = kind.pattern_s;
  rep.flows = flows.size();
  rep.wall_s = run->wall_s;
  rep.loads = tier_loads(fabric_.table(), ptrs, kind.pattern_s);
  tell(rep);
  out->patterns.push_back(std::move(rep));
  return models::Status::Ok();
}

models::Status StepBuilder::prepare_kinds(DesStepResult* out) {
  for (const TimedComm& c : an_.comms) {
    CommKind k;
    k.timed = &c;
    k.latency_s = c.estimate.latency_s;
    kinds_.push_back(std::move(k));
  }
  // One pattern per distinct (dimension, op, size, group); repeats reuse it.
  std::map<std::tuple<int, int, double, int, int>, CommKind*> seen;
  for (CommKind& k : kinds_) {
    const auto& call = k.timed->call;
    const auto key = std::make_tuple(static_cast<int>(call.dim), static_cast<int>(call.op),
                                     call.size_bytes, call.group_size, call.group_stride);
    if (auto it = seen.find(key); it != seen.end()) {
      k.pattern_s = it->second->pattern_s;
      continue;
    }
    seen[key] = &k;
    models::Status s = call.dim == ParallelDim::kPp ? prepare_pp(k, out) : prepare_collective(k, out);
    if (!s) return s;
  }
  return models::Status::Ok();
}

// ZeRO-1/2: the parameter all-gather after the optimizer, modelled at the start of the step it
// feeds (steady state), chunk by chunk and layer group by layer group on the DP stream.
void StepBuilder::emit_dp_start_gathers(int stage) {
  const double group_share = 1.0 / (chunks_ * groups_);
  if (!find_kind(ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kAllGather)) return;
  // A bucket at a time, in the forward's order: the first (the embedding's, models::
  // grad_bucket_fraction) gathered whole before the first forward starts; the layer groups it
  // spans wait for it.
  double gathered = 0;
  std::vector<std::pair<int, int>> waiting;
  for (int c = 0; c < chunks_; ++c)
    for (int g = 0; g < groups_; ++g) {
      gathered += group_share;
      waiting.push_back({c, g});
      const bool last = c + 1 == chunks_ && g + 1 == groups_;
      if (gathered < bucket_share_ - kBucketSumSlack && !last) continue;
      const int t = transfer(
          stage, all_kinds(ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kAllGather, gathered),
          comm_info("DP all_gather params c" + std::to_string(c) + " g" + std::to_string(g), "dp",
                    kLaneDp, ParallelDim::kDp));
      on_dp_stream(stage, t);
      for (const auto& [wc, wg] : waiting) start_gather_[{stage, wc, wg}] = t;
      waiting.clear();
      gathered = 0;
    }
  // Not overlapped (param_gather_overlap false): every first forward waits for the whole gather,
  // whose parts end in order on the DP stream.
  if (!sc_.workload.framework.param_gather_overlap) {
    const int last = start_gather_[{stage, chunks_ - 1, groups_ - 1}];
    for (int c = 0; c < chunks_; ++c)
      for (int g = 0; g < groups_; ++g) start_gather_[{stage, c, g}] = last;
  }
}

void StepBuilder::emit_op(int stage, const PipelineOp& op, int input, bool last_backward_of_chunk) {
  const bool fwd = op.forward;
  const CommPhase phase = fwd ? CommPhase::kForward : CommPhase::kBackward;
  const std::string tag = std::string(fwd ? "F" : "B") + " mb" + std::to_string(op.micro_batch) +
                          " c" + std::to_string(op.chunk);
  const GroupCompute& gc = group_for(stage, op.chunk);
  if (op.weights) {
    // DualPipe's deferred weight pass: the weight-gradient GEMMs of every group, on the stream;
    // after the chunk's last, its share of the once-per-step gradient reduction.
    const int w = compute(stage, groups_ * weight_pass_s(gc),
                          "W mb" + std::to_string(op.micro_batch) + " c" + std::to_string(op.chunk));
    on_stream(stage, w);
    if (last_backward_of_chunk && sc_.workload.parallelism.zero <= 1) {
      const auto rs = step_grad_reduction(1.0 / chunks_);
      if (!rs.empty()) {
        const int t = transfer(stage, rs,
                               comm_info("DP grads c" + std::to_string(op.chunk), "dp", kLaneDp,
                                         ParallelDim::kDp));
        dep(w, t);
        on_dp_stream(stage, t);
      }
    }
    return;
  }
  // framework.tp_wgrad_overlap: the backward's input-gradient reductions run beside the
  // column-parallel linears' weight-gradient GEMMs (models::tp_wgrad_overlapped_share).
  // framework.tp_comm_overlap without tp_overlap_input_gradients: those reductions run on the
  // stream after the GEMMs (models::tp_overlap_exposed_share).
  std::vector<std::pair<CommKind*, double>> tp_calls, tp_wgrad_calls, tp_unfused_calls;
  for (const auto& [kind, n] : per_layer(ParallelDim::kTp, phase, gc.layers)) {
    const double share = models::tp_wgrad_overlapped_share(sc_.workload, kind->timed->call);
    const double unfused = models::tp_overlap_exposed_share(sc_.workload, kind->timed->call);
    if (share + unfused < 1) tp_calls.push_back({kind, n * (1 - share - unfused)});
    if (share > 0) tp_wgrad_calls.push_back({kind, n * share});
    if (unfused > 0) tp_unfused_calls.push_back({kind, n * unfused});
  }
  const auto cp_calls = per_layer(ParallelDim::kCp, phase, gc.layers);
  const bool tp_overlap = sc_.workload.framework.tp_comm_overlap && !tp_calls.empty();
  const int zero = sc_.workload.parallelism.zero;
  CommKind* z3_gather = zero == 3 ? find_kind(ParallelDim::kDp, phase, CollectiveOp::kAllGather) : nullptr;
  const double group_share = 1.0 / (chunks_ * groups_);
  std::vector<std::pair<CommKind*, double>> grad_rs;
  if (!fwd) {
    if (zero >= 2) {
      grad_rs = all_kinds(ParallelDim::kDp, CommPhase::kBackward, CollectiveOp::kReduceScatter,
                          group_share);
    }
    if (zero <= 1 && last_backward_of_chunk) grad_rs = step_grad_reduction(group_share);
  }
  const auto ep_calls = per_moe_layer(phase, gc.moe_layers);
  const bool ep_overlap = sc_.workload.framework.ep_comm_overlap;
  auto dp_info = [&](const std::string& what) {
    return comm_info("DP " + what + " " + tag, "dp", kLaneDp, ParallelDim::kDp);
  };
  // ZeRO-3: gather group i's parameters while group i-1 computes (one group ahead).
  std::vector<int> gathers(static_cast<size_t>(groups_), -1);
  auto gather = [&](int i) {
    const int t = transfer(stage, all_kinds(ParallelDim::kDp, phase, CollectiveOp::kAllGather,
                                            group_share),
                           dp_info("all_gather params"));
    dep(last_stream_[stage], t);
    on_dp_stream(stage, t);
    gathers[static_cast<size_t>(i)] = t;
  };
  if (z3_gather) gather(0);
  double bucketed = 0;  // the gradient share of the groups not yet sent
  for (int i = 0; i < groups_; ++i) {
    const int g = fwd ? i : groups_ - 1 - i;
    const std::string layer_tag = tag + " g" + std::to_string(g);
    if (z3_gather && i + 1 < groups_) gather(i + 1);
    // A backward that defers its weight pass (DualPipe's zero bubble) computes the rest.
    const double deferred = op.defers_weights ? weight_pass_s(gc) : 0;
    const double total = fwd ? gc.fwd_s : gc.bwd_s - deferred;
    const double att = fwd ? gc.att_fwd_s : gc.att_bwd_s;
    // With TP overlap the group's weight GEMMs run last, their collectives beside them.
    // What TP collectives can hide beside: the group's compute but the ring-attention part.
    const double beside_att = total - (cp_calls.empty() ? 0 : att);
    // What the group's own GEMMs can hide of its TP collectives (each behind the GEMMs it feeds
    // or drains), under tp_comm_overlap or tp_wgrad_overlap alike.
    const double gemm_cover =
        tp_overlap || !tp_wgrad_calls.empty()
            ? models::tp_overlap_cover_s(sc_.workload, gc.tp_gemms, tp_times_, fwd)
            : 0;
    const double overlapped =
        tp_overlap ? std::min({beside_att, fwd ? gc.gemm_fwd_s : gc.gemm_bwd_s - deferred,
                               gemm_cover})
                   : 0;
    const double wgrad_cover =
        tp_wgrad_calls.empty() ? 0
                               : std::min({beside_att, gc.gemm_bwd_s - deferred, gemm_cover});
    const int stream_before = last_stream_[stage];
    int first = -1, last = -1;
    if (!cp_calls.empty() && att > 0) {
      // Ring attention: the K/V exchange runs beside the attention kernels of the group.
      first = compute(stage, att, layer_tag + " attention");
      const int cp = transfer(stage, cp_calls,
                              comm_info("CP K/V ring " + layer_tag, "cp", kLaneCp, ParallelDim::kCp));
      dep(last_stream_[stage], cp);
      dep(input, cp);
      if (gathers[static_cast<size_t>(i)] >= 0) dep(gathers[static_cast<size_t>(i)], cp);
      last = compute(stage, total - att - overlapped - wgrad_cover, layer_tag);
      dep(first, last);
      dep(cp, last);
    } else {
      first = last = compute(stage, total - overlapped - wgrad_cover, layer_tag);
    }
    dep(input, first);
    if (gathers[static_cast<size_t>(i)] >= 0) dep(gathers[static_cast<size_t>(i)], first);
    if (fwd && op.micro_batch == first_forward_mb(stage, op.chunk)) {
      auto it = start_gather_.find({stage, op.chunk, g});
      if (it != start_gather_.end()) dep(it->second, first);
    }
    dep(last_stream_[stage], first);
    if (first != last) {
      stream_[stage].push_back(first);
      last_stream_[stage] = first;
    }
    on_stream(stage, last);
    // A transfer beside a GEMM task on the stream; a zero-length join waits for both (a late
    // collective is exposed).
    auto beside_gemms = [&](int transfer_task, double gemm_s, const std::string& what) {
      const int gemm = compute(stage, gemm_s, layer_tag + " " + what);
      dep(last_stream_[stage], transfer_task);
      on_stream(stage, gemm);
      const int join = compute(stage, 0, layer_tag + " join");
      dep(transfer_task, join);
      on_stream(stage, join);
    };
    if (!tp_calls.empty()) {
      const int tp = transfer(stage, tp_calls,
                              comm_info("TP " + layer_tag, "tp", kLaneTp, ParallelDim::kTp));
      if (tp_overlap) {
        beside_gemms(tp, overlapped, "GEMMs");
      } else {
        on_stream(stage, tp);
      }
    }
    if (!tp_unfused_calls.empty()) {
      on_stream(stage, transfer(stage, tp_unfused_calls,
                                comm_info("TP input gradients " + layer_tag, "tp", kLaneTp,
                                          ParallelDim::kTp)));
    }
    if (!tp_wgrad_calls.empty()) {  // beside the column-parallel linears' weight gradients
      beside_gemms(transfer(stage, tp_wgrad_calls,
                            comm_info("TP input gradients " + layer_tag, "tp", kLaneTp,
                                      ParallelDim::kTp)),
                   wgrad_cover, "weight-gradient GEMMs");
    }
    if (!ep_calls.empty() && gc.moe_layers > 0) {
      // The MoE dispatch and combine of the group's MoE layers: between its router and experts
      // and after them (on the stream), or beside its compute (ep_comm_overlap: DualPipe-like),
      // a zero-length join waiting for both. Expert TP's gathers and reduce-scatters follow the
      // all-to-all they feed or drain, one after the other.
      std::vector<std::pair<CommKind*, double>> a2a, etp;
      for (const auto& c : ep_calls) {
        (c.first->timed->call.op == CollectiveOp::kAllToAll ? a2a : etp).push_back(c);
      }
      std::vector<int> chain;
      if (!a2a.empty()) {
        chain.push_back(transfer(stage, a2a, comm_info("EP all-to-all " + layer_tag, "ep",
                                                       kLaneEp, ParallelDim::kEp)));
      }
      if (!etp.empty()) {
        chain.push_back(transfer(stage, etp, comm_info("expert-TP gather/scatter " + layer_tag,
                                                       "ep", kLaneEp, ParallelDim::kEp)));
      }
      if (ep_overlap && op.paired) {
        // Beside the group's compute from its start: it stands for the other micro-batch's
        // compute that DualPipe and Megatron-Core's EP overlap pair it with. A pass that runs
        // alone (warm-up, cool-down, DualPipe's ramps) has nothing to hide them behind.
        dep(stream_before, chain.front());
        dep(input, chain.front());
        for (size_t c = 1; c < chain.size(); ++c) dep(chain[c - 1], chain[c]);
        const int join = compute(stage, 0, layer_tag + " EP join");
        dep(chain.back(), join);
        on_stream(stage, join);
      } else {
        for (int t : chain) on_stream(stage, t);
      }
    }
    if (!grad_rs.empty()) {
      // Once a step (ZeRO 0/1): the groups' gradients go out a bucket at a time
      // (models::grad_bucket_params), the first layers' remainder after the last group.
      if (zero <= 1) {
        bucketed += group_share;
        if (bucketed < bucket_share_ - kBucketSumSlack && i + 1 < groups_) continue;
      }
      const auto rs = zero <= 1 ? step_grad_reduction(bucketed) : grad_rs;
      bucketed = 0;
      const std::string what =
          std::string(models::to_string(grad_rs.front().first->timed->call.op)) + " grads";
      const int t = transfer(stage, rs, dp_info(what));
      dep(last_stream_[stage], t);
      on_dp_stream(stage, t);
    }
  }
}

void StepBuilder::emit_optimizer(int stage) {
  const int t = compute(stage, an_.breakdown.optimizer_s, "optimizer");
  info_[static_cast<size_t>(t)].category = "optimizer";
  dep(last_dp_[stage], t);
  on_stream(stage, t);
}

models::Status StepBuilder::build(DesStepResult* out) {
  const auto& par = sc_.workload.parallelism;
  const int m = an_.micro_batches;
  dualpipe_ = par.pp_schedule == models::PipelineSchedule::kDualPipe;
  // DualPipe's two directions are its two "chunks", each a whole stage.
  chunks_ = dualpipe_ ? 2 : models::chunks_per_stage(sc_.workload);
  const int compute_chunks = dualpipe_ ? 1 : chunks_;
  layers_ = models::layers_per_stage(sc_.workload);
  moe_ref_ = models::moe_layers_per_stage(sc_.workload);
  tp_times_ = models::tp_call_times(an_.comms);
  const std::vector<int> stage_moe = models::moe_layers_of_stages(sc_.workload);
  bucket_share_ = models::grad_bucket_fraction(sc_.workload, params_);
  // 1. Layer groups: at most max_tasks ops (about 2 per layer group and pass, plus PP and DP).
  const double per_stage_units = 2.0 * m * compute_chunks;
  const double layers_per_chunk = layers_ / compute_chunks;
  const double budget = std::max(1.0, opt_.max_tasks / (4.0 * lay_.pp * per_stage_units));
  groups_ = std::max(1, static_cast<int>(std::min(std::ceil(layers_per_chunk), std::floor(budget))));
  out->layers_per_task = static_cast<int>(std::ceil(layers_per_chunk / groups_));
  group_.assign(static_cast<size_t>(lay_.pp), {});
  for (const models::StageCompute& st : an_.stages) {
    GroupCompute& g = group_[static_cast<size_t>(st.stage)];
    const double parts = double(compute_chunks) * groups_;
    g.layers = st.layers / parts;
    g.moe_layers = stage_moe[static_cast<size_t>(st.stage)] / parts;
    g.fwd_s = st.forward_s / parts;
    g.bwd_s = st.backward_s / parts;
    g.gemm_fwd_s = st.gemm_forward_s / parts;
    g.gemm_bwd_s = st.gemm_backward_s / parts;
    g.tp_gemms = st.tp_gemms.scaled(1 / parts);
    // Ring attention's exchange hides behind the attention kernels of the group.
    if (par.cp > 1) {
      g.att_fwd_s = std::min(g.fwd_s, st.attention_forward_s / parts);
      g.att_bwd_s = std::min(g.bwd_s, st.attention_backward_s / parts);
    }
  }
  mirror_group_.clear();
  if (dualpipe_) {
    for (int s = 0; s < lay_.pp; ++s) mirror_group_.push_back(group_[static_cast<size_t>(lay_.pp - 1 - s)]);
  }

  // 2. Patterns.
  if (auto s = prepare_kinds(out); !s) return s;

  // 3. The op graph, built in an order that respects every dependency: each stage advances
  // through its schedule as far as the pipeline sends it needs already exist.
  last_stream_.assign(static_cast<size_t>(lay_.pp), -1);
  last_dp_.assign(static_cast<size_t>(lay_.pp), -1);
  stream_.assign(static_cast<size_t>(lay_.pp), {});
  if (!background_.empty()) {
    std::vector<SimFlow> local;
    for (int s = 0; s < lay_.pp; ++s) {
      for (SimFlow& f : on_owned(background_, {s})) local.push_back(std::move(f));
    }
    if (!local.empty()) {
      TaskInfo info;
      info.name = "interference";
      info.category = "background";
      info.comm = true;
      add(graph_.add_background(std::move(local)), std::move(info));
    }
  }
  std::vector<std::vector<PipelineOp>> ops(static_cast<size_t>(lay_.pp));
  std::vector<size_t> pos(static_cast<size_t>(lay_.pp), 0);
  for (int s = 0; s < lay_.pp; ++s) {
    ops[s] = stage_schedule(par.pp_schedule, lay_.pp, s, m, chunks_);
    for (size_t i = 0; i < ops[s].size(); ++i) {
      const PipelineOp& op = ops[s][i];
      if (op.forward) {
        auto key = std::make_pair(s, op.chunk);
        if (!first_forward_.count(key)) first_forward_[key] = op.micro_batch;
      } else if (!op.defers_weights) {
        last_gradients_op_[{s, op.chunk}] = i;
      }
    }
    emit_dp_start_gathers(s);
  }
  CommKind* pp_fwd = find_kind(ParallelDim::kPp, CommPhase::kForward, CollectiveOp::kSendRecv);
  CommKind* pp_bwd = find_kind(ParallelDim::kPp, CommPhase::kBackward, CollectiveOp::kSendRecv);
  const int P = lay_.pp, V = chunks_;
  size_t left = 0;
  for (const auto& o : ops) left += o.size();
  while (left > 0) {
    bool progress = false;
    for (int s = 0; s < P; ++s) {
      while (pos[s] < ops[s].size()) {
        const PipelineOp& op = ops[s][pos[s]];
        // The send this op consumes: from the previous stage (or chunk) forward, from the next
        // one backward.
        int input = -1;
        bool needs = false;
        std::tuple<int, int, int, int> key;
        // DualPipe: direction 0 flows from device 0 to the last, direction 1 back; a weight
        // pass needs nothing but its backward, earlier on the same stream.
        const bool down = op.chunk == 0;  // DualPipe's direction 0
        if (dualpipe_) {
          const int from = op.forward == down ? s - 1 : s + 1;
          if (!op.weights && from >= 0 && from < P) {
            needs = true;
            key = std::make_tuple(from, op.micro_batch, op.chunk, op.forward ? 0 : 1);
            const auto& sent = op.forward ? fwd_out_ : bwd_out_;
            auto it = sent.find(key);
            if (it != sent.end()) input = it->second;
          }
        } else if (op.forward && (s > 0 || op.chunk > 0)) {
          needs = true;
          key = s > 0 ? std::make_tuple(s - 1, op.micro_batch, op.chunk, 0)
                      : std::make_tuple(P - 1, op.micro_batch, op.chunk - 1, 0);
          auto it = fwd_out_.find(key);
          if (it != fwd_out_.end()) input = it->second;
        } else if (!op.forward && (s < P - 1 || op.chunk < V - 1)) {
          needs = true;
          key = s < P - 1 ? std::make_tuple(s + 1, op.micro_batch, op.chunk, 1)
                          : std::make_tuple(0, op.micro_batch, op.chunk + 1, 1);
          auto it = bwd_out_.find(key);
          if (it != bwd_out_.end()) input = it->second;
        }
        if (needs && input < 0) break;
        const bool last_b = !op.forward && last_gradients_op_[{s, op.chunk}] == pos[s];
        emit_op(s, op, input, last_b);
        // The send this op produces (blocking, as Megatron's batched send/recv pairs are); a
        // weight pass sends nothing.
        const int to = op.forward == down ? s + 1 : s - 1;
        const bool has_consumer =
            op.weights ? false
            : dualpipe_ ? to >= 0 && to < P
                        : op.forward ? (s < P - 1 || op.chunk < V - 1) : (s > 0 || op.chunk > 0);
        CommKind* kind = op.forward ? pp_fwd : pp_bwd;
        if (has_consumer && kind != nullptr) {
          const int t = transfer(
              s, {{kind, 1.0}},
              comm_info(std::string("PP send ") + (op.forward ? "act" : "grad") + " mb" +
                            std::to_string(op.micro_batch) + " c" + std::to_string(op.chunk),
                        "pp", kLanePp, ParallelDim::kPp));
          if (dualpipe_ || sc_.workload.framework.pp_comm_overlap) {
            // DualPipe sends asynchronously (its F&B pairs hide them), and so does Megatron-Core
            // with overlap_p2p_comm: off the stream, the receiver waiting for the data.
            dep(last_stream_[s], t);
          } else {
            on_stream(s, t);
          }
          (op.forward ? fwd_out_ : bwd_out_)[{s, op.micro_batch, op.chunk, op.forward ? 0 : 1}] = t;
        } else if (has_consumer) {
          (op.forward ? fwd_out_ : bwd_out_)[{s, op.micro_batch, op.chunk, op.forward ? 0 : 1}] =
              last_stream_[s];
        }
        ++pos[s];
        --left;
        progress = true;
      }
    }
    if (!progress) return models::Error{"pipeline schedule deadlocks (a bug in the schedule)"};
  }
  for (int s = 0; s < P; ++s) emit_optimizer(s);
  out->tasks = static_cast<size_t>(graph_.size());
  return models::Status::Ok();
}

models::Status StepBuilder::run(DesStepResult* out) {
  auto run = run_task_graph(graph_, fabric_.table(), opt_.sim.engine);
  if (!run) return models::Error{run.message()};
  if (opt_.progress) {
    opt_.progress("step graph: " + std::to_string(graph_.size()) + " tasks, " +
                      std::to_string(run->flows) + " flows, simulated in " +
                      models::format_time(run->wall_s),
                  elapsed_s());
  }
  out->flows = run->flows + pattern_flows_;
  account(out, *run);
  return models::Status::Ok();
}

// Where the critical stage's compute stream spends the step: busy on its own ops (compute, TP,
// blocking PP sends, the optimizer) or waiting. A wait is charged to the transfer it waits for
// while that transfer runs, and to whatever held that transfer back before it started (another
// stage's compute: the pipeline bubble).
void StepBuilder::account(DesStepResult* out, const RunStats& run) {
  const auto& spans = run.spans;
  auto latest_pred = [&](int task, int exclude) {
    int best = -1;
    for (int p : info_[task].preds) {
      if (p == exclude) continue;
      if (best < 0 || spans[p].end_s > spans[best].end_s) best = p;
    }
    return best;
  };
  // One stage's stream from the step's start: busy (compute, exposed collectives, the
  // optimizer) or waiting, each wait charged to the transfer it waits for while that runs and
  // to whatever held that transfer back (another stage's compute: the bubble); then the compute
  // its hidden collectives slowed (SMs, HBM, power), added after the schedule as the analytic
  // model adds it. The critical stage is the one that ends last with it.
  struct StageAccount {
    models::StepBreakdown breakdown;
    double end_s = 0;
  };
  // Every stage's collectives, hidden or not, in one pass (overlapped ones can end later than
  // the stream's chain).
  std::vector<std::map<ParallelDim, double>> comm_total(static_cast<size_t>(lay_.pp));
  // Each stage's collectives off its stream (those that can hide behind its kernels).
  std::vector<char> on_stream(static_cast<size_t>(graph_.size()), 0);
  for (const auto& tasks : stream_) {
    for (int task : tasks) on_stream[static_cast<size_t>(task)] = 1;
  }
  std::vector<std::vector<int>> off_stream(static_cast<size_t>(lay_.pp));
  for (int task = 0; task < graph_.size(); ++task) {
    const TaskInfo& in = info_[task];
    if (in.comm && in.stage >= 0 && in.stage < lay_.pp && in.category != "background") {
      comm_total[static_cast<size_t>(in.stage)][in.dim] += spans[task].end_s - spans[task].start_s;
      if (!on_stream[static_cast<size_t>(task)]) {
        off_stream[static_cast<size_t>(in.stage)].push_back(task);
      }
    }
  }
  auto walk = [&](int stage) {
    StageAccount a;
    models::StepBreakdown& b = a.breakdown;
    b = an_.breakdown;
    b.compute_s = b.optimizer_s = b.bubble_s = 0;
    std::map<ParallelDim, double> exposed;
    auto attribute = [&](double t0, double t1, int x) {
      while (t1 > t0) {
        if (x < 0 || !info_[x].comm) {
          b.bubble_s += t1 - t0;
          return;
        }
        const double start = std::max(t0, spans[x].start_s);
        exposed[info_[x].dim] += t1 - start;
        if (spans[x].start_s <= t0) return;
        t1 = spans[x].start_s;
        x = latest_pred(x, -1);
      }
    };
    double t = 0;
    int previous = -1;
    for (int task : stream_[stage]) {
      const TaskSpan& sp = spans[task];
      if (sp.start_s > t) attribute(t, sp.start_s, latest_pred(task, previous));
      const double d = sp.end_s - sp.start_s;
      const TaskInfo& in = info_[task];
      if (in.category == "optimizer") {
        b.optimizer_s += d;
      } else if (in.comm) {
        exposed[in.dim] += d;
      } else {
        b.compute_s += d;
      }
      t = std::max(t, sp.end_s);
      previous = task;
    }
    // What of the stage's collectives off its stream ran beside the stream's kernels: one
    // beside an idle stream (a later stage's parameter gather during the pipeline's fill) slows
    // nothing, as one beside the host's launch wait does not (models::overlap_interference_s).
    double beside = 0;
    {
      // The stream's kernels, each after the one before it (on_stream chains them): in order.
      std::vector<std::pair<double, double>> busy;
      for (int task : stream_[stage]) busy.emplace_back(spans[task].start_s, spans[task].end_s);
      CS_ASSERT(std::is_sorted(busy.begin(), busy.end()), "a stream's kernels run in order");
      for (int task : off_stream[static_cast<size_t>(stage)]) {
        const double t0 = spans[task].start_s, t1 = spans[task].end_s;
        auto it = std::upper_bound(busy.begin(), busy.end(), std::make_pair(t0, t0));
        if (it != busy.begin()) --it;
        for (; it != busy.end() && it->first < t1; ++it) {
          beside += std::max(0.0, std::min(t1, it->second) - std::max(t0, it->first));
        }
      }
    }
    auto& total = comm_total[static_cast<size_t>(stage)];
    for (ParallelDim dim : models::kParallelDims) {
      models::DimComm& slot = b.of(dim);
      slot.total_s = std::max(total[dim], exposed[dim]);
      slot.exposed_s = exposed[dim];
      // The rate of a cut channel set against a full one, as the formula has it.
      const models::DimComm& analytic = an_.breakdown.of(dim);
      if (analytic.full_channels_s > 0) {
        slot.full_channels_s = slot.total_s * analytic.traffic_share();
      }
    }
    // The GPU's wait for the host, as the device runs its stages (DualPipe: two of them).
    b.host_wait_s = static_cast<size_t>(stage) < an_.stages.size()
                        ? an_.micro_batches *
                              models::device_compute(an_.stages, sc_.workload, stage).host_wait_s
                        : 0;
    // The hidden time beside compute, weighted as the step's hidden traffic is (copy engines
    // cost less than SM kernels).
    const double hidden = b.hidden_comm_s();
    const double weight =
        hidden > 0 ? models::sm_equivalent_hidden_s(b, sc_.workload.framework, params_) / hidden
                   : 1;
    b.overlap_interference_s = models::overlap_interference_s(
        std::min(hidden, beside) * weight, params_, b.host_wait_s);
    b.compute_s += b.overlap_interference_s;
    a.end_s = t + b.overlap_interference_s;
    return a;
  };
  int crit = 0;
  StageAccount best = walk(0);
  for (int s = 1; s < lay_.pp; ++s) {
    StageAccount a = walk(s);
    if (a.end_s > best.end_s) {
      best = std::move(a);
      crit = s;
    }
  }
  out->critical_stage = crit;
  models::StepResult& r = out->step;
  r = an_;
  r.breakdown = best.breakdown;
  const double t = best.end_s;
  r.step_time_s = t;
  if (t > 0) {
    r.tokens_per_s = r.tokens_per_step / t;
    r.model_tflops_per_gpu = r.model_flops_per_step / r.gpus / t / 1e12;
    r.hardware_tflops_per_gpu = r.hardware_flops_per_step / r.gpus / t / 1e12;
    r.set_mfu(sc_.cluster.node.gpu);
  }
  if (opt_.trace) {
    out->trace.reserve(info_.size());
    for (int task = 0; task < graph_.size(); ++task) {
      const TaskInfo& in = info_[task];
      if (in.category == "background") continue;
      out->trace.push_back({in.name, in.category, in.stage, in.lane, spans[task].start_s,
                            spans[task].end_s - spans[task].start_s});
    }
  }
}

// Traffic of the neighbour job and background traffic, as endless flows at their offered rate.
std::vector<SimFlow> interference_flows(FabricModel& fabric, const NodePlacement& placement,
                                        const Interference& in, int gpn) {
  std::vector<SimFlow> out;
  const models::NodeConfig& node = fabric.graph().cluster().node;
  const double nic_Bps = node.links_per_nic * node.nic.line_rate_Bps * node.nic.protocol_efficiency;
  constexpr double kEndless = 1e18;  // bytes: outlasts any step
  std::uint64_t id = 0x1f2e3d4c;
  auto stream = [&](int src, int dst, double rate) {
    if (src == dst || rate <= 0) return;
    FabricRoute r = fabric.route(src, dst, ++id);
    const double window = fabric.window_cap_Bps(r);
    out.push_back({std::move(r.resources), kEndless, window > 0 ? std::min(rate, window) : rate});
  };
  const auto& theirs = placement.neighbour;
  const int K = static_cast<int>(theirs.size());
  if (K > 1) {
    const int shifts = in.pattern == NeighbourPattern::kRing ? 1 : std::min(K - 1, 8);
    for (int k = 0; k < K; ++k)
      for (int d = 1; d <= shifts; ++d)
        for (int i = 0; i < gpn; ++i) {
          const int dst = in.pattern == NeighbourPattern::kRing ? (k + 1) % K : (k + d) % K;
          stream(theirs[k] * gpn + i, theirs[dst] * gpn + i, in.neighbour_load * nic_Bps / shifts);
        }
  }
  if (in.background_per_node_Bps > 0 && placement.total_nodes > 1) {
    std::mt19937_64 rng(in.seed);
    std::uniform_int_distribution<int> pick(0, placement.total_nodes - 2);
    for (int n : placement.ours)
      for (int i = 0; i < gpn; ++i) {
        int other = pick(rng);
        if (other >= n) ++other;
        stream(n * gpn + i, other * gpn + i, in.background_per_node_Bps / gpn);
      }
  }
  return out;
}

}  // namespace

models::Result<DesStepResult> simulate_step(const models::Scenario& scenario,
                                            const models::StepParams& params,
                                            const StepSimOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  // 1. The analytic model: compute per micro-batch, the collectives, NCCL's choices.
  auto analytic = models::predict_step(scenario, params);
  if (!analytic) return models::Error{analytic.message()};
  // 2. The fabric (with the neighbour's nodes, if any).
  const Interference& interference =
      options.interference.any() ? options.interference : scenario.interference;
  auto placement = place_nodes(scenario.cluster.nodes, interference);
  if (!placement) return models::Error{placement.message()};
  models::ClusterConfig cluster = scenario.cluster;
  cluster.nodes = placement->total_nodes;
  auto graph = topology::ClusterGraph::build(cluster, &scenario, options.graph);
  if (!graph) return models::Error{graph.message()};
  StepSimOptions opt = options;
  opt.sim.collective = params.collective;  // one set of constants for both engines
  opt.sim.lowering.qps_per_connection = scenario.cluster.fabric.qps_per_connection;
  FabricModel fabric(*graph, opt.sim.transport, scale_up_efficiency(scenario.cluster, params.collective),
                     flows_per_nic(opt.sim.lowering));
  const auto& par = scenario.workload.parallelism;
  Layout layout;
  layout.tp = par.tp;
  layout.cp = par.cp;
  layout.dp = par.dp;
  layout.pp = par.pp;
  layout.gpn = scenario.cluster.node.gpus_per_node;
  layout.placement = *placement;
  std::vector<SimFlow> background;
  if (options.interference_traffic) {
    background = interference_flows(fabric, *placement, interference, layout.gpn);
  }
  // 3. Patterns, the op graph, the run.
  DesStepResult out;
  out.analytic = *analytic;
  StepBuilder builder(scenario, params, opt, *analytic, layout, fabric, std::move(background));
  if (auto s = builder.build(&out); !s) return models::Error{s.message()};
  if (auto s = builder.run(&out); !s) return models::Error{s.message()};
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

std::vector<double> other_hash_draw_steps_s(const models::Scenario& scenario,
                                            const models::StepParams& params, int draws,
                                            StepSimOptions options) {
  std::vector<double> out;
  if (!topology::hashes_flows(scenario.cluster)) return out;
  options.trace = false;
  const std::uint64_t seed = options.graph.ecmp_seed;
  for (int k = 1; k <= draws; ++k) {
    options.graph.ecmp_seed = seed + static_cast<std::uint64_t>(k);
    auto r = simulate_step(scenario, params, options);
    if (r) out.push_back(r->step.step_time_s);
  }
  return out;
}

}  // namespace clustersim::sim
