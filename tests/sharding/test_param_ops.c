/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ends of a build's programs read the build's parameter table once
 * (docs/performance.md, "The ends of the level builds and the derived
 * ZeRO programs: the ops with parameters indexed once"):
 * shard_param_ops_index lists the stage's ops whose parameter bytes are
 * > 0, in order, and sums the stage's parameter bytes over every op in
 * order; the accumulation adds (shard_push_grad_accum) then walk those
 * ops only, with room made once, and ZeRO (shard_apply_zero) takes its
 * modules and stage total from them. Checked against the same calls
 * without the table (every op's bytes summed from the graph, as before
 * the index) on a synthetic stage: ops with none, one, two parameters, a
 * parameter read again by a later op (tied: counted once, by its first
 * reader), sizes repeated and not, at the accumulation's whole share and
 * a ZeRO partition, and ZeRO 0 to 3 with and without full recomputation
 * (ZeRO-3's regathers): the same kernels, digests, collectives and memory
 * fields, bit for bit.
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "costdb.h"
#include "graph.h"
#include "sharding/program_int.h"

enum { N_OPS = 23, N_T = 64 }; /* 2 tensors an op at most, and 1 more */

typedef struct {
    ApprofGraph g;
    ApprofOp ops[N_OPS];
    ApprofTensor tensors[N_T];
    TInfo ti[N_T];
    int t_first[N_T];
    double op_param[N_OPS];
    int param_ops[N_OPS];
    int blk[4];
} Fixture;

/* Op o reads an activation and, by its index, none, one or two
 * parameters; every seventh op also reads op 2's first parameter again. */
static void fixture_make(Fixture *f)
{
    memset(f, 0, sizeof *f);
    f->g.dtype = APPROF_BF16;
    f->g.ops = f->ops;
    f->g.n_ops = N_OPS;
    f->g.tensors = f->tensors;
    f->g.n_tensors = N_T;
    int t = 0;
    for (int i = 0; i < N_T; i++)
        f->t_first[i] = -1;
    for (int o = 0; o < N_OPS; o++) {
        ApprofOp *op = &f->ops[o];
        int np = o % 4 == 1 ? 0 : o % 4 == 3 ? 2 : 1;
        CU_ASSERT_FATAL(t + 1 + np <= N_T);
        f->tensors[t].role = APPROF_TENSOR_ACT;
        op->inputs[op->n_inputs++] = t++;
        for (int k = 0; k < np; k++, t++) {
            f->tensors[t].role = APPROF_TENSOR_PARAM;
            /* repeated sizes (the accumulation's memo) and fresh ones,
             * large enough that a block's later modules pass ZeRO-3's
             * reuse distance (the regathers) */
            f->ti[t].local = o % 5 == 0 ? 3.0 * (1 << 28) : (double)(1 << 27) * (o + 1) + 4096.0 * k;
            f->t_first[t] = o;
            op->inputs[op->n_inputs++] = t;
        }
        if (o % 7 == 6 && op->n_inputs < APPROF_MAX_INPUTS)
            op->inputs[op->n_inputs++] = f->ops[2].inputs[1]; /* tied: first read by op 2 */
    }
    f->blk[0] = 0;
    f->blk[1] = 6;
    f->blk[2] = 13;
    f->blk[3] = 20;
}

static void stage_make(Fixture *f, ShardStage *st, int indexed, int zero, int recompute)
{
    memset(st, 0, sizeof *st);
    st->g = &f->g;
    st->op_begin = 0;
    st->op_end = N_OPS;
    st->n_ops = N_OPS;
    st->t_first = f->t_first;
    st->variant.zero = zero;
    st->variant.recompute = recompute;
    if (!indexed)
        return;
    for (int o = 0; o < N_OPS; o++)
        f->op_param[o] = shard_op_param_bytes_of(st, f->ti, o);
    st->op_param = f->op_param;
    st->param_ti = f->ti;
    shard_param_ops_index(st, f->param_ops);
}

static void test_index_lists_ops_with_parameters(void)
{
    Fixture f;
    ShardStage st;
    fixture_make(&f);
    stage_make(&f, &st, 1, 0, 0);
    double total = 0.0;
    int n = 0;
    for (int o = 0; o < N_OPS; o++) {
        double b = shard_op_param_bytes_of(&st, f.ti, o);
        total += b;
        if (b > 0.0) {
            CU_ASSERT_FATAL(n < st.n_param_ops);
            CU_ASSERT_EQUAL(st.param_ops[n], o);
            n++;
        }
    }
    CU_ASSERT_EQUAL(n, st.n_param_ops);
    CU_ASSERT(n > 0 && n < N_OPS); /* some ops hold none */
    CU_ASSERT(memcmp(&total, &st.param_total, sizeof total) == 0);
}

/* One program's accumulation adds, from a backward of one kernel. */
static void adds(Fixture *f, int indexed, double share, ApprofStageProgram *p,
                 ApprofHash128 **dig)
{
    ShardStage st;
    size_t cap = 1;
    stage_make(f, &st, indexed, 0, 0);
    memset(p, 0, sizeof *p);
    p->kernels[1] = calloc(1, sizeof *p->kernels[1]);
    *dig = calloc(1, sizeof **dig);
    CU_ASSERT_FATAL(p->kernels[1] && *dig);
    p->n_kernels[1] = 1;
    p->param_bytes = 1 << 20;
    /* the buffers at the model's width (no spec: ratio 1) */
    p->donated_size[1] = (int64_t)(share * (double)p->param_bytes);
    ApprofHash128 *d2[2] = {NULL, *dig};
    CU_ASSERT_EQUAL_FATAL(shard_push_grad_accum(&st, f->ti, p, &cap, d2), 0);
    *dig = d2[1];
    CU_ASSERT(cap >= p->n_kernels[1]);
}

static int same_kernel(const ApprofKernel *a, const ApprofKernel *b)
{
    return a->kind == b->kind && a->dtype == b->dtype && a->batch == b->batch &&
           a->elements == b->elements && !memcmp(&a->flops, &b->flops, sizeof a->flops) &&
           !memcmp(&a->bytes, &b->bytes, sizeof a->bytes) && a->op == b->op &&
           a->async_group == b->async_group && a->async_wgrad == b->async_wgrad;
}

static void test_grad_accum_same_with_index(void)
{
    Fixture f;
    fixture_make(&f);
    const double shares[3] = {1.0, 0.125, 0.0};
    for (int s = 0; s < 3; s++) {
        ApprofStageProgram a, b;
        ApprofHash128 *da, *db;
        adds(&f, 0, shares[s], &a, &da);
        adds(&f, 1, shares[s], &b, &db);
        CU_ASSERT_EQUAL(a.n_kernels[1], b.n_kernels[1]);
        if (s < 2)
            CU_ASSERT(a.n_kernels[1] > 8); /* adds past the memo's eight sizes */
        for (size_t i = 0; i < a.n_kernels[1] && i < b.n_kernels[1]; i++) {
            CU_ASSERT(same_kernel(&a.kernels[1][i], &b.kernels[1][i]));
            CU_ASSERT(da[i].a == db[i].a && da[i].b == db[i].b);
        }
        free(a.kernels[1]);
        free(b.kernels[1]);
        free(da);
        free(db);
    }
}

static int same_coll(const ApprofCollective *a, const ApprofCollective *b)
{
    return a->kind == b->kind && a->axes == b->axes && a->group_size == b->group_size &&
           !memcmp(&a->bytes, &b->bytes, sizeof a->bytes) && a->op == b->op &&
           a->zero3_unit == b->zero3_unit && a->zero3_issue == b->zero3_issue;
}

/* One program ended as ZeRO z (no spec: the serial schedule). */
static void zero(Fixture *f, int indexed, int z, int recompute, ApprofStageProgram *p)
{
    ShardStage st;
    size_t ccap[2] = {0, 0};
    stage_make(f, &st, indexed, z, recompute);
    memset(p, 0, sizeof *p);
    p->param_bytes = 1 << 20;
    p->grad_sync.kind = APPROF_COLL_ALL_REDUCE;
    p->grad_sync.group_size = 4;
    p->grad_sync.axes = 1;
    p->grad_sync.bytes = (double)(1 << 19);
    p->initial_size = 1 << 24;
    p->invar_size[0] = p->invar_size[1] = 1 << 22;
    p->outvar_size[1] = p->donated_size[1] = 1 << 21;
    CU_ASSERT_EQUAL_FATAL(shard_apply_zero(&st, f->ti, p, 5e5, 0.5, f->blk, 4, ccap), 0);
}

static void test_apply_zero_same_with_index(void)
{
    Fixture f;
    fixture_make(&f);
    size_t bwd_colls[2] = {0, 0};
    for (int z = 0; z <= 3; z++)
        for (int r = 0; r < 2; r++) {
            int rec = r ? COSTDB_RECOMPUTE_FULL : COSTDB_RECOMPUTE_NONE;
            ApprofStageProgram a, b;
            zero(&f, 0, z, rec, &a);
            zero(&f, 1, z, rec, &b);
            if (z == 3) {
                CU_ASSERT(a.n_colls[0] > 4);
                bwd_colls[r] = a.n_colls[1];
            }
            for (int ph = 0; ph < 2; ph++) {
                CU_ASSERT_EQUAL(a.n_colls[ph], b.n_colls[ph]);
                for (size_t i = 0; i < a.n_colls[ph] && i < b.n_colls[ph]; i++)
                    CU_ASSERT(same_coll(&a.colls[ph][i], &b.colls[ph][i]));
                CU_ASSERT_EQUAL(a.invar_size[ph], b.invar_size[ph]);
                CU_ASSERT_EQUAL(a.outvar_size[ph], b.outvar_size[ph]);
                CU_ASSERT_EQUAL(a.temp_buffer_size[ph], b.temp_buffer_size[ph]);
                free(a.colls[ph]);
                free(b.colls[ph]);
            }
            CU_ASSERT_EQUAL(a.n_apply_colls, b.n_apply_colls);
            CU_ASSERT_EQUAL(a.initial_size, b.initial_size);
            CU_ASSERT(!memcmp(&a.optimizer_bytes, &b.optimizer_bytes, sizeof a.optimizer_bytes));
        }
    CU_ASSERT(bwd_colls[1] > bwd_colls[0]); /* full recomputation's regathers */
}

int main(void)
{
    static const CunitTest tests[] = {
        {"index lists the ops with parameters", test_index_lists_ops_with_parameters},
        {"accumulation adds the same with the index", test_grad_accum_same_with_index},
        {"ZeRO 0-3 the same with the index", test_apply_zero_same_with_index},
    };
    return cunit_run("sharding_param_ops", tests, sizeof tests / sizeof tests[0]);
}
