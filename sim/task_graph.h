// What the discrete-event engine runs: a graph of tasks (compute on a GPU, transfers made of
// flows over shared network resources, pure delays) with dependencies, and the resources the
// flows share. Plain data, no SimGrid types: sim_engine.h turns it into a SimGrid simulation.
// Units: seconds, bytes, bytes per second (per direction). The graph owns its tasks; resource
// ids index a ResourceTable that the caller owns and that must outlive the run.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::sim {

// Where a resource sits, for utilisation reports per tier.
enum class ResourceTier {
  kScaleUp,    // a GPU's NVLink port (one direction) or the scale-up PCIe link
  kPcie,       // GPU or NIC to PCIe switch, switch to host bridge
  kNic,        // NIC to leaf cable (one direction, bonded links together)
  kLeafSpine,  // leaf to spine (a cable, or under adaptive routing a leaf's bundle of them)
  kSpineCore,  // spine to core (a cable, or under adaptive routing a pod's bundle of them)
  kInNetwork,  // the SHARP aggregation tree above the leaves
  kBackground  // a resource that only interference traffic uses
};
std::string_view to_string(ResourceTier tier);

// One direction of a link (or a bundle of parallel links) that flows share max-min fairly.
// When more than congestion_flows flows cross it (more demand than it carries: incast on a
// switch port, an ECMP collision, an overloaded bundle), its usable capacity drops to
// capacity_Bps x shared_efficiency: the congestion-control loss of RoCE (DCQCN) and TCP
// (transport_model.h); 1 for InfiniBand's credit-based flow control, NVLink and PCIe.
struct NetResource {
  std::string name;  // "n3.nic5>p0.leaf2" (graph vertex names) for reports
  ResourceTier tier = ResourceTier::kNic;
  double capacity_Bps = 0;
  double shared_efficiency = 1.0;
  int congestion_flows = 1;
  // The share of its capacity the resource carries while `flows` distinct flows cross it.
  double usable_share(int flows) const {
    return flows > std::max(1, congestion_flows) ? shared_efficiency : 1.0;
  }
};

// The resources of one platform, appended to as routes are lowered (fabric_model.h).
struct ResourceTable {
  std::vector<NetResource> resources;
  int add(NetResource r) {
    resources.push_back(std::move(r));
    return static_cast<int>(resources.size()) - 1;
  }
};

// Bytes moved along a route of resource ids at the max-min fair share of every resource on it,
// at most max_rate_Bps (0: no cap). A resource listed k times carries the flow k times (a
// route that crosses the same cable twice, as a ring edge pair through one leaf uplink can).
struct SimFlow {
  std::vector<int> route;
  double bytes = 0;
  double max_rate_Bps = 0;
};

enum class TaskKind {
  kCompute,   // `seconds` of work on compute host `host` (a GPU of the simulated rank class)
  kTransfer,  // wait latency_s, then move all flows concurrently; ends when the last arrives
};

struct SimTask {
  TaskKind kind = TaskKind::kCompute;
  int host = -1;         // kCompute: 0 .. TaskGraph::compute_hosts - 1
  double seconds = 0;    // kCompute: duration at full speed (two computes on one host share it)
  double latency_s = 0;  // kTransfer: the alpha term, paid before the flows start
  std::vector<SimFlow> flows;  // kTransfer: may be empty (a pure delay)
  std::vector<int> successors;
  int dependencies = 0;  // number of tasks that list this one as a successor
  // Background traffic (another job, storage): starts with the run, shares the resources, and
  // the run ends without waiting for it (its span ends at the run's end if still going).
  bool background = false;
};

// A DAG of tasks. Tasks start as soon as all their dependencies have ended; nothing else
// orders them (streams are expressed as dependencies by the caller).
class TaskGraph {
 public:
  explicit TaskGraph(int compute_hosts = 0) : compute_hosts_(compute_hosts) {}

  int add_compute(int host, double seconds);
  int add_transfer(double latency_s, std::vector<SimFlow> flows);
  int add_delay(double seconds) { return add_transfer(seconds, {}); }
  // Flows that run from the start until the last ordinary task ends (see SimTask::background).
  // Background tasks take no dependencies.
  int add_background(std::vector<SimFlow> flows);
  // `after` starts only once `before` has ended. REQUIRES: before < after (ids are creation
  // order, which keeps the graph acyclic by construction).
  void depend(int before, int after);

  int compute_hosts() const { return compute_hosts_; }
  int add_compute_host() { return compute_hosts_++; }
  const std::vector<SimTask>& tasks() const { return tasks_; }
  // Moves a task's flows out (the task keeps none): to keep them after a run without a copy.
  std::vector<SimFlow> take_flows(int task) { return std::move(tasks_.at(static_cast<size_t>(task)).flows); }
  int size() const { return static_cast<int>(tasks_.size()); }
  size_t flow_count() const;

 private:
  int compute_hosts_ = 0;
  std::vector<SimTask> tasks_;
};

// When each task ran, in simulated seconds from the start of the run.
struct TaskSpan {
  double start_s = 0;  // all dependencies ended (a transfer's latency starts here)
  double end_s = 0;
};

struct RunStats {
  double makespan_s = 0;        // last ordinary (not background) task end
  std::vector<TaskSpan> spans;  // one per task, in task order
  size_t flows = 0;             // flows simulated
  int workers = 0;              // SimGrid actors that carried the tasks
  double wall_s = 0;            // host time spent in the run
};

}  // namespace clustersim::sim
