// `clustersim topo [SCENARIO]`: what the scenario's fabric is — switches, ports, cables and
// transceivers per tier, oversubscription, bisection (max-flow), diameter, latency, cost — and a
// picture: --dot FILE (Graphviz), --svg FILE (rendered by `dot` when Graphviz is installed).
// A design that cannot be cabled exits 2 with the shortfall and what the same parts can do.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "models/units.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/scenario_input.h"
#include "tools/text_table.h"
#include "topology/cluster_graph.h"
#include "topology/dot_export.h"
#include "topology/fabric_metrics.h"

extern char** environ;

namespace clustersim::tools {
namespace {

using models::format_bandwidth;
using models::format_bandwidth_bits;
using models::format_percent;
using models::format_significant;
using models::format_time;
using models::format_usd;
using topology::ClusterGraph;
using topology::FabricMetrics;

struct TopoArgs {
  std::string scenario;
  std::vector<std::string> sets;  // --set KEY=VALUE
  bool json = false;
  std::string dot_path;
  std::string svg_path;
  bool full = false;
  bool nearest = false;
};

std::string ratio_or_dash(double r) { return r > 0 ? format_significant(r, 3) + ":1" : "-"; }

// "32 nodes x 8 h100-sxm (nvlink4), 8 x ib-ndr per node, 1 link each"
std::string cluster_line(const models::ClusterConfig& c) {
  const auto& n = c.node;
  std::string s = std::to_string(c.nodes) + " nodes x " + std::to_string(n.gpus_per_node) + " " +
                  n.gpu.id + " (" + n.scale_up.id + "), " + std::to_string(n.nics_per_node) +
                  " x " + n.nic.id + " per node";
  if (n.links_per_nic > 1) s += ", " + std::to_string(n.links_per_nic) + " bonded links each";
  return s;
}

std::string fabric_line(const models::ClusterConfig& c) {
  const auto& f = c.fabric;
  return std::string(models::to_string(f.topology)) + ", " + std::to_string(f.switch_radix) +
         "-port " + (f.switch_spec.id.empty() ? "switches" : f.switch_spec.id) + " at " +
         format_bandwidth_bits(f.switch_spec.port_Bps) + ", routing " +
         std::string(models::to_string(f.routing)) + ", asked " +
         format_significant(f.oversubscription, 3) + ":1" +
         (f.in_network_reduction ? ", in-network reduction (SHARP)" : "");
}

void print_summary(const models::Scenario& s, const ClusterGraph& g, const FabricMetrics& m) {
  const auto& d = g.design();
  std::printf("Fabric of %s (%s)\n", s.name.c_str(), s.path.c_str());
  std::printf("  cluster: %s\n  fabric:  %s\n", cluster_line(s.cluster).c_str(),
              fabric_line(s.cluster).c_str());
  std::printf("  design:  %s\n\n", topology::describe(d).c_str());
  if (d.planes > 0) {
    TextTable t({"tier", "switches", "ports", "used", "down", "up", "down:up"});
    for (const auto& tier : m.tiers)
      t.add_row({tier.name, std::to_string(tier.switches), std::to_string(tier.ports),
                 std::to_string(tier.ports_used), std::to_string(tier.downlinks),
                 std::to_string(tier.uplinks), ratio_or_dash(tier.oversubscription)});
    t.add_separator();
    t.add_row({"total", std::to_string(m.switches), std::to_string(m.switch_ports),
               std::to_string(m.switch_ports_used), "", "", ""});
    std::printf("%s\n", t.render(2).c_str());
  }
  TextTable f({"figure", "value"}, {TextTable::Align::kLeft, TextTable::Align::kLeft});
  f.add_row({"planes", std::to_string(m.planes)});
  f.add_row({"cables (transceivers)",
             std::to_string(m.cables) + " (" + std::to_string(m.transceivers) + ")"});
  f.add_row({"injection, all NICs", format_bandwidth(m.injection_Bps) + " (" +
                                        format_bandwidth_bits(m.injection_Bps) + ")"});
  if (m.nodes >= 2) {
    f.add_row({"bisection, max-flow (node level)",
               format_bandwidth(m.bisection_Bps) + " = " +
                   format_percent(m.bisection_Bps, m.injection_Bps / 2) +
                   " of half the injection"});
    f.add_row({"bisection, closed form", m.bisection_closed_form_Bps >= 0
                                             ? format_bandwidth(m.bisection_closed_form_Bps)
                                             : std::string("- (cut not on a leaf boundary)")});
  }
  f.add_row({"diameter", std::to_string(m.diameter_hops) + " hops (GPU to GPU)"});
  if (g.gpus_per_node() > 1)
    f.add_row({"latency inside a node", format_time(m.intra_node_latency_s)});
  f.add_row({"latency typical / worst",
             format_time(m.typical_latency_s) + " / " + format_time(m.worst_latency_s)});
  f.add_row({"cost: switches", format_usd(m.switch_cost_usd)});
  f.add_row({"cost: cables with transceivers", format_usd(m.cable_cost_usd)});
  f.add_row({"cost: NICs", format_usd(m.nic_cost_usd)});
  f.add_row({"cost: fabric total (per GPU)", format_usd(m.total_cost_usd()) + " (" +
                                                 format_usd(m.total_cost_usd() / m.gpus) + ")"});
  std::printf("%s", f.render(2).c_str());
  if (!d.notes.empty()) {
    std::printf("\n  notes:\n");
    for (const auto& n : d.notes) std::printf("    - %s\n", n.c_str());
  }
  std::printf(
      "\n  bisection: max-flow from the first half of the nodes to the second and from even to\n"
      "  odd nodes, the smaller, each node one vertex with its NIC links (GPUs aggregated);\n"
      "  transceivers: two per cable, every cable taken as optical\n");
}

nlohmann::json to_json(const models::Scenario& s, const ClusterGraph& g, const FabricMetrics& m) {
  const auto& d = g.design();
  const auto& p = d.plane;
  nlohmann::json tiers = nlohmann::json::array();
  for (const auto& t : m.tiers)
    tiers.push_back({{"name", t.name},
                     {"switches", t.switches},
                     {"ports", t.ports},
                     {"ports_used", t.ports_used},
                     {"downlinks", t.downlinks},
                     {"uplinks", t.uplinks},
                     {"oversubscription", t.oversubscription}});
  return {
      {"scenario", s.name},
      {"topology", std::string(models::to_string(s.cluster.fabric.topology))},
      {"routing", std::string(models::to_string(s.cluster.fabric.routing))},
      {"in_network_reduction", s.cluster.fabric.in_network_reduction},
      {"nodes", m.nodes},
      {"gpus", m.gpus},
      {"nics", m.nics},
      {"planes", m.planes},
      {"design",
       {{"tiers", d.planes > 0 ? p.tiers : 0},
        {"radix", d.radix},
        {"port_Bps", d.port_Bps},
        {"rails_per_plane", p.rails.size()},
        {"leaves_per_plane", p.leaves},
        {"spines_per_plane", p.tiers >= 2 ? p.spines() : 0},
        {"cores_per_plane", p.cores()},
        {"pods", p.pods},
        {"nic_ports_per_leaf", p.downlinks_per_leaf},
        {"uplinks_per_leaf", p.uplinks_per_leaf},
        {"leaf_oversubscription", d.leaf_oversubscription},
        {"requested_oversubscription", d.requested_oversubscription},
        {"summary", topology::describe(d)}}},
      {"tiers", tiers},
      {"switches", m.switches},
      {"switch_ports", m.switch_ports},
      {"switch_ports_used", m.switch_ports_used},
      {"cables", m.cables},
      {"transceivers", m.transceivers},
      {"injection_Bps", m.injection_Bps},
      {"bisection_Bps", m.bisection_Bps},
      {"bisection_closed_form_Bps", m.bisection_closed_form_Bps >= 0
                                        ? nlohmann::json(m.bisection_closed_form_Bps)
                                        : nlohmann::json(nullptr)},
      {"diameter_hops", m.diameter_hops},
      {"latency_s",
       {{"intra_node", m.intra_node_latency_s},
        {"typical", m.typical_latency_s},
        {"worst", m.worst_latency_s}}},
      {"cost_usd",
       {{"switches", m.switch_cost_usd},
        {"cables", m.cable_cost_usd},
        {"nics", m.nic_cost_usd},
        {"total", m.total_cost_usd()}}},
      {"notes", d.notes},
  };
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out.flush());
}

// Renders DOT text to SVG with Graphviz's `dot`, without a shell. Returns "" or the problem.
std::string render_svg(const std::string& dot_text, const std::string& svg_path) {
  char tmp[] = "/tmp/clustersim-topo-XXXXXX";
  const int fd = mkstemp(tmp);
  if (fd < 0) return std::string("cannot create a temporary file: ") + std::strerror(errno);
  close(fd);
  const bool written = write_file(tmp, dot_text);
  std::string problem;
  if (!written) problem = std::string("cannot write ") + tmp;
  if (problem.empty()) {
    const char* argv[] = {"dot", "-Tsvg", tmp, "-o", svg_path.c_str(), nullptr};
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, "dot", nullptr, nullptr, const_cast<char**>(argv), environ);
    if (rc == ENOENT) {
      problem =
          "Graphviz is not installed ('dot' is not on PATH): install graphviz, or write "
          "--dot FILE and render it with `dot -Tsvg FILE -o OUT.svg` elsewhere";
    } else if (rc != 0) {
      problem = std::string("cannot run dot: ") + std::strerror(rc);
    } else {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        problem = "dot failed to render " + svg_path;
    }
  }
  std::remove(tmp);
  return problem;
}

int run_topo(const TopoArgs& a) {
  auto overrides = parse_set_options(a.sets);
  if (!overrides) return fail_bad_input("topo", overrides.message());
  auto scenario = load_scenario_or_default(a.scenario, *overrides);
  if (!scenario.ok()) return fail_bad_input("topo", scenario.message());
  auto graph = ClusterGraph::build(scenario->cluster, &scenario.value());
  std::string drawn_instead;  // --nearest: the alternative drawn
  if (!graph.ok()) {
    std::string msg = graph.message();
    const auto alternatives = topology::design_alternatives(scenario->cluster);
    const bool nearest_exists = !alternatives.empty() && alternatives.back().keeps_every_nic;
    if (a.nearest && nearest_exists) {
      // Draw the fabric sized for every NIC instead, and say so first.
      std::fprintf(stderr, "clustersim topo: %s\n  --nearest: %s\n", msg.c_str(),
                   alternatives.back().text.c_str());
      scenario->cluster = alternatives.back().cluster;
      drawn_instead = alternatives.back().text;
      graph = ClusterGraph::build(scenario->cluster, &scenario.value());
      if (!graph.ok()) return fail_bad_input("topo", graph.message());
    } else {
      if (!alternatives.empty()) {
        msg += "\n  what the same parts can do instead:";
        for (const auto& alt : alternatives) msg += "\n    - " + alt.text;
        if (nearest_exists) msg += "\n  --nearest draws the last one (summary and picture)";
      }
      return fail_bad_input("topo", msg);
    }
  } else if (a.nearest) {
    std::fprintf(stderr, "clustersim topo: --nearest: the design as given can be built\n");
  }
  const FabricMetrics metrics = topology::compute_metrics(graph.value());
  if (a.json) {
    nlohmann::json j = to_json(scenario.value(), graph.value(), metrics);
    if (!drawn_instead.empty()) j["drawn_instead_of_the_given_design"] = drawn_instead;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    if (!drawn_instead.empty())
      std::printf("The design as given cannot be built; drawn instead: %s\n\n",
                  drawn_instead.c_str());
    print_summary(scenario.value(), graph.value(), metrics);
  }

  if (a.dot_path.empty() && a.svg_path.empty()) return kExitOk;
  const std::string dot = topology::to_dot(
      graph.value(), a.full ? topology::DotDetail::kFull : topology::DotDetail::kCollapsed);
  if (!a.dot_path.empty() && !write_file(a.dot_path, dot))
    return fail_bad_input("topo", "--dot: cannot write " + a.dot_path);
  if (!a.svg_path.empty()) {
    const std::string problem = render_svg(dot, a.svg_path);
    if (!problem.empty()) return fail_bad_input("topo", "--svg: " + problem);
  }
  return kExitOk;
}

const bool kRegistered = register_command(
    {"topo",
     "fabric summary: switches, ports, cables, bisection (max-flow), oversubscription, diameter, "
     "latency, cost; DOT/SVG picture",
     30, [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<TopoArgs>();
       sub.add_option("scenario", a->scenario,
                      "scenario YAML file (default: the embedded 4-node H100 scenario)");
       sub.add_option("--set", a->sets, "KEY=VALUE: set a dotted scenario key before loading (as sweep --set, one value; repeatable), e.g. cluster.nodes=16");
       sub.add_flag("--json", a->json, "one JSON object with the same figures, SI units");
       sub.add_option("--dot", a->dot_path, "write the picture as Graphviz DOT to FILE");
       sub.add_option("--svg", a->svg_path, "render the picture to FILE with Graphviz `dot`");
       sub.add_flag("--nearest", a->nearest,
                    "when the design cannot be built: the summary and picture of a fabric of the "
                    "same switches sized for every NIC instead");
       sub.add_flag("--full", a->full,
                    "draw every GPU, NIC and link (default: nodes collapsed per leaf; very large "
                    "fabrics one box per tier); slow to render beyond a few hundred GPUs");
       return [a] { return run_topo(*a); };
     },
     {"clustersim topo",
      "clustersim topo scenarios/roce-256gpu-ecmp.yaml --json"}});

}  // namespace
}  // namespace clustersim::tools
