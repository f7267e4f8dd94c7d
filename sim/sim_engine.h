// Runs a TaskGraph on SimGrid 3.32: every NetResource becomes a zero-latency CM02 link, every
// flow a SimGrid communication over exactly the route the caller lowered, every compute task an
// Exec on a GPU host. Results are simulated seconds. Not thread-safe: SimGrid's engine is a
// process-wide singleton, so runs are sequential (one engine is created and destroyed per run).
//
// What was measured about SimGrid 3.32 on this machine and shaped this file:
//  - CM02 with zero-latency links shares a link equally among its flows (with latency it
//    weights flows by 1/latency, TCP-like); latencies are added by the callers as explicit
//    delays, crosstraffic is off (RDMA has no reverse ACK stream), TCP-gamma is irrelevant
//    without link latency (the TCP window, where modelled, is a per-flow rate cap).
//  - Comm::sendto (host-to-host) always detaches the communication into one engine-wide list
//    that every completion scans: 16,384 concurrent flows took 74 s for five phases. Mailbox
//    communications sit in their issuing actor's list instead, so flows here are carried by
//    worker actors, each issuing at most EngineOptions::flows_per_worker of them (16-32 was
//    fastest: 1.6 s for 82 K flows at 16 K concurrency; 1 per actor costs memory, 128 per actor
//    makes each actor's list scan quadratic).
//  - A mailbox communication runs from the sender's host to the receiver's host. Each worker
//    owns a proxy host and receives its own sends, and the custom routing zone hands out the
//    route the caller lowered for that flow (a FIFO per proxy host: a worker starts its flows
//    one after another, and SimGrid resolves the route when each starts). So routes are free of
//    SimGrid's zone machinery: per-flow ECMP paths, bundles, in-network reduction points.
//  - A new s4u::Engine can be created after the previous one is destroyed if the configuration
//    is set only once (set_config on the second engine aborts: "Cannot change the model after
//    the initialization"); the configuration persists; the clock does not restart, so runs
//    measure from their own start. RSS stayed flat over 60 sequential engines.
//  - Link::SharingPolicy::NONLINEAR takes a callback (capacity, active flows) -> capacity: it
//    expresses a capacity that drops when flows collide (NetResource::shared_efficiency).
#pragma once

#include "models/result.h"
#include "sim/task_graph.h"

namespace clustersim::sim {

struct EngineOptions {
  // Flows one worker actor starts and waits for together (see above: 16-32 measured best).
  int flows_per_worker = 32;
  // Upper bound on worker actors (and their proxy hosts). When more parts of tasks are ready
  // than workers exist, the surplus waits for a free worker, which delays them: the default is
  // far above what any graph built here keeps in flight; RunStats::workers reports the peak.
  int max_workers = 8192;
};

// Simulates the graph. `table` holds every resource a flow references. Fails (never aborts)
// when a flow references an unknown resource, a resource has no capacity, or SimGrid throws.
models::Result<RunStats> run_task_graph(const TaskGraph& graph, const ResourceTable& table,
                                        const EngineOptions& options = {});

}  // namespace clustersim::sim
