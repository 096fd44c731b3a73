/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Activation offload's pricing of one stage entry (apsolve_offload_stage,
 * solver/activation_offload.c; docs/variants.md "Activation offload")
 * against hand counts on a made-up entry: 4 layers whose produced tensors
 * are 1, 1, 1, 2 units (so the entry's 1000-byte intermediate splits
 * 200, 200, 200, 400), FLOPs 1, 2, 1, 1 forward and backward (the entry's
 * 1 s forward and 2 s backward split 0.2, 0.4, 0.2, 0.2 and twice that),
 * a host link of 1000 bytes/s (a layer's copy 0.2 s).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "activation_offload.h"
#include "costdb.h"
#include "cunit_run.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-12)

static ApsolveProblem *entry(void)
{
    ApsolveProblem *p = NULL;
    size_t idx;
    if (apsolve_problem_new(4, 1, 1, 1, 1, 1, &p))
        return NULL;
    p->submeshes[0] = (ApsolveSubmesh){1, 1};
    p->configs[0].valid = 1;
    idx = apsolve_index(p, 0, 3, 0, 0);
    apsolve_times_own(p, idx)->fwd = 1.0;
    apsolve_times_own(p, idx)->bwd = 2.0;
    p->cost[idx] = 3.0;
    *apsolve_memory_own(p, idx) = (ApsolveMemory){5000, 1000, 100, 1 << 20};
    return p;
}

static const CostdbLayer layers[4] = {
    {0, 0, 1, 1.0, 1.0, 0, 1, 0},
    {1, 1, 2, 2.0, 2.0, 0, 1, 0},
    {2, 2, 3, 1.0, 1.0, 0, 1, 0},
    {3, 3, 4, 1.0, 1.0, 0, 2, 0},
};

static void test_hand_counts(void)
{
    ApsolveProblem *p = entry();
    ApsolveOffloadStage x;
    char why[256];
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    /* N = 2: layers 0 and 1 (200 bytes each, 0.2 s a copy) offloaded; at
     * most 2 consecutive layers on the device: max(400, 400, 600) = 600,
     * so 400 bytes freed. Layer 0's copy beside layer 1's forward (0.4 s):
     * hidden; layer 1's beside layer 2's (0.2 s): hidden. Backward: beside
     * 0.8 and 0.4 s: hidden. */
    CU_ASSERT_EQUAL(apsolve_offload_stage(p, layers, 4, 1000.0, 0, 3, 0, 0, 2, &x, why,
                                          sizeof why), 0);
    CU_ASSERT(NEAR(x.saved_bytes, 400.0));
    CU_ASSERT(NEAR(x.window_bytes, 600.0));
    CU_ASSERT_EQUAL(x.freed, 400);
    CU_ASSERT(NEAR(x.d2h, 0.4) && NEAR(x.h2d, 0.4));
    CU_ASSERT(NEAR(x.exposed_fwd, 0.0) && NEAR(x.exposed_bwd, 0.0));
    /* a link of 500 bytes/s: 0.4 s a copy; layer 0's hides 0.4 of it
     * (none exposed), layer 1's 0.2 (0.2 exposed) in the forward; the
     * backward's 0.8 and 0.4 s hide both */
    CU_ASSERT_EQUAL(apsolve_offload_stage(p, layers, 4, 500.0, 0, 3, 0, 0, 2, &x, why,
                                          sizeof why), 0);
    CU_ASSERT(NEAR(x.exposed_fwd, 0.2));
    CU_ASSERT(NEAR(x.exposed_bwd, 0.0));
    /* N = 3 = L - 1: one layer on the device at once, the largest (400):
     * 600 freed; TE's windows close before any copy can run: all exposed */
    CU_ASSERT_EQUAL(apsolve_offload_stage(p, layers, 4, 1000.0, 0, 3, 0, 0, 3, &x, why,
                                          sizeof why), 0);
    CU_ASSERT(NEAR(x.window_bytes, 400.0));
    CU_ASSERT_EQUAL(x.freed, 600);
    CU_ASSERT(NEAR(x.exposed_fwd, 0.6) && NEAR(x.exposed_bwd, 0.6));
    apsolve_problem_free(&p);
}

static void test_refusals(void)
{
    ApsolveProblem *p = entry();
    ApsolveOffloadStage x;
    char why[256] = "";
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    /* TE never offloads the last layer */
    CU_ASSERT_EQUAL(apsolve_offload_stage(p, layers, 4, 1000.0, 0, 3, 0, 0, 4, &x, why,
                                          sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "below the stage's 4 layers"));
    /* no host link */
    CU_ASSERT_EQUAL(apsolve_offload_stage(p, layers, 4, 0.0, 0, 3, 0, 0, 1, &x, why,
                                          sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "host_link_bandwidth_gbs"));
    /* no per-layer record */
    CU_ASSERT_EQUAL(apsolve_offload_stage(p, layers, 2, 1000.0, 0, 3, 0, 0, 1, &x, why,
                                          sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "model_layer"));
    apsolve_problem_free(&p);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"one entry by hand", test_hand_counts},
        {"refusals", test_refusals},
    };
    return CUNIT_RUN("solver-offload", tests);
}
