#include "sim/task_graph.h"

#include "models/result.h"

namespace clustersim::sim {

std::string_view to_string(ResourceTier tier) {
  switch (tier) {
    case ResourceTier::kScaleUp: return "scale-up";
    case ResourceTier::kPcie: return "pcie";
    case ResourceTier::kNic: return "nic";
    case ResourceTier::kLeafSpine: return "leaf-spine";
    case ResourceTier::kSpineCore: return "spine-core";
    case ResourceTier::kInNetwork: return "in-network";
    case ResourceTier::kBackground: return "background";
  }
  return "?";
}

int TaskGraph::add_compute(int host, double seconds) {
  CS_ASSERT(host >= 0 && host < compute_hosts_, "compute host out of range");
  CS_ASSERT(seconds >= 0, "negative compute time");
  SimTask t;
  t.kind = TaskKind::kCompute;
  t.host = host;
  t.seconds = seconds;
  tasks_.push_back(std::move(t));
  return size() - 1;
}

int TaskGraph::add_transfer(double latency_s, std::vector<SimFlow> flows) {
  CS_ASSERT(latency_s >= 0, "negative latency");
  SimTask t;
  t.kind = TaskKind::kTransfer;
  t.latency_s = latency_s;
  t.flows = std::move(flows);
  for (const SimFlow& f : t.flows) {
    CS_ASSERT(f.bytes >= 0 && !f.route.empty(), "a flow needs a route and bytes >= 0");
  }
  tasks_.push_back(std::move(t));
  return size() - 1;
}

int TaskGraph::add_background(std::vector<SimFlow> flows) {
  const int id = add_transfer(0, std::move(flows));
  tasks_[id].background = true;
  return id;
}

void TaskGraph::depend(int before, int after) {
  CS_ASSERT(before >= 0 && before < after && after < size(), "dependency must point forward");
  CS_ASSERT(!tasks_[before].background && !tasks_[after].background,
            "background traffic takes no dependencies");
  tasks_[before].successors.push_back(after);
  ++tasks_[after].dependencies;
}

size_t TaskGraph::flow_count() const {
  size_t n = 0;
  for (const SimTask& t : tasks_) n += t.flows.size();
  return n;
}

}  // namespace clustersim::sim
