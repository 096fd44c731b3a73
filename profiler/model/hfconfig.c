/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Hugging Face config.json reader (hfconfig.h): jansson reads the file,
 * each supported model_type names the fields its transformers config class
 * defines (with that class's defaults for the optional ones), and every
 * field is type-checked, so a wrong or missing one is reported by name
 * instead of building a different model. Fields that do not change the cost
 * (token ids, initializer range, epsilons, dropout rates) are ignored.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hfconfig_int.h"

#define MAX_SIZE HF_MAX_SIZE

#if HAVE_JANSSON

int hf_err(HfRd *r, const char *fmt, ...)
{
    if (r->err && r->errlen) {
        va_list ap;
        int n = snprintf(r->err, r->errlen, "%s: ", r->path);
        if (n >= 0 && (size_t)n < r->errlen) {
            va_start(ap, fmt);
            vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return APPROF_EPARSE;
}

/* An integer field in lo..hi; def < 0 makes it required. A JSON null
 * counts as absent (transformers writes "head_dim": null). */
int hf_get_int(HfRd *r, json_t *root, const char *key, int64_t lo, int64_t hi, int64_t def, int *out)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (def < 0)
            return hf_err(r, "field %s: missing", key);
        *out = (int)def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return hf_err(r, "field %s: expected an integer in %lld..%lld", key, (long long)lo, (long long)hi);
    *out = (int)json_integer_value(v);
    return 0;
}

int hf_get_bool(HfRd *r, json_t *root, const char *key, int def, int *out)
{
    json_t *v = json_object_get(root, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return hf_err(r, "field %s: expected true or false", key);
    *out = json_is_true(v);
    return 0;
}

int hf_get_num(HfRd *r, json_t *root, const char *key, double def, double *out)
{
    json_t *v = json_object_get(root, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v) || json_number_value(v) <= 0)
        return hf_err(r, "field %s: expected a positive number", key);
    *out = json_number_value(v);
    return 0;
}

/* A string field that, when present, must be one of the accepted values. */
int hf_check_str(HfRd *r, json_t *root, const char *key, const char *const *ok)
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return hf_err(r, "field %s: expected a string", key);
    for (int i = 0; ok[i]; i++)
        if (!strcmp(json_string_value(v), ok[i]))
            return 0;
    return hf_err(r, "field %s: '%s' is not supported (%s%s%s)", key, json_string_value(v), ok[0],
                ok[1] ? ", " : "", ok[1] ? ok[1] : "");
}

/* llama, mistral, mixtral, qwen2, deepseek: the decoder family. */
static int read_decoder(HfRd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const silu[] = {"silu", "swish", NULL};
    const char *mt = c->model_type;
    int bias = 0, window = 0;
    if (hf_get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        hf_get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        hf_get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        hf_get_int(r, root, "num_key_value_heads", 1, 65536, c->heads, &c->kv_heads) ||
        hf_get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        hf_get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        hf_get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, -1, &c->positions) ||
        hf_get_bool(r, root, "tie_word_embeddings", 0, &c->tied) ||
        hf_get_num(r, root, "rope_theta", 10000.0, &c->rope_theta) ||
        hf_check_str(r, root, "hidden_act", silu))
        return APPROF_EPARSE;
    if (c->hidden % c->heads)
        return hf_err(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    if (hf_get_int(r, root, "head_dim", 1, 65536, c->hidden / c->heads, &c->head_dim))
        return APPROF_EPARSE;
    if (c->head_dim % 2)
        return hf_err(r, "field head_dim: %d is odd; rotary position embeddings rotate pairs of "
                    "dimensions%s", c->head_dim, json_object_get(root, "head_dim") ? "" :
                    " (hidden_size / num_attention_heads when head_dim is absent)");
    if (c->heads % c->kv_heads)
        return hf_err(r, "field num_key_value_heads: %d does not divide num_attention_heads %d",
                    c->kv_heads, c->heads);
    {
        json_t *rs = json_object_get(root, "rope_scaling");
        if (rs && !json_is_null(rs) && !json_is_object(rs))
            return hf_err(r, "field rope_scaling: expected an object or null");
    }
    if (strcmp(mt, "qwen2")) {
        if (hf_get_bool(r, root, "attention_bias", 0, &bias))
            return APPROF_EPARSE;
        if (bias)
            return hf_err(r, "field attention_bias: true is not supported (biases on q, k, v and o)");
    }
    if (hf_get_bool(r, root, "mlp_bias", 0, &bias))
        return APPROF_EPARSE;
    if (bias)
        return hf_err(r, "field mlp_bias: true is not supported");
    c->qkv_bias = !strcmp(mt, "qwen2");
    if (!strcmp(mt, "mistral") || !strcmp(mt, "mixtral") || !strcmp(mt, "qwen2")) {
        int use = 1;
        if (!strcmp(mt, "qwen2") && hf_get_bool(r, root, "use_sliding_window", 0, &use))
            return APPROF_EPARSE;
        if (hf_get_int(r, root, "sliding_window", 1, MAX_SIZE, 0, &window))
            return APPROF_EPARSE;
        c->sliding_window = use ? window : 0;
    }
    if (!strcmp(mt, "mixtral")) {
        if (hf_get_int(r, root, "num_local_experts", 1, 65536, -1, &c->experts) ||
            hf_get_int(r, root, "num_experts_per_tok", 1, 65536, -1, &c->top_k))
            return APPROF_EPARSE;
        c->moe_ffn = c->ffn;
    } else if (!strcmp(mt, "deepseek")) {
        int shared = 0, freq = 1;
        if (hf_get_int(r, root, "n_routed_experts", 1, 65536, -1, &c->experts) ||
            hf_get_int(r, root, "num_experts_per_tok", 1, 65536, -1, &c->top_k) ||
            hf_get_int(r, root, "moe_intermediate_size", 1, MAX_SIZE, -1, &c->moe_ffn) ||
            hf_get_int(r, root, "n_shared_experts", 0, 65536, 0, &shared) ||
            hf_get_int(r, root, "first_k_dense_replace", 0, 100000, 0, &c->first_dense) ||
            hf_get_int(r, root, "moe_layer_freq", 1, 1, 1, &freq))
            return APPROF_EPARSE;
        /* in 64 bits: 257 x 2^24 wrapped to the FFN of one expert in an int */
        if ((int64_t)shared * c->moe_ffn > MAX_SIZE)
            return hf_err(r, "field n_shared_experts: %d shared experts of moe_intermediate_size %d make "
                        "an intermediate size of %lld, above %lld", shared, c->moe_ffn,
                        (long long)shared * c->moe_ffn, (long long)MAX_SIZE);
        c->shared_ffn = shared * c->moe_ffn;
        if (c->first_dense > c->layers)
            return hf_err(r, "field first_k_dense_replace: %d exceeds num_hidden_layers %d",
                        c->first_dense, c->layers);
    }
    if (c->experts && c->top_k > c->experts)
        return hf_err(r, "field num_experts_per_tok: %d exceeds the %d experts", c->top_k, c->experts);
    return 0;
}

/* The names an architectures list may hold for model_type mt: approf builds
 * the causal LM head, so "<Class>ForCausalLM" of that family. */
int hf_check_archs(HfRd *r, json_t *root, const char *cls)
{
    json_t *v = json_object_get(root, "architectures"), *a;
    size_t i;
    char want[48];
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return hf_err(r, "field architectures: expected a list of strings");
    snprintf(want, sizeof want, "%sForCausalLM", cls);
    json_array_foreach(v, i, a) {
        if (!json_is_string(a))
            return hf_err(r, "field architectures: expected a list of strings");
        if (strcmp(json_string_value(a), want))
            return hf_err(r, "field architectures: '%s' is not supported (%s: approf builds the "
                        "causal LM head)", json_string_value(a), want);
    }
    return 0;
}

/* rope_theta at the top level (older files) or in rope_parameters (newer
 * transformers); recorded only. */
int hf_get_rope(HfRd *r, json_t *root, double def, double *out)
{
    json_t *rp = json_object_get(root, "rope_parameters");
    if (hf_get_num(r, root, "rope_theta", def, out))
        return APPROF_EPARSE;
    if (rp && !json_is_null(rp)) {
        if (!json_is_object(rp))
            return hf_err(r, "field rope_parameters: expected an object or null");
        if (json_object_get(rp, "rope_theta") && hf_get_num(r, rp, "rope_theta", def, out))
            return hf_err(r, "field rope_parameters.rope_theta: expected a positive number");
    }
    rp = json_object_get(root, "rope_scaling");
    if (rp && !json_is_null(rp) && !json_is_object(rp))
        return hf_err(r, "field rope_scaling: expected an object or null");
    return 0;
}

static int read_gpt2(HfRd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu_new", "gelu", NULL};
    if (hf_get_int(r, root, "n_layer", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        hf_get_int(r, root, "n_embd", 1, MAX_SIZE, -1, &c->hidden) ||
        hf_get_int(r, root, "n_head", 1, 65536, -1, &c->heads) ||
        hf_get_int(r, root, "n_positions", 1, MAX_SIZE, -1, &c->positions) ||
        hf_get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        hf_get_bool(r, root, "tie_word_embeddings", 1, &c->tied) ||
        hf_check_str(r, root, "activation_function", gelu))
        return APPROF_EPARSE;
    if (c->hidden % c->heads)
        return hf_err(r, "field n_head: %d does not divide n_embd %d", c->heads, c->hidden);
    if (hf_get_int(r, root, "n_inner", 1, MAX_SIZE, 4 * (int64_t)c->hidden, &c->ffn))
        return APPROF_EPARSE;
    c->kv_heads = c->heads;
    c->head_dim = c->hidden / c->heads;
    return 0;
}

static int read_bert(HfRd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu", "gelu_new", NULL};
    static const char *const abs[] = {"absolute", NULL};
    if (hf_get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        hf_get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        hf_get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        hf_get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        hf_get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        hf_get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, -1, &c->positions) ||
        hf_get_int(r, root, "type_vocab_size", 1, MAX_SIZE, 2, &c->type_vocab) ||
        hf_get_bool(r, root, "tie_word_embeddings", 1, &c->tied) ||
        hf_check_str(r, root, "hidden_act", gelu) ||
        hf_check_str(r, root, "position_embedding_type", abs))
        return APPROF_EPARSE;
    if (c->hidden % c->heads)
        return hf_err(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    c->kv_heads = c->heads;
    c->head_dim = c->hidden / c->heads;
    return 0;
}

static const struct {
    const char *model_type, *zoo;
    int (*read)(HfRd *r, json_t *root, ApprofHfConfig *c);
} families[] = {
    {"llama", "llama", read_decoder},
    {"mistral", "mistral", read_decoder},
    {"mixtral", "mixtral", read_decoder},
    {"qwen2", "qwen2", read_decoder},
    {"deepseek", "deepseek_moe", read_decoder},
    /* the families below have zoo names of their own (presets in
     * zoo_presets.c); before they were built under llama, qwen2, mixtral
     * and deepseek_moe (docs/models.md, "Graph names") */
    {"deepseek_v2", "deepseek", hf_read_mla},
    {"deepseek_v3", "deepseek", hf_read_mla},
    {"qwen3", "qwen3", hf_read_variant},
    {"qwen3_moe", "qwen3_moe", hf_read_variant},
    {"gemma", "gemma", hf_read_variant},
    {"gemma2", "gemma2", hf_read_variant},
    {"phi3", "phi3", hf_read_variant},
    {"olmo2", "olmo2", hf_read_variant},
    {"starcoder2", "starcoder2", hf_read_variant},
    {"gemma3_text", "gemma3", hf_read_variant},
    {"gpt_neox", "gpt_neox", hf_read_neox},
    {"falcon", "falcon", hf_read_falcon},
    {"llama4_text", "llama4", hf_read_llama4},
    {"gpt2", "gpt", read_gpt2},
    {"bert", "bert", read_bert},
};

/* The multimodal models whose language model approf builds: their
 * text_config is a config of text_type (transformers' Gemma3Config and
 * Llama4Config hold a Gemma3TextConfig and a Llama4TextConfig), and their
 * vision encoder and projector are not built. */
static const struct {
    const char *model_type, *text_type, *cls;
} wrappers[] = {
    {"gemma3", "gemma3_text", "Gemma3ForConditionalGeneration"},
    {"llama4", "llama4_text", "Llama4ForConditionalGeneration"},
};

/* The model of a parsed config.json: its model_type's family reads the
 * fields; a multimodal wrapper's text_config instead, with a note. */
static int read_root(HfRd *r, json_t *root, ApprofHfConfig *out)
{
    json_t *mt;
    const char *type;
    char tpath[4200];
    HfRd tr;
    if (!json_is_object(root))
        return hf_err(r, "expected a JSON object");
    mt = json_object_get(root, "model_type");
    if (!mt)
        return hf_err(r, "field model_type: missing");
    if (!json_is_string(mt))
        return hf_err(r, "field model_type: expected a string");
    type = json_string_value(mt);
    for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++) {
        json_t *tc = json_object_get(root, "text_config"), *archs = json_object_get(root, "architectures");
        json_t *a, *tm;
        size_t k;
        size_t n;
        if (strcmp(type, wrappers[i].model_type))
            continue;
        if (archs && !json_is_null(archs)) {
            if (!json_is_array(archs))
                return hf_err(r, "field architectures: expected a list of strings");
            json_array_foreach(archs, k, a)
                if (!json_is_string(a) || strcmp(json_string_value(a), wrappers[i].cls))
                    return hf_err(r, "field architectures: '%s' is not supported (%s)",
                                  json_is_string(a) ? json_string_value(a) : "?", wrappers[i].cls);
        }
        if (!json_is_object(tc))
            return hf_err(r, "field text_config: expected an object (the %s config of %s's "
                          "language model)", wrappers[i].text_type, wrappers[i].cls);
        tm = json_object_get(tc, "model_type");
        if (tm && (!json_is_string(tm) || strcmp(json_string_value(tm), wrappers[i].text_type)))
            return hf_err(r, "field text_config.model_type: expected '%s'", wrappers[i].text_type);
        snprintf(tpath, sizeof tpath, "%s, text_config", r->path);
        tr = *r;
        tr.path = tpath;
        r = &tr;
        root = tc;
        type = wrappers[i].text_type;
        n = strlen(out->note);
        snprintf(out->note + n, sizeof out->note - n, "%s%s: model_type %s: the language model "
                 "(text_config) with its LM head; the vision encoder and the multi-modal "
                 "projector are not built", n ? "; " : "", wrappers[i].cls, wrappers[i].model_type);
        break;
    }
    snprintf(out->model_type, sizeof out->model_type, "%s", type);
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (!strcmp(families[i].model_type, type)) {
            out->zoo_name = families[i].zoo;
            out->type_vocab = 2;
            return families[i].read(r, root, out);
        }
    return hf_err(r, "field model_type: unsupported '%s' (llama, mistral, mixtral, qwen2, "
                  "qwen3, qwen3_moe, gemma, gemma2, gemma3, gemma3_text, phi3, olmo2, starcoder2, "
                  "gpt_neox, falcon, deepseek, deepseek_v2, deepseek_v3, llama4, llama4_text, gpt2, "
                  "bert)", type);
}

/* A snapshot's checkpoint index: metadata.total_size (bytes of every
 * tensor in the checkpoint's dtype), 0 when the file is absent or has
 * none; a malformed one is an error naming it. */
static int read_index(const char *dir, ApprofHfConfig *out, char *err, size_t errlen)
{
    char p[4096];
    json_error_t je;
    json_t *root, *ts;
    FILE *f;
    if (snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir) >= (int)sizeof p)
        return 0;
    if (!(f = fopen(p, "rb")))
        return 0;
    root = json_loadf(f, 0, &je);
    fclose(f);
    if (!root) {
        snprintf(err, errlen, "%s: line %d, column %d: %s", p, je.line, je.column, je.text);
        return APPROF_EPARSE;
    }
    ts = json_object_get(json_object_get(root, "metadata"), "total_size");
    if (ts && (!json_is_integer(ts) || json_integer_value(ts) <= 0)) {
        snprintf(err, errlen, "%s: field metadata.total_size: expected a positive integer", p);
        json_decref(root);
        return APPROF_EPARSE;
    }
    out->checkpoint_bytes = ts ? (int64_t)json_integer_value(ts) : 0;
    json_decref(root);
    return 0;
}

int approf_hf_config_load(const char *path, ApprofHfConfig *out, char *err, size_t errlen)
{
    char cfgpath[4096];
    HfRd r = {path ? path : "config.json", err, errlen};
    json_error_t je;
    json_t *root, *td;
    int rc = APPROF_EPARSE;
    struct stat sb;
    FILE *f;

    if (err && errlen)
        err[0] = '\0';
    if (!path || !out)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    /* A snapshot directory (what huggingface_hub downloads): its
     * config.json, and the checkpoint index beside it. */
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (snprintf(cfgpath, sizeof cfgpath, "%s/config.json", path) >= (int)sizeof cfgpath) {
            if (err && errlen)
                snprintf(err, errlen, "%s: path too long", path);
            return APPROF_EINVAL;
        }
        if ((rc = read_index(path, out, err, errlen)) < 0)
            return rc;
        rc = APPROF_EPARSE;
        path = cfgpath;
        r.path = cfgpath;
    }
    f = fopen(path, "rb");
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return APPROF_EIO;
    }
    root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    if (!root && strstr(je.text, "duplicate")) {
        /* transformers reads config.json with Python's json: the last of
         * a duplicated key wins; so does jansson without the flag */
        snprintf(out->note, sizeof out->note, "%.120s: line %d: %.100s; its last value is used, "
                 "as transformers does", path, je.line, je.text);
        rewind(f);
        root = json_loadf(f, 0, &je);
    }
    fclose(f);
    if (!root)
        return hf_err(&r, "line %d, column %d: %s", je.line, je.column, je.text);
    td = json_object_get(root, "torch_dtype");
    if (json_is_string(td)) {
        const char *t = json_string_value(td);
        out->checkpoint_elem_size = !strcmp(t, "float32") ? 4
                                    : !strcmp(t, "bfloat16") || !strcmp(t, "float16") ? 2 : 0;
    }
    rc = read_root(&r, root, out);
    json_decref(root);
    return rc;
}

int approf_hf_config_parse(const char *name, const char *text, ApprofHfConfig *out, char *err,
                           size_t errlen)
{
    HfRd r = {name ? name : "config", err, errlen};
    json_error_t je;
    json_t *root;
    int rc;
    if (err && errlen)
        err[0] = '\0';
    if (!text || !out)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return hf_err(&r, "line %d, column %d: %s", je.line, je.column, je.text);
    rc = read_root(&r, root, out);
    json_decref(root);
    return rc;
}

#else /* !HAVE_JANSSON */

int approf_hf_config_load(const char *path, ApprofHfConfig *out, char *err, size_t errlen)
{
    (void)out;
    if (err && errlen)
        snprintf(err, errlen, "%s: Hugging Face configs need jansson, which this build lacks",
                 path ? path : "config.json");
    return APPROF_EUNSUPPORTED;
}

int approf_hf_config_parse(const char *name, const char *text, ApprofHfConfig *out, char *err,
                           size_t errlen)
{
    (void)text;
    (void)out;
    if (err && errlen)
        snprintf(err, errlen, "%s: Hugging Face configs need jansson, which this build lacks",
                 name ? name : "config");
    return APPROF_EUNSUPPORTED;
}

#endif

int approf_zoo_build_hf(const char *path, const ApprofZooOptions *opt, ApprofGraph **out,
                        char *err, size_t errlen)
{
    ApprofHfConfig c;
    ApprofZooOptions o;
    int rc = approf_hf_config_load(path, &c, err, errlen);
    if (rc < 0)
        return rc;
    if (opt)
        o = *opt;
    else
        memset(&o, 0, sizeof o);
    o.preset = NULL;
    o.hf_config = path;
    return approf_zoo_build(c.zoo_name, &o, out, err, errlen);
}
