// Alpha-beta model of one NCCL collective, as NCCL's own tuner (src/graph/tuning.cc) models it:
// time_s = latency(algorithm, protocol) + bytes / bandwidth(algorithm, protocol), the cheapest
// enabled pair winning when the caller asks for "auto". Latency constants are NCCL's; bandwidths
// come from the links (NVLink/PCIe per GPU, NICs per node) and the bytes each algorithm moves
// over them, with NCCL's protocol factors. Units: bytes, seconds, bytes per second per direction.
// Pure functions over plain structs; thread-safe; nothing is owned or cached.
#pragma once

#include <array>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::models {

enum class CollectiveOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kSendRecv
};

// kAuto: the cheapest supported pair, as NCCL chooses. kNvls on one node is NVLink SHARP; on
// several nodes it is NCCL's NVLS-Tree (NVLS inside each node, a tree across nodes). kCollNet
// is in-network reduction (SHARP) across nodes, with NVLS inside the node where the switch
// reduces, CollNet-Direct's NVLink exchange otherwise. kHierarchical is the textbook two-level
// algorithm (NVLink reduce-scatter, one ring per rail across nodes, NVLink all-gather) run as
// three sequential phases; NCCL does not run it, so kAuto never picks it. kP2p is the grouped
// send/recv that NCCL runs for alltoall and sendrecv (they have no algorithm choice).
enum class CollectiveAlgorithm { kAuto, kRing, kTree, kNvls, kCollNet, kHierarchical, kP2p };
enum class CollectiveProtocol { kAuto, kLL, kLL128, kSimple };
// What sets a collective's bandwidth term: the scale-up links (NVLink/PCIe inside the node), the
// NICs, the copy work of NCCL's channels on the GPU (its thread blocks' loads and stores), a
// calibration fit that replaced the model, or nothing (zero bytes).
enum class CollectiveBottleneck { kNone, kScaleUp, kNetwork, kCalibrated, kChannels };

// Names as nccl-tests spells its programs ("all_reduce", "all_gather", "reduce_scatter",
// "alltoall", "broadcast", "reduce", "sendrecv"); algorithms "auto", "ring", "tree", "nvls",
// "collnet", "hierarchical", "p2p"; protocols "auto", "ll", "ll128", "simple".
std::string_view to_string(CollectiveOp op);
std::string_view to_string(CollectiveAlgorithm a);
std::string_view to_string(CollectiveProtocol p);
std::string_view to_string(CollectiveBottleneck b);
// Parse the names above (case-insensitive; "allreduce", "all_to_all", "sharp" also accepted).
// Return false for an unknown name and leave *out unchanged.
bool parse_collective_op(std::string_view name, CollectiveOp* out);
// The collectives' own names, comma-separated, for error messages ("all_reduce, ..., sendrecv").
std::string collective_op_names();
// "auto, ring, tree, nvls, collnet, hierarchical, p2p": the algorithm names, for messages.
std::string collective_algorithm_names();
bool parse_collective_algorithm(std::string_view name, CollectiveAlgorithm* out);
bool parse_collective_protocol(std::string_view name, CollectiveProtocol* out);

// nccl-tests' busbw / algbw factor (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather,
// reduce_scatter, alltoall (n-1)/n; broadcast, reduce, sendrecv 1. REQUIRES: ranks >= 1.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

// What one communicator sees of the cluster. Derived from a scenario by the functions below, or
// built by hand in tests. Bandwidths are raw (datasheet) where marked; the model applies the
// efficiencies in CollectiveParams.
struct CollectiveTopology {
  int ranks = 1;           // GPUs in the communicator
  int ranks_per_node = 1;  // the most ranks of this communicator on one node
  int nodes = 1;           // nodes the communicator spans
  std::string gpu_arch;    // "sm_90": selects NCCL's per-architecture constants
  LinkTechnology scale_up_technology = LinkTechnology::kNvlink;  // kNvlink or kPcie
  double scale_up_Bps = 0;        // per GPU per direction, raw (450e9 for 18 NVLink4 links)
  bool switch_reduction = false;  // NVLink SHARP (NVLS) in the node's switch
  // Per node per direction, achievable: NICs x links x line rate x protocol efficiency, each NIC
  // capped at one PCIe x16 link, divided among the communicators of the same kind that run on
  // the node at the same time (eight DP groups, one per rail, share a node's eight NICs).
  double node_network_Bps = 0;
  double nic_Bps = 0;  // one NIC, achievable: the ceiling of a single flow (sendrecv)
  int nics_per_node = 0;  // the node's NICs (0: not known; NVLS-Tree runs one head per NIC)
  // One inter-node hop for a small message: NIC to NIC through the switches between the nodes.
  double network_latency_s = 0;
  bool in_network_reduction = false;  // SHARP on the fabric and the NICs
};

// One communicator over the first `ranks` GPUs of the cluster, filling nodes of
// gpus_per_node in order (as `mpirun -np N` over whole nodes does); only this communicator runs.
// Fails when ranks < 1, ranks exceeds the cluster, or a multi-node group has no NIC.
Result<CollectiveTopology> collective_topology(const ClusterConfig& cluster, int ranks);

// One of the parallel groups of a training job: `group_size` ranks whose global ranks are
// `stride` apart (global rank r sits on node r / gpus_per_node), while every sibling group of the
// same dimension runs at the same time and shares the nodes' NICs. TP (stride 1), DP (stride
// tp * cp), PP (stride tp * cp * dp) groups follow from the rank order. Fails like the above.
Result<CollectiveTopology> parallel_group_topology(const ClusterConfig& cluster, int group_size,
                                                   int stride);

// A calibration fit for one (op, algorithm, protocol) and, optionally, one communicator size:
// time_s = latency_s + size_bytes * bus_bandwidth_factor(op, n) / busbw_Bps. It replaces the
// model's two terms where it matches (calibrate fits it to nccl-tests-style measurements).
// algorithm and protocol kAuto: measured under NCCL's own choice (nccl-tests with no NCCL_ALGO /
// NCCL_PROTO), so the fit stands for whatever NCCL ran and replaces every candidate alike. A
// size range [min_size_bytes, max_size_bytes) makes a piecewise fit: one regime of the sizes
// (NCCL changes protocol, algorithm and channel count with the size).
struct CollectiveFit {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // kAuto: any
  CollectiveProtocol protocol = CollectiveProtocol::kSimple;   // kAuto: any
  int ranks = 0;                                               // 0: any communicator size
  double latency_s = 0;
  double busbw_Bps = 0;       // > 0
  int nodes = 0;              // 0: any number of nodes the communicator spans
  double min_size_bytes = 0;  // the fit applies to min_size_bytes <= size < max_size_bytes
  double max_size_bytes = std::numeric_limits<double>::infinity();
};

// A transferable correction of the model for one op, fitted by calibrate over every measured
// communicator of one scope (one node, or several): a fixed extra latency per call (launch and
// synchronisation that NCCL's tuner does not count) and a factor on the rate of the bandwidth
// term (what the links really reach for this op). Unlike a CollectiveFit it is a property of
// the hardware, not of one communicator size, so it applies to sizes that were not measured;
// where a CollectiveFit matches, the fit wins. Applied to every candidate (algorithm, protocol)
// before the cheapest is chosen.
struct CollectiveCorrection {
  CollectiveOp op = CollectiveOp::kAllReduce;
  bool multi_node = false;     // applies to communicators spanning several nodes, else one
  double extra_latency_s = 0;  // added to the latency (the sum floored at 0)
  double bandwidth_scale = 1;  // the bandwidth term is divided by it; > 0
  // Algorithms the measured runs had switched off (NCCL_NVLS_ENABLE=0): they get the extra
  // latency (a per-call cost, whatever the algorithm) but keep the model's bandwidth, which the
  // runs said nothing about (NVLS's rate is the switch's, not the links' copy rate).
  std::vector<CollectiveAlgorithm> excluded;
};

// `c` applied to one candidate's terms, in place: the latency plus the extra, floored at 0; the
// bandwidth term over the scale unless `algorithm` is one the correction excludes. The one
// formula both the estimate and calibrate's fit of the correction use.
void apply_correction(const CollectiveCorrection& c, CollectiveAlgorithm algorithm,
                      double* latency_s, double* bandwidth_s);

// The NCCL algorithms this model runs, in the order of NCCL's tuning tables (CollNet-Chain and
// PAT left out); the rows of the latency tables below.
enum class NcclAlgo { kTree, kRing, kCollNetDirect, kNvls, kNvlsTree };
inline constexpr int kNcclAlgos = 5;
inline constexpr int kNcclProtocols = 3;  // LL, LL128, Simple
enum class NcclHardware { kNvlink, kPcie, kNetwork };
using NcclLatencyTable = std::array<std::array<double, kNcclProtocols>, kNcclAlgos>;

// Every constant of the model, with NCCL's defaults (NVIDIA/nccl src/graph/tuning.cc and
// topo.h, 2.2x) or the measurement it was derived from.
// Calibration copies this, changes fields and appends fits; the defaults never change.
struct CollectiveParams {
  // Base latency per NCCL algorithm x protocol, seconds (tuning.cc baseLatencies).
  // clang-format off
  NcclLatencyTable base_latency_s = {{{6.8e-6, 14.0e-6, 8.4e-6},  // tree
                                      {6.6e-6, 14.0e-6, 8.4e-6},  // ring
                                      {0, 0, 0},                  // collnet direct
                                      {0, 0, 0},                  // nvls
                                      {0, 0, 0}}};                // nvls tree
  // Latency per hop class (NVLink, PCIe, network) x algorithm x protocol (tuning.cc
  // hwLatencies). NCCL's network figures assume an InfiniBand-class hop.
  std::array<NcclLatencyTable, 3> hw_latency_s = {{
      // tree                     ring                       collnet direct  nvls
      // nvls tree
      {{{0.6e-6, 1.25e-6, 4.0e-6}, {0.6e-6, 1.9e-6, 3.4e-6}, {0, 0, 3.7e-6}, {0, 0, 25e-6},
        {0, 0, 25e-6}}},  // NVLink
      {{{1.0e-6, 1.9e-6, 4.0e-6}, {1.0e-6, 2.5e-6, 5.7e-6}, {0, 0, 3.7e-6}, {0, 0, 0},
        {0, 0, 0}}},  // PCIe
      {{{5.0e-6, 8.5e-6, 14e-6}, {2.7e-6, 4.0e-6, 14e-6}, {0, 0, 31e-6}, {0, 0, 18e-6},
        {0, 0, 20.9e-6}}},  // network
  }};
  // clang-format on
  // A multi-node ring step costs at least this on the GPU side (tuning.cc getNetOverhead, x86
  // Intel host: 1 us; x3 for Simple).
  double net_overhead_s = 1.0e-6;
  // NCCL adds the network plugin's latency (0 for InfiniBand) to each inter-node step, twice
  // for Simple (the flush). Here: the part of topology.network_latency_s above this reference,
  // an InfiniBand NIC-to-NIC hop through up to three switches (~1 us ib_write_lat through one
  // switch, catalog ib-*, plus two switch hops of 130-200 ns, quantum switch briefs).
  double reference_network_latency_s = 1.5e-6;
  // Achievable fraction of the raw scale-up bandwidth. 0 = NCCL's per-architecture figure:
  // NVLink SM80 20.0 of 25 GB/s per link = 0.80, SM90 20.6/25 = 0.824, SM100 40.1/50 = 0.802
  // (topo.h SM*_NVLINK_BW); PCIe 12 GB/s of Gen3 x16's 15.75 = 0.762 (topo.h PCI_BW).
  double scale_up_efficiency = 0;
  // NVLS all_reduce moves S(1+1/g) through each GPU's NVLink in each direction (the switch
  // reads the g shards for multimem.ld_reduce and writes g copies for multimem.st). One node
  // of 8 x H100 measures busbw 480 GB/s (nccl-tests #212/#290/#347): 480 = B * eff * 2(g-1)/(g+1)
  // with B = 18 x 20.6 = 370.8 GB/s gives eff = 480 / (370.8 * 14/9) = 0.832 (NCCL's own Hopper
  // nvlsEfficiency is 0.85, applied to the same bandwidth).
  double nvls_efficiency = 0.832;
  // NVLS all_reduce, on one node and as NVLS-Tree across nodes, is a pipeline that NCCL's tuner
  // does not count. Each of the NVLS channels (16 on Hopper, 32 on Blackwell: nvls.cc
  // nvlsChannels) handles one chunk for every head per loop, the heads being the node's GPUs on
  // one node and one GPU per NIC across nodes (graph/search.cc, connect.cc connectNvls): a loop
  // is channels x heads x chunk. The reduce and the broadcast stage each hand a whole chunk on
  // (a Simple step is one chunk outside rings: chunkSteps = sliceSteps = 1), so a call ends
  // nvls_pipeline_loops loops after its bytes' time at its rate. NCCL's chunk (enqueue.cc
  // calcCollChunking, concurrentOps = channels x heads): NVLS 128 KiB, 64, 32, 16 KiB under 64,
  // 8, 2 loops of the larger one; NVLS-Tree 128 KiB (64 KiB from 4 nodes, nvls.cc
  // treeMaxChunkSize), 64 and 32 KiB under 4 and 1 loops of the larger one. Measured: two nodes
  // of 8 x H100 over InfiniBand (Nebius, public/h100-2node-ib-all_reduce.txt) run 2.0-2.2 loops
  // beyond NCCL's latency and their bytes at 246 GB/s from 16 to 256 MiB (70 us, doubling to
  // 137 us where NCCL doubles the chunk at 64 MiB), 1.6 loops at 4 and 8 MiB (one loop in all).
  // On one node the same two loops take 8 x H100's all_reduce (together-nccl-tests) from 4.6 to
  // 3.3% median |error| (the 8 chunks at one channel's share it replaces had been fitted there).
  double nvls_pipeline_loops = 2;
  // NVLS-Tree (NVLS inside the node, a tree across nodes) runs one channel per head, a head per
  // NIC, each carrying at most NCCL's perChMaxNVLSTreeBws of bus bandwidth: Hopper 57.7 GB/s
  // on two nodes, 45.5 on more; Blackwell 96 and 80 (tuning.cc). Two nodes of 8 x H100 with 8
  // heads: 8 x 57.7 = 461.6 GB/s busbw, measured 461.8 over 16 x 200G RoCE (OCI) and 468 over
  // InfiniBand (Nebius) where NVLink alone would allow 513. 0 = that table.
  double nvls_tree_channel_two_nodes_Bps = 0;
  double nvls_tree_channel_more_nodes_Bps = 0;
  // A ring's Simple-protocol pipeline fills and drains one slice per channel: NCCL moves a
  // chunk of up to ring_chunk_bytes per rank and step (stepSize 512 KiB x 4 chunk steps for
  // all_reduce, all_gather and reduce_scatter, 4 MiB buffers), shrunk to the data for one loop
  // (size / (ranks x channels)), in slices of half a chunk (2 slice steps); one slice at one
  // channel's share of the bus costs extra. Few ranks amortise it over few steps: 2 ranks
  // run all_reduce 25% and all_gather 50% over their bytes' time at mid sizes (our 2 x H200,
  // nccl-tests-2gpu.txt), 8 ranks 3.6% (together-nccl-tests, ring). Channels: NCCL's 24 for
  // Hopper on NVSwitch (NCCL_DEBUG=INFO of our 2 x H200: "24 coll channels"). One node only:
  // across nodes NCCL's network chunks and proxy differ and no table here measures the fill.
  double ring_chunk_bytes = 2.0 * 1024 * 1024;
  int ring_channels = 24;
  // What one ring channel (one thread block) can load and store per second, every load and
  // store it issues counted (to its own memory or the peer's). A ring kernel moves each rank's
  // data through its FIFO with the same threads that send it (Simple, LL128 and LL alike): per
  // rank, in units of the nccl-tests size S, out-of-place all_gather and reduce_scatter issue
  // 3 - 1/n S, all_reduce 6 - 4/n S, a broadcast or reduce chain 3 S; over ring_channels
  // channels that bounds the ring at ring_channels x this x bus factor / that count of bus
  // bandwidth, below the links only on 2 ranks (all_gather and reduce_scatter move 0.5 S over
  // the link against 2.5 S of loads and stores; from 3 ranks the link's share grows to (n-1)/n).
  // Hopper: 60.7 GB/s, from our 2 x H200 (nccl-tests-2gpu.txt): all_gather out-of-place 8 GiB in
  // 14.73 ms = 2.5 S over 24 channels, where the link alone would take 11.6 ms; then with no
  // other constant reduce_scatter 14.81 ms (measured 14.62), all_reduce 23.6 (24.9; the link
  // 23.2), broadcast and sendrecv link-bound (367 and 366 GB/s measured). About twice what a
  // plain copy kernel of 512 threads with four 16-byte loads in flight each reaches on one GPU
  // (call10/ramp_probe_h200.txt: 32.7-37 GB/s per block, latency-bound; NCCL unrolls deeper and
  // its stores to the peer are posted writes). Other architectures: this scaled by NCCL's own
  // per-channel figures (topo.h: SM80 20.0, SM100 40.1 against SM90 20.6 GB/s), an assumption
  // no table here measures. 0 = that.
  double ring_channel_copy_Bps = 0;
  double nvls_max_chunk_bytes = 128 * 1024;
  // Protocol bandwidth factors (tuning.cc "model refinements"): ring LL moves 8 of 16 bytes
  // per line (x0.5) and is capped; LL128 moves 120 of 128 (NCCL uses 0.92).
  double ring_ll_fraction = 0.5;
  double ll128_fraction = 0.92;
  // LL bus-bandwidth cap by architecture (NCCL's llMaxBws): one node Volta 39, Ampere 87.7,
  // Hopper 141, Blackwell 282 GB/s; two nodes 39, 22.5, 45, 90; more nodes 20.4, 19, 35, 70.
  // 0 = that table.
  double ll_max_one_node_Bps = 0;
  double ll_max_two_nodes_Bps = 0;
  double ll_max_more_nodes_Bps = 0;
  // Tree all_reduce: x0.92; LL 1/3.8; LL128 7/9 on one node, 120/128 across nodes; and, by
  // size, NCCL's treeCorrectionFactor (tuning.cc: "Trees are not perfectly sticking to the
  // model for medium sizes"), a factor of 0.4-1.0 on the bandwidth per power of two of the
  // size from 64 B, lowest between 32 KiB and 2 MiB (collective_model.cc).
  double tree_efficiency = 0.92;
  double tree_ll_fraction = 1.0 / 3.8;
  double tree_ll128_fraction_one_node = 7.0 / 9.0;
  double tree_ll128_fraction_multi_node = 120.0 / 128.0;
  // CollNet-Direct on SM90+ runs at 0.85 of the network (tuning.cc), and serialises 0.4 us per
  // extra local rank ("arity serialization latency").
  double collnet_efficiency = 0.85;
  double collnet_arity_latency_s = 0.4e-6;
  // alltoall issues n-1 sends and receives: NCCL does not model it; we charge each extra peer
  // the same 0.4 us serialization as CollNet's arity term (an assumption; calibrate it).
  double p2p_per_peer_latency_s = 0.4e-6;
  // Point-to-point channels (src/enqueue.cc addP2pToPlan, src/graph/paths.cc): NCCL spreads a
  // send to one peer over nch channels, each one thread block copying at about one NVLink's
  // worth (NCCL's per-link figure: SM80 20.0, SM90 20.6, SM100 40.1 GB/s, topo.h; PCIe 12), so
  // inside a node a peer's rate is min(the GPU's links, nch x that). nch grows with the bytes
  // per peer: from min(p2p_channels_per_peer / 2^k fitting p2p_channels over the ranks,
  // bytes / (chunk/8)), doubled while a channel's part exceeds 32 chunks (one node; across
  // nodes chunk/2 and 1 chunk). Defaults: 32 channels and 32 per peer on NVSwitch systems, a
  // 512 KiB chunk (NCCL_DEBUG=INFO of our 2 x H200: "32 p2p channels, 32 p2p channels per peer",
  // "P2P Chunksize set to 524288"; scenarios/measurements/nccl-debug-info-2xh200.log).
  // Inside a node a send is a two-stage pipeline per channel that NCCL's tuner does not count:
  // the sender's warps write a step (one chunk, or the channel's whole part when smaller) into
  // the receiver's FIFO and post it, and only then do the receiver's warps copy it out
  // (sendrecv.h runSend/runRecv, ProtoSimple<1,1>: one slice a step; without registered buffers
  // nccl-tests' sends go through the FIFO even in one process, where "P2P/direct pointer" only
  // maps the FIFO: prims_simple.h takes DirectWrite only with ipcReg). A send thus ends one step
  // after its bytes' time, here at one channel's share of the peer's rate (fill_s; 25.5 us for
  // a 512 KiB step at 20.6 GB/s). Our 2 x H200 (nccl-tests-2gpu.txt) runs sendrecv 17-60 us
  // over NCCL's latency and its bytes' time at 16 channels from 16 to 256 MiB; the median
  // |error| from 64 KiB to 8 GiB goes 9.5 -> 4.2% (alltoall 12.6 -> 9.2%). Across nodes NCCL's
  // network chunks differ (enqueue.cc halves or quarters them) and no table measures it: none.
  int p2p_channels = 32;
  int p2p_channels_per_peer = 32;
  double p2p_chunk_bytes = 512.0 * 1024;
  // A communicator's thread blocks as ncclConfig_t maxCTAs sets them (0: NCCL's own counts).
  // NCCL runs at most that many channels (init.cc caps nChannels and the p2p channels with it,
  // nvls.cc the NVLS channels): each ring, NVLS and point-to-point channel count above is cut
  // to it, and a ring across nodes leaves each node through at most that many NICs (one
  // channel's ring crosses the network through one NIC) with its channels' copy work bounding
  // it as on one node. Megatron-Core sets it per process group (FrameworkConfig::nccl_max_ctas).
  int max_channels = 0;
  // NCCL's NVLS algorithms (NVLS, NVLS-Tree) on an NVLink SHARP switch; false: NCCL_NVLS_ENABLE=0,
  // as NVIDIA's MLPerf Training configurations set it ("needed to save memory"), and NCCL picks
  // among the others (FrameworkConfig::nccl_nvls).
  bool nvls_enabled = true;
  // Calibration fits; the first match (op, algorithm, protocol, ranks, nodes, size) wins.
  std::vector<CollectiveFit> fits;
  // Calibration corrections, for estimates no fit matched; the first of the op and scope wins.
  std::vector<CollectiveCorrection> corrections;
};

// `params` without its calibration (fits and corrections): the model's own constants.
CollectiveParams uncalibrated(CollectiveParams params);
// Whether `params` carries a calibration (fits or transfer corrections).
bool is_calibrated(const CollectiveParams& params);

// How an all-to-all's copies bound for other nodes travel. NCCL's alltoall (the defaults): each
// copy is its own message. A hierarchical MoE dispatcher (DeepEP, HybridEP; models
// alltoall_dispatch, transformer_model.h) sends a token once to each node that holds its
// experts and forwards it there over the scale-up links.
struct AllToAllDispatch {
  // The share of the bytes bound for other nodes that cross the network, in (0, 1].
  double network_share = 1;
  // What crosses is forwarded inside the receiving node: of the copies for other nodes, the
  // (g-1)/g not for the receiving GPU itself also cross that node's scale-up links.
  bool forward_in_node = false;
  // A dispatcher that sends a token once to each GPU that holds any of its experts (DeepEP,
  // HybridEP; the expert-level copies are made by the receiving GPU): the share of the routed
  // copies that are distinct (token, GPU) pairs, which is what the scale-up links carry, in
  // (0, 1]. 1: every routed copy its own message (NCCL's all-to-all).
  double rank_share = 1;
};

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::kAllReduce;
  // nccl-tests' size column: the buffer of all_reduce/broadcast/reduce/sendrecv, the total
  // over ranks for all_gather/reduce_scatter (the gathered buffer) and alltoall (one rank's
  // send buffer).
  double size_bytes = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  CollectiveProtocol protocol = CollectiveProtocol::kAuto;
  // alltoall only: how its copies for other nodes travel (a MoE dispatcher's; NCCL's own
  // alltoall: the defaults).
  AllToAllDispatch dispatch;
};

struct CollectiveEstimate {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // the one chosen (never kAuto)
  CollectiveProtocol protocol = CollectiveProtocol::kSimple;   // never kAuto
  int ranks = 1;
  double size_bytes = 0;
  double latency_s = 0;    // alpha term
  // The part of latency_s that NCCL's tuner does not count (pipeline fill): NCCL chooses the
  // algorithm and protocol without it, so the chosen one need not be the fastest.
  double fill_s = 0;
  double bandwidth_s = 0;  // beta term: the bytes over the bottleneck
  double time_s = 0;       // latency_s + bandwidth_s
  double algbw_Bps = 0;    // size_bytes / time_s (nccl-tests)
  double busbw_Bps = 0;    // algbw x bus_bandwidth_factor
  CollectiveBottleneck bottleneck = CollectiveBottleneck::kNone;
};

// What NCCL's point-to-point channels give one peer inside a node for a send of
// `per_peer_bytes` (the channels CollectiveParams::p2p_channels* assign it, each at NCCL's
// per-channel NVLink or PCIe figure), before the GPU's links limit all peers together. The
// simulator caps each intra-node p2p flow at it, as the analytic p2p term does.
double p2p_peer_channel_cap_Bps(const CollectiveTopology& topology, const CollectiveParams& params,
                                double per_peer_bytes);

// The bus bandwidth a one-node ring of `op` gets from its channels' copy work
// (CollectiveParams::ring_channel_copy_Bps), whatever the links allow; 0 across nodes (unless
// CollectiveParams::max_channels cuts the channels), for one rank and for the point-to-point
// ops. The simulator caps each ring edge at it, as the analytic
// ring term does.
double ring_channel_bus_Bps(const CollectiveTopology& topology, const CollectiveParams& params,
                            CollectiveOp op);

// Whether NCCL's tuner picks `a` over `b`: the shorter time without the fill it does not count.
bool nccl_prefers(const CollectiveEstimate& a, const CollectiveEstimate& b);

// Predicts one collective, with the candidate NCCL's tuner picks. One rank or zero bytes costs nothing (time 0). Fails, naming what is
// missing, when the algorithm cannot run the op or on this topology (tree: all_reduce only;
// nvls: needs switch_reduction, all_gather/reduce_scatter one node only; collnet: all_reduce
// across nodes with in_network_reduction; hierarchical: across nodes; alltoall/sendrecv: p2p),
// or the protocol is not one the algorithm has (nvls, collnet, hierarchical... see .cc).
Result<CollectiveEstimate> estimate_collective(const CollectiveTopology& topology,
                                               const CollectiveRequest& request,
                                               const CollectiveParams& params = {});

// Every (algorithm, protocol) pair that kAuto considers for this op and topology, each
// estimated; empty for one rank. The chosen one is the one nccl_prefers.
std::vector<CollectiveEstimate> collective_candidates(const CollectiveTopology& topology,
                                                      CollectiveOp op, double size_bytes,
                                                      const CollectiveParams& params = {});

// The candidates above whose algorithm is not in `disabled` (names as to_string spells them:
// a run's NCCL_NVLS_ENABLE=0 or NCCL_ALGO), and the one NCCL picks of them; for one rank the single
// estimate estimate_collective makes. cheapest_enabled_collective fails when every candidate
// is disabled.
std::vector<CollectiveEstimate> enabled_collective_candidates(
    const CollectiveTopology& topology, CollectiveOp op, double size_bytes,
    const CollectiveParams& params, const std::vector<std::string>& disabled);
Result<CollectiveEstimate> cheapest_enabled_collective(const CollectiveTopology& topology,
                                                       CollectiveOp op, double size_bytes,
                                                       const CollectiveParams& params,
                                                       const std::vector<std::string>& disabled);

}  // namespace clustersim::models
