/* SPDX-License-Identifier: Apache-2.0 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"
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

void zoo_fixture_same_bits(double x, double y)
{
    CU_ASSERT(!memcmp(&x, &y, sizeof x));
}

/* d equals b field by field: the signature's two parts, the request's
 * fields, kernels (a head's first), collectives, memory, placements. */
void zoo_fixture_same_program(const ApprofStageProgram *d, const ApprofStageProgram *b,
                              int placements)
{
    CU_ASSERT_STRING_EQUAL(d->signature, b->signature);
    CU_ASSERT(!memcmp(d->signature_body, b->signature_body, sizeof d->signature_body));
    CU_ASSERT_EQUAL(d->force_batch_dim, b->force_batch_dim);
    CU_ASSERT_EQUAL(d->start_layer, b->start_layer);
    CU_ASSERT_EQUAL(d->op_begin, b->op_begin);
    CU_ASSERT_EQUAL(d->logical_a, b->logical_a);
    zoo_fixture_same_bits(d->ilp_objective, b->ilp_objective);
    CU_ASSERT(costdb_variant_equal(d->variant, b->variant));
    for (int ph = 0; ph < 2; ph++) {
        CU_ASSERT_FATAL(approf_phase_kernel_count(d, ph) == approf_phase_kernel_count(b, ph));
        for (size_t i = 0; i < approf_phase_kernel_count(b, ph); i++)
            CU_ASSERT(!memcmp(approf_phase_kernel(d, ph, i), approf_phase_kernel(b, ph, i),
                              sizeof(ApprofKernel)));
        CU_ASSERT_FATAL(d->n_colls[ph] == b->n_colls[ph]);
        if (d->n_colls[ph])
            CU_ASSERT(!memcmp(d->colls[ph], b->colls[ph], d->n_colls[ph] * sizeof *d->colls[ph]));
        CU_ASSERT_EQUAL(d->invar_size[ph], b->invar_size[ph]);
        CU_ASSERT_EQUAL(d->outvar_size[ph], b->outvar_size[ph]);
        CU_ASSERT_EQUAL(d->temp_buffer_size[ph], b->temp_buffer_size[ph]);
        CU_ASSERT_EQUAL(d->temp_activation_size[ph], b->temp_activation_size[ph]);
        CU_ASSERT_EQUAL(d->peak_memory[ph], b->peak_memory[ph]);
        CU_ASSERT_EQUAL(d->donated_size[ph], b->donated_size[ph]);
    }
    CU_ASSERT_EQUAL(d->intermediate_size, b->intermediate_size);
    CU_ASSERT_EQUAL(d->initial_size, b->initial_size);
    CU_ASSERT_EQUAL(d->param_bytes, b->param_bytes);
    CU_ASSERT_EQUAL(d->n_apply_colls, b->n_apply_colls);
    CU_ASSERT(!memcmp(d->apply_colls, b->apply_colls, sizeof d->apply_colls));
    zoo_fixture_same_bits(d->optimizer_bytes, b->optimizer_bytes);
    zoo_fixture_same_bits(d->optimizer_elements, b->optimizer_elements);
    CU_ASSERT(!memcmp(&d->grad_sync, &b->grad_sync, sizeof d->grad_sync));
    if (!placements)
        return;
    CU_ASSERT_FATAL(d->n_placements == b->n_placements);
    for (size_t i = 0; i < d->n_placements; i++) {
        const ApprofPlacement *x = &d->placements[i], *y = &b->placements[i];
        CU_ASSERT_EQUAL(x->tensor, y->tensor);
        CU_ASSERT_EQUAL(x->role, y->role);
        CU_ASSERT(!memcmp(x->mesh_axis_of_dim, y->mesh_axis_of_dim, sizeof x->mesh_axis_of_dim));
        CU_ASSERT_EQUAL(x->local_bytes, y->local_bytes);
        CU_ASSERT_STRING_EQUAL(x->spec, y->spec);
    }
}

void zoo_fixture_two_layers(ZooTwoLayers *s, const ApprofGraph *g)
{
    memset(s, 0, sizeof *s);
    s->begin[0] = 0;
    s->end[0] = s->begin[1] = (int)g->n_ops / 2;
    s->end[1] = (int)g->n_ops;
    s->l.n_layers = 2;
    s->l.op_begin = s->begin;
    s->l.op_end = s->end;
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &s->hw) == 0);
}

void zoo_fixture_small_options(ApprofZooOptions *o, const char *dtype)
{
    memset(o, 0, sizeof *o);
    o->num_layers = 2;
    o->hidden = 128;
    o->heads = 4;
    o->seq_len = 64;
    o->vocab = 512;
    o->batch = 2;
    o->dtype = dtype;
}

int zoo_fixture_same_as_fresh(ApprofShardContext *ctx, const ApprofGraph *g,
                              const ZooTwoLayers *s, const ApprofShardRequest *req)
{
    return zoo_fixture_same_as_fresh_with(ctx, g, s, req, 1);
}

int zoo_fixture_same_as_fresh_with(ApprofShardContext *ctx, const ApprofGraph *g,
                                   const ZooTwoLayers *s, const ApprofShardRequest *req,
                                   int placements)
{
    ApprofShardContext *fresh = NULL;
    ApprofStageProgram p, q;
    char err[256];
    int rc, built = 0;
    memset(&p, 0, sizeof p);
    memset(&q, 0, sizeof q);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s->l, &s->hw, 4, &fresh) == 0);
    /* a level past the stage's Pareto set: the same refusal from both */
    rc = approf_shard_stage(ctx, req, &p, err, sizeof err);
    CU_ASSERT_EQUAL(rc, approf_shard_stage(fresh, req, &q, err, sizeof err));
    if (!rc) {
        built = 1;
        zoo_fixture_same_program(&p, &q, placements);
    }
    approf_stage_program_clear(&p);
    approf_stage_program_clear(&q);
    approf_shard_context_free(&fresh);
    return built;
}

ApprofShardRequest zoo_fixture_request(int layer0, int layer1, int a, int b, int force, int levels,
                                       int level, int recompute)
{
    ApprofShardRequest req;
    memset(&req, 0, sizeof req);
    req.start_layer = layer0;
    req.end_layer = layer1;
    req.mesh_hosts = 1;
    req.mesh_gpus = 4;
    req.logical_a = a;
    req.logical_b = b;
    req.force_batch_dim = force;
    req.method = APPROF_ILP_SERIES_PARALLEL;
    req.memory_levels = levels;
    req.variant.memory_level = level;
    req.variant.recompute = recompute;
    return req;
}
