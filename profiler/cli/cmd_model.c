/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf models | model show | model export: list the zoo, print a model's
 * exact parameter count and its layers (auto clustering or manual
 * boundaries) with per-layer FLOPs and bytes, or write a zoo model as a
 * model file. Text and JSON writers sit behind one small table.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "graph.h"
#include "model/hfconfig.h"
#include "model/modelfile.h"
#include "model/zoo.h"
#include "outfile.h"

enum {
    OPT_PRESET = 256, OPT_DATASET, OPT_DTYPE, OPT_BATCH, OPT_NUM_LAYERS, OPT_HIDDEN, OPT_HEADS,
    OPT_SEQ_LEN, OPT_VOCAB, OPT_WIDTH, OPT_DEPTH, OPT_FILTERS, OPT_IMAGE, OPT_CLASSES,
    OPT_MANUAL_B, OPT_LAYERS, OPT_EPS, OPT_MANUAL, OPT_FORMAT, OPT_MODEL_FILE, OPT_OUTPUT,
    OPT_HF_CONFIG, OPT_ATTENTION, OPT_CAPACITY, OPT_MLM, OPT_DROPOUT,
};

static const struct option model_opts[] = {
    {"preset", required_argument, NULL, OPT_PRESET},
    {"dataset", required_argument, NULL, OPT_DATASET},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"num-layers", required_argument, NULL, OPT_NUM_LAYERS},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"heads", required_argument, NULL, OPT_HEADS},
    {"seq-len", required_argument, NULL, OPT_SEQ_LEN},
    {"vocab", required_argument, NULL, OPT_VOCAB},
    {"width-factor", required_argument, NULL, OPT_WIDTH},
    {"depth", required_argument, NULL, OPT_DEPTH},
    {"num-filters", required_argument, NULL, OPT_FILTERS},
    {"image-size", required_argument, NULL, OPT_IMAGE},
    {"num-classes", required_argument, NULL, OPT_CLASSES},
    {"manual-boundaries", no_argument, NULL, OPT_MANUAL_B},
    {"manual-boundary", no_argument, NULL, OPT_MANUAL_B},
    {"hf-config", required_argument, NULL, OPT_HF_CONFIG},
    {"attention", required_argument, NULL, OPT_ATTENTION},
    {"capacity-factor", required_argument, NULL, OPT_CAPACITY},
    {"mlm-positions", required_argument, NULL, OPT_MLM},
    {"dropout", required_argument, NULL, OPT_DROPOUT},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"eps", required_argument, NULL, OPT_EPS},
    {"manual", no_argument, NULL, OPT_MANUAL},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"model-file", required_argument, NULL, OPT_MODEL_FILE},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void model_help(FILE *f)
{
    fputs("Usage: approf model show (NAME | --model-file F | --hf-config F) [MODEL OPTIONS]\n"
          "                         [--layers L] [--eps E] [--manual] [--format text|json]\n"
          "       approf model export (NAME | --hf-config F) [MODEL OPTIONS] [-o FILE]\n"
          "Show a model's exact parameter count and its layers (operator range, forward and\n"
          "backward FLOPs, parameter, activation and inbound bytes per layer), or write a zoo\n"
          "model as a model file (JSON, schemas/model-format.md) to stdout or FILE.\n\n"
          "Model options (0 or absent: the model's default, see 'approf models'):\n"
          "  --preset P            gpt: gpt2-small|gpt3-1.3b|gpt3-2.7b|gpt3-6.7b|gpt3-39b; bert: base|large;\n"
          "                        llama: llama-3-8b|llama-2-7b|llama-3-70b|llama-3.1-405b; mistral:\n"
          "                        mistral-7b; mixtral: mixtral-8x7b; qwen2: qwen2.5-7b;\n"
          "                        deepseek_moe: deepseek-moe-16b\n"
          "  --hf-config F         the model of a Hugging Face config.json (model_type llama, mistral,\n"
          "                        mixtral, qwen2, deepseek, gpt2, bert) instead of NAME and --preset\n"
          "  --attention A         llama family: flash (fused attention, default) | eager;\n"
          "                        gpt, bert: eager (default) | flash\n"
          "  --capacity-factor C   mixture of experts: expert slots = C x tokens x top_k / experts (1)\n"
          "  --mlm-positions P     bert: the masked-LM head scores P positions per sequence (all)\n"
          "  --dropout P           bert, gpt: their dropouts at rate P (0: none)\n"
          "  --dataset D           resnet50: imagenet|cifar10; wide_resnet: cifar10|imagenet; swin: imagenet|cifar100\n"
          "  --dtype T             f32|f16|bf16 (default: bf16 for the language transformers and\n"
          "                        --hf-config, as the sweep on bf16 GPUs; f32 for the others)\n"
          "  --batch B             samples the graph is built for\n"
          "  --num-layers N --hidden H --heads A --seq-len S --vocab V   transformer sizes\n"
          "  --width-factor W --depth D --num-filters F                  wide_resnet\n"
          "  --image-size N --num-classes N\n"
          "  --manual-boundaries   insert pipeline boundary markers (mlp: after the middle layer;\n"
          "                        transformers and swin: after every block)\n"
          "Layer options:\n"
          "  --layers L            auto layer construction into L layers (default 4, or the\n"
          "                        manual layers when the model has boundary markers)\n"
          "  --eps E               auto layering FLOP slack (default 0.5)\n"
          "  --manual              layers cut at boundary markers\n"
          "  --format text|json    output format (default text)\n"
          "Exit status: 0 ok, 1 bad model file or config.json or runtime failure, 2 usage error\n"
          "(unknown model, preset or dataset, conflicting options).\n", f);
}

typedef struct {
    ApprofZooOptions zoo;
    const char *model_file;
    const char *hf_config;
    const char *output;
    int layers, manual, json;
    double eps;
} ModelArgs;

/* The long name of option code c, for messages. */
static const char *opt_name(int c)
{
    for (const struct option *o = model_opts; o->name; o++)
        if (o->val == c)
            return o->name;
    return "?";
}

static int parse_opts(int argc, char **argv, ModelArgs *a)
{
    int c;
    int64_t v;
    memset(a, 0, sizeof *a);
    a->eps = 0.5;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", model_opts, NULL)) != -1) {
        int *ip = NULL;
        switch (c) {
        case 'h': model_help(stdout); return 1;
        case OPT_PRESET: a->zoo.preset = optarg; break;
        case OPT_DATASET: a->zoo.dataset = optarg; break;
        case OPT_DTYPE: a->zoo.dtype = optarg; break;
        case OPT_BATCH:
            if (cli_parse_int(optarg, 1, 1 << 24, &v) < 0)
                return cli_usage_error("model", "--batch needs an integer in 1..16777216, got '%s'", optarg);
            a->zoo.batch = v;
            break;
        case OPT_NUM_LAYERS:
            if (cli_parse_int(optarg, 1, APPROF_ZOO_MAX_LAYERS, &v) < 0)
                return cli_usage_error("model", "--num-layers needs an integer in 1..%d, got '%s'",
                                       APPROF_ZOO_MAX_LAYERS, optarg);
            a->zoo.num_layers = (int)v;
            break;
        case OPT_HIDDEN: ip = &a->zoo.hidden; break;
        case OPT_HEADS: ip = &a->zoo.heads; break;
        case OPT_SEQ_LEN: ip = &a->zoo.seq_len; break;
        case OPT_VOCAB: ip = &a->zoo.vocab; break;
        case OPT_MLM: ip = &a->zoo.mlm_positions; break;
        case OPT_WIDTH: ip = &a->zoo.width_factor; break;
        case OPT_DEPTH: ip = &a->zoo.depth; break;
        case OPT_FILTERS: ip = &a->zoo.num_filters; break;
        case OPT_IMAGE: ip = &a->zoo.image_size; break;
        case OPT_CLASSES: ip = &a->zoo.num_classes; break;
        case OPT_MANUAL_B: a->zoo.manual_boundaries = 1; break;
        case OPT_LAYERS: ip = &a->layers; break;
        case OPT_DROPOUT:
            if (cli_parse_double(optarg, 0, 0.99, &a->zoo.dropout) < 0)
                return cli_usage_error("model", "--dropout needs a probability in 0..0.99, got '%s'", optarg);
            break;
        case OPT_EPS:
            if (cli_parse_double(optarg, 0, 100, &a->eps) < 0)
                return cli_usage_error("model", "--eps needs a number in 0..100, got '%s'", optarg);
            break;
        case OPT_MANUAL: a->manual = 1; break;
        case OPT_FORMAT:
            if (cli_choice_option("model", "format", optarg, cli_text_json, &a->json))
                return CLI_EXIT_USAGE;
            break;
        case OPT_MODEL_FILE: a->model_file = optarg; break;
        case OPT_HF_CONFIG: a->hf_config = optarg; break;
        case OPT_ATTENTION: a->zoo.attention = optarg; break;
        case OPT_CAPACITY:
            if (cli_parse_double(optarg, 0.01, 64, &a->zoo.capacity_factor) < 0)
                return cli_usage_error("model", "--capacity-factor needs a number in 0.01..64, got '%s'", optarg);
            break;
        case 'o': a->output = optarg; break;
        case ':': return cli_usage_error("model", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("model", "unknown option '%s'", argv[optind - 1]);
        }
        if (ip) {
            if (cli_parse_int(optarg, 1, 1 << 24, &v) < 0)
                return cli_usage_error("model", "--%s needs an integer in 1..16777216, got '%s'",
                                       opt_name(c), optarg);
            *ip = (int)v;
        }
    }
    return 0;
}

/* Builds the graph from a zoo name or a model file; prints errors. */
static int load_graph(const ModelArgs *a, const char *name, ApprofGraph **g)
{
    char err[1024];
    int rc;
    ApprofZooOptions zo = a->zoo;
    /* the sweep's default on bf16 hardware: language transformers (every
     * Hugging Face family) train in mixed precision */
    if (!zo.dtype && (a->hf_config || approf_zoo_trains_mixed(name)))
        zo.dtype = "bf16";
    if (a->model_file)
        rc = approf_model_load(a->model_file, g, err, sizeof err);
    else if (a->hf_config)
        rc = approf_zoo_build_hf(a->hf_config, &zo, g, err, sizeof err);
    else
        rc = approf_zoo_build(name, &zo, g, err, sizeof err);
    if (rc < 0) {
        /* A bad zoo choice or size is a usage error; a bad file is not. */
        fprintf(stderr, "approf: %s\n", err[0] ? err : approf_strerror(rc));
        if (!a->model_file && rc == APPROF_EINVAL)
            fputs("Try 'approf model --help'\n", stderr);
        return !a->model_file && rc == APPROF_EINVAL ? APPROF_EXIT_USAGE : APPROF_EXIT_FAIL;
    }
    return 0;
}

/* ---- writers -------------------------------------------------------------- */

typedef struct {
    void (*header)(const ApprofGraph *g, const ApprofLayering *l, const char *hash);
    void (*layer)(const ApprofGraph *g, const ApprofLayering *l, int i, const ApprofLayerStats *s);
    void (*footer)(const ApprofLayerStats *total);
} Writer;

static void text_header(const ApprofGraph *g, const ApprofLayering *l, const char *hash)
{
    printf("model: %s  dtype %s  batch %lld  ops %zu  tensors %zu\nhash: %s\n",
           g->name, approf_dtype_name(g->dtype), (long long)g->batch_size, g->n_ops, g->n_tensors, hash);
    printf("parameters: %lld\n", (long long)approf_graph_num_params(g));
    printf("layers: %d (%s)\n", l->n_layers, l->option);
    printf("%-5s %-11s %-22s %-22s %12s %12s %14s %16s %14s\n", "layer", "ops", "first op", "last op",
           "fwd_flops", "bwd_flops", "param_bytes", "activation_bytes", "inbound_bytes");
}

static void text_layer(const ApprofGraph *g, const ApprofLayering *l, int i, const ApprofLayerStats *s)
{
    char range[32];
    snprintf(range, sizeof range, "%d-%d", l->op_begin[i], l->op_end[i] - 1);
    printf("%-5d %-11s %-22.22s %-22.22s %12.4e %12.4e %14lld %16lld %14lld\n", i, range,
           g->ops[l->op_begin[i]].name, g->ops[l->op_end[i] - 1].name, s->fwd_flops, s->bwd_flops,
           (long long)s->param_bytes, (long long)s->activation_bytes, (long long)s->inbound_bytes);
}

static void text_footer(const ApprofLayerStats *t)
{
    printf("%-5s %-11s %-22s %-22s %12.4e %12.4e %14lld %16lld %14lld\n", "total", "", "", "",
           t->fwd_flops, t->bwd_flops, (long long)t->param_bytes, (long long)t->activation_bytes,
           (long long)t->inbound_bytes);
}

static void json_header(const ApprofGraph *g, const ApprofLayering *l, const char *hash)
{
    fputs("{\"model\": ", stdout);
    costdb_json_string(stdout, g->name);
    printf(", \"dtype\": \"%s\", \"batch_size\": %lld, \"n_ops\": %zu, \"hash\": \"%s\",\n"
           " \"parameters\": %lld, \"layering\": ", approf_dtype_name(g->dtype), (long long)g->batch_size,
           g->n_ops, hash, (long long)approf_graph_num_params(g));
    costdb_json_string(stdout, l->option);
    fputs(",\n \"layers\": [", stdout);
}

static void json_layer(const ApprofGraph *g, const ApprofLayering *l, int i, const ApprofLayerStats *s)
{
    printf("%s\n  {\"index\": %d, \"op_begin\": %d, \"op_end\": %d, \"first_op\": ", i ? "," : "", i,
           l->op_begin[i], l->op_end[i]);
    costdb_json_string(stdout, g->ops[l->op_begin[i]].name);
    fputs(", \"last_op\": ", stdout);
    costdb_json_string(stdout, g->ops[l->op_end[i] - 1].name);
    fputs(", \"fwd_flops\": ", stdout);
    costdb_json_number(stdout, s->fwd_flops);
    fputs(", \"bwd_flops\": ", stdout);
    costdb_json_number(stdout, s->bwd_flops);
    printf(", \"param_bytes\": %lld, \"activation_bytes\": %lld, \"inbound_bytes\": %lld}",
           (long long)s->param_bytes, (long long)s->activation_bytes, (long long)s->inbound_bytes);
}

static void json_footer(const ApprofLayerStats *t)
{
    fputs("],\n \"totals\": {\"fwd_flops\": ", stdout);
    costdb_json_number(stdout, t->fwd_flops);
    fputs(", \"bwd_flops\": ", stdout);
    costdb_json_number(stdout, t->bwd_flops);
    printf(", \"param_bytes\": %lld, \"activation_bytes\": %lld, \"inbound_bytes\": %lld}}\n",
           (long long)t->param_bytes, (long long)t->activation_bytes, (long long)t->inbound_bytes);
}

static const Writer writers[2] = {
    {text_header, text_layer, text_footer},
    {json_header, json_layer, json_footer},
};

static int model_show(const ModelArgs *a, const char *name)
{
    ApprofGraph *g = NULL;
    ApprofLayering l;
    ApprofLayerStats total;
    char hash[40];
    int rc, has_boundary = 0;
    const Writer *w = &writers[a->json];

    rc = load_graph(a, name, &g);
    if (rc)
        return rc;
    for (size_t i = 0; i < g->n_ops; i++)
        has_boundary |= g->ops[i].kind == APPROF_OP_BOUNDARY;
    memset(&l, 0, sizeof l);
    if (a->manual || (has_boundary && !a->layers)) {
        rc = approf_layers_manual(g, &l);
    } else {
        int L = a->layers ? a->layers : 4;
        if (!a->layers && (size_t)L > g->n_ops)
            L = (int)g->n_ops; /* the default on a small graph: one layer per operator */
        if ((size_t)L > g->n_ops) {
            size_t n_ops = g->n_ops; /* read before the graph is freed */
            approf_graph_free(&g);
            return cli_usage_error("model", "--layers %d exceeds the model's %zu operators", L, n_ops);
        }
        rc = approf_layers_auto(g, L, a->eps, &l);
    }
    if (rc < 0) {
        approf_graph_free(&g);
        return cli_fail("layer construction failed: %s%s", approf_strerror(rc),
                        rc == APPROF_EINFEASIBLE ? " (try a larger --eps or fewer --layers)" : "");
    }
    approf_graph_hash(g, hash, sizeof hash);
    memset(&total, 0, sizeof total);
    w->header(g, &l, hash);
    for (int i = 0; i < l.n_layers; i++) {
        ApprofLayerStats s;
        if (approf_layer_stats(g, &l, i, &s) < 0) {
            rc = APPROF_ENOMEM;
            break;
        }
        w->layer(g, &l, i, &s);
        total.fwd_flops += s.fwd_flops;
        total.bwd_flops += s.bwd_flops;
        total.param_bytes += s.param_bytes;
        total.activation_bytes += s.activation_bytes;
        total.inbound_bytes += s.inbound_bytes;
    }
    if (rc == 0)
        w->footer(&total);
    approf_layering_free(&l);
    approf_graph_free(&g);
    return rc < 0 ? cli_fail("%s", approf_strerror(rc)) : APPROF_EXIT_OK;
}

static int model_export(const ModelArgs *a, const char *name)
{
    ApprofGraph *g = NULL;
    ApsolveOutfile *of = NULL;
    char *text = NULL, err[1024];
    FILE *f = stdout;
    int rc = load_graph(a, name, &g);
    if (rc)
        return rc;
    rc = approf_model_to_json(g, &text);
    approf_graph_free(&g);
    if (rc < 0)
        return cli_fail("cannot serialise the model: %s", approf_strerror(rc));
    /* -o as every other writer: a temporary file renamed into place, a
     * symbolic link at the path refused (it was followed) */
    if (a->output && apsolve_outfile_open(a->output, &of, &f, err, sizeof err) < 0) {
        free(text);
        return cli_fail("%s", err);
    }
    if (fputs(text, f) < 0 || fputc('\n', f) == EOF) {
        free(text);
        apsolve_outfile_abort(&of);
        return cli_fail("%s: write failed", a->output ? a->output : "stdout");
    }
    free(text);
    if (of && apsolve_outfile_commit(&of, err, sizeof err) < 0)
        return cli_fail("%s", err);
    return APPROF_EXIT_OK;
}

int approf_cmd_model(int argc, char **argv)
{
    ModelArgs a;
    const char *sub, *name = NULL;
    int rc;
    if (argc < 2)
        return cli_usage_error("model", "missing subcommand (show or export)");
    sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
        model_help(stdout);
        return APPROF_EXIT_OK;
    }
    if (strcmp(sub, "show") && strcmp(sub, "export"))
        return cli_usage_error("model", "unknown subcommand '%s' (show or export)", sub);
    rc = parse_opts(argc - 1, argv + 1, &a);
    if (rc)
        return rc == 1 ? APPROF_EXIT_OK : rc;
    if (optind < argc - 1)
        name = argv[1 + optind];
    if (optind + 1 < argc - 1)
        return cli_usage_error("model", "unexpected argument '%s'", argv[2 + optind]);
    if (!name && !a.model_file && !a.hf_config)
        return cli_usage_error("model", "missing model name (see 'approf models'), --model-file or --hf-config");
    if ((name != NULL) + (a.model_file != NULL) + (a.hf_config != NULL) > 1)
        return cli_usage_error("model", "give one of a model name, --model-file and --hf-config");
    if (a.hf_config && a.zoo.preset)
        return cli_usage_error("model", "--preset and --hf-config both choose the sizes: give one");
    if (a.model_file && (a.zoo.preset || a.zoo.dataset))
        return cli_usage_error("model", "--%s does not apply to --model-file",
                               a.zoo.preset ? "preset" : "dataset");
    return !strcmp(sub, "show") ? model_show(&a, name) : model_export(&a, name);
}

int approf_cmd_models(int argc, char **argv)
{
    size_t n;
    const ApprofZooEntry *e = approf_zoo_list(&n);
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs("Usage: approf models [--format text|json]\nList the model zoo with each model's defaults.\n", stdout);
            return APPROF_EXIT_OK;
        }
        if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            if (cli_choice_option("models", "format", argv[++i], cli_text_json, &json))
                return CLI_EXIT_USAGE;
        } else if (!strncmp(argv[i], "--format=", 9)) {
            if (cli_choice_option("models", "format", argv[i] + 9, cli_text_json, &json))
                return CLI_EXIT_USAGE;
        } else {
            return cli_usage_error("models", "unknown argument '%s'", argv[i]);
        }
    }
    if (json)
        fputs("[", stdout);
    for (size_t i = 0; i < n; i++) {
        if (json) {
            printf("%s\n {\"name\": ", i ? "," : "");
            costdb_json_string(stdout, e[i].name);
            fputs(", \"description\": ", stdout);
            costdb_json_string(stdout, e[i].description);
            fputs(", \"defaults\": ", stdout);
            costdb_json_string(stdout, e[i].defaults);
            putchar('}');
        } else {
            printf("%-12s %s\n%-12s defaults: %s\n", e[i].name, e[i].description, "", e[i].defaults);
        }
    }
    if (json)
        fputs("]\n", stdout);
    return APPROF_EXIT_OK;
}
