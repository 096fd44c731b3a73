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

int main(void)
{
    static const CunitTest tests[] = {
        {"composed ranges and approf's error codes", test_compose},
    };
    return CUNIT_RUN("compose", tests);
}
