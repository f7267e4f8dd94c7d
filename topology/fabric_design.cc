#include "topology/fabric_design.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "models/integer_math.h"
#include "models/units.h"

namespace clustersim::topology {
namespace {

using models::divisors;
using models::Error;
using models::TopologyKind;

// Ratios are compared with a small tolerance: 32/32 must read as exactly 1:1.
constexpr double kRatioTolerance = 1e-9;

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// Largest divisor of n that is at most limit (>= 1 when limit >= 1).
int largest_divisor_at_most(int n, int limit) {
  for (int d = std::min(n, limit); d >= 1; --d)
    if (n % d == 0) return d;
  return 0;
}

std::string plural(long long n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string ratio(double r) { return models::format_significant(r, 3) + ":1"; }

// "file:line:col: key.path: " (or "key.path: " without a scenario).
std::string where(const models::Scenario* scenario, const std::string& key) {
  return (scenario ? scenario->where(key) : key) + ": ";
}

// The inputs every builder shares, checked once.
struct Inputs {
  int nodes = 0;
  int nics = 0;   // per node
  int links = 0;  // per NIC
  int radix = 0;
  double oversubscription = 1;
  double nic_link_Bps = 0;
  double port_Bps = 0;
};

// Sizing of one plane of a fat-tree-like Clos (fat-tree, rail-optimized, leaf-spine without
// explicit counts) for `rails` NICs per node. Returns false (and the shortfall) when the plane
// cannot reach all of them with `tiers` tiers.
struct ClosAttempt {
  bool fits = false;
  PlaneDesign plane;
  long long short_ports = 0;  // ports the largest plane lacks
  std::string short_text;     // why it does not fit
  std::vector<std::string> notes;
};

ClosAttempt size_clos_plane(const Inputs& in, int tiers, int rails, bool rail_aligned) {
  ClosAttempt out;
  PlaneDesign& p = out.plane;
  p.rail_aligned = rail_aligned;
  const LeafPortSplit split = leaf_port_split(in.radix, in.oversubscription);
  const int cap = split.down / in.links;  // NICs per leaf at most
  // 1. Tier 1: spread the NICs over as few leaves as the downlink ports allow, then balance.
  if (rail_aligned) {
    const int groups = ceil_div(in.nodes, cap);
    p.nodes_per_leaf = ceil_div(in.nodes, groups);
    p.nics_per_leaf = p.nodes_per_leaf;
    p.leaves = groups * rails;
  } else if (cap >= rails) {
    const int leaves = ceil_div(in.nodes, cap / rails);
    p.nodes_per_leaf = ceil_div(in.nodes, leaves);
    p.nics_per_leaf = p.nodes_per_leaf * rails;
    p.leaves = ceil_div(in.nodes, p.nodes_per_leaf);
  } else {
    p.leaves_per_node = ceil_div(rails, cap);
    p.nics_per_leaf = ceil_div(rails, p.leaves_per_node);
    p.leaves = in.nodes * p.leaves_per_node;
  }
  p.downlinks_per_leaf = p.nics_per_leaf * in.links;
  if (p.leaves == 1) {
    p.tiers = 1;
    out.fits = true;
    if (tiers > 1)
      out.notes.push_back("all " + std::to_string(p.downlinks_per_leaf) +
                          " NIC ports fit on one leaf switch: no higher tier is needed");
    return out;
  }
  // Uplinks: enough bandwidth for the leaf's NICs at the requested oversubscription.
  const double down_Bps = p.downlinks_per_leaf * in.nic_link_Bps;
  const int uplinks = std::max(
      1,
      static_cast<int>(std::ceil(down_Bps / in.port_Bps / in.oversubscription - kRatioTolerance)));

  // 2. Two tiers, or the part of three tiers inside a pod.
  auto size_two_tier = [&](int leaves) {
    const int m = largest_divisor_at_most(uplinks, in.radix / leaves);
    p.tiers = 2;
    p.pods = 1;
    p.leaves_per_pod = leaves;
    p.links_per_leaf_spine = m;
    p.spines_per_pod = uplinks / m;
    p.uplinks_per_leaf = uplinks;
  };
  if (tiers == 2) {
    if (p.leaves > in.radix) {
      out.short_ports = static_cast<long long>(p.leaves - in.radix) * p.downlinks_per_leaf;
      out.short_text = "a two-tier plane of " + std::to_string(in.radix) +
                       "-port switches reaches at most " + std::to_string(in.radix) +
                       " leaves, this one needs " + std::to_string(p.leaves);
      return out;
    }
    size_two_tier(p.leaves);
    out.fits = true;
    return out;
  }
  // 3. Three tiers: pods of at most radix/2 leaves (each spine: one port down per leaf of its
  // pod, as many up), keeping a node's leaves, or a rail group's, in one pod.
  int block = rail_aligned ? rails : std::max(1, p.leaves_per_node);
  int max_per_pod = (in.radix / 2) / block * block;
  if (max_per_pod == 0) {
    out.notes.push_back("a group of " + std::to_string(block) +
                        " leaves does not fit in one pod: groups straddle pods");
    block = 1;
    max_per_pod = in.radix / 2;
  }
  if (p.leaves <= max_per_pod) {
    size_two_tier(p.leaves);
    out.fits = true;
    out.notes.push_back("all " + std::to_string(p.leaves) +
                        " leaves fit in one pod: no core tier is needed");
    return out;
  }
  const int pods = ceil_div(p.leaves, max_per_pod);
  if (pods > in.radix) {
    out.short_ports = static_cast<long long>(pods - in.radix) * max_per_pod * p.downlinks_per_leaf;
    out.short_text = "a three-tier plane of " + std::to_string(in.radix) +
                     "-port switches reaches at most " + std::to_string(in.radix) + " pods of " +
                     std::to_string(max_per_pod) + " leaves, this one needs " +
                     std::to_string(pods) + " pods";
    return out;
  }
  p.tiers = 3;
  p.pods = pods;
  p.leaves_per_pod = ceil_div(ceil_div(p.leaves, pods), block) * block;
  p.spines_per_pod = uplinks;  // one cable from each leaf to each spine of its pod
  p.links_per_leaf_spine = 1;
  p.uplinks_per_leaf = uplinks;
  p.uplinks_per_spine = p.leaves_per_pod;  // 1:1 above the leaves
  p.links_per_spine_core = largest_divisor_at_most(p.uplinks_per_spine, in.radix / pods);
  p.cores_per_group = p.uplinks_per_spine / p.links_per_spine_core;
  out.fits = true;
  return out;
}

// Divisors of n in ascending order: the plane counts to try.

std::vector<int> rails_of_plane(int plane, int rails) {
  std::vector<int> r(rails);
  for (int k = 0; k < rails; ++k) r[k] = plane * rails + k;
  return r;
}

models::Result<FabricDesign> design_clos(const Inputs& in, int tiers, bool rail_aligned,
                                         FabricDesign design, const models::Scenario* scenario) {
  ClosAttempt last;
  for (int planes : divisors(in.nics)) {
    const int rails = in.nics / planes;
    ClosAttempt a = size_clos_plane(in, tiers, rails, rail_aligned);
    if (!a.fits) {
      last = std::move(a);
      continue;
    }
    design.planes = planes;
    design.plane = std::move(a.plane);
    design.plane.rails = rails_of_plane(0, rails);
    for (auto& n : a.notes) design.notes.push_back(std::move(n));
    if (planes > 1)
      design.notes.push_back("the " + std::to_string(in.nodes * in.nics) + " NICs exceed one " +
                             std::to_string(tiers) + "-tier plane of " + std::to_string(in.radix) +
                             "-port switches: split into " + plural(planes, "plane") + " of " +
                             plural(rails, "rail") + " each (NIC i of every node on plane i / " +
                             std::to_string(rails) +
                             "); traffic between planes crosses NVLink first (PXN)");
    return design;
  }
  std::ostringstream msg;
  msg << where(scenario, "cluster.fabric.switch_radix") << in.nodes << " nodes x " << in.nics
      << " NICs x " << plural(in.links, "link") << " = " << in.nodes * in.nics * in.links
      << " NIC ports do not fit even split into " << plural(in.nics, "plane")
      << " (one per NIC): " << last.short_text << "; short by " << last.short_ports
      << " NIC ports per plane (" << last.short_ports * in.nics
      << " in all); use more tiers, larger switches or more oversubscription";
  return Error{msg.str()};
}

models::Result<FabricDesign> design_single_switch(const Inputs& in, FabricDesign design,
                                                  const models::Scenario* scenario) {
  for (int planes : divisors(in.nics)) {
    const int rails = in.nics / planes;
    const int ports = in.nodes * rails * in.links;
    if (ports > in.radix) continue;
    design.planes = planes;
    PlaneDesign& p = design.plane;
    p.tiers = 1;
    p.rails = rails_of_plane(0, rails);
    p.leaves = 1;
    p.nodes_per_leaf = in.nodes;
    p.nics_per_leaf = in.nodes * rails;
    p.downlinks_per_leaf = ports;
    if (planes > 1)
      design.notes.push_back("the " + std::to_string(in.nodes * in.nics * in.links) +
                             " NIC ports exceed one " + std::to_string(in.radix) +
                             "-port switch: " + plural(planes, "switch") + " as separate planes, " +
                             plural(rails, "rail") +
                             " each; traffic between planes crosses "
                             "NVLink first (PXN)");
    return design;
  }
  const int ports = in.nodes * in.links;  // one NIC per plane, the smallest a plane can be
  return Error{where(scenario, "cluster.fabric.switch_radix") + "a single " +
               std::to_string(in.radix) + "-port switch cannot host " + std::to_string(in.nodes) +
               " nodes even with one plane per NIC (" + std::to_string(ports) +
               " ports per plane): short by " + std::to_string(ports - in.radix) +
               " ports; use leaf-spine or fat-tree"};
}

// Explicit leaf-spine: the scenario names the leaves and spines (the seed's "8 leaf switches
// (each 32 ports) and 2 spine switches to connect 32 nodes"). One plane, all rails.
models::Result<FabricDesign> design_leaf_spine(const Inputs& in, const models::FabricConfig& f,
                                               FabricDesign design,
                                               const models::Scenario* scenario) {
  if (f.leaves <= 0 || f.spines <= 0)
    return Error{
        where(scenario, f.leaves <= 0 ? "cluster.fabric.leaves" : "cluster.fabric.spines") +
        "leaf-spine: give both leaves and spines, or neither (then the builder sizes "
        "a two-tier fabric for the radix and oversubscription)"};
  PlaneDesign& p = design.plane;
  p.tiers = 2;
  p.rails = rails_of_plane(0, in.nics);
  if (f.leaves <= in.nodes) {
    p.nodes_per_leaf = ceil_div(in.nodes, f.leaves);
    p.nics_per_leaf = p.nodes_per_leaf * in.nics;
    const int used = ceil_div(in.nodes, p.nodes_per_leaf);
    if (used < f.leaves)
      design.notes.push_back(std::to_string(f.leaves - used) + " of the " +
                             std::to_string(f.leaves) + " leaves stay empty (" +
                             std::to_string(p.nodes_per_leaf) + " nodes per leaf)");
  } else {
    p.leaves_per_node = std::min(f.leaves / in.nodes, in.nics);
    p.nics_per_leaf = ceil_div(in.nics, p.leaves_per_node);
    if (in.nodes * p.leaves_per_node < f.leaves)
      design.notes.push_back(std::to_string(f.leaves - in.nodes * p.leaves_per_node) + " of the " +
                             std::to_string(f.leaves) + " leaves stay empty");
  }
  p.leaves = f.leaves;
  p.downlinks_per_leaf = p.nics_per_leaf * in.links;
  p.pods = 1;
  p.leaves_per_pod = f.leaves;
  p.spines_per_pod = f.spines;

  const int S = f.spines;
  const int down = p.downlinks_per_leaf;
  const double down_Bps = down * in.nic_link_Bps;
  // Uplinks a leaf needs for the requested oversubscription (a multiple of the spine count).
  const int up_needed = std::max(
      1,
      static_cast<int>(std::ceil(down_Bps / in.port_Bps / in.oversubscription - kRatioTolerance)));
  const int m_needed = ceil_div(up_needed, S);
  const std::string host_text = std::to_string(in.nodes) + " nodes x " + std::to_string(in.nics) +
                                " NICs x " + plural(in.links, "link");
  // What a design at the requested ratio would take, for the messages.
  auto needs_text = [&]() {
    const int up = m_needed * S;
    std::ostringstream s;
    s << "at " << ratio(in.oversubscription) << " each leaf needs " << down << " NIC ports + " << up
      << " uplinks = " << down + up << " ports (has " << in.radix << ") and the spines "
      << f.leaves * up << " ports (" << S << " x " << in.radix << " = " << S * in.radix << ")";
    return s.str();
  };

  int m = 0;
  if (f.uplinks_per_leaf > 0) {
    if (f.uplinks_per_leaf % S != 0) {
      const int lo = f.uplinks_per_leaf / S * S;
      return Error{where(scenario, "cluster.fabric.uplinks_per_leaf") +
                   std::to_string(f.uplinks_per_leaf) + " uplinks do not divide evenly over " +
                   std::to_string(S) + " spines: " + std::to_string(f.uplinks_per_leaf - lo) +
                   " port(s) over a multiple (use " + (lo > 0 ? std::to_string(lo) + " or " : "") +
                   std::to_string(lo + S) + ")"};
    }
    m = f.uplinks_per_leaf / S;
    if (down + f.uplinks_per_leaf > in.radix)
      return Error{where(scenario, "cluster.fabric.uplinks_per_leaf") + "each leaf needs " +
                   std::to_string(down) + " NIC ports (" + host_text + " over " +
                   std::to_string(f.leaves) + " leaves) + " + std::to_string(f.uplinks_per_leaf) +
                   " uplinks = " + std::to_string(down + f.uplinks_per_leaf) + " ports, has " +
                   std::to_string(in.radix) + ": short by " +
                   std::to_string(down + f.uplinks_per_leaf - in.radix) + " ports per leaf"};
    if (f.leaves * m > in.radix)
      return Error{where(scenario, "cluster.fabric.spines") + "each spine needs " +
                   std::to_string(f.leaves) + " leaves x " + std::to_string(m) + " links = " +
                   std::to_string(f.leaves * m) + " ports, has " + std::to_string(in.radix) +
                   ": short by " + std::to_string(f.leaves * m - in.radix) + " ports per spine (" +
                   std::to_string((f.leaves * m - in.radix) * S) + " in all)"};
  } else {
    if (down + S > in.radix)
      return Error{where(scenario, "cluster.fabric.leaves") + std::to_string(f.leaves) +
                   " leaves x " + std::to_string(in.radix) + " ports cannot host " + host_text +
                   " = " + std::to_string(in.nodes * in.nics * in.links) + " NIC ports and reach " +
                   std::to_string(S) + " spines: each leaf needs " + std::to_string(down) +
                   " NIC ports + at least " + std::to_string(S) + " uplinks = " +
                   std::to_string(down + S) + " ports, has " + std::to_string(in.radix) +
                   ": short by " + std::to_string(down + S - in.radix) + " ports per leaf (" +
                   std::to_string((down + S - in.radix) * f.leaves) + " in all); " + needs_text()};
    if (f.leaves > in.radix)
      return Error{where(scenario, "cluster.fabric.spines") + "a " + std::to_string(in.radix) +
                   "-port spine cannot reach " + std::to_string(f.leaves) + " leaves: short by " +
                   std::to_string(f.leaves - in.radix) + " ports per spine"};
    const int m_available = std::min((in.radix - down) / S, in.radix / f.leaves);
    m = std::min(m_available, m_needed);
  }
  p.links_per_leaf_spine = m;
  p.uplinks_per_leaf = m * S;
  const double achieved = down_Bps / (p.uplinks_per_leaf * in.port_Bps);
  if (achieved > in.oversubscription * (1 + kRatioTolerance)) {
    const int extra_up = m_needed * S - p.uplinks_per_leaf;
    std::ostringstream s;
    s << "as built the leaves are " << ratio(achieved) << " oversubscribed (" << down
      << " NIC ports, " << p.uplinks_per_leaf << " uplinks per leaf); "
      << (scenario ? scenario->where("cluster.fabric.oversubscription")
                   : std::string("cluster.fabric.oversubscription"))
      << " asks " << ratio(in.oversubscription) << ": " << needs_text() << ", i.e. " << extra_up
      << " more uplinks per leaf";
    const int leaf_short = down + m_needed * S - in.radix;
    const int spine_short = f.leaves * m_needed * S - S * in.radix;
    if (leaf_short > 0) s << ", " << leaf_short << " ports short per leaf";
    if (spine_short > 0) s << ", " << spine_short << " spine ports short";
    design.notes.push_back(s.str());
  }
  design.planes = 1;
  return design;
}

}  // namespace

std::string describe(const FabricDesign& d) {
  if (d.planes == 0) return "no fabric";
  const PlaneDesign& p = d.plane;
  std::ostringstream s;
  if (d.planes > 1) s << d.planes << " planes x (";
  s << p.leaves << (p.leaves == 1 ? " leaf" : " leaves");
  if (p.tiers >= 2) s << " + " << plural(p.spines(), "spine");
  if (p.tiers == 3) s << " + " << plural(p.cores(), "core") << " in " << plural(p.pods, "pod");
  if (d.planes > 1) s << ")";
  s << ", " << p.downlinks_per_leaf << " NIC ports";
  if (p.tiers >= 2) s << " and " << p.uplinks_per_leaf << " uplinks";
  s << " per leaf";
  if (p.tiers >= 2) s << " (" << ratio(d.leaf_oversubscription) << ")";
  return s.str();
}

std::vector<DesignAlternative> design_alternatives(const models::ClusterConfig& cluster) {
  std::vector<DesignAlternative> out;
  const int nics = cluster.node.nics_per_node;
  // 1. The same switches with fewer NICs per node (an explicit leaf-spine, or a single switch).
  const models::FabricConfig& f = cluster.fabric;
  const bool fixed_switches =
      f.topology == TopologyKind::kSingleSwitch ||
      (f.topology == TopologyKind::kLeafSpine && (f.leaves > 0 || f.spines > 0));
  if (fixed_switches)
    for (int n = nics - 1; n >= 1; --n) {
      if (nics % n != 0) continue;
      models::ClusterConfig c = cluster;
      c.node.nics_per_node = n;
      auto d = design_fabric(c);
      if (!d.ok()) continue;
      out.push_back({"with " + plural(n, "NIC") + " per node (" +
                         std::to_string(cluster.node.gpus_per_node / n) +
                         " GPUs per NIC) the same switches give " + describe(d.value()),
                     c, false});
    }
  // 2. A fabric sized for these nodes and NICs at the same radix and oversubscription.
  for (int tiers : {2, 3}) {
    models::ClusterConfig c = cluster;
    c.fabric.topology = f.topology == TopologyKind::kRailOptimized ? TopologyKind::kRailOptimized
                                                                   : TopologyKind::kFatTree;
    c.fabric.tiers = tiers;
    c.fabric.leaves = c.fabric.spines = c.fabric.uplinks_per_leaf = 0;
    auto d = design_fabric(c);
    if (!d.ok()) continue;
    out.push_back({"a " + std::to_string(d->plane.tiers) + "-tier " +
                       std::string(models::to_string(c.fabric.topology)) + " of " +
                       std::to_string(f.switch_radix) + "-port switches for " +
                       plural(nics, "NIC") + " per node: " + describe(d.value()),
                   c, true});
    break;
  }
  return out;
}

LeafPortSplit leaf_port_split(int radix, double oversubscription) {
  for (int down = radix - 1; down >= 1; --down) {
    const int up = static_cast<int>(std::ceil(down / oversubscription - kRatioTolerance));
    if (down + up <= radix) return {down, up};
  }
  return {};
}

NicPlacement place_nic(const FabricDesign& design, int nics_per_node, int node, int nic) {
  const PlaneDesign& p = design.plane;
  const int rails = static_cast<int>(p.rails.size());
  CS_ASSERT(design.planes > 0 && rails > 0, "place_nic without a fabric");
  CS_ASSERT(nic >= 0 && nic < nics_per_node, "NIC index out of range");
  NicPlacement out;
  out.plane = nic / rails;
  const int k = nic % rails;
  if (p.rail_aligned) {
    out.leaf = node / p.nodes_per_leaf * rails + k;
    out.slot = node % p.nodes_per_leaf;
  } else if (p.leaves_per_node > 0) {
    out.leaf = node * p.leaves_per_node + k / p.nics_per_leaf;
    out.slot = k % p.nics_per_leaf;
  } else {
    out.leaf = node / p.nodes_per_leaf;
    out.slot = node % p.nodes_per_leaf * rails + k;
  }
  out.index = out.leaf * p.nics_per_leaf + out.slot;
  return out;
}

models::Result<FabricDesign> design_fabric(const models::ClusterConfig& cluster,
                                           const models::Scenario* scenario) {
  const models::FabricConfig& f = cluster.fabric;
  const models::NodeConfig& node = cluster.node;
  FabricDesign design;
  design.kind = f.topology;
  design.radix = f.switch_radix;
  design.requested_oversubscription = f.oversubscription;

  if (cluster.nodes < 1) return Error{where(scenario, "cluster.nodes") + "needs at least 1 node"};
  if (node.gpus_per_node < 1)
    return Error{where(scenario, "cluster.node.gpus_per_node") + "needs at least 1 GPU"};
  if (node.nics_per_node < 0)
    return Error{where(scenario, "cluster.node.nics_per_node") + "cannot be negative"};
  if (node.links_per_nic < 1)
    return Error{where(scenario, "cluster.node.links_per_nic") + "needs at least 1 link"};
  if (cluster.nodes == 1) {
    design.notes.push_back("one node: no fabric");
    return design;
  }
  if (node.nics_per_node == 0)
    return Error{where(scenario, "cluster.node.nics_per_node") + std::to_string(cluster.nodes) +
                 " nodes need at least one NIC each to reach each other"};
  if (node.nic.line_rate_Bps <= 0)
    return Error{where(scenario, "cluster.node.nic") + "NIC '" + node.nic.id +
                 "' has no line rate"};
  if (f.switch_radix < 2)
    return Error{where(scenario, "cluster.fabric.switch_radix") + std::to_string(f.switch_radix) +
                 " ports: a switch needs at least 2"};
  if (!(f.oversubscription > 0))
    return Error{where(scenario, "cluster.fabric.oversubscription") + "must be positive"};

  Inputs in;
  in.nodes = cluster.nodes;
  in.nics = node.nics_per_node;
  in.links = node.links_per_nic;
  in.radix = f.switch_radix;
  in.oversubscription = f.oversubscription;
  in.port_Bps = f.switch_spec.port_Bps > 0 ? f.switch_spec.port_Bps : node.nic.line_rate_Bps;
  in.nic_link_Bps = std::min(node.nic.line_rate_Bps, in.port_Bps);
  design.port_Bps = in.port_Bps;
  design.nic_link_Bps = in.nic_link_Bps;
  if (node.nic.line_rate_Bps > in.port_Bps * (1 + kRatioTolerance))
    design.notes.push_back(
        "NIC line rate " + models::format_bandwidth_bits(node.nic.line_rate_Bps) +
        " exceeds the switch ports' " + models::format_bandwidth_bits(in.port_Bps) +
        ": links run at " + models::format_bandwidth_bits(in.port_Bps));
  if (f.switch_spec.radix > 0 && f.switch_radix > f.switch_spec.radix)
    design.notes.push_back("switch_radix " + std::to_string(f.switch_radix) + " exceeds the " +
                           std::to_string(f.switch_spec.radix) + " ports of " + f.switch_spec.id);
  if (in.links > leaf_port_split(in.radix, in.oversubscription).down &&
      f.topology != TopologyKind::kSingleSwitch && f.leaves == 0)
    return Error{
        where(scenario, "cluster.node.links_per_nic") + std::to_string(in.links) +
        " bonded links of one NIC exceed the " +
        std::to_string(leaf_port_split(in.radix, in.oversubscription).down) + " NIC ports of a " +
        std::to_string(in.radix) + "-port leaf at " + ratio(in.oversubscription) + ": short by " +
        std::to_string(in.links - leaf_port_split(in.radix, in.oversubscription).down) + " ports"};

  models::Result<FabricDesign> out = Error{""};
  switch (f.topology) {
    case TopologyKind::kSingleSwitch:
      out = design_single_switch(in, std::move(design), scenario);
      break;
    case TopologyKind::kLeafSpine:
      if (f.leaves > 0 || f.spines > 0) {
        out = design_leaf_spine(in, f, std::move(design), scenario);
        break;
      }
      out = design_clos(in, 2, false, std::move(design), scenario);
      break;
    case TopologyKind::kFatTree:
    case TopologyKind::kRailOptimized:
      if (f.tiers != 2 && f.tiers != 3)
        return Error{where(scenario, "cluster.fabric.tiers") + std::to_string(f.tiers) +
                     " tiers: 2 or 3 are supported"};
      out = design_clos(in, f.tiers, f.topology == TopologyKind::kRailOptimized, std::move(design),
                        scenario);
      break;
  }
  if (!out.ok()) return out;
  FabricDesign& d = out.value();
  if (d.plane.tiers >= 2)
    d.leaf_oversubscription =
        d.plane.downlinks_per_leaf * d.nic_link_Bps / (d.plane.uplinks_per_leaf * d.port_Bps);
  return out;
}

}  // namespace clustersim::topology
