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
#include "json_write.h"
#include "model/hfconfig.h"
#include "model/modelfile.h"
#include "model/onnx.h"
#include "model/zoo.h"
#include "outfile.h"

/* approf model's own options; the model and layer options are the shared
 * table's (model_options.c). */
enum { OPT_BATCH = 256, OPT_FORMAT };

static const struct option own_opts[] = {
    {"batch", required_argument, NULL, OPT_BATCH},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void model_help(FILE *f)
{
    fputs("Usage: approf model show (NAME | --model NAME | --model-file F | --hf-config F)\n"
          "                         [MODEL OPTIONS] [--layers L] [--eps E] [--manual-layers]\n"
          "                         [--format text|json]\n"
          "       approf model export (NAME | --model NAME | --hf-config F) [MODEL OPTIONS] [-o FILE]\n"
          "       approf model list [--format text|json]   the model zoo (as approf models)\n"
          "Show a model's exact parameter count and its layers (operator range, forward and\n"
          "backward FLOPs, parameter, activation and inbound bytes per layer), or write a zoo\n"
          "model as a model file (JSON, schemas/model-format.md) to stdout or FILE. The model\n"
          "and layer options are approf sweep's.\n\n", f);
    cli_model_help(f, "model", APPROF_SHOW_DEFAULT_LAYERS);
    fputs("Other options:\n"
          "  --batch B                samples the graph is built for (default: the model's)\n"
          "  --format text|json       show: the output format (default text)\n"
          "  -o, --output FILE        export: the file to write (default: stdout)\n"
          "  -h, --help               this text\n\n"
          "Exit status: 0 ok, 1 bad model file or config.json or runtime failure, 2 usage error\n"
          "(unknown model, preset or dataset, a bad option value, conflicting options).\n", f);
}

typedef struct {
    CliModelArgs m;            /* the model and layer options */
    const char *output;
    int json;
} ModelArgs;

/* parse_opts after --help: not an exit status (APPROF_EXIT_FAIL is 1, which
 * cli_fail returns). */
#define PARSED_HELP (-1)

/* 0, PARSED_HELP after --help, or the usage error's (or failure's) exit
 * status. */
static int parse_opts(int argc, char **argv, ModelArgs *a)
{
    struct option opts[CLI_MAX_LONGOPTS];
    int c, li = -1, rc;
    int64_t v;
    memset(a, 0, sizeof *a);
    cli_model_args_init(&a->m);
    if (cli_longopts_join(opts, CLI_MAX_LONGOPTS, own_opts) < 0)
        return cli_fail("model: too many options for the option table");
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", opts, &li)) != -1) {
        const char *spelled = li >= 0 ? opts[li].name : NULL;
        li = -1;
        rc = cli_model_option("model", c, optarg, spelled, &a->m);
        if (rc != CLI_MODEL_NOT_MINE) {
            if (rc)
                return rc;
            continue;
        }
        switch (c) {
        case 'h': model_help(stdout); return PARSED_HELP;
        case OPT_BATCH:
            if ((rc = cli_int_value("model", "batch", optarg, 1, 1 << 24, &v)))
                return rc;
            a->m.zoo.batch = v;
            break;
        case OPT_FORMAT:
            if ((rc = cli_choice_value("model", "format", optarg, cli_text_json, &a->json)))
                return rc;
            break;
        case 'o': a->output = optarg; break;
        case ':': return cli_usage_error("model", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("model", "unknown option '%s'", argv[optind - 1]);
        }
    }
    return 0;
}

/* What a Hugging Face config's reading has to say (a duplicated key's
 * last value taken), and a snapshot's checkpoint size against the count:
 * model.safetensors.index.json's total_size over torch_dtype's element
 * size is the checkpoint's parameter count. */
static void hf_notes(const char *path, const ApprofGraph *g)
{
    ApprofHfConfig c;
    char err[256];
    int64_t n = approf_graph_num_params(g);
    if (approf_hf_config_load(path, &c, err, sizeof err) < 0)
        return;
    if (c.note[0])
        fprintf(stderr, "approf: %s\n", c.note);
    if (c.checkpoint_bytes > 0 && c.checkpoint_elem_size > 0) {
        int64_t ck = c.checkpoint_bytes / c.checkpoint_elem_size;
        if (ck == n)
            fprintf(stderr, "approf: %s: the checkpoint's total_size, %lld bytes, is %lld "
                    "parameters of %d bytes: the count agrees\n", path,
                    (long long)c.checkpoint_bytes, (long long)ck, c.checkpoint_elem_size);
        else
            fprintf(stderr, "approf: %s: the checkpoint's total_size, %lld bytes, is %lld "
                    "parameters of %d bytes; approf counts %lld (%+lld): the checkpoint holds "
                    "tensors the model does not (or lacks some)\n", path,
                    (long long)c.checkpoint_bytes, (long long)ck, c.checkpoint_elem_size,
                    (long long)n, (long long)(ck - n));
    }
}

/* Builds the graph from a zoo name or a model file; prints errors. */
static int load_graph(const ModelArgs *a, const char *name, ApprofGraph **g)
{
    char err[1024];
    int rc;
    ApprofZooOptions zo = a->m.zoo;
    /* the sweep's default on bf16 hardware: language transformers (every
     * Hugging Face family) train in mixed precision */
    if (!zo.dtype && (a->m.hf_config || approf_zoo_trains_mixed(name)))
        zo.dtype = approf_dtype_name(APPROF_BF16);
    if (a->m.model_file)
        rc = approf_model_load_batch(a->m.model_file, a->m.zoo.batch, g, err, sizeof err);
    else if (a->m.hf_config)
        rc = approf_zoo_build_hf(a->m.hf_config, &zo, g, err, sizeof err);
    else
        rc = approf_zoo_build(name, &zo, g, err, sizeof err);
    if (rc == 0 && a->m.hf_config)
        hf_notes(a->m.hf_config, *g);
    if (rc == 0 && a->m.model_file && approf_onnx_notice()[0])
        fprintf(stderr, "approf: warning: %s\n", approf_onnx_notice());
    if (rc < 0) {
        /* A bad zoo choice or size is a usage error; a bad file is not. */
        fprintf(stderr, "approf: %s\n", err[0] ? err : approf_strerror(rc));
        if (!a->m.model_file && rc == APPROF_EINVAL)
            fputs("Try 'approf model --help'\n", stderr);
        return !a->m.model_file && rc == APPROF_EINVAL ? APPROF_EXIT_USAGE : APPROF_EXIT_FAIL;
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
    if (a->m.manual_layers || (has_boundary && !a->m.layers)) {
        rc = approf_layers_manual(g, &l);
    } else {
        int L = a->m.layers ? a->m.layers : APPROF_SHOW_DEFAULT_LAYERS;
        if (!a->m.layers && (size_t)L > g->n_ops)
            L = (int)g->n_ops; /* the default on a small graph: one layer per operator */
        if ((size_t)L > g->n_ops) {
            size_t n_ops = g->n_ops; /* read before the graph is freed */
            approf_graph_free(&g);
            return cli_usage_error("model", "--layers %d exceeds the model's %zu operators", L, n_ops);
        }
        rc = approf_layers_auto(g, L, a->m.eps, &l);
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
        return cli_usage_error("model", "missing subcommand (list, show or export)");
    sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
        model_help(stdout);
        return APPROF_EXIT_OK;
    }
    if (!strcmp(sub, "list")) /* the zoo, as 'approf hardware list' lists the specs */
        return approf_cmd_models(argc - 1, argv + 1);
    if (strcmp(sub, "show") && strcmp(sub, "export"))
        return cli_usage_error("model", "unknown subcommand '%s' (list, show or export)", sub);
    rc = parse_opts(argc - 1, argv + 1, &a);
    if (rc)
        return rc == PARSED_HELP ? APPROF_EXIT_OK : rc;
    if (optind < argc - 1)
        name = argv[1 + optind];
    if (optind + 1 < argc - 1)
        return cli_usage_error("model", "unexpected argument '%s'", argv[2 + optind]);
    if (name && a.m.name)
        return cli_usage_error("model", "give the model name once: NAME or --model NAME");
    if (name)
        a.m.name = name;
    if (!a.m.name && !a.m.model_file && !a.m.hf_config)
        return cli_usage_error("model", "missing model name (see 'approf models'), --model-file or --hf-config");
    rc = cli_model_check_source("model", &a.m);
    if (rc)
        return rc;
    return !strcmp(sub, "show") ? model_show(&a, a.m.name) : model_export(&a, a.m.name);
}

int approf_cmd_models(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    size_t n;
    const ApprofZooEntry *e = approf_zoo_list(&n);
    int c, rc, json = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs("Usage: approf models [--format text|json]\nList the model zoo with each model's defaults.\n", stdout);
            return APPROF_EXIT_OK;
        case 'f':
            if ((rc = cli_choice_value("models", "format", optarg, cli_text_json, &json)))
                return rc;
            break;
        case ':': return cli_usage_error("models", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("models", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("models", "unexpected argument '%s'", argv[optind]);
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
