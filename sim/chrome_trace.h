// The simulated step as a Chrome trace (the JSON "Trace Event Format" that chrome://tracing and
// Perfetto open): one process per pipeline stage, one thread per stream (compute, TP, PP, DP,
// CP), one complete ("X") event per op with its simulated start and duration in microseconds.
// Pure formatting; the caller writes the file.
#pragma once

#include <string>

#include "sim/step_sim.h"

namespace clustersim::sim {

// REQUIRES: the result was simulated with StepSimOptions::trace (else the trace is empty).
std::string chrome_trace_json(const DesStepResult& result, const std::string& scenario_name);

}  // namespace clustersim::sim
