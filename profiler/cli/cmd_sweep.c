/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf sweep: option parsing, Alpa-style progress output, signal handling
 * and the closing summary around approf_sweep_run().
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apsolve.h"
#include "clock.h"
#include "cli.h"
#include "config.h"
#include "hardware.h"
#include "model/hfconfig.h"
#include "model/zoo.h"
#include "plural.h"
#include "sweep/sweep.h"
#include "sweep/sweep_family.h"
#include "sweep/sweep_mpi.h"

static volatile sig_atomic_t stop_signal;

/* The first signal names the stop: under mpirun an interrupted rank is sent
 * SIGTERM when another rank exits first, and the report and the exit status
 * keep the signal that stopped the sweep. */
static void on_signal(int sig)
{
    if (!stop_signal)
        stop_signal = sig;
}

typedef struct {
    int quiet;
    int tty;
    double started;
    size_t last_done;
    unsigned long said[16];           /* hashes of the notices said: once per command,
                                       * not once per sweep */
    int n_said;
    const char *db_path;              /* for the interrupt report */
    int said_interrupt;               /* cb_interrupted reported this sweep */
} Progress;

/* The report of an interrupted sweep, said before this rank lets the others
 * exit (sweep.h: under mpirun the launcher then kills the ranks left). */
static void cb_interrupted(void *ctx, const ApprofSweepSummary *sum)
{
    Progress *p = ctx;
    int sig = stop_signal ? (int)stop_signal : SIGINT;
    fflush(stdout);
    if (p->tty)
        fputs("\r\033[K", stderr);
    if (sum->mpi_rank > 0 && stop_signal) /* rank 0 names the sweep */
        fprintf(stderr, "approf: rank %d interrupted by %s; rank 0 marks the sweep "
                "interrupted\n", sum->mpi_rank, cli_stop_signal_name(sig));
    else if (sum->mpi_rank > 0)
        fprintf(stderr, "approf: rank %d stopped: rank 0 ended the sweep\n", sum->mpi_rank);
    else
        fprintf(stderr,
                "approf: interrupted by %s: sweep %lld has %zu %s committed in %s.\n"
                "approf: resume with the same command and --resume\n",
                cli_stop_signal_name(sig), (long long)sum->sweep_id,
                sum->entries + sum->existing,
                costdb_plural((long long)(sum->entries + sum->existing), "entry", "entries"),
                p->db_path);
    fflush(stderr);
    p->said_interrupt = 1;
}

static void cb_submesh(void *ctx, int index, int n, int m)
{
    Progress *p = ctx;
    if (p->quiet)
        return;
    fflush(stdout); /* keep the header before its entries when both go to one file */
    if (p->tty)
        fputs("\r\033[K", stderr);
    fprintf(stderr, "- Profiling for submesh %d (%d, %d):\n", index, n, m);
}

static void cb_entry(void *ctx, const CostdbEntry *e)
{
    Progress *p = ctx;
    char line[512];
    if (p->quiet)
        return;
    costdb_format_entry(e, line, sizeof line);
    puts(line);
}

static void cb_progress(void *ctx, size_t done, size_t total, double work_done, double work_total)
{
    Progress *p = ctx;
    double el, eta;
    int width = 30, fill;
    if (!p->tty || p->quiet || total == 0)
        return;
    if (done != total && done - p->last_done < 8)
        return;
    p->last_done = done;
    el = costdb_monotonic_seconds() - p->started;
    /* by work (the operators of the ranges done), not by tuple count: the
     * tuples of long ranges cost more */
    eta = work_done > 0 && work_total >= work_done ? el * (work_total - work_done) / work_done : 0;
    fill = (int)((double)width * (double)done / (double)total);
    fprintf(stderr, "\r[%.*s%*s] %zu/%zu  %.1fs elapsed, ETA %.1fs", fill,
            "##############################", width - fill, "", done, total, el, eta);
    if (done == total)
        fputs("\r\033[K", stderr);
    fflush(stderr);
}

static void cb_notice(void *ctx, const char *msg)
{
    Progress *p = ctx;
    unsigned long h = 5381;
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++)
        h = h * 33 + *c;
    for (int i = 0; i < p->n_said; i++)
        if (p->said[i] == h)
            return;
    if (p->n_said < (int)(sizeof p->said / sizeof p->said[0]))
        p->said[p->n_said++] = h;
    if (p->tty)
        fputs("\r\033[K", stderr);
    fprintf(stderr, "approf: %s\n", msg);
}

/* approf sweep's own options; the model and layer options are the shared
 * table's (model_options.c). */
enum {
    OPT_CLUSTER = 256, OPT_BATCH, OPT_MICRO, OPT_SUBMESH, OPT_LOGICAL, OPT_MODE, OPT_IMBALANCE,
    OPT_HARDWARE, OPT_BACKEND, OPT_DB, OPT_RESUME, OPT_ALLOW_LARGE, OPT_SKIP_UNFIT, OPT_SHARD, OPT_QUIET,
    OPT_KEEP_DOMINATED,
    OPT_COMMIT_EVERY, OPT_SHARDING_SOLVER, OPT_WORKERS, OPT_MEMORY_LEVELS, OPT_RECOMPUTE,
    OPT_ZERO, OPT_VARIANTS, OPT_MBS, OPT_TAKE_OVER, OPT_HARDWARE_ID, OPT_FP8, OPT_FP8_RECIPE,
    OPT_ZERO3_SCHEDULE,
};

enum { BACKEND_AUTO, BACKEND_MODEL, BACKEND_CUDA };
static const CliChoice backend_choices[] = {
    {"auto", BACKEND_AUTO}, {"model", BACKEND_MODEL}, {"cuda", BACKEND_CUDA}, {NULL, 0}};

/* Item parsers for cli_parse_list: the value of one list item, or -1. */
static int64_t recompute_item(const char *item)
{
    return costdb_recompute_parse(item);
}

static int64_t zero_item(const char *item)
{
    int64_t v;
    return cli_parse_int(item, 0, 3, &v) ? -1 : v;
}

static int64_t size_item(const char *item)
{
    int64_t v;
    return cli_parse_int(item, 1, 1 << 20, &v) ? -1 : v;
}

/* The bit mask of the values of a list (all below 32); nonzero on error. */
static int parse_mask(const char *s, int64_t (*item)(const char *), unsigned *mask)
{
    int64_t v[32];
    int n = cli_parse_list(s, item, v, 32);
    *mask = 0;
    for (int i = 0; i < n; i++)
        *mask |= 1u << v[i];
    return n > 0 ? 0 : -1;
}

static const struct option own_opts[] = {
    {"take-over", no_argument, NULL, OPT_TAKE_OVER},
    {"fp8", no_argument, NULL, OPT_FP8},
    {"fp8-recipe", required_argument, NULL, OPT_FP8_RECIPE},
    {"zero3-schedule", required_argument, NULL, OPT_ZERO3_SCHEDULE},
    {"cluster", required_argument, NULL, OPT_CLUSTER},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"micro-batches", required_argument, NULL, OPT_MICRO},
    {"micro-batch-sizes", required_argument, NULL, OPT_MBS},
    {"memory-levels", required_argument, NULL, OPT_MEMORY_LEVELS},
    {"recompute", required_argument, NULL, OPT_RECOMPUTE},
    {"zero", required_argument, NULL, OPT_ZERO},
    {"variants", required_argument, NULL, OPT_VARIANTS},
    {"submesh-space", required_argument, NULL, OPT_SUBMESH},
    {"logical-space", required_argument, NULL, OPT_LOGICAL},
    {"profile-mode", required_argument, NULL, OPT_MODE},
    {"stage-imbalance-tolerance", required_argument, NULL, OPT_IMBALANCE},
    {"hardware", required_argument, NULL, OPT_HARDWARE},
    {"hardware-id", required_argument, NULL, OPT_HARDWARE_ID},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"db", required_argument, NULL, OPT_DB},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"allow-large", no_argument, NULL, OPT_ALLOW_LARGE},
    {"skip-unfit", no_argument, NULL, OPT_SKIP_UNFIT},
    {"keep-dominated", no_argument, NULL, OPT_KEEP_DOMINATED},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"commit-every", required_argument, NULL, OPT_COMMIT_EVERY},
    {"sharding-solver", required_argument, NULL, OPT_SHARDING_SOLVER},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Checks the model choice before anything runs: one source (zoo name,
 * model file or config.json), choice options that apply to it, a known
 * name and preset. A config.json becomes its zoo family with preset
 * "hf:PATH" (kept in buf). Returns 0 or the exit status: 2 for a usage
 * error, 1 for an unreadable or bad config.json. */
static int check_model(ApprofSweepConfig *cfg, const CliModelArgs *m, char *buf, size_t len)
{
    ApprofZooOptions zo;
    ApprofGraph *probe = NULL;
    char err[1024] = "";
    int rc = cli_model_check_source("sweep", m);
    if (rc || cfg->model_file)
        return rc;
    if (m->hf_config) {
        ApprofHfConfig c;
        rc = approf_hf_config_load(m->hf_config, &c, err, sizeof err);
        if (rc < 0)
            return cli_fail("%s", err[0] ? err : approf_strerror(rc));
        if (c.note[0])
            fprintf(stderr, "approf: %s\n", c.note);
        snprintf(buf, len, "hf:%s", m->hf_config);
        cfg->model_name = c.zoo_name;
        cfg->preset = buf;
        /* the config's facts no placement shows, for apreport's launch
         * files (reports/launch_model.c); only for the config's own sizes:
         * --hidden or --heads change the heads and key/value heads */
        if (!cfg->zoo_hidden && !cfg->zoo_heads) {
            static char facts[320];
            snprintf(facts, sizeof facts, ",\"hf_hidden\":%d,\"hf_heads\":%d,\"hf_kv_heads\":%d,"
                     "\"hf_positions\":%d,\"hf_top_k\":%d,\"hf_rope_theta\":\"%.17g\","
                     "\"hf_rotary_pct\":\"%.17g\"", c.hidden, c.heads, c.kv_heads,
                     c.positions > 0 ? c.positions : 0, c.experts ? c.top_k : 0, c.rope_theta,
                     c.rotary_pct);
            cfg->hf_facts = facts;
        }
    }
    if (!cfg->model_name)
        cfg->model_name = APPROF_DEFAULT_MODEL;
    /* The same options the sweep builds with, for one sample. */
    memset(&zo, 0, sizeof zo);
    zo.preset = cfg->preset;
    zo.dataset = cfg->dataset;
    zo.attention = cfg->attention;
    zo.activation_fusion = cfg->activation_fusion;
    zo.eager_elementwise = cfg->eager_elementwise;
    zo.attention_unpad = cfg->attention_unpad;
    zo.dtype = approf_dtype_name(cfg->dtype);
    zo.batch = 1;
    zo.num_layers = cfg->zoo_num_layers;
    zo.hidden = cfg->zoo_hidden;
    zo.heads = cfg->zoo_heads;
    zo.seq_len = cfg->zoo_seq_len;
    zo.vocab = cfg->zoo_vocab;
    zo.mlm_positions = cfg->zoo_mlm_positions;
    zo.dropout = cfg->zoo_dropout;
    zo.depth = cfg->zoo_depth;
    zo.width_factor = cfg->zoo_width;
    rc = approf_zoo_build(cfg->model_name, &zo, &probe, err, sizeof err);
    approf_graph_free(&probe);
    if (rc == APPROF_EINVAL)
        return cli_usage_error("sweep", "%s", err[0] ? err : approf_strerror(rc));
    if (rc < 0)
        return cli_fail("%s", err[0] ? err : approf_strerror(rc));
    return 0;
}

/* The sweep's settings from the model and layer options. */
static void take_model_args(ApprofSweepConfig *cfg, const CliModelArgs *m)
{
    const ApprofZooOptions *z = &m->zoo;
    cfg->model_name = m->name;
    cfg->model_file = m->model_file;
    cfg->preset = z->preset;
    cfg->dataset = z->dataset;
    cfg->attention = z->attention;
    cfg->activation_fusion = z->activation_fusion;
    cfg->eager_elementwise = z->eager_elementwise;
    cfg->attention_unpad = z->attention_unpad;
    cfg->zoo_num_layers = z->num_layers;
    cfg->zoo_hidden = z->hidden;
    cfg->zoo_heads = z->heads;
    cfg->zoo_seq_len = z->seq_len;
    cfg->zoo_vocab = z->vocab;
    cfg->zoo_mlm_positions = z->mlm_positions;
    cfg->zoo_dropout = z->dropout;
    cfg->zoo_depth = z->depth;
    cfg->zoo_width = z->width_factor;
    cfg->manual_boundary = z->manual_boundaries;
    if (m->layers) {
        cfg->layers = m->layers;
        cfg->layers_default = 0;
    }
    if (m->manual_layers)
        cfg->layers = 0;
    cfg->eps = m->eps;
    if (m->dtype_set) {
        cfg->dtype = m->dtype;
        cfg->dtype_default = 0;
    }
}

/* --hardware (or the analytic default) that cannot be resolved: a name
 * that is neither built in nor a file is a bad option value (exit 2, as an
 * unknown model); a spec file that does not load is bad input (exit 1). */
static int bad_hardware(const char *spec, const char *herr)
{
    char names[512] = "";
    size_t n, at = 0;
    const ApprofHardwareSpec *b = approf_hardware_builtins(&n);
    if (access(spec, F_OK) == 0)
        return cli_fail("%s", herr[0] ? herr : "--hardware: cannot load the spec");
    for (size_t i = 0; i < n && at < sizeof names; i++) {
        int w = snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", b[i].name);
        at += w > 0 ? (size_t)w : 0;
    }
    return cli_bad_value("sweep", "hardware", spec, "a built-in spec (%s) or a readable spec file",
                         names);
}

/* Runs one sweep and reports it; the exit status. */
static int run_one(const ApprofSweepConfig *cfg, const ApprofSweepCallbacks *cb,
                   ApprofSweepSummary *sum, char *err, size_t errlen)
{
    Progress *prog = cb->ctx;
    int rc;
    prog->said_interrupt = 0;
    rc = approf_sweep_run(cfg, cb, sum, err, errlen);
    fflush(stdout);

    if (sum->mpi_rank > 0) { /* under mpirun rank 0 reports the sweep for all */
        if (rc == APPROF_EINTR) /* cb_interrupted said it */
            return APPROF_EXIT_SIGNAL(stop_signal ? (int)stop_signal : SIGINT);
        return rc < 0 ? cli_fail("%s", err[0] ? err : approf_strerror(rc)) : APPROF_EXIT_OK;
    }
    if (rc == APPROF_EINTR) {
        int sig = stop_signal ? (int)stop_signal : SIGINT;
        if (!prog->said_interrupt)  /* stopped before the sweep had its row */
            fprintf(stderr, "approf: interrupted by %s before the sweep started\n",
                    cli_stop_signal_name(sig));
        return APPROF_EXIT_SIGNAL(sig);
    }
    if (rc < 0)
        return cli_fail("%s", err[0] ? err : approf_strerror(rc));
    cli_sweep_print_summary(sum, cfg->db_path);
    return 0;
}

/* What the command line asks beyond cfg. */
typedef struct {
    CliModelArgs model;           /* the model and layer options */
    int backend;                  /* BACKEND_* */
    int quiet;
    int micro_set;                /* --micro-batches given */
    int64_t mbs[16];              /* --micro-batch-sizes */
    int n_mbs;
    int variants;                 /* --variants: 0 alpa, 1 all, 2 auto (the default);
                                   * VARIANTS_GIVEN: --memory-levels, --recompute or --zero */
} SweepArgs;

enum { VARIANTS_AUTO = 2, VARIANTS_GIVEN = 3 };

/* --variants auto: the whole space when the model's training state does
 * not fit one device (approf_sweep_needs_whole_space), else Alpa's plain
 * space with ZeRO 0-3 (APPROF_SWEEP_ZERO_SPACE: the sharded optimizer
 * every framework offers data parallelism); said either way (unless quiet).
 * A model or hardware the sweep will refuse leaves the plain space, for the
 * sweep's own message. */
static void resolve_variants(ApprofSweepConfig *cfg, int quiet)
{
    char err[512] = "";
    double state = 0.0, device = 0.0;
    int rc = approf_sweep_needs_whole_space(cfg, &state, &device, err, sizeof err);
    if (rc < 0)
        return; /* the sweep refuses this model or hardware itself, in its words */
    cfg->variants = rc ? APPROF_SWEEP_WHOLE_SPACE : APPROF_SWEEP_ZERO_SPACE;
    if (quiet)
        return;
    if (rc) {
        fprintf(stderr, "approf: the whole search space (--variants all: 3 memory levels, "
                "recomputation, ZeRO 0-3): the model's training state, %.1f GiB whole on one "
                "device (weights, gradients, Adam), does not fit its %.1f GiB, so data "
                "parallelism alone cannot train it; --variants alpa for Alpa's plain space "
                "(docs/variants.md)\n", state / 1073741824.0, device / 1073741824.0);
    } else {
        fprintf(stderr, "approf: Alpa's plain space with ZeRO 0-3 (the optimizer state, "
                "gradients and weights sharded over the data-parallel replicas): the model's "
                "training state, %.1f GiB whole on one device, fits its %.1f GiB; --variants "
                "all adds memory levels and recomputation, --variants alpa is Alpa's plain "
                "space (docs/variants.md)\n", state / 1073741824.0, device / 1073741824.0);
    }
}

/* One of the sweep's own options; 0 or the usage error's exit status. */
static int sweep_option(int opt, const char *arg, ApprofSweepConfig *cfg, SweepArgs *a)
{
    static const CliChoice modes[] = {{"composition", 0}, {"individual", 1}, {NULL, 0}};
    static const CliChoice spaces[] = {{"alpa", 0}, {"all", 1}, {"auto", 2}, {NULL, 0}};
    static const CliChoice zero3_schedules[] = {{"serial", APPROF_ZERO3_SERIAL},
                                                {"fsdp2", APPROF_ZERO3_FSDP2},
                                                {"deepspeed", APPROF_ZERO3_DEEPSPEED},
                                                {NULL, 0}};
    static const CliChoice solvers[] = {{"series-parallel", APPROF_ILP_SERIES_PARALLEL},
                                        {"cbc", APPROF_ILP_ELIMINATE_TREES_THEN_CBC},
                                        {NULL, 0}};
    char err[512] = "", names[256] = "";
    int64_t v;
    int rc = 0, k;
    switch (opt) {
    case 'm': a->model.name = arg; break;
    case OPT_TAKE_OVER: cfg->take_over = 1; break;
    case OPT_FP8: /* delayed scaling unless --fp8-recipe names another */
        if (!cfg->fp8)
            cfg->fp8 = COSTDB_FP8_DELAYED;
        break;
    case OPT_FP8_RECIPE: /* implies --fp8 (costdb/fp8_recipe.c) */
        cfg->fp8 = costdb_fp8_recipe_parse(arg);
        if (cfg->fp8 < 0)
            return cli_usage_error("sweep", "--fp8-recipe: unknown recipe '%s' (delayed, "
                                   "tensorwise, mxfp8, blockwise)", arg);
        break;
    case OPT_ZERO3_SCHEDULE:
        rc = cli_choice_value("sweep", "zero3-schedule", arg, zero3_schedules,
                              &cfg->zero3_schedule);
        break;
    case OPT_CLUSTER:
        if (cli_parse_mesh(arg, &cfg->cluster_hosts, &cfg->cluster_gpus) < 0)
            return cli_bad_value("sweep", "cluster", arg, "NxM (hosts x GPUs per host)");
        if (cfg->cluster_gpus & (cfg->cluster_gpus - 1))
            return cli_bad_value("sweep", "cluster", arg,
                                 "NxM with M, the GPUs per host, a power of two");
        if ((long long)cfg->cluster_hosts * cfg->cluster_gpus > APSOLVE_MAX_DEVICES)
            return cli_bad_value("sweep", "cluster", arg,
                                 "at most %d devices (what apsolve plans for)",
                                 APSOLVE_MAX_DEVICES);
        break;
    case OPT_BATCH:
        if (!(rc = cli_int_value("sweep", "batch", arg, 1, (int64_t)1 << 40, &v)))
            cfg->global_batch = v;
        break;
    case OPT_MICRO:
        if (!(rc = cli_int_value("sweep", "micro-batches", arg, 1, 1 << 20, &v))) {
            cfg->micro_batches = (int)v;
            a->micro_set = 1;
        }
        break;
    case OPT_SUBMESH:
        if (approf_submesh_space_parse(arg, &cfg->submesh_space, cfg->manual_submeshes,
                                       APPROF_MAX_SUBMESHES, &cfg->n_manual_submeshes, err,
                                       sizeof err) < 0)
            return strncmp(arg, "manual:", 7)
                       ? cli_bad_value("sweep", "submesh-space", arg, "one of power_of_two|"
                                       "small_power_of_two|all|manual:NxM,NxM,...")
                       : cli_bad_value("sweep", "submesh-space", arg,
                                       "manual:NxM,NxM,... (%s)", err);
        break;
    case OPT_LOGICAL:
        if (approf_logical_space_parse(arg, &cfg->logical_space) < 0) {
            for (int i = 0; i < 5; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         i ? "|" : "", approf_logical_space_name((ApprofLogicalSpace)i));
            return cli_bad_value("sweep", "logical-space", arg, "one of %s", names);
        }
        break;
    case OPT_MODE:
        rc = cli_choice_value("sweep", "profile-mode", arg, modes, &cfg->individual);
        break;
    case OPT_IMBALANCE:
        if (cli_parse_double(arg, 0, 1e9, &cfg->imbalance_tol) < 0)
            return cli_bad_value("sweep", "stage-imbalance-tolerance", arg, "a number >= 0");
        break;
    case OPT_HARDWARE: cfg->hardware = arg; break;
    case OPT_HARDWARE_ID:
        rc = cli_int_value("sweep", "hardware-id", arg, 1, INT64_MAX, &cfg->hardware_id);
        break;
    case OPT_BACKEND:
        if (!(rc = cli_choice_value("sweep", "backend", arg, backend_choices, &a->backend))) {
            cfg->backend = backend_choices[a->backend].name;
            cfg->backend_given = 1;
        }
        break;
    case OPT_DB: cfg->db_path = arg; break;
    case OPT_RESUME: cfg->resume = 1; break;
    case OPT_ALLOW_LARGE: cfg->allow_large = 1; break;
    case OPT_SKIP_UNFIT: cfg->skip_unfit = 1; break;
    case OPT_KEEP_DOMINATED: cfg->keep_dominated = 1; break;
    case OPT_SHARD: {
        char *end = NULL;
        long kk = strtol(arg, &end, 10);
        if (end == arg || *end != '/' || cli_parse_int(end + 1, 1, 1 << 20, &v) < 0 || kk < 0 ||
            kk >= v)
            return cli_bad_value("sweep", "shard", arg, "K/N with 0 <= K < N <= %d", 1 << 20);
        cfg->shard_k = (int)kk;
        cfg->shard_n = (int)v;
        break;
    }
    case OPT_QUIET: a->quiet = 1; break;
    case OPT_COMMIT_EVERY:
        if (!(rc = cli_int_value("sweep", "commit-every", arg, 1, 1 << 20, &v)))
            cfg->commit_every = (int)v;
        break;
    case OPT_WORKERS:
        if (!(rc = cli_int_value("sweep", "workers", arg, 1, APPROF_SWEEP_MAX_WORKERS, &v)))
            cfg->workers = (int)v;
        break;
    case OPT_MEMORY_LEVELS:
        a->variants = VARIANTS_GIVEN;
        if (!(rc = cli_int_value("sweep", "memory-levels", arg, 1, 8, &v)))
            cfg->variants.memory_levels = (int)v;
        break;
    case OPT_RECOMPUTE:
        a->variants = VARIANTS_GIVEN;
        if (parse_mask(arg, recompute_item, &cfg->variants.recompute_mask))
            return cli_bad_value("sweep", "recompute", arg, "a list of none, selective, full, op");
        break;
    case OPT_ZERO:
        a->variants = VARIANTS_GIVEN;
        if (parse_mask(arg, zero_item, &cfg->variants.zero_mask))
            return cli_bad_value("sweep", "zero", arg, "a list of 0, 1, 2, 3");
        break;
    case OPT_VARIANTS:
        if (!(rc = cli_choice_value("sweep", "variants", arg, spaces, &k))) {
            cfg->variants = k == 1 ? APPROF_SWEEP_WHOLE_SPACE : (CostdbVariantSpace){1, 1u, 1u};
            a->variants = (int)k;
        }
        break;
    case OPT_MBS:
        a->n_mbs = cli_parse_list(arg, size_item, a->mbs, (int)(sizeof a->mbs / sizeof a->mbs[0]));
        if (a->n_mbs <= 0)
            return cli_bad_value("sweep", "micro-batch-sizes", arg,
                                 "a list of at most 16 positive integers");
        /* one sweep per size: the same size twice is the same sweep twice */
        for (int q = 1; q < a->n_mbs; q++)
            for (int p = 0; p < q; p++)
                if (a->mbs[p] == a->mbs[q])
                    return cli_usage_error("sweep", "--micro-batch-sizes: %lld is given twice",
                                           (long long)a->mbs[q]);
        break;
    case OPT_SHARDING_SOLVER:
        if (!(rc = cli_choice_value("sweep", "sharding-solver", arg, solvers, &k)))
            cfg->sharding_method = k;
        break;
    default: return cli_usage_error("sweep", "unknown option");
    }
    return rc;
}

int approf_cmd_sweep(int argc, char **argv)
{
    ApprofSweepConfig cfg;
    ApprofSweepCallbacks cb;
    ApprofSweepSummary sum;
    Progress prog = {0};
    SweepArgs a;
    struct option opts[CLI_MAX_LONGOPTS];
    char err[1024] = "";
    int opt, li = -1, rc;
    size_t oom_total = 0;
    char hf_preset[4200];
    ApprofSweepFamily fam;
    struct sigaction sa, old_int, old_term, old_hup;

    memset(&cfg, 0, sizeof cfg);
    memset(&a, 0, sizeof a);
    a.variants = VARIANTS_AUTO;
    cli_model_args_init(&a.model);
    cfg.sharding_method = APPROF_ILP_SERIES_PARALLEL;
    cfg.db_path = APPROF_DEFAULT_DB;
    cfg.layers = APPROF_SWEEP_DEFAULT_LAYERS;
    cfg.layers_default = 1;
    cfg.eps = APPROF_DEFAULT_EPS;
    cfg.cluster_hosts = 0;  /* the sweep's default: the local GPUs with CUDA, else 1x8 */
    cfg.cluster_gpus = 0;
    cfg.micro_batches = 16;
    cfg.dtype = APPROF_F32;
    cfg.dtype_default = 1;  /* transformers: mixed precision (approf_zoo_trains_mixed) */
    cfg.hardware = NULL;    /* the local GPU's spec with CUDA, else APPROF_DEFAULT_HARDWARE */
    a.backend = BACKEND_AUTO;
    cfg.backend = backend_choices[a.backend].name;
    cfg.imbalance_tol = -1;
    cfg.shard_n = 1;
    cfg.tool_version = APPROF_VERSION;

    if (cli_longopts_join(opts, CLI_MAX_LONGOPTS, own_opts) < 0)
        return cli_fail("sweep: too many options for the option table");
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":m:h", opts, &li)) != -1) {
        const char *spelled = li >= 0 ? opts[li].name : NULL;
        li = -1;
        rc = cli_model_option("sweep", opt, optarg, spelled, &a.model);
        if (rc == CLI_MODEL_NOT_MINE) {
            switch (opt) {
            case 'h': cli_sweep_usage(); return 0;
            case ':':
                return cli_usage_error("sweep", "option '%s' needs a value", argv[optind - 1]);
            case '?': return cli_usage_error("sweep", "unknown option '%s'", argv[optind - 1]);
            default: rc = sweep_option(opt, optarg, &cfg, &a);
            }
        }
        if (rc)
            return rc;
    }
    if (optind < argc)
        return cli_usage_error("sweep", "unexpected argument '%s'", argv[optind]);
    if (cfg.fp8 && a.backend == BACKEND_CUDA)
        return cli_usage_error("sweep", "--fp8: priced by the analytic model only; the cuda "
                               "backend times no FP8 programs yet (--backend model)");
    if (cfg.zero3_schedule && a.backend == BACKEND_CUDA)
        return cli_usage_error("sweep", "--zero3-schedule: priced by the analytic model only; "
                               "the cuda backend adds every collective to the measured "
                               "kernels (--backend model)");
    if (cfg.fp8) { /* the analytic model prices FP8 (docs/fp8.md) */
        a.backend = BACKEND_MODEL;
        cfg.backend = backend_choices[a.backend].name;
    }
    if (a.model.model_only)
        return cli_usage_error("sweep", "--%s: a sweep cannot carry this model option yet; "
                               "write the model with 'approf model export ... --%s' and sweep "
                               "it with --model-file (and --batch)", a.model.model_only,
                               a.model.model_only);
    if (a.model.hf_config && strlen(a.model.hf_config) >= sizeof hf_preset - 4)
        return cli_usage_error("sweep", "--hf-config: path too long");
    take_model_args(&cfg, &a.model);
    prog.quiet = a.quiet;
    rc = check_model(&cfg, &a.model, hf_preset, sizeof hf_preset);
    if (rc)
        return rc;
    /* a host of the cluster cannot have more GPUs than the spec's hosts (the
     * spec: --hardware, else the analytic default) */
    const char *spec = cfg.hardware ? cfg.hardware
                                    : a.backend == BACKEND_MODEL ? APPROF_DEFAULT_HARDWARE : NULL;
    if (spec) {
        ApprofHardwareSpec hw;
        char herr[512] = "";
        if (approf_hardware_resolve(spec, &hw, herr, sizeof herr) < 0)
            return bad_hardware(spec, herr);
        const char *why = cfg.fp8 ? approf_fp8_recipe_refusal(&hw, cfg.fp8) : NULL;
        if (why)
            return cli_usage_error("sweep", "--fp8 --fp8-recipe %s: hardware '%s' has %s",
                                   costdb_fp8_recipe(cfg.fp8)->name, hw.name, why);
        if (hw.gpus_per_host > 0 && cfg.cluster_gpus > hw.gpus_per_host)
            return cli_usage_error("sweep", "--cluster %dx%d: hosts of %s have %d GPUs; give "
                                   "hosts x GPUs per host (e.g. --cluster %dx%d)",
                                   cfg.cluster_hosts, cfg.cluster_gpus, hw.name,
                                   hw.gpus_per_host,
                                   cfg.cluster_hosts * cfg.cluster_gpus / hw.gpus_per_host,
                                   hw.gpus_per_host);
    }

    if (a.variants == VARIANTS_AUTO)
        resolve_variants(&cfg, a.quiet);
    /* the sizes to profile: the sweep library's family rule */
    if (approf_sweep_family(&cfg, a.mbs, a.n_mbs, a.micro_set, &fam, err, sizeof err) < 0)
        return cli_usage_error("sweep", "%s", err);
    cfg.global_batch = fam.global_batch;
    if (fam.automatic) {
        char list[200] = "";
        size_t at = 0;
        for (int q = 0; q < fam.n && at < sizeof list; q++) {
            int w = snprintf(list + at, sizeof list - at, "%s%lld", q ? "," : "",
                             (long long)fam.sizes[q]);
            at += w > 0 ? (size_t)w : 0;
        }
        fprintf(stderr, "approf: one sweep per micro-batch size that matters for the global "
                "batch %lld: %s (1, 2, 4, 8 and 16 micro-batches; apsolve chooses among "
                "them; --micro-batches K profiles one)\n", (long long)fam.global_batch, list);
    }

    prog.tty = isatty(STDERR_FILENO);
    prog.started = costdb_monotonic_seconds();
    memset(&cb, 0, sizeof cb);
    cb.ctx = &prog;
    cb.submesh = cb_submesh;
    cb.entry = cb_entry;
    cb.progress = cb_progress;
    cb.notice = cb_notice;
    cb.stop = &stop_signal;
    cb.interrupted = cb_interrupted;
    prog.db_path = cfg.db_path;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup); /* a closed terminal: stop like SIGTERM */

    for (int q = 0; q < (fam.n ? fam.n : 1); q++) {
        if (fam.n) {
            cfg.micro_batches = approf_sweep_family_count(&fam, q);
            fprintf(stderr, "approf: micro-batch size %lld: global batch %lld in %d %s\n",
                    (long long)fam.sizes[q], (long long)fam.global_batch, cfg.micro_batches,
                    costdb_plural(cfg.micro_batches, "micro-batch", "micro-batches"));
        }
        rc = run_one(&cfg, &cb, &sum, err, sizeof err);
        if (rc)
            break;
        oom_total += sum.out_of_memory;
    }
    if (rc == 0 && sum.mpi_rank == 0)
        cli_sweep_oom_notice(&cfg, oom_total, fam.n ? fam.n : 1);
    if (rc == 0 && fam.n == 0 && a.micro_set)
        cli_sweep_one_size_notice(&cfg);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    return rc;
}
