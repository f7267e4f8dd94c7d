// `clustersim collective`: one collective over a size sweep, printed with nccl-tests' own columns
// (size, count, type, redop, root, time, algbw, busbw) plus the algorithm, protocol and
// bottleneck chosen, so that a real nccl-tests log diffs line by line. N GPUs fill the scenario's
// nodes in order, as `mpirun -np N` over whole nodes does. --engine analytic (the default) is the
// formula; --engine des simulates the collective's flows on the scenario's fabric (its routing:
// ECMP collisions, queue pairs, oversubscription), NCCL's choice and latency term as the formula
// makes them, and names the busiest link.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "models/collective_model.h"
#include "models/units.h"
#include "sim/collective_sim.h"
#include "topology/cluster_graph.h"
#include "tools/calibration_option.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/scenario_input.h"
#include "validate/collective_math.h"

namespace clustersim::tools {
namespace {

using models::CollectiveAlgorithm;
using models::CollectiveOp;
using models::CollectiveProtocol;

constexpr std::size_t kFloatBytes = 4;  // nccl-tests' default type, float

struct CollectiveArgs {
  std::string scenario;
  std::string op = "all_reduce";
  int gpus = 0;  // 0: every GPU of the cluster
  std::string min_size = "8";
  std::string max_size = "128M";
  std::size_t step_factor = 2;
  std::string algo = "auto";
  std::string proto = "auto";
  std::string calibration;  // overlay file; "" = the scenario's calibration: key, if any
  std::string engine = "analytic";  // analytic | des
  int hash_draws = 1;  // des on ECMP: draws of the hash (the default seed and the next ones)
  bool json = false;
};

// nccl-tests' count column: elements per rank for all_gather/reduce_scatter/alltoall, of the
// buffer otherwise (validate's nccl-tests arithmetic; reduce counts as broadcast does).
validate::CollectiveShape nccl_tests_shape(CollectiveOp op, std::size_t size_bytes, int ranks) {
  validate::CollectiveOp v = validate::CollectiveOp::kBroadcast;
  validate::parse_collective_op(models::to_string(op), &v);
  return validate::collective_shape(v, size_bytes, kFloatBytes, ranks);
}

bool reduces(CollectiveOp op) {
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter ||
         op == CollectiveOp::kReduce;
}
bool rooted(CollectiveOp op) {
  return op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce;
}

int run_collective(const CollectiveArgs& a) {
  const std::string cmd = "collective";
  CollectiveOp op{};
  if (!models::parse_collective_op(a.op, &op)) {
    return fail_bad_input(cmd, "--op: unknown collective '" + a.op + "' (" +
                                   models::collective_op_names() + ")");
  }
  CollectiveAlgorithm algo{};
  if (!models::parse_collective_algorithm(a.algo, &algo)) {
    return fail_bad_input(cmd, "--algo: unknown algorithm '" + a.algo + "' (" +
                                   models::collective_algorithm_names() + ")");
  }
  CollectiveProtocol proto{};
  if (!models::parse_collective_protocol(a.proto, &proto)) {
    return fail_bad_input(cmd,
                          "--proto: unknown protocol '" + a.proto + "' (auto, ll, ll128, simple)");
  }
  auto min_bytes = models::parse_size_bytes(a.min_size, true);
  if (!min_bytes) return fail_bad_input(cmd, "--min: " + min_bytes.message());
  auto max_bytes = models::parse_size_bytes(a.max_size, true);
  if (!max_bytes) return fail_bad_input(cmd, "--max: " + max_bytes.message());
  auto sizes = validate::size_sweep(static_cast<std::size_t>(*min_bytes),
                                    static_cast<std::size_t>(*max_bytes), a.step_factor);
  if (!sizes) return fail_bad_input(cmd, "--min/--max/--step-factor: " + sizes.message());

  auto scenario = load_scenario_or_default(a.scenario);
  if (!scenario) return fail_bad_input(cmd, scenario.message());
  const int gpus = a.gpus > 0 ? a.gpus : scenario->cluster.total_gpus();
  auto topo = models::collective_topology(scenario->cluster, gpus);
  if (!topo) return fail_bad_input(cmd, "--gpus: " + topo.message());
  models::CollectiveParams params;
  auto calibration = calibration_for(a.calibration, scenario->calibration_path, scenario->cluster);
  if (!calibration) return fail_bad_input(cmd, calibration.message());
  if (*calibration) models::apply_calibration(**calibration, &params);

  if (a.engine != "analytic" && a.engine != "des") {
    return fail_bad_input(cmd, "--engine: unknown engine '" + a.engine + "' (analytic, des)");
  }
  const bool des = a.engine == "des";
  sim::SimParams sim_params;
  sim_params.collective = params;
  if (a.hash_draws > 1 && (!des || !topology::hashes_flows(scenario->cluster))) {
    return fail_bad_input(cmd, "--hash-draws: only the simulator on a multi-node ECMP fabric "
                               "draws a hash (--engine des, cluster.fabric.routing: ecmp)");
  }
  // One graph per draw of ECMP's hash: which links the flows collide on is the hash's luck.
  std::vector<topology::ClusterGraph> graphs;
  for (int k = 0; des && k < a.hash_draws; ++k) {
    topology::BuildOptions build;
    build.ecmp_seed += static_cast<std::uint64_t>(k);
    auto g = topology::ClusterGraph::build(scenario->cluster, &*scenario, build);
    if (!g) return fail_bad_input(cmd, "--engine des: " + g.message());
    graphs.push_back(std::move(*g));
  }

  // A row: the analytic estimate (NCCL's choice, the latency), and with the simulator its time in
  // place of the formula's, and the busiest link of its flows.
  struct Row {
    validate::CollectiveShape shape;
    models::CollectiveEstimate estimate;
    std::string busiest;  // des: "<tier> <utilisation>%" of the most loaded resource
    double formula_busbw_Bps = 0;
    std::vector<double> draws_busbw_Bps;  // --hash-draws: every draw's, ascending
  };
  std::vector<Row> rows;
  double busbw_sum = 0;
  // A sweep simulated past kQuietForS seconds says on stderr how far it is (an alltoall over
  // 1,024 GPUs simulates its 65,536 sampled flows in minutes a size).
  constexpr double kQuietForS = 3;
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t size : *sizes) {
    const auto shape = nccl_tests_shape(op, size, gpus);
    const models::CollectiveRequest request{op, static_cast<double>(shape.size_bytes), algo,
                                            proto};
    Row row{shape, {}, "", 0, {}};
    if (des) {
      // Several draws: the row is the median draw's, and keeps every draw's bus bandwidth.
      std::vector<sim::DesCollective> draws;
      for (const topology::ClusterGraph& g : graphs) {
        auto d = sim::simulate_collective(g, request, gpus, sim_params);
        if (!d) return fail_bad_input(cmd, d.message());
        draws.push_back(std::move(*d));
        const double elapsed_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (graphs.size() > 1 && draws.size() < graphs.size() && elapsed_s >= kQuietForS) {
          std::fprintf(stderr,
                       "clustersim collective: %s: simulated %zu of %zu hash draws (%.0f s)\n",
                       models::format_size(shape.size_bytes).c_str(), draws.size(),
                       graphs.size(), elapsed_s);
        }
      }
      std::sort(draws.begin(), draws.end(),
                [](const sim::DesCollective& x, const sim::DesCollective& y) {
                  return x.time_s < y.time_s;
                });
      if (draws.size() > 1) {
        for (const auto& d : draws) row.draws_busbw_Bps.push_back(d.busbw_Bps);
        std::sort(row.draws_busbw_Bps.begin(), row.draws_busbw_Bps.end());
      }
      const sim::DesCollective* d = &draws[draws.size() / 2];
      row.estimate = d->analytic;
      row.formula_busbw_Bps = d->analytic.busbw_Bps;
      row.estimate.time_s = d->time_s;
      row.estimate.bandwidth_s = d->bandwidth_s;
      row.estimate.algbw_Bps = d->algbw_Bps;
      row.estimate.busbw_Bps = d->busbw_Bps;
      if (const sim::TierLoad* top = sim::busiest_tier(d->loads)) {
        row.busiest =
            std::string(sim::to_string(top->tier)) + " " + models::format_percent(top->max_utilisation);
      }
      const double elapsed_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (elapsed_s >= kQuietForS) {
        std::fprintf(stderr,
                     "clustersim collective: simulated %zu of %zu sizes (%s: %zu flows in "
                     "%.1f s) (%.0f s)\n",
                     rows.size() + 1, sizes->size(), models::format_size(shape.size_bytes).c_str(),
                     d->flows, d->wall_s, elapsed_s);
      }
    } else {
      auto e = models::estimate_collective(*topo, request, params);
      if (!e) return fail_bad_input(cmd, e.message());
      row.estimate = *e;
      row.formula_busbw_Bps = e->busbw_Bps;
    }
    busbw_sum += row.estimate.busbw_Bps;
    rows.push_back(std::move(row));
  }
  const double avg_busbw_GBps = busbw_sum / rows.size() / 1e9;

  if (a.json) {
    nlohmann::json out = {{"scenario", scenario->name},
                          {"engine", a.engine},
                          {"op", models::to_string(op)},
                          {"gpus", gpus},
                          {"nodes", topo->nodes},
                          {"gpus_per_node", topo->ranks_per_node},
                          {"algorithm", models::to_string(algo)},
                          {"protocol", models::to_string(proto)},
                          {"type", "float"},
                          {"avg_busbw_GBps", avg_busbw_GBps}};
    if (des) out["hash_draws"] = a.hash_draws;
    nlohmann::json js_rows = nlohmann::json::array();
    for (const Row& r : rows) {
      const auto& e = r.estimate;
      js_rows.push_back({{"size_bytes", r.shape.size_bytes},
                         {"count", r.shape.count},
                         {"time_us", e.time_s * 1e6},
                         {"algbw_GBps", e.algbw_Bps / 1e9},
                         {"busbw_GBps", e.busbw_Bps / 1e9},
                         {"algorithm", models::to_string(e.algorithm)},
                         {"protocol", models::to_string(e.protocol)},
                         {"latency_us", e.latency_s * 1e6},
                         {"bandwidth_us", e.bandwidth_s * 1e6},
                         {"bottleneck", models::to_string(e.bottleneck)}});
      if (des) {
        js_rows.back()["analytic_busbw_GBps"] = r.formula_busbw_Bps / 1e9;
        js_rows.back()["busiest"] = r.busiest;
      }
      if (!r.draws_busbw_Bps.empty()) {
        nlohmann::json d = nlohmann::json::array();
        for (double b : r.draws_busbw_Bps) d.push_back(b / 1e9);
        js_rows.back()["hash_draws_busbw_GBps"] = std::move(d);
      }
    }
    out["rows"] = std::move(js_rows);
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }

  // nccl-tests' header and column widths (src/common.cu), then the model's choice per row.
  std::printf("# clustersim collective: %s on %d GPUs (%d node%s x %d), scenario %s\n",
              std::string(models::to_string(op)).c_str(), gpus, topo->nodes,
              topo->nodes == 1 ? "" : "s", topo->ranks_per_node, scenario->name.c_str());
  if (des) {
    std::printf("# simulator on the fabric (%s routing), NCCL's choice and latency from the tuner "
                "model, algorithm %s, protocol %s; bound = the busiest link's tier and "
                "utilisation, analytic = the formula's busbw\n#\n",
                std::string(models::to_string(scenario->cluster.fabric.routing)).c_str(),
                a.algo.c_str(), a.proto.c_str());
    if (a.hash_draws > 1) {
      std::printf("# each row the median of %d draws of ECMP's hash (the default seed and the "
                  "next ones); draws = their busbw range\n#\n",
                  a.hash_draws);
    }
  } else {
    std::printf("# analytic model (NCCL tuner alpha-beta), algorithm %s, protocol %s\n#\n",
                a.algo.c_str(), a.proto.c_str());
  }
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %-12s %-6s %s\n", "size", "count",
              "type", "redop", "root", "time", "algbw", "busbw", "algorithm", "proto", "bound");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(GB/s)", "(GB/s)");
  for (const Row& r : rows) {
    const auto& e = r.estimate;
    std::string bound(models::to_string(e.bottleneck));
    if (des) {
      char analytic[48];
      std::snprintf(analytic, sizeof analytic, " (analytic %.2f)", r.formula_busbw_Bps / 1e9);
      bound = r.busiest + analytic;
      if (!r.draws_busbw_Bps.empty()) {
        char range[64];
        std::snprintf(range, sizeof range, " draws %.2f-%.2f", r.draws_busbw_Bps.front() / 1e9,
                      r.draws_busbw_Bps.back() / 1e9);
        bound += range;
      }
    }
    std::printf("  %10zu  %12zu  %8s  %6s  %6i  %7.2f  %6.2f  %6.2f  %-12s %-6s %s\n",
                r.shape.size_bytes, r.shape.count, "float", reduces(op) ? "sum" : "none",
                rooted(op) ? 0 : -1, e.time_s * 1e6, e.algbw_Bps / 1e9, e.busbw_Bps / 1e9,
                std::string(models::to_string(e.algorithm)).c_str(),
                std::string(models::to_string(e.protocol)).c_str(), bound.c_str());
  }
  std::printf("# Avg bus bandwidth    : %g\n", avg_busbw_GBps);
  return kExitOk;
}

const bool kRegistered = register_command(
    {"collective", "predict one collective over a size sweep, in nccl-tests' columns", 20,
     [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<CollectiveArgs>();
       sub.add_option("--scenario", a->scenario,
                      "scenario YAML (default: the embedded default scenario)");
       sub.add_option("--op", a->op,
                      "all_reduce | all_gather | reduce_scatter | alltoall | broadcast | reduce | "
                      "sendrecv")
           .capture_default_str();
       sub.add_option("--gpus", a->gpus,
                      "GPUs in the communicator, filling nodes in order (default: all)")
           .check_positive();
       sub.add_option("-b,--min", a->min_size, "smallest size (8, 64K, 8G = 8 GiB, 2GB)")
           .capture_default_str();
       sub.add_option("-e,--max", a->max_size, "largest size").capture_default_str();
       sub.add_option("-f,--step-factor", a->step_factor, "multiply the size by this each row")
           .capture_default_str();
       sub.add_option("--algo", a->algo, "auto | ring | tree | nvls | collnet | hierarchical | p2p")
           .capture_default_str();
       sub.add_option("--proto", a->proto, "auto | ll | ll128 | simple").capture_default_str();
       sub.add_option("--engine", a->engine,
                      "analytic (the formula) | des (the flows simulated on the scenario's "
                      "fabric: ECMP collisions, queue pairs, oversubscription)")
           .capture_default_str();
       sub.add_option("--hash-draws", a->hash_draws,
                      "des on an ECMP fabric: simulate this many draws of the hash (the default "
                      "seed and the next ones); each row is the median draw, with the range")
           .check_range(1, 256);
       sub.add_flag("--json", a->json, "one JSON object with a row per size");
       sub.add_option("--calibration", a->calibration,
                      "calibration overlay (clustersim calibrate); default: the scenario's");
       return [a] { return run_collective(*a); };
     },
     {"clustersim collective --op all_reduce --gpus 8 -b 1M -e 1G",
      "clustersim collective --scenario scenarios/roce-256gpu.yaml --op all_gather --gpus 16 --json",
      "clustersim collective --scenario scenarios/roce-256gpu-ecmp.yaml --gpus 64 -b 64M -e 4G "
      "--engine des"}});

}  // namespace
}  // namespace clustersim::tools
