"""A GPU's local experts: do their GEMMs share the waves of the SMs, as one grouped GEMM would,
or does each keep its own last partial wave (models/layer_model.cc, Gemm::count, which times
them one by one after device call 30)? E identical bf16 GEMMs [M x K] x [K x N], run
  - back to back on one stream ("serial": each its own partial last wave),
  - round-robin on 4 streams (Transformer Engine's GroupedLinear: its cuBLAS GEMMs go out on 4
    compute streams, common/gemm/cublaslt_gemm.cu),
  - as one torch._grouped_mm call where this torch has it (a grouped kernel),
  - and as one GEMM of E x M rows against one weight (what filling the waves at most gives),
each captured in a CUDA graph of 10 rounds (so that the host's launches, 10-20 us a GEMM from
Python, do not pace the small ones) and timed as the median of CUDA-event timings of its
replays over >= `seconds`; inputs of every expert distinct (E weights, E activations), random.
Usage: python3 grouped_gemm.py OUT.json [seconds]"""
import json
import sys

import torch

import torch_reference  # the same folder: its CUDA-event and CUDA-graph timers

STREAMS = 4
INNER = 10

# (what, experts E, rows per expert M, N, K): the corpus's MoE layers at the rows one GPU's
# experts get per micro-batch (top_k x tokens / local experts), forward up and down projections.
SHAPES = [
    ("qwen3-30b ep8 1x4k up", 16, 2048, 1536, 2048),
    ("qwen3-30b ep8 1x4k down", 16, 2048, 2048, 768),
    ("qwen3-30b ep8 4x4k up", 16, 8192, 1536, 2048),
    ("qwen3-30b ep8 4x4k down", 16, 8192, 2048, 768),
    ("qwen3-30b ep16 1x4k up", 8, 4096, 1536, 2048),
    ("qwen3-235b ep32 1x4k up", 4, 8192, 3072, 4096),
    ("qwen3-235b ep32 1x4k down", 4, 8192, 4096, 1536),
    ("deepseek-v3 ep64 1x4k up", 4, 4096, 4096, 7168),
    ("deepseek-v3 ep64 1x4k down", 4, 4096, 7168, 2048),
    ("gpt-oss ep16 4x4k up", 8, 8192, 5760, 2880),
    ("gpt-oss ep16 4x4k down", 8, 8192, 2880, 2880),
    ("gpt-oss ep64 4x4k up", 2, 32768, 5760, 2880),
    ("mixtral ep2 tp2 1x4k up", 4, 1024, 28672, 4096),
    ("small 32 x 512 rows", 32, 512, 1536, 2048),
]


def bench(fn, seconds):
    return torch_reference.bench_graph(fn, seconds, INNER)


def main():
    out_path = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    dev = torch.device("cuda:0")
    props = torch.cuda.get_device_properties(0)
    result = {"torch": torch.__version__, "cuda": torch.version.cuda,
              "device": torch.cuda.get_device_name(0), "sm_count": props.multi_processor_count,
              "streams": STREAMS, "inner": INNER, "rows": []}
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    has_grouped = hasattr(torch, "_grouped_mm")
    for what, e, m, n, k in SHAPES:
        x = torch.randn(e, m, k, dtype=torch.bfloat16, device=dev)
        w = torch.randn(e, k, n, dtype=torch.bfloat16, device=dev) / k ** 0.5
        y = torch.empty(e, m, n, dtype=torch.bfloat16, device=dev)

        def serial():
            for i in range(e):
                torch.matmul(x[i], w[i], out=y[i])

        def multi_stream():
            main_stream = torch.cuda.current_stream()
            for s in streams:
                s.wait_stream(main_stream)
            for i in range(e):
                with torch.cuda.stream(streams[i % STREAMS]):
                    torch.matmul(x[i], w[i], out=y[i])
            for s in streams:
                main_stream.wait_stream(s)

        flat = x.reshape(e * m, k)
        y_flat = torch.empty(e * m, n, dtype=torch.bfloat16, device=dev)

        def one_gemm():
            torch.matmul(flat, w[0], out=y_flat)

        row = {"what": what, "experts": e, "m": m, "n": n, "k": k,
               "flops": 2.0 * e * m * n * k}
        # Correctness of the variants against the serial product (bf16: ~1e-2 at most).
        serial()
        ref = y.float().clone()
        multi_stream()
        torch.cuda.synchronize()
        row["multi_stream_rel_error"] = ((y.float() - ref).norm() / ref.norm()).item()
        row["serial_s"] = bench(serial, seconds)
        row["multi_stream_s"] = bench(multi_stream, seconds)
        row["one_gemm_s"] = bench(one_gemm, seconds)
        if has_grouped:
            offs = torch.arange(m, e * m + 1, m, dtype=torch.int32, device=dev)
            try:
                g = torch._grouped_mm(flat, w, offs=offs)
                row["grouped_mm_rel_error"] = ((g.float().view(e, m, n) - ref).norm() /
                                               ref.norm()).item()
                row["grouped_mm_s"] = bench(lambda: torch._grouped_mm(flat, w, offs=offs),
                                            seconds)
            except Exception as err:  # noqa: BLE001 - the build may lack the kernel
                row["grouped_mm_error"] = str(err)[:200]
        for key in ("serial", "multi_stream", "one_gemm", "grouped_mm"):
            if key + "_s" in row:
                row[key + "_tflops"] = row["flops"] / row[key + "_s"] / 1e12
        result["rows"].append(row)
        del x, w, y, flat, y_flat
        torch.cuda.empty_cache()
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1)
    print(f"{'shape':30s} {'E':>3s} {'serial':>8s} {'4 strm':>8s} {'grouped':>8s} {'1 gemm':>8s}"
          "  TFLOP/s")
    for r in result["rows"]:
        print(f"{r['what']:30s} {r['experts']:3d} {r.get('serial_tflops', 0):8.1f} "
              f"{r.get('multi_stream_tflops', 0):8.1f} {r.get('grouped_mm_tflops', 0):8.1f} "
              f"{r.get('one_gemm_tflops', 0):8.1f}")


if __name__ == "__main__":
    main()
