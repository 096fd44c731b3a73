/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for model files (approf_model_parse). Properties checked on
 * every graph the parser accepts: it validates, its JSON export parses back
 * to the same graph hash, its per-operator semantics (FLOPs, bytes, loop
 * space, kernels and their roofline time) are finite and non-negative, and
 * automatic and manual layering either fail cleanly or cover every operator
 * exactly once with finite layer statistics. A refused file leaves a
 * message. Small graphs are also swept end to end (approf_sweep_run on a
 * 1x2 cluster with the analytic backend), the path `approf sweep
 * --model-file` takes with a hostile file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_graph.h"
#include "graph.h"
#include "hardware.h"
#include "model/modelfile.h"
#include "sweep/sweep.h"

static void check_ops(const ApprofGraph *g)
{
    ApprofHardwareSpec hw;
    FUZZ_CHECK(approf_hardware_builtin("a100-40g", &hw) == 0);
    for (size_t op = 0; op < g->n_ops; op++) {
        ApprofIterSpace is;
        ApprofKernel k[APPROF_MAX_KERNELS];
        for (int phase = 0; phase < 2; phase++) {
            double f = approf_op_flops(g, (int)op, phase);
            double b = approf_op_bytes(g, (int)op, phase);
            FUZZ_CHECK(!isnan(f) && f >= 0);
            FUZZ_CHECK(!isnan(b) && b >= 0);
        }
        (void)approf_op_saved_mask(g, (int)op);
        if (approf_op_iter_space(g, (int)op, &is) != 0)
            continue;
        FUZZ_CHECK(is.n_iter >= 0 && is.n_iter <= APPROF_MAX_ITER);
        for (int phase = 0; phase < 2; phase++) {
            int n = approf_op_kernels(g, (int)op, is.size, phase, k, APPROF_MAX_KERNELS);
            FUZZ_CHECK(n <= APPROF_MAX_KERNELS);
            for (int i = 0; i < n; i++) {
                double t = approf_kernel_seconds(&hw, &k[i]);
                FUZZ_CHECK(!isnan(t) && t >= 0);
            }
        }
    }
}

static void sweep(const char *text)
{
    ApprofSweepConfig cfg;
    ApprofSweepCallbacks cb;
    ApprofSweepSummary sum;
    char path[1024], err[1024];
    int rc;

    snprintf(path, sizeof path, "%s/model.db", fuzz_tmpdir());
    remove(path);
    memset(&cfg, 0, sizeof cfg);
    memset(&cb, 0, sizeof cb);
    cfg.sharding_method = APPROF_ILP_SERIES_PARALLEL;
    cfg.db_path = path;
    cfg.model_file = fuzz_write_file("model.json", (const uint8_t *)text, strlen(text));
    cfg.layers = 2;
    cfg.eps = 0.5;
    cfg.cluster_hosts = 1;
    cfg.cluster_gpus = 2;
    cfg.micro_batches = 2;
    cfg.dtype = APPROF_F32;
    cfg.hardware = "a100-40g";
    cfg.backend = "model";
    cfg.imbalance_tol = -1;
    cfg.shard_n = 1;
    cfg.tool_version = "fuzz";
    rc = approf_sweep_run(&cfg, &cb, &sum, err, sizeof err);
    if (rc != 0)
        FUZZ_CHECK(err[0] != '\0');
    else
        FUZZ_CHECK(sum.entries > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ApprofGraph *g = NULL, *g2 = NULL;
    char err[1024] = "", h1[128], h2[128];
    char *text, *json = NULL;
    int rc;

    if (size > 1 << 17)
        return 0;
    text = fuzz_strndup(data, size);
    rc = approf_model_parse(text, "fuzz.json", &g, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0 && g == NULL);
        FUZZ_CHECK(err[0] != '\0');
        goto cleanup;
    }
    FUZZ_CHECK(g->n_ops >= 1);
    FUZZ_CHECK(approf_graph_validate(g, err, sizeof err) == 0);
    FUZZ_CHECK(approf_graph_num_params(g) >= 0);
    approf_graph_hash(g, h1, sizeof h1);
    FUZZ_CHECK(approf_model_to_json(g, &json) == 0);
    rc = approf_model_parse(json, "export.json", &g2, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "fuzz_modelfile: export does not load back: %s\n", err);
    FUZZ_CHECK(rc == 0);
    approf_graph_hash(g2, h2, sizeof h2);
    FUZZ_CHECK(strcmp(h1, h2) == 0);
    check_ops(g);

    fuzz_check_layerings(g);

    if (g->n_ops <= 48)
        sweep(text);
cleanup:
    approf_graph_free(&g);
    approf_graph_free(&g2);
    free(json);
    free(text);
    return 0;
}
