/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The micro-batch family of an approf sweep command
 * (profiler/sweep/sweep_family.c): the sizes asked, the default family of
 * the global batch, or one sweep, and the usage errors.
 */
#include <CUnit/Basic.h>
#include <string.h>

#include "cunit_run.h"
#include "sweep/sweep_family.h"

static ApprofSweepConfig config(int64_t gb, int micro_batches)
{
    ApprofSweepConfig c;
    memset(&c, 0, sizeof c);
    c.model_name = "mlp";
    c.global_batch = gb;
    c.micro_batches = micro_batches;
    c.shard_n = 1;
    return c;
}

static void test_family(void)
{
    ApprofSweepConfig c = config(32, 16);
    ApprofSweepFamily f;
    int64_t asked[2] = {2, 8}, bad[1] = {3};
    char err[256];

    /* the default: 1, 2, 4, 8, 16 micro-batches of 32 */
    CU_ASSERT_EQUAL_FATAL(approf_sweep_family(&c, NULL, 0, 0, &f, err, sizeof err), 0);
    CU_ASSERT(f.automatic && f.n == 5 && f.global_batch == 32);
    CU_ASSERT(f.sizes[0] == 32 && f.sizes[4] == 2);
    CU_ASSERT_EQUAL(approf_sweep_family_count(&f, 4), 16);
    /* asked sizes, in their order */
    CU_ASSERT_EQUAL_FATAL(approf_sweep_family(&c, asked, 2, 0, &f, err, sizeof err), 0);
    CU_ASSERT(!f.automatic && f.n == 2 && f.sizes[0] == 2 && f.sizes[1] == 8);
    CU_ASSERT_EQUAL(approf_sweep_family_count(&f, 0), 16);
    CU_ASSERT_EQUAL(approf_sweep_family(&c, bad, 1, 0, &f, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_STRING_EQUAL(err, "--micro-batch-sizes: 3 does not divide the global batch 32");
    /* --micro-batches: one sweep, whose count divides the batch */
    CU_ASSERT_EQUAL(approf_sweep_family(&c, NULL, 0, 1, &f, err, sizeof err), 0);
    CU_ASSERT(f.n == 0 && f.global_batch == 32);
    c.micro_batches = 3;
    CU_ASSERT_EQUAL(approf_sweep_family(&c, NULL, 0, 1, &f, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_STRING_EQUAL(err, "--batch 32 is not divisible by --micro-batches 3");
    /* one shard of a split sweep: one sweep */
    c = config(32, 16);
    c.shard_n = 2;
    CU_ASSERT_EQUAL(approf_sweep_family(&c, NULL, 0, 0, &f, err, sizeof err), 0);
    CU_ASSERT_EQUAL(f.n, 0);
    /* a batch of one size: one sweep at the given count */
    c = config(1, 1);
    CU_ASSERT_EQUAL(approf_sweep_family(&c, NULL, 0, 0, &f, err, sizeof err), 0);
    CU_ASSERT(f.n == 0 && !f.automatic && f.global_batch == 1);
    /* a model file without --batch: its own, decided when it is built */
    c = config(0, 4);
    c.model_file = "m.json";
    CU_ASSERT_EQUAL(approf_sweep_family(&c, NULL, 0, 0, &f, err, sizeof err), 0);
    CU_ASSERT(f.n == 0 && f.global_batch == 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"sizes asked, the default family, one sweep", test_family},
    };
    return CUNIT_RUN("family", tests);
}
