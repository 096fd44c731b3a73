/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gradient buffer's passes before the reduction (grad_presync_passes,
 * hw/grad_presync.c) under an ep stage (solver/ep_stage_price.c): the
 * stored entry prices them over the expert elements it holds, the layout
 * runs them over its own (E / ep x etp), so the apply step's delta moves
 * by passes x the elements' change at their reduce width over the spec's
 * memory rate, counted by hand; the hardware row's capabilities carry the
 * count to the solver's fabric (docs/validation.md, "The gradient
 * buffer's passes, by the version each Megatron run used").
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "collective.h"
#include "costdb.h"
#include "cunit_run.h"
#include "ep_stage_price.h"
#include "expert_parallel.h"

static void test_capability(void)
{
    CostdbHardware hw;
    CostdbFabric f;
    memset(&hw, 0, sizeof hw);
    hw.gpus_per_host = 8;
    hw.memory_bandwidth = 8e12;
    snprintf(hw.capabilities, sizeof hw.capabilities,
             "{\"memory_efficiency\": 0.85, \"grad_presync_passes\": 3, \"source\": \"t\"}");
    costdb_fabric_from_hardware(&hw, &f);
    CU_ASSERT_EQUAL(f.grad_presync_passes, 3);
    snprintf(hw.capabilities, sizeof hw.capabilities,
             "{\"memory_efficiency\": 0.85, \"source\": \"t\"}");
    costdb_fabric_from_hardware(&hw, &f);
    CU_ASSERT_EQUAL(f.grad_presync_passes, 0);
}

/* Mixtral-like: one stage of 32 MoE layers, 8 experts whole on every GPU
 * as stored, priced at dp 64, ep 8 */
static void price(int passes, double grad_reduce_bytes, ApsolveEpStage *out)
{
    ApsolveEpFacts x;
    ApsolveEpLayout l;
    CostdbFabric f;
    memset(&x, 0, sizeof x);
    memset(&l, 0, sizeof l);
    memset(&f, 0, sizeof f);
    x.known = 1;
    x.moe_layers = 32;
    x.experts = 8;
    x.stored_ep = x.stored_etp = 1;
    x.whole_e = x.uniform = 1;
    x.ep0 = x.etp0 = 1;
    x.etp_stride = -1;
    x.e_axis = -1;
    x.batch = 2;
    x.hidden = 4096;
    x.seq = 4096;
    x.esize = 2.0;
    x.elements = 32.0 * 8 * 3 * 4096 * 14336; /* gate, up, down */
    x.local_before = x.elements;
    x.expert_tensors = 96;
    x.launch = 4e-6;
    l.dp = 64;
    l.tp = 1;
    l.ep = 8;
    l.etp = 1;
    l.zero = 1;
    l.cp = 1;
    l.top_k = 2;
    l.capacity = 1024;
    f.intra_bandwidth = 900e9;
    f.intra_latency = 1e-6;
    f.inter_bandwidth = 50e9;
    f.inter_latency = 5e-6;
    f.gpus_per_host = 8;
    f.memory_bandwidth = 8e12;
    f.memory_efficiency = 0.85;
    f.grad_overlap = 1;
    f.grad_reduce_bytes = grad_reduce_bytes;
    f.grad_presync_passes = passes;
    apsolve_ep_price(&x, &f, 8, &l, out);
}

static void test_by_hand(void)
{
    ApsolveEpStage none, three, f32;
    double elems = 32.0 * 8 * 3 * 4096 * 14336, dl = elems / 8 - elems;
    price(0, 0.0, &none);
    price(3, 0.0, &three);
    price(3, 4.0, &f32);
    CU_ASSERT_EQUAL(three.usable, 2);
    CU_ASSERT_DOUBLE_EQUAL(three.local_after, elems / 8, 1.0);
    /* 3 passes over the expert elements no longer held, bf16 buffer */
    CU_ASSERT_DOUBLE_EQUAL(three.apply_delta - none.apply_delta, 3.0 * dl * 2.0 / (8e12 * 0.85),
                           1e-12);
    CU_ASSERT(three.apply_delta < none.apply_delta);
    /* an f32 buffer (grad_reduce_bytes 4): twice the bytes */
    CU_ASSERT_DOUBLE_EQUAL(f32.apply_delta - none.apply_delta, 3.0 * dl * 4.0 / (8e12 * 0.85),
                           1e-12);
    /* nothing else moves */
    CU_ASSERT_EQUAL(three.peak_delta, none.peak_delta);
    CU_ASSERT_EQUAL(three.initial_delta, none.initial_delta);
    CU_ASSERT_DOUBLE_EQUAL(three.comm_fwd, none.comm_fwd, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(three.comm_bwd, none.comm_bwd, 0.0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"capability read", test_capability},
        {"ep stage passes by hand", test_by_hand},
    };
    return CUNIT_RUN("solver-ep-presync", tests);
}
