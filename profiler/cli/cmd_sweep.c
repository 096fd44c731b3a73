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

#include "clock.h"
#include "cli.h"
#include "config.h"
#include "hardware.h"
#include "model/hfconfig.h"
#include "model/zoo.h"
#include "sweep/sweep.h"
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
} Progress;

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

static void cb_progress(void *ctx, size_t done, size_t total)
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
    eta = done ? el * (double)(total - done) / (double)done : 0;
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

static void usage(void)
{
    fputs(
        "Usage: approf sweep --model NAME | --model-file FILE | --hf-config FILE [OPTIONS]\n"
        "Profiles every (layer range, submesh, autosharding config, fwd/bwd) tuple of a\n"
        "model into the cost database; each entry is written as soon as it exists.\n\n"
        "Model:\n"
        "  --model NAME             zoo model (approf models), default resnet50\n"
        "  --model-file FILE        a model file (schemas/model-format.md)\n"
        "  --hf-config FILE         the model of a Hugging Face config.json (llama, mistral,\n"
        "                           mixtral, qwen2, deepseek, gpt2, bert; docs/models.md)\n"
        "  --preset NAME            zoo preset (gpt: gpt2-small ... gpt3-39b; bert: base|large;\n"
        "                           llama: llama-3-8b ...; approf models lists them)\n"
        "  --dataset NAME           zoo dataset (resnet50: imagenet|cifar10; swin: imagenet|cifar100)\n"
        "  --attention flash|eager  gpt, bert and llama families: one fused (flash) attention\n"
        "                           operator that keeps no S x S scores, or the eager\n"
        "                           matmul/softmax chain (default: eager for gpt and bert,\n"
        "                           flash for llama)\n"
"  --mlm-positions P        bert: the masked-LM head scores P positions per sequence\n"
        "                           (the masked ones; NVIDIA's BERT pre-training: 20 at seq\n"
        "                           128, 80 at 512), not all of them (default: all)\n"
        "  --dropout P              bert: its four dropouts at rate P (BERT trains with 0.1);\n"
        "                           gpt: after the embeddings, on the attention probabilities,\n"
        "                           the attention output and the MLP output (Megatron-LM's\n"
        "                           default 0.1) (default 0: none)\n"
        "  --num-layers N --hidden N --heads N --seq-len N --vocab N --depth N --width N\n"
        "  --manual-boundaries      boundary markers (mlp: in the middle; transformers and\n"
        "                           swin: after every block); also --manual-boundary\n"
        "Layers:\n"
        "  --layers L               automatic layer construction into L layers (default 16)\n"
        "  --eps E                  layer FLOP imbalance allowance (default 0.5)\n"
        "  --manual-layers          layers from the model's boundary markers\n"
        "Cluster and batch:\n"
        "  --cluster NxM            N hosts x M GPUs (default: the local GPUs with CUDA,\n"
        "                           1 x the GPU count; mpirun: hosts x GPUs; else 1x8)\n"
        "  --batch B                global batch size (default: the model's)\n"
        "  --micro-batches K        micro-batches per iteration: one sweep at K\n"
        "                           (default: one sweep each at 1, 2, 4, 8 and 16\n"
        "                           micro-batches, those that divide the batch)\n"
        "  --micro-batch-sizes b1,b2,..  one sweep per micro-batch size b (samples per\n"
        "                           pipeline micro-batch), each with --batch/b micro-batches\n"
        "                           (apsolve then chooses the size for the global batch)\n"
        "  --dtype f32|f16|bf16     compute dtype; f16/bf16 train in mixed precision (f32\n"
        "                           master weights and Adam state). Default: the language\n"
        "                           transformers (gpt, bert, the llama family, the MoE\n"
        "                           models, --hf-config) bf16 where the GPU has bf16 tensor\n"
        "                           cores, f16 on V100-class GPUs, else f32; other models f32\n"
        "Search space:\n"
        "  --submesh-space S        power_of_two (default) | small_power_of_two | all |\n"
        "                           manual:1x1,1x2,...\n"
        "  --logical-space S        single_node_model_parallel (default) | all |\n"
        "                           same_as_physical | data_parallel_only | model_parallel_only\n"
        "  --profile-mode M         composition (default) | individual\n"
        "  --variants alpa|all      stage variants (docs/variants.md); alpa (default): Alpa's\n"
        "                           plain space; all: --memory-levels 3 --recompute\n"
        "                           none,selective,full --zero 0,1,2,3\n"
        "  --memory-levels K        points of each stage's time/memory Pareto set of\n"
        "                           sharding solutions, 1..8 (default 1: Alpa's optimum)\n"
        "  --recompute LIST         activation recomputation variants among none,selective,full\n"
        "                           (default none; selective only where there is attention)\n"
        "  --zero LIST              ZeRO stages among 0,1,2,3 across data-parallel replicas\n"
        "                           (default 0)\n"
        "  --stage-imbalance-tolerance T   skip ranges whose FLOP share differs from their\n"
        "                           device share by more than (1+T) (default: off)\n"
        "Backend and database:\n"
        "  --hardware NAME|FILE     hardware spec: the analytic backend's model, and the\n"
        "                           alpha-beta collectives where no measured curves exist\n"
        "                           (default: the built-in matching the local GPU, else a100-40g)\n"
        "  --backend auto|model|cuda  auto: CUDA when a GPU is present, else the analytic model\n"
        "  --db FILE                cost database (default results.db)\n"
        "  --resume                 continue the unfinished sweep with the same inputs\n"
        "                           (starts one when there is none)\n"
        "  --allow-large            run a sweep of more than 2000000 tuples (counted before it\n"
        "                           starts; above 100000 a notice says how many)\n"
        "  --take-over              resume a sweep another process holds (one on another\n"
        "                           host that is gone; a holder on this host that is gone\n"
        "                           is taken over without it)\n"
        "  --shard K/N              profile only tuples k with k % N == K (combine: approf merge;\n"
        "                           under mpirun -np R the ranks share the tuples by themselves)\n"
        "  --sharding-solver S      series-parallel (default): exact elimination of chains,\n"
        "                           trees and series-parallel parts, CBC for the rest;\n"
        "                           cbc: only chains/trees eliminated, the rest to CBC\n"
        "  --commit-every N         tuples per database transaction (default 64; a batch\n"
        "                           is also committed once it is 50 ms old)\n"
        "  --workers N              profiling threads, 1..256 (default: 1 with the analytic\n"
        "                           backend, one per local GPU with cuda, each on its own\n"
        "                           device): each has its own backend, sharding context and\n"
        "                           ILP cache; entries are written in the same order, with\n"
        "                           the same values, whatever N\n"
        "  --quiet                  no per-entry lines, no progress\n"
        "  -h, --help               this text\n\n"
        "Exit status: 0 done, 1 failure, 2 usage, 130/143/129 interrupted by\n"
        "SIGINT/SIGTERM/SIGHUP (resume with --resume).\n",
        stdout);
}

enum {
    OPT_MODEL_FILE = 256, OPT_PRESET, OPT_DATASET, OPT_NUM_LAYERS, OPT_HIDDEN, OPT_HEADS,
    OPT_SEQ_LEN, OPT_VOCAB, OPT_DEPTH, OPT_WIDTH, OPT_MANUAL_BOUNDARY, OPT_LAYERS, OPT_EPS,
    OPT_MANUAL_LAYERS, OPT_CLUSTER, OPT_BATCH, OPT_MICRO, OPT_DTYPE, OPT_SUBMESH, OPT_LOGICAL,
    OPT_MODE, OPT_IMBALANCE, OPT_HARDWARE, OPT_BACKEND, OPT_DB, OPT_RESUME, OPT_ALLOW_LARGE, OPT_SHARD,
    OPT_QUIET, OPT_COMMIT_EVERY, OPT_SHARDING_SOLVER, OPT_WORKERS, OPT_MEMORY_LEVELS,
    OPT_RECOMPUTE, OPT_ZERO, OPT_VARIANTS, OPT_MBS, OPT_HF_CONFIG, OPT_ATTENTION, OPT_TAKE_OVER,
    OPT_MLM_POSITIONS, OPT_DROPOUT,
};

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

static const struct option long_opts[] = {
    {"model", required_argument, NULL, 'm'},
    {"model-file", required_argument, NULL, OPT_MODEL_FILE},
    {"preset", required_argument, NULL, OPT_PRESET},
    {"attention", required_argument, NULL, OPT_ATTENTION},
    {"mlm-positions", required_argument, NULL, OPT_MLM_POSITIONS},
    {"dropout", required_argument, NULL, OPT_DROPOUT},
    {"take-over", no_argument, NULL, OPT_TAKE_OVER},
    {"dataset", required_argument, NULL, OPT_DATASET},
    {"num-layers", required_argument, NULL, OPT_NUM_LAYERS},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"heads", required_argument, NULL, OPT_HEADS},
    {"seq-len", required_argument, NULL, OPT_SEQ_LEN},
    {"vocab", required_argument, NULL, OPT_VOCAB},
    {"depth", required_argument, NULL, OPT_DEPTH},
    {"width", required_argument, NULL, OPT_WIDTH},
    {"manual-boundary", no_argument, NULL, OPT_MANUAL_BOUNDARY},
    {"manual-boundaries", no_argument, NULL, OPT_MANUAL_BOUNDARY},
    {"hf-config", required_argument, NULL, OPT_HF_CONFIG},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"eps", required_argument, NULL, OPT_EPS},
    {"manual-layers", no_argument, NULL, OPT_MANUAL_LAYERS},
    {"cluster", required_argument, NULL, OPT_CLUSTER},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"micro-batches", required_argument, NULL, OPT_MICRO},
    {"micro-batch-sizes", required_argument, NULL, OPT_MBS},
    {"memory-levels", required_argument, NULL, OPT_MEMORY_LEVELS},
    {"recompute", required_argument, NULL, OPT_RECOMPUTE},
    {"zero", required_argument, NULL, OPT_ZERO},
    {"variants", required_argument, NULL, OPT_VARIANTS},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"submesh-space", required_argument, NULL, OPT_SUBMESH},
    {"logical-space", required_argument, NULL, OPT_LOGICAL},
    {"profile-mode", required_argument, NULL, OPT_MODE},
    {"stage-imbalance-tolerance", required_argument, NULL, OPT_IMBALANCE},
    {"hardware", required_argument, NULL, OPT_HARDWARE},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"db", required_argument, NULL, OPT_DB},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"allow-large", no_argument, NULL, OPT_ALLOW_LARGE},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"commit-every", required_argument, NULL, OPT_COMMIT_EVERY},
    {"sharding-solver", required_argument, NULL, OPT_SHARDING_SOLVER},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int int_opt(const char *name, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (cli_parse_int(v, lo, hi, out) < 0) {
        cli_usage_error("sweep", "--%s: '%s' is not an integer in [%lld, %lld]", name, v,
                        (long long)lo, (long long)hi);
        return -1;
    }
    return 0;
}

/* Checks the model choice before anything runs: one source (zoo name,
 * model file or config.json), choice options that apply to it, a known
 * name and preset. A config.json becomes its zoo family with preset
 * "hf:PATH" (kept in buf). Returns 0 or the exit status: 2 for a usage
 * error, 1 for an unreadable or bad config.json. */
static int check_model(ApprofSweepConfig *cfg, const char *hf, char *buf, size_t len)
{
    ApprofZooOptions zo;
    ApprofGraph *probe = NULL;
    char err[1024] = "";
    int rc;
    if ((cfg->model_name != NULL) + (cfg->model_file != NULL) + (hf != NULL) > 1)
        return cli_usage_error("sweep", "give one of --model, --model-file and --hf-config");
    if (cfg->model_file) {
        if (cfg->preset || cfg->dataset || cfg->attention || cfg->zoo_mlm_positions ||
            cfg->zoo_dropout != 0)
            return cli_usage_error("sweep", "--%s does not apply to --model-file",
                                   cfg->preset ? "preset" : cfg->dataset ? "dataset"
                                   : cfg->attention ? "attention"
                                   : cfg->zoo_mlm_positions ? "mlm-positions" : "dropout");
        return 0;
    }
    if (hf) {
        ApprofHfConfig c;
        if (cfg->preset)
            return cli_usage_error("sweep", "--preset and --hf-config both choose the sizes: give one");
        rc = approf_hf_config_load(hf, &c, err, sizeof err);
        if (rc < 0)
            return cli_fail("%s", err[0] ? err : approf_strerror(rc));
        snprintf(buf, len, "hf:%s", hf);
        cfg->model_name = c.zoo_name;
        cfg->preset = buf;
    }
    if (!cfg->model_name)
        cfg->model_name = "resnet50";
    /* The same options the sweep builds with, for one sample. */
    memset(&zo, 0, sizeof zo);
    zo.preset = cfg->preset;
    zo.dataset = cfg->dataset;
    zo.attention = cfg->attention;
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

/* Runs one sweep and reports it; the exit status. */
static int run_one(const ApprofSweepConfig *cfg, const ApprofSweepCallbacks *cb,
                   ApprofSweepSummary *sum, char *err, size_t errlen)
{
    int rc;
    rc = approf_sweep_run(cfg, cb, sum, err, errlen);
    fflush(stdout);

    if (sum->mpi_rank > 0) { /* under mpirun rank 0 reports the sweep for all */
        if (rc == APPROF_EINTR) {
            int sig = stop_signal ? (int)stop_signal : SIGINT;
            /* mpirun may stop rank 0 (SIGTERM) as soon as this rank exits,
             * so this rank names its own signal too */
            fprintf(stderr, "approf: rank %d interrupted by %s; rank 0 marks the sweep "
                    "interrupted\n", sum->mpi_rank,
                    sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "SIGINT");
            return 128 + sig;
        }
        return rc < 0 ? cli_fail("%s", err[0] ? err : approf_strerror(rc)) : 0;
    }
    if (rc == APPROF_EINTR) {
        int sig = stop_signal ? (int)stop_signal : SIGINT;
        fprintf(stderr,
                "approf: interrupted by %s: sweep %lld has %zu entries committed in %s.\n"
                "approf: resume with the same command and --resume\n",
                sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "SIGINT",
                (long long)sum->sweep_id,
                sum->entries + sum->existing, cfg->db_path);
        return 128 + sig;
    }
    if (rc < 0)
        return cli_fail("%s", err[0] ? err : approf_strerror(rc));
    cli_sweep_print_summary(sum, cfg->db_path);
    return 0;
}

int approf_cmd_sweep(int argc, char **argv)
{
    ApprofSweepConfig cfg;
    ApprofSweepCallbacks cb;
    ApprofSweepSummary sum;
    Progress prog = {0};
    char err[1024] = "";
    int64_t v;
    int opt, rc, manual_layers = 0, n_mbs = 0, micro_set = 0, auto_sizes = 0;
    size_t oom_total = 0;
    const char *hf = NULL;
    char hf_preset[4200];
    int64_t mbs[16];
    int64_t gb = 0;
    struct sigaction sa, old_int, old_term, old_hup;

    memset(&cfg, 0, sizeof cfg);
    cfg.sharding_method = APPROF_ILP_SERIES_PARALLEL;
    cfg.db_path = "results.db";
    cfg.layers = 16;
    cfg.layers_default = 1;
    cfg.eps = 0.5;
    cfg.cluster_hosts = 0;  /* the sweep's default: the local GPUs with CUDA, else 1x8 */
    cfg.cluster_gpus = 0;
    cfg.micro_batches = 16;
    cfg.dtype = APPROF_F32;
    cfg.dtype_default = 1;  /* transformers: mixed precision (approf_zoo_trains_mixed) */
    cfg.hardware = NULL;    /* the local GPU's built-in spec with CUDA, else a100-40g */
    cfg.backend = "auto";
    cfg.imbalance_tol = -1;
    cfg.shard_n = 1;
    cfg.tool_version = APPROF_VERSION;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":m:h", long_opts, NULL)) != -1) {
        switch (opt) {
        case 'm': cfg.model_name = optarg; break;
        case OPT_MODEL_FILE: cfg.model_file = optarg; break;
        case OPT_PRESET: cfg.preset = optarg; break;
        case OPT_TAKE_OVER: cfg.take_over = 1; break;
        case OPT_ATTENTION: {
            static const CliChoice kinds[] = {{"flash", 0}, {"eager", 1}, {NULL, 0}};
            int k;
            if (cli_choice_option("sweep", "attention", optarg, kinds, &k))
                return CLI_EXIT_USAGE;
            cfg.attention = optarg;
            break;
        }
        case OPT_DATASET: cfg.dataset = optarg; break;
        case OPT_HF_CONFIG: hf = optarg; break;
        case OPT_NUM_LAYERS:
            if (int_opt("num-layers", optarg, 1, APPROF_ZOO_MAX_LAYERS, &v)) return 2;
            cfg.zoo_num_layers = (int)v;
            break;
        case OPT_HIDDEN:
            if (int_opt("hidden", optarg, 1, 1 << 20, &v)) return 2;
            cfg.zoo_hidden = (int)v;
            break;
        case OPT_HEADS:
            if (int_opt("heads", optarg, 1, 4096, &v)) return 2;
            cfg.zoo_heads = (int)v;
            break;
        case OPT_SEQ_LEN:
            if (int_opt("seq-len", optarg, 1, 1 << 24, &v)) return 2;
            cfg.zoo_seq_len = (int)v;
            break;
        case OPT_VOCAB:
            if (int_opt("vocab", optarg, 1, 1 << 24, &v)) return 2;
            cfg.zoo_vocab = (int)v;
            break;
        case OPT_MLM_POSITIONS:
            if (int_opt("mlm-positions", optarg, 1, 1 << 24, &v)) return 2;
            cfg.zoo_mlm_positions = (int)v;
            break;
        case OPT_DROPOUT:
            if (cli_parse_double(optarg, 0, 0.99, &cfg.zoo_dropout) < 0)
                return cli_usage_error("sweep", "--dropout needs a probability in 0..0.99, got '%s'", optarg);
            break;
        case OPT_DEPTH:
            if (int_opt("depth", optarg, 1, 10000, &v)) return 2;
            cfg.zoo_depth = (int)v;
            break;
        case OPT_WIDTH:
            if (int_opt("width", optarg, 1, 1024, &v)) return 2;
            cfg.zoo_width = (int)v;
            break;
        case OPT_MANUAL_BOUNDARY: cfg.manual_boundary = 1; break;
        case OPT_LAYERS:
            if (int_opt("layers", optarg, 1, 4096, &v)) return 2;
            cfg.layers = (int)v;
            cfg.layers_default = 0;
            break;
        case OPT_EPS:
            if (cli_parse_double(optarg, 0, 1e6, &cfg.eps) < 0)
                return cli_usage_error("sweep", "--eps: '%s' is not a number >= 0", optarg);
            break;
        case OPT_MANUAL_LAYERS: manual_layers = 1; break;
        case OPT_CLUSTER:
            if (cli_parse_mesh(optarg, &cfg.cluster_hosts, &cfg.cluster_gpus) < 0)
                return cli_usage_error("sweep", "--cluster: '%s' is not NxM", optarg);
            if (cfg.cluster_gpus & (cfg.cluster_gpus - 1))
                return cli_usage_error("sweep", "--cluster %s: GPUs per host (M) must be a "
                                       "power of two", optarg);
            /* what apsolve can plan for (APSOLVE_MAX_DEVICES in solver/apsolve.h) */
            if ((long long)cfg.cluster_hosts * cfg.cluster_gpus > 65536)
                return cli_usage_error("sweep", "--cluster %s: %lld devices; apsolve plans for "
                                       "at most 65536", optarg,
                                       (long long)cfg.cluster_hosts * cfg.cluster_gpus);
            break;
        case OPT_BATCH:
            if (int_opt("batch", optarg, 1, (int64_t)1 << 40, &v)) return 2;
            cfg.global_batch = v;
            break;
        case OPT_MICRO:
            if (int_opt("micro-batches", optarg, 1, 1 << 20, &v)) return 2;
            cfg.micro_batches = (int)v;
            micro_set = 1;
            break;
        case OPT_DTYPE:
            if (approf_dtype_parse(optarg, &cfg.dtype) < 0)
                return cli_usage_error("sweep", "--dtype: '%s' is not f32, f16 or bf16", optarg);
            cfg.dtype_default = 0;
            break;
        case OPT_SUBMESH:
            if (approf_submesh_space_parse(optarg, &cfg.submesh_space, cfg.manual_submeshes,
                                           APPROF_MAX_SUBMESHES, &cfg.n_manual_submeshes, err,
                                           sizeof err) < 0)
                return cli_usage_error("sweep", "--submesh-space: %s", err);
            break;
        case OPT_LOGICAL:
            if (approf_logical_space_parse(optarg, &cfg.logical_space) < 0)
                return cli_usage_error("sweep", "--logical-space: unknown space '%s'", optarg);
            break;
        case OPT_MODE: {
            static const CliChoice modes[] = {{"composition", 0}, {"individual", 1}, {NULL, 0}};
            if (cli_choice_option("sweep", "profile-mode", optarg, modes, &cfg.individual))
                return CLI_EXIT_USAGE;
            break;
        }
        case OPT_IMBALANCE:
            if (cli_parse_double(optarg, 0, 1e9, &cfg.imbalance_tol) < 0)
                return cli_usage_error("sweep", "--stage-imbalance-tolerance: '%s' is not a "
                                       "number >= 0", optarg);
            break;
        case OPT_HARDWARE: cfg.hardware = optarg; break;
        case OPT_BACKEND: {
            static const CliChoice backends[] = {{"auto", 0}, {"model", 1}, {"cuda", 2}, {NULL, 0}};
            int k;
            if (cli_choice_option("sweep", "backend", optarg, backends, &k))
                return CLI_EXIT_USAGE;
            cfg.backend = optarg;
            break;
        }
        case OPT_DB: cfg.db_path = optarg; break;
        case OPT_RESUME: cfg.resume = 1; break;
        case OPT_ALLOW_LARGE: cfg.allow_large = 1; break;
        case OPT_SHARD: {
            char *end = NULL;
            long a = strtol(optarg, &end, 10);
            if (end == optarg || *end != '/')
                return cli_usage_error("sweep", "--shard: '%s' is not K/N", optarg);
            if (int_opt("shard", end + 1, 1, 1 << 20, &v)) return 2;
            if (a < 0 || a >= v)
                return cli_usage_error("sweep", "--shard %s: K must be in [0, N)", optarg);
            cfg.shard_k = (int)a;
            cfg.shard_n = (int)v;
            break;
        }
        case OPT_QUIET: prog.quiet = 1; break;
        case OPT_COMMIT_EVERY:
            if (int_opt("commit-every", optarg, 1, 1 << 20, &v)) return 2;
            cfg.commit_every = (int)v;
            break;
        case OPT_WORKERS:
            if (int_opt("workers", optarg, 1, APPROF_SWEEP_MAX_WORKERS, &v)) return 2;
            cfg.workers = (int)v;
            break;
        case OPT_MEMORY_LEVELS:
            if (int_opt("memory-levels", optarg, 1, 8, &v)) return 2;
            cfg.memory_levels = (int)v;
            break;
        case OPT_RECOMPUTE:
            if (parse_mask(optarg, recompute_item, &cfg.recompute_mask))
                return cli_usage_error("sweep", "--recompute: '%s' is not a list of none, "
                                       "selective, full", optarg);
            break;
        case OPT_ZERO:
            if (parse_mask(optarg, zero_item, &cfg.zero_mask))
                return cli_usage_error("sweep", "--zero: '%s' is not a list of 0, 1, 2, 3",
                                       optarg);
            break;
        case OPT_VARIANTS: {
            static const CliChoice spaces[] = {{"alpa", 0}, {"all", 1}, {NULL, 0}};
            int all;
            if (cli_choice_option("sweep", "variants", optarg, spaces, &all))
                return CLI_EXIT_USAGE;
            cfg.memory_levels = all ? 3 : 1;
            cfg.recompute_mask = all ? 7u : 1u;
            cfg.zero_mask = all ? 15u : 1u;
            break;
        }
        case OPT_MBS:
            n_mbs = cli_parse_list(optarg, size_item, mbs, (int)(sizeof mbs / sizeof mbs[0]));
            if (n_mbs <= 0)
                return cli_usage_error("sweep", "--micro-batch-sizes: '%s' is not a list of "
                                       "positive integers (at most 16)", optarg);
            /* one sweep per size: the same size twice is the same sweep twice */
            for (int q = 1; q < n_mbs; q++)
                for (int p = 0; p < q; p++)
                    if (mbs[p] == mbs[q])
                        return cli_usage_error("sweep", "--micro-batch-sizes: %lld is given "
                                               "twice", (long long)mbs[q]);
            break;
        case OPT_SHARDING_SOLVER: {
            static const CliChoice solvers[] = {{"series-parallel", APPROF_ILP_SERIES_PARALLEL},
                                                {"cbc", APPROF_ILP_ELIMINATE_TREES_THEN_CBC},
                                                {NULL, 0}};
            int k;
            if (cli_choice_option("sweep", "sharding-solver", optarg, solvers, &k))
                return CLI_EXIT_USAGE;
            cfg.sharding_method = k;
            break;
        }
        case 'h': usage(); return 0;
        case ':': return cli_usage_error("sweep", "option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("sweep", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("sweep", "unexpected argument '%s'", argv[optind]);
    if (hf && strlen(hf) >= sizeof hf_preset - 4)
        return cli_usage_error("sweep", "--hf-config: path too long");
    rc = check_model(&cfg, hf, hf_preset, sizeof hf_preset);
    if (rc)
        return rc;
    /* a host of the cluster cannot have more GPUs than the spec's hosts (the
     * spec: --hardware, else the analytic default) */
    const char *spec = cfg.hardware ? cfg.hardware
                                    : !strcmp(cfg.backend, "model") ? "a100-40g" : NULL;
    if (spec) {
        ApprofHardwareSpec hw;
        char herr[512] = "";
        if (approf_hardware_resolve(spec, &hw, herr, sizeof herr) < 0) {
            /* a name that is neither built in nor a file is a bad option
             * value (exit 2, as an unknown model); a spec file that does not
             * load is bad input (exit 1) */
            if (access(spec, F_OK) != 0)
                return cli_usage_error("sweep", "--hardware: %s",
                                       herr[0] ? herr : "cannot load the spec");
            return cli_fail("%s", herr[0] ? herr : "--hardware: cannot load the spec");
        }
        if (hw.gpus_per_host > 0 && cfg.cluster_gpus > hw.gpus_per_host)
            return cli_usage_error("sweep", "--cluster %dx%d: hosts of %s have %d GPUs; give "
                                   "hosts x GPUs per host (e.g. --cluster %dx%d)",
                                   cfg.cluster_hosts, cfg.cluster_gpus, hw.name,
                                   hw.gpus_per_host,
                                   cfg.cluster_hosts * cfg.cluster_gpus / hw.gpus_per_host,
                                   hw.gpus_per_host);
    }
    if (manual_layers)
        cfg.layers = 0;

    if (n_mbs > 0) {
        if (approf_sweep_global_batch(&cfg, &gb, err, sizeof err) < 0)
            return cli_usage_error("sweep", "--micro-batch-sizes: %s", err);
        for (int q = 0; q < n_mbs; q++)
            if (gb % mbs[q])
                return cli_usage_error("sweep", "--micro-batch-sizes: %lld does not divide the "
                                       "global batch %lld", (long long)mbs[q], (long long)gb);
        cfg.global_batch = gb;
    } else if (!micro_set && cfg.shard_n <= 1 && !approf_sweep_mpi_launched() &&
               (cfg.global_batch > 0 || !cfg.model_file) &&
               approf_sweep_global_batch(&cfg, &gb, err, sizeof err) == 0 && gb > 0) {
        /* the default: the micro-batch sizes that matter for this batch
         * (docs/solver.md, "Micro-batch sizes"), 16 micro-batches last */
        n_mbs = costdb_micro_batch_family(gb, mbs, (int)(sizeof mbs / sizeof mbs[0]));
        auto_sizes = n_mbs > 1;
        if (n_mbs == 1)
            n_mbs = 0;
        cfg.global_batch = gb;
        if (auto_sizes) {
            char list[200] = "";
            size_t at = 0;
            for (int q = 0; q < n_mbs && at < sizeof list; q++) {
                int w = snprintf(list + at, sizeof list - at, "%s%lld", q ? "," : "",
                                 (long long)mbs[q]);
                at += w > 0 ? (size_t)w : 0;
            }
            fprintf(stderr, "approf: one sweep per micro-batch size that matters for the global "
                    "batch %lld: %s (1, 2, 4, 8 and 16 micro-batches; apsolve chooses among "
                    "them; --micro-batches K profiles one)\n", (long long)gb, list);
        }
    } else if (cfg.global_batch > 0 || !cfg.model_file) {
        /* an impossible split is a usage error, as in apsolve */
        if (approf_sweep_global_batch(&cfg, &gb, err, sizeof err) < 0)
            return cli_usage_error("sweep", "%s", err);
        if (gb % cfg.micro_batches)
            return cli_usage_error("sweep", "--batch %lld is not divisible by --micro-batches %d",
                                   (long long)gb, cfg.micro_batches);
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

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup); /* a closed terminal: stop like SIGTERM */

    for (int q = 0; q < (n_mbs ? n_mbs : 1); q++) {
        if (n_mbs) {
            cfg.micro_batches = (int)(gb / mbs[q]);
            fprintf(stderr, "approf: micro-batch size %lld: global batch %lld in %d "
                    "micro-batches\n", (long long)mbs[q], (long long)gb, cfg.micro_batches);
        }
        rc = run_one(&cfg, &cb, &sum, err, sizeof err);
        if (rc)
            break;
        oom_total += sum.out_of_memory;
    }
    if (rc == 0 && sum.mpi_rank == 0)
        cli_sweep_oom_notice(&cfg, oom_total, n_mbs ? n_mbs : 1);
    if (rc == 0 && n_mbs == 0 && micro_set)
        cli_sweep_one_size_notice(&cfg);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    return rc;
}
