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

#include "config.h"
#include "hfconfig.h"

#define MAX_SIZE ((int64_t)1 << 24)

#if HAVE_JANSSON
#include <jansson.h>

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
} Rd;

static int rerr(Rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int rerr(Rd *r, const char *fmt, ...)
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
static int get_int(Rd *r, json_t *root, const char *key, int64_t lo, int64_t hi, int64_t def, int *out)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (def < 0)
            return rerr(r, "field %s: missing", key);
        *out = (int)def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return rerr(r, "field %s: expected an integer in %lld..%lld", key, (long long)lo, (long long)hi);
    *out = (int)json_integer_value(v);
    return 0;
}

static int get_bool(Rd *r, json_t *root, const char *key, int def, int *out)
{
    json_t *v = json_object_get(root, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return rerr(r, "field %s: expected true or false", key);
    *out = json_is_true(v);
    return 0;
}

static int get_num(Rd *r, json_t *root, const char *key, double def, double *out)
{
    json_t *v = json_object_get(root, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v) || json_number_value(v) <= 0)
        return rerr(r, "field %s: expected a positive number", key);
    *out = json_number_value(v);
    return 0;
}

/* A string field that, when present, must be one of the accepted values. */
static int check_str(Rd *r, json_t *root, const char *key, const char *const *ok)
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return rerr(r, "field %s: expected a string", key);
    for (int i = 0; ok[i]; i++)
        if (!strcmp(json_string_value(v), ok[i]))
            return 0;
    return rerr(r, "field %s: '%s' is not supported (%s%s%s)", key, json_string_value(v), ok[0],
                ok[1] ? ", " : "", ok[1] ? ok[1] : "");
}

/* llama, mistral, mixtral, qwen2, deepseek: the decoder family. */
static int read_decoder(Rd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const silu[] = {"silu", "swish", NULL};
    const char *mt = c->model_type;
    int bias = 0, window = 0;
    if (get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        get_int(r, root, "num_key_value_heads", 1, 65536, c->heads, &c->kv_heads) ||
        get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, -1, &c->positions) ||
        get_bool(r, root, "tie_word_embeddings", 0, &c->tied) ||
        get_num(r, root, "rope_theta", 10000.0, &c->rope_theta) ||
        check_str(r, root, "hidden_act", silu))
        return APPROF_EPARSE;
    if (c->hidden % c->heads)
        return rerr(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    if (get_int(r, root, "head_dim", 1, 65536, c->hidden / c->heads, &c->head_dim))
        return APPROF_EPARSE;
    if (c->head_dim % 2)
        return rerr(r, "field head_dim: %d is odd; rotary position embeddings rotate pairs of "
                    "dimensions%s", c->head_dim, json_object_get(root, "head_dim") ? "" :
                    " (hidden_size / num_attention_heads when head_dim is absent)");
    if (c->heads % c->kv_heads)
        return rerr(r, "field num_key_value_heads: %d does not divide num_attention_heads %d",
                    c->kv_heads, c->heads);
    {
        json_t *rs = json_object_get(root, "rope_scaling");
        if (rs && !json_is_null(rs) && !json_is_object(rs))
            return rerr(r, "field rope_scaling: expected an object or null");
    }
    if (strcmp(mt, "qwen2")) {
        if (get_bool(r, root, "attention_bias", 0, &bias))
            return APPROF_EPARSE;
        if (bias)
            return rerr(r, "field attention_bias: true is not supported (biases on q, k, v and o)");
    }
    if (get_bool(r, root, "mlp_bias", 0, &bias))
        return APPROF_EPARSE;
    if (bias)
        return rerr(r, "field mlp_bias: true is not supported");
    c->qkv_bias = !strcmp(mt, "qwen2");
    if (!strcmp(mt, "mistral") || !strcmp(mt, "mixtral") || !strcmp(mt, "qwen2")) {
        int use = 1;
        if (!strcmp(mt, "qwen2") && get_bool(r, root, "use_sliding_window", 0, &use))
            return APPROF_EPARSE;
        if (get_int(r, root, "sliding_window", 1, MAX_SIZE, 0, &window))
            return APPROF_EPARSE;
        c->sliding_window = use ? window : 0;
    }
    if (!strcmp(mt, "mixtral")) {
        if (get_int(r, root, "num_local_experts", 1, 65536, -1, &c->experts) ||
            get_int(r, root, "num_experts_per_tok", 1, 65536, -1, &c->top_k))
            return APPROF_EPARSE;
        c->moe_ffn = c->ffn;
    } else if (!strcmp(mt, "deepseek")) {
        int shared = 0, freq = 1;
        if (get_int(r, root, "n_routed_experts", 1, 65536, -1, &c->experts) ||
            get_int(r, root, "num_experts_per_tok", 1, 65536, -1, &c->top_k) ||
            get_int(r, root, "moe_intermediate_size", 1, MAX_SIZE, -1, &c->moe_ffn) ||
            get_int(r, root, "n_shared_experts", 0, 65536, 0, &shared) ||
            get_int(r, root, "first_k_dense_replace", 0, 100000, 0, &c->first_dense) ||
            get_int(r, root, "moe_layer_freq", 1, 1, 1, &freq))
            return APPROF_EPARSE;
        /* in 64 bits: 257 x 2^24 wrapped to the FFN of one expert in an int */
        if ((int64_t)shared * c->moe_ffn > MAX_SIZE)
            return rerr(r, "field n_shared_experts: %d shared experts of moe_intermediate_size %d make "
                        "an intermediate size of %lld, above %lld", shared, c->moe_ffn,
                        (long long)shared * c->moe_ffn, (long long)MAX_SIZE);
        c->shared_ffn = shared * c->moe_ffn;
        if (c->first_dense > c->layers)
            return rerr(r, "field first_k_dense_replace: %d exceeds num_hidden_layers %d",
                        c->first_dense, c->layers);
    }
    if (c->experts && c->top_k > c->experts)
        return rerr(r, "field num_experts_per_tok: %d exceeds the %d experts", c->top_k, c->experts);
    return 0;
}

static int read_gpt2(Rd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu_new", "gelu", NULL};
    if (get_int(r, root, "n_layer", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        get_int(r, root, "n_embd", 1, MAX_SIZE, -1, &c->hidden) ||
        get_int(r, root, "n_head", 1, 65536, -1, &c->heads) ||
        get_int(r, root, "n_positions", 1, MAX_SIZE, -1, &c->positions) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        get_bool(r, root, "tie_word_embeddings", 1, &c->tied) ||
        check_str(r, root, "activation_function", gelu))
        return APPROF_EPARSE;
    if (c->hidden % c->heads)
        return rerr(r, "field n_head: %d does not divide n_embd %d", c->heads, c->hidden);
    if (get_int(r, root, "n_inner", 1, MAX_SIZE, 4 * (int64_t)c->hidden, &c->ffn))
        return APPROF_EPARSE;
    c->kv_heads = c->heads;
    c->head_dim = c->hidden / c->heads;
    return 0;
}

static int read_bert(Rd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu", "gelu_new", NULL};
    static const char *const abs[] = {"absolute", NULL};
    if (get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, -1, &c->positions) ||
        get_int(r, root, "type_vocab_size", 1, MAX_SIZE, 2, &c->type_vocab) ||
        get_bool(r, root, "tie_word_embeddings", 1, &c->tied) ||
        check_str(r, root, "hidden_act", gelu) ||
        check_str(r, root, "position_embedding_type", abs))
        return APPROF_EPARSE;
    if (c->hidden % c->heads)
        return rerr(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    c->kv_heads = c->heads;
    c->head_dim = c->hidden / c->heads;
    return 0;
}

static const struct {
    const char *model_type, *zoo;
    int (*read)(Rd *r, json_t *root, ApprofHfConfig *c);
} families[] = {
    {"llama", "llama", read_decoder},
    {"mistral", "mistral", read_decoder},
    {"mixtral", "mixtral", read_decoder},
    {"qwen2", "qwen2", read_decoder},
    {"deepseek", "deepseek_moe", read_decoder},
    {"gpt2", "gpt", read_gpt2},
    {"bert", "bert", read_bert},
};

int approf_hf_config_load(const char *path, ApprofHfConfig *out, char *err, size_t errlen)
{
    Rd r = {path ? path : "config.json", err, errlen};
    json_error_t je;
    json_t *root, *mt;
    int rc = APPROF_EPARSE;
    FILE *f;

    if (err && errlen)
        err[0] = '\0';
    if (!path || !out)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    f = fopen(path, "rb");
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return APPROF_EIO;
    }
    root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root)
        return rerr(&r, "line %d, column %d: %s", je.line, je.column, je.text);
    if (!json_is_object(root)) {
        rerr(&r, "expected a JSON object");
        goto cleanup;
    }
    mt = json_object_get(root, "model_type");
    if (!mt) {
        rerr(&r, "field model_type: missing");
        goto cleanup;
    }
    if (!json_is_string(mt)) {
        rerr(&r, "field model_type: expected a string");
        goto cleanup;
    }
    snprintf(out->model_type, sizeof out->model_type, "%s", json_string_value(mt));
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (!strcmp(families[i].model_type, json_string_value(mt))) {
            out->zoo_name = families[i].zoo;
            out->type_vocab = 2;
            rc = families[i].read(&r, root, out);
            goto cleanup;
        }
    rerr(&r, "field model_type: unsupported '%s' (llama, mistral, mixtral, qwen2, deepseek, gpt2, bert)",
         json_string_value(mt));
cleanup:
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
