#include "sim/fair_share.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace clustersim::sim {

std::optional<double> equal_flows_makespan(const std::vector<SimFlow>& flows,
                                           const std::vector<SimFlow>& background,
                                           const ResourceTable& table) {
  if (flows.empty()) return 0.0;
  const double bytes = flows.front().bytes;
  for (const SimFlow& f : flows) {
    if (std::abs(f.bytes - bytes) > 1e-9 * std::max(1.0, std::abs(bytes))) return std::nullopt;
  }
  if (bytes <= 0) return 0.0;

  // Every flow (the transfer's first, then the background's) and, per resource, what crosses it:
  // (flow, times it crosses), and how many distinct flows (what the congestion threshold counts).
  std::vector<const SimFlow*> all;
  for (const SimFlow& f : flows) all.push_back(&f);
  for (const SimFlow& f : background) all.push_back(&f);
  const size_t finite = flows.size();
  const size_t n = table.resources.size();
  std::vector<std::vector<std::pair<int, double>>> on(n);
  std::vector<std::vector<std::pair<int, double>>> links(all.size());
  std::vector<int> distinct(n, 0);
  for (size_t i = 0; i < all.size(); ++i) {
    std::vector<int> route = all[i]->route;
    std::sort(route.begin(), route.end());
    for (size_t a = 0; a < route.size();) {
      size_t b = a;
      while (b < route.size() && route[b] == route[a]) ++b;
      const int r = route[a];
      links[i].push_back({r, double(b - a)});
      on[static_cast<size_t>(r)].push_back({static_cast<int>(i), double(b - a)});
      ++distinct[static_cast<size_t>(r)];
      a = b;
    }
    if (i < finite && route.empty() && !(all[i]->max_rate_Bps > 0)) return std::nullopt;
  }
  std::vector<double> left(n, 0), weight(n, 0);
  for (size_t r = 0; r < n; ++r) {
    if (on[r].empty()) continue;
    const NetResource& res = table.resources[r];
    left[r] = distinct[r] > std::max(1, res.congestion_flows)
                  ? res.capacity_Bps * res.shared_efficiency
                  : res.capacity_Bps;
    for (const auto& [f, w] : on[r]) weight[r] += w;
  }
  std::vector<bool> frozen(all.size(), false);
  auto freeze = [&](size_t i, double rate) {
    frozen[i] = true;
    for (const auto& [r, w] : links[i]) {
      left[static_cast<size_t>(r)] -= w * rate;
      weight[static_cast<size_t>(r)] -= w;
    }
  };
  // Progressive filling until the first of the transfer's flows is frozen: its rate is m.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (;;) {
    double level = kInf;
    size_t bottleneck = n;
    for (size_t r = 0; r < n; ++r) {
      if (weight[r] <= 1e-12) continue;
      const double l = std::max(0.0, left[r]) / weight[r];
      if (l < level) {
        level = l;
        bottleneck = r;
      }
    }
    double cap = kInf;
    for (size_t i = 0; i < all.size(); ++i) {
      if (!frozen[i] && all[i]->max_rate_Bps > 0) cap = std::min(cap, all[i]->max_rate_Bps);
    }
    if (cap < level) {
      for (size_t i = 0; i < all.size(); ++i) {
        if (frozen[i] || !(all[i]->max_rate_Bps > 0) || all[i]->max_rate_Bps > cap) continue;
        if (i < finite) return bytes / cap;
        freeze(i, cap);
      }
      continue;
    }
    if (bottleneck == n || !(level > 0)) return std::nullopt;  // unconstrained or starved
    for (const auto& [f, w] : on[bottleneck]) {
      if (!frozen[static_cast<size_t>(f)] && static_cast<size_t>(f) < finite) return bytes / level;
    }
    for (const auto& [f, w] : on[bottleneck]) {
      if (!frozen[static_cast<size_t>(f)]) freeze(static_cast<size_t>(f), level);
    }
  }
}

}  // namespace clustersim::sim
