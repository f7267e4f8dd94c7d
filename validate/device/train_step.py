"""Real training steps on one GPU, for the accuracy corpus (scenarios/published/clustersim-h200/):
a Llama-style decoder (RMSNorm, rotary embedding, multi-head causal attention through
scaled_dot_product_attention, SwiGLU MLP, untied output head, cross-entropy over the vocabulary)
or a GPT-style one as MosaicML's MPT has it (llm-foundry's MPTBlock with its benchmark settings:
learned positions added to the token embedding, LayerNorm with biases computed in 16 bits
(low_precision_layernorm) or torch's nn.LayerNorm, linears with biases, a 4h GELU MLP, the
output head tied to the embedding), trained as PyTorch users commonly do on one GPU: fp32
parameters, bf16 autocast, fused AdamW, optionally every block checkpointed (full recompute) and
optionally each block compiled (torch.compile per block, as TorchTitan does); or under FSDP2 on a
one-rank process group (fully_shard per block and on the model, MixedPrecisionPolicy bf16
parameters and fp32 gradient reduction, no autocast, the logits cast to fp32 for the loss: the
path TorchTitan and FSDP users run, the all-gathers and reduce-scatters being copies on one
rank). Per configuration: the median step time of the timed steps (CUDA-synchronised wall clock), forward / backward / optimizer split (synchronised
separately in extra steps), peak allocated and reserved memory, and with --profile the GPU time
by kernel class from torch.profiler.

With --memory, one more step from an emptied cache records where the caching allocator reserves
beyond the tensors (memory_probe: per phase, and per CUDA stream at the allocated peak).

Usage: python3 train_step.py OUT.json [--only NAME,...] [--profile NAME,...] [--memory NAME,...]
       [--steps N]
Each configuration is written to OUT.json as soon as it is done (a partial file survives a
timeout)."""
import argparse
import gc
import json
import math
import os
import re
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

# name: layers, hidden, heads, ffn, vocab[, architecture[, kv_heads]] ("llama" and kv_heads =
# heads unless given)
MODELS = {
    "134m": (12, 768, 12, 2048, 32000),
    "374m": (24, 1024, 16, 2816, 32000),
    "1.4b": (24, 2048, 16, 5632, 32000),
    "4.3b": (36, 3072, 24, 8192, 32000),
    # MPT's benchmark dimensions (llm-foundry scripts/train/yamls/pretrain/mpt-1b.yaml and
    # mpt-7b.yaml: d_model, n_heads, n_layers, expansion_ratio 4, vocab 50368); the 7B's width
    # with 8 of its 32 layers, so that fp32 parameters and Adam fit one GPU.
    "mpt-1b": (24, 2048, 16, 8192, 50368, "mpt"),
    "mpt-7b-8l": (8, 4096, 32, 16384, 50368, "mpt"),
    # The same 1B with torch's nn.LayerNorm (fp32 under autocast), as GPT-2-style code has it.
    "gpt-1b": (24, 2048, 16, 8192, 50368, "gpt"),
    # The same GPT with dropout 0.1 on the attention probabilities only (SDPA's dropout_p, in
    # the flash kernel): what that dropout costs inside a training step (call 37).
    "gpt-1b-adrop": (24, 2048, 16, 8192, 50368, "gpt-adrop"),
    # The 1.4B's layer, 8 and 48 of them; MPT-7B's layer, 4 of them (call 21: does the
    # allocator's cache follow the number of layers?).
    "1.4b-8l": (8, 2048, 16, 5632, 32000),
    "1.4b-48l": (48, 2048, 16, 5632, 32000),
    "mpt-7b-4l": (4, 4096, 32, 16384, 50368, "mpt"),
    # Llama 3 8B's layer (Llama Team 2024, Table 3: hidden 4096, 32 heads with 8 key-value
    # heads, FFN 14336, vocabulary 128256), 8 of its 32 layers, as TorchTitan's model code has
    # it ("titan": TitanBlock) and with the fused projections of this file's Block ("llama"),
    # for TorchTitan's 8B recipe per GPU (call 23: its compile and op-level checkpointing).
    "llama3-8b-8l": (8, 4096, 32, 14336, 128256, "titan", 8),
    "llama3-8b-8l-fused": (8, 4096, 32, 14336, 128256, "llama", 8),
    # 4 of its layers: the same per GPU within an H100's 80 GB (call 41).
    "llama3-8b-4l": (4, 4096, 32, 14336, 128256, "titan", 8),
    "llama3-8b-4l-fused": (4, 4096, 32, 14336, 128256, "llama", 8),
    # Qwen3-30B-A3B's MoE layer (Hugging Face Qwen/Qwen3-30B-A3B config.json: hidden 2048, 32
    # heads of 128 with 4 key-value heads, 128 experts of 768, top 8, vocabulary 151,936), 4 of
    # its 48 layers as TorchTitan's MoE code runs them (MoEBlock; call 43). ffn = the experts'.
    "qwen3-30b-a3b-4l": (4, 2048, 32, 768, 151936, "moe", 4),
}
# The same layers as one GPU of expert parallelism 16 runs them (Megatron-Bridge's 16 x H100
# recipe, forced balance): 8 of the 128 experts, each taking 4,096 routed copies of a sequence's
# tokens, as top 8 of 8 experts does on one GPU (no all-to-all) (call 48); MOE below differs.
MODELS["qwen3-30b-a3b-8e-4l"] = MODELS["qwen3-30b-a3b-4l"]

# MoE models: experts, top_k, head_dim.
MOE = {"qwen3-30b-a3b-4l": (128, 8, 128), "qwen3-30b-a3b-8e-4l": (8, 8, 128)}

# name, model, seq, micro-batch, recompute, compile[, recipe] ("autocast" unless given, or
# "fsdp": FSDP2 on one rank, bf16 parameters, no autocast). recompute: "none", "full" (each
# block checkpointed) or "op" (TorchTitan's op-level selective checkpointing: op_sac_policy).
CONFIGS = [
    ("134m-s2k-b8", "134m", 2048, 8, "none", False),
    ("134m-s8k-b2", "134m", 8192, 2, "none", False),
    ("134m-s32k-b1", "134m", 32768, 1, "none", False),
    ("134m-s128k-b1-full", "134m", 131072, 1, "full", False),
    ("374m-s2k-b8", "374m", 2048, 8, "none", False),
    ("374m-s8k-b2", "374m", 8192, 2, "none", False),
    ("374m-s8k-b2-full", "374m", 8192, 2, "full", False),
    ("374m-s32k-b1-full", "374m", 32768, 1, "full", False),
    ("1.4b-s2k-b8", "1.4b", 2048, 8, "none", False),
    ("1.4b-s8k-b2", "1.4b", 8192, 2, "none", False),
    ("1.4b-s8k-b2-full", "1.4b", 8192, 2, "full", False),
    ("1.4b-s32k-b1-full", "1.4b", 32768, 1, "full", False),
    ("4.3b-s2k-b4", "4.3b", 2048, 4, "none", False),
    ("4.3b-s8k-b1", "4.3b", 8192, 1, "none", False),
    ("4.3b-s8k-b1-full", "4.3b", 8192, 1, "full", False),
    ("4.3b-s32k-b1-full", "4.3b", 32768, 1, "full", False),
    ("134m-s8k-b2-compiled", "134m", 8192, 2, "none", True),
    ("1.4b-s8k-b2-compiled", "1.4b", 8192, 2, "none", True),
    ("1.4b-s8k-b2-full-compiled", "1.4b", 8192, 2, "full", True),
    ("4.3b-s8k-b1-compiled", "4.3b", 8192, 1, "none", True),
    ("mpt-1b-s2k-b8", "mpt-1b", 2048, 8, "none", False),
    ("mpt-1b-s2k-b8-fsdp", "mpt-1b", 2048, 8, "none", False, "fsdp"),
    ("mpt-7b-8l-s2k-b6", "mpt-7b-8l", 2048, 6, "none", False),
    ("mpt-7b-8l-s2k-b6-fsdp", "mpt-7b-8l", 2048, 6, "none", False, "fsdp"),
    ("gpt-1b-s2k-b8", "gpt-1b", 2048, 8, "none", False),
    ("gpt-1b-s4k-b2", "gpt-1b", 4096, 2, "none", False),
    ("gpt-1b-adrop-s4k-b2", "gpt-1b-adrop", 4096, 2, "none", False),
    ("1.4b-s2k-b8-fsdp", "1.4b", 2048, 8, "none", False, "fsdp"),
    ("1.4b-8l-s2k-b4", "1.4b-8l", 2048, 4, "none", False),
    ("1.4b-s2k-b4", "1.4b", 2048, 4, "none", False),
    ("1.4b-48l-s2k-b4", "1.4b-48l", 2048, 4, "none", False),
    ("1.4b-48l-s2k-b4-full", "1.4b-48l", 2048, 4, "full", False),
    ("mpt-7b-4l-s2k-b6-fsdp", "mpt-7b-4l", 2048, 6, "none", False, "fsdp"),
    ("llama3-8b-8l-fused-s8k-b2-fsdp-op", "llama3-8b-8l-fused", 8192, 2, "op", False, "fsdp"),
    ("llama3-8b-8l-fused-s8k-b2-fsdp-op-compiled", "llama3-8b-8l-fused", 8192, 2, "op", True,
     "fsdp"),
    ("llama3-8b-8l-fused-s8k-b2-fsdp", "llama3-8b-8l-fused", 8192, 2, "none", False, "fsdp"),
    ("llama3-8b-8l-fused-s8k-b2-fsdp-compiled", "llama3-8b-8l-fused", 8192, 2, "none", True,
     "fsdp"),
    ("llama3-8b-8l-s8k-b2-fsdp-op", "llama3-8b-8l", 8192, 2, "op", False, "fsdp"),
    ("llama3-8b-8l-s8k-b2-fsdp-op-compiled", "llama3-8b-8l", 8192, 2, "op", True, "fsdp"),
    ("llama3-8b-8l-s8k-b2-fsdp", "llama3-8b-8l", 8192, 2, "none", False, "fsdp"),
    ("llama3-8b-8l-s8k-b2-fsdp-compiled", "llama3-8b-8l", 8192, 2, "none", True, "fsdp"),
    # The same with torchao-style float8 linears (float8_linear below): TorchTitan's
    # --float8.enable_float8_linear without the float8 all-gather (one rank gathers nothing).
    ("llama3-8b-8l-s8k-b2-fsdp-compiled-float8", "llama3-8b-8l", 8192, 2, "none", True, "fsdp",
     "float8"),
    ("llama3-8b-8l-s8k-b2-fsdp-op-compiled-float8", "llama3-8b-8l", 8192, 2, "op", True, "fsdp",
     "float8"),
    ("llama3-8b-8l-fused-s8k-b2-fsdp-compiled-float8", "llama3-8b-8l-fused", 8192, 2, "none",
     True, "fsdp", "float8"),
    # Every block checkpointed (TorchTitan's full activation checkpointing), bf16 and float8.
    ("llama3-8b-8l-s8k-b2-fsdp-full-compiled", "llama3-8b-8l", 8192, 2, "full", True, "fsdp"),
    ("llama3-8b-8l-s8k-b2-fsdp-full-compiled-float8", "llama3-8b-8l", 8192, 2, "full", True,
     "fsdp", "float8"),
] + [(name.replace("8l", "4l"), model.replace("8l", "4l")) + tuple(rest)
     for name, model, *rest in [
         ("llama3-8b-8l-s8k-b2-fsdp-compiled", "llama3-8b-8l", 8192, 2, "none", True, "fsdp"),
         ("llama3-8b-8l-s8k-b2-fsdp-compiled-float8", "llama3-8b-8l", 8192, 2, "none", True,
          "fsdp", "float8"),
         ("llama3-8b-8l-s8k-b2-fsdp-op-compiled", "llama3-8b-8l", 8192, 2, "op", True, "fsdp"),
         ("llama3-8b-8l-s8k-b2-fsdp-op-compiled-float8", "llama3-8b-8l", 8192, 2, "op", True,
          "fsdp", "float8"),
         ("llama3-8b-8l-fused-s8k-b2-fsdp-compiled", "llama3-8b-8l-fused", 8192, 2, "none",
          True, "fsdp"),
         ("llama3-8b-8l-fused-s8k-b2-fsdp-compiled-float8", "llama3-8b-8l-fused", 8192, 2,
          "none", True, "fsdp", "float8"),
         ("llama3-8b-8l-s8k-b2-fsdp-full-compiled", "llama3-8b-8l", 8192, 2, "full", True,
          "fsdp"),
         ("llama3-8b-8l-s8k-b2-fsdp-full-compiled-float8", "llama3-8b-8l", 8192, 2, "full", True,
          "fsdp", "float8")]] + [
    ("qwen3-30b-a3b-4l-s4k-b2-fsdp", "qwen3-30b-a3b-4l", 4096, 2, "none", False, "fsdp"),
    ("qwen3-30b-a3b-4l-s4k-b2-fsdp-compiled", "qwen3-30b-a3b-4l", 4096, 2, "none", True, "fsdp"),
    ("qwen3-30b-a3b-4l-s4k-b2-fsdp-full-compiled", "qwen3-30b-a3b-4l", 4096, 2, "full", True,
     "fsdp"),
    ("qwen3-30b-a3b-8e-4l-s4k-b1-fsdp", "qwen3-30b-a3b-8e-4l", 4096, 1, "none", False, "fsdp"),
    ("qwen3-30b-a3b-8e-4l-s4k-b1-fsdp-compiled", "qwen3-30b-a3b-8e-4l", 4096, 1, "none", True,
     "fsdp"),
    ("qwen3-30b-a3b-8e-4l-s4k-b2-fsdp-compiled", "qwen3-30b-a3b-8e-4l", 4096, 2, "none", True,
     "fsdp"),
]


def model_dims(name):
    """layers, hidden, heads, ffn, vocab, architecture, kv_heads"""
    spec = MODELS[name]
    arch = spec[5] if len(spec) > 5 else "llama"
    kv_heads = spec[6] if len(spec) > 6 else spec[2]
    return spec[:5] + (arch, kv_heads)


def recipe_of(cfg):
    return cfg[6] if len(cfg) > 6 else "autocast"


def float8_of(cfg):
    return len(cfg) > 7 and cfg[7] == "float8"


def rope_tables(seq, head_dim, device):
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(seq, device=device).float()
    freqs = torch.outer(t, inv)
    return freqs.cos(), freqs.sin()


def apply_rope(x, cos, sin):
    # x: [b, heads, s, d]; rotate pairs (even, odd) as halves, Llama's (GPT-NeoX) layout.
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    c, s = cos[None, None], sin[None, None]
    return torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)


class Block(nn.Module):
    def __init__(self, hidden, heads, ffn, kv_heads=None):
        super().__init__()
        self.heads = heads
        self.kv_heads = kv_heads or heads
        self.kv_width = hidden // heads * self.kv_heads
        self.attn_norm = nn.RMSNorm(hidden)
        self.qkv = nn.Linear(hidden, hidden + 2 * self.kv_width, bias=False)
        self.out = nn.Linear(hidden, hidden, bias=False)
        self.mlp_norm = nn.RMSNorm(hidden)
        self.gate_up = nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = self.qkv(self.attn_norm(x)).split((h, self.kv_width, self.kv_width), dim=-1)
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.kv_heads, d).transpose(1, 2)
        v = v.view(b, s, self.kv_heads, d).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if self.kv_heads != self.heads:
            # TorchTitan's repeat_kv: each key-value head copied for its query heads.
            rep = self.heads // self.kv_heads
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, h))
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class TitanRMSNorm(nn.Module):
    """TorchTitan's RMSNorm (torchtitan/models/norms.py at 9dec370, norm_type "rmsnorm"):
    computed on an fp32 copy of the input, cast back, then scaled by the weight."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)
        return out * self.weight


def titan_freqs_cis(seq, head_dim, dev, theta=500000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=dev)[: head_dim // 2].float()
                             / head_dim))
    t = torch.arange(seq, device=dev, dtype=torch.float32)
    return torch.polar(torch.ones(seq, head_dim // 2, device=dev), torch.outer(t, freqs))


def titan_rotary(xq, xk, freqs_cis):
    """TorchTitan's apply_rotary_emb: adjacent pairs as complex numbers, in fp32."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    f = freqs_cis[None, :, None, :]
    xq_out = torch.view_as_real(xq_ * f).flatten(3)
    xk_out = torch.view_as_real(xk_ * f).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class TitanAttention(nn.Module):
    """TorchTitan's attention with the norm before it (torchtitan/models/llama/model.py at
    9dec370): its RMSNorm, separate wq/wk/wv/wo projections of heads of head_dim, fp32 complex
    rotary embedding, repeat_kv by expand + reshape, causal SDPA. The blocks below add their
    MLP."""

    def __init__(self, hidden, heads, kv_heads, head_dim):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.attention_norm = TitanRMSNorm(hidden)
        self.wq = nn.Linear(hidden, heads * head_dim, bias=False)
        self.wk = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.wv = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.wo = nn.Linear(heads * head_dim, hidden, bias=False)

    def attention(self, x, freqs_cis):
        b, s, _ = x.shape
        xq = self.wq(x).view(b, s, -1, self.head_dim)
        xk = self.wk(x).view(b, s, -1, self.head_dim)
        xv = self.wv(x).view(b, s, -1, self.head_dim)
        xq, xk = titan_rotary(xq, xk, freqs_cis)
        rep = self.heads // self.kv_heads
        keys = xk.unsqueeze(3).expand(b, s, self.kv_heads, rep, self.head_dim).reshape(
            b, s, self.heads, self.head_dim)
        values = xv.unsqueeze(3).expand(b, s, self.kv_heads, rep, self.head_dim).reshape(
            b, s, self.heads, self.head_dim)
        out = F.scaled_dot_product_attention(xq.transpose(1, 2), keys.transpose(1, 2),
                                             values.transpose(1, 2), is_causal=True)
        return self.wo(out.transpose(1, 2).contiguous().view(b, s, -1))


class TitanBlock(TitanAttention):
    """TorchTitan's Llama TransformerBlock (torchtitan/models/llama/model.py at 9dec370):
    TitanAttention (heads of hidden / heads) and the SwiGLU MLP's w1/w2/w3 (seven matmuls in
    all: op-level checkpointing saves every other one)."""

    def __init__(self, hidden, heads, ffn, kv_heads):
        super().__init__(hidden, heads, kv_heads, hidden // heads)
        self.ffn_norm = TitanRMSNorm(hidden)
        self.w1 = nn.Linear(hidden, ffn, bias=False)
        self.w2 = nn.Linear(ffn, hidden, bias=False)
        self.w3 = nn.Linear(hidden, ffn, bias=False)

    def forward(self, x, freqs_cis, unused=None):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        n = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(n)) * self.w3(n))


class MoEBlock(TitanAttention):
    """A mixture-of-experts block as TorchTitan's MoE code has it (torchtitan/models/moe/moe.py,
    2025): TitanAttention (Qwen3's per-head q/k norms left out), then the
    router (a linear to the experts' logits, softmax in fp32, top_k), the routed copies sorted
    by expert (argsort), gathered and scaled by their scores before the experts
    (score_before_experts), the experts' SwiGLU as grouped GEMMs (torch._grouped_mm over the
    experts' offsets, w1 / w3 / w2 stacked per expert) and the outputs added back to their
    tokens (scatter_add). Routing is balanced: copy j of token i goes to expert (i top_k + j)
    mod experts (NeMo AutoModel's fake balanced gate; Megatron-Core's force-balanced routing
    in NVIDIA's tables), every expert the same number of rows, after the router's work."""

    def __init__(self, hidden, heads, kv_heads, head_dim, experts, top_k, expert_ffn):
        super().__init__(hidden, heads, kv_heads, head_dim)
        self.experts, self.top_k = experts, top_k
        self.ffn_norm = TitanRMSNorm(hidden)
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, expert_ffn, hidden) * 0.02)
        self.w3 = nn.Parameter(torch.randn(experts, expert_ffn, hidden) * 0.02)
        self.w2 = nn.Parameter(torch.randn(experts, hidden, expert_ffn) * 0.02)

    def moe(self, x):
        b, s, h = x.shape
        x = x.reshape(-1, h)
        n = x.shape[0]
        scores = F.softmax(self.gate(x).float(), dim=-1)
        top_scores, _ = scores.topk(self.top_k, dim=-1)
        experts = (torch.arange(n * self.top_k, device=x.device) % self.experts).view(n, -1)
        counts = torch.histc(experts.view(-1).float(), bins=self.experts, min=0,
                             max=self.experts)
        order = torch.argsort(experts.view(-1), stable=True)
        sorted_scores = top_scores.view(-1)[order]
        rows = (order // self.top_k).view(-1, 1).expand(-1, h)
        routed = torch.gather(x, 0, rows)
        routed = (routed.float() * sorted_scores.view(-1, 1)).to(x.dtype)
        offs = torch.cumsum(counts, 0).to(torch.int32)
        g = torch._grouped_mm(routed, self.w1.transpose(-2, -1), offs=offs)
        u = torch._grouped_mm(routed, self.w3.transpose(-2, -1), offs=offs)
        y = torch._grouped_mm(F.silu(g) * u, self.w2.transpose(-2, -1), offs=offs)
        return torch.zeros_like(x).scatter_add(0, rows, y).view(b, s, h)

    def forward(self, x, freqs_cis, unused=None):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.moe(self.ffn_norm(h))


def cross_entropy(logits, targets, logits_fp32):
    """The loss over the vocabulary, on the logits as they are (16-bit under autocast) or cast to
    fp32 first (`logits.float()`, as TorchTitan does)."""
    if logits_fp32:
        logits = logits.float()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def op_sac_policy():
    """TorchTitan's op-level selective activation checkpointing (torchtitan
    parallelisms/parallelize_llama.py, _apply_ac_to_transformer_block with selective_ac_option
    'op'): the outputs of attention and of every other matrix multiply are saved, everything
    else is recomputed in the backward."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    aten = torch.ops.aten
    # Float8 linears (Float8MM) run aten._scaled_mm where torchao's Float8Tensor is seen as
    # aten.mm: counted alike. TorchTitan saves the amaxes too (aten.max: "for low precision
    # training, it's useful to always save the result of max").
    mms = {aten.mm.default, aten._scaled_mm.default}
    save = mms | {aten.max.default,
                  aten._scaled_dot_product_efficient_attention.default,
                  aten._scaled_dot_product_flash_attention.default}
    if hasattr(aten, "_scaled_dot_product_cudnn_attention"):
        save.add(aten._scaled_dot_product_cudnn_attention.default)
    meta = {"forward": 0, "recompute": 0}

    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func in mms:
            meta[mode] += 1
        keep = func in save and not (func in mms and meta[mode] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def op_checkpointed(block):
    """A block wrapped for op-level checkpointing, as TorchTitan wraps it (before compiling)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    return checkpoint_wrapper(block, context_fn=op_sac_policy, preserve_rng_state=False)


E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def float8_cast(t, dtype):
    """torchao's tensorwise dynamic scaling (float8/float8_scaling_utils.py,
    hp_tensor_to_float8_dynamic): the tensor's amax, scale = the format's largest value over it
    in fp32, a saturated cast; returns the data and the inverse scale _scaled_mm takes."""
    fmax = torch.finfo(dtype).max
    amax = torch.max(torch.abs(t)).float()
    scale = fmax / torch.clamp(amax, min=1e-12)
    return (t.float() * scale).clamp(-fmax, fmax).to(dtype), scale.reciprocal()


class Float8MM(torch.autograd.Function):
    """x @ w.t() as torchao's Float8Linear computes it under its default recipe (float8/
    float8_linear.py, matmul_with_hp_or_float8_args, 2025): the 16-bit input and weight saved,
    each cast to e4m3 with a per-tensor scale for the output GEMM (fast accumulation), the
    output gradient to e5m2; the data gradient from the weight cast again into the column-major
    layout cuBLAS takes, the weight gradient from the gradient's and the input's transposed
    casts (precise accumulation); every output 16-bit."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        xq, xs = float8_cast(x, E4M3)
        wq, ws = float8_cast(w, E4M3)
        return torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws, out_dtype=x.dtype,
                                use_fast_accum=True)

    @staticmethod
    def backward(ctx, go):
        x, w = ctx.saved_tensors
        gq, gs = float8_cast(go, E5M2)
        wq, ws = float8_cast(w, E4M3)
        grad_x = torch._scaled_mm(gq, wq.t().contiguous().t(), scale_a=gs, scale_b=ws,
                                  out_dtype=go.dtype)
        xq, xs = float8_cast(x, E4M3)
        grad_w = torch._scaled_mm(gq.t().contiguous(), xq.t().contiguous().t(), scale_a=gs,
                                  scale_b=xs, out_dtype=w.dtype)
        return grad_x, grad_w


class Float8Linear(nn.Linear):
    """A bias-free nn.Linear whose matmul runs in float8 (Float8MM)."""

    def forward(self, x):
        shape = x.shape
        y = Float8MM.apply(x.reshape(-1, shape[-1]), self.weight)
        return y.view(*shape[:-1], y.shape[-1])


def relative_error(out, ref):
    """||out - ref|| / ||ref||, in fp64 (ref already fp64)."""
    return float((out.detach().double() - ref).norm() / ref.norm())


def float8_selfcheck(dev):
    """Float8MM against the same product in fp32 on fresh random inputs: ||out - ref|| / ||ref||
    for the output and both gradients (e4m3 / e5m2 operands land near 3e-2 and 6e-2)."""
    torch.manual_seed(1)
    x = torch.randn(2048, 4096, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w = (torch.randn(1024, 4096, device=dev, dtype=torch.bfloat16) / 64).requires_grad_()
    g = torch.randn(2048, 1024, device=dev, dtype=torch.bfloat16)
    y = Float8MM.apply(x, w)
    y.backward(g)
    xr, wr = x.detach().double(), w.detach().double()
    ref_y, ref_gx, ref_gw = xr @ wr.t(), g.double() @ wr, g.double().t() @ xr
    return {"output": relative_error(y, ref_y), "grad_input": relative_error(x.grad, ref_gx),
            "grad_weight": relative_error(w.grad, ref_gw)}


def moe_selfcheck(dev):
    """MoEBlock.moe against a per-token loop in fp64 on fresh random inputs (8 experts of 128,
    top 2, 64 tokens of 256): ||out - ref|| / ||ref|| (bf16 operands: near 1e-2)."""
    torch.manual_seed(2)
    blk = MoEBlock(256, 4, 2, 64, 8, 2, 128).to(dev).to(torch.bfloat16)
    x = torch.randn(1, 64, 256, device=dev, dtype=torch.bfloat16)
    with torch.no_grad():
        y = blk.moe(x).double()[0]
        xd = x.double()[0]
        scores = F.softmax((xd @ blk.gate.weight.double().t()), dim=-1).topk(2, dim=-1)[0]
        w1, w2, w3 = blk.w1.double(), blk.w2.double(), blk.w3.double()
        ref = torch.zeros_like(xd)
        for i in range(64):
            for j in range(2):
                e = (i * 2 + j) % 8
                r = xd[i] * scores[i, j]
                ref[i] += (F.silu(w1[e] @ r) * (w3[e] @ r)) @ w2[e].t()
    return relative_error(y, ref)


def float8_linear(module):
    """Every nn.Linear under `module` swapped for a Float8Linear holding the same weight, as
    torchao's convert_to_float8_training does for TorchTitan's blocks (the output head stays
    16-bit: module_filter_fn fqn != "output")."""
    for name, child in list(module.named_children()):
        if type(child) is nn.Linear and child.bias is None:
            f8 = Float8Linear(child.in_features, child.out_features, bias=False,
                              device=child.weight.device, dtype=child.weight.dtype)
            f8.weight = child.weight
            setattr(module, name, f8)
        else:
            float8_linear(child)
    return module


class Decoder(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, vocab, recompute, kv_heads=None,
                 titan=False, moe=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        if moe:  # (experts, top_k, head_dim): TorchTitan's MoE blocks
            experts, top_k, head_dim = moe
            self.blocks = nn.ModuleList(MoEBlock(hidden, heads, kv_heads, head_dim, experts,
                                                 top_k, ffn) for _ in range(layers))
            titan = True
        elif titan:
            self.blocks = nn.ModuleList(TitanBlock(hidden, heads, ffn, kv_heads)
                                        for _ in range(layers))
        else:
            self.blocks = nn.ModuleList(Block(hidden, heads, ffn, kv_heads) for _ in range(layers))
        if recompute == "op":
            self.blocks = nn.ModuleList(op_checkpointed(b) for b in self.blocks)
        self.norm = TitanRMSNorm(hidden) if titan else nn.RMSNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.recompute = recompute
        self.head_dim = hidden // heads
        self.logits_fp32 = False

    def forward(self, tokens, targets, cos, sin):
        x = self.embed(tokens)
        for blk in self.blocks:
            if self.recompute == "full":
                x = checkpoint(blk, x, cos, sin, use_reentrant=False)
            else:
                x = blk(x, cos, sin)
        return cross_entropy(self.head(self.norm(x)), targets, self.logits_fp32)


class LPLayerNorm(nn.LayerNorm):
    """llm-foundry's low_precision_layernorm: input, weight and bias cast to autocast's dtype and
    the norm computed in it (autocast would otherwise run layer_norm in fp32)."""

    def forward(self, x):
        if torch.is_autocast_enabled():
            dt = (torch.get_autocast_dtype("cuda") if hasattr(torch, "get_autocast_dtype")
                  else torch.get_autocast_gpu_dtype())
            with torch.autocast("cuda", enabled=False):
                return F.layer_norm(x.to(dt), self.normalized_shape, self.weight.to(dt),
                                    self.bias.to(dt), self.eps)
        return super().forward(x)


class GPTBlock(nn.Module):
    """llm-foundry's MPTBlock with no_bias False, ffn mptmlp (GELU), no dropout; attention
    through SDPA (MPT's benchmarks use flash or triton kernels)."""

    def __init__(self, hidden, heads, ffn, norm, attention_dropout=0.0):
        super().__init__()
        self.heads = heads
        self.attention_dropout = attention_dropout
        self.norm_1 = norm(hidden)
        self.Wqkv = nn.Linear(hidden, 3 * hidden)
        self.out_proj = nn.Linear(hidden, hidden)
        self.norm_2 = norm(hidden)
        self.up_proj = nn.Linear(hidden, ffn)
        self.down_proj = nn.Linear(ffn, hidden)

    def forward(self, x, cos=None, sin=None):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = self.Wqkv(self.norm_1(x)).chunk(3, dim=2)
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.heads, d).transpose(1, 2)
        v = v.view(b, s, self.heads, d).transpose(1, 2)
        a = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.attention_dropout if self.training else 0.0)
        x = x + self.out_proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.down_proj(F.gelu(self.up_proj(self.norm_2(x))))


class GPTDecoder(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, vocab, recompute, seq, low_precision_norm,
                 attention_dropout=0.0):
        super().__init__()
        norm = LPLayerNorm if low_precision_norm else nn.LayerNorm
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(GPTBlock(hidden, heads, ffn, norm, attention_dropout)
                                    for _ in range(layers))
        self.norm_f = norm(hidden)
        self.recompute = recompute
        self.logits_fp32 = False

    def forward(self, tokens, targets, cos=None, sin=None):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)[None]
        for blk in self.blocks:
            if self.recompute == "full":
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        logits = F.linear(self.norm_f(x), self.wte.weight)  # tied output head
        return cross_entropy(logits, targets, self.logits_fp32)


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def kernel_class(name):
    n = name.lower()
    if re.search(r"nccl", n):
        return "communication"
    if re.search(r"flash|fmha|attention|sdpa", n):
        return "attention"
    if re.search(r"gemm|cutlass|xmma|nvjet|sm90_|sm80_|ampere_|cublas|matmul", n):
        return "gemm"
    if re.search(r"multi_tensor|adam", n):
        return "optimizer"
    if re.search(r"nll|log_softmax|softmax|cross_entropy", n):
        return "loss"
    if re.search(r"memcpy|memset", n):
        return "copy"
    return "elementwise"


def fsdp_wrap(model):
    """FSDP2 on a one-rank process group: each block and the model fully_shard-ed with bf16
    parameters and fp32 gradient reduction (TorchTitan's defaults); the logits cast to fp32."""
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29511")  # any free port: one rank, this host only
        dist.init_process_group("nccl", rank=0, world_size=1)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for blk in model.blocks:
        fully_shard(blk, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    model.logits_fp32 = True
    return model


def build(cfg, dev, fullgraph=True):
    """A configuration's model (blocks compiled if asked, FSDP2 if its recipe says), fused AdamW,
    rotary tables and one micro-batch of random tokens and targets."""
    _, model_name, seq, mb, recompute, compiled = cfg[:6]
    layers, hidden, heads, ffn, vocab, arch, kv_heads = model_dims(model_name)
    torch.manual_seed(0)
    if arch in ("llama", "titan", "moe"):
        model = Decoder(layers, hidden, heads, ffn, vocab, recompute, kv_heads,
                        titan=(arch == "titan"), moe=MOE.get(model_name)).to(dev)
    else:
        model = GPTDecoder(layers, hidden, heads, ffn, vocab, recompute, seq,
                           low_precision_norm=(arch == "mpt"),
                           attention_dropout=0.1 if arch == "gpt-adrop" else 0.0).to(dev)
    if float8_of(cfg):  # TorchTitan's order: float8 conversion, checkpointing, compile, FSDP
        for blk in model.blocks:
            float8_linear(blk)
    if compiled and recipe_of(cfg) == "fsdp":
        # TorchTitan's order: checkpoint wrapper, then torch.compile per block (fullgraph), then
        # fully_shard on the compiled block, so that FSDP's hooks run outside the graph.
        for i, blk in enumerate(model.blocks):
            model.blocks[i] = torch.compile(blk, fullgraph=fullgraph)
    elif compiled:
        for blk in model.blocks:
            blk.compile()
    if recipe_of(cfg) == "fsdp":
        model = fsdp_wrap(model)
        # TorchTitan's default optimizer implementation over FSDP2's DTensor parameters.
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    if arch in ("titan", "moe"):  # the complex rotation factors in place of cos, sin
        head_dim = MOE[model_name][2] if arch == "moe" else hidden // heads
        cos, sin = titan_freqs_cis(seq, head_dim, dev), None
    else:
        cos, sin = rope_tables(seq, hidden // heads, dev)
    tokens = torch.randint(0, vocab, (mb, seq), device=dev)
    targets = torch.randint(0, vocab, (mb, seq), device=dev)
    return model, opt, cos, sin, tokens, targets


def memory_probe(step):
    """Where PyTorch's caching allocator reserves beyond the tensors, over one step begun from an
    emptied cache: allocated and reserved at the end of each phase and their peaks in it, and,
    replaying the allocator's own trace (torch.cuda.memory._record_memory_history), what each
    CUDA stream held allocated and reserved at the moment of the step's allocated peak and at
    its end. The allocator keeps a pool per stream: a block freed on one stream serves only
    that stream's later requests."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    stats = torch.cuda.memory_stats
    phases = []
    torch.cuda.memory._record_memory_history(max_entries=400000)

    def mark(name):
        torch.cuda.synchronize()
        st = stats()
        phases.append({"phase": name,
                       "allocated_bytes": st["allocated_bytes.all.current"],
                       "allocated_peak_bytes": st["allocated_bytes.all.peak"],
                       "reserved_bytes": st["reserved_bytes.all.current"],
                       "reserved_peak_bytes": st["reserved_bytes.all.peak"]})
        torch.cuda.reset_peak_memory_stats()

    step(mark)
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    out = {"phases": phases}
    # The end state per stream, from the segments; then the trace replayed backwards to the
    # state at its start, and forwards to find the allocated peak.
    end_alloc, end_res = {}, {}
    for seg in snap["segments"]:
        k = str(seg["stream"])
        end_res[k] = end_res.get(k, 0) + seg["total_size"]
        end_alloc[k] = end_alloc.get(k, 0) + seg["allocated_size"]
    trace = snap["device_traces"][0] if snap.get("device_traces") else []
    dalloc = {"alloc": 1, "free_completed": -1}
    dres = {"segment_alloc": 1, "segment_free": -1, "segment_map": 1, "segment_unmap": -1}
    alloc, res = dict(end_alloc), dict(end_res)

    def apply(e, sign):  # one trace event onto the per-stream totals, forwards (+1) or back
        k = str(e.get("stream", 0))
        a = e.get("action")
        for delta, totals in ((dalloc, alloc), (dres, res)):
            if a in delta:
                totals[k] = totals.get(k, 0) + sign * delta[a] * e["size"]

    for e in trace:
        apply(e, -1)
    peak, at_peak = -1, None
    for i, e in enumerate(trace):
        apply(e, +1)
        total = sum(alloc.values())
        if total > peak:
            peak = total
            at_peak = {"event": i, "allocated_by_stream": dict(alloc),
                       "reserved_by_stream": dict(res)}
    out["trace_events"] = len(trace)
    out["at_allocated_peak"] = at_peak
    out["at_end"] = {"allocated_by_stream": end_alloc, "reserved_by_stream": end_res,
                     "segments": len(snap["segments"]),
                     "segment_sizes_by_stream": {
                         k: sorted((s["total_size"] for s in snap["segments"]
                                    if str(s["stream"]) == k), reverse=True)[:40]
                         for k in end_res}}
    return out


def run_config(cfg, steps, profile, dev, memory=False, fullgraph=True, top=25):
    """One configuration's measurements; with profile, its GPU time by kernel class and its
    `top` kernels by GPU time (names cut at 120 characters for the default 25, whole beyond)."""
    name, model_name, seq, mb, recompute, compiled = cfg[:6]
    layers, hidden, heads, ffn, vocab, arch, kv_heads = model_dims(model_name)
    recipe = recipe_of(cfg)
    out = {"name": name, "model": model_name, "architecture": arch, "recipe": recipe,
           "layers": layers, "hidden": hidden, "heads": heads,
           "kv_heads": kv_heads, "ffn_hidden": ffn, "vocab": vocab, "seq_len": seq,
           "micro_batch": mb, "recompute": recompute, "compiled": compiled,
           "precision": "bf16-autocast" if recipe == "autocast" else "bf16-fsdp-mixed",
           "float8_linears": float8_of(cfg),
           "params_dtype": "fp32"}
    if arch == "moe":
        out["experts"], out["top_k"], out["head_dim"] = MOE[model_name]
    model, opt, cos, sin, tokens, targets = build(cfg, dev, fullgraph)
    if compiled and recipe == "fsdp":
        out["fullgraph"] = fullgraph
    out["optimizer"] = "AdamW(fused)" if opt.defaults.get("fused") else "AdamW(foreach)"
    out["parameters"] = count_params(model)

    def step(phases=None):
        # phases: a list (the times of the forward's and backward's ends are appended) or a
        # callable (called with the phase's name at each phase's end: memory_probe).
        def at(name):
            if callable(phases):
                phases(name)
            elif phases is not None:
                torch.cuda.synchronize()
                phases.append(time.perf_counter())
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=(recipe == "autocast")):
            loss = model(tokens, targets, cos, sin)
        at("forward")
        loss.backward()
        at("backward")
        opt.step()
        opt.zero_grad(set_to_none=True)
        if callable(phases):
            phases("optimizer")
        return loss

    t0 = time.perf_counter()
    for _ in range(3):  # warm-up (and compilation)
        step()
    torch.cuda.synchronize()
    out["warmup_s"] = time.perf_counter() - t0
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        a = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - a)
    out["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    out["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    # The caching allocator's fallbacks over the run (warm-up included): a retry frees every
    # cached block (cudaFree, which synchronises the device) and allocates again.
    ms = torch.cuda.memory_stats()
    out["allocator"] = {k: ms.get(k, 0) for k in ("num_alloc_retries", "num_device_alloc",
                                                  "num_device_free", "num_ooms")}
    out["allocator_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    out["step_times_s"] = times
    out["step_time_s"] = sorted(times)[len(times) // 2]
    # Forward / backward / optimizer, each synchronised (two more steps, medians of two).
    split = []
    for _ in range(2):
        torch.cuda.synchronize()
        p = [time.perf_counter()]
        step(p)
        torch.cuda.synchronize()
        p.append(time.perf_counter())
        split.append((p[1] - p[0], p[2] - p[1], p[3] - p[2]))
    out["forward_s"] = min(s[0] for s in split)
    out["backward_s"] = min(s[1] for s in split)
    out["optimizer_s"] = min(s[2] for s in split)
    if memory:
        out["memory_probe"] = memory_probe(step)
    if profile:
        from torch.profiler import ProfilerActivity, profile as prof
        with prof(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(2):
                step()
            torch.cuda.synchronize()
        by_class = {}
        kernels = {}
        for e in p.key_averages():
            t = e.self_device_time_total if hasattr(e, "self_device_time_total") else e.self_cuda_time_total
            if t <= 0:
                continue
            c = kernel_class(e.key)
            by_class[c] = by_class.get(c, 0) + t * 1e-6 / 2
            kernels[e.key if top > 25 else e.key[:120]] = (t * 1e-6 / 2, e.count // 2)
        out["gpu_time_by_class_s"] = by_class
        ranked = sorted(kernels.items(), key=lambda kv: -kv[1][0])[:top]
        out["top_kernels"] = [{"kernel": k, "s": v[0], "calls": v[1]} for k, v in ranked]
    del model, opt
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--profile", default="")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--top", type=int, default=25,
                    help="with --profile: list this many kernels (above 25, with their whole names)")
    ap.add_argument("--memory", default="",
                    help="configurations whose allocator use is probed (memory_probe)")
    args = ap.parse_args()
    dev = torch.device("cuda:0")
    only = set(filter(None, args.only.split(",")))
    profile = set(filter(None, args.profile.split(",")))
    memory = set(filter(None, args.memory.split(",")))
    result = {"torch": torch.__version__, "cuda": torch.version.cuda,
              "device": torch.cuda.get_device_name(0),
              "memory_total_bytes": torch.cuda.get_device_properties(0).total_memory,
              "sdpa_backends": {"flash": torch.backends.cuda.flash_sdp_enabled(),
                                "cudnn": torch.backends.cuda.cudnn_sdp_enabled()},
              "runs": []}
    if any(model_dims(c[1])[5] == "moe" and (not only or c[0] in only) for c in CONFIGS):
        result["moe_selfcheck"] = moe_selfcheck(dev)
        print("MoE self-check (relative error):", result["moe_selfcheck"], flush=True)
    if any(float8_of(c) and (not only or c[0] in only) for c in CONFIGS):
        result["float8_selfcheck"] = float8_selfcheck(dev)
        print("float8 self-check (relative error):", result["float8_selfcheck"], flush=True)
    for cfg in CONFIGS:
        if only and cfg[0] not in only:
            continue
        t0 = time.time()

        def measure(fullgraph=True):
            return run_config(cfg, args.steps, cfg[0] in profile, dev, cfg[0] in memory,
                              fullgraph, args.top)

        def failed(e):  # the error's record: report it and go on to the next configuration
            if isinstance(e, torch.cuda.OutOfMemoryError):
                return {"name": cfg[0], "error": "out of memory: " + str(e)[:200]}
            return {"name": cfg[0], "error": type(e).__name__ + ": " + str(e)[:300]}

        try:
            r = measure()
        except Exception as e:
            r = failed(e)
            graph_break = not isinstance(e, torch.cuda.OutOfMemoryError)
            if graph_break and cfg[5] and recipe_of(cfg) == "fsdp":  # once more, not fullgraph
                print("%s: %s; again with fullgraph=False" % (cfg[0], r["error"][:200]), flush=True)
                gc.collect()
                torch.cuda.empty_cache()
                try:
                    r = measure(fullgraph=False)
                except Exception as e2:
                    r = failed(e2)
        r["wall_s"] = time.time() - t0
        # torch.compile'd blocks sit in a reference cycle: without a collection here the
        # previous compiled model's parameters stay allocated into the next configuration's
        # peaks (call 18: 4.6 GiB in call 9's 1.4b-s8k-b2-full-compiled).
        gc.collect()
        torch.cuda.empty_cache()
        result["runs"].append(r)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        msg = ("%s: step %.4f s, fwd %.4f bwd %.4f opt %.4f, peak %.2f GiB (reserved %.2f)" %
               (r["name"], r["step_time_s"], r["forward_s"], r["backward_s"], r["optimizer_s"],
                r["peak_allocated_bytes"] / 2**30, r["peak_reserved_bytes"] / 2**30)
               if "error" not in r else "%s: %s" % (r["name"], r["error"]))
        print(msg + " [%.0f s]" % r["wall_s"], flush=True)


if __name__ == "__main__":
    main()
