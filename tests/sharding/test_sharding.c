/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the intra-op sharding pass (profiler/sharding/sharding.h) on zoo
 * graphs: the tutorial MLP on 1x8 keeps whole parameters per device with the
 * forced data-parallel config (8,1) and splits them with (1,8); the ILP
 * optimum of small stages equals exhaustive search over every strategy
 * combination; forcing the batch dimension puts it on axis 0; placements
 * and Alpa ShardingSpec text are well formed.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_text.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

/* One layer per operator: any range of operators is a stage. */
static void one_layer_per_op(const ApprofGraph *g, ApprofLayering *l, int *begin, int *end)
{
    l->n_layers = (int)g->n_ops;
    l->op_begin = begin;
    l->op_end = end;
    for (size_t i = 0; i < g->n_ops; i++) {
        begin[i] = (int)i;
        end[i] = (int)i + 1;
    }
    snprintf(l->option, sizeof(l->option), "manual");
}

static ApprofGraph *build_mlp(int hidden, int layers, int64_t batch)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    memset(&o, 0, sizeof(o));
    o.hidden = hidden;
    o.num_layers = layers;
    o.batch = batch;
    int rc = approf_zoo_build("mlp", &o, &g, err, sizeof(err));
    if (rc)
        fprintf(stderr, "mlp: %s\n", err);
    CU_ASSERT_FATAL(rc == 0);
    return g;
}

static int64_t full_param_bytes(const ApprofGraph *g)
{
    int64_t s = 0;
    for (size_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].role == APPROF_TENSOR_PARAM)
            s += approf_tensor_bytes(&g->tensors[t]);
    return s;
}

static int shard(const ApprofGraph *g, int start, int end, int hosts, int gpus, int a, int b,
                 int force, ApprofIlpMethod method, ApprofStageProgram *p)
{
    ApprofHardwareSpec hw;
    ApprofLayering l;
    int *begin = calloc(g->n_ops, sizeof(int)), *endv = calloc(g->n_ops, sizeof(int));
    ApprofShardContext *ctx = NULL;
    char err[256];
    CU_ASSERT_FATAL(begin && endv);
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    /* the layouts asserted below are Alpa's under strict FP32 pricing: with
     * TF32 these small f32 MLPs are too cheap to be worth splitting */
    hw.allow_tf32 = 0;
    one_layer_per_op(g, &l, begin, endv);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &ctx) == 0);
    ApprofShardRequest req = {start, end < 0 ? (int)g->n_ops - 1 : end, hosts, gpus, a, b, force,
                              method};
    memset(p, 0, sizeof(*p));
    int rc = approf_shard_stage(ctx, &req, p, err, sizeof(err));
    if (rc)
        fprintf(stderr, "shard: %s\n", err);
    approf_shard_context_free(&ctx);
    free(begin);
    free(endv);
    return rc;
}

/* Every parameter of the range is placed once; local bytes match the spec. */
static void check_placements(const ApprofGraph *g, const ApprofStageProgram *p)
{
    int n_param = 0;
    for (size_t t = 0; t < g->n_tensors; t++) {
        if (g->tensors[t].role != APPROF_TENSOR_PARAM)
            continue;
        n_param++;
        int found = 0;
        for (size_t i = 0; i < p->n_placements; i++)
            found += p->placements[i].tensor == (int)t && p->placements[i].role == APPROF_ROLE_PARAM;
        CU_ASSERT_EQUAL(found, 1);
    }
    for (size_t i = 0; i < p->n_placements; i++) {
        const ApprofPlacement *pl = &p->placements[i];
        const ApprofTensor *t = &g->tensors[pl->tensor];
        int64_t ways = 1;
        for (int d = 0; d < t->ndim; d++) {
            int x = pl->mesh_axis_of_dim[d];
            ways *= x < 0 ? 1 : x == 0 ? p->logical_a : x == 1 ? p->logical_b
                                                             : p->logical_a * p->logical_b;
        }
        CU_ASSERT_EQUAL(pl->local_bytes * ways, approf_tensor_bytes(t));
        CU_ASSERT(strncmp(pl->spec, "ShardingSpec((", 14) == 0);
        CU_ASSERT(pl->spec[strlen(pl->spec) - 1] == ')');
    }
}

static void test_mlp_data_parallel(void)
{
    ApprofGraph *g = build_mlp(1024, 4, 64);
    ApprofStageProgram p;
    CU_ASSERT_FATAL(shard(g, 0, -1, 1, 8, 8, 1, 0, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, &p) == 0);
    int64_t full = full_param_bytes(g);
    CU_ASSERT_EQUAL(p.param_bytes, full);
    for (size_t i = 0; i < p.n_placements; i++)
        if (p.placements[i].role == APPROF_ROLE_PARAM) {
            int nd = g->tensors[p.placements[i].tensor].ndim;
            CU_ASSERT_STRING_EQUAL(p.placements[i].spec,
                                   nd == 2 ? "ShardingSpec((NoSharding(), NoSharding()), (Replicated(replicas=8),))"
                                           : "ShardingSpec((NoSharding(),), (Replicated(replicas=8),))");
        } else if (p.placements[i].role == APPROF_ROLE_INPUT) {
            CU_ASSERT_STRING_EQUAL(p.placements[i].spec,
                                   "ShardingSpec((Chunked(8), NoSharding()), (ShardedAxis(axis=0),))");
        }
    /* The whole gradient is all-reduced once per iteration over axis 0. */
    CU_ASSERT_EQUAL(p.grad_sync.kind, APPROF_COLL_ALL_REDUCE);
    CU_ASSERT_EQUAL(p.grad_sync.axes, APPROF_AXIS0);
    CU_ASSERT_EQUAL(p.grad_sync.group_size, 8);
    CU_ASSERT_EQUAL(p.grad_sync.crosses_hosts, 0);
    CU_ASSERT_DOUBLE_EQUAL(p.grad_sync.bytes, (double)full, 0.5);
    /* Pure data parallelism needs no other collective than the all-reduce
     * of the loss (a reduction over the split batch). */
    CU_ASSERT_EQUAL_FATAL(p.n_colls[0], 1);
    CU_ASSERT_EQUAL(p.colls[0][0].kind, APPROF_COLL_ALL_REDUCE);
    CU_ASSERT_EQUAL(p.colls[0][0].op, (int)g->n_ops - 1);
    CU_ASSERT_DOUBLE_EQUAL(p.colls[0][0].bytes, 4.0, 1e-12);
    CU_ASSERT_EQUAL(p.n_colls[1], 0);
    CU_ASSERT_EQUAL(p.initial_size, full * 2); /* f32 Adam: 8 bytes per 4-byte element */
    CU_ASSERT(p.peak_memory[0] == p.invar_size[0] + p.outvar_size[0] + p.temp_buffer_size[0]);
    CU_ASSERT(p.intermediate_size > 0);
    check_placements(g, &p);
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

/* Alpa's accounting of the backward module (docs/alpa-semantics.md, "The
 * backward module") on a two-layer MLP on one device, f32, batch 8:
 * Dense_0 4->16 on model data, relu, Dense_1 16->4, relu, MSE loss.
 * Hand-computed bytes:
 *   parameters: W0 4x16 + b0 16 + W1 16x4 + b1 4 = 148 floats = 592 B
 *   read by the backward: W1 only (dr0 = dy W1^T); W0 is not read since
 *     the model data x needs no gradient, biases never are: 256 B
 *   accumulation buffers, one per parameter, donated: 592 B
 *   saved activations a0, r0 (8x16) and a1, r1 (8x4): 1280 B; saved stage
 *     inputs x and y (8x4 each): 256 B; incoming gradient of the loss: 4 B
 *   invars  = 256 + 592 + 1280 + 256 + 4 = 2388
 *   outvars = input gradients (none: x and y are data) + 592 = 592
 *   temps: walking back, at relu(a0) the gradients of r0 and a0 are alive
 *     (512 + 512 = 1024; at Dense_1 dr0 + da1 + fresh dW1, db1 = 912)
 *   peak    = invars + outvars + temps - donated = 2388 + 592 + 1024 - 592
 * The forward reads every parameter and donates nothing. */
static void test_mlp_backward_module(void)
{
    ApprofGraph *g = build_mlp(4, 2, 8);
    ApprofStageProgram p;
    CU_ASSERT_FATAL(shard(g, 0, -1, 1, 1, 1, 1, 0, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, &p) == 0);
    CU_ASSERT_EQUAL(p.param_bytes, 592);
    CU_ASSERT_EQUAL(p.invar_size[1], 2388);
    CU_ASSERT_EQUAL(p.outvar_size[1], 592);
    CU_ASSERT_EQUAL(p.donated_size[1], 592);
    CU_ASSERT_EQUAL(p.temp_buffer_size[1], 1024);
    CU_ASSERT_EQUAL(p.peak_memory[1], 3412);
    /* forward: x, y and the parameters in; the loss and the saved
     * activations out */
    CU_ASSERT_EQUAL(p.invar_size[0], 256 + 592);
    CU_ASSERT_EQUAL(p.outvar_size[0], 4 + 1280);
    CU_ASSERT_EQUAL(p.donated_size[0], 0);
    CU_ASSERT_EQUAL(p.peak_memory[0], p.invar_size[0] + p.outvar_size[0] + p.temp_buffer_size[0]);
    CU_ASSERT_EQUAL(p.intermediate_size, 1280 + 256);
    approf_stage_program_clear(&p);

    /* Full recomputation reruns every op in the backward, so it reads all
     * 592 B of parameters; what it keeps is the input of each checkpoint
     * block (Dense_0: x; Dense_1: r0, 512 B; the loss: r1, 128 B, and y).
     * Blocks are cut inside a layer (docs/variants.md): one layer here. */
    ApprofHardwareSpec hw;
    ApprofLayering l;
    int begin[16], endv[16];
    ApprofShardContext *ctx = NULL;
    char err[256];
    CU_ASSERT_FATAL(g->n_ops <= 16);
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    l.n_layers = 1;
    l.op_begin = begin;
    l.op_end = endv;
    begin[0] = 0;
    endv[0] = (int)g->n_ops;
    snprintf(l.option, sizeof l.option, "manual");
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &ctx) == 0);
    ApprofShardRequest req = {0, 0, 1, 1, 1, 1, 0,
                              APPROF_ILP_ELIMINATE_TREES_THEN_CBC};
    req.variant.recompute = COSTDB_RECOMPUTE_FULL;
    memset(&p, 0, sizeof p);
    CU_ASSERT_FATAL(approf_shard_stage(ctx, &req, &p, err, sizeof err) == 0);
    CU_ASSERT_EQUAL(p.invar_size[1], 592 + 592 + 512 + 128 + 256 + 4);
    CU_ASSERT_EQUAL(p.outvar_size[1], 592);
    CU_ASSERT_EQUAL(p.peak_memory[1], p.invar_size[1] + p.outvar_size[1] +
                                          p.temp_buffer_size[1] - p.donated_size[1]);
    approf_stage_program_clear(&p);
    approf_shard_context_free(&ctx);
    approf_graph_free(&g);
}

/* An in-place relu (torchvision's nn.ReLU(inplace=True)) overwrites the
 * batch-norm output and saves its own output: on conv -> bn -> relu ->
 * conv, f32, x 2x3x4x4 (384 B), every activation 2x4x4x4 (512 B), the
 * intermediate is x + conv out (saved by bn) + relu out (saved by relu
 * and by the second conv) = 1408 B; without in-place the bn output is
 * saved too (relu reads its input): 1920 B. */
static int64_t conv_bn_relu_intermediate(int inplace)
{
    ApprofGraph *g = NULL;
    char err[256];
    int64_t xd[4] = {2, 3, 4, 4}, w1d[4] = {4, 3, 1, 1}, w2d[4] = {4, 4, 1, 1}, cd[1] = {4};
    CU_ASSERT_FATAL(approf_graph_new("cbr", APPROF_F32, 2, &g) == 0);
    int x = approf_graph_add_tensor(g, "x", APPROF_TENSOR_INPUT, APPROF_F32, 4, xd, 0);
    int w1 = approf_graph_add_tensor(g, "w1", APPROF_TENSOR_PARAM, APPROF_F32, 4, w1d, -1);
    int sc = approf_graph_add_tensor(g, "scale", APPROF_TENSOR_PARAM, APPROF_F32, 1, cd, -1);
    int bi = approf_graph_add_tensor(g, "bias", APPROF_TENSOR_PARAM, APPROF_F32, 1, cd, -1);
    int w2 = approf_graph_add_tensor(g, "w2", APPROF_TENSOR_PARAM, APPROF_F32, 4, w2d, -1);
    ApprofOpAttrs conv = {.kernel = {1, 1}, .stride = {1, 1}, .groups = 1}, relu = {.inplace = inplace};
    int in[3] = {x, w1, -1};
    int o = approf_graph_add_op(g, "b/conv1", APPROF_OP_CONV2D, in, 2, &conv, NULL, 0, err, sizeof err);
    CU_ASSERT_FATAL(o >= 0);
    in[0] = g->ops[o].outputs[0], in[1] = sc, in[2] = bi;
    o = approf_graph_add_op(g, "b/bn1", APPROF_OP_BATCH_NORM, in, 3, NULL, NULL, 0, err, sizeof err);
    CU_ASSERT_FATAL(o >= 0);
    in[0] = g->ops[o].outputs[0];
    o = approf_graph_add_op(g, "b/relu", APPROF_OP_RELU, in, 1, &relu, NULL, 0, err, sizeof err);
    CU_ASSERT_FATAL(o >= 0);
    in[0] = g->ops[o].outputs[0], in[1] = w2;
    o = approf_graph_add_op(g, "b/conv2", APPROF_OP_CONV2D, in, 2, &conv, NULL, 0, err, sizeof err);
    CU_ASSERT_FATAL(o >= 0);
    CU_ASSERT_FATAL(approf_graph_validate(g, err, sizeof err) == 0);
    ApprofStageProgram p;
    CU_ASSERT_FATAL(shard(g, 0, -1, 1, 1, 1, 1, 0, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, &p) == 0);
    int64_t r = p.intermediate_size;
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
    return r;
}

static void test_inplace_relu(void)
{
    CU_ASSERT_EQUAL(conv_bn_relu_intermediate(0), 384 + 3 * 512);
    CU_ASSERT_EQUAL(conv_bn_relu_intermediate(1), 384 + 2 * 512);
}

static void test_mlp_model_parallel(void)
{
    ApprofGraph *g = build_mlp(1024, 4, 64);
    ApprofStageProgram p;
    CU_ASSERT_FATAL(shard(g, 0, -1, 1, 8, 1, 8, 0, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, &p) == 0);
    int64_t full = full_param_bytes(g);
    /* Every weight matrix is split eight ways; the batch is not split. The
     * bias of a layer split along its contraction (Megatron's row-parallel
     * layer, what Alpa picks after a column-parallel one) stays replicated,
     * so the total is one eighth of the weights plus at most those biases. */
    int64_t expect = 0;
    for (size_t i = 0; i < p.n_placements; i++) {
        const ApprofPlacement *pl = &p.placements[i];
        const ApprofTensor *t = &g->tensors[pl->tensor];
        if (pl->role == APPROF_ROLE_PARAM) {
            if (t->ndim == 2)
                CU_ASSERT_EQUAL(pl->local_bytes * 8, approf_tensor_bytes(t));
            expect += pl->local_bytes;
        } else if (pl->role == APPROF_ROLE_INPUT) {
            CU_ASSERT_EQUAL(pl->mesh_axis_of_dim[0], -1);
        }
    }
    CU_ASSERT_EQUAL(p.param_bytes, expect);
    int64_t weights = 0, biases = 0;
    for (size_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].role == APPROF_TENSOR_PARAM)
            *(g->tensors[t].ndim == 2 ? &weights : &biases) += approf_tensor_bytes(&g->tensors[t]);
    CU_ASSERT_EQUAL(weights + biases, full);
    CU_ASSERT(p.param_bytes >= full / 8);
    CU_ASSERT(p.param_bytes <= weights / 8 + biases);
    CU_ASSERT(p.n_colls[0] > 0);
    check_placements(g, &p);
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

/* The ILP optimum equals exhaustive search over all strategy combinations. */
static void test_ilp_equals_brute_force(void)
{
    ApprofGraph *g = build_mlp(64, 2, 16);
    const int cfg[][5] = {{1, 4, 4, 1, -1}, {1, 4, 4, 1, 0}, {1, 4, 1, 4, 0},
                          {1, 4, 2, 2, 0},  {2, 4, 8, 1, -1}, {1, 2, 2, 1, -1}};
    for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
        /* Ranges small enough for exhaustive search. */
        int n = (int)g->n_ops;
        for (int start = 0; start < n; start++)
            for (int end = start; end < n && end < start + (cfg[c][2] > 1 && cfg[c][3] > 1 ? 3 : 5);
                 end++) {
                ApprofStageProgram a, b;
                int ra = shard(g, start, end, cfg[c][0], cfg[c][1], cfg[c][2], cfg[c][3], cfg[c][4],
                               APPROF_ILP_ELIMINATE_TREES_THEN_CBC, &a);
                int rb = shard(g, start, end, cfg[c][0], cfg[c][1], cfg[c][2], cfg[c][3], cfg[c][4],
                               APPROF_ILP_EXHAUSTIVE, &b);
                CU_ASSERT_EQUAL(ra, rb);
                if (ra == 0 && rb == 0) {
                    CU_ASSERT_DOUBLE_EQUAL(a.ilp_objective, b.ilp_objective,
                                           1e-9 * (1 + b.ilp_objective));
                    approf_stage_program_clear(&a);
                }
                for (int mi = 0; mi < 2; mi++) {
                    ApprofIlpMethod m = mi ? APPROF_ILP_SERIES_PARALLEL : APPROF_ILP_CBC_ONLY;
                    if (m == APPROF_ILP_CBC_ONLY && !approf_ilp_have_cbc())
                        continue;
                    int rm = shard(g, start, end, cfg[c][0], cfg[c][1], cfg[c][2], cfg[c][3],
                                   cfg[c][4], m, &a);
                    CU_ASSERT_EQUAL(rm, rb);
                    if (rm == 0) {
                        CU_ASSERT_DOUBLE_EQUAL(a.ilp_objective, b.ilp_objective,
                                               1e-9 * (1 + b.ilp_objective));
                        approf_stage_program_clear(&a);
                    }
                }
                if (rb == 0)
                    approf_stage_program_clear(&b);
            }
    }
    approf_graph_free(&g);
}

static void test_force_batch_axis0(void)
{
    ApprofGraph *g = build_mlp(256, 2, 32);
    ApprofStageProgram p;
    CU_ASSERT_FATAL(shard(g, 0, -1, 1, 8, 2, 4, 0, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, &p) == 0);
    int inputs = 0;
    for (size_t i = 0; i < p.n_placements; i++)
        if (p.placements[i].role == APPROF_ROLE_INPUT) {
            CU_ASSERT_EQUAL(p.placements[i].mesh_axis_of_dim[0], 0);
            inputs++;
        }
    CU_ASSERT(inputs >= 1);
    check_placements(g, &p);
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

/* What a placement's spec text is, through the database's one writer. */
static void spec_text(int ndim, const int *axis_of_dim, int a, int b, char *out, size_t len)
{
    CostdbLayout l = {ndim, {0}, a, b};
    memcpy(l.mesh_axis_of_dim, axis_of_dim, (size_t)ndim * sizeof *axis_of_dim);
    costdb_spec_format(&l, out, len);
}

static void test_spec_text(void)
{
    char s[512];
    int d2[2] = {-1, 0};
    spec_text(2, d2, 2, 1, s, sizeof(s));
    CU_ASSERT_STRING_EQUAL(s, "ShardingSpec((NoSharding(), Chunked(2)), (ShardedAxis(axis=0),))");
    int d1[1] = {-1};
    spec_text(1, d1, 2, 1, s, sizeof(s));
    CU_ASSERT_STRING_EQUAL(s, "ShardingSpec((NoSharding(),), (Replicated(replicas=2),))");
    spec_text(0, d1, 2, 1, s, sizeof(s));
    CU_ASSERT_STRING_EQUAL(s, "ShardingSpec((), (Replicated(replicas=2),))");
    int d4[4] = {0, -1, -1, -1};
    spec_text(4, d4, 2, 1, s, sizeof(s));
    CU_ASSERT_STRING_EQUAL(s, "ShardingSpec((Chunked(2), NoSharding(), NoSharding(), NoSharding()), "
                              "(ShardedAxis(axis=0),))");
    /* 2-D mesh: dim 0 on axis 1, dim 1 on axis 0; mapping in mesh-axis order. */
    int dx[2] = {1, 0};
    spec_text(2, dx, 2, 4, s, sizeof(s));
    CU_ASSERT_STRING_EQUAL(s, "ShardingSpec((Chunked(4), Chunked(2)), (ShardedAxis(axis=1), "
                              "ShardedAxis(axis=0)))");
    /* Split on axis 1 only: replicated over axis 0. */
    int dy[2] = {-1, 1};
    spec_text(2, dy, 2, 4, s, sizeof(s));
    CU_ASSERT_STRING_EQUAL(s, "ShardingSpec((NoSharding(), Chunked(4)), (Replicated(replicas=2), "
                              "ShardedAxis(axis=0)))");
    /* Both axes on one dimension: one chunk of a*b. */
    int dz[2] = {2, -1};
    spec_text(2, dz, 2, 4, s, sizeof(s));
    CU_ASSERT_STRING_EQUAL(s, "ShardingSpec((Chunked(8), NoSharding()), (ShardedAxis(axis=0),))");
}

/* The two programs are the same, field by field. */
static void check_same_program(const ApprofStageProgram *a, const ApprofStageProgram *b)
{
    CU_ASSERT_STRING_EQUAL(a->signature, b->signature);
    for (int ph = 0; ph < 2; ph++) {
        CU_ASSERT_EQUAL_FATAL(a->n_kernels[ph], b->n_kernels[ph]);
        for (size_t i = 0; i < a->n_kernels[ph]; i++) {
            const ApprofKernel *x = &a->kernels[ph][i], *y = &b->kernels[ph][i];
            CU_ASSERT(x->kind == y->kind && x->op == y->op && x->dtype == y->dtype &&
                      x->flops == y->flops && x->bytes == y->bytes && x->batch == y->batch &&
                      x->m == y->m && x->n == y->n && x->k == y->k && x->elements == y->elements);
        }
        CU_ASSERT_EQUAL_FATAL(a->n_colls[ph], b->n_colls[ph]);
        for (size_t i = 0; i < a->n_colls[ph]; i++)
            CU_ASSERT(a->colls[ph][i].kind == b->colls[ph][i].kind &&
                      a->colls[ph][i].bytes == b->colls[ph][i].bytes &&
                      a->colls[ph][i].group_size == b->colls[ph][i].group_size &&
                      a->colls[ph][i].op == b->colls[ph][i].op);
        CU_ASSERT_EQUAL(a->peak_memory[ph], b->peak_memory[ph]);
        CU_ASSERT_EQUAL(a->temp_buffer_size[ph], b->temp_buffer_size[ph]);
    }
    CU_ASSERT_EQUAL_FATAL(a->n_placements, b->n_placements);
    for (size_t i = 0; i < a->n_placements; i++) {
        CU_ASSERT_EQUAL(a->placements[i].tensor, b->placements[i].tensor);
        CU_ASSERT_EQUAL(a->placements[i].role, b->placements[i].role);
        CU_ASSERT_EQUAL(a->placements[i].local_bytes, b->placements[i].local_bytes);
        CU_ASSERT_STRING_EQUAL(a->placements[i].spec, b->placements[i].spec);
    }
    CU_ASSERT_EQUAL(a->grad_sync.bytes, b->grad_sync.bytes);
    CU_ASSERT_EQUAL(a->ilp_objective, b->ilp_objective);
}

/* What a context keeps across stages (strategies, kernels, spec texts,
 * edge matrices, Pareto sets by structure, the ILP cache, the structure key
 * of the program key) changes no program: every range of a 4-layer MLP on
 * six configs (logical meshes (4,1), (2,2), (1,4), (4,2); (4,1) also with
 * the batch forced and full recomputation, and with ZeRO-3), built in one
 * warm context after its program key, equals the range built in a fresh
 * one. Each memo key without the axis sizes or the forced axis fails it. */
static void test_warm_context_same_programs(void)
{
    ApprofGraph *g = build_mlp(64, 4, 16);
    ApprofHardwareSpec hw;
    ApprofLayering l;
    int n = (int)g->n_ops;
    int *begin = calloc(g->n_ops, sizeof(int)), *endv = calloc(g->n_ops, sizeof(int));
    ApprofShardContext *warm = NULL;
    char err[256];
    const int cfg[][7] = {/* hosts gpus a b force recompute zero */
                          {1, 4, 4, 1, -1, 0, 0}, {1, 4, 2, 2, -1, 0, 0},
                          {1, 4, 4, 1, 0, COSTDB_RECOMPUTE_FULL, 0}, {1, 4, 4, 1, -1, 0, 3},
                          {1, 4, 1, 4, -1, 0, 0}, {2, 4, 4, 2, -1, 0, 0}};
    int built = 0;
    CU_ASSERT_FATAL(begin && endv);
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    one_layer_per_op(g, &l, begin, endv);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &warm) == 0);
    for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++)
        for (int start = 0; start < n; start++)
            for (int end = start; end < n; end++) {
                ApprofShardRequest req = {start, end, cfg[c][0], cfg[c][1], cfg[c][2],
                                          cfg[c][3], cfg[c][4],
                                          APPROF_ILP_ELIMINATE_TREES_THEN_CBC,
                                          {0, cfg[c][5], cfg[c][6]}, 1};
                ApprofShardContext *fresh = NULL;
                ApprofStageProgram a, b;
                uint64_t key[2];
                int *order = NULL, n_order = 0;
                memset(&a, 0, sizeof a);
                memset(&b, 0, sizeof b);
                CU_ASSERT_EQUAL(approf_shard_program_key(warm, &req, key, &order, &n_order), 0);
                free(order);
                int ra = approf_shard_stage(warm, &req, &a, err, sizeof err);
                CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &fresh) == 0);
                int rb = approf_shard_stage(fresh, &req, &b, err, sizeof err);
                approf_shard_context_free(&fresh);
                CU_ASSERT_EQUAL(ra, rb);
                if (ra == 0 && rb == 0) {
                    check_same_program(&a, &b);
                    built++;
                }
                approf_stage_program_clear(&a);
                approf_stage_program_clear(&b);
            }
    CU_ASSERT(built > n * (n + 1) / 2); /* most ranges build on every mesh */
    approf_shard_context_free(&warm);
    free(begin);
    free(endv);
    approf_graph_free(&g);
}

/* The program key's variant-free part is kept for the last
 * SHARD_PKEY_SLOTS stages (memo.c, stage_key_part): keys asked in one warm
 * context as the sweep asks them (a range's base configs in a row, then
 * each base config's variants in a row), then again in a scrambled order
 * over more stages than slots (parts evicted and computed again), equal
 * a fresh context's key and tensor order for every request. A slot
 * matched without the forced axis, the logical mesh or the range fails
 * it. */
#define PK_CFGS 6
#define PK_VARS 5
static void test_warm_program_keys(void)
{
    ApprofGraph *g = build_mlp(64, 4, 16);
    ApprofHardwareSpec hw;
    ApprofLayering l;
    int n = (int)g->n_ops, nr = n * (n + 1) / 2;
    int *begin = calloc(g->n_ops, sizeof(int)), *endv = calloc(g->n_ops, sizeof(int));
    const int cfg[PK_CFGS][5] = {/* hosts gpus a b force */
                                 {1, 4, 4, 1, -1}, {1, 4, 4, 1, 0}, {1, 4, 2, 2, -1},
                                 {1, 4, 1, 4, -1}, {2, 4, 4, 2, -1}, {2, 4, 4, 2, 0}};
    const int var[PK_VARS][3] = {/* level recompute zero */
                                 {0, 0, 0}, {1, 0, 0}, {2, 0, 0},
                                 {0, COSTDB_RECOMPUTE_FULL, 0}, {1, 0, 3}};
    size_t nreq = (size_t)nr * PK_CFGS * PK_VARS;
    uint64_t(*want)[2] = calloc(nreq, sizeof *want);
    unsigned char *ok = calloc(nreq, 1);
    int **order = calloc(nreq, sizeof *order), *n_order = calloc(nreq, sizeof(int));
    ApprofShardRequest *req = calloc(nreq, sizeof *req);
    ApprofShardContext *ctx = NULL;
    CU_ASSERT_FATAL(begin && endv && want && ok && order && n_order && req);
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    one_layer_per_op(g, &l, begin, endv);
    /* request index: (range * PK_CFGS + config) * PK_VARS + variant */
    size_t i = 0;
    for (int start = 0; start < n; start++)
        for (int end = start; end < n; end++)
            for (int c = 0; c < PK_CFGS; c++)
                for (int v = 0; v < PK_VARS; v++, i++) {
                    req[i] = (ApprofShardRequest){start, end, cfg[c][0], cfg[c][1], cfg[c][2],
                                                  cfg[c][3], cfg[c][4],
                                                  APPROF_ILP_ELIMINATE_TREES_THEN_CBC,
                                                  {var[v][0], var[v][1], var[v][2]}, 3};
                    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &ctx) == 0);
                    ok[i] = approf_shard_program_key(ctx, &req[i], want[i], &order[i],
                                                     &n_order[i]) == 0;
                    approf_shard_context_free(&ctx);
                    CU_ASSERT(ok[i]);
                }
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &ctx) == 0);
    int checked = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t q = 0; q < nreq; q++) {
            size_t r;
            if (pass == 0) {
                /* the sweep's order: base configs, then each one's variants */
                size_t range = q / (PK_CFGS * PK_VARS), w = q % (PK_CFGS * PK_VARS);
                size_t c = w < PK_CFGS ? w : (w - PK_CFGS) / (PK_VARS - 1);
                size_t v = w < PK_CFGS ? 0 : 1 + (w - PK_CFGS) % (PK_VARS - 1);
                r = (range * PK_CFGS + c) * PK_VARS + v;
            } else {
                r = (q * 7919u) % nreq; /* 7919 is prime, nreq not its multiple */
            }
            uint64_t key[2];
            int *ord = NULL, no = 0;
            if (!ok[r])
                continue;
            CU_ASSERT_EQUAL_FATAL(approf_shard_program_key(ctx, &req[r], key, &ord, &no), 0);
            CU_ASSERT(key[0] == want[r][0] && key[1] == want[r][1]);
            CU_ASSERT_EQUAL(no, n_order[r]);
            if (no == n_order[r])
                CU_ASSERT(!memcmp(ord, order[r], (size_t)no * sizeof(int)));
            free(ord);
            checked++;
        }
    CU_ASSERT(nreq % 7919u != 0);
    CU_ASSERT(checked == 2 * (int)nreq);
    approf_shard_context_free(&ctx);
    for (i = 0; i < nreq; i++)
        free(order[i]);
    free(order);
    free(n_order);
    free(want);
    free(ok);
    free(req);
    free(begin);
    free(endv);
    approf_graph_free(&g);
}

static void test_bad_request(void)
{
    ApprofGraph *g = build_mlp(64, 2, 16);
    ApprofStageProgram p;
    CU_ASSERT_EQUAL(shard(g, 0, -1, 1, 8, 4, 1, 0, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, &p), APPROF_EINVAL);
    CU_ASSERT_EQUAL(shard(g, 3, 1, 1, 4, 4, 1, 0, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, &p), APPROF_EINVAL);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"ShardingSpec text", test_spec_text},
        {"mlp 1x8 (8,1) forced: whole parameters", test_mlp_data_parallel},
        {"mlp 1x8 (1,8) forced: split parameters", test_mlp_model_parallel},
        {"backward module memory of a 2-layer mlp", test_mlp_backward_module},
        {"in-place relu saves one activation", test_inplace_relu},
        {"ILP optimum equals exhaustive search", test_ilp_equals_brute_force},
        {"force_batch_dim_to_mesh_dim 0 on (2,4)", test_force_batch_axis0},
        {"bad requests", test_bad_request},
        {"a warm context builds the programs a fresh one does", test_warm_context_same_programs},
        {"program keys of a warm context equal a fresh one's", test_warm_program_keys},
    };
    return CUNIT_RUN("sharding", tests);
}
