/* SPDX-License-Identifier: Apache-2.0 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "model/zoo.h"
#include "sharding/sharding.h"
#include "zoo_fixture.h"

ApprofGraph *zoo_fixture_build(const char *model, const ApprofZooOptions *o)
{
    ApprofGraph *g = NULL;
    char err[256];
    int rc = approf_zoo_build(model, o, &g, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s: %s\n", model, err);
    CU_ASSERT_FATAL(rc == 0);
    return g;
}

ApprofGraph *zoo_fixture_mlp(int64_t batch, int hidden)
{
    ApprofZooOptions o;
    memset(&o, 0, sizeof o);
    o.batch = batch;
    o.hidden = hidden;
    o.dtype = "f16";
    return zoo_fixture_build("mlp", &o);
}

ApprofGraph *zoo_fixture_gpt(int layers)
{
    ApprofZooOptions o;
    memset(&o, 0, sizeof o);
    o.num_layers = layers;
    o.hidden = 1024;
    o.heads = 16;
    o.seq_len = 512;
    o.vocab = 1024;
    o.batch = 8;
    o.dtype = "f16";
    return zoo_fixture_build("gpt", &o);
}

ApprofGraph *zoo_fixture_fp8_gpt_layer(void)
{
    ApprofZooOptions o;
    memset(&o, 0, sizeof o);
    o.num_layers = 1;
    o.hidden = 1024;
    o.heads = 16;
    o.seq_len = 512;
    o.vocab = 2048 + 8;
    o.batch = 2;
    o.dtype = "bf16";
    return zoo_fixture_build("gpt", &o);
}

int zoo_fixture_shard_whole(const ApprofGraph *g, const ApprofHardwareSpec *hw, int gpus,
                            int recompute, int zero, ApprofStageProgram *p)
{
    ApprofLayering l;
    int begin = 0, end = (int)g->n_ops, rc;
    ApprofShardContext *ctx = NULL;
    ApprofShardRequest req;
    char err[256];
    memset(&l, 0, sizeof l);
    l.n_layers = 1;
    l.op_begin = &begin;
    l.op_end = &end;
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, hw, 1, &ctx) == 0);
    memset(&req, 0, sizeof req);
    req.mesh_hosts = req.logical_b = 1;
    req.mesh_gpus = req.logical_a = gpus;
    req.force_batch_dim = 0;
    req.method = APPROF_ILP_SERIES_PARALLEL;
    req.memory_levels = 1;
    req.variant.recompute = recompute;
    req.variant.zero = zero;
    memset(p, 0, sizeof *p);
    rc = approf_shard_stage(ctx, &req, p, err, sizeof err);
    if (rc)
        fprintf(stderr, "shard: %s\n", err);
    approf_shard_context_free(&ctx);
    return rc;
}
