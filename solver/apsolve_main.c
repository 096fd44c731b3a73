/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apsolve: the command line of the solver. Reads a sweep from the cost
 * database, finds the optimal stage/mesh plan (or evaluates a manual,
 * uniform or 3-D plan next to it), prints it as Alpa does plus a stage
 * table (or JSON) and stores it unless --no-store. Exit codes: 0 success,
 * 1 runtime failure, 2 usage error, 3 no feasible plan.
 */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "cliutil.h"
#include "config.h"
#include "costdb.h"
#include "outfile.h"
#include "schedule.h"
#include "session.h"


static void usage(FILE *out)
{
    fputs("Usage: apsolve [--db FILE] [options]\n"
          "Find the stage/mesh plan minimising Alpa's objective over a profiled sweep,\n"
          "or price a given plan, and report a full estimate beyond Alpa's objective.\n\n"
          "  --db FILE                 the cost database (default results.db, as approf sweep)\n"
          "  --sweep ID                sweep to plan (default: the newest)\n"
          "  --micro-batches B         micro-batches per iteration (default: the sweep's)\n"
          "  --memory-budget BYTES     per-device memory instead of available_memory\n"
          "                            (suffixes K, M, G, T = KiB ... TiB)\n"
          "  --memory-headroom P%|BYTES  memory the auto search leaves free on each device\n"
          "                            for allocator fragmentation (default 5%; 0: none);\n"
          "                            plans given by hand are warned about, not refused\n"
          "  --max-stages K            at most K pipeline stages\n"
          "  --inference               minimise stages x max stage cost (no memory term)\n"
          "  --format text|json        output format (default text)\n"
          "  --no-store                do not store the plan in the database\n"
          "  --quiet                   no warnings on stderr\n"
          "  --threads N               threads for the auto search's independent searches and\n"
          "                            the load (default: the online CPUs, at most 16; 1: one\n"
          "                            thread); the output is the same for every N\n"
          "  --stage-option auto|manual|uniform   (default auto: the exact optimum)\n"
          "  manual:  --forward-stage-layer-ids '[[0,1],[2,3]]' --submesh-shapes '[(1,4),(1,4)]'\n"
          "           --logical-shapes '[(4,1),(1,4)]' --option-dicts '[{},{\"force_batch_dim_to_mesh_dim\":0}]'\n"
          "           (logical shapes and option dicts optional: the cheapest config is used)\n"
          "  uniform: --num-stages K --submesh NxM [--logical AxB] [--option-dicts '[{...}]']\n"
          "  --objective alpa|full     alpa: Alpa's T over the plain configs; full (the default\n"
          "                            when every entry has its apply_cost): T + the largest\n"
          "                            stage apply-grad (gradient sync + optimizer), over every\n"
          "                            config and variant (memory level, recompute, ZeRO)\n"
          "  --global-batch G          samples per iteration (default: the sweep's); the auto\n"
          "                            search tries every micro-batch size b with a sweep of\n"
          "                            this model, hardware and cluster, B = G / b\n"
          "  --micro-batch-size b      only micro-batch size b (a sweep at b must exist)\n"
          "  --schedule 1f1b|gpipe|interleaved|zb-h1|interleaved-zb|zbv  pipeline schedule\n"
          "                            (default 1f1b; docs/solver.md, \"Schedules\")\n"
          "  --virtual-stages V        interleaved, interleaved-zb: V model chunks per device\n"
          "                            (V >= 2, default 2; zbv runs 2)\n"
          "  --parallel dp=D,tp=T,pp=P[,sp=0|1][,zero=0..3][,recompute=none|selective|full|op]\n"
          "             [,vpp=V][,mbs=M]  Megatron-style 3-D plan, printed next to the auto plan;\n"
          "                            each stage takes logical (dp, tp), batch forced, the given\n"
          "                            recompute and ZeRO stage and the cheapest memory level that\n"
          "                            fits; vpp: interleaved schedule; mbs: Megatron's\n"
          "                            micro-batch per replica (approf micro-batch = mbs x dp;\n"
          "                            default: the family's size with the lowest objective);\n"
          "                            sp is recorded (the sharding ILP picks it by itself);\n"
          "                            ep=E[,etp=T]: MoE experts on etp x ep of each stage's\n"
          "                            GPUs (etp default tp; docs/expert-parallel.md);\n"
          "                            cp=C[,cp_comm=p2p|a2a|a2a+p2p|all_gather]: context\n"
          "                            parallelism, the sequence split over C GPUs, world\n"
          "                            dp x tp x pp x C (docs/context-parallel.md);\n"
          "                            zero=3 with dp_shard=S: HSDP, ZeRO-3 within groups of S\n"
          "                            replicas, dp/S groups replicated; raf=0|1: FSDP2's\n"
          "                            reshard_after_forward (default 1; docs/hsdp.md);\n"
          "                            recompute=full with recompute_layers=K|auto: only the\n"
          "                            first K layers of each chunk recomputed (Megatron's\n"
          "                            --recompute-method block; docs/variants.md)\n"
          "                            offload=N: the first N layers' saved activations in\n"
          "                            host memory (pp=1; docs/variants.md)\n"
          "                            moe_a2a_overlap=1: Megatron-Core's MoE all-to-all\n"
          "                            overlap (ep >= 2, vpp >= 2 when pp > 1;\n"
          "                            docs/expert-parallel.md)\n"
          "  --framework megatron|deepspeed|torchtitan  instead of the auto plan, the best\n"
          "                            plan that framework runs as priced: every uniform\n"
          "                            dp x tp x pp [x vpp] layout with the micro-batch sizes,\n"
          "                            recomputation and ZeRO stages the database holds, priced\n"
          "                            as --parallel prices it; stored as that 3-D plan; exit 3\n"
          "                            with the closest reasons when none fits\n"
          "  --plan ID                 re-evaluate stored plan ID on its sweep (its micro-batches,\n"
          "                            budget and objective unless given); never stores\n"
          "  --batch B                 also re-evaluate the plan(s) at global batch B (e.g. the\n"
          "                            last, smaller batch of an epoch) without a new search:\n"
          "                            micro-batch = B / micro-batches; exact from a sweep of the\n"
          "                            same model, hardware and cluster at that micro-batch if\n"
          "                            the database has one, else costs and activation memory\n"
          "                            scaled linearly with the micro-batch (an estimate); says\n"
          "                            whether every stage still fits in memory and whether each\n"
          "                            forced data-parallel config's dp still divides the\n"
          "                            micro-batch (else INVALID, exit 3)\n"
          "  --help, --version\n\n"
          "Besides Alpa's T = sum of stage costs + (B-1) x max stage cost, text and JSON\n"
          "give a full estimate (\"full_cost\", \"breakdown\") that adds cross-stage\n"
          "transfers, the gradient all-reduce and the optimizer step, from the sweep's\n"
          "placements and hardware link speeds, per stage and in all (docs/solver.md).\n"
          "It is stored as the plan's full_cost (NULL when unavailable: imported table).\n"
          "Warnings (stderr): micro-batches < stages, micro-batches < 2 x stages.\n\n"
          "Exit status: 0 ok, 1 failure, 2 usage error, 3 no feasible plan, the given plan\n"
          "is infeasible, or it cannot run at --batch (invalid config, out of memory).\n",
          out);
}

/* rc, or APPROF_EXIT_FAIL when standard output could not be written (apsolve > /dev/full):
 * data that did not arrive is a failure, whatever was computed. */
static int stdout_status(int rc)
{
    char err[256];
    if (apsolve_stdout_check(err, sizeof err) < 0) {
        fprintf(stderr, "apsolve: %s\n", err);
        return APPROF_EXIT_FAIL;
    }
    return rc;
}

/* The library's messages, as the command prints them. */
static void print_notice(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "apsolve: %s\n", msg);
}

/* Runs the request, writes its outputs to standard output. The library
 * gives no command-line hints: after its usage errors (the message already
 * printed by print_notice) the command points to its --help. */
static int run(ApsolveRequest *a, const char *format)
{
    ApsolveSession *s = NULL;
    ApsolveError error;
    const ApsolveOutput *outs;
    size_t n;
    char err[256];
    int rc;
    a->error = &error;
    rc = apsolve_session_run(a, &s);
    if (rc) {
        if (error.code == APSOLVE_ERROR_USAGE)
            fputs("Try 'apsolve --help'\n", stderr);
        return rc;
    }
    outs = apsolve_session_outputs(s, &n);
    if (apsolve_write(stdout, format, outs, n)) {
        if (apsolve_stdout_check(err, sizeof err) < 0)
            fprintf(stderr, "apsolve: %s\n", err);
        else
            fprintf(stderr, "apsolve: cannot write the output\n");
        apsolve_session_free(&s);
        return APPROF_EXIT_FAIL;
    }
    rc = apsolve_session_finish(s, a);
    apsolve_session_free(&s);
    return rc;
}

int main(int argc, char **argv)
{
    enum { O_SWEEP = 256, O_MB, O_BUDGET, O_MAXST, O_INF, O_FMT, O_NOSTORE, O_STOPT, O_IDS,
           O_SUBS, O_LOGS, O_DICTS, O_PAR, O_NST, O_SUB, O_LOG, O_QUIET, O_VER, O_BATCH,
           O_PLAN, O_OBJ, O_GB, O_MBS, O_SCHED, O_VS, O_HEADROOM, O_FW, O_THREADS };
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},
        {"sweep", required_argument, NULL, O_SWEEP},
        {"micro-batches", required_argument, NULL, O_MB},
        {"memory-budget", required_argument, NULL, O_BUDGET},
        {"max-stages", required_argument, NULL, O_MAXST},
        {"memory-headroom", required_argument, NULL, O_HEADROOM},
        {"inference", no_argument, NULL, O_INF},
        {"format", required_argument, NULL, O_FMT},
        {"no-store", no_argument, NULL, O_NOSTORE},
        {"stage-option", required_argument, NULL, O_STOPT},
        {"forward-stage-layer-ids", required_argument, NULL, O_IDS},
        {"submesh-shapes", required_argument, NULL, O_SUBS},
        {"logical-shapes", required_argument, NULL, O_LOGS},
        {"option-dicts", required_argument, NULL, O_DICTS},
        {"parallel", required_argument, NULL, O_PAR},
        {"framework", required_argument, NULL, O_FW},
        {"num-stages", required_argument, NULL, O_NST},
        {"submesh", required_argument, NULL, O_SUB},
        {"logical", required_argument, NULL, O_LOG},
        {"quiet", no_argument, NULL, O_QUIET},
        {"threads", required_argument, NULL, O_THREADS},
        {"batch", required_argument, NULL, O_BATCH},
        {"plan", required_argument, NULL, O_PLAN},
        {"objective", required_argument, NULL, O_OBJ},
        {"global-batch", required_argument, NULL, O_GB},
        {"micro-batch-size", required_argument, NULL, O_MBS},
        {"schedule", required_argument, NULL, O_SCHED},
        {"virtual-stages", required_argument, NULL, O_VS},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VER},
        {NULL, 0, NULL, 0},
    };
    ApsolveRequest a;
    const char *format = "text";
    int c;
    int64_t v;

#ifdef __GLIBC__
    /* One solve allocates, fills and frees the same large short-lived arrays
     * many times over (a problem subset per cp/ep candidate, a clone per
     * recomputed-layer count: tens of MB each on a full-space sweep). By
     * default glibc serves each from a fresh mmap and unmaps it on free, so
     * every candidate pays the page faults again; kept on the heap (no mmap,
     * no trim: the process exits after one solve) they are faulted once.
     * glibc manual, "Malloc Tunable Parameters"; glibc's sysmalloc still
     * maps memory when the heap cannot grow. Measured in
     * docs/performance.md ("apsolve: kept memory"). */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
    memset(&a, 0, sizeof a);
    a.notice = print_notice;
    a.stage_option = "auto";
    a.objective = -1;
    a.opt.headroom_percent = APSOLVE_DEFAULT_HEADROOM_PERCENT;
    cli_set_program("apsolve");
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': a.db = optarg; break;
        case O_SWEEP:
            if (cli_parse_int(optarg, 1, INT32_MAX, &v))
                return cli_usage_error(NULL, "bad --sweep '%s'", optarg);
            a.sweep = v;
            break;
        case O_MB:
            if (cli_parse_int(optarg, 1, COSTDB_MAX_MICRO_BATCHES, &v))
                return cli_usage_error(NULL, "bad --micro-batches '%s' (expected an integer from "
                                       "1 to %d, as approf's)", optarg, COSTDB_MAX_MICRO_BATCHES);
            a.micro_batches = (int)v;
            break;
        case O_BUDGET:
            if (cli_parse_bytes(optarg, 1, INT64_MAX, &a.opt.memory_budget))
                return cli_usage_error(NULL, "bad --memory-budget '%s' (bytes, or with K/M/G)",
                                       optarg);
            break;
        case O_HEADROOM: {
            size_t len = strlen(optarg);
            char pct[32];
            a.opt.headroom_percent = 0;
            a.opt.headroom_bytes = 0;
            if (len > 1 && len < sizeof pct && optarg[len - 1] == '%') {
                memcpy(pct, optarg, len - 1);
                pct[len - 1] = '\0';
                if (cli_parse_double(pct, 0, 50, &a.opt.headroom_percent))
                    return cli_usage_error(NULL, "bad --memory-headroom '%s' (a percentage "
                                           "from 0%% to 50%%, or bytes with K/M/G)", optarg);
            } else if (cli_parse_bytes(optarg, 0, INT64_MAX, &a.opt.headroom_bytes)) {
                return cli_usage_error(NULL, "bad --memory-headroom '%s' (a percentage from "
                                       "0%% to 50%%, or bytes with K/M/G)", optarg);
            }
            break;
        }
        case O_MAXST:
            if (cli_parse_int(optarg, 1, APSOLVE_MAX_LAYERS, &v))
                return cli_usage_error(NULL, "bad --max-stages '%s'", optarg);
            a.opt.max_stages = (int)v;
            break;
        case O_INF: a.opt.inference = 1; break;
        case O_FMT: {
            int k;
            if (cli_choice_option(NULL, "format", optarg, cli_text_json, &k))
                return APPROF_EXIT_USAGE;
            format = optarg;
            break;
        }
        case O_NOSTORE: a.no_store = 1; break;
        case O_STOPT: {
            static const CliChoice options[] = {{"auto", 0}, {"manual", 1}, {"uniform", 2}, {NULL, 0}};
            int k;
            if (cli_choice_option(NULL, "stage-option", optarg, options, &k))
                return APPROF_EXIT_USAGE;
            a.stage_option = optarg;
            break;
        }
        case O_IDS: a.layer_ids = optarg; break;
        case O_SUBS: a.submeshes = optarg; break;
        case O_LOGS: a.logicals = optarg; break;
        case O_DICTS: a.dicts = optarg; break;
        case O_PAR: {
            char perr[200], msg[512];
            if (apsolve_parallel_parse(optarg, &a.par, perr, sizeof perr)) {
                snprintf(msg, sizeof msg, "bad --parallel '%s': %s (expected dp=N,tp=N,pp=N"
                         "[,sp=0|1][,zero=0..3][,recompute=none|selective|full|op][,vpp=V][,mbs=M]"
                         "[,ep=E][,etp=T][,cp=C][,cp_comm=p2p|a2a|a2a+p2p|all_gather][,dp_shard=S]"
                         "[,raf=0|1][,recompute_layers=K|auto][,offload=N][,moe_a2a_overlap=0|1])",
                         optarg, perr);
                return cli_usage_error(NULL, "%s", msg);
            }
            a.parallel = optarg;
            break;
        }
        case O_FW: a.framework = optarg; break; /* checked by the session */
        case O_OBJ: {
            static const CliChoice objectives[] = {{"alpa", APSOLVE_OBJECTIVE_ALPA},
                                                   {"full", APSOLVE_OBJECTIVE_FULL}, {NULL, 0}};
            int k;
            if (cli_choice_option(NULL, "objective", optarg, objectives, &k))
                return APPROF_EXIT_USAGE;
            a.objective = k;
            break;
        }
        case O_GB:
            if (cli_parse_int(optarg, 1, COSTDB_MAX_BATCH, &v))
                return cli_usage_error(NULL, "bad --global-batch '%s' (an integer in 1..%lld,"
                                       " COSTDB_MAX_BATCH)", optarg, (long long)COSTDB_MAX_BATCH);
            a.global_batch = v;
            break;
        case O_MBS:
            if (cli_parse_int(optarg, 1, 1L << 30, &v))
                return cli_usage_error(NULL, "bad --micro-batch-size '%s' (a positive integer)",
                                       optarg);
            a.micro_batch_size = v;
            break;
        case O_SCHED: {
            int sc = apsolve_schedule_parse(optarg);
            if (sc < 0)
                return cli_usage_error(NULL, "bad --schedule '%s' (1f1b, gpipe, interleaved, "
                                       "zb-h1, interleaved-zb or zbv)", optarg);
            a.schedule = sc;
            a.schedule_set = 1;
            break;
        }
        case O_VS:
            if (cli_parse_int(optarg, 2, 1024, &v))
                return cli_usage_error(NULL, "bad --virtual-stages '%s' (an integer in 2..1024)",
                                       optarg);
            a.virtual_stages = (int)v;
            break;
        case O_NST:
            if (cli_parse_int(optarg, 1, APSOLVE_MAX_LAYERS, &v))
                return cli_usage_error(NULL, "bad --num-stages '%s'", optarg);
            a.num_stages = (int)v;
            break;
        case O_SUB:
            if (cli_parse_mesh(optarg, &a.submesh_hosts, &a.submesh_gpus))
                return cli_usage_error(NULL, "bad --submesh '%s' (expected NxM)", optarg);
            break;
        case O_LOG:
            if (cli_parse_mesh(optarg, &a.logical_a, &a.logical_b))
                return cli_usage_error(NULL, "bad --logical '%s' (expected AxB)", optarg);
            break;
        case O_QUIET: a.quiet = 1; break;
        case O_THREADS:
            if (cli_parse_int(optarg, 1, 1024, &v))
                return cli_usage_error(NULL, "bad --threads '%s' (expected an integer from 1 "
                                       "to 1024)", optarg);
            a.threads = (int)v;
            break;
        case O_BATCH:
            if (cli_parse_int(optarg, 1, 1L << 40, &v))
                return cli_usage_error(NULL, "bad --batch '%s' (a positive integer)", optarg);
            a.batch = v;
            break;
        case O_PLAN:
            if (cli_parse_int(optarg, 1, INT32_MAX, &v))
                return cli_usage_error(NULL, "bad --plan '%s' (a plan id)", optarg);
            a.plan = v;
            break;
        case 'h': usage(stdout); return stdout_status(0);
        case O_VER: printf("apsolve %s\n", APPROF_VERSION); return stdout_status(0);
        default:
            if (optopt && optopt < 256)
                return cli_usage_error(NULL, "unknown or incomplete option '-%s'",
                                       (char[]){(char)optopt, 0});
            return cli_usage_error(NULL, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error(NULL, "unexpected argument '%s'", argv[optind]);
    if (!a.db)
        a.db = "results.db"; /* approf sweep's default */
    if (a.plan > 0 && (a.parallel || strcmp(a.stage_option, "auto")))
        return cli_usage_error(NULL, "--plan cannot be combined with --parallel or "
                               "--stage-option");
    if (a.schedule == APSOLVE_SCHEDULE_ZBV && a.virtual_stages > 2)
        return cli_usage_error(NULL, "--schedule zbv runs exactly 2 virtual stages per device");
    if ((a.schedule == APSOLVE_SCHEDULE_INTERLEAVED ||
         a.schedule == APSOLVE_SCHEDULE_INTERLEAVED_ZB || a.schedule == APSOLVE_SCHEDULE_ZBV) &&
        a.virtual_stages < 2)
        a.virtual_stages = 2; /* as apreport: two model chunks per device */
    if (a.virtual_stages >= 2 && a.schedule != APSOLVE_SCHEDULE_INTERLEAVED &&
        a.schedule != APSOLVE_SCHEDULE_INTERLEAVED_ZB && a.schedule != APSOLVE_SCHEDULE_ZBV)
        return cli_usage_error(NULL, "--virtual-stages needs --schedule interleaved or "
                               "interleaved-zb");
    if (a.parallel && strcmp(a.stage_option, "auto"))
        return cli_usage_error(NULL, "--parallel cannot be combined with --stage-option %s",
                               a.stage_option);
    return stdout_status(run(&a, format));
}
