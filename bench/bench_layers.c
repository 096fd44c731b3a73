/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_layers: time building the GPT-3 39B graph (Alpa benchmark config,
 * 48 transformer layers) and clustering it into 32 layers with Alpa's auto
 * layer construction. Prints the figures; never fails on time.
 * Usage: bench_layers [LAYERS] [REPEATS]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "graph.h"
#include "model/zoo.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long arg(const char *s, long def)
{
    char *end;
    long v;
    if (!s)
        return def;
    errno = 0;
    v = strtol(s, &end, 10);
    return errno || *end || v <= 0 ? def : v;
}

int main(int argc, char **argv)
{
    ApprofZooOptions o = {.preset = "gpt3-39b"};
    int layers = (int)arg(argc > 1 ? argv[1] : NULL, 32), reps = (int)arg(argc > 2 ? argv[2] : NULL, 5);
    double best_build = 1e30, best_cluster = 1e30;
    size_t n_ops = 0;
    for (int r = 0; r < reps; r++) {
        ApprofGraph *g = NULL;
        ApprofLayering l;
        char err[256];
        double t0 = now(), t1, t2;
        int rc = approf_zoo_build("gpt", &o, &g, err, sizeof err);
        if (rc < 0) {
            fprintf(stderr, "bench_layers: %s\n", err);
            return 1;
        }
        t1 = now();
        rc = approf_layers_auto(g, layers, 0.5, &l);
        t2 = now();
        if (rc < 0) {
            fprintf(stderr, "bench_layers: layer construction: %s\n", approf_strerror(rc));
            approf_graph_free(&g);
            return 1;
        }
        n_ops = g->n_ops;
        if (t1 - t0 < best_build)
            best_build = t1 - t0;
        if (t2 - t1 < best_cluster)
            best_cluster = t2 - t1;
        approf_layering_free(&l);
        approf_graph_free(&g);
    }
    printf("gpt3-39b: %zu ops, %d layers, best of %d: build %.3f ms, cluster %.3f ms, total %.3f ms\n",
           n_ops, layers, reps, best_build * 1e3, best_cluster * 1e3, (best_build + best_cluster) * 1e3);
    return 0;
}
