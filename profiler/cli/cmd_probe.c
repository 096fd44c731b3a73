/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf probe [--db FILE] [--max-bytes N] [--gemm-grid LIST] [--quiet]:
 * measures this machine through the approf-cuda module (GEMM FLOP/s per
 * dtype, per square size and per shape of a grid, device-memory
 * bandwidth, NCCL collectives over the local 1xG device groups for message
 * sizes 1 KiB .. N) and stores a hardware row of kind 'measured' with its
 * curves and GEMM shape tables. Under mpirun (one rank per GPU, ranks host
 * by host) the collectives run over every HxG group of the ranks' GPUs and
 * rank 0 alone stores. Without the module, a driver or a device it prints
 * one line and exits 1; the database is only opened once a device was
 * found.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cuda/probe.h"
#include "cuda/probe_store.h"
#include "grow.h"
#include "sweep/sweep_mpi.h"

#define DEFAULT_DB "results.db" /* approf sweep's default: the sweep finds the curves */

typedef struct ProbeRun {
    const char *db_path;
    int quiet;
    int rank;                  /* under mpirun: only rank 0 opens and stores */
    Costdb *db;
    CostdbComputePoint *cp;
    size_t n_cp, cap_cp;
    CostdbCommPoint *mp;
    size_t n_mp, cap_mp;
    CostdbGemmPoint *gp;
    size_t n_gp, cap_gp;
} ProbeRun;

static void usage(FILE *f)
{
    fputs("Usage: approf probe [--db FILE] [--max-bytes N] [--gemm-grid LIST] [--quiet]\n"
          "Measure this machine's GPUs with the CUDA backend module: GEMM TFLOP/s per\n"
          "dtype, square and over a grid of shapes, device-memory bandwidth, and NCCL\n"
          "all-reduce, all-gather, reduce-scatter, all-to-all and send-recv over the\n"
          "local 1x2, 1x4, 1x8 device groups for message sizes 1 KiB to N; store a\n"
          "'measured' hardware row, its curves and its GEMM shape tables in the\n"
          "database, where approf sweep --backend cuda finds them.\n"
          "Under mpirun (one rank per GPU, placed host by host: --map-by slot), e.g.\n"
          "  mpirun -np 16 --host a:8,b:8 approf probe --db results.db\n"
          "the collectives run over every HxG group (1x2 ... 2x8) of the ranks' GPUs,\n"
          "NCCL bootstrapped over MPI, and rank 0 stores everything.\n\n"
          "Options:\n"
          "      --db FILE        database (default " DEFAULT_DB ")\n"
          "      --max-bytes N    largest message, bytes; K, M, G suffixes (default 1G)\n"
          "      --gemm-grid LIST GEMM shapes to time: every m x n x k with m, n and k\n"
          "                       from LIST, in bf16, f16 and f32 (default\n"
          "                       512,1024,2048,4096,8192,16384: 216 shapes per dtype,\n"
          "                       about 6 s on an H200); 'none' for none. A sweep on\n"
          "                       this hardware row prices GEMMs from them\n"
          "  -q, --quiet          no progress lines\n"
          "  -h, --help           show this help\n\n"
          "Exit status: 0 ok, 1 no CUDA device or a failure, 2 usage error.\n", f);
}

static int on_info(void *user, const ApprofProbeInfo *info)
{
    ProbeRun *r = user;
    if (r->rank > 0)
        return 0;
    if (!r->quiet)
        fprintf(stderr, "approf probe: %d x %s, %.1f GiB, driver %s, CUDA %s, NCCL %s\n",
                info->device_count, info->gpu_model, (double)info->device_memory / 1073741824.0,
                info->driver_version, info->runtime_version, info->nccl_version);
    return cli_open_db(r->db_path, 0, &r->db) < 0 ? APPROF_EXIT_FAIL : 0;
}

static int on_compute(void *user, const char *op, const char *dtype, int64_t size, double rate)
{
    ProbeRun *r = user;
    CostdbComputePoint *p;
    if (UTIL_GROW(r->cp, r->cap_cp, r->n_cp + 1) < 0)
        return cli_fail("out of memory");
    p = &r->cp[r->n_cp++];
    memset(p, 0, sizeof *p);
    snprintf(p->op, sizeof p->op, "%s", op);
    snprintf(p->dtype, sizeof p->dtype, "%s", dtype);
    p->size = size;
    p->rate = rate;
    return 0;
}

static int on_gemm_shape(void *user, const char *dtype, int64_t m, int64_t n, int64_t k,
                         double rate)
{
    ProbeRun *r = user;
    CostdbGemmPoint *p;
    if (UTIL_GROW(r->gp, r->cap_gp, r->n_gp + 1) < 0)
        return cli_fail("out of memory");
    p = &r->gp[r->n_gp++];
    memset(p, 0, sizeof *p);
    snprintf(p->dtype, sizeof p->dtype, "%s", dtype);
    p->m = m;
    p->n = n;
    p->k = k;
    p->rate = rate;
    return 0;
}

/* --gemm-grid: "none", or 1..APPROF_PROBE_MAX_GEMM_GRID distinct sizes in
 * 1..65536 separated by commas. 0 or -1. */
static int parse_grid(const char *s, ApprofProbeRequest *req)
{
    req->n_gemm_grid = 0;
    if (!strcmp(s, "none"))
        return 0;
    for (;;) {
        char *end = NULL;
        long v;
        if (*s < '0' || *s > '9')
            return -1;
        v = strtol(s, &end, 10);
        if (v < 1 || v > 65536 || req->n_gemm_grid == APPROF_PROBE_MAX_GEMM_GRID)
            return -1;
        for (int i = 0; i < req->n_gemm_grid; i++)
            if (req->gemm_grid[i] == v)
                return -1;
        req->gemm_grid[req->n_gemm_grid++] = (int)v;
        if (*end == '\0')
            return 0;
        if (*end != ',')
            return -1;
        s = end + 1;
    }
}

static int on_comm(void *user, ApprofCollKind kind, int hosts, int gpus, const char *dtype,
                   int64_t bytes, double seconds)
{
    ProbeRun *r = user;
    CostdbCommPoint *p;
    if (UTIL_GROW(r->mp, r->cap_mp, r->n_mp + 1) < 0)
        return cli_fail("out of memory");
    p = &r->mp[r->n_mp++];
    memset(p, 0, sizeof *p);
    snprintf(p->collective, sizeof p->collective, "%s", approf_coll_kind_name(kind));
    snprintf(p->group_desc, sizeof p->group_desc, "%dx%d", hosts, gpus);
    snprintf(p->dtype, sizeof p->dtype, "%s", dtype);
    p->bytes = bytes;
    p->seconds = seconds;
    return 0;
}

static void on_progress(void *user, const char *line)
{
    ProbeRun *r = user;
    if (!r->quiet)
        fprintf(stderr, "approf probe: %s\n", line);
}

int approf_cmd_probe(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"max-bytes", required_argument, NULL, 'm'},
        {"gemm-grid", required_argument, NULL, 'g'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const int gemm_sizes[] = {1024, 2048, 4096, 8192};
    static const int gemm_grid[] = {512, 1024, 2048, 4096, 8192, 16384};
    ProbeRun run;
    ApprofProbeRequest req;
    ApprofProbeInfo info;
    ApprofProcessGroup pg;
    ApprofSweepMpi *mpi = NULL;
    CostdbHardware hw;
    char err[512] = "";
    int c, rc, status = APPROF_EXIT_OK;

    memset(&run, 0, sizeof run);
    memset(&req, 0, sizeof req);
    run.db_path = DEFAULT_DB;
    req.min_bytes = 1024;
    req.max_bytes = (int64_t)1 << 30;
    req.n_gemm_grid = (int)(sizeof gemm_grid / sizeof gemm_grid[0]);
    memcpy(req.gemm_grid, gemm_grid, sizeof gemm_grid);
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case 'd': run.db_path = optarg; break;
        case 'm':
            if (cli_parse_bytes(optarg, 1, (int64_t)1 << 40, &req.max_bytes) < 0 ||
                req.max_bytes < req.min_bytes)
                return cli_usage_error("probe", "--max-bytes: expected a size of at least 1K, got '%s'",
                                       optarg);
            break;
        case 'g':
            if (parse_grid(optarg, &req) < 0)
                return cli_usage_error("probe", "--gemm-grid: expected 'none' or up to %d distinct"
                                       " sizes in 1..65536 separated by commas, got '%s'",
                                       APPROF_PROBE_MAX_GEMM_GRID, optarg);
            break;
        case 'q': run.quiet = 1; break;
        case 'h': usage(stdout); return APPROF_EXIT_OK;
        default: return cli_usage_error("probe", "unknown or incomplete option");
        }
    }
    if (optind < argc)
        return cli_usage_error("probe", "unexpected argument '%s'", argv[optind]);

    req.n_gemm_sizes = (int)(sizeof gemm_sizes / sizeof gemm_sizes[0]);
    memcpy(req.gemm_sizes, gemm_sizes, sizeof gemm_sizes);
    req.repeats = 5;
    req.user = &run;
    req.on_info = on_info;
    req.on_compute = on_compute;
    req.on_comm = on_comm;
    req.on_gemm_shape = on_gemm_shape;
    req.on_progress = on_progress;
    memset(&pg, 0, sizeof pg);
    if (approf_sweep_mpi_launched()) {
        if (approf_sweep_mpi_init(&mpi, &pg.rank, &pg.size, &pg.local_rank, &pg.local_size, err,
                                  sizeof err) < 0)
            return cli_fail("%s", err);
        pg.ctx = mpi;
        pg.bcast = approf_sweep_mpi_pg_bcast;
        pg.barrier = approf_sweep_mpi_pg_barrier;
        pg.agree = approf_sweep_mpi_pg_agree;
        req.pg = &pg;
        run.rank = pg.rank;
    }
    rc = approf_cuda_probe(&req, &info, err, sizeof err);
    if (run.rank > 0) {                 /* rank 0 reports and stores */
        if (rc < 0 && err[0])
            fprintf(stderr, "approf: rank %d: %s\n", run.rank, err);
        status = rc == 0 ? APPROF_EXIT_OK : APPROF_EXIT_FAIL;
        goto cleanup;
    }
    if (rc > 0) {                       /* a callback stopped it and said why */
        status = APPROF_EXIT_FAIL;
        goto cleanup;
    }
    if (rc < 0 && !run.db) {            /* no module, driver or device */
        status = cli_fail("%s", err[0] ? err : approf_strerror(rc));
        goto cleanup;
    }
    if (rc < 0) {
        fprintf(stderr, "approf: probe stopped: %s; storing the %zu points measured so far\n",
                err[0] ? err : approf_strerror(rc), run.n_cp + run.n_mp + run.n_gp);
        status = APPROF_EXIT_FAIL;
    }
    if (approf_probe_hardware_row(&info, run.cp, run.n_cp, run.mp, run.n_mp, &hw) < 0) {
        status = cli_fail("the probe's device description does not fit the hardware table");
        goto cleanup;
    }
    if (approf_probe_store_all(run.db, &hw, run.cp, run.n_cp, run.mp, run.n_mp, run.gp,
                               run.n_gp) < 0) {
        status = cli_fail("%s", costdb_errmsg(run.db));
        goto cleanup;
    }
    printf("hardware %lld: %s\n", (long long)hw.id, hw.fingerprint);
    printf("  gemm peak TFLOP/s: f32 %.1f, f16 %.1f, bf16 %.1f\n", hw.peak_flops_f32 / 1e12,
           hw.peak_flops_f16 / 1e12, hw.peak_flops_bf16 / 1e12);
    printf("  memory bandwidth: %.1f GB/s\n", hw.memory_bandwidth / 1e9);
    printf("  intra-host send-recv: %.1f GB/s, %.1f us\n", hw.intra_host_bandwidth / 1e9,
           hw.intra_host_latency * 1e6);
    if (hw.inter_host_bandwidth > 0)
        printf("  inter-host send-recv: %.1f GB/s, %.1f us\n", hw.inter_host_bandwidth / 1e9,
               hw.inter_host_latency * 1e6);
    {
        double slow;
        char which[32];
        if (approf_probe_overlap_slowdown(run.cp, run.n_cp, &slow, which, sizeof which))
            printf("  bf16 GEMM beside an NCCL %s: %.1f%% slower; for a spec file:\n"
                   "    overlap_gemm_slowdown = %.4f\n",
                   which, 100.0 * slow, slow);
    }
    printf("  stored %zu compute points, %zu GEMM shape points and %zu communication points in %s\n",
           run.n_cp, run.n_gp, run.n_mp, run.db_path);

cleanup:
    approf_sweep_mpi_finalize(&mpi);
    costdb_close(&run.db);
    free(run.cp);
    free(run.mp);
    free(run.gp);
    return status;
}
