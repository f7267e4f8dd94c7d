#include "models/collective_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace clustersim::models {
namespace {

using Algo = CollectiveAlgorithm;
using Proto = CollectiveProtocol;
using Op = CollectiveOp;
using Neck = CollectiveBottleneck;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Name tables: the first name of a value is the one printed; later ones are accepted aliases.
template <class E>
using NameTable = std::pair<std::string_view, E>;
// clang-format off
constexpr NameTable<Op> kOpNames[] = {
    {"all_reduce", Op::kAllReduce},        {"all_gather", Op::kAllGather},
    {"reduce_scatter", Op::kReduceScatter}, {"alltoall", Op::kAllToAll},
    {"broadcast", Op::kBroadcast},         {"reduce", Op::kReduce},
    {"sendrecv", Op::kSendRecv},           {"allreduce", Op::kAllReduce},
    {"allgather", Op::kAllGather},         {"reducescatter", Op::kReduceScatter},
    {"all_to_all", Op::kAllToAll}};
constexpr NameTable<Algo> kAlgorithmNames[] = {
    {"auto", Algo::kAuto},       {"ring", Algo::kRing},
    {"tree", Algo::kTree},       {"nvls", Algo::kNvls},
    {"collnet", Algo::kCollNet}, {"hierarchical", Algo::kHierarchical},
    {"p2p", Algo::kP2p},         {"sharp", Algo::kCollNet}};
constexpr NameTable<Proto> kProtocolNames[] = {
    {"auto", Proto::kAuto}, {"ll", Proto::kLL}, {"ll128", Proto::kLL128},
    {"simple", Proto::kSimple}};
constexpr NameTable<Neck> kBottleneckNames[] = {{"none", Neck::kNone},
                                                {"scale_up", Neck::kScaleUp},
                                                {"network", Neck::kNetwork},
                                                {"calibrated", Neck::kCalibrated},
                                                {"channels", Neck::kChannels}};
// clang-format on

template <class E, std::size_t N>
std::string_view name_of(E value, const NameTable<E> (&table)[N]) {
  for (const auto& [n, e] : table) {
    if (e == value) return n;
  }
  return "?";
}

template <class E, std::size_t N>
bool parse_name(std::string_view name, const NameTable<E> (&table)[N], E* out) {
  for (const auto& [n, e] : table) {
    if (iequals(n, name)) {
      *out = e;
      return true;
    }
  }
  return false;
}

// The printed names of a table, comma-separated, aliases left out (for error messages).
template <class E, std::size_t N>
std::string names_of(const NameTable<E> (&table)[N]) {
  std::string out;
  for (const auto& [n, e] : table) {
    if (name_of(e, table) != n) continue;  // an alias
    out += (out.empty() ? "" : ", ") + std::string(n);
  }
  return out;
}

int proto_index(Proto p) {
  CS_ASSERT(p != Proto::kAuto, "protocol must be resolved");
  return static_cast<int>(p) - 1;  // LL 0, LL128 1, Simple 2 as in NCCL's tables
}

int log2_floor(int n) {  // NCCL's log2i
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

// NCCL's per-channel NVLink figure for Hopper (topo.h SM90_NVLINK_BW, GB/s as bytes/s), and what
// one Hopper ring channel loads and stores per second, read from our 2 x H200 all_gather at
// 8 GiB (CollectiveParams::ring_channel_copy_Bps has the derivation).
constexpr double kHopperChannelBps = 20.6e9;
constexpr double kHopperRingChannelCopyBps = 60.7e9;

// The two terms of one candidate before calibration.
struct Terms {
  double latency_s = 0;
  double fill_s = 0;  // the part of latency_s that NCCL's tuner does not count
  double bandwidth_s = 0;
  Neck bottleneck = Neck::kNone;
};

// A bandwidth with the resource that sets it.
struct Bus {
  double Bps = 0;
  Neck neck = Neck::kNone;
};

// Bytes over a rate, with the resource named: the slower of several resources wins.
struct Leg {
  double seconds = 0;
  Neck neck = Neck::kNone;
};
Leg slower(Leg a, Leg b) { return a.seconds >= b.seconds ? a : b; }

class Model {
 public:
  Model(const CollectiveTopology& t, const CollectiveParams& p, AllToAllDispatch dispatch = {})
      : t_(t), p_(p), dispatch_(dispatch) {}

  // What one ring channel loads and stores per second (CollectiveParams::ring_channel_copy_Bps).
  double ring_channel_copy_Bps() const {
    if (p_.ring_channel_copy_Bps > 0) return p_.ring_channel_copy_Bps;
    return kHopperRingChannelCopyBps * channel_Bps() / kHopperChannelBps;
  }
  // A ring's bus bandwidth as its channels' copy work bounds it on one node: the bytes each rank
  // loads and stores, per byte of the nccl-tests size, against what ring_channels copy.
  Bus ring_channel_bus(Op op) const {
    double copied = 0;
    switch (op) {
      case Op::kAllGather:
      case Op::kReduceScatter:
        copied = 3 - 1.0 / n();
        break;
      case Op::kAllReduce:
        copied = 6 - 4.0 / n();
        break;
      case Op::kBroadcast:
      case Op::kReduce:
        copied = 3;
        break;
      case Op::kAllToAll:
      case Op::kSendRecv:
        return {};
    }
    const double channels = ring_channels();
    return {channels * ring_channel_copy_Bps() * bus_bandwidth_factor(op, n()) / copied,
            Neck::kChannels};
  }

  // NCCL's channels for one peer of a p2p send, at its per-channel rate.
  double p2p_peer_cap_Bps(double per_peer_bytes) const {
    return p2p_channels(per_peer_bytes) * channel_Bps();
  }

  Result<Terms> terms(Op op, double bytes, Algo algo, Proto proto) const {
    switch (algo) {
      case Algo::kRing:
        return ring(op, bytes, proto);
      case Algo::kTree:
        return tree(op, bytes, proto);
      case Algo::kNvls:
        return nvls(op, bytes, proto);
      case Algo::kCollNet:
        return collnet(op, bytes, proto);
      case Algo::kHierarchical:
        return hierarchical(op, bytes, proto);
      case Algo::kP2p:
        return p2p(op, bytes, proto);
      case Algo::kAuto:
        break;
    }
    CS_ASSERT(false, "algorithm must be resolved");
    return Error{""};
  }

 private:
  int n() const { return t_.ranks; }
  // A channel count cut to the communicator's thread blocks (CollectiveParams::max_channels).
  int capped(int channels) const {
    const int c = std::max(1, channels);
    return p_.max_channels > 0 ? std::min(c, p_.max_channels) : c;
  }
  int ring_channels() const { return capped(p_.ring_channels); }
  int g() const { return t_.ranks_per_node; }
  int nodes() const { return t_.nodes; }
  bool multi_node() const { return t_.nodes > 1; }
  NcclHardware intra_hw() const {
    return t_.scale_up_technology == LinkTechnology::kNvlink ? NcclHardware::kNvlink
                                                             : NcclHardware::kPcie;
  }
  double base(NcclAlgo a, Proto p) const {
    return p_.base_latency_s[static_cast<int>(a)][proto_index(p)];
  }
  double hw(NcclHardware h, NcclAlgo a, Proto p) const {
    return p_.hw_latency_s[static_cast<int>(h)][static_cast<int>(a)][proto_index(p)];
  }
  // One inter-node step: NCCL's network constant plus what this fabric adds over the
  // InfiniBand reference (twice for Simple: NCCL's flush).
  double inter_latency(NcclAlgo a, Proto p) const {
    const double excess = std::max(0.0, t_.network_latency_s - p_.reference_network_latency_s);
    return hw(NcclHardware::kNetwork, a, p) + excess * (p == Proto::kSimple ? 2 : 1);
  }

  double scale_up_efficiency() const {
    if (p_.scale_up_efficiency > 0) return p_.scale_up_efficiency;
    if (t_.scale_up_technology != LinkTechnology::kNvlink) return 12.0 / 15.75;
    if (t_.gpu_arch == "sm_80") return 20.0 / 25.0;
    if (t_.gpu_arch == "sm_90") return 20.6 / 25.0;
    if (t_.gpu_arch == "sm_100") return 40.1 / 50.0;
    return 0.80;  // other NVLink generations: Ampere's ratio
  }
  // Achievable scale-up bandwidth per GPU per direction (370.8 GB/s for 18 Hopper links).
  double scale_up_Bps() const { return t_.scale_up_Bps * scale_up_efficiency(); }
  // What one NCCL channel (one thread block) moves over the scale-up fabric: NCCL's per-link
  // figure (topo.h SM*_NVLINK_BW, PCI_BW).
  double channel_Bps() const {
    if (t_.scale_up_technology != LinkTechnology::kNvlink) return 12.0e9;
    if (t_.gpu_arch == "sm_80") return 20.0e9;
    if (t_.gpu_arch == "sm_90") return kHopperChannelBps;
    if (t_.gpu_arch == "sm_100") return 40.1e9;
    return 20.0e9;
  }
  // The channels NCCL gives a send of `bytes` to one peer (enqueue.cc addP2pToPlan).
  int p2p_channels(double bytes) const {
    const int max_per_peer = capped(p_.p2p_channels_per_peer);
    int min_per_peer = max_per_peer;
    while (min_per_peer > 1 && static_cast<long>(min_per_peer) * n() > capped(p_.p2p_channels)) {
      min_per_peer /= 2;
    }
    if (bytes <= 0) return 1;
    const double chunk = p_.p2p_chunk_bytes;
    const double min_part = multi_node() ? chunk / 2 : chunk / 8;
    const double max_part = multi_node() ? chunk : chunk * 32;
    int nch = static_cast<int>(std::min<double>(min_per_peer, std::ceil(bytes / min_part)));
    double part = std::max(min_part, std::ceil(bytes / nch));
    while (part > max_part && nch <= max_per_peer / 2) {
      nch *= 2;
      part = std::ceil(bytes / nch);
    }
    return nch;
  }

  // The p2p pipeline's fill inside a node (CollectiveParams::p2p_chunk_bytes): a send ends one
  // step (NCCL's p2p chunk, or the channel's whole part when smaller) after its bytes' time, at
  // one channel's share of `peer_Bps`, the peer's rate.
  double p2p_fill_seconds(double per_peer_bytes, double peer_Bps) const {
    if (per_peer_bytes <= 0 || peer_Bps <= 0) return 0;
    const int nch = p2p_channels(per_peer_bytes);
    const double step = std::min(p_.p2p_chunk_bytes, per_peer_bytes / nch);
    return step / (peer_Bps / nch);
  }

  // The LL bus-bandwidth cap of a communicator on one node, or across this many nodes.
  double ll_max_Bps() const { return ll_max_Bps(multi_node()); }
  double ll_max_Bps(bool across_nodes) const {
    // NCCL's llMaxBws rows: one node, two nodes, more; unknown architectures get Volta's.
    const int column = !across_nodes ? 0 : nodes() <= 2 ? 1 : 2;
    const double set = column == 0   ? p_.ll_max_one_node_Bps
                       : column == 1 ? p_.ll_max_two_nodes_Bps
                                     : p_.ll_max_more_nodes_Bps;
    if (set > 0) return set;
    static constexpr double kVolta[] = {39.0e9, 39.0e9, 20.4e9};
    static constexpr double kAmpere[] = {87.7e9, 22.5e9, 19.0e9};
    static constexpr double kHopper[] = {141.0e9, 45.0e9, 35.0e9};
    static constexpr double kBlackwell[] = {282.0e9, 90.0e9, 70.0e9};
    if (t_.gpu_arch == "sm_80") return kAmpere[column];
    if (t_.gpu_arch == "sm_90") return kHopper[column];
    if (t_.gpu_arch == "sm_100") return kBlackwell[column];
    return kVolta[column];
  }
  // NCCL's treeCorrectionFactor for a tree all_reduce of `bytes` (tuning.cc): per protocol, per
  // power of two of the size from 64 B; 1 outside the table.
  double tree_correction(double bytes, Proto p) const {
    if (bytes < 64) return 1.0;
    // clang-format off
    static constexpr double kFactor[3][23] = {
        {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
        {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
        {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
    // clang-format on
    const int log_size = log2_floor(static_cast<int>(std::min(bytes / 64, 1e9)));
    return log_size < 23 ? kFactor[proto_index(p)][log_size] : 1.0;
  }
  // Ring-family protocol factor on a bus bandwidth.
  double ring_protocol_Bps(double bus_Bps, Proto p, bool across_nodes) const {
    switch (p) {
      case Proto::kLL:
        return std::min(bus_Bps * p_.ring_ll_fraction, ll_max_Bps(across_nodes));
      case Proto::kLL128:
        return bus_Bps * p_.ll128_fraction;
      default:
        return bus_Bps;
    }
  }
  Bus ring_protocol(Bus bus, Proto p) const {
    return {ring_protocol_Bps(bus.Bps, p, multi_node()), bus.neck};
  }
  // The bus bandwidth of a ring over this communicator. One node: the GPU's scale-up link.
  // Several nodes: each ring enters and leaves a node once, so a node's NICs carry the whole
  // ring volume (busbw <= the node's network bandwidth) while each GPU's scale-up link carries
  // (g-1)/g of it (busbw <= B x g/(g-1)).
  Bus ring_bus() const {
    if (!multi_node()) return {scale_up_Bps(), Neck::kScaleUp};
    Bus net{t_.node_network_Bps, Neck::kNetwork};
    if (p_.max_channels > 0 && t_.nic_Bps > 0) {
      net.Bps = std::min(net.Bps, p_.max_channels * t_.nic_Bps);  // a NIC per channel at most
    }
    if (g() == 1) return net;
    const Bus scale_up{scale_up_Bps() * g() / (g() - 1.0), Neck::kScaleUp};
    return scale_up.Bps < net.Bps ? scale_up : net;
  }

  Status need_network() const {
    if (multi_node() && t_.node_network_Bps <= 0) {
      return Error{"the communicator spans " + std::to_string(nodes()) +
                   " nodes but the nodes have no network bandwidth (nics_per_node 0?)"};
    }
    return Status::Ok();
  }
  static Error unsupported(Algo a, Op op, std::string_view why) {
    return Error{"algorithm " + std::string(to_string(a)) + " cannot run " +
                 std::string(to_string(op)) + ": " + std::string(why)};
  }
  static Status simple_only(Algo a, Proto p) {
    if (p == Proto::kSimple) return Status::Ok();
    return Error{"algorithm " + std::string(to_string(a)) + " has only the simple protocol, not " +
                 std::string(to_string(p))};
  }

  // Ring: every rank sends bus_factor x S to its neighbour, at the ring's bus bandwidth.
  Result<Terms> ring(Op op, double bytes, Proto p) const {
    if (op == Op::kAllToAll || op == Op::kSendRecv) {
      return unsupported(Algo::kRing, op, "NCCL runs it as point-to-point sends (use auto or p2p)");
    }
    if (auto s = need_network(); !s) return Error{s.message()};
    const Bus link = ring_protocol(ring_bus(), p);
    Bus bus = link;
    // Across nodes NCCL's own channel count (two or more a NIC) never binds; a cut one can.
    if (!multi_node() || p_.max_channels > 0) {
      if (const Bus copy = ring_channel_bus(op); copy.Bps < bus.Bps) bus = copy;
    }
    // Latency (tuning.cc): base + (steps - inter steps) x intra + inter steps x inter. A chain
    // (broadcast, reduce) has n-1 steps; NCCL charges n, a one-step difference.
    const int steps = op == Op::kAllReduce ? 2 * (n() - 1) : n() - 1;
    const int inter_steps =
        !multi_node() ? 0 : (op == Op::kAllReduce ? 2 * (nodes() - 1) : nodes() - 1);
    double intra = hw(intra_hw(), NcclAlgo::kRing, p);
    if (multi_node()) {
      intra = std::max(intra, p_.net_overhead_s * (p == Proto::kSimple ? 3 : 1));
    }
    // With one rank per node every step is exposed: NCCL uses the tree's network latency.
    const double inter = inter_latency(g() == 1 ? NcclAlgo::kTree : NcclAlgo::kRing, p);
    Terms out;
    out.latency_s = base(NcclAlgo::kRing, p) + (steps - inter_steps) * intra + inter_steps * inter;
    out.bandwidth_s = bytes * bus_bandwidth_factor(op, n()) / bus.Bps;
    if (p == Proto::kSimple && !multi_node() && op != Op::kBroadcast && op != Op::kReduce) {
      // The first slice crosses one step at the link's pace: a step's own copy work (a load
      // and a store per byte) is lighter than the link's share; the copy bound comes from a
      // rank doing its send and its receive steps in turn on the same channel.
      out.fill_s = ring_fill_seconds(bytes, link.Bps);
      out.latency_s += out.fill_s;
    }
    out.bottleneck = bus.neck;
    return out;
  }
  // One slice (half a chunk) per channel at the channel's share of `bus_Bps`: the chunk is
  // NCCL's, or the loop's share of the data where that is smaller.
  double ring_fill_seconds(double bytes, double bus_Bps) const {
    const double channels = ring_channels();
    const double chunk = std::min(p_.ring_chunk_bytes, bytes / (n() * channels));
    return chunk / 2 / (bus_Bps / channels);
  }

  // Tree (all_reduce only, as in NCCL): a chain inside the node, a double binary tree across
  // nodes. Every GPU and every node sends S up and S down: algbw = busbw / 2.
  Result<Terms> tree(Op op, double bytes, Proto p) const {
    if (op != Op::kAllReduce) return unsupported(Algo::kTree, op, "NCCL's tree is all_reduce only");
    if (auto s = need_network(); !s) return Error{s.message()};
    Bus bus = ring_bus();  // a chain and a tree load the same links as the ring does
    bus.Bps *= p_.tree_efficiency;
    if (p == Proto::kLL) bus.Bps = std::min(bus.Bps * p_.tree_ll_fraction, ll_max_Bps());
    if (p == Proto::kLL128) {
      bus.Bps *= multi_node() ? p_.tree_ll128_fraction_multi_node : p_.tree_ll128_fraction_one_node;
    }
    bus.Bps *= tree_correction(bytes, p);  // after the caps, as NCCL applies it
    Terms out;
    out.latency_s =
        base(NcclAlgo::kTree, p) + 2 * ((g() - 1) * hw(intra_hw(), NcclAlgo::kTree, p) +
                                        log2_floor(nodes()) * inter_latency(NcclAlgo::kTree, p));
    out.bandwidth_s = 2 * bytes / bus.Bps;
    out.bottleneck = bus.neck;
    return out;
  }

  // Seconds to move `per_gpu_bytes` each way through every GPU's NVLink with NVLS.
  double nvls_seconds(double per_gpu_bytes) const {
    return per_gpu_bytes / (scale_up_Bps() * p_.nvls_efficiency);
  }
  int nvls_channels() const { return capped(t_.gpu_arch == "sm_100" ? 32 : 16); }
  // NCCL's perChMaxNVLSTreeBws for this architecture and node count; 0 where it has none.
  double nvls_tree_channel_Bps() const {
    const bool two = nodes() <= 2;
    const double set = two ? p_.nvls_tree_channel_two_nodes_Bps : p_.nvls_tree_channel_more_nodes_Bps;
    if (set > 0) return set;
    if (t_.gpu_arch == "sm_90") return two ? 57.7e9 : 45.5e9;
    if (t_.gpu_arch == "sm_100") return two ? 96.0e9 : 80.0e9;
    return 0;
  }
  // NVLS heads per channel: every GPU of the node on one node, one GPU per NIC across nodes
  // (every GPU where the NIC count is not known).
  int nvls_heads() const {
    if (!multi_node() || t_.nics_per_node <= 0) return g();
    return std::min(t_.nics_per_node, g());
  }
  // NCCL's chunk for an NVLS or NVLS-Tree all_reduce of `bytes` (enqueue.cc calcCollChunking),
  // shrunk while the size is under a few loops of channels x heads x chunk.
  double nvls_chunk_bytes(double bytes) const {
    const double loop = double(nvls_channels()) * nvls_heads();
    double chunk = p_.nvls_max_chunk_bytes;
    if (!multi_node()) {
      if (bytes < 64 * loop * chunk && chunk > 65536) chunk = 65536;
      if (bytes < 8 * loop * chunk && chunk > 32768) chunk = 32768;
      if (bytes < 2 * loop * chunk && chunk > 16384) chunk = 16384;
      return chunk;
    }
    if (nodes() >= 4) chunk = std::min(chunk, 65536.0);  // NVLS-Tree's treeMaxChunkSize
    if (bytes < 32 * loop * chunk && chunk > 262144) chunk = 262144;
    if (bytes < 16 * loop * chunk && chunk > 131072) chunk = 131072;
    if (bytes < 4 * loop * chunk && chunk > 65536) chunk = 65536;
    if (bytes < 1 * loop * chunk && chunk > 32768) chunk = 32768;
    return chunk;
  }
  // The all_reduce pipeline's fill: nvls_pipeline_loops loops (a chunk for every channel and
  // head) at the rate that paces the call (`seconds` for `bytes`).
  double nvls_fill_seconds(double bytes, double seconds) const {
    if (bytes <= 0 || seconds <= 0) return 0;
    const double loop_bytes = double(nvls_channels()) * nvls_heads() * nvls_chunk_bytes(bytes);
    return p_.nvls_pipeline_loops * loop_bytes / (bytes / seconds);
  }
  Status nvls_capable(Op op) const {
    if (!t_.switch_reduction || t_.scale_up_technology != LinkTechnology::kNvlink) {
      return unsupported(Algo::kNvls, op, "the scale-up switch has no NVLink SHARP reduction");
    }
    if (g() < 2) return unsupported(Algo::kNvls, op, "needs at least 2 GPUs per node");
    if (!p_.nvls_enabled) return unsupported(Algo::kNvls, op, "NVLS is off (NCCL_NVLS_ENABLE=0)");
    return Status::Ok();
  }

  // NVLS: the NVSwitch reduces (multimem.ld_reduce) and multicasts (multimem.st). all_reduce
  // moves S(1+1/g) each way per GPU; all_gather and reduce_scatter S (the multicast includes
  // the issuing GPU). Across nodes (all_reduce only): NCCL's NVLS-Tree, pipelined, so the
  // slower of NVLink and the network tree (2S per node, S with two nodes) sets the pace.
  Result<Terms> nvls(Op op, double bytes, Proto p) const {
    if (op != Op::kAllReduce && op != Op::kAllGather && op != Op::kReduceScatter) {
      return unsupported(Algo::kNvls, op, "NVLS runs all_reduce, all_gather and reduce_scatter");
    }
    if (auto s = nvls_capable(op); !s) return Error{s.message()};
    if (auto s = simple_only(Algo::kNvls, p); !s) return Error{s.message()};
    Terms out;
    if (!multi_node()) {
      const double per_gpu = op == Op::kAllReduce ? bytes * (1 + 1.0 / g()) : bytes;
      out.latency_s = base(NcclAlgo::kNvls, p) + hw(NcclHardware::kNvlink, NcclAlgo::kNvls, p);
      out.bandwidth_s = nvls_seconds(per_gpu);
      if (op == Op::kAllReduce) out.fill_s = nvls_fill_seconds(bytes, out.bandwidth_s);
      out.latency_s += out.fill_s;
      out.bottleneck = Neck::kScaleUp;
      return out;
    }
    if (op != Op::kAllReduce) {
      return unsupported(Algo::kNvls, op, "across nodes NCCL needs CollNet for it (not modelled)");
    }
    if (auto s = need_network(); !s) return Error{s.message()};
    const Leg intra{nvls_seconds(bytes * (1 + 1.0 / g())), Neck::kScaleUp};
    const Leg net{bytes * (nodes() <= 2 ? 1 : 2) / t_.node_network_Bps, Neck::kNetwork};
    Leg leg = slower(intra, net);
    // Its heads' channels: each at most NCCL's per-channel bus bandwidth.
    const int heads = std::min(t_.nics_per_node, g());
    if (const double per_channel = nvls_tree_channel_Bps(); heads > 0 && per_channel > 0) {
      const Leg channels{bytes * bus_bandwidth_factor(op, n()) / (heads * per_channel),
                         Neck::kNetwork};
      leg = slower(leg, channels);
    }
    out.latency_s = base(NcclAlgo::kNvlsTree, p) +
                    hw(NcclHardware::kNvlink, NcclAlgo::kNvlsTree, p) +
                    2 * log2_floor(nodes()) * inter_latency(NcclAlgo::kNvlsTree, p);
    out.fill_s = nvls_fill_seconds(bytes, leg.seconds);
    out.latency_s += out.fill_s;
    out.bandwidth_s = leg.seconds;
    out.bottleneck = leg.neck;
    return out;
  }

  // In-network reduction (SHARP): each node sends its S to the switches once and receives the
  // reduced S once. Inside the node: NVLS where the switch reduces (NCCL's NVLS+CollNet),
  // otherwise CollNet-Direct's NVLink reduce-scatter + all-gather (2(g-1)/g S per GPU).
  Result<Terms> collnet(Op op, double bytes, Proto p) const {
    if (op != Op::kAllReduce) {
      return unsupported(Algo::kCollNet, op, "in-network reduction is modelled for all_reduce");
    }
    if (!multi_node()) return unsupported(Algo::kCollNet, op, "needs more than one node");
    if (!t_.in_network_reduction) {
      return unsupported(Algo::kCollNet, op,
                         "the fabric has no in-network reduction (fabric.in_network_reduction)");
    }
    if (auto s = simple_only(Algo::kCollNet, p); !s) return Error{s.message()};
    if (auto s = need_network(); !s) return Error{s.message()};
    const bool nvls_inside = t_.switch_reduction && g() > 1;
    Leg intra{0, Neck::kScaleUp};
    if (nvls_inside) {
      intra.seconds = nvls_seconds(bytes * (1 + 1.0 / g()));
    } else if (g() > 1) {
      intra.seconds = bytes * 2 * (g() - 1) / g() / scale_up_Bps();
    }
    const Leg net{bytes / (t_.node_network_Bps * p_.collnet_efficiency), Neck::kNetwork};
    const Leg leg = slower(intra, net);
    Terms out;
    if (nvls_inside) {
      out.latency_s =
          hw(NcclHardware::kNvlink, NcclAlgo::kNvls, p) + inter_latency(NcclAlgo::kNvls, p);
    } else {
      out.latency_s = base(NcclAlgo::kCollNetDirect, p) +
                      2 * (std::min(1, g() - 1) * hw(intra_hw(), NcclAlgo::kCollNetDirect, p) +
                           (g() - 1) * p_.collnet_arity_latency_s) +
                      inter_latency(NcclAlgo::kCollNetDirect, p);
    }
    out.bandwidth_s = leg.seconds;
    out.bottleneck = leg.neck;
    return out;
  }

  // Two levels in sequence: an NVLink ring inside each node and one ring per rail across the
  // nodes (each GPU with its 1/g of the node's network). all_reduce = reduce-scatter (intra),
  // all_reduce of S/g (inter), all-gather (intra); all_gather = inter then intra; reduce_scatter
  // = intra then inter. Each phase is a separate launch with ring constants.
  Result<Terms> hierarchical(Op op, double bytes, Proto p) const {
    if (op != Op::kAllReduce && op != Op::kAllGather && op != Op::kReduceScatter) {
      return unsupported(Algo::kHierarchical, op, "it runs all_reduce, all_gather, reduce_scatter");
    }
    if (!multi_node()) return unsupported(Algo::kHierarchical, op, "needs more than one node");
    if (auto s = need_network(); !s) return Error{s.message()};
    const bool ar = op == Op::kAllReduce;
    const int intra_phases = g() > 1 ? (ar ? 2 : 1) : 0;
    const double intra_phase_s =
        g() > 1 ? bytes * (g() - 1) / g() / ring_protocol_Bps(scale_up_Bps(), p, false) : 0;
    const double inter_fraction = (ar ? 2.0 : 1.0) * (nodes() - 1) / nodes();
    const double inter_s = bytes * inter_fraction / ring_protocol_Bps(t_.node_network_Bps, p, true);
    const Leg intra{intra_phases * intra_phase_s, Neck::kScaleUp};
    const Leg net{inter_s, Neck::kNetwork};
    Terms out;
    out.latency_s = (intra_phases + 1) * base(NcclAlgo::kRing, p) +
                    intra_phases * (g() - 1) * hw(intra_hw(), NcclAlgo::kRing, p) +
                    (ar ? 2 : 1) * (nodes() - 1) * inter_latency(NcclAlgo::kTree, p);
    out.bandwidth_s = intra.seconds + net.seconds;
    out.bottleneck = slower(intra, net).neck;
    return out;
  }

  // Point to point. sendrecv: rank r sends S to r+1; a pair inside a node uses the GPU's
  // scale-up link, a pair across nodes one NIC. alltoall: every rank sends S/n to each other
  // rank: (g-1)/n of S over the scale-up link, g(n-g)/n of S per node through the NICs.
  // Latency: one ring-protocol step plus, for alltoall, a serialization charge per peer.
  Result<Terms> p2p(Op op, double bytes, Proto p) const {
    if (op != Op::kAllToAll && op != Op::kSendRecv) {
      return unsupported(Algo::kP2p, op, "p2p runs alltoall and sendrecv");
    }
    if (p == Proto::kLL128) return Error{"p2p has the ll and simple protocols, not ll128"};
    if (auto s = need_network(); !s) return Error{s.message()};
    const double link_factor = p == Proto::kLL ? p_.ring_ll_fraction : 1.0;
    Leg intra{0, Neck::kScaleUp};
    Leg net{0, Neck::kNetwork};
    // Inside the node each peer gets what its channels copy, all peers together at most the
    // GPU's links.
    auto intra_Bps = [&](double per_peer_bytes, int peers) {
      return std::min(scale_up_Bps(), peers * p2p_peer_cap_Bps(per_peer_bytes)) * link_factor;
    };
    if (op == Op::kSendRecv) {
      if (g() > 1) intra.seconds = bytes / intra_Bps(bytes, 1);
      if (multi_node()) {
        net.seconds = bytes / (std::min(t_.nic_Bps, t_.node_network_Bps) * link_factor);
      }
    } else {
      // Inside the node: the copies for its other GPUs, and with a hierarchical dispatcher
      // the (g-1)/g of the copies for other nodes that the receiving GPU forwards there.
      const double forwarded =
          dispatch_.forward_in_node ? double(n() - g()) / n() * (g() - 1) / g() : 0;
      intra.seconds = bytes * ((g() - 1.0) / n() + forwarded) * dispatch_.rank_share /
                      intra_Bps(bytes / n(), g() - 1);
      if (multi_node()) {
        net.seconds = bytes * g() * (n() - g()) / n() * dispatch_.network_share /
                      (t_.node_network_Bps * link_factor);
      }
    }
    const double hop =
        multi_node() ? inter_latency(NcclAlgo::kRing, p) : hw(intra_hw(), NcclAlgo::kRing, p);
    const Leg leg = slower(intra, net);
    Terms out;
    if (p == Proto::kSimple && !multi_node()) {
      const double per_peer = op == Op::kSendRecv ? bytes : bytes / n();
      const int peers = op == Op::kSendRecv ? 1 : g() - 1;
      out.fill_s = p2p_fill_seconds(per_peer, intra_Bps(per_peer, peers) / peers);
    }
    out.latency_s = base(NcclAlgo::kRing, p) + hop + out.fill_s +
                    (op == Op::kAllToAll ? (n() - 1) * p_.p2p_per_peer_latency_s : 0);
    out.bandwidth_s = leg.seconds;
    out.bottleneck = leg.neck;
    return out;
  }

  const CollectiveTopology& t_;
  const CollectiveParams& p_;
  AllToAllDispatch dispatch_;
};

constexpr Algo kAlgorithms[] = {Algo::kRing,    Algo::kTree,         Algo::kNvls,
                                Algo::kCollNet, Algo::kHierarchical, Algo::kP2p};
constexpr Proto kProtocols[] = {Proto::kLL, Proto::kLL128, Proto::kSimple};

CollectiveEstimate finish(const CollectiveTopology& topo, const CollectiveParams& params, Op op,
                          double bytes, Algo algo, Proto proto, const Terms& terms) {
  CollectiveEstimate e;
  e.op = op;
  e.algorithm = algo;
  e.protocol = proto;
  e.ranks = topo.ranks;
  e.size_bytes = bytes;
  e.latency_s = terms.latency_s;
  e.fill_s = terms.fill_s;
  e.bandwidth_s = terms.bandwidth_s;
  e.bottleneck = bytes > 0 ? terms.bottleneck : Neck::kNone;
  bool matched = false;
  for (const auto& fit : params.fits) {
    if (fit.op == op && (fit.algorithm == algo || fit.algorithm == Algo::kAuto) &&
        (fit.protocol == proto || fit.protocol == Proto::kAuto) &&
        (fit.ranks == 0 || fit.ranks == topo.ranks) &&
        (fit.nodes == 0 || fit.nodes == topo.nodes) && bytes >= fit.min_size_bytes &&
        bytes < fit.max_size_bytes) {
      CS_ASSERT(fit.busbw_Bps > 0, "a calibration fit needs a positive busbw");
      e.latency_s = fit.latency_s;
      e.fill_s = 0;
      e.bandwidth_s = bytes * bus_bandwidth_factor(op, topo.ranks) / fit.busbw_Bps;
      e.bottleneck = Neck::kCalibrated;
      matched = true;
      break;
    }
  }
  if (!matched && topo.ranks > 1) {
    for (const auto& c : params.corrections) {
      if (c.op != op || c.multi_node != (topo.nodes > 1)) continue;
      apply_correction(c, algo, &e.latency_s, &e.bandwidth_s);
      break;
    }
  }
  e.time_s = e.latency_s + e.bandwidth_s;
  if (e.time_s > 0) {
    e.algbw_Bps = bytes / e.time_s;
    e.busbw_Bps = e.algbw_Bps * bus_bandwidth_factor(op, topo.ranks);
  }
  return e;
}

}  // namespace

bool nccl_prefers(const CollectiveEstimate& a, const CollectiveEstimate& b) {
  return a.time_s - a.fill_s < b.time_s - b.fill_s;
}

namespace {

bool point_to_point(Op op) { return op == Op::kAllToAll || op == Op::kSendRecv; }

// Every (algorithm, protocol) pair the request allows, estimated. kAuto for the algorithm means
// every one NCCL runs (not hierarchical); kAuto for the protocol every one the algorithm has.
// *first_error gets the first refusal, for a request nothing satisfies.
std::vector<CollectiveEstimate> enumerate(const CollectiveTopology& topology,
                                          const CollectiveParams& params, Op op, double bytes,
                                          Algo want_algo, Proto want_proto,
                                          std::string* first_error, AllToAllDispatch dispatch = {}) {
  const Model model(topology, params, dispatch);
  std::vector<CollectiveEstimate> out;
  for (Algo a : kAlgorithms) {
    if (want_algo == Algo::kAuto ? a == Algo::kHierarchical : a != want_algo) continue;
    for (Proto p : kProtocols) {
      if (want_proto != Proto::kAuto && p != want_proto) continue;
      auto terms = model.terms(op, bytes, a, p);
      if (terms) {
        out.push_back(finish(topology, params, op, bytes, a, p, *terms));
      } else if (first_error->empty()) {
        *first_error = terms.message();
      }
    }
  }
  return out;
}

// Fat-tree and leaf-spine leaves split their ports between nodes and uplinks in the
// oversubscription ratio; a rail-optimized leaf takes one NIC from each of radix/2 nodes.
int switch_hops(const ClusterConfig& c, int nodes) {
  const FabricConfig& f = c.fabric;
  if (nodes <= 1) return 0;
  if (f.topology == TopologyKind::kSingleSwitch) return 1;
  const double o = std::max(f.oversubscription, 1e-9);
  const int down_ports = std::max(1, static_cast<int>(f.switch_radix * o / (1 + o)));
  const int nodes_per_leaf =
      f.topology == TopologyKind::kRailOptimized
          ? down_ports
          : std::max(1, down_ports / std::max(1, c.node.nics_per_node * c.node.links_per_nic));
  if (nodes <= nodes_per_leaf) return 1;
  if (f.topology == TopologyKind::kFatTree && f.tiers >= 3) {
    const int nodes_per_pod = nodes_per_leaf * std::max(1, f.switch_radix / 2);
    if (nodes > nodes_per_pod) return 5;
  }
  return 3;
}

Result<CollectiveTopology> group_topology(const ClusterConfig& c, int size, int stride,
                                          bool siblings_active) {
  const int total = c.total_gpus();
  const int gpn = std::max(1, c.node.gpus_per_node);
  if (size < 1) return Error{"a communicator needs at least 1 GPU, got " + std::to_string(size)};
  if (stride < 1) return Error{"rank stride must be at least 1, got " + std::to_string(stride)};
  const long span = static_cast<long>(size - 1) * stride + 1;
  if (span > total) {
    return Error{std::to_string(size) + " GPUs" +
                 (stride > 1 ? " " + std::to_string(stride) + " ranks apart" : std::string()) +
                 " do not fit the cluster's " + std::to_string(total) + " GPUs (" +
                 std::to_string(c.nodes) + " nodes x " + std::to_string(gpn) + ")"};
  }
  CollectiveTopology t;
  t.ranks = size;
  t.ranks_per_node = stride >= gpn ? 1 : std::min(size, gpn / stride);
  t.nodes = (size + t.ranks_per_node - 1) / t.ranks_per_node;
  t.gpu_arch = arch_family(c.node.gpu.arch);
  t.scale_up_technology = c.node.scale_up.technology;
  t.scale_up_Bps = c.node.scale_up.per_gpu_Bps;
  t.switch_reduction = c.node.scale_up.switch_reduction;
  const NicSpec& nic = c.node.nic;
  if (c.node.nics_per_node > 0 && nic.line_rate_Bps > 0) {
    // A NIC reaches its GPUs through one PCIe x16 link: bonding more links than that carries
    // (8 x 200G on one NIC) cannot go faster than the link.
    const double pcie_Bps = c.node.gpu.pcie_Bps();
    double nic_Bps = c.node.links_per_nic * nic.line_rate_Bps * nic.protocol_efficiency;
    if (pcie_Bps > 0) nic_Bps = std::min(nic_Bps, pcie_Bps);
    const int sharing = siblings_active ? std::max(1, gpn / t.ranks_per_node) : 1;
    t.nic_Bps = nic_Bps;
    t.nics_per_node = c.node.nics_per_node;
    t.node_network_Bps = c.node.nics_per_node * nic_Bps / sharing;
  }
  if (t.nodes > 1 && t.node_network_Bps <= 0) {
    return Error{std::to_string(size) + " GPUs span " + std::to_string(t.nodes) +
                 " nodes, but cluster.node has no NIC (nics_per_node, nic)"};
  }
  const int hops = switch_hops(c, t.nodes);
  t.network_latency_s = hops > 0 ? nic.latency_s + (hops - 1) * c.fabric.switch_spec.latency_s : 0;
  t.in_network_reduction = c.fabric.in_network_reduction && nic.in_network_reduction_capable;
  return t;
}

}  // namespace

std::string_view to_string(CollectiveOp op) { return name_of(op, kOpNames); }
std::string_view to_string(CollectiveAlgorithm a) { return name_of(a, kAlgorithmNames); }
std::string_view to_string(CollectiveProtocol p) { return name_of(p, kProtocolNames); }
std::string_view to_string(CollectiveBottleneck b) { return name_of(b, kBottleneckNames); }

bool parse_collective_op(std::string_view name, CollectiveOp* out) {
  return parse_name(name, kOpNames, out);
}
std::string collective_op_names() { return names_of(kOpNames); }
std::string collective_algorithm_names() { return names_of(kAlgorithmNames); }
bool parse_collective_algorithm(std::string_view name, CollectiveAlgorithm* out) {
  return parse_name(name, kAlgorithmNames, out);
}
bool parse_collective_protocol(std::string_view name, CollectiveProtocol* out) {
  return parse_name(name, kProtocolNames, out);
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  CS_ASSERT(ranks >= 1, "a communicator has at least one rank");
  switch (op) {
    case Op::kAllReduce:
      return 2.0 * (ranks - 1) / ranks;
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAllToAll:
      return double(ranks - 1) / ranks;
    case Op::kBroadcast:
    case Op::kReduce:
    case Op::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

Result<CollectiveTopology> collective_topology(const ClusterConfig& cluster, int ranks) {
  return group_topology(cluster, ranks, 1, false);
}

Result<CollectiveTopology> parallel_group_topology(const ClusterConfig& cluster, int group_size,
                                                   int stride) {
  return group_topology(cluster, group_size, stride, true);
}

std::vector<CollectiveEstimate> collective_candidates(const CollectiveTopology& topology,
                                                      CollectiveOp op, double size_bytes,
                                                      const CollectiveParams& params) {
  if (topology.ranks <= 1) return {};
  std::string ignored;
  return enumerate(topology, params, op, size_bytes, Algo::kAuto, Proto::kAuto, &ignored);
}

Result<CollectiveEstimate> estimate_collective(const CollectiveTopology& topology,
                                               const CollectiveRequest& request,
                                               const CollectiveParams& params) {
  const Op op = request.op;
  const double bytes = request.size_bytes;
  CS_ASSERT(bytes >= 0 && std::isfinite(bytes), "collective size must be finite and >= 0");
  if (topology.ranks <= 1) {
    Algo a = request.algorithm;
    if (a == Algo::kAuto) a = point_to_point(op) ? Algo::kP2p : Algo::kRing;
    const Proto p = request.protocol == Proto::kAuto ? Proto::kSimple : request.protocol;
    return finish(topology, params, op, bytes, a, p, Terms{});
  }
  std::string first_error;
  CS_ASSERT(request.dispatch.rank_share > 0 && request.dispatch.rank_share <= 1,
            "an alltoall's rank share is in (0, 1]");
  CS_ASSERT(request.dispatch.network_share > 0 && request.dispatch.network_share <= 1,
            "an alltoall's network share is in (0, 1]");
  const auto all = enumerate(topology, params, op, bytes, request.algorithm, request.protocol,
                             &first_error, request.dispatch);
  if (all.empty()) return Error{first_error};
  const auto best = std::min_element(all.begin(), all.end(), nccl_prefers);
  if (best->bottleneck == Neck::kCalibrated) {
    // A calibration fit times every algorithm and protocol it covers alike (it was measured
    // under NCCL's own choice): the one that ran is the choice NCCL's tuner makes, which the
    // uncalibrated model makes, not the first of the tie. The simulator lowers that one (an
    // all-gather of 478 MiB is Simple, not LL at a fraction of the links).
    std::string ignored;
    const auto plain = enumerate(topology, uncalibrated(params), op, bytes, request.algorithm,
                                 request.protocol, &ignored, request.dispatch);
    if (!plain.empty()) {
      const CollectiveEstimate& tuner = *std::min_element(plain.begin(), plain.end(), nccl_prefers);
      const auto same = std::find_if(all.begin(), all.end(), [&](const CollectiveEstimate& e) {
        return e.algorithm == tuner.algorithm && e.protocol == tuner.protocol &&
               e.bottleneck == Neck::kCalibrated && e.time_s <= best->time_s * (1 + 1e-12);
      });
      if (same != all.end()) return *same;
    }
  }
  return *best;
}

double p2p_peer_channel_cap_Bps(const CollectiveTopology& topology, const CollectiveParams& params,
                                double per_peer_bytes) {
  return Model(topology, params).p2p_peer_cap_Bps(per_peer_bytes);
}

double ring_channel_bus_Bps(const CollectiveTopology& topology, const CollectiveParams& params,
                            CollectiveOp op) {
  if (topology.ranks < 2 || (topology.nodes > 1 && params.max_channels <= 0)) return 0;
  return Model(topology, params).ring_channel_bus(op).Bps;
}

void apply_correction(const CollectiveCorrection& c, CollectiveAlgorithm algorithm,
                      double* latency_s, double* bandwidth_s) {
  CS_ASSERT(c.bandwidth_scale > 0, "a calibration correction needs a positive bandwidth scale");
  *latency_s = std::max(0.0, *latency_s + c.extra_latency_s);
  if (std::find(c.excluded.begin(), c.excluded.end(), algorithm) == c.excluded.end()) {
    *bandwidth_s /= c.bandwidth_scale;
  }
}

bool is_calibrated(const CollectiveParams& params) {
  return !params.fits.empty() || !params.corrections.empty();
}

CollectiveParams uncalibrated(CollectiveParams params) {
  params.fits.clear();
  params.corrections.clear();
  return params;
}

std::vector<CollectiveEstimate> enabled_collective_candidates(
    const CollectiveTopology& topology, CollectiveOp op, double size_bytes,
    const CollectiveParams& params, const std::vector<std::string>& disabled) {
  std::vector<CollectiveEstimate> out;
  if (topology.ranks <= 1) {
    auto e = estimate_collective(topology, {op, size_bytes}, params);
    if (e) out.push_back(*e);
    return out;
  }
  for (auto& c : collective_candidates(topology, op, size_bytes, params)) {
    const std::string_view algo = to_string(c.algorithm);
    if (std::find(disabled.begin(), disabled.end(), algo) == disabled.end()) out.push_back(c);
  }
  return out;
}

Result<CollectiveEstimate> cheapest_enabled_collective(const CollectiveTopology& topology,
                                                       CollectiveOp op, double size_bytes,
                                                       const CollectiveParams& params,
                                                       const std::vector<std::string>& disabled) {
  const auto all = enabled_collective_candidates(topology, op, size_bytes, params, disabled);
  if (all.empty()) {
    return Error{std::string(to_string(op)) + " on " + std::to_string(topology.ranks) +
                 " ranks: every algorithm the model has is disabled"};
  }
  return *std::min_element(all.begin(), all.end(), nccl_prefers);
}

}  // namespace clustersim::models
