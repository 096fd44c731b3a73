/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of reports/spec.c: ShardingSpec text formats exactly as the
 * profiler writes it and parses back into the same layout for every layout
 * of up to three dimensions on several logical meshes; malformed text is
 * rejected with a column; conversions are classified; broadcast->partial-sum
 * of a parameter (and only of a parameter) is flagged; verdicts.
 */
#include <CUnit/Basic.h>
#include <string.h>

#include "apreport.h"

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

static void test_format_literals(void)
{
    /* The strings the profiler's sharding test asserts (tests/sharding). */
    static const struct { int ndim, a, b, axes[4]; const char *text; } cases[] = {
        {2, 2, 1, {-1, 0}, "ShardingSpec((NoSharding(), Chunked(2)), (ShardedAxis(axis=0),))"},
        {1, 2, 1, {-1}, "ShardingSpec((NoSharding(),), (Replicated(replicas=2),))"},
        {0, 2, 1, {0}, "ShardingSpec((), (Replicated(replicas=2),))"},
        {4, 2, 1, {0, -1, -1, -1}, "ShardingSpec((Chunked(2), NoSharding(), NoSharding(), "
                                   "NoSharding()), (ShardedAxis(axis=0),))"},
        {2, 2, 4, {1, 0}, "ShardingSpec((Chunked(4), Chunked(2)), (ShardedAxis(axis=1), "
                          "ShardedAxis(axis=0)))"},
        {2, 2, 4, {-1, 1}, "ShardingSpec((NoSharding(), Chunked(4)), (Replicated(replicas=2), "
                           "ShardedAxis(axis=0)))"},
        {2, 2, 4, {2, -1}, "ShardingSpec((Chunked(8), NoSharding()), (ShardedAxis(axis=0),))"},
    };
    char s[512], err[128];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ApreportLayout l = lay(cases[i].ndim, cases[i].a, cases[i].b, cases[i].axes), p;
        apreport_spec_format(&l, s, sizeof(s));
        CU_ASSERT_STRING_EQUAL(s, cases[i].text);
        CU_ASSERT_EQUAL_FATAL(apreport_spec_parse(cases[i].text, cases[i].a, cases[i].b, &p, err,
                                                  sizeof(err)), 0);
        CU_ASSERT_EQUAL(p.ndim, l.ndim);
        for (int d = 0; d < l.ndim; d++)
            CU_ASSERT_EQUAL(p.mesh_axis_of_dim[d], l.mesh_axis_of_dim[d]);
    }
}

/* Every layout of ndim <= 3 (each mesh axis of size > 1 on at most one
 * dimension; 2 = both) formats and parses back to itself. */
static void test_round_trip_all(void)
{
    static const int meshes[][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {2, 4}, {4, 2}, {8, 1}, {1, 8}};
    char s[512], err[128], s2[512];
    int checked = 0;
    for (size_t m = 0; m < sizeof(meshes) / sizeof(meshes[0]); m++) {
        int a = meshes[m][0], b = meshes[m][1];
        for (int ndim = 0; ndim <= 3; ndim++) {
            int total = 1;
            for (int d = 0; d < ndim; d++)
                total *= 4;
            for (int code = 0; code < total; code++) {
                int axes[3], c = code, use0 = 0, use1 = 0, ok = 1;
                for (int d = 0; d < ndim; d++, c /= 4) {
                    axes[d] = c % 4 - 1;
                    use0 += axes[d] == 0 || axes[d] == 2;
                    use1 += axes[d] == 1 || axes[d] == 2;
                    if ((axes[d] == 0 && a == 1) || (axes[d] == 1 && b == 1) ||
                        (axes[d] == 2 && (a == 1 || b == 1)))
                        ok = 0;
                }
                if (!ok || use0 > 1 || use1 > 1)
                    continue;
                ApreportLayout l = lay(ndim, a, b, axes), p;
                apreport_spec_format(&l, s, sizeof(s));
                if (apreport_spec_parse(s, a, b, &p, err, sizeof(err)) != 0) {
                    CU_FAIL("a formatted spec does not parse");
                    fprintf(stderr, "%s on (%d,%d): %s\n", s, a, b, err);
                    continue;
                }
                CU_ASSERT_EQUAL(p.ndim, ndim);
                for (int d = 0; d < ndim; d++)
                    CU_ASSERT_EQUAL(p.mesh_axis_of_dim[d], axes[d]);
                apreport_spec_format(&p, s2, sizeof(s2));
                CU_ASSERT_STRING_EQUAL(s, s2);
                checked++;
            }
        }
    }
    CU_ASSERT(checked > 100);
}

static void test_parse_errors(void)
{
    ApreportLayout p;
    char err[128];
    /* Alpa's keyword spelling is accepted too. */
    CU_ASSERT_EQUAL(apreport_spec_parse("ShardingSpec(sharding=(NoSharding(), Chunked(chunks=[2])), "
                                        "mesh_mapping=(ShardedAxis(axis=0),))", 2, 1, &p, err,
                                        sizeof(err)), 0);
    CU_ASSERT_EQUAL(p.mesh_axis_of_dim[1], 0);
    CU_ASSERT_EQUAL(apreport_spec_parse("ShardingSpec((NoSharding(), Chunked(2)), (ShardedAxis(axis=0),)",
                                        2, 1, &p, err, sizeof(err)), APREPORT_EPARSE);
    CU_ASSERT(strstr(err, "column") != NULL);
    CU_ASSERT_EQUAL(apreport_spec_parse("Sharding((NoSharding(),), (Replicated(replicas=2),))", 2, 1,
                                        &p, err, sizeof(err)), APREPORT_EPARSE);
    CU_ASSERT_STRING_EQUAL(err, "column 1: expected 'ShardingSpec('");
    /* Chunk count that is no axis size of the mesh. */
    CU_ASSERT_EQUAL(apreport_spec_parse("ShardingSpec((Chunked(3),), (ShardedAxis(axis=0),))", 2, 1,
                                        &p, err, sizeof(err)), APREPORT_EPARSE);
    /* Replica count that does not match. */
    CU_ASSERT_EQUAL(apreport_spec_parse("ShardingSpec((NoSharding(),), (Replicated(replicas=4),))", 2,
                                        1, &p, err, sizeof(err)), APREPORT_EPARSE);
    /* Too many mapping entries for a 2 x 1 mesh. */
    CU_ASSERT_EQUAL(apreport_spec_parse("ShardingSpec((Chunked(2),), (ShardedAxis(axis=0), "
                                        "Replicated(replicas=2)))", 2, 1, &p, err, sizeof(err)),
                    APREPORT_EPARSE);
    CU_ASSERT_EQUAL(apreport_spec_parse("ShardingSpec((), (Replicated(replicas=2),)) x", 2, 1, &p,
                                        err, sizeof(err)), APREPORT_EPARSE);
    CU_ASSERT_EQUAL(apreport_spec_parse(NULL, 2, 1, &p, err, sizeof(err)), APREPORT_EINVAL);
}

static void test_shape_parse(void)
{
    int64_t d[8];
    CU_ASSERT_EQUAL(apreport_shape_parse("2048,8192", d, 8), 2);
    CU_ASSERT_EQUAL(d[0], 2048);
    CU_ASSERT_EQUAL(d[1], 8192);
    CU_ASSERT_EQUAL(apreport_shape_parse("", d, 8), 0);
    CU_ASSERT_EQUAL(apreport_shape_parse("(128, 128)", d, 8), 2);
    CU_ASSERT_EQUAL(apreport_shape_parse("12x", d, 8), -1);
    CU_ASSERT_EQUAL(apreport_shape_parse("1,2,3", d, 2), -1);
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
    CU_pSuite s;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("reports-spec", NULL, NULL);
    CU_add_test(s, "format literals", test_format_literals);
    CU_add_test(s, "round trip of every small layout", test_round_trip_all);
    CU_add_test(s, "parse errors", test_parse_errors);
    CU_add_test(s, "shape parse", test_shape_parse);
    CU_add_test(s, "classify conversions", test_classify);
    CU_add_test(s, "verdicts", test_verdicts);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
