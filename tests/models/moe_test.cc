// Mixture-of-experts workloads: the scenario keys and their errors, the EP all-to-all bytes,
// the experts' memory and compute, each by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "models/compute_model.h"
#include "models/layer_model.h"
#include "models/scenario.h"
#include "models/step_model.h"
#include "models/transformer_model.h"

using namespace clustersim::models;

namespace {

// Mixtral 8x7B on 2 nodes of 8 H100: tp 2 + sp, dp 8, ep 8 (consecutive ranks: one node).
std::string mixtral(const std::string& moe = "    imbalance: 1.25\n",
                    const std::string& parallelism = "    tp: 2\n    sp: true\n    dp: 8\n"
                                                     "    ep: 8\n    zero: 1\n") {
  return "cluster:\n"
         "  nodes: 2\n"
         "  node:\n"
         "    gpu: h100-sxm\n"
         "    gpus_per_node: 8\n"
         "    scale_up: nvlink4\n"
         "    nics_per_node: 8\n"
         "    nic: ib-ndr\n"
         "  fabric:\n"
         "    topology: fat-tree\n"
         "workload:\n"
         "  model: mixtral-8x7b\n"
         "  seq_len: 4096\n"
         "  global_batch: 64\n"
         "  micro_batch: 1\n"
         "  moe:\n" +
         moe +
         "  parallelism:\n" + parallelism;
}

Scenario load_ok(const std::string& text) {
  auto s = load_scenario_text(text, "moe.yaml");
  INFO((s.ok() ? std::string() : s.message()));
  REQUIRE(s.ok());
  return std::move(s).value();
}

std::string load_error(const std::string& text) {
  auto s = load_scenario_text(text, "moe.yaml");
  REQUIRE_FALSE(s.ok());
  return s.message();
}

const CommCall* find_call(const std::vector<CommCall>& calls, ParallelDim dim, CommPhase phase,
                          CollectiveOp op, int from = 0) {
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto& c = calls[i];
    if (c.dim == dim && c.phase == phase && c.op == op && from-- == 0) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("moe: scenario keys and what they refuse, with file:line:col") {
    const Scenario s = load_ok(mixtral());
    CHECK(s.workload.model.moe.experts == 8);
    CHECK(s.workload.parallelism.ep == 8);
    CHECK(s.workload.moe_routing.imbalance == doctest::Approx(1.25));
    CHECK(s.workload.moe_routing.busiest_share() == doctest::Approx(1.25));
    const Scenario cf = load_ok(mixtral("    capacity_factor: 1.5\n"));
    CHECK(cf.workload.moe_routing.busiest_share() == doctest::Approx(1.5));
    // A custom MoE: dimensions under workload.moe override the preset's.
    const Scenario top1 = load_ok(mixtral("    top_k: 1\n    experts: 16\n"));
    CHECK(top1.workload.model.moe.top_k == 1);
    CHECK(top1.workload.model.moe.experts == 16);
    CHECK(top1.workload.model.name.find("modified") != std::string::npos);

    CHECK(load_error(mixtral("    imbalance: 0.9\n")).find("moe.yaml:17:16: ") == 0);
    CHECK(load_error(mixtral("    imbalance: 1.2\n    capacity_factor: 1.1\n"))
              .find("not both") != std::string::npos);
    CHECK(load_error(mixtral("    top_k: 9\n")).find("exceeds the 8 experts") != std::string::npos);
    CHECK(load_error(mixtral("    nonsense: 1\n")).find("nonsense") != std::string::npos);
    const std::string ep3 =
        load_error(mixtral("    imbalance: 1\n", "    tp: 2\n    sp: true\n    dp: 8\n    ep: 3\n"));
    CHECK(ep3.find("moe.yaml:") == 0);
    CHECK(ep3.find("ep 3 does not divide the 8 experts") != std::string::npos);
    CHECK(load_error(mixtral("    imbalance: 1\n", "    tp: 2\n    dp: 8\n    ep: 8\n"))
              .find("needs sp: true") != std::string::npos);
    CHECK(load_error(mixtral("    imbalance: 1\n", "    tp: 1\n    dp: 16\n    ep: 32\n"))
              .find("ep 32 does not divide") != std::string::npos);
    // Any moe key on a dense model is refused (top_k alone was once ignored).
    std::string dense_moe = mixtral("    top_k: 2\n");
    dense_moe.replace(dense_moe.find("mixtral-8x7b"), 12, "llama3-8b");
    CHECK(load_error(dense_moe).find("needs a mixture-of-experts model: give experts") !=
          std::string::npos);
    // ep on a dense model.
    std::string dense = mixtral("    imbalance: 1\n", "    tp: 2\n    sp: true\n    dp: 8\n    ep: 2\n");
    dense.replace(dense.find("mixtral-8x7b"), 12, "llama3-8b");
    dense.replace(dense.find("  moe:\n    imbalance: 1\n"), 24, "");
    CHECK(load_error(dense).find("needs a mixture-of-experts model") != std::string::npos);
  }

  TEST_CASE("moe: the EP all-to-all bytes and counts by hand") {
    const Scenario s = load_ok(mixtral());
    const auto calls = communication_per_step(s.workload);
    // One rank's send buffer: its sequence shard (4096 / tp 2) x top_k 2 x imbalance 1.25 x
    // hidden 4096 x 2 bytes; dispatch + combine in each of the 32 MoE layers forward, and with
    // no recompute the same backward.
    const double bytes = 4096.0 / 2 * 2 * 1.25 * 4096 * 2;
    const CommCall* fwd = find_call(calls, ParallelDim::kEp, CommPhase::kForward, CollectiveOp::kAllToAll);
    const CommCall* bwd = find_call(calls, ParallelDim::kEp, CommPhase::kBackward, CollectiveOp::kAllToAll);
    REQUIRE(fwd != nullptr);
    REQUIRE(bwd != nullptr);
    CHECK(fwd->size_bytes == doctest::Approx(bytes));
    CHECK(fwd->count == 64);
    CHECK(bwd->count == 64);
    CHECK(fwd->group_size == 8);
    CHECK(fwd->group_stride == 1);
    // TP: no shared experts, so each MoE layer keeps only the attention block's all-gather and
    // reduce-scatter.
    const CommCall* ag = find_call(calls, ParallelDim::kTp, CommPhase::kForward, CollectiveOp::kAllGather);
    REQUIRE(ag != nullptr);
    CHECK(ag->count == 32);
    // The experts' gradients reduce over tp x dp / ep = 2 ranks, 8 apart: 32 layers x one
    // expert of 3 x 4096 x 14336 in fp32 (Megatron's default gradient buffer).
    const CommCall* dense_rs = find_call(calls, ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kReduceScatter);
    const CommCall* expert_rs =
        find_call(calls, ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kReduceScatter, 1);
    REQUIRE(dense_rs != nullptr);
    REQUIRE(expert_rs != nullptr);
    CHECK(dense_rs->group_size == 8);
    CHECK(dense_rs->group_stride == 2);
    CHECK(expert_rs->group_size == 2);
    CHECK(expert_rs->group_stride == 8);
    CHECK(expert_rs->size_bytes ==
          doctest::Approx(32 * 3.0 * 4096 * 14336 * gradient_bytes(s.workload)));
  }

  TEST_CASE("moe: expert weights sharded over ep, their optimizer over the expert DP group") {
    const Scenario s = load_ok(mixtral());
    const auto pc = count_parameters(s.workload.model);
    const MemoryBreakdown m = memory_per_gpu(s.workload);
    CHECK(m.expert_parameters == doctest::Approx(32 * pc.expert * 8 / 8));
    // Dense: attention over tp 2, norms and the router whole; embedding and head over tp.
    const double dense = 32 * (pc.attention_per_layer / 2 + pc.norms_per_layer + pc.router_per_layer) +
                         pc.embedding / 2 + pc.output_head / 2 + pc.final_norm;
    CHECK(m.parameters == doctest::Approx(dense));
    // ZeRO-1: 12 bytes of optimizer state per parameter, dense over dp 8, experts over 2.
    CHECK(m.optimizer_bytes == doctest::Approx(12 * (dense / 8 + m.expert_parameters / 2)));
    CHECK(m.weights_bytes == doctest::Approx(2 * (dense + m.expert_parameters)));
    // More expert parallelism holds fewer experts per GPU.
    Scenario wide = s;
    wide.workload.parallelism.ep = 4;
    CHECK(memory_per_gpu(wide.workload).expert_parameters ==
          doctest::Approx(2 * m.expert_parameters));
  }

  TEST_CASE("moe: a MoE layer's experts compute their share of the routed tokens") {
    const Scenario s = load_ok(mixtral("    imbalance: 1\n"));
    const GpuSpec& gpu = s.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const LayerKernels dense = layer_kernels(gpu, s.workload, p, false);
    const LayerKernels moe = layer_kernels(gpu, s.workload, p, true);
    // Mixtral's experts are its dense MLP's shape; a token goes through 2 of them unsplit by TP
    // (on its sequence shard) where the dense MLP is TP-split: 2 x 2 = 4 times the MLP work per
    // GPU. The router adds little; so the MoE layer's GEMMs take more than the dense layer's.
    CHECK(moe.gemm_forward_s > dense.gemm_forward_s * 1.5);
    Scenario top1 = s;
    top1.workload.model.moe.top_k = 1;
    const LayerKernels one = layer_kernels(gpu, top1.workload, p, true);
    CHECK(one.gemm_forward_s < moe.gemm_forward_s);
    // A busier GPU (imbalance) computes more.
    Scenario busy = s;
    busy.workload.moe_routing.imbalance = 1.5;
    CHECK(layer_kernels(gpu, busy.workload, p, true).gemm_forward_s > moe.gemm_forward_s * 1.3);
    // The stage has 32 MoE layers and no dense one.
    CHECK(moe_layers_of_stage(s.workload, 0) == 32);
  }

  TEST_CASE("moe: a GPU's local experts are timed one by one, each with its own last wave") {
    // Qwen3-30B-A3B on one node of 8 H100, ep 8: 16 local experts; one 4096-token sequence per
    // micro-batch routes 4096 x 8 (top-8) rows to this GPU, 2048 per expert.
    std::string text = mixtral("    imbalance: 1\n", "    tp: 1\n    dp: 8\n    ep: 8\n");
    text.replace(text.find("nodes: 2"), 8, "nodes: 1");
    text.replace(text.find("mixtral-8x7b"), 12, "qwen3-30b-a3b");
    const Scenario s = load_ok(text);
    const GpuSpec& gpu = s.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    auto fwd = [&](double m, double n, double k) {
      return gemm_time(gpu, Precision::kBf16, {m, n, k}, p).time_s;
    };
    // By hand: QKV (32 query heads and 2 x 4 key/value heads of 128), the output projection,
    // the router over 128 experts, then 16 times each expert's up (gate + up, 2 x 768) and down
    // projections.
    const double attention = fwd(4096, 5120, 2048) + fwd(4096, 2048, 4096);
    const double router = fwd(4096, 128, 2048);
    const double experts = 16 * (fwd(2048, 1536, 2048) + fwd(2048, 2048, 768));
    const LayerKernels moe = layer_kernels(gpu, s.workload, p, true);
    CHECK(moe.gemm_forward_s == doctest::Approx(attention + router + experts).epsilon(1e-9));
    // Device call 30 measured the 16 up projections back to back at 0.903 of one GEMM of all
    // their rows (603 against 668 TFLOP/s on an H200; 593 on Transformer Engine's 4 streams,
    // 603 as CUTLASS's grouped kernel): the per-expert waves give 0.897.
    CHECK(16 * fwd(2048, 1536, 2048) ==
          doctest::Approx(fwd(16 * 2048, 1536, 2048) / 0.897).epsilon(0.002));
  }

  TEST_CASE("moe: a hierarchical dispatcher sends a token once per node its experts are on") {
    // Qwen3-235B-A22B (128 experts, top 8) with ep 32 over four nodes: 32 experts per node. NCCL's
    // all-to-all sends every routed copy, limit or not. A hierarchical dispatcher (DeepEP) sends
    // a token once to each node holding one of its 8 experts: 4 (1 - C(96, 8) / C(128, 8)) =
    // 3.629 nodes of 4, so 0.4536 of the copies cross; limited to 2 nodes (chosen for holding
    // its best experts), 2 of 8.
    const std::string text =
        "cluster:\n  nodes: 4\n  node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4, "
        "nics_per_node: 8, nic: ib-ndr}\n  fabric: {topology: fat-tree}\n"
        "workload:\n  model: qwen3-235b-a22b\n  seq_len: 4096\n  global_batch: 32\n"
        "  moe: {max_nodes_per_token: 2}\n  framework: {ep_dispatcher: hierarchical}\n"
        "  parallelism: {tp: 1, dp: 32, ep: 32, zero: 1}\n";
    const Scenario limited = load_ok(text);
    CHECK(limited.workload.moe_routing.max_nodes_per_token == 2);
    CHECK(limited.workload.framework.ep_hierarchical);
    Scenario unlimited = limited;
    unlimited.workload.moe_routing.max_nodes_per_token = 0;
    Scenario flat = limited;
    flat.workload.framework.ep_hierarchical = false;
    auto ep_call = [](const Scenario& sc) {
      for (const auto& c : communication_per_step(sc.workload)) {
        if (c.dim == ParallelDim::kEp) return c;
      }
      FAIL("no EP call");
      return CommCall{};
    };
    // The dispatch on the call's own group (ep 32 over the cluster's 4 nodes).
    auto dispatch = [&](const CommCall& c) {
      auto group = parallel_group_topology(limited.cluster, c.group_size, c.group_stride);
      REQUIRE(group.ok());
      return alltoall_dispatch(c, *group);
    };
    CHECK(dispatch(ep_call(limited)).network_share == doctest::Approx(0.25));
    CHECK(dispatch(ep_call(unlimited)).network_share == doctest::Approx(0.45363).epsilon(1e-4));
    CHECK(dispatch(ep_call(flat)).network_share == 1);
    // One node (ep 8 of 8 GPUs): nothing crosses, the share is moot.
    CommCall one_node = ep_call(unlimited);
    one_node.group_size = 8;
    CHECK(dispatch(one_node).network_share == 1);
    // Not a MoE all-to-all: every byte crosses.
    CHECK(dispatch(CommCall{}).network_share == 1);
    auto topo = parallel_group_topology(limited.cluster, 32, 1);
    REQUIRE(topo.ok());
    const double bytes = ep_call(limited).size_bytes;
    auto full = estimate_collective(*topo, {CollectiveOp::kAllToAll, bytes});
    auto half = estimate_collective(
        *topo, {CollectiveOp::kAllToAll, bytes, CollectiveAlgorithm::kAuto,
                CollectiveProtocol::kAuto, {0.5, false}});
    REQUIRE(full.ok());
    REQUIRE(half.ok());
    CHECK(full->bottleneck == CollectiveBottleneck::kNetwork);
    CHECK(half->bandwidth_s == doctest::Approx(0.5 * full->bandwidth_s));
    auto a = predict_step(limited, default_step_params(limited.cluster));
    auto b = predict_step(flat, default_step_params(flat.cluster));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->breakdown.ep.total_s < 0.3 * b->breakdown.ep.total_s);
    // A limit of all 4 nodes limits nothing: the unlimited expectation.
    Scenario all_four = limited;
    all_four.workload.moe_routing.max_nodes_per_token = 4;
    CHECK(dispatch(ep_call(all_four)).network_share == doctest::Approx(0.45363).epsilon(1e-4));
    CHECK(load_error(mixtral("    imbalance: 1\n  framework: {ep_dispatcher: deepep}\n"))
              .find("hierarchical") != std::string::npos);
    // On a dense model the key would be ignored: refused.
    std::string dense = text;
    dense.replace(dense.find("qwen3-235b-a22b"), 15, "llama3-8b");
    dense.replace(dense.find("  moe: {max_nodes_per_token: 2}\n"), 32, "");
    dense.replace(dense.find(", ep: 32"), 8, "");
    CHECK(load_error(dense).find("is dense") != std::string::npos);
    CHECK(load_error(mixtral("    max_nodes_per_token: 0\n")).find("at least 1") !=
          std::string::npos);
  }

  TEST_CASE("moe: a hierarchical dispatcher sends a token once per GPU; consecutive routing") {
    // DeepEP and HybridEP send a token once to each GPU holding any of its experts; the
    // receiving GPU makes the expert-level copies. Qwen3-30B-A3B's 128 experts, top 8, on one
    // node (ep 8, 16 a GPU): G = 8 (1 - C(112, 8) / C(128, 8)) = 5.339 GPUs a token, so
    // 5.339 / 8 = 0.6674 of the routed copies cross NVLink; NCCL's all-to-all sends every copy.
    const std::string text =
        "cluster:\n  nodes: 8\n  node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4, "
        "nics_per_node: 8, nic: ib-ndr}\n  fabric: {topology: fat-tree}\n"
        "workload:\n  model: qwen3-30b-a3b\n  seq_len: 4096\n  global_batch: 64\n"
        "  framework: {ep_dispatcher: hierarchical}\n"
        "  parallelism: {tp: 1, dp: 64, ep: 8, zero: 1}\n";
    const Scenario random = load_ok(text);
    CHECK_FALSE(random.workload.moe_routing.consecutive);
    auto dispatch_of = [](const Scenario& sc) {
      for (const auto& c : communication_per_step(sc.workload)) {
        if (c.dim != ParallelDim::kEp) continue;
        auto group = parallel_group_topology(sc.cluster, c.group_size, c.group_stride);
        REQUIRE(group.ok());
        return alltoall_dispatch(c, *group);
      }
      FAIL("no EP call");
      return AllToAllDispatch{};
    };
    CHECK(dispatch_of(random).rank_share == doctest::Approx(0.66742).epsilon(1e-4));
    CHECK(dispatch_of(random).network_share == 1);  // one node: nothing crosses
    Scenario flat = random;
    flat.workload.framework.ep_hierarchical = false;
    CHECK(dispatch_of(flat).rank_share == 1);
    // NeMo AutoModel's fake balanced gate: token i to experts (8 i + j) mod 128, a window of 8
    // inside one GPU's 16: one GPU a token.
    std::string text_consecutive = text;
    text_consecutive.replace(text_consecutive.find("  framework:"), 12,
                             "  moe: {routing: consecutive}\n  framework:");
    const Scenario consecutive = load_ok(text_consecutive);
    CHECK(consecutive.workload.moe_routing.consecutive);
    CHECK(dispatch_of(consecutive).rank_share == doctest::Approx(1.0 / 8));
    // DeepSeek-V3's 256 experts over ep 64 on 8 nodes (4 a GPU, 32 a node): a window of 8 on
    // two GPUs of one node; random routing meets 5.29 nodes and 7.68 GPUs.
    Scenario ds = consecutive;
    ds.workload.model = *find_model("deepseek-v3");
    ds.workload.parallelism.ep = 64;
    CHECK(dispatch_of(ds).rank_share == doctest::Approx(2.0 / 8));
    CHECK(dispatch_of(ds).network_share == doctest::Approx(1.0 / 8));
    CHECK(dispatch_of(ds).forward_in_node);
    ds.workload.moe_routing.consecutive = false;
    CHECK(dispatch_of(ds).network_share == doctest::Approx(5.2947 / 8).epsilon(1e-3));
    CHECK(dispatch_of(ds).rank_share == doctest::Approx(7.6758 / 8).epsilon(1e-3));
    // Kimi K2's 384 experts over ep 32 (12 a GPU): windows start at 0, 8, 16 (mod 24), on 1, 2
    // and 1 GPUs: 4/3 a token.
    Scenario kimi = consecutive;
    kimi.workload.model = *find_model("kimi-k2");
    kimi.workload.parallelism.ep = 32;
    CHECK(dispatch_of(kimi).rank_share == doctest::Approx(4.0 / 3 / 8));
    CHECK(dispatch_of(kimi).network_share == doctest::Approx(1.0 / 8));
    // The analytic all-to-all on one node takes the share of its scale-up bytes.
    auto topo = parallel_group_topology(random.cluster, 8, 1);
    REQUIRE(topo.ok());
    const double bytes = 256e6;
    AllToAllDispatch half;
    half.rank_share = 0.5;
    auto all = estimate_collective(*topo, {CollectiveOp::kAllToAll, bytes});
    auto deduplicated = estimate_collective(
        *topo, {CollectiveOp::kAllToAll, bytes, CollectiveAlgorithm::kAuto,
                CollectiveProtocol::kAuto, half});
    REQUIRE(all.ok());
    REQUIRE(deduplicated.ok());
    CHECK(deduplicated->bandwidth_s == doctest::Approx(0.5 * all->bandwidth_s));
    // An unknown routing is refused where it stands.
    std::string bad = text_consecutive;
    bad.replace(bad.find("consecutive"), 11, "sequential");
    CHECK(load_error(bad).find("workload.moe.routing: unknown value 'sequential'") !=
          std::string::npos);
  }

  TEST_CASE("moe: expert tensor parallelism splits each expert over etp GPUs") {
    // Mixtral 8x7B (8 experts of 3 x 4096 x 14336) on 16 GPUs of a stage (tp 2, dp 8): ep 4 x
    // etp 2 holds the experts as ep 8 does (8 of 8 experts' weights over 8 GPUs), in 2 expert
    // data-parallel copies; the EP ranks are 2 apart and each expert-TP pair gathers what was
    // dispatched to it (2 x the all-to-all's buffer) and reduce-scatters the output, each MoE
    // layer forward and twice backward with full recompute (here: none, once).
    Scenario ep8 = load_ok(mixtral("    imbalance: 1\n", "    tp: 2\n    sp: true\n    dp: 8\n"
                                                     "    ep: 8\n    zero: 1\n"));
    Scenario etp2 = load_ok(mixtral("    imbalance: 1\n", "    tp: 2\n    sp: true\n    dp: 8\n"
                                                      "    ep: 4\n    etp: 2\n    zero: 1\n"));
    CHECK(etp2.workload.parallelism.etp == 2);
    CHECK(expert_data_parallel(etp2.workload) == 2);
    const MemoryParams mp;
    CHECK(memory_per_gpu(etp2.workload, mp).expert_parameters ==
          doctest::Approx(memory_per_gpu(ep8.workload, mp).expert_parameters));
    CHECK(memory_per_gpu(etp2.workload, mp).expert_parameters ==
          doctest::Approx(32.0 * 8 * 3 * 4096.0 * 14336 / 8));
    double a2a = 0, gather = 0, rs = 0;
    int a2a_stride = 0, gather_group = 0;
    for (const auto& c : communication_per_step(etp2.workload)) {
      if (c.dim != ParallelDim::kEp || c.phase != CommPhase::kForward) continue;
      if (c.op == CollectiveOp::kAllToAll) {
        a2a = c.size_bytes;
        a2a_stride = c.group_stride;
        CHECK(c.group_size == 4);
      } else if (c.op == CollectiveOp::kAllGather) {
        gather = c.size_bytes;
        gather_group = c.group_size;
        CHECK(c.group_stride == 1);
        CHECK(c.count == 32);  // one per MoE layer of the stage
      } else if (c.op == CollectiveOp::kReduceScatter) {
        rs = c.size_bytes;
      }
    }
    // One rank's buffer: 4096 / tp 2 tokens x top 2 x 4096 x 2 bytes = 32 MiB.
    CHECK(a2a == doctest::Approx(2048.0 * 2 * 4096 * 2));
    CHECK(a2a_stride == 2);
    CHECK(gather_group == 2);
    CHECK(gather == doctest::Approx(2 * a2a));
    CHECK(rs == doctest::Approx(2 * a2a));
    // The same expert FLOPs per GPU, in GEMMs twice as tall and half as wide.
    const auto& gpu = etp2.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const double t1 = layer_kernels(gpu, ep8.workload, p, true).gemm_mlp_forward_s;
    const double t2 = layer_kernels(gpu, etp2.workload, p, true).gemm_mlp_forward_s;
    CHECK(t2 == doctest::Approx(t1).epsilon(0.1));
    // Refused: etp not dividing the expert FFN, ep x etp not dividing tp x cp x dp, a dense model.
    CHECK(load_error(mixtral("    imbalance: 1\n", "    tp: 2\n    sp: true\n    dp: 8\n"
                                                "    ep: 2\n    etp: 3\n    zero: 1\n"))
              .find("does not divide expert_ffn_hidden 14336") != std::string::npos);
    CHECK(load_error(mixtral("    imbalance: 1\n", "    tp: 2\n    sp: true\n    dp: 8\n"
                                                "    ep: 8\n    etp: 4\n    zero: 1\n"))
              .find("ep x etp = 32 does not divide tp x cp x dp = 16") != std::string::npos);
  }

  TEST_CASE("moe: the step pays the EP all-to-all, hidden with ep_comm_overlap") {
    Scenario s = load_ok(mixtral());
    auto r = predict_step(s, default_step_params(s.cluster));
    REQUIRE(r.ok());
    CHECK(r->breakdown.ep.total_s > 0);
    CHECK(r->breakdown.ep.exposed_s == doctest::Approx(r->breakdown.ep.total_s));
    s.workload.framework.ep_comm_overlap = true;
    auto hidden = predict_step(s, default_step_params(s.cluster));
    REQUIRE(hidden.ok());
    CHECK(hidden->breakdown.ep.exposed_s < 0.01 * r->breakdown.ep.total_s);
    CHECK(hidden->step_time_s < r->step_time_s);
    // Fill and drain are lone passes, whose all-to-alls no other micro-batch hides: the 1F1B
    // bubble is the same with and without the overlap.
    Scenario piped = s;
    piped.workload.parallelism.pp = 2;
    piped.workload.parallelism.dp /= 2;
    piped.workload.framework.ep_comm_overlap = false;
    auto piped_r = predict_step(piped, default_step_params(piped.cluster));
    piped.workload.framework.ep_comm_overlap = true;
    auto piped_h = predict_step(piped, default_step_params(piped.cluster));
    REQUIRE(piped_r.ok());
    REQUIRE(piped_h.ok());
    CHECK(piped_r->breakdown.bubble_s > 0);
    CHECK(piped_h->breakdown.bubble_s == doctest::Approx(piped_r->breakdown.bubble_s));
    CHECK(piped_h->breakdown.ep.exposed_s < 0.5 * piped_r->breakdown.ep.exposed_s);
    // Only paired passes hide them: under GPipe's order (every forward, then every backward)
    // no forward runs beside a backward, and all of it is exposed again.
    REQUIRE(s.workload.parallelism.pp == 1);
    s.workload.parallelism.pp_schedule = PipelineSchedule::kGpipe;
    CHECK(unpaired_passes(s.workload, 0) == s.workload.micro_batches_per_step());
    auto gpipe = predict_step(s, default_step_params(s.cluster));
    REQUIRE(gpipe.ok());
    CHECK(gpipe->breakdown.ep.exposed_s == doctest::Approx(r->breakdown.ep.total_s));
    s.workload.parallelism.pp_schedule = PipelineSchedule::k1F1B;
    // MFU counts the activated parameters: 6 x 12.9B per token plus attention.
    const auto f = flops_per_token(s.workload.model, 4096);
    CHECK(r->model_flops_per_step == doctest::Approx(64 * 4096 * f.training()));
    CHECK(f.dense_forward < 2 * 13.0e9);
  }

  TEST_CASE("moe: a MoE layer lasts at least the host's time to launch it") {
    // Mixtral's MoE layers (tp 2, one sequence): GPU time per layer well above 1 ms each way.
    Scenario s = load_ok(mixtral("    imbalance: 1\n"));
    const GpuSpec& gpu = s.cluster.node.gpu;
    const ComputeParams params = default_step_params(s.cluster).compute;
    const LayerKernels moe = layer_kernels(gpu, s.workload, params, true);
    REQUIRE(s.workload.framework.moe_layer_host_s == doctest::Approx(8.2e-3));
    // By hand: the wait is what the host's share outlasts the layer's GPU time, each way.
    for (double host : {0.0, 1e-3, 30e-3, 90e-3}) {
      s.workload.framework.moe_layer_host_s = host;
      const StageCompute st = stage_compute(gpu, s.workload, params).front();
      const double wait_fwd = std::max(0.0, host / 3 - moe.forward_s());
      const double wait_bwd = std::max(0.0, 2 * host / 3 - moe.backward_s());
      CHECK(st.host_wait_s == doctest::Approx(32 * (wait_fwd + wait_bwd)));
      s.workload.framework.moe_layer_host_s = 0;
      const StageCompute gpu_only = stage_compute(gpu, s.workload, params).front();
      CHECK(st.forward_s - gpu_only.forward_s == doctest::Approx(32 * wait_fwd));
      CHECK(st.backward_s - gpu_only.backward_s == doctest::Approx(32 * wait_bwd));
      CHECK(st.tensor_s == doctest::Approx(gpu_only.tensor_s));
    }
    // Full recomputation launches the forward again in the backward.
    s.workload.parallelism.recompute = Recompute::kFull;
    s.workload.framework.moe_layer_host_s = 0.3;
    const StageCompute full = stage_compute(gpu, s.workload, params).front();
    CHECK(full.host_wait_s ==
          doctest::Approx(32 * (0.1 - moe.forward_s() + 0.3 - moe.backward_s() -
                                moe.recompute_s(Recompute::kFull))));
    // The step reports the wait, and collectives hidden while the GPU waits cost no compute.
    s.workload.parallelism.recompute = Recompute::kNone;
    s.workload.framework.ep_comm_overlap = true;
    const StepParams sp = default_step_params(s.cluster);
    auto r = predict_step(s, sp);
    REQUIRE(r.ok());
    CHECK(r->breakdown.host_wait_s ==
          doctest::Approx(r->micro_batches * r->stages.front().host_wait_s));
    CHECK(r->breakdown.overlap_interference_s ==
          doctest::Approx(overlap_interference_s(r->breakdown.hidden_comm_s(), sp,
                                                 r->breakdown.host_wait_s)));
    CHECK(overlap_interference_s(2.0, sp, 0.5) == doctest::Approx(1.5 * 0.61));
    CHECK(overlap_interference_s(2.0, sp, 3.0) == 0);
    // Refused on a dense model, like the other MoE framework keys.
    CHECK(load_error("cluster:\n  nodes: 1\n  node:\n    gpu: h100-sxm\n    gpus_per_node: 8\n"
                     "    scale_up: nvlink4\nworkload:\n  model: llama3-8b\n  seq_len: 4096\n"
                     "  global_batch: 8\n  framework:\n    moe_layer_host_time: 8ms\n"
                     "  parallelism:\n    dp: 8\n")
              .find("moe_layer_host_time: applies to a mixture-of-experts model") !=
          std::string::npos);
  }

  TEST_CASE("moe: PyTorch FSDP casts and copies a MoE layer's experts with its attention") {
    // FSDP2 over fp32 shards (weights_in_fp32, zero 3) gathers each layer's parameters: for a
    // MoE layer its local experts, router and attention (Qwen3-30B-A3B: 128 experts of 3 x 768
    // x 2048, the router's 2048 x 128, Q and O of 2048 x 4096, K and V of 2048 x 512). Halving
    // the shard saves the cast 3 bytes a parameter (read 4 / dp, write 2 / dp), forward and
    // (resharded) backward.
    auto layer = [](int dp) {
      auto s = load_scenario_text(
          "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: " + std::to_string(dp) +
              "}}\n"
              "workload:\n  model: qwen3-30b-a3b\n  layers: 4\n  seq_len: 4096\n"
              "  global_batch: " + std::to_string(2 * dp) + "\n  micro_batch: 2\n"
              "  framework: {kernels: compiled, weights_in_fp32: true}\n"
              "  parallelism: {tp: 1, dp: " + std::to_string(dp) + ", zero: 3, recompute: none}\n",
          "fsdp-moe.yaml");
      REQUIRE(s.ok());
      const GpuSpec& gpu = s->cluster.node.gpu;
      return std::pair{layer_kernels(gpu, s->workload, default_compute_params(gpu), true), gpu};
    };
    const auto [one, gpu] = layer(1);
    const auto [two, unused] = layer(2);
    const double params = 128 * 3 * 768 * 2048.0 + 2048 * 128 + 2 * 2048 * 4096 + 2 * 2048 * 512;
    const ComputeParams p = default_compute_params(gpu);
    const double cast = eager_bandwidth_Bps(gpu, p.eager.cast_down, p);
    CHECK(one.memory_forward_s - two.memory_forward_s == doctest::Approx(params * 3 / cast));
    CHECK(one.memory_backward_s - two.memory_backward_s == doctest::Approx(params * 3 / cast));
  }

  TEST_CASE("moe: a MoE layer in PyTorch's kernels moves every routed copy (TorchTitan's MoE)") {
    // Eager PyTorch as TorchTitan's MoE code runs it (train_step.py's MoEBlock): each routed
    // copy is gathered (4 h), scaled in fp32 (up-cast 6 h, product 8 h, down-cast 6 h), through
    // SiLU and the gate product (10 f) and added back into its token's row (6 h, scatter_add).
    // Four more copies a token (top 8 against top 4) add exactly those bytes forward.
    auto layer = [](int top_k, const char* kernels) {
      auto s = load_scenario_text(
          std::string("cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 1}}\n"
                      "workload:\n  model: qwen3-30b-a3b\n  layers: 4\n  seq_len: 4096\n"
                      "  global_batch: 2\n  micro_batch: 2\n  moe: {top_k: ") +
              std::to_string(top_k) + ", imbalance: 1}\n  framework: {kernels: " + kernels +
              ", weights_in_fp32: true, norm_kernel: fp32-ops}\n"
              "  parallelism: {tp: 1, dp: 1, zero: 3, recompute: none}\n",
          "torch-moe.yaml");
      REQUIRE(s.ok());
      const GpuSpec& gpu = s->cluster.node.gpu;
      return layer_kernels(gpu, s->workload, default_compute_params(gpu), true);
    };
    const Scenario probe = load_ok(
        "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 1}}\n"
        "workload: {model: qwen3-30b-a3b, seq_len: 4096, global_batch: 1}\n");
    const GpuSpec& gpu = probe.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const ComputeParams::EagerRates& r = p.eager;
    auto at = [&](const ComputeParams::EagerRate& kind, double bytes) {
      return bytes / eager_bandwidth_Bps(gpu, kind, p);
    };
    const double tokens = 8192, h = 2048, fe = 768;
    const double per_copy = at(r.same, 4 * h + 8 * h + 10 * fe) + at(r.cast_up, 6 * h) +
                            at(r.cast_down, 6 * h) + at(r.layout, 6 * h);
    const LayerKernels k8 = layer(8, "eager"), k4 = layer(4, "eager");
    CHECK(k8.memory_forward_s - k4.memory_forward_s == doctest::Approx(4 * tokens * per_copy));
    // Device call 43 (scenarios/measurements/call43, one H100, four of Qwen3-30B-A3B's layers
    // under FSDP2): torch.compile took 23.1 ms a step off the eager step's elementwise and copy
    // kernels (79.9 -> 56.8 ms); the model's four layers, 24.7 ms (compiled_elementwise_share
    // of eager's op list, measured on dense layers), 7% more.
    const LayerKernels c8 = layer(8, "compiled");
    const double saved_ms = 4e3 * (k8.memory_forward_s + k8.memory_backward_s -
                                   c8.memory_forward_s - c8.memory_backward_s);
    CHECK(saved_ms == doctest::Approx(24.7).epsilon(0.01));
    CHECK(std::abs(saved_ms / 23.1 - 1) < 0.1);
  }

  TEST_CASE("moe: attention widths follow head_dim (Qwen3) in memory and ring-attention bytes") {
    // Qwen3-235B: 64 query heads and 4 KV heads of 128, hidden 4096 (hidden / heads = 64): K and
    // V are 512 wide each, not 256.
    auto s = load_scenario_text(
        "cluster: {nodes: 4, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4, "
        "nics_per_node: 8, nic: ib-ndr}, fabric: {topology: fat-tree}}\n"
        "workload:\n  model: qwen3-235b-a22b\n  seq_len: 8192\n  global_batch: 32\n"
        "  parallelism: {tp: 1, dp: 16, cp: 2, ep: 32, zero: 1}\n",
        "q.yaml");
    REQUIRE(s.ok());
    for (const auto& c : communication_per_step(s->workload)) {
      if (c.dim != ParallelDim::kCp || c.phase != CommPhase::kForward) continue;
      // Each ring step passes K and V of the rank's 4096 tokens: 4 heads x (128 + 128) x 2 bytes.
      CHECK(c.size_bytes == doctest::Approx(4096.0 * 4 * 256 * 2));
    }
    WorkloadConfig wide = s->workload;
    wide.model.head_dim_override = 256;  // twice the K/V (and Q) width: more activations
    CHECK(memory_per_gpu(wide).activations_bytes > memory_per_gpu(s->workload).activations_bytes);
  }

  TEST_CASE("moe: gpt-oss, a window on half the layers and the keys that say so") {
    auto gpt_oss = [](const std::string& extra) {
      return "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
             "workload:\n"
             "  model: gpt-oss-120b\n" + extra +
             "  seq_len: 4096\n"
             "  global_batch: 64\n"
             "  parallelism: {tp: 1, dp: 8, ep: 8, zero: 1}\n";
    };
    const Scenario s = load_ok(gpt_oss(""));
    CHECK(s.workload.model.sliding_window == 128);
    CHECK(s.workload.model.windowed_share() == doctest::Approx(0.5));
    const GpuSpec& gpu = s.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    // The layer's attention is the mean of a windowed and a full one.
    const LayerKernels half = layer_kernels(gpu, s.workload, p, true);
    WorkloadConfig dense = s.workload;
    dense.model.sliding_window = 0;
    dense.model.sliding_window_layers = 0;
    const LayerKernels full = layer_kernels(gpu, dense, p, true);
    WorkloadConfig all = s.workload;
    all.model.sliding_window_layers = all.model.layers;
    const LayerKernels windowed = layer_kernels(gpu, all, p, true);
    // 16x fewer FLOPs at 0.2 / 0.89 of the full kernel's rate (128 keys against 4096).
    CHECK(windowed.attention_forward_s < full.attention_forward_s / 3);
    CHECK(half.attention_forward_s ==
          doctest::Approx(0.5 * (full.attention_forward_s + windowed.attention_forward_s)));
    CHECK(half.attention_backward_s ==
          doctest::Approx(0.5 * (full.attention_backward_s + windowed.attention_backward_s)));
    // A window alone windows every layer; the count needs a window and fits the model.
    const Scenario every = load_ok(gpt_oss("  sliding_window: 256\n"));
    CHECK(every.workload.model.sliding_window_layers == 18);  // the preset's count kept
    auto custom = load_ok(
        "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
        "workload: {layers: 32, hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: 14336, "
        "vocab: 32000, sliding_window: 4096, seq_len: 8192, global_batch: 8, "
        "parallelism: {tp: 1, dp: 8}}\n");
    CHECK(custom.workload.model.sliding_window_layers == 32);
    CHECK(load_error(gpt_oss("  sliding_window_layers: 40\n")).find("at most the model's 36 layers") !=
          std::string::npos);
    CHECK(load_error(gpt_oss("  sliding_window: 0\n  sliding_window_layers: 4\n"))
              .find("needs sliding_window") != std::string::npos);
  }

  TEST_CASE("moe: gpt-oss's expert output biases, one local expert at a time (Megatron-Core)") {
    auto gpt_oss = [](const std::string& framework) {
      return "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
             "workload:\n"
             "  model: gpt-oss-120b\n"
             "  seq_len: 4096\n"
             "  global_batch: 64\n"
             "  moe: {imbalance: 1}\n" +
             framework + "  parallelism: {tp: 1, dp: 8, ep: 8, zero: 1}\n";
    };
    const Scenario s = load_ok(gpt_oss(""));
    REQUIRE(s.workload.model.linear_biases);  // config.json: attention_bias, the experts' biases
    // Launched from the host (the default 8.2 ms), the per-expert path is the default.
    CHECK(s.workload.framework.expert_bias_eager());
    const Scenario grouped = load_ok(gpt_oss("  framework: {moe_expert_bias: grouped}\n"));
    CHECK(!grouped.workload.framework.expert_bias_eager());
    // A layer captured whole in a CUDA graph cannot run it (host token counts): grouped.
    const Scenario graphed = load_ok(gpt_oss("  framework: {moe_layer_host_time: 0s}\n"));
    CHECK(!graphed.workload.framework.expert_bias_eager());
    const Scenario graphed_eager =
        load_ok(gpt_oss("  framework: {moe_layer_host_time: 0s, moe_expert_bias: per_expert}\n"));
    CHECK(graphed_eager.workload.framework.expert_bias_eager());

    // The GPU's bytes by hand, per routed copy (4096 tokens x top 4 on this GPU, balanced) at
    // the eager kinds' rates: forward 2880 x 2 bytes written by the broadcast product (layout:
    // PyTorch's non-vectorized broadcast kernel, 1.19 TB/s in device call 34), 3 x 2880 x 2 by
    // the add (same), 2 x 2880 x 2 by the concatenation (cat); backward 4 x 2880 x 2 by the two
    // gradient products (layout), 2 x 2880 x 2 read by their sums (norm_backward), 2 x 2880 x 2
    // by the gradient's concatenation (cat); and each of the 16 local experts' seven small
    // kernels, 16.7 us (call 34's median beyond the bytes), two of them forward. Only the MoE
    // layer.
    const GpuSpec& gpu = s.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const auto& rate = p.eager;
    const auto at = [&](const ComputeParams::EagerRate& kind, double bytes) {
      return bytes / eager_bandwidth_Bps(gpu, kind, p);
    };
    const double copies = 4096.0 * 4, he = 2880.0 * 2;
    const LayerKernels per = layer_kernels(gpu, s.workload, p, true);
    const LayerKernels one = layer_kernels(gpu, grouped.workload, p, true);
    CHECK(per.memory_forward_s - one.memory_forward_s ==
          doctest::Approx(copies * (at(rate.layout, he) + at(rate.same, 3 * he) +
                                    at(rate.cat, 2 * he)) +
                          16 * 2.0 / 7 * 16.7e-6));
    CHECK(per.memory_backward_s - one.memory_backward_s ==
          doctest::Approx(copies * (at(rate.layout, 4 * he) + at(rate.norm_backward, 2 * he) +
                                    at(rate.cat, 2 * he)) +
                          16 * 5.0 / 7 * 16.7e-6));
    // Call 34 measured 0.961 ms of kernels for this path at 16,384 copies on an H100.
    CHECK(per.memory_forward_s + per.memory_backward_s - one.memory_forward_s -
              one.memory_backward_s ==
          doctest::Approx(0.961e-3).epsilon(0.10));
    CHECK(per.gemm_forward_s == one.gemm_forward_s);
    const LayerKernels dense_per = layer_kernels(gpu, s.workload, p, false);
    const LayerKernels dense_one = layer_kernels(gpu, grouped.workload, p, false);
    CHECK(dense_per.memory_forward_s == dense_one.memory_forward_s);

    // The host: the MoE layer's launch time and 16 local experts' bias paths, a third forward.
    WorkloadConfig w = s.workload;
    // Call 34: 0.21 ms and 0.131 ms a local expert (2.31 ms measured for 16).
    const double host = w.framework.moe_layer_host_s + expert_bias_host_s(w);
    CHECK(host - w.framework.moe_layer_host_s == doctest::Approx(2.31e-3).epsilon(0.02));
    const StageCompute st = stage_compute(gpu, w, p).front();
    const double wait_fwd = std::max(0.0, host / 3 - per.forward_s());
    const double wait_bwd = std::max(0.0, 2 * host / 3 - per.backward_s());
    CHECK(st.host_wait_s == doctest::Approx(36 * (wait_fwd + wait_bwd)));
    CHECK(stage_compute(gpu, grouped.workload, p).front().total_s() < st.total_s());
    // plan's advice names the key where the host paces the layers.
    const auto step = predict_step(s, default_step_params(s.cluster));
    REQUIRE(step.ok());
    REQUIRE(step->breakdown.host_wait_s > 0);
    bool named = false;
    for (const std::string& line : step_advice(s, *step, 0.05)) {
      named = named || line.find("framework.moe_expert_bias: grouped") != std::string::npos;
    }
    CHECK(named);

    // The key applies to MoE models with linear biases on Megatron-Core's (fused) kernels.
    CHECK(load_error(gpt_oss("  framework: {moe_expert_bias: each}\n"))
              .find("expected one of: per_expert, grouped") != std::string::npos);
    CHECK(load_error("cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, "
                     "scale_up: nvlink4}}\nworkload:\n  model: qwen3-30b-a3b\n"
                     "  seq_len: 4096\n  global_batch: 64\n"
                     "  framework: {moe_expert_bias: grouped}\n"
                     "  parallelism: {tp: 1, dp: 8, ep: 8, zero: 1}\n")
              .find("applies to a model with linear biases") != std::string::npos);
    CHECK(load_error("cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, "
                     "scale_up: nvlink4}}\nworkload:\n  model: llama3-8b\n"
                     "  seq_len: 4096\n  global_batch: 64\n"
                     "  framework: {moe_expert_bias: grouped}\n  parallelism: {dp: 8}\n")
              .find("applies to a mixture-of-experts model") != std::string::npos);
    CHECK(load_error(gpt_oss("  framework: {kernels: eager, moe_expert_bias: grouped}\n"))
              .find("applies to kernels: fused") != std::string::npos);
  }
}
