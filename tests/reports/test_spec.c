/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of reports/spec.c: conversions are classified;
 * broadcast->partial-sum of a parameter (and only of a parameter) is
 * flagged; verdicts. The ShardingSpec text itself: tests/costdb/test_text.c.
 */
#include <CUnit/Basic.h>
#include <string.h>

#include "apreport.h"
#include "cunit_run.h"

static ApreportLayout lay(int ndim, int a, int b, const int *axes)
{
    ApreportLayout l;
    memset(&l, 0, sizeof(l));
    l.ndim = ndim;
    l.logical_a = a;
    l.logical_b = b;
    for (int d = 0; d < ndim; d++)
        l.mesh_axis_of_dim[d] = axes[d];
    return l;
}

static void test_classify(void)
{
    ApreportSbp B = {APREPORT_SBP_B, -1}, P = {APREPORT_SBP_P, -1};
    ApreportSbp S0 = {APREPORT_SBP_S, 0}, S1 = {APREPORT_SBP_S, 1};
    CU_ASSERT_EQUAL(apreport_classify(S0, B), APREPORT_CONV_SPLIT_GATHER);
    CU_ASSERT_EQUAL(apreport_classify(P, B), APREPORT_CONV_PSUM_ALLREDUCE);
    CU_ASSERT_EQUAL(apreport_classify(P, S1), APREPORT_CONV_PSUM_REDUCE_SCATTER);
    CU_ASSERT_EQUAL(apreport_classify(B, S0), APREPORT_CONV_BCAST_SPLIT);
    CU_ASSERT_EQUAL(apreport_classify(B, P), APREPORT_CONV_BCAST_PSUM);
    CU_ASSERT_EQUAL(apreport_classify(S0, S1), APREPORT_CONV_SPLIT_SPLIT);
    CU_ASSERT_EQUAL(apreport_classify(S0, S0), APREPORT_CONV_NONE);
    CU_ASSERT_EQUAL(apreport_classify(B, B), APREPORT_CONV_NONE);
    CU_ASSERT_EQUAL(apreport_classify(P, P), APREPORT_CONV_NONE);
    CU_ASSERT_STRING_EQUAL(apreport_conversion_name(APREPORT_CONV_SPLIT_GATHER), "split->gather");
    CU_ASSERT_STRING_EQUAL(apreport_conversion_name(APREPORT_CONV_PSUM_REDUCE_SCATTER),
                           "partial-sum->reduce-scatter");
    CU_ASSERT_STRING_EQUAL(apreport_conversion_name(APREPORT_CONV_BCAST_PSUM),
                           "broadcast->partial-sum");
    CU_ASSERT_STRING_EQUAL(apreport_conversion_collective(APREPORT_CONV_PSUM_ALLREDUCE), "all-reduce");
    CU_ASSERT_TRUE(apreport_conversion_flagged(APREPORT_CONV_BCAST_PSUM, "param"));
    CU_ASSERT_FALSE(apreport_conversion_flagged(APREPORT_CONV_BCAST_PSUM, "input"));
    CU_ASSERT_FALSE(apreport_conversion_flagged(APREPORT_CONV_PSUM_ALLREDUCE, "param"));
    /* SBP of a layout per axis. */
    int axes[2] = {1, -1};
    ApreportLayout l = lay(2, 2, 4, axes);
    ApreportSbp s0 = apreport_layout_sbp(&l, 0), s1 = apreport_layout_sbp(&l, 1);
    CU_ASSERT_EQUAL(s0.kind, APREPORT_SBP_B);
    CU_ASSERT_EQUAL(s1.kind, APREPORT_SBP_S);
    CU_ASSERT_EQUAL(s1.dim, 0);
}

static void test_verdicts(void)
{
    int none[2] = {-1, -1}, batch[2] = {0, -1}, col[2] = {-1, 1}, both[2] = {2, -1};
    ApreportLayout r = lay(2, 2, 1, none), bt = lay(2, 2, 1, batch), c = lay(2, 1, 2, col);
    ApreportLayout one = lay(2, 1, 1, none), bb = lay(2, 2, 2, both);
    CU_ASSERT_EQUAL(apreport_verdict("param", "layer0/dense/kernel", &r), APREPORT_VERDICT_REPLICATED);
    CU_ASSERT_EQUAL(apreport_verdict("param", "layer2/dense/kernel", &c),
                    APREPORT_VERDICT_SHARDED_WEIGHT);
    CU_ASSERT_EQUAL(apreport_verdict("param", "opt_state/mu/layer2/kernel", &c),
                    APREPORT_VERDICT_SHARDED_OPT);
    CU_ASSERT_EQUAL(apreport_verdict("param", "w", &one), APREPORT_VERDICT_SINGLE);
    CU_ASSERT_EQUAL(apreport_verdict("input", "x", &bt), APREPORT_VERDICT_BATCH_SHARDED);
    CU_ASSERT_EQUAL(apreport_verdict("output", "h", &bb), APREPORT_VERDICT_BATCH_SHARDED);
    CU_ASSERT_EQUAL(apreport_verdict("input", "h", &r), APREPORT_VERDICT_ACT_REPLICATED);
    CU_ASSERT_EQUAL(apreport_verdict("output", "h", &c), APREPORT_VERDICT_ACT_SHARDED);
    CU_ASSERT_STRING_EQUAL(apreport_verdict_name(APREPORT_VERDICT_REPLICATED),
                           "replicated (data parallel)");
}

int main(void)
{
    static const CunitTest tests[] = {
        {"classify conversions", test_classify},
        {"verdicts", test_verdicts},
    };
    return CUNIT_RUN("reports-spec", tests);
}
