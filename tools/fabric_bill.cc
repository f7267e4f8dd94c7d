#include "tools/fabric_bill.h"

#include "topology/cluster_graph.h"
#include "topology/fabric_metrics.h"

namespace clustersim::tools {

CountedFabric count_fabric(const models::Scenario& scenario) {
  CountedFabric out;
  const models::ClusterConfig& c = scenario.cluster;
  models::FabricBill& b = out.bill;
  b.nics = c.nodes * c.node.nics_per_node;
  b.nic_ports = b.nics * c.node.links_per_nic;
  b.nic_port_Gbps = c.node.nic.line_rate_Bps * 8 / 1e9;
  if (b.nics == 0 || c.nodes < 2) return out;  // no fabric to buy beyond the NICs
  auto graph = topology::ClusterGraph::build(c, &scenario);
  if (!graph.ok()) {
    out.problem = graph.message();
    return out;
  }
  const topology::FabricMetrics m = topology::count_hardware(graph.value());
  b.switches = m.switches;
  b.switch_port_Gbps = graph->design().port_Bps * 8 / 1e9;
  for (std::size_t i = 0; i < m.tiers.size(); ++i) {
    (i == 0 ? b.nic_cables : b.switch_cables) += m.tiers[i].downlinks;
  }
  b.nic_ports = b.nic_cables;  // a bonded link is a port and a cable of its own
  return out;
}

}  // namespace clustersim::tools
