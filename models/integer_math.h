// Small integer helpers shared by the fabric designer and the parallelism search.
#pragma once

#include <algorithm>
#include <vector>

namespace clustersim::models {

// Every positive divisor of n in increasing order (trial division up to sqrt(n)); empty for
// n < 1.
inline std::vector<int> divisors(int n) {
  std::vector<int> low, high;
  for (int d = 1; static_cast<long long>(d) * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

}  // namespace clustersim::models
