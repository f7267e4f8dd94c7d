#include "validate/measurement.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <utility>

namespace clustersim::validate {
namespace {

using nlohmann::ordered_json;

// Each struct's fields are listed once, in fields(); a Writer and a Reader visit that list, so
// the JSON names and the struct stay in one place.

template <class V, class H>
  requires std::is_same_v<std::remove_const_t<H>, HostInfo>
void fields(V& v, H& h) {
  v("hostname", h.hostname);
  v("kernel", h.kernel);
  v("cpu_model", h.cpu_model);
  v("cpus", h.cpus);
  v("hypervisor", h.hypervisor);
  v("ranks", h.ranks);
}
template <class V, class P>
  requires std::is_same_v<std::remove_const_t<P>, PciIdentity>
void fields(V& v, P& p) {
  v("bus_id", p.bus_id);
  v.hex("vendor_id", p.vendor_id);
  v.hex("device_id", p.device_id);
  v.hex("subsystem_vendor_id", p.subsystem_vendor_id);
  v.hex("subsystem_device_id", p.subsystem_device_id);
  v.hex("nvml_pci_device_id", p.nvml_pci_device_id);
}
template <class V, class P>
  requires std::is_same_v<std::remove_const_t<P>, PcieLink>
void fields(V& v, P& p) {
  v("gen_current", p.gen_current);
  v("gen_max", p.gen_max);
  v("width_current", p.width_current);
  v("width_max", p.width_max);
}
template <class V, class E>
  requires std::is_same_v<std::remove_const_t<E>, EccState>
void fields(V& v, E& e) {
  v("supported", e.supported);
  v("enabled", e.enabled);
  v("pending_enabled", e.pending_enabled);
  v("volatile_corrected", e.volatile_corrected);
  v("volatile_uncorrected", e.volatile_uncorrected);
  v("aggregate_corrected", e.aggregate_corrected);
  v("aggregate_uncorrected", e.aggregate_uncorrected);
}
template <class V, class R>
  requires std::is_same_v<std::remove_const_t<R>, RowRemapState>
void fields(V& v, R& r) {
  v("supported", r.supported);
  v("corrected_rows", r.corrected_rows);
  v("uncorrected_rows", r.uncorrected_rows);
  v("pending", r.pending);
  v("failure", r.failure);
}
template <class V, class G>
  requires std::is_same_v<std::remove_const_t<G>, GpuInfo>
void fields(V& v, G& g) {
  v("rank", g.rank);
  v("host", g.host);
  v("cuda_index", g.cuda_index);
  v("name", g.name);
  v("uuid", g.uuid);
  v("catalog_id", g.catalog_id);
  v("pci", g.pci);
  v("compute_capability", g.compute_capability);
  v("sm_count", g.sm_count);
  v("memory_bytes", g.memory_bytes);
  v("max_sm_clock_MHz", g.max_sm_clock_MHz);
  v("max_memory_clock_MHz", g.max_memory_clock_MHz);
  v("pcie_idle", g.pcie_idle);
  v("pcie_under_load", g.pcie_under_load);
  v("nvlink_links", g.nvlink_links);
  v("nvlink_active", g.nvlink_active);
  v("ecc", g.ecc);
  v("row_remap", g.row_remap);
  v("virtualization", g.virtualization);
  v("mig_mode", g.mig_mode);
  v("throttle_reasons_during_burn", g.throttle_reasons_during_burn);
  v.hex("throttle_mask_during_burn", g.throttle_mask_during_burn);
  v("sm_clock_during_burn_MHz", g.sm_clock_during_burn_MHz);
  v("max_power_during_burn_W", g.max_power_during_burn_W);
  v("max_temperature_during_burn_C", g.max_temperature_during_burn_C);
  v("notes", g.notes);
}
template <class V, class X>
  requires std::is_same_v<std::remove_const_t<X>, Versions>
void fields(V& v, X& x) {
  v("driver", x.driver);
  v("cuda_driver", x.cuda_driver);
  v("cuda_runtime", x.cuda_runtime);
  v("nccl", x.nccl);
  v("nccl_library", x.nccl_library);
  v("cublas", x.cublas);
}
template <class V, class R>
  requires std::is_same_v<std::remove_const_t<R>, RunInfo>
void fields(V& v, R& r) {
  v("command_line", r.command_line);
  v("environment", r.environment);
  v("mode", r.mode);
  v("world_size", r.world_size);
  v("processes", r.processes);
  v("backend", r.backend);
  v("options", r.options);
  v("started_utc", r.started_utc);
  v("finished_utc", r.finished_utc);
  v("wall_time_s", r.wall_time_s);
}
template <class V, class T>
  requires std::is_same_v<std::remove_const_t<T>, CollectiveTiming>
void fields(V& v, T& t) {
  v("time_us", t.time_us);
  v("algbw_GBps", t.algbw_GBps);
  v("busbw_GBps", t.busbw_GBps);
  v("wrong", t.wrong);
}
template <class V, class R>
  requires std::is_same_v<std::remove_const_t<R>, CollectiveRow>
void fields(V& v, R& r) {
  v("op", r.op);
  v("ranks", r.ranks);
  v("size_bytes", r.size_bytes);
  v("count", r.count);
  v("type", r.type);
  v("redop", r.redop);
  v("root", r.root);
  v("out_of_place", r.out_of_place);
  v("in_place", r.in_place);
  v.unless_zero("gpus_per_thread", r.gpus_per_thread);
}
template <class V, class G>
  requires std::is_same_v<std::remove_const_t<G>, GemmRate>
void fields(V& v, G& g) {
  v("rank", g.rank);
  v("precision", g.precision);
  v("m", g.m);
  v("n", g.n);
  v("k", g.k);
  v("sustained", g.sustained);
  v("seconds", g.seconds);
  v("iterations", g.iterations);
  v("tflops", g.tflops);
  v("tflops_min", g.tflops_min);
}
template <class V, class B>
  requires std::is_same_v<std::remove_const_t<B>, BandwidthRate>
void fields(V& v, B& b) {
  v("rank", b.rank);
  v("kind", b.kind);
  v("peer", b.peer);
  v("bytes", b.bytes);
  v("GBps", b.GBps);
  v("GBps_min", b.GBps_min);
  v("GBps_max", b.GBps_max);
  v("batches", b.batches);
  v("copies_per_batch", b.copies_per_batch);
  v("warmup_s", b.warmup_s);
  v("sm_clock_min_MHz", b.sm_clock_min_MHz);
  v("memory_clock_min_MHz", b.memory_clock_min_MHz);
  v("throttle_reasons", b.throttle_reasons);
}
template <class V, class A>
  requires std::is_same_v<std::remove_const_t<A>, AttentionRate>
void fields(V& v, A& a) {
  v("rank", a.rank);
  v("implementation", a.implementation);
  v("direction", a.direction);
  v("causal", a.causal);
  v("batch", a.batch);
  v("heads", a.heads);
  v("head_dim", a.head_dim);
  v("seq_len", a.seq_len);
  v("time_ms", a.time_ms);
  v("tflops", a.tflops);
  v("max_rel_error", a.max_rel_error);
  v("flops_convention", a.flops_convention);
}
template <class V, class T>
  requires std::is_same_v<std::remove_const_t<T>, TransportRecord>
void fields(V& v, T& t) {
  v("rank", t.rank);
  v("peer", t.peer);
  v("transport", t.transport);
  v("detail", t.detail);
  v("channels", t.channels);
}
template <class V, class E>
  requires std::is_same_v<std::remove_const_t<E>, SectionError>
void fields(V& v, E& e) {
  v("section", e.section);
  v("message", e.message);
}
template <class V, class M>
  requires std::is_same_v<std::remove_const_t<M>, Measurement>
void fields(V& v, M& m) {
  v("schema", m.schema);
  v("complete", m.complete);
  v("tool", m.tool);
  v("tool_version", m.tool_version);
  v("run", m.run);
  v("hosts", m.hosts);
  v("versions", m.versions);
  v("gpus", m.gpus);
  v("collectives", m.collectives);
  v("gemm", m.gemm);
  v("bandwidth", m.bandwidth);
  v("attention", m.attention);
  v("transports", m.transports);
  v("sections_done", m.sections_done);
  v("errors", m.errors);
}

template <class T> constexpr bool kIsVector = false;
template <class T> constexpr bool kIsVector<std::vector<T>> = true;

// ---- writing ----
struct Writer {
  ordered_json* out;
  template <class T> static ordered_json encode(const T& x) {
    if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
      return ordered_json(x);
    } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
      ordered_json j = ordered_json::object();
      for (const auto& [k, val] : x) j[k] = val;
      return j;
    } else if constexpr (kIsVector<T>) {
      ordered_json j = ordered_json::array();
      for (const auto& e : x) j.push_back(encode(e));
      return j;
    } else {
      ordered_json j = ordered_json::object();
      Writer w{&j};
      fields(w, x);
      return j;
    }
  }
  template <class T> void operator()(const char* key, const T& x) { (*out)[key] = encode(x); }
  // A field that older files lack and most rows leave at 0: written only when set.
  template <class T> void unless_zero(const char* key, const T& x) {
    if (x != T{}) (*out)[key] = encode(x);
  }
  template <class T> void hex(const char* key, const T& x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(x));
    (*out)[key] = buf;
  }
};

// ---- reading: absent keys keep the default; a wrong type is an error naming the path ----
struct Reader {
  const ordered_json* in;
  std::string path;
  std::string* error;  // first error wins

  void fail(const std::string& at, const std::string& what) {
    if (error->empty()) *error = at + ": " + what;
  }
  template <class T> void decode(const ordered_json& j, const std::string& at, T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      if (!j.is_boolean()) return fail(at, "expected true or false, got " + j.dump());
      x = j.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      // Counts, sizes, ids: never negative, except a field's own "not reported" value (-1).
      if (!j.is_number_integer()) return fail(at, "expected an integer, got " + j.dump());
      if (j.is_number_unsigned()) {
        const auto v = j.get<std::uint64_t>();
        if (!std::in_range<T>(v)) return fail(at, "integer out of range: " + j.dump());
        x = static_cast<T>(v);
        return;
      }
      const auto v = j.get<std::int64_t>();
      if (v < 0 && !(x < 0 && v == static_cast<std::int64_t>(x))) {
        return fail(at, "expected a non-negative integer, got " + j.dump());
      }
      if (!std::in_range<T>(v)) return fail(at, "integer out of range: " + j.dump());
      x = static_cast<T>(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      // Times, rates, watts: finite and not negative, except a field's "not checked" value.
      if (!j.is_number()) return fail(at, "expected a number, got " + j.dump());
      const T v = j.get<T>();
      if (!std::isfinite(v)) return fail(at, "expected a finite number, got " + j.dump());
      if (v < 0 && v != x) return fail(at, "expected a non-negative number, got " + j.dump());
      x = v;
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!j.is_string()) return fail(at, "expected a string, got " + j.dump());
      x = j.get<std::string>();
    } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
      if (!j.is_object()) return fail(at, "expected an object");
      for (const auto& [k, val] : j.items()) decode(val, at + "." + k, x[k]);
    } else if constexpr (kIsVector<T>) {
      if (!j.is_array()) return fail(at, "expected an array");
      x.clear();
      x.resize(j.size());
      for (std::size_t i = 0; i < j.size(); ++i) {
        decode(j[i], at + "[" + std::to_string(i) + "]", x[i]);
      }
    } else {
      if (!j.is_object()) return fail(at, "expected an object");
      Reader r{&j, at, error};
      fields(r, x);
    }
  }
  template <class T> void operator()(const char* key, T& x) {
    auto it = in->find(key);
    if (it != in->end() && !it->is_null()) decode(*it, path + "." + key, x);
  }
  template <class T> void unless_zero(const char* key, T& x) { (*this)(key, x); }
  template <class T> void hex(const char* key, T& x) {
    auto it = in->find(key);
    if (it == in->end() || it->is_null()) return;
    const std::string at = path + "." + key;
    if (it->is_number_unsigned()) {
      x = it->template get<T>();
      return;
    }
    if (!it->is_string()) return fail(at, "expected a hex string like \"0x10de\"");
    const std::string s = it->template get<std::string>();
    char* end = nullptr;
    const unsigned long long value = std::strtoull(s.c_str(), &end, 16);
    if (s.size() < 3 || s.compare(0, 2, "0x") != 0 || end == nullptr || *end != '\0') {
      return fail(at, "expected a hex string like \"0x10de\", got \"" + s + "\"");
    }
    x = static_cast<T>(value);
  }
};

// The first row that repeats an earlier one's identity (the same collective and size, GEMM
// shape, copy or attention case on the same rank): "" when none. A run measures each once, so a
// repeat is an edited file, and judging would have to pick one of the two.
std::string duplicated_rows(const Measurement& m) {
  auto first_repeat = [](const auto& rows, const char* list, auto key) -> std::string {
    using Row = typename std::decay_t<decltype(rows)>::value_type;
    std::map<std::invoke_result_t<decltype(key), const Row&>, std::size_t> seen;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      auto [it, fresh] = seen.emplace(key(rows[i]), i);
      if (!fresh) {
        return std::string("$.") + list + "[" + std::to_string(i) + "] repeats $." + list + "[" +
               std::to_string(it->second) + "] (the same measurement twice: an edited file?)";
      }
    }
    return "";
  };
  std::string d = first_repeat(m.collectives, "collectives", [](const CollectiveRow& r) {
    return std::tuple(r.op, r.ranks, r.size_bytes, r.type, r.redop, r.root);
  });
  if (d.empty()) {
    d = first_repeat(m.gemm, "gemm", [](const GemmRate& r) {
      return std::tuple(r.rank, r.precision, r.m, r.n, r.k, r.sustained);
    });
  }
  if (d.empty()) {
    d = first_repeat(m.bandwidth, "bandwidth", [](const BandwidthRate& r) {
      return std::tuple(r.rank, r.kind, r.peer, r.bytes);
    });
  }
  if (d.empty()) {
    d = first_repeat(m.attention, "attention", [](const AttentionRate& r) {
      return std::tuple(r.rank, r.implementation, r.direction, r.causal, r.batch, r.heads,
                        r.head_dim, r.seq_len);
    });
  }
  return d;
}

}  // namespace

std::string to_json_text(const Measurement& m) { return Writer::encode(m).dump(2) + "\n"; }

models::Result<Measurement> parse_measurement(std::string_view text, std::string_view source) {
  const std::string src(source);
  ordered_json j;
  try {
    j = ordered_json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    // e.what() carries "line L, column C" for the bad byte; a number too large for a double
    // ("1e999": no JSON number is infinite) is an out_of_range error.
    return models::Error{src + ": not valid JSON: " + e.what()};
  }
  if (!j.is_object()) return models::Error{src + ": expected a JSON object at the top"};
  auto schema = j.find("schema");
  if (schema == j.end() || !schema->is_string()) {
    return models::Error{src + ": no \"schema\" key; expected \"" +
                         std::string(kMeasurementSchema) + "\""};
  }
  if (schema->get<std::string>() != kMeasurementSchema) {
    return models::Error{src + ": schema \"" + schema->get<std::string>() +
                         "\" is not the supported \"" + std::string(kMeasurementSchema) + "\""};
  }
  Measurement m;
  std::string error;
  Reader r{&j, "$", &error};
  try {
    fields(r, m);
  } catch (const nlohmann::json::exception& e) {  // a number out of range for its field
    return models::Error{src + ": " + e.what()};
  }
  if (!error.empty()) return models::Error{src + ": " + error};
  if (std::string dup = duplicated_rows(m); !dup.empty()) return models::Error{src + ": " + dup};
  return m;
}

models::Result<Measurement> read_measurement_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return models::Error{path + ": cannot open for reading"};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_measurement(text.str(), path);
}

void append_rank_parts(Measurement& into, const Measurement& part) {
  auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  for (const HostInfo& h : part.hosts) {
    bool merged = false;
    for (HostInfo& existing : into.hosts) {
      if (existing.hostname == h.hostname) {
        append(existing.ranks, h.ranks);
        merged = true;
      }
    }
    if (!merged) into.hosts.push_back(h);
  }
  append(into.gpus, part.gpus);
  append(into.gemm, part.gemm);
  append(into.bandwidth, part.bandwidth);
  append(into.attention, part.attention);
  append(into.transports, part.transports);
  append(into.errors, part.errors);
}

}  // namespace clustersim::validate
