/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Times the intra-op sharding pass alone on a sweep-shaped workload: a zoo
 * model cut into L equal operator ranges, every range (i, j) on the
 * submeshes and configs of a cluster (the whole-cluster submesh only for
 * (0, L-1)), and prints the time, the ILPs solved, cached and sent to CBC.
 * Usage: bench_sharding [model] [layers] [hosts] [gpus] [micro-batch size]
 * [auto|sp] (sp: series-parallel elimination before CBC).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int arg(int argc, char **argv, int i, int def)
{
    if (argc <= i)
        return def;
    char *end;
    long v = strtol(argv[i], &end, 10);
    return *end || v <= 0 ? def : (int)v;
}

int main(int argc, char **argv)
{
    const char *model = argc > 1 ? argv[1] : "resnet50";
    int L = arg(argc, argv, 2, 16), hosts = arg(argc, argv, 3, 2), gpus = arg(argc, argv, 4, 4);
    int mbs = arg(argc, argv, 5, 4);
    ApprofIlpMethod method = argc > 6 && !strcmp(argv[6], "sp") ? APPROF_ILP_SERIES_PARALLEL
                                                                : APPROF_ILP_ELIMINATE_TREES_THEN_CBC;
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    ApprofHardwareSpec hw;
    char err[256];
    memset(&o, 0, sizeof(o));
    o.batch = mbs;
    if (approf_zoo_build(model, &o, &g, err, sizeof(err)) || approf_hardware_builtin("a100-40g", &hw)) {
        fprintf(stderr, "bench_sharding: %s\n", err);
        return 1;
    }
    int n = (int)g->n_ops;
    if (L > n)
        L = n;
    int *b = malloc((size_t)L * sizeof(int)), *e = malloc((size_t)L * sizeof(int));
    if (!b || !e)
        return 1;
    for (int i = 0; i < L; i++) {
        b[i] = (int)((long)n * i / L);
        e[i] = (int)((long)n * (i + 1) / L);
    }
    ApprofLayering lay = {L, b, e, "bench"};
    ApprofShardContext *ctx = NULL;
    if (approf_shard_context_new(g, &lay, &hw, 16, &ctx))
        return 1;
    /* Submeshes (1,1), (1,2) ... (1,gpus), then (2,gpus) ... (hosts,gpus). */
    int shapes[16][2], ns = 0;
    for (int m = 1; m <= gpus; m *= 2)
        shapes[ns][0] = 1, shapes[ns++][1] = m;
    for (int h = 2; h <= hosts; h *= 2)
        shapes[ns][0] = h, shapes[ns++][1] = gpus;
    double t0 = now();
    size_t stages = 0, failures = 0;
    for (int s = ns - 1; s >= 0; s--) {
        int d = shapes[s][0] * shapes[s][1];
        int whole = shapes[s][0] == hosts && shapes[s][1] == gpus && hosts * gpus > 1;
        for (int mp = 1; mp <= gpus + 1; mp++) {
            int a, bb, force = 0;
            if (mp == gpus + 1) {
                a = d, bb = 1, force = -1;
            } else {
                if (mp > d || d % mp || mbs % (d / mp))
                    continue;
                a = d / mp, bb = mp;
            }
            for (int i = 0; i < L; i++)
                for (int j = i; j < L; j++) {
                    if (whole && (i != 0 || j != L - 1))
                        continue;
                    ApprofShardRequest req = {i, j, shapes[s][0], shapes[s][1], a, bb, force, method};
                    ApprofStageProgram p;
                    memset(&p, 0, sizeof(p));
                    if (approf_shard_stage(ctx, &req, &p, err, sizeof(err)))
                        failures++;
                    else
                        approf_stage_program_clear(&p);
                    stages++;
                }
        }
    }
    double t = now() - t0;
    ApprofShardStats st;
    approf_shard_context_stats(ctx, &st);
    printf("bench_sharding: %s, %d layers (%d ops), cluster %dx%d, micro-batch %d: %zu stages "
           "(%zu failed) in %.3f s (%s); ILPs solved %zu, cached %zu, with CBC %zu\n",
           model, L, n, hosts, gpus, mbs, stages, failures, t,
           method == APPROF_ILP_ELIMINATE_TREES_THEN_CBC ? "auto" : "series-parallel", st.solved, st.cached, st.cbc_runs);
    approf_shard_context_free(&ctx);
    approf_graph_free(&g);
    free(b);
    free(e);
    return 0;
}
