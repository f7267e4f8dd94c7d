// SimGrid is used here and nowhere else in the program (with fabric-independent data in and out).
// See sim_engine.h for the measurements behind the design.
#include "sim/sim_engine.h"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace clustersim::sim {
namespace {

namespace sg4 = simgrid::s4u;
using simgrid::kernel::resource::StandardLinkImpl;
using simgrid::kernel::routing::NetPoint;

// Compute hosts run at 1e9 "flop" per second, so an Exec of t seconds is t x 1e9 flops; SimGrid
// resolves time to surf/precision (1 ns) anyway.
constexpr double kComputeSpeed = 1e9;

// Routes come from the flows themselves: before a worker starts a flow it queues the flow's
// route under its proxy host; SimGrid asks for the route of (proxy, proxy) when the flow starts.
class FlowZone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  explicit FlowZone(const std::string& name) : NetZoneImpl(name) {}

  void set_links(std::vector<StandardLinkImpl*> links) { links_ = std::move(links); }
  void expect(const NetPoint* proxy, const SimFlow* flow) {
    if (proxy->id() >= pending_.size()) pending_.resize(proxy->id() + 1);
    pending_[proxy->id()].push_back(flow);
  }

  void get_local_route(const NetPoint* src, const NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* /*latency*/) override {
    CS_ASSERT(src == dst && src->id() < pending_.size() && !pending_[src->id()].empty(),
              "a flow started without a route queued for its worker");
    const SimFlow* flow = pending_[src->id()].front();
    pending_[src->id()].pop_front();
    for (int r : flow->route) into->link_list_.push_back(links_[r]);
  }

 private:
  std::vector<StandardLinkImpl*> links_;  // by resource id; nullptr for unused resources
  std::vector<std::deque<const SimFlow*>> pending_;
};

// A slice of a task for one worker: a compute, or flows [first, first + count) of a transfer.
struct Part {
  int task = -1;
  int first = 0;
  int count = 0;
};

class Runtime;

struct Worker {
  sg4::Host* proxy = nullptr;
  sg4::Mailbox* mailbox = nullptr;
  sg4::SemaphorePtr wake;
  Part part;
};

class Runtime {
 public:
  Runtime(const TaskGraph& g, const EngineOptions& o, FlowZone* zone,
          std::vector<sg4::Host*> compute, std::vector<sg4::Host*> proxies)
      : g_(g), o_(o), zone_(zone), compute_(std::move(compute)), proxies_(std::move(proxies)) {
    deps_.resize(g.tasks().size());
    parts_left_.resize(g.tasks().size());
    spans_.resize(g.tasks().size());
    for (size_t i = 0; i < g.tasks().size(); ++i) {
      deps_[i] = g.tasks()[i].dependencies;
      if (!g.tasks()[i].background) ++tasks_left_;
    }
    finished_ = sg4::Semaphore::create(0);
  }

  // The main actor: starts the roots, waits for the last task. Workers are daemons: SimGrid
  // ends them when this returns.
  void main() {
    t0_ = sg4::Engine::get_clock();
    if (tasks_left_ == 0) return;
    for (int t = 0; t < g_.size(); ++t) {
      if (deps_[t] == 0) start_task(t);
    }
    finished_->acquire();
    // Background traffic still running ends with the run: cancelled, so that SimGrid does not
    // complain about communications destroyed while running.
    for (int t = 0; t < g_.size(); ++t) {
      if (g_.tasks()[t].background) spans_[t].end_s = now();
    }
    for (sg4::CommPtr& c : background_) {
      try {
        if (!c->test()) c->cancel();
      } catch (const std::exception&) {  // its pair was cancelled first
      }
    }
  }

  std::vector<TaskSpan> take_spans() { return std::move(spans_); }
  int workers() const { return static_cast<int>(workers_.size()); }

 private:
  double now() const { return sg4::Engine::get_clock() - t0_; }

  void start_task(int t) {
    const SimTask& task = g_.tasks()[t];
    spans_[t].start_s = now();
    if (task.kind == TaskKind::kCompute || task.flows.empty()) {
      parts_left_[t] = 1;
      assign({t, 0, 0});
      return;
    }
    const int n = static_cast<int>(task.flows.size());
    const int per = std::max(1, o_.flows_per_worker);
    parts_left_[t] = (n + per - 1) / per;
    for (int first = 0; first < n; first += per) assign({t, first, std::min(per, n - first)});
  }

  void assign(Part p) {
    if (!idle_.empty()) {
      Worker* w = idle_.back();
      idle_.pop_back();
      w->part = p;
      w->wake->release();
    } else if (workers_.size() < proxies_.size()) {
      spawn(p);
    } else {
      backlog_.push_back(p);
    }
  }

  void spawn(Part p) {
    const size_t i = workers_.size();
    auto w = std::make_unique<Worker>();
    w->proxy = proxies_[i];
    w->mailbox = sg4::Mailbox::by_name("w" + std::to_string(i));
    w->wake = sg4::Semaphore::create(1);  // the first part is handed over with the worker
    w->part = p;
    Worker* raw = w.get();
    workers_.push_back(std::move(w));
    sg4::Actor::create("w" + std::to_string(i), raw->proxy, [this, raw] { worker_loop(raw); })
        ->daemonize();
  }

  void worker_loop(Worker* w) {
    std::vector<sg4::CommPtr> comms;
    std::vector<int*> landed;
    for (;;) {
      w->wake->acquire();
      run_part(*w, comms, landed);
      part_done(w);
    }
  }

  void run_part(Worker& w, std::vector<sg4::CommPtr>& comms, std::vector<int*>& landed) {
    static int payload = 0;  // SimGrid aborts a comm with a null payload pointer
    const SimTask& task = g_.tasks()[w.part.task];
    if (task.kind == TaskKind::kCompute) {
      if (task.seconds > 0) {
        sg4::this_actor::exec_init(task.seconds * kComputeSpeed)->set_host(compute_[task.host])->wait();
      }
      return;
    }
    if (task.latency_s > 0) sg4::this_actor::sleep_for(task.latency_s);
    comms.clear();
    landed.assign(static_cast<size_t>(w.part.count), nullptr);
    for (int k = 0; k < w.part.count; ++k) {
      const SimFlow& f = task.flows[w.part.first + k];
      const auto bytes = static_cast<uint64_t>(std::llround(f.bytes));
      if (bytes == 0) continue;
      // Where the receive writes the payload pointer: background receives outlive this part.
      int** slot = task.background ? &background_slots_.emplace_back(nullptr) : &landed[k];
      zone_->expect(w.proxy->get_netpoint(), &f);
      comms.push_back(w.mailbox->get_async<int>(slot));
      sg4::CommPtr put = w.mailbox->put_init(&payload, bytes);
      if (f.max_rate_Bps > 0) put->set_rate(f.max_rate_Bps);
      put->start();
      comms.push_back(put);
    }
    if (task.background) {  // never waited for: main() cancels what still runs at the end
      background_.insert(background_.end(), comms.begin(), comms.end());
      comms.clear();
      return;
    }
    sg4::Comm::wait_all(comms);
    comms.clear();
  }

  void part_done(Worker* w) {
    const int t = w->part.task;
    if (g_.tasks()[t].background) {
      // Keeps its flows going; the worker is free again (background_ holds the comms).
    } else if (--parts_left_[t] == 0) {
      spans_[t].end_s = now();
      if (!g_.tasks()[t].background) --tasks_left_;
      for (int s : g_.tasks()[t].successors) {
        if (--deps_[s] == 0) start_task(s);
      }
      if (tasks_left_ == 0 && !g_.tasks()[t].background) finished_->release();
    }
    if (!backlog_.empty()) {
      w->part = backlog_.front();
      backlog_.pop_front();
      w->wake->release();
    } else {
      idle_.push_back(w);
    }
  }

  const TaskGraph& g_;
  const EngineOptions& o_;
  FlowZone* zone_;
  std::vector<sg4::Host*> compute_;
  std::vector<sg4::Host*> proxies_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_;
  std::deque<Part> backlog_;
  std::vector<int> deps_;
  std::vector<int> parts_left_;
  std::vector<TaskSpan> spans_;
  std::vector<sg4::CommPtr> background_;
  std::deque<int*> background_slots_;  // stable addresses for background receives
  int tasks_left_ = 0;
  double t0_ = 0;
  sg4::SemaphorePtr finished_;
};

// SimGrid accepts its configuration once per process (see sim_engine.h).
void configure_once() {
  static bool configured = false;
  if (configured) return;
  configured = true;
  xbt_log_control_set("root.thresh:critical");
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:1e30");
  sg4::Engine::set_config("contexts/stack-size:256");
}

models::Status check_graph(const TaskGraph& graph, const ResourceTable& table) {
  const int n = static_cast<int>(table.resources.size());
  for (const SimTask& t : graph.tasks()) {
    for (const SimFlow& f : t.flows) {
      for (int r : f.route) {
        if (r < 0 || r >= n) return models::Error{"flow references resource " + std::to_string(r) +
                                                  " of " + std::to_string(n)};
        if (!(table.resources[r].capacity_Bps > 0)) {
          return models::Error{"resource " + table.resources[r].name + " has no capacity"};
        }
      }
    }
  }
  return models::Status::Ok();
}

models::Result<RunStats> run_in_engine(const TaskGraph& graph, const ResourceTable& table,
                                       const EngineOptions& options) {
  int argc = 1;
  char name[] = "clustersim";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_once();

  // 1. Platform: the resources that some flow uses, compute hosts, worker proxy hosts.
  auto* zone = new FlowZone("clustersim");  // the root zone; the engine owns and frees it
  std::vector<bool> used(table.resources.size(), false);
  for (const SimTask& t : graph.tasks())
    for (const SimFlow& f : t.flows)
      for (int r : f.route) used[r] = true;
  std::vector<StandardLinkImpl*> links(table.resources.size(), nullptr);
  for (size_t r = 0; r < table.resources.size(); ++r) {
    if (!used[r]) continue;
    const NetResource& res = table.resources[r];
    sg4::Link* link = zone->create_link("r" + std::to_string(r), {res.capacity_Bps});
    if (res.shared_efficiency < 1.0) {
      // (the table outlives this run's engine)
      link->set_sharing_policy(
          sg4::Link::SharingPolicy::NONLINEAR,
          [r = &res](double capacity, int flows) { return capacity * r->usable_share(flows); });
    }
    links[r] = link->get_impl();
  }
  zone->set_links(std::move(links));
  std::vector<sg4::Host*> compute;
  for (int h = 0; h < graph.compute_hosts(); ++h)
    compute.push_back(zone->create_host("gpu" + std::to_string(h), {kComputeSpeed}));
  size_t parts = 0;
  const size_t per = static_cast<size_t>(std::max(1, options.flows_per_worker));
  for (const SimTask& t : graph.tasks()) parts += std::max<size_t>(1, (t.flows.size() + per - 1) / per);
  const size_t pool = std::min(parts, static_cast<size_t>(std::max(1, options.max_workers)));
  std::vector<sg4::Host*> proxies;
  for (size_t i = 0; i < pool; ++i)
    proxies.push_back(zone->create_host("proxy" + std::to_string(i), {kComputeSpeed}));
  sg4::Host* main_host = zone->create_host("main", {kComputeSpeed});
  zone->seal();

  // 2. Run: one main actor starts the roots; workers carry the tasks.
  Runtime rt(graph, options, zone, std::move(compute), std::move(proxies));
  sg4::Actor::create("main", main_host, [&rt] { rt.main(); });
  engine.run();

  RunStats stats;
  stats.spans = rt.take_spans();
  for (int t = 0; t < graph.size(); ++t) {
    if (!graph.tasks()[t].background) stats.makespan_s = std::max(stats.makespan_s, stats.spans[t].end_s);
  }
  stats.flows = graph.flow_count();
  stats.workers = rt.workers();
  return stats;
}

}  // namespace

models::Result<RunStats> run_task_graph(const TaskGraph& graph, const ResourceTable& table,
                                        const EngineOptions& options) {
  if (auto s = check_graph(graph, table); !s) return models::Error{s.message()};
  if (graph.size() == 0) return RunStats{};
  const auto wall0 = std::chrono::steady_clock::now();
  try {
    auto out = run_in_engine(graph, table, options);
    if (out) {
      out->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    }
    return out;
  } catch (const std::exception& e) {
    return models::Error{std::string("SimGrid: ") + e.what()};
  }
}

}  // namespace clustersim::sim
