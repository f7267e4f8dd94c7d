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

  // Every flow (the transfer's first, then the background's) and, per resource, what crosses it
  // (flow, times it crosses) and how many distinct flows (what the congestion threshold counts),
  // in flat arrays: a flow's resources links[first[i] .. first[i + 1]).
  std::vector<const SimFlow*> all;
  all.reserve(flows.size() + background.size());
  for (const SimFlow& f : flows) all.push_back(&f);
  for (const SimFlow& f : background) all.push_back(&f);
  const size_t finite = flows.size();
  const size_t n = table.resources.size();
  std::vector<std::pair<int, double>> links;  // (resource, times crossed) per flow
  std::vector<size_t> first(all.size() + 1, 0);
  std::vector<int> distinct(n, 0);
  for (size_t i = 0; i < all.size(); ++i) {
    first[i] = links.size();
    for (int r : all[i]->route) {
      auto it = std::find_if(links.begin() + static_cast<std::ptrdiff_t>(first[i]), links.end(),
                             [r](const auto& e) { return e.first == r; });
      if (it != links.end()) {
        it->second += 1;
      } else {
        links.push_back({r, 1.0});
        ++distinct[static_cast<size_t>(r)];
      }
    }
    if (i < finite && all[i]->route.empty() && !(all[i]->max_rate_Bps > 0)) return std::nullopt;
  }
  first[all.size()] = links.size();
  // Per resource, the flows that cross it (flat: on[at[r] .. at[r + 1])).
  std::vector<size_t> at(n + 1, 0);
  for (const auto& [r, w] : links) ++at[static_cast<size_t>(r) + 1];
  for (size_t r = 0; r < n; ++r) at[r + 1] += at[r];
  std::vector<std::pair<int, double>> on(links.size());
  {
    std::vector<size_t> fill(at.begin(), at.end() - 1);
    for (size_t i = 0; i < all.size(); ++i) {
      for (size_t e = first[i]; e < first[i + 1]; ++e) {
        on[fill[static_cast<size_t>(links[e].first)]++] = {static_cast<int>(i), links[e].second};
      }
    }
  }
  std::vector<double> left(n, 0), weight(n, 0);
  for (size_t r = 0; r < n; ++r) {
    if (at[r] == at[r + 1]) continue;
    left[r] = table.resources[r].capacity_Bps * table.resources[r].usable_share(distinct[r]);
    for (size_t e = at[r]; e < at[r + 1]; ++e) weight[r] += on[e].second;
  }
  std::vector<bool> frozen(all.size(), false);
  auto freeze = [&](size_t i, double rate) {
    frozen[i] = true;
    for (size_t e = first[i]; e < first[i + 1]; ++e) {
      left[static_cast<size_t>(links[e].first)] -= links[e].second * rate;
      weight[static_cast<size_t>(links[e].first)] -= links[e].second;
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
    for (size_t e = at[bottleneck]; e < at[bottleneck + 1]; ++e) {
      const auto f = static_cast<size_t>(on[e].first);
      if (!frozen[f] && f < finite) return bytes / level;
    }
    for (size_t e = at[bottleneck]; e < at[bottleneck + 1]; ++e) {
      const auto f = static_cast<size_t>(on[e].first);
      if (!frozen[f]) freeze(f, level);
    }
  }
}

}  // namespace clustersim::sim
