#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Parameter and FLOP counts of the Hugging Face configs under tests/model/hf/.

For each config.json the count is computed here from its fields with the
shapes transformers' modeling_<model>.py gives the weights (written out
below, no transformers import), then compared with
  1. what 'approf model show --hf-config FILE' reports (exactly), and
  2. the count the model card publishes (to its rounding);
and approf's forward and backward FLOPs of one 1024-token sequence with
the GEMMs' count (expected_flops), within 0.5%.

Usage: hf_params.py APPROF HF_DIR
"""
import json
import subprocess
import sys

# file, the published count and its tolerance, and where it is published.
# Exact counts (tolerance 0) come from keras-team/keras-hub's preset tables
# (keras_hub/src/models/<model>/<model>_presets.py, "params", the count of
# the converted Hugging Face checkpoint) or the model's paper; the others
# from the model card at huggingface.co/<repo> (to its rounding). The
# configs themselves were checked against copies of the hub's files
# (docs/models.md, "Where the test configs come from").
CASES = [
    # Qwen/Qwen3-8B: keras-hub qwen3_presets.py qwen3_8b_en 8190735360
    # (the card: "Number of Parameters: 8.2B")
    ("qwen3-8b.json", 8190735360, 0),
    # Qwen/Qwen3-30B-A3B: keras-hub qwen3_moe_presets.py
    # qwen3_moe_30b_a3b_en 30532122624 (the card: "30.5B in total")
    ("qwen3-30b-a3b.json", 30532122624, 0),
    # google/gemma-7b: keras-hub gemma_presets.py gemma_7b_en 8537680896
    ("gemma-7b.json", 8537680896, 0),
    # google/gemma-2-9b: keras-hub gemma_presets.py gemma2_9b_en 9241705984
    ("gemma-2-9b.json", 9241705984, 0),
    # microsoft/Phi-3-mini-4k-instruct: keras-hub phi3_presets.py
    # phi3_mini_4k_instruct_en 3821079552 (the card: "3.8B parameters")
    ("phi-3-mini-4k-instruct.json", 3821079552, 0),
    # allenai/OLMo-2-1124-7B: 7.3B on the hub
    ("olmo-2-1124-7b.json", 7.3e9, 0.05e9),
    # bigcode/starcoder2-7b: 7.17B on the hub (tied embedding)
    ("starcoder2-7b.json", 7.17e9, 0.005e9),
    # EleutherAI/pythia-1.4b: the Pythia paper's table gives 1,414,647,808
    # total parameters (the card's "1.4B")
    ("pythia-1.4b.json", 1414647808, 0),
    # EleutherAI/gpt-neox-20b: the GPT-NeoX-20B paper, 20,554,567,680
    ("gpt-neox-20b.json", 20554567680, 0),
    # tiiuae/falcon-7b: "Falcon-7B is a 7B parameters causal decoder-only
    # model" (6.92B on the hub)
    ("falcon-7b.json", 6.92e9, 0.005e9),
    # deepseek-ai/DeepSeek-V3: "671B total parameters" (the hub's 685B adds
    # the 14B multi-token prediction module, which approf does not build)
    ("deepseek-v3.json", 671e9, 0.5e9),
    # deepseek-ai/DeepSeek-V2-Lite: "15.7B total parameters"
    ("deepseek-v2-lite.json", 15.7e9, 0.05e9),
    # google/gemma-3-1b-pt: keras-hub gemma3_presets.py gemma3_1b 999885952
    ("gemma-3-1b-pt.json", 999885952, 0),
    # meta-llama/Llama-4-Scout-17B-16E: "17B active, 109B total"; the total
    # includes the vision encoder and projector (about 0.87B by
    # vision_config's shapes), which approf does not build: the language
    # model is 107.77B
    ("llama-4-scout-17b-16e.json", 109e9, 1.5e9),
    # google/gemma-3-12b (Gemma3ForConditionalGeneration; its text_config):
    # keras-hub gemma3_presets.py gemma3_12b_text 11765788416 counts Google's
    # 262144-row embedding; the hub's text_config has vocab_size 262208,
    # 64 rows of 3840 more
    ("gemma-3-12b.json", 11765788416 + 64 * 3840, 0),
    # meta-llama/Llama-4-Maverick-17B-128E (its text_config): "400B total"
    # with the vision encoder and projector, which approf does not build
    ("llama-4-maverick-17b-128e.json", 400e9, 2e9),
    # bigcode/starcoder2-15b: no exact count found; the name's 15B (tied
    # embedding, as the config sets no tie_word_embeddings)
    ("starcoder2-15b.json", 15e9, 1e9),
]

# Class defaults of the fields these formulas read when a file omits them
# (configuration_<model>.py).
DEFAULTS = {
    "qwen3": {"num_key_value_heads": 32, "head_dim": 128, "tie_word_embeddings": False,
              "attention_bias": False},
    "qwen3_moe": {"num_key_value_heads": 4, "tie_word_embeddings": False, "attention_bias": False,
                  "decoder_sparse_step": 1, "mlp_only_layers": []},
    "gemma": {"num_key_value_heads": 16, "head_dim": 256, "tie_word_embeddings": True,
              "attention_bias": False},
    "gemma2": {"num_key_value_heads": 4, "head_dim": 256, "tie_word_embeddings": True,
               "attention_bias": False},
    "phi3": {"tie_word_embeddings": False},
    "olmo2": {"tie_word_embeddings": False, "attention_bias": False},
    "starcoder2": {"num_key_value_heads": 2, "tie_word_embeddings": True, "use_bias": True},
    "gemma3_text": {"num_key_value_heads": 4, "head_dim": 256, "tie_word_embeddings": True,
                    "attention_bias": False},
}

# Llama4TextConfig's defaults (configuration_llama4.py): Llama 4 Scout's sizes.
LLAMA4_DEFAULTS = {"num_hidden_layers": 48, "hidden_size": 5120, "num_attention_heads": 40,
                   "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192,
                   "intermediate_size_mlp": 16384, "vocab_size": 202048, "num_local_experts": 16,
                   "interleave_moe_layer_step": 1, "moe_layers": None, "tie_word_embeddings": False,
                   "attention_bias": False}


def linear(i, o, bias):
    """nn.Linear(i, o, bias)"""
    return i * o + (o if bias else 0)


def count_neox(c):
    """GPTNeoXForCausalLM (modeling_gpt_neox.py): per layer two LayerNorms,
    query_key_value Linear(h, 3h) and dense Linear(h, h) with bias
    (attention_bias, default true), dense_h_to_4h / dense_4h_to_h with bias;
    embed_in, final_layer_norm, embed_out Linear(h, v) without bias."""
    h, v, f = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    b = c.get("attention_bias", True)
    layer = 2 * 2 * h + linear(h, 3 * h, b) + linear(h, h, b) + linear(h, f, True) + linear(f, h, True)
    tied = c.get("tie_word_embeddings", False)
    return c["num_hidden_layers"] * layer + v * h + 2 * h + (0 if tied else v * h)


def count_falcon(c):
    """FalconForCausalLM (modeling_falcon.py, FalconConfig's defaults):
    query_key_value Linear(h, (2 kv + heads) d) (new decoder), (heads + 2) d
    (multi_query), else 3h; dense Linear(h, h); the MLP 4h; all with
    bias=config.bias; ln_attn + ln_mlp (new decoder) or input_layernorm (+
    post_attention_layernorm unless parallel_attn); ln_f; lm_head tied."""
    h = c.get("hidden_size", c.get("n_embed", 4544))
    heads = c.get("num_attention_heads", c.get("n_head", 71))
    n_layers = c.get("num_hidden_layers", c.get("n_layer", 32))
    v, b, d = c.get("vocab_size", 65024), c.get("bias", False), h // heads
    new, mq = c.get("new_decoder_architecture", False), c.get("multi_query", True)
    f = c.get("ffn_hidden_size") or 4 * h
    if new:
        qkv = (2 * c.get("num_kv_heads", heads) + heads) * d
        lns = 2 if c.get("num_ln_in_parallel_attn", 2) == 2 else 1
    else:
        qkv = h + 2 * d if mq else 3 * h
        lns = 1 if c.get("parallel_attn", True) else 2
    layer = lns * 2 * h + linear(h, qkv, b) + linear(h, h, b) + linear(h, f, b) + linear(f, h, b)
    tied = c.get("tie_word_embeddings", True)
    return n_layers * layer + v * h + 2 * h + (0 if tied else v * h)


def count_mla(c):
    """DeepseekV3ForCausalLM / DeepseekV2ForCausalLM (modeling_deepseek_v3.py,
    modular_deepseek_v2.py). Attention (MLA): q_proj Linear(h, heads *
    (nope + rope)) when q_lora_rank is null, else q_a_proj Linear(h, q_lora),
    q_a_layernorm, q_b_proj Linear(q_lora, heads (nope + rope));
    kv_a_proj_with_mqa Linear(h, kv_lora + rope), kv_a_layernorm,
    kv_b_proj Linear(kv_lora, heads (nope + v)), o_proj Linear(heads v, h);
    no biases. Layers < first_k_dense_replace: MLP(intermediate_size); the
    others: gate weight [E, h] (+ e_score_correction_bias [E] in v3), E
    experts and a shared MLP of n_shared * moe_intermediate_size."""
    v3 = c["model_type"] == "deepseek_v3"
    h, heads, v = c["hidden_size"], c["num_attention_heads"], c["vocab_size"]
    nope, rope, vd = c.get("qk_nope_head_dim", 128), c.get("qk_rope_head_dim", 64), c.get("v_head_dim", 128)
    lat, ql = c.get("kv_lora_rank", 512), c.get("q_lora_rank", 1536)
    if ql is None:
        attn = h * heads * (nope + rope)
    else:
        attn = h * ql + ql + ql * heads * (nope + rope)
    attn += h * (lat + rope) + lat + lat * heads * (nope + vd) + heads * vd * h
    e = c.get("n_routed_experts", 256 if v3 else 64)
    f = c.get("moe_intermediate_size", 2048 if v3 else 1407)
    shared = c.get("n_shared_experts", 1 if v3 else 2) or 0
    moe = h * e + (e if v3 else 0) + e * 3 * h * f + 3 * h * shared * f
    dense = 3 * h * c["intermediate_size"]
    k = c.get("first_k_dense_replace", 3 if v3 else 0)
    total = 0
    for layer in range(c["num_hidden_layers"]):
        total += attn + 2 * h + (dense if layer < k or e == 0 else moe)
    return total + v * h + h + (0 if c.get("tie_word_embeddings", False) else v * h)


def count_llama4(cfg):
    """Llama4ForCausalLM (modeling_llama4.py): per layer input_layernorm and
    post_attention_layernorm, q/k/v/o projections (bias=attention_bias; the
    q/k norm is an L2 norm without weights); in the layers of moe_layers
    (default range(step - 1, layers, step)) Llama4TextMoe: router
    Linear(h, E, bias=False), experts' gate_up_proj [E, h, 2f] and down_proj
    [E, f, h], shared_expert Llama4TextMLP(f) (f = intermediate_size); in
    the others Llama4TextMLP(intermediate_size_mlp); model.norm; lm_head
    untied unless tie_word_embeddings."""
    c = dict(LLAMA4_DEFAULTS)
    c.update({k: v for k, v in cfg.items() if v is not None})
    h, n_layers, v = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads, kv, d, b = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["attention_bias"]
    f, fd, e = c["intermediate_size"], c["intermediate_size_mlp"], c["num_local_experts"]
    moe_layers = c["moe_layers"]
    if moe_layers is None:
        step = c["interleave_moe_layer_step"]
        moe_layers = list(range(step - 1, n_layers, step))
    attn = linear(h, heads * d, b) + 2 * linear(h, kv * d, b) + linear(heads * d, h, b)
    total = 0
    for layer in range(n_layers):
        total += attn + 2 * h
        if layer in moe_layers:
            total += h * e + e * h * 2 * f + e * f * h + 3 * h * f
        else:
            total += 3 * h * fd
    return total + v * h + h + (0 if c["tie_word_embeddings"] else v * h)


def count(cfg):
    mt = cfg["model_type"]
    if mt in ("gemma3", "llama4"):
        # Gemma3ForConditionalGeneration, Llama4ForConditionalGeneration:
        # the language model of text_config (approf builds no vision tower)
        cfg = dict(cfg["text_config"], model_type=mt + "_text")
        mt = cfg["model_type"]
    if mt == "llama4_text":
        return count_llama4(cfg)
    if mt in ("deepseek_v2", "deepseek_v3"):
        return count_mla(cfg)
    if mt == "gpt_neox":
        return count_neox(cfg)
    if mt == "falcon":
        return count_falcon(cfg)
    c = dict(DEFAULTS[mt])
    c.update({k: v for k, v in cfg.items() if v is not None})
    h, n_layers, v = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads", heads)
    d = c.get("head_dim", h // heads)
    ffn = c["intermediate_size"]
    attn_bias = c.get("use_bias", c.get("attention_bias", False))

    # attention: q_proj, k_proj, v_proj, o_proj (phi3's qkv_proj is
    # Linear(h, (heads + 2 kv) d), the same weights)
    attn = (linear(h, heads * d, attn_bias) + 2 * linear(h, kv * d, attn_bias) +
            linear(heads * d, h, attn_bias))
    if mt in ("qwen3", "qwen3_moe", "gemma3_text"):
        attn += 2 * d                       # q_norm, k_norm: RMSNorm(head_dim)
    if mt == "olmo2":
        attn += heads * d + kv * d          # RMSNorm(heads d), RMSNorm(kv d)

    if mt == "starcoder2":
        dense = linear(h, ffn, c["use_bias"]) + linear(ffn, h, c["use_bias"])  # c_fc, c_proj
        norm = 2 * h                        # nn.LayerNorm: weight and bias
    else:
        dense = 3 * h * ffn                 # gate_proj, up_proj, down_proj (phi3: gate_up_proj, down_proj)
        norm = h                            # RMSNorm weight
    norms_per_layer = {"gemma2": 4, "gemma3_text": 4, "olmo2": 2}.get(mt, 2)

    total = 0
    for layer in range(n_layers):
        total += attn + norms_per_layer * norm
        if mt == "qwen3_moe" and layer not in c["mlp_only_layers"] and c["num_experts"] > 0 and \
                (layer + 1) % c["decoder_sparse_step"] == 0:
            e, f = c["num_experts"], c["moe_intermediate_size"]
            total += h * e + e * 3 * h * f  # gate (router), experts' gate, up, down
        else:
            total += dense
    total += v * h                          # embed_tokens
    total += norm                           # model.norm
    if not c["tie_word_embeddings"]:
        total += v * h                      # lm_head
    return total


def text_config(cfg):
    """The language model's config: text_config of the multimodal files."""
    mt = cfg["model_type"]
    if mt in ("gemma3", "llama4"):
        return dict(cfg["text_config"], model_type=mt + "_text")
    return cfg


def idle_expert_weights(c):
    """The routed experts' weights a token does not pass through: per MoE
    layer E - k of the E experts (3 h f each, SwiGLU), with the layers that
    have experts as count() and count_mla() / count_llama4() place them."""
    mt = c["model_type"]
    if mt == "llama4_text":
        d = dict(LLAMA4_DEFAULTS)
        d.update({k: v for k, v in c.items() if v is not None})
        n_layers, step = d["num_hidden_layers"], d["interleave_moe_layer_step"]
        layers = len(d["moe_layers"] or range(step - 1, n_layers, step))
        e, k, f = d["num_local_experts"], d.get("num_experts_per_tok", 1), d["intermediate_size"]
        return layers * (e - k) * 3 * d["hidden_size"] * f
    if mt in ("deepseek_v2", "deepseek_v3"):
        v3 = mt == "deepseek_v3"
        e, k = c.get("n_routed_experts", 256 if v3 else 64), c.get("num_experts_per_tok", 8)
        f = c.get("moe_intermediate_size", 2048 if v3 else 1407)
        layers = c["num_hidden_layers"] - c.get("first_k_dense_replace", 3 if v3 else 0)
        return layers * (e - k) * 3 * c["hidden_size"] * f if e else 0
    if mt == "qwen3_moe":
        d = dict(DEFAULTS[mt])
        d.update({k: v for k, v in c.items() if v is not None})
        layers = sum(1 for i in range(d["num_hidden_layers"]) if i not in d["mlp_only_layers"]
                     and (i + 1) % d["decoder_sparse_step"] == 0)
        return layers * (d["num_experts"] - d["num_experts_per_tok"]) * 3 * d["hidden_size"] * \
            d["moe_intermediate_size"]
    return 0


FLOPS_SEQ = 1024
FLOPS_TOL = 0.005


def expected_flops(cfg, params, seq):
    """Forward and backward FLOPs of one sequence, counting the GEMMs only:
    2 per multiply-add of every weight matrix a token passes through (the
    parameters less the routed experts it skips, less the embedding table,
    which is a lookup, unless the head reuses it) and causal attention's two
    S x S GEMMs, halved by the mask: heads S^2 (d_qk + d_v) a layer (MLA
    under flash attention pads v to d_qk, docs/models.md). The backward is
    twice the weight GEMMs and 5/2 the attention ones (flash attention's
    backward runs 5 GEMMs to the forward's 2). Norms, activations and the
    router are left out: the remainder must be small."""
    c = text_config(cfg)
    mt = c["model_type"]
    d = dict(LLAMA4_DEFAULTS if mt == "llama4_text" else DEFAULTS.get(mt, {}))
    d.update({k: v for k, v in c.items() if v is not None})
    h = d.get("hidden_size", d.get("n_embed", 4544))
    v = d.get("vocab_size", 65024)
    n_layers = d.get("num_hidden_layers", d.get("n_layer", 32))
    heads = d.get("num_attention_heads", d.get("n_head", 71))
    tied = d.get("tie_word_embeddings", mt == "falcon")
    if mt in ("deepseek_v2", "deepseek_v3"):
        dqk = dv = d.get("qk_nope_head_dim", 128) + d.get("qk_rope_head_dim", 64)
    else:
        dqk = dv = d.get("head_dim", h // heads)
    weights = params - idle_expert_weights(c) - (0 if tied else v * h)
    attn = n_layers * heads * seq * seq * (dqk + dv)
    return 2 * seq * weights + attn, 4 * seq * weights + 2.5 * attn


def check_flops(approf, path, cfg, params):
    """approf's forward and backward FLOPs at FLOPS_SEQ against
    expected_flops, within FLOPS_TOL."""
    out = subprocess.run([approf, "model", "show", "--hf-config", path, "--format", "json",
                          "--seq-len", str(FLOPS_SEQ), "--batch", "1"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return "FAIL (flops: exit %d: %s)" % (out.returncode, out.stderr.strip())
    totals = json.loads(out.stdout)["totals"]
    fwd, bwd = expected_flops(cfg, params, FLOPS_SEQ)
    rf, rb = totals["fwd_flops"] / fwd, totals["bwd_flops"] / bwd
    if abs(rf - 1) > FLOPS_TOL or abs(rb - 1) > FLOPS_TOL:
        return "FAIL (flops: fwd %.4f, bwd %.4f of the GEMMs' count)" % (rf, rb)
    return "flops fwd %.4f bwd %.4f" % (rf, rb)


def main():
    approf, hf_dir = sys.argv[1], sys.argv[2]
    bad = 0
    for name, published, tol in CASES:
        path = hf_dir + "/" + name
        with open(path) as f:
            cfg = json.load(f)
        want = count(cfg)
        out = subprocess.run([approf, "model", "show", "--hf-config", path, "--layers", "1"],
                             capture_output=True, text=True)
        got = None
        for line in out.stdout.splitlines():
            if line.startswith("parameters: "):
                got = int(line.split()[1])
        status = "ok"
        if out.returncode != 0 or got != want:
            status = "FAIL (approf %s, exit %d: %s)" % (got, out.returncode, out.stderr.strip())
            bad += 1
        elif abs(want - published) > tol:
            status = "FAIL (published %.2fB)" % (published / 1e9)
            bad += 1
        else:
            status = check_flops(approf, path, cfg, want)
            bad += status.startswith("FAIL")
        print("%-30s %14d  published %.2fB  %s" % (name, want, published / 1e9, status))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
