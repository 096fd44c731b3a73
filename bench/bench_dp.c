/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Speed of apsolve's exact stage/mesh search against the plain DP of
 * docs/alpa-semantics.md (tests/solver/oracle.c, the recurrence Alpa runs) on the same
 * random realistic instances, in one run. Where the plain DP would take
 * too long it is run for a few t_max values and its time extrapolated to
 * the number of t_max values it would need (printed as "est."). Prints
 * figures only; never fails on time. Usage: bench_dp [instances]
 * "bench_dp --make-db PATH L N M B" writes one such instance as a sweep of
 * a cost database instead, to measure the apsolve command itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "costdb.h"
#include "oracle.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct Case {
    const char *name;
    int layers, hosts, gpus, micro_batches;
    double mem_prob;
    long oracle_full_runs;
    double device_exponent;           /* cost ~ work / devices^e */            /* run the plain DP in full up to this many t_max */
} Case;

static void run_case(const Case *c, int instances)
{
    double ours = 0, oracle = 0, worst = 0;
    long evals = 0, cands = 0, runs_total = 0;
    int estimated = 0, mismatch = 0;
    uint64_t rng = 0x5EED0000ull + (uint64_t)c->layers * 131 + (uint64_t)c->hosts;
    for (int k = 0; k < instances; k++) {
        OracleGen g = {c->layers, c->hosts, c->gpus, 0.05, c->mem_prob, 2 * c->layers, 0, 0.25,
                       c->device_exponent};
        ApsolveProblem *p = NULL;
        ApsolveOptions o = {c->micro_batches, 0, 0, 0, 0};
        ApsolvePlan *pl = NULL;
        double t0, t1, opt, ot;
        long need, ran = 0;
        if (oracle_make_problem(&g, &rng, &p) != APSOLVE_OK) {
            fprintf(stderr, "bench_dp: cannot build the instance\n");
            exit(1);
        }
        t0 = now();
        if (apsolve_solve(p, &o, &pl) != APSOLVE_OK) {
            fprintf(stderr, "bench_dp: %s instance %d infeasible\n", c->name, k);
            apsolve_problem_free(&p);
            continue;
        }
        t1 = now() - t0;
        ours += t1;
        if (t1 > worst)
            worst = t1;
        evals += pl->dp_evaluations;
        cands += pl->candidates;
        need = oracle_training_runs(p, c->micro_batches, pl->cost);
        runs_total += need;
        t0 = now();
        if (need <= c->oracle_full_runs) {
            opt = oracle_training(p, c->micro_batches, 0, 0, &ran);
            ot = now() - t0;
            if (opt != pl->cost)
                mismatch++;
        } else {
            long sample = c->oracle_full_runs > 0 ? c->oracle_full_runs : 1;
            (void)oracle_training(p, c->micro_batches, 0, sample, &ran);
            ot = (now() - t0) / (double)(ran ? ran : 1) * (double)need;
            estimated = 1;
        }
        oracle += ot;
        apsolve_plan_free(&pl);
        apsolve_problem_free(&p);
    }
    printf("%-28s %8.3f ms (max %8.3f) %6.1f DPs/%7.0f cands | plain DP %s%10.3f ms "
           "(%6.0f t_max) | x%.0f%s\n",
           c->name, ours / instances * 1e3, worst * 1e3, (double)evals / instances,
           (double)cands / instances, estimated ? "est. " : "     ", oracle / instances * 1e3,
           (double)runs_total / instances, oracle / (ours > 0 ? ours : 1e-9),
           mismatch ? "  MISMATCH" : "");
}

/* Writes a random instance as a complete sweep (fwd = bwd = cost / 2,
 * memory statistics matching its max_n_succ_stages) into a new database. */
static int make_db(const char *path, int L, int hosts, int gpus, int B)
{
    OracleGen g = {L, hosts, gpus, 0.05, 0.3, 2 * L, 0, 0.25, 1.0};
    uint64_t rng = 0xDB;
    ApsolveProblem *p = NULL;
    CostdbSubmesh *subs = NULL;
    CostdbConfig *cfgs = NULL;
    CostdbEntry *e = NULL;
    CostdbSweep sw;
    Costdb *db = NULL;
    char err[256];
    size_t nc = 0, ne = 0;
    int rc = 1;
    const int64_t gib = 1LL << 30;

    if (oracle_make_problem(&g, &rng, &p) || costdb_open(path, 0, &db, err, sizeof err)) {
        fprintf(stderr, "bench_dp: cannot create %s\n", path);
        goto cleanup;
    }
    subs = calloc((size_t)p->num_submeshes, sizeof *subs);
    cfgs = calloc((size_t)p->num_submeshes * (size_t)p->num_configs, sizeof *cfgs);
    e = malloc(apsolve_problem_cells(p) * 2 * sizeof *e);
    if (!subs || !cfgs || !e)
        goto cleanup;
    for (int s = 0; s < p->num_submeshes; s++) {
        subs[s] = (CostdbSubmesh){s, p->submeshes[s].hosts, p->submeshes[s].gpus};
        for (int c = 0; c < p->num_configs; c++) {
            const ApsolveConfig *cf = &p->configs[s * p->num_configs + c];
            if (cf->valid)
                cfgs[nc++] = (CostdbConfig){s, c, cf->logical_a, cf->logical_b,
                                            cf->force_batch_dim};
        }
    }
    memset(&sw, 0, sizeof sw);
    snprintf(sw.name, sizeof sw.name, "bench L=%d %dx%d", L, hosts, gpus);
    sw.cluster_hosts = hosts;
    sw.cluster_gpus = gpus;
    sw.global_batch = B;
    sw.micro_batches = B;
    sw.num_layers = L;
    sw.status = COSTDB_SWEEP_COMPLETE;
    if (costdb_sweep_create(db, &sw, subs, (size_t)p->num_submeshes, cfgs, nc))
        goto cleanup;
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++)
            for (int s = 0; s < p->num_submeshes; s++)
                for (int c = 0; c < p->num_configs; c++) {
                    size_t idx = apsolve_index(p, i, j, s, c);
                    int m = p->max_n_succ_stages[idx];
                    if (!p->configs[s * p->num_configs + c].valid || isinf(p->cost[idx]))
                        continue;
                    for (int ph = 0; ph < 2; ph++) {
                        CostdbEntry *x = &e[ne++];
                        memset(x, 0, sizeof *x);
                        x->start_layer = i;
                        x->end_layer = j;
                        x->submesh_index = s;
                        x->config_index = c;
                        x->phase = ph ? COSTDB_BWD : COSTDB_FWD;
                        x->compute_cost = p->cost[idx] / 2;
                        /* avail 16 GiB, peak 2, initial 1, intermediate chosen so
                         * that floor(13 / inter) - 1 == m (0 = unlimited). */
                        x->available_memory = 16 * gib;
                        x->peak_memory = 2 * gib;
                        x->initial_size = gib;
                        x->intermediate_size = m == APSOLVE_UNBOUNDED ? 0
                                               : m < 0 ? 14 * gib : 13 * gib / (m + 2) + 1;
                        x->repeats = 1;
                        x->status = COSTDB_STATUS_OK;
                    }
                }
    if (costdb_entries_put(db, sw.id, e, ne, 0))
        goto cleanup;
    printf("wrote sweep %lld (%zu entries) to %s\n", (long long)sw.id, ne, path);
    rc = 0;
cleanup:
    if (rc && db)
        fprintf(stderr, "bench_dp: %s\n", costdb_errmsg(db));
    free(subs);
    free(cfgs);
    free(e);
    costdb_close(&db);
    apsolve_problem_free(&p);
    return rc;
}

int main(int argc, char **argv)
{
    static const Case cases[] = {
        {"L=8  1x4  B=8", 8, 1, 4, 8, 0.3, 100000, 1.0},
        {"L=16 2x8  B=8  (5x5)", 16, 2, 8, 8, 0.3, 100000, 1.0},
        {"L=16 2x8  B=64 (5x5)", 16, 2, 8, 64, 0.3, 100000, 1.0},
        {"L=16 2x8  B=8  d^0.5", 16, 2, 8, 8, 0.3, 100000, 0.5},
        {"L=32 4x8  B=32", 32, 4, 8, 32, 0.3, 3, 1.0},
        {"L=64 8x8  B=64", 64, 8, 8, 64, 0.3, 1, 1.0},
        {"L=64 8x8  B=64 no mem", 64, 8, 8, 64, 0.0, 1, 1.0},
        {"L=64 8x8  B=8", 64, 8, 8, 8, 0.3, 1, 1.0},
        {"L=64 8x8  B=64 d^0.5", 64, 8, 8, 64, 0.3, 1, 0.5},
        {"L=64 8x8  B=8  d^0.5", 64, 8, 8, 8, 0.3, 1, 0.5},
    };
    int instances = 5;
    struct rusage ru;
    if (argc == 7 && strcmp(argv[1], "--make-db") == 0) {
        long v[4];
        for (int k = 0; k < 4; k++) {
            char *end = NULL;
            v[k] = strtol(argv[3 + k], &end, 10);
            if (!end || *end || v[k] < 1 || v[k] > 1024) {
                fprintf(stderr, "usage: bench_dp --make-db PATH L N M B\n");
                return 2;
            }
        }
        return make_db(argv[2], (int)v[0], (int)v[1], (int)v[2], (int)v[3]);
    }
    if (argc > 1) {
        char *end = NULL;
        long v = strtol(argv[1], &end, 10);
        if (!end || *end || v < 1 || v > 1000) {
            fprintf(stderr, "usage: bench_dp [instances 1..1000]\n");
            return 2;
        }
        instances = (int)v;
    }
    printf("apsolve exact DP vs the plain DP of docs/alpa-semantics.md, mean of %d random instances\n",
           instances);
    printf("%-28s %-30s %-18s | %-35s | ratio\n", "case", "apsolve", "work", "plain DP");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        run_case(&cases[k], instances);
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        printf("peak RSS of this process: %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
    return 0;
}
