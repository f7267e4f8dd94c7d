#include "sim/transport_model.h"

#include <algorithm>

namespace clustersim::sim {

double shared_link_efficiency(models::LinkTechnology technology, const TransportParams& params) {
  switch (technology) {
    case models::LinkTechnology::kInfiniband: return params.infiniband_shared_efficiency;
    case models::LinkTechnology::kRoce: return params.roce_shared_efficiency;
    case models::LinkTechnology::kEthernetTcp: return params.tcp_shared_efficiency;
    case models::LinkTechnology::kNvlink:
    case models::LinkTechnology::kPcie: return 1.0;
  }
  return 1.0;
}

double wire_efficiency(models::LinkTechnology technology) {
  switch (technology) {
    case models::LinkTechnology::kInfiniband: return 4096.0 / 4122;
    case models::LinkTechnology::kRoce: return 4096.0 / 4178;
    case models::LinkTechnology::kEthernetTcp: return 1460.0 / 1538;
    case models::LinkTechnology::kNvlink:
    case models::LinkTechnology::kPcie: return 1.0;
  }
  return 1.0;
}

double switch_link_efficiency(const models::NicSpec& nic) {
  return std::max(nic.protocol_efficiency, wire_efficiency(nic.technology));
}

double window_rate_cap_Bps(models::LinkTechnology technology, double one_way_latency_s,
                           const TransportParams& params) {
  if (technology != models::LinkTechnology::kEthernetTcp) return 0;
  const double rtt = 2 * (one_way_latency_s + params.tcp_extra_latency_s);
  return rtt > 0 ? params.tcp_window_bytes / rtt : 0;
}

}  // namespace clustersim::sim
