"""What one training step of train_step.py's decoder keeps in memory, and when: for the planner's
memory model (models/transformer_model.h, MemoryBreakdown's moments).

1. Per layer: the tensors one block saves for its backward, eager and torch.compile'd, under bf16
   autocast with fp32 parameters (train_step.py's Block). Counted two ways: the pack hook of
   torch.autograd.graph.saved_tensors_hooks (unique storages, the block's fp32 parameters left
   out), and the allocator's growth over the block's forward less its output.
2. The cross-entropy alone: its forward and backward peaks per logit, on 16-bit logits under
   autocast and on logits cast to fp32 first.
3. Per step: the peak allocated in the forward (with the loss) and in the backward separately,
   for a few of train_step.py's configurations (torch.cuda.reset_peak_memory_stats between).

Usage: python3 saved_tensors.py OUT.json"""
import json
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import train_step as ts  # noqa: E402

PER_LAYER = [("134m", 8192, 2), ("1.4b", 8192, 2), ("4.3b", 8192, 1)]
PHASES = ["1.4b-s8k-b2-full", "1.4b-s8k-b2-full-compiled", "1.4b-s8k-b2-compiled",
          "4.3b-s8k-b1-full", "134m-s8k-b2", "134m-s8k-b2-compiled"]


def saved_by_block(model_name, seq, mb, compiled, dev):
    layers, hidden, heads, ffn, vocab = ts.MODELS[model_name]
    torch.manual_seed(0)
    blk = ts.Block(hidden, heads, ffn).to(dev)
    params = {p.untyped_storage().data_ptr() for p in blk.parameters()}
    fn = torch.compile(blk) if compiled else blk
    cos, sin = ts.rope_tables(seq, hidden // heads, dev)

    def run(hooks):
        x = torch.randn(mb, seq, hidden, device=dev, requires_grad=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            if hooks is None:
                return x, fn(x, cos, sin)
            with torch.autograd.graph.saved_tensors_hooks(*hooks):
                return x, fn(x, cos, sin)

    for _ in range(2):  # compile and warm up
        x, y = run(None)
        y.float().sum().backward()
    del x, y
    torch.cuda.synchronize()
    seen = {}

    def pack(t):
        key = t.untyped_storage().data_ptr()
        if key not in params and key not in seen:
            seen[key] = (t.untyped_storage().nbytes(), str(t.dtype), list(t.shape))
        return t

    x = torch.randn(mb, seq, hidden, device=dev, requires_grad=True)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = fn(x, cos, sin)
    torch.cuda.synchronize()
    grown = torch.cuda.memory_allocated() - before - y.untyped_storage().nbytes()
    x_key = x.untyped_storage().data_ptr()
    tokens = seq * mb
    saved = sum(v[0] for k, v in seen.items() if k != x_key)
    out = {"model": model_name, "seq": seq, "micro_batch": mb, "compiled": compiled,
           "hidden": hidden, "ffn": ffn,
           "saved_bytes_excl_input": saved,
           "saved_h_bytes_per_token": saved / tokens / hidden,
           "input_saved": x_key in seen,
           "allocator_growth_bytes": grown,
           "allocator_growth_h_bytes_per_token": grown / tokens / hidden,
           "saved": sorted(([v[0], v[1], v[2]] for k, v in seen.items()), reverse=True)}
    del x, y, seen, blk, fn
    torch.cuda.empty_cache()
    return out


def phases(cfg, dev):
    name, model_name, seq, mb, recompute, compiled = cfg
    layers, hidden, heads, ffn, vocab = ts.MODELS[model_name]
    torch.manual_seed(0)
    model = ts.Decoder(layers, hidden, heads, ffn, vocab, recompute).to(dev)
    if compiled:
        for blk in model.blocks:
            blk.compile()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    cos, sin = ts.rope_tables(seq, hidden // heads, dev)
    tokens = torch.randint(0, vocab, (mb, seq), device=dev)
    targets = torch.randint(0, vocab, (mb, seq), device=dev)
    out = {"name": name}
    for i in range(4):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, targets, cos, sin)
        torch.cuda.synchronize()
        fwd_peak = torch.cuda.max_memory_allocated()
        after_fwd = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        loss.backward()
        torch.cuda.synchronize()
        bwd_peak = torch.cuda.max_memory_allocated()
        after_bwd = torch.cuda.memory_allocated()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i == 3:
            out.update({"start_gib": start / 2**30, "forward_peak_gib": fwd_peak / 2**30,
                        "after_forward_gib": after_fwd / 2**30,
                        "backward_peak_gib": bwd_peak / 2**30,
                        "after_backward_gib": after_bwd / 2**30,
                        "reserved_gib": torch.cuda.max_memory_reserved() / 2**30})
    del model, opt, loss
    torch.cuda.empty_cache()
    return out


def loss_bytes(dev, n=32768, vocab=32000):
    """The cross-entropy's peaks per logit, on 16-bit logits under autocast and on logits cast to
    fp32 first, forward and backward separately, and what the allocator reserved for it."""
    out = {}
    for variant in ("autocast", "fp32"):
        torch.cuda.empty_cache()
        w = torch.randn(n, 256, device=dev, dtype=torch.bfloat16)
        head = torch.randn(256, vocab, device=dev, dtype=torch.bfloat16, requires_grad=True)
        targets = torch.randint(0, vocab, (n,), device=dev)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        base_reserved = torch.cuda.memory_reserved()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = w @ head  # 16-bit, as a model's output head under autocast
            loss = F.cross_entropy(logits.float() if variant == "fp32" else logits, targets)
        del logits
        torch.cuda.synchronize()
        fwd = torch.cuda.max_memory_allocated() - base
        torch.cuda.reset_peak_memory_stats()
        loss.backward()
        torch.cuda.synchronize()
        bwd = torch.cuda.max_memory_allocated() - base
        reserved = torch.cuda.max_memory_reserved() - base_reserved
        logits_n = n * vocab
        out[variant] = {"forward_bytes_per_logit": fwd / logits_n,
                        "backward_bytes_per_logit": bwd / logits_n,
                        "reserved_bytes_per_logit": reserved / logits_n}
        print("loss on %s logits: forward %.2f, backward %.2f, reserved %.2f bytes per logit" %
              (variant, fwd / logits_n, bwd / logits_n, reserved / logits_n), flush=True)
        del w, head, targets, loss
    return out


def main():
    dev = torch.device("cuda:0")
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
              "per_layer": [], "phases": []}
    result["loss"] = loss_bytes(dev)
    for model_name, seq, mb in PER_LAYER:
        for compiled in (False, True):
            r = saved_by_block(model_name, seq, mb, compiled, dev)
            result["per_layer"].append(r)
            print("%s %s: saved %.2f h B/token (input saved %s), allocator +%.2f h B/token" %
                  (model_name, "compiled" if compiled else "eager", r["saved_h_bytes_per_token"],
                   r["input_saved"], r["allocator_growth_h_bytes_per_token"]), flush=True)
            with open(sys.argv[1], "w") as f:
                json.dump(result, f, indent=1)
    for cfg in ts.CONFIGS:
        if cfg[0] not in PHASES:
            continue
        r = phases(cfg, dev)
        result["phases"].append(r)
        print("%s: start %.2f, forward peak %.2f, after forward %.2f, backward peak %.2f GiB" %
              (r["name"], r["start_gib"], r["forward_peak_gib"], r["after_forward_gib"],
               r["backward_peak_gib"]), flush=True)
        with open(sys.argv[1], "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
