/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profile mode individual's composition (profiler/sweep/compose.c): range
 * entries summed from single-layer entries, and its errors in approf's
 * space (APPROF_E*), not costdb's: -6 is COSTDB_EINVAL but
 * APPROF_EINFEASIBLE, so a costdb code from profiler code read as an approf
 * one says the wrong thing (issue 37 item 9).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "sweep/compose.h"

static CostdbEntry single(int layer, int phase, double cost, int64_t peak)
{
    CostdbEntry e;
    memset(&e, 0, sizeof e);
    e.start_layer = e.end_layer = layer;
    e.phase = phase ? COSTDB_BWD : COSTDB_FWD;
    e.compute_cost = cost;
    e.peak_memory = peak;
    e.available_memory = 1000;
    e.repeats = 1;
    e.apply_cost = 0.5;
    e.status = COSTDB_STATUS_OK;
    return e;
}

static void test_compose(void)
{
    /* 3 layers on one submesh (1x2) of a 1x4 cluster, one config */
    CostdbEntry have[6] = {single(0, 0, 1, 10), single(0, 1, 2, 10), single(1, 0, 3, 20),
                           single(1, 1, 4, 20), single(2, 0, 5, 30), single(2, 1, 6, 30)};
    ApprofMeshShape mesh = {1, 2};
    int n_configs = 1;
    CostdbEntry *out = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(approf_compose_individual(have, 6, 3, &mesh, 1, &n_configs, 4, &out,
                                                    &n), APPROF_OK);
    /* (0,1), (0,2), (1,2), each phase */
    CU_ASSERT_EQUAL_FATAL(n, 6);
    CU_ASSERT(out[0].start_layer == 0 && out[0].end_layer == 1 && out[0].phase == COSTDB_FWD);
    CU_ASSERT_EQUAL(out[0].compute_cost, 1 + 3);
    CU_ASSERT_EQUAL(out[2].compute_cost, 1 + 3 + 5);
    CU_ASSERT_EQUAL(out[3].peak_memory, 10 + 20 + 30);
    CU_ASSERT_EQUAL(out[4].apply_cost, 0.5 + 0.5);
    free(out);
    out = NULL;
    /* sizes out of range: approf's EINVAL (COSTDB_EINVAL is APPROF_EINFEASIBLE's -6) */
    CU_ASSERT_EQUAL(approf_compose_individual(have, 6, 0, &mesh, 1, &n_configs, 4, &out, &n),
                    APPROF_EINVAL);
    CU_ASSERT_EQUAL(approf_compose_individual(have, 6, 3, &mesh, 0, &n_configs, 4, &out, &n),
                    APPROF_EINVAL);
    n_configs = -1;
    CU_ASSERT_EQUAL(approf_compose_individual(have, 6, 3, &mesh, 1, &n_configs, 4, &out, &n),
                    APPROF_EINVAL);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(n, 0);
}

/* The activation-sized part of the transient (schema 17) composes as the
 * transient does, the largest of the layers' (a layer's part outside (0, its
 * transient] is none), so the composed part is at most the composed
 * transient and 0 (NULL) when no layer has one. */
static void test_compose_activation(void)
{
    CostdbEntry have[6] = {single(0, 0, 1, 10), single(0, 1, 2, 10), single(1, 0, 3, 20),
                           single(1, 1, 4, 20), single(2, 0, 5, 30), single(2, 1, 6, 30)};
    /* forward: transients 8, 6, 9 with parts 5, 6, 0 (NULL); backward:
     * transients 7, 7, 7 with parts 4, 9 (more than its transient: none), 0 */
    static const int64_t temp[6] = {8, 7, 6, 7, 9, 7}, act[6] = {5, 4, 6, 9, 0, 0};
    ApprofMeshShape mesh = {1, 2};
    int n_configs = 1;
    CostdbEntry *out = NULL;
    size_t n = 0;
    for (int k = 0; k < 6; k++) {
        have[k].temp_buffer_size = temp[k];
        have[k].temp_activation_size = act[k];
    }
    CU_ASSERT_EQUAL_FATAL(approf_compose_individual(have, 6, 3, &mesh, 1, &n_configs, 4, &out,
                                                    &n), APPROF_OK);
    CU_ASSERT_EQUAL_FATAL(n, 6);
    /* (0,1) fwd, bwd; (0,2) fwd, bwd; (1,2) fwd, bwd */
    CU_ASSERT_EQUAL(out[0].temp_buffer_size, 8);
    CU_ASSERT_EQUAL(out[0].temp_activation_size, 6);
    CU_ASSERT_EQUAL(out[1].temp_buffer_size, 7);
    CU_ASSERT_EQUAL(out[1].temp_activation_size, 4);
    CU_ASSERT_EQUAL(out[2].temp_buffer_size, 9);
    CU_ASSERT_EQUAL(out[2].temp_activation_size, 6);
    CU_ASSERT_EQUAL(out[3].temp_activation_size, 4);
    CU_ASSERT_EQUAL(out[4].temp_buffer_size, 9);
    CU_ASSERT_EQUAL(out[4].temp_activation_size, 6);
    CU_ASSERT_EQUAL(out[5].temp_activation_size, 0); /* no layer has one: NULL */
    for (size_t k = 0; k < n; k++)
        CU_ASSERT(out[k].temp_activation_size >= 0 &&
                  out[k].temp_activation_size <= out[k].temp_buffer_size);
    free(out);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"composed ranges and approf's error codes", test_compose},
        {"the activation-sized transient composes as the transient", test_compose_activation},
    };
    return CUNIT_RUN("compose", tests);
}
