/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The accumulation adds written with their count in a local and each add
 * copied at a size the compiler knows (docs/perf-ends2.md): with
 * Megatron's gradient_accumulation_fusion (hw->grad_accum_fusion) the
 * adds are interleaved with fuse_grad_accum's scans of the backward, so
 * the count is stored back before each scan. Checked on a synthetic
 * stage against the rule written out here: each op with parameters and a
 * weight-gradient GEMM of its size has that GEMM's epilogue widened (its
 * digest redone) and no add; every other op with parameters gets one add
 * (shard_grad_accum_kernel of its elements, the op set), in op order,
 * after the backward's kernels; the count is exactly the kernels written.
 * And shard_transient_peak's forward walk, each input tested once, against
 * the two passes it made before, bit for bit.
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "costdb.h"
#include "graph.h"
#include "hardware.h"
#include "sharding/program_int.h"

enum { N_OPS = 12, N_T = 32 };

typedef struct {
    ApprofGraph g;
    ApprofOp ops[N_OPS];
    ApprofTensor tensors[N_T];
    TInfo ti[N_T];
    int t_first[N_T];
    double op_param[N_OPS];
    int param_ops[N_OPS];
} Fixture;

/* Op o reads an activation and one parameter (none when o % 4 == 3) of
 * elements 1024 * (o + 1) in bf16. */
static void fixture_make(Fixture *f)
{
    memset(f, 0, sizeof *f);
    f->g.dtype = APPROF_BF16;
    f->g.ops = f->ops;
    f->g.n_ops = N_OPS;
    f->g.tensors = f->tensors;
    f->g.n_tensors = N_T;
    for (int i = 0; i < N_T; i++)
        f->t_first[i] = -1;
    for (int o = 0, t = 0; o < N_OPS; o++) {
        ApprofOp *op = &f->ops[o];
        f->tensors[t].role = APPROF_TENSOR_ACT;
        op->inputs[op->n_inputs++] = t++;
        if (o % 4 == 3)
            continue;
        f->tensors[t].role = APPROF_TENSOR_PARAM;
        f->ti[t].local = 2.0 * 1024.0 * (o + 1);
        f->t_first[t] = o;
        op->inputs[op->n_inputs++] = t++;
    }
}

/* With fusion: ops 0, 4, 8 have a weight-gradient GEMM whose C has their
 * parameters' elements (fused: no add), op 1 one a tenth too small (not
 * fused); the backward holds them and no room is left. */
static void test_fused_adds(void)
{
    Fixture f;
    ShardStage st;
    ApprofHardwareSpec hw;
    fixture_make(&f);
    memset(&st, 0, sizeof st);
    memset(&hw, 0, sizeof hw);
    hw.grad_accum_fusion = 1;
    st.g = &f.g;
    st.hw = &hw;
    st.op_begin = 0;
    st.op_end = st.n_ops = N_OPS;
    st.t_first = f.t_first;
    for (int o = 0; o < N_OPS; o++)
        f.op_param[o] = shard_op_param_bytes_of(&st, f.ti, o);
    st.op_param = f.op_param;
    st.param_ti = f.ti;
    shard_param_ops_index(&st, f.param_ops);

    const int gemm_op[4] = {0, 4, 8, 1};
    size_t cap = 4;
    ApprofStageProgram p;
    memset(&p, 0, sizeof p);
    ApprofHash128 *dig[2] = {NULL, calloc(cap, sizeof(ApprofHash128))};
    p.kernels[1] = calloc(cap, sizeof *p.kernels[1]);
    CU_ASSERT_FATAL(p.kernels[1] && dig[1]);
    for (int i = 0; i < 4; i++) {
        ApprofKernel *k = &p.kernels[1][i];
        double c = 1024.0 * (gemm_op[i] + 1) * (i == 3 ? 0.8 : 1.0);
        k->kind = APPROF_K_GEMM;
        k->op = gemm_op[i];
        k->batch = 1;
        k->m = (int64_t)c;
        k->n = 1;
        k->bytes = k->store_bytes = 2.0 * c;
        dig[1][i] = shard_kernel_digest(k);
    }
    p.n_kernels[1] = 4;
    p.param_bytes = 1 << 20;
    p.donated_size[1] = p.param_bytes; /* the whole buffers: share 1 */
    ApprofKernel before[4];
    memcpy(before, p.kernels[1], sizeof before);
    CU_ASSERT_EQUAL_FATAL(shard_push_grad_accum(&st, f.ti, &p, &cap, dig), 0);
    CU_ASSERT(cap >= p.n_kernels[1]);

    double gw = 2.0, aw = 2.0, extra = 2.0 * aw - gw;
    for (int i = 0; i < 4; i++) {
        ApprofKernel want = before[i];
        double c = (double)want.m;
        if (i < 3) { /* fused: the epilogue reads and writes the buffer */
            want.bytes += extra * c;
            want.store_bytes += extra * c;
        }
        ApprofHash128 d = shard_kernel_digest(&want);
        CU_ASSERT(memcmp(&p.kernels[1][i], &want, sizeof want) == 0);
        CU_ASSERT(dig[1][i].a == d.a && dig[1][i].b == d.b);
    }
    size_t at = 4;
    for (int o = 0; o < N_OPS; o++) {
        double elems = f.op_param[o] / gw;
        if (!(elems >= 1.0) || o == 0 || o == 4 || o == 8)
            continue;
        ApprofKernel k;
        shard_grad_accum_kernel(&st, elems, &k);
        ApprofHash128 d = shard_kernel_digest(&k);
        k.op = o;
        CU_ASSERT_FATAL(at < p.n_kernels[1]);
        CU_ASSERT(memcmp(&p.kernels[1][at], &k, sizeof k) == 0);
        CU_ASSERT(dig[1][at].a == d.a && dig[1][at].b == d.b);
        at++;
    }
    CU_ASSERT_EQUAL(at, p.n_kernels[1]);
    CU_ASSERT_EQUAL(at, 4 + 6); /* 9 ops with parameters, 3 fused */
    free(p.kernels[1]);
    free(dig[1]);
}

/* The forward walk's rule written out as two passes over the inputs (an
 * in-place op's aliased input freed before its outputs are counted, the
 * others after the peak's test), as shard_transient_peak walked it
 * before ends2. */
static double peak_two_passes(const ShardStage *st, const TInfo *ti)
{
    const ApprofGraph *g = st->g;
    double live = 0.0, peak = 0.0;
    for (int o = st->op_begin; o < st->op_end; o++) {
        const ApprofOp *op = &g->ops[o];
        int alias = op->attrs.inplace ? op->inputs[0] : -1;
        for (int i = 0; i < op->n_inputs; i++) {
            const TInfo *t = &ti[op->inputs[i]];
            if (op->inputs[i] == alias && t->in_range && t->last_use == o && !t->stage_out &&
                !t->keep)
                live -= t->local;
        }
        for (int j = 0; j < op->n_outputs; j++) {
            const TInfo *t = &ti[op->outputs[j]];
            if (!t->stage_out && !t->keep)
                live += t->local;
        }
        if (live > peak)
            peak = live;
        for (int i = 0; i < op->n_inputs; i++) {
            const TInfo *t = &ti[op->inputs[i]];
            if (op->inputs[i] != alias && t->in_range && t->last_use == o && !t->stage_out &&
                !t->keep)
                live -= t->local;
        }
    }
    return peak;
}

/* A chain of ops, some in place, some reading a tensor twice (the alias
 * among them), with kept, stage-output and outside tensors, sizes whose
 * sums round (so an order changed would show): the walk's peak bit for
 * bit the two passes'. */
static void test_forward_peak_one_pass(void)
{
    enum { OPS = 10, TS = 24 };
    ApprofOp ops[OPS];
    ApprofTensor tensors[TS];
    TInfo ti[TS];
    ApprofGraph g;
    memset(ops, 0, sizeof ops);
    memset(tensors, 0, sizeof tensors);
    memset(ti, 0, sizeof ti);
    memset(&g, 0, sizeof g);
    g.ops = ops;
    g.n_ops = OPS;
    g.tensors = tensors;
    g.n_tensors = TS;
    /* op o reads tensor o (and o - 1, or o again; o - 2 too every third
     * op, so that three inputs are freed at once) and writes o + 1; a
     * tensor's last use is the last op that reads it */
    for (int t = 0; t < TS; t++)
        ti[t].last_use = -1;
    for (int o = 0; o < OPS; o++) {
        ApprofOp *op = &ops[o];
        op->inputs[op->n_inputs++] = o;
        if (o % 3 == 1)
            op->inputs[op->n_inputs++] = o; /* the same tensor twice */
        else if (o > 0)
            op->inputs[op->n_inputs++] = o - 1;
        if (o % 3 == 0 && o >= 2)
            op->inputs[op->n_inputs++] = o - 2;
        op->outputs[op->n_outputs++] = o + 1;
        op->attrs.inplace = o % 2;
        for (int i = 0; i < op->n_inputs; i++)
            ti[op->inputs[i]].last_use = o;
    }
    for (int t = 0; t <= OPS; t++) {
        ti[t].in_range = t > 0;
        ti[t].keep = t == 5;
        ti[t].stage_out = t == 3;
        /* growing sizes, not binary fractions: the peak is at the last
         * op (in place: its alias freed before its output counts, two
         * other inputs after) */
        ti[t].local = 0.1 * (t + 1) + 0.37 * t * t;
    }
    ShardStage st;
    memset(&st, 0, sizeof st);
    st.g = &g;
    st.op_begin = 0;
    st.op_end = st.n_ops = OPS;
    double want = peak_two_passes(&st, ti), got = shard_transient_peak(&st, ti, 0, NULL);
    CU_ASSERT(memcmp(&want, &got, sizeof want) == 0);
    CU_ASSERT(want > 0.0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"adds with fusion interleaved with the GEMMs' scans", test_fused_adds},
        {"forward peak in one pass over the inputs", test_forward_peak_one_pass},
    };
    return cunit_run("sharding_ends2", tests, sizeof tests / sizeof tests[0]);
}
