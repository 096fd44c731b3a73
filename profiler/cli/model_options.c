/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model options every approf command that builds a model takes
 * (approf model show|export, approf sweep): one descriptor per option, the
 * one parser that checks a value against its descriptor and stores it, and
 * the help text both commands print. A bad value is reported by
 * cli_bad_value (common.c), the one message of a bad option value.
 */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "apsolve.h"
#include "cli.h"
#include "model/onnx.h"

typedef enum {
    ARG_FLAG,     /* no value: the int is set to 1 */
    ARG_STRING,   /* the value itself (a name or a path, checked by its reader) */
    ARG_INT,      /* an int in [lo, hi] */
    ARG_DOUBLE,   /* a double in [dlo, dhi] */
    ARG_CHOICE,   /* one of choices: its canonical name is stored */
    ARG_DTYPE,    /* f32|f16|bf16 (and approf_dtype_parse's spellings) */
    ARG_ONNX_DIM, /* NAME=N, repeatable: kept by the ONNX reader (approf_onnx_bind) */
} ArgKind;

typedef struct {
    const char *name;       /* long name, without "--" */
    const char *alias;      /* an older spelling also taken (help: "also --ALIAS"), or NULL */
    ArgKind kind;
    size_t offset;          /* of the value in CliModelArgs */
    int64_t lo, hi;         /* ARG_INT */
    double dlo, dhi;        /* ARG_DOUBLE */
    const char *what;       /* ARG_DOUBLE: the range in words, for messages */
    const CliChoice *choices; /* ARG_CHOICE */
    int model_only;         /* a sweep cannot carry it (ApprofSweepConfig has no field) */
    const char *metavar;    /* help: the value's name */
    const char *help;       /* help text; '\n' starts an indented line */
    int section;            /* 0: model, 1: layers */
} ModelOpt;

#define AT(f) offsetof(CliModelArgs, f)
#define ZOO(f) (offsetof(CliModelArgs, zoo) + offsetof(ApprofZooOptions, f))
/* the sizes: what the zoo checks against each model; the limit here keeps
 * an int and the graph's arithmetic in range */
#define SIZE_MAX_ARG (1 << 24)

static const CliChoice attention_choices[] = {{"flash", 0}, {"eager", 1}, {NULL, 0}};

static const ModelOpt model_opts[] = {
    {"model", NULL, ARG_STRING, AT(name), 0, 0, 0, 0, NULL, NULL, 0, "NAME",
     "zoo model (approf models); approf model also takes it as NAME; "
     "approf sweep's default: " APPROF_DEFAULT_MODEL, 0},
    {"model-file", NULL, ARG_STRING, AT(model_file), 0, 0, 0, 0, NULL, NULL, 0, "FILE",
     "a model file (schemas/model-format.md, or ONNX)", 0},
    {"hf-config", NULL, ARG_STRING, AT(hf_config), 0, 0, 0, 0, NULL, NULL, 0, "FILE",
     "the model of a Hugging Face config.json or snapshot directory (llama, mistral, "
     "mixtral, qwen2, qwen3, qwen3_moe, gemma, gemma2, gemma3(_text), phi3, olmo2, starcoder2, "
     "gpt_neox, falcon, deepseek, deepseek_v2, deepseek_v3, llama4(_text), gpt2, bert; "
     "docs/models.md) instead of a "
     "name and --preset", 0},
    {"preset", NULL, ARG_STRING, ZOO(preset), 0, 0, 0, 0, NULL, NULL, 0, "P",
     "gpt: gpt2-small, gpt3-1.3b, gpt3-2.7b, gpt3-6.7b, gpt3-39b; bert: base, large; "
     "llama: llama-3-8b, llama-2-7b, llama-3-70b, llama-3.1-405b; mistral: mistral-7b; "
     "mixtral: mixtral-8x7b; qwen2: qwen2.5-7b; deepseek_moe: deepseek-moe-16b; the Hugging "
     "Face families (qwen3: qwen3-8b, ...; deepseek: deepseek-v3, ...): 'approf models'", 0},
    {"dataset", NULL, ARG_STRING, ZOO(dataset), 0, 0, 0, 0, NULL, NULL, 0, "D",
     "resnet50: imagenet, cifar10; wide_resnet: cifar10, imagenet; "
     "swin: imagenet, cifar100", 0},
    {"attention", NULL, ARG_CHOICE, ZOO(attention), 0, 0, 0, 0, NULL, attention_choices, 0,
     "flash|eager",
     "gpt, bert and llama families: one fused (flash) attention operator that "
     "keeps no S x S scores, or the eager matmul/softmax chain (default: eager "
     "for gpt and bert, flash for llama)", 0},
    {"activation-fusion", NULL, ARG_FLAG, ZOO(activation_fusion), 0, 0, 0, 0, NULL, NULL, 0,
     NULL,
     "llama family: the gated MLP's SiLU (GeGLU's GELU) as Megatron-Core's fused "
     "SwiGLU (bias_activation_fusion): only gate and up kept, the activation rerun in "
     "the backward (default: eager PyTorch's, its output kept too; docs/models.md)", 0},
    {"eager-elementwise", NULL, ARG_FLAG, ZOO(eager_elementwise), 0, 0, 0, 0, NULL, NULL, 0,
     NULL,
     "llama family: RMSNorm, the rotary embedding and the K/V repeat of grouped-query "
     "attention as torchtitan's eager modules run them (f32 upcasts, a kernel an "
     "operation; forward only) (default: fused kernels; docs/models.md)", 0},
    {"attention-unpad", NULL, ARG_FLAG, ZOO(attention_unpad), 0, 0, 0, 0, NULL, NULL, 0,
     NULL,
     "gpt, bert with --attention flash: the fused kernel called through flash-attn's "
     "unpad_input/pad_input copies, as llm-foundry's MPT runs it (default: on the padded "
     "tensors; docs/models.md)", 0},
    {"capacity-factor", NULL, ARG_DOUBLE, ZOO(capacity_factor), 0, 0, 0.01, 64,
     "a number in 0.01..64", NULL, 1, "C",
     "mixture of experts: expert slots = C x tokens x top_k / experts (1)", 0},
    {"mlm-positions", NULL, ARG_INT, ZOO(mlm_positions), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 0,
     "P",
     "bert: the masked-LM head scores P positions per sequence (the masked "
     "ones; NVIDIA's BERT pre-training: 20 at seq 128, 80 at 512), not all of "
     "them (default: all)", 0},
    {"dropout", NULL, ARG_DOUBLE, ZOO(dropout), 0, 0, 0, 0.99, "a probability in 0..0.99", NULL,
     0, "P",
     "bert: its four dropouts at rate P (BERT trains with 0.1); gpt: after the "
     "embeddings, on the attention probabilities, the attention output and the "
     "MLP output (Megatron-LM's default 0.1) (default 0: none)", 0},
    {"dtype", NULL, ARG_DTYPE, AT(dtype), 0, 0, 0, 0, NULL, NULL, 0, "f32|f16|bf16",
     "compute dtype; f16/bf16 train in mixed precision (f32 master weights "
     "and Adam state). Default: the language transformers (gpt, bert, the "
     "llama family, the MoE models, --hf-config) bf16 (a sweep: where the GPU "
     "has bf16 tensor cores, f16 on V100-class GPUs, else f32); others f32", 0},
    {"num-layers", NULL, ARG_INT, ZOO(num_layers), 1, APPROF_ZOO_MAX_LAYERS, 0, 0, NULL, NULL, 0,
     "N", "transformer blocks; mlp: dense layers", 0},
    {"hidden", NULL, ARG_INT, ZOO(hidden), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 0, "N",
     "transformer and mlp width", 0},
    {"heads", NULL, ARG_INT, ZOO(heads), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 0, "N",
     "attention heads", 0},
    {"seq-len", NULL, ARG_INT, ZOO(seq_len), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 0, "N",
     "sequence length", 0},
    {"dim", NULL, ARG_ONNX_DIM, 0, 0, 0, 0, 0, NULL, NULL, 0, "NAME=N",
     "--model-file of an ONNX graph: its symbolic dimension NAME (dim_param) "
     "is N (0: empty, a past key/value cache); repeatable. The batch's name takes --batch, the sequence names "
     "(seq, seq_len, sequence_length, ...) also --seq-len (docs/models.md)", 0},
    {"vocab", NULL, ARG_INT, ZOO(vocab), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 0, "N",
     "vocabulary size", 0},
    {"depth", NULL, ARG_INT, ZOO(depth), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 0, "N",
     "wide_resnet: 18, 34, 50, 101, 152 or 200", 0},
    {"width", "width-factor", ARG_INT, ZOO(width_factor), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 0,
     "W", "wide_resnet: the bottleneck width factor", 0},
    {"num-filters", NULL, ARG_INT, ZOO(num_filters), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 1, "F",
     "wide_resnet: base channels", 0},
    {"image-size", NULL, ARG_INT, ZOO(image_size), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 1, "N",
     "overrides the dataset's image size", 0},
    {"num-classes", NULL, ARG_INT, ZOO(num_classes), 1, SIZE_MAX_ARG, 0, 0, NULL, NULL, 1, "N",
     "overrides the dataset's classes", 0},
    {"manual-boundaries", "manual-boundary", ARG_FLAG, ZOO(manual_boundaries), 0, 0, 0, 0, NULL,
     NULL, 0, NULL,
     "boundary markers (mlp: after the middle layer; transformers and swin: "
     "after every block)", 0},
    {"layers", NULL, ARG_INT, AT(layers), 1, APSOLVE_MAX_LAYERS, 0, 0, NULL, NULL, 0, "L",
     "automatic layer construction into L layers", 1},
    {"eps", NULL, ARG_DOUBLE, AT(eps), 0, 0, 0, 1e6, "a number in 0..1000000", NULL, 0, "E",
     "layer FLOP imbalance allowance (default " CLI_STR(APPROF_DEFAULT_EPS) ")", 1},
    {"manual-layers", "manual", ARG_FLAG, AT(manual_layers), 0, 0, 0, 0, NULL, NULL, 0, NULL,
     "layers from the model's boundary markers", 1},
};

#define N_OPTS (sizeof model_opts / sizeof model_opts[0])

/* --dim was given: it applies to --model-file only */
static int onnx_dims_given;

void cli_model_args_init(CliModelArgs *m)
{
    memset(m, 0, sizeof *m);
    m->eps = APPROF_DEFAULT_EPS;
}

int cli_model_longopts(struct option *out, int cap)
{
    int n = 0;
    for (size_t i = 0; i < N_OPTS; i++) {
        const ModelOpt *o = &model_opts[i];
        int has_arg = o->kind == ARG_FLAG ? no_argument : required_argument;
        for (int k = 0; k < 2; k++) {
            const char *name = k ? o->alias : o->name;
            if (!name)
                continue;
            if (n >= cap)
                return -1;
            out[n++] = (struct option){name, has_arg, NULL, CLI_MODEL_OPT_BASE + (int)i};
        }
    }
    return n;
}

int cli_model_option(const char *cmd, int code, const char *value, const char *spelled,
                     CliModelArgs *m)
{
    const ModelOpt *o;
    char *field, names[128];
    int64_t v;
    int k;
    if (code < CLI_MODEL_OPT_BASE || code >= CLI_MODEL_OPT_BASE + (int)N_OPTS)
        return CLI_MODEL_NOT_MINE;
    o = &model_opts[code - CLI_MODEL_OPT_BASE];
    field = (char *)m + o->offset;
    if (!spelled)
        spelled = o->name;
    switch (o->kind) {
    case ARG_FLAG:
        *(int *)field = 1;
        break;
    case ARG_STRING:
        *(const char **)field = value;
        break;
    case ARG_INT:
        if (cli_parse_int(value, o->lo, o->hi, &v) < 0)
            return cli_bad_value(cmd, spelled, value, "an integer in %lld..%lld",
                                 (long long)o->lo, (long long)o->hi);
        *(int *)field = (int)v;
        break;
    case ARG_DOUBLE:
        if (cli_parse_double(value, o->dlo, o->dhi, (double *)field) < 0)
            return cli_bad_value(cmd, spelled, value, "%s", o->what);
        break;
    case ARG_CHOICE:
        if (cli_parse_choice(value, o->choices, &k) < 0)
            return cli_bad_value(cmd, spelled, value, "one of %s",
                                 cli_choice_names(o->choices, names, sizeof names));
        for (const CliChoice *c = o->choices; c->name; c++)
            if (c->value == k) {
                *(const char **)field = c->name;
                break;
            }
        break;
    case ARG_DTYPE:
        if (approf_dtype_parse(value, &m->dtype) < 0)
            return cli_bad_value(cmd, spelled, value, "one of f32|f16|bf16");
        m->dtype_set = 1;
        m->zoo.dtype = approf_dtype_name(m->dtype);
        break;
    case ARG_ONNX_DIM: {
        char why[128];
        if (approf_onnx_bind(value, why, sizeof why) < 0)
            return cli_bad_value(cmd, spelled, value, "%s", why);
        onnx_dims_given = 1;
        break;
    }
    }
    if (o->model_only && !m->model_only)
        m->model_only = o->name;
    return 0;
}

int cli_model_check_source(const char *cmd, const CliModelArgs *m)
{
    if ((m->name != NULL) + (m->model_file != NULL) + (m->hf_config != NULL) > 1)
        return cli_usage_error(cmd, "give one of a model name (--model), --model-file and "
                               "--hf-config");
    if (m->hf_config && m->zoo.preset)
        return cli_usage_error(cmd, "--preset and --hf-config both choose the sizes: give one");
    if (m->model_file) {
        const ApprofZooOptions *z = &m->zoo;
        /* the choices that only a zoo model has */
        const char *opt = z->preset ? "preset" : z->dataset ? "dataset"
                          : z->attention ? "attention" : z->mlm_positions ? "mlm-positions"
                          : z->dropout != 0 ? "dropout"
                          : z->activation_fusion ? "activation-fusion"
                          : z->eager_elementwise ? "eager-elementwise"
                          : z->attention_unpad ? "attention-unpad" : NULL;
        if (opt)
            return cli_usage_error(cmd, "--%s does not apply to --model-file", opt);
        /* an ONNX graph's sequence dimension: approf_model_load carries no options */
        approf_onnx_set_seq_len(z->seq_len);
    } else if (onnx_dims_given) {
        return cli_usage_error(cmd, "--dim applies to --model-file (an ONNX graph's symbolic dimensions)");
    }
    return 0;
}

/* One help entry: "  --NAME METAVAR", then text from the text column
 * on, its words wrapped before column 80 (a '\n' in text breaks too). */
static void help_line(FILE *f, const char *opt, const char *text)
{
    enum { COLUMN = 27, WIDTH = 79 };
    int w = fprintf(f, "  %s", opt);
    const char *p = text;
    if (w >= COLUMN) {
        fputc('\n', f);
        w = 0;
    }
    fprintf(f, "%*s", COLUMN - w, "");
    w = COLUMN;
    while (*p) {
        size_t len = strcspn(p, " \n");
        if (w > COLUMN && w + 1 + (int)len > WIDTH) {
            fprintf(f, "\n%*s", COLUMN, "");
            w = COLUMN;
        } else if (w > COLUMN) {
            fputc(' ', f);
            w++;
        }
        fprintf(f, "%.*s", (int)len, p);
        w += (int)len;
        p += len;
        if (*p == '\n') {
            fprintf(f, "\n%*s", COLUMN, "");
            w = COLUMN;
        }
        p += strspn(p, " \n");
    }
    fputc('\n', f);
}

void cli_model_help(FILE *f, const char *cmd, int default_layers)
{
    char opt[64], text[1024];
    for (int section = 0; section < 2; section++) {
        fputs(section ? "Layers:\n"
                      : "Model (0 or absent: the model's default, see 'approf models'):\n", f);
        for (size_t i = 0; i < N_OPTS; i++) {
            const ModelOpt *o = &model_opts[i];
            int at;
            if (o->section != section)
                continue;
            snprintf(opt, sizeof opt, "--%s%s%s", o->name, o->metavar ? " " : "",
                     o->metavar ? o->metavar : "");
            at = snprintf(text, sizeof text, "%s", o->help);
            if (!strcmp(o->name, "layers"))
                at += snprintf(text + at, sizeof text - (size_t)at, " (default %d%s)",
                               default_layers,
                               strcmp(cmd, "sweep") ? ", or the manual layers when the model has "
                                                      "boundary markers" : "");
            if (o->alias && at < (int)sizeof text)
                at += snprintf(text + at, sizeof text - (size_t)at, "; also --%s", o->alias);
            if (o->model_only && !strcmp(cmd, "sweep") && at < (int)sizeof text)
                snprintf(text + at, sizeof text - (size_t)at,
                         " (approf model only)");
            help_line(f, opt, text);
        }
        if (!section && !strcmp(cmd, "sweep"))
            fputs("A sweep refuses the options marked (approf model only): write the model with\n"
                  "them (approf model export) and sweep it with --model-file.\n", f);
    }
}

int cli_longopts_join(struct option *out, int cap, const struct option *own)
{
    int n = cli_model_longopts(out, cap);
    if (n < 0)
        return -1;
    for (const struct option *o = own; o->name; o++) {
        if (n >= cap - 1)
            return -1;
        out[n++] = *o;
    }
    out[n] = (struct option){NULL, 0, NULL, 0};
    return 0;
}
