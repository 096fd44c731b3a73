/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zero3_grad_all_reduce (ApprofHardwareSpec): DeepSpeed's stage 3 with
 * contiguous_gradients off, its default from v0.3.13 to v0.4.2, reduces
 * each gradient bucket with an all-reduce of the flattened bucket
 * (reduce_ipg_grads -> buffered_reduce_fallback -> dist.all_reduce,
 * deepspeed/runtime/zero/stage3.py at v0.3.13), not a reduce-scatter
 * (sharding/program_zero.c, zero3_grad_kind). The model: the zoo's mlp
 * (four dense layers, 2048 x 8192 and 8192 x 2048 weights with their
 * biases: 4 x 16777216 + 2 x 8192 + 2 x 2048 = 67129344 elements of 2
 * bytes) as one stage on 8 GPUs of one a100-80g host with ZeRO-3. Hand
 * counts:
 * - deepspeed schedule: the 67129344 gradient elements fit one
 *   reduce_bucket_size bucket (5e8), so the backward reduces once, all
 *   134258688 bytes, with an all-reduce under the field and a
 *   reduce-scatter without; at batch 8 every collective is longer than
 *   any module's compute, so the backward's collectives run back to back
 *   and the phase grows by exactly the all-reduce's price less the
 *   reduce-scatter's;
 * - the all-reduce moves every byte twice where the reduce-scatter moves
 *   it once (2 (n-1)/n against (n-1)/n of the bytes a rank), so its price
 *   is close to twice;
 * - serial schedule: one gradient collective per module (4), each of its
 *   module's bytes, all-reduces under the field;
 * - the gathers and the loss's all-reduce do not change.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "zoo_fixture.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

#define MLP_PARAM_BYTES (67129344.0 * 2.0)

static ApprofGraph *mlp(int64_t batch)
{
    return zoo_fixture_mlp(batch, 0);
}

/* The whole graph as one stage with ZeRO-3 over 8 GPUs of one a100-80g
 * host, priced with schedule and zero3_grad_all_reduce = all_reduce; *hw
 * gets the spec. */
static int shard(const ApprofGraph *g, int schedule, int all_reduce, ApprofHardwareSpec *hw,
                 ApprofStageProgram *p)
{
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-80g", hw) == 0);
    hw->zero3_schedule = schedule;
    hw->zero3_grad_all_reduce = all_reduce;
    return zoo_fixture_shard_whole(g, hw, 8, COSTDB_RECOMPUTE_NONE, 3, p);
}

/* The backward's ZeRO-3 gradient collectives (every collective that is
 * not an all-gather and belongs to ZeRO-3: marked, or under the serial
 * schedule of the size of a module's parameters): their number, kind of
 * the last in *kind, bytes in *bytes, seconds in *sec. */
static int grad_colls(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int marked_only,
                      ApprofCollKind *kind, double *bytes, double *sec)
{
    int n = 0;
    *bytes = *sec = 0.0;
    for (size_t i = 0; i < p->n_colls[1]; i++) {
        const ApprofCollective *c = &p->colls[1][i];
        if (c->kind == APPROF_COLL_ALL_GATHER)
            continue;
        if (marked_only ? c->zero3_unit <= 0 : c->bytes < 2048.0 * 8192.0 * 2.0)
            continue;
        n++;
        *kind = c->kind;
        *bytes += c->bytes;
        *sec += approf_collective_cost(hw, c);
    }
    return n;
}

/* Phase ph's seconds of the collectives that are not ZeRO-3 gradient
 * reductions (the all-gathers, the loss's all-reduce). */
static double other_colls(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph)
{
    double t = 0.0;
    for (size_t i = 0; i < p->n_colls[ph]; i++) {
        const ApprofCollective *c = &p->colls[ph][i];
        if (c->kind == APPROF_COLL_ALL_GATHER || c->bytes < 2048.0 * 8192.0 * 2.0)
            t += approf_collective_cost(hw, c);
    }
    return t;
}

static void test_deepspeed_bucket_all_reduced(void)
{
    ApprofGraph *g = mlp(8);
    ApprofHardwareSpec hw_rs, hw_ar;
    ApprofStageProgram rs, ar;
    ApprofCollKind k_rs = APPROF_COLL_SEND_RECV, k_ar = APPROF_COLL_SEND_RECV;
    double b_rs, b_ar, s_rs, s_ar;
    CU_ASSERT_FATAL(g != NULL);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_DEEPSPEED, 0, &hw_rs, &rs) == 0);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_DEEPSPEED, 1, &hw_ar, &ar) == 0);
    /* one bucket of every gradient either way */
    CU_ASSERT_EQUAL(grad_colls(&hw_rs, &rs, 1, &k_rs, &b_rs, &s_rs), 1);
    CU_ASSERT_EQUAL(grad_colls(&hw_ar, &ar, 1, &k_ar, &b_ar, &s_ar), 1);
    CU_ASSERT_EQUAL(k_rs, APPROF_COLL_REDUCE_SCATTER);
    CU_ASSERT_EQUAL(k_ar, APPROF_COLL_ALL_REDUCE);
    CU_ASSERT_DOUBLE_EQUAL(b_rs, MLP_PARAM_BYTES, 1e-3);
    CU_ASSERT_DOUBLE_EQUAL(b_ar, MLP_PARAM_BYTES, 1e-3);
    /* every byte moved twice: close to twice the price (the ring's
     * latency steps double too; at 134 MB on NVLink the bytes dominate),
     * beside the bucket's flatten, divide and copy back (hw/cost.c: three
     * copy kernels reading and writing it at 2039 GB/s x 0.85, 4 us
     * launch each) */
    double passes = 3.0 * (4e-6 + 2.0 * MLP_PARAM_BYTES / (2039e9 * 0.85));
    CU_ASSERT(s_ar - passes > 1.9 * s_rs && s_ar - passes <= 2.0 * s_rs + 1e-12);
    /* the gathers and the forward do not change */
    CU_ASSERT_DOUBLE_EQUAL(other_colls(&hw_ar, &ar, 1), other_colls(&hw_rs, &rs, 1), 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw_ar, &ar, 0),
                           approf_phase_seconds(&hw_rs, &rs, 0), 1e-12);
    /* communication-bound: the backward's collectives back to back, so
     * the phase grows by the all-reduce's price less the reduce-scatter's */
    CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw_ar, &ar, 1) - approf_phase_seconds(&hw_rs, &rs, 1),
                           s_ar - s_rs, 1e-9);
    approf_stage_program_clear(&rs);
    approf_stage_program_clear(&ar);
    approf_graph_free(&g);
}

static void test_serial_module_all_reduces(void)
{
    ApprofGraph *g = mlp(8);
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    ApprofCollKind k = APPROF_COLL_SEND_RECV;
    double bytes, sec;
    CU_ASSERT_FATAL(g != NULL);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_SERIAL, 1, &hw, &p) == 0);
    /* one per module, of its own bytes: together the model's */
    CU_ASSERT_EQUAL(grad_colls(&hw, &p, 0, &k, &bytes, &sec), 4);
    CU_ASSERT_EQUAL(k, APPROF_COLL_ALL_REDUCE);
    CU_ASSERT_DOUBLE_EQUAL(bytes, MLP_PARAM_BYTES, 1e-3);
    approf_stage_program_clear(&p);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_SERIAL, 0, &hw, &p) == 0);
    CU_ASSERT_EQUAL(grad_colls(&hw, &p, 0, &k, &bytes, &sec), 4);
    CU_ASSERT_EQUAL(k, APPROF_COLL_REDUCE_SCATTER);
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"deepspeed: the gradient bucket all-reduced, priced twice", test_deepspeed_bucket_all_reduced},
        {"serial: one all-reduce per module", test_serial_module_all_reduces},
    };
    return CUNIT_RUN("zero3_grad_all_reduce", tests);
}
