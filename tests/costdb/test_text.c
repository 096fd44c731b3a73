/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The database's text formats (costdb_text.h): ShardingSpec text formats
 * exactly as Alpa writes it and parses back into the same layout for every
 * layout of up to three dimensions on several logical meshes; malformed
 * text is refused with a column; shape text; dtype sizes.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"
#include "costdb_text.h"
#include "cunit_run.h"
#include "plan_options.h"

static CostdbLayout lay(int ndim, int a, int b, const int *axes)
{
    CostdbLayout l;
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
        CostdbLayout l = lay(cases[i].ndim, cases[i].a, cases[i].b, cases[i].axes), p;
        costdb_spec_format(&l, s, sizeof(s));
        CU_ASSERT_STRING_EQUAL(s, cases[i].text);
        CU_ASSERT_EQUAL_FATAL(costdb_spec_parse(cases[i].text, cases[i].a, cases[i].b, &p, err,
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
                CostdbLayout l = lay(ndim, a, b, axes), p;
                costdb_spec_format(&l, s, sizeof(s));
                if (costdb_spec_parse(s, a, b, &p, err, sizeof(err)) != 0) {
                    CU_FAIL("a formatted spec does not parse");
                    fprintf(stderr, "%s on (%d,%d): %s\n", s, a, b, err);
                    continue;
                }
                CU_ASSERT_EQUAL(p.ndim, ndim);
                for (int d = 0; d < ndim; d++)
                    CU_ASSERT_EQUAL(p.mesh_axis_of_dim[d], axes[d]);
                costdb_spec_format(&p, s2, sizeof(s2));
                CU_ASSERT_STRING_EQUAL(s, s2);
                checked++;
            }
        }
    }
    CU_ASSERT(checked > 100);
}

static void test_parse_errors(void)
{
    CostdbLayout p;
    char err[128];
    /* Alpa's keyword spelling is accepted too. */
    CU_ASSERT_EQUAL(costdb_spec_parse("ShardingSpec(sharding=(NoSharding(), Chunked(chunks=[2])), "
                                        "mesh_mapping=(ShardedAxis(axis=0),))", 2, 1, &p, err,
                                        sizeof(err)), 0);
    CU_ASSERT_EQUAL(p.mesh_axis_of_dim[1], 0);
    CU_ASSERT_EQUAL(costdb_spec_parse("ShardingSpec((NoSharding(), Chunked(2)), (ShardedAxis(axis=0),)",
                                        2, 1, &p, err, sizeof(err)), COSTDB_EPARSE);
    CU_ASSERT(strstr(err, "column") != NULL);
    CU_ASSERT_EQUAL(costdb_spec_parse("Sharding((NoSharding(),), (Replicated(replicas=2),))", 2, 1,
                                        &p, err, sizeof(err)), COSTDB_EPARSE);
    CU_ASSERT_STRING_EQUAL(err, "column 1: expected 'ShardingSpec('");
    /* Chunk count that is no axis size of the mesh. */
    CU_ASSERT_EQUAL(costdb_spec_parse("ShardingSpec((Chunked(3),), (ShardedAxis(axis=0),))", 2, 1,
                                        &p, err, sizeof(err)), COSTDB_EPARSE);
    /* Replica count that does not match. */
    CU_ASSERT_EQUAL(costdb_spec_parse("ShardingSpec((NoSharding(),), (Replicated(replicas=4),))", 2,
                                        1, &p, err, sizeof(err)), COSTDB_EPARSE);
    /* Too many mapping entries for a 2 x 1 mesh. */
    CU_ASSERT_EQUAL(costdb_spec_parse("ShardingSpec((Chunked(2),), (ShardedAxis(axis=0), "
                                        "Replicated(replicas=2)))", 2, 1, &p, err, sizeof(err)),
                    COSTDB_EPARSE);
    CU_ASSERT_EQUAL(costdb_spec_parse("ShardingSpec((), (Replicated(replicas=2),)) x", 2, 1, &p,
                                        err, sizeof(err)), COSTDB_EPARSE);
    CU_ASSERT_EQUAL(costdb_spec_parse(NULL, 2, 1, &p, err, sizeof(err)), COSTDB_EINVAL);
}

static void test_shape_parse(void)
{
    int64_t d[8];
    CU_ASSERT_EQUAL(costdb_shape_parse("2048,8192", d, 8), 2);
    CU_ASSERT_EQUAL(d[0], 2048);
    CU_ASSERT_EQUAL(d[1], 8192);
    CU_ASSERT_EQUAL(costdb_shape_parse("", d, 8), 0);
    CU_ASSERT_EQUAL(costdb_shape_parse("(128, 128)", d, 8), 2);
    CU_ASSERT_EQUAL(costdb_shape_parse("12x", d, 8), -1);
    CU_ASSERT_EQUAL(costdb_shape_parse("1,2,3", d, 2), -1);
}

static void test_shape_format(void)
{
    int64_t d[3] = {2048, 8192, 0}, back[3];
    char s[64];
    costdb_shape_format(d, 2, s, sizeof s);
    CU_ASSERT_STRING_EQUAL(s, "2048,8192");
    CU_ASSERT_EQUAL(costdb_shape_parse(s, back, 3), 2);
    CU_ASSERT(back[0] == 2048 && back[1] == 8192);
    costdb_shape_format(d, 0, s, sizeof s);
    CU_ASSERT_STRING_EQUAL(s, "");
    CU_ASSERT_EQUAL(costdb_shape_parse(s, back, 3), 0);
    costdb_shape_format(d, 3, s, 6);
    CU_ASSERT_STRING_EQUAL(s, "2048,");
}

static void test_dtype_bytes(void)
{
    CU_ASSERT_EQUAL(costdb_dtype_bytes("f32"), 4);
    CU_ASSERT_EQUAL(costdb_dtype_bytes("bf16"), 2);
    CU_ASSERT_EQUAL(costdb_dtype_bytes("float16"), 2);
    CU_ASSERT_EQUAL(costdb_dtype_bytes("f64"), 8);
    CU_ASSERT_EQUAL(costdb_dtype_bytes("i8"), 1);
    CU_ASSERT_EQUAL(costdb_dtype_bytes("something"), 4);
    CU_ASSERT_EQUAL(costdb_dtype_bytes(NULL), 4);
}

/* Plan options: the writer's text is what apsolve always stored (byte for
 * byte), the reader gives it back, and malformed or out-of-range text is
 * refused with its column. */
static void test_plan_options(void)
{
    CostdbPlanOptions o = {.micro_batches = 16, .global_batch = 256, .micro_batch_size = 16,
                           .memory_budget = 0, .max_stages = 0, .inference = 0,
                           .objective = COSTDB_OBJECTIVE_FULL, .virtual_stages = 1}, back;
    char text[1024], err[200];
    snprintf(o.tool, sizeof o.tool, "apsolve 1.0");
    snprintf(o.stage_option, sizeof o.stage_option, "3d");
    snprintf(o.schedule, sizeof o.schedule, "interleaved");
    o.virtual_stages = 2;
    o.has_layout = 1;
    o.layout = (CostdbPlanLayout){2, 4, 2, 1, 1, 2, 4, "selective"};
    CU_ASSERT_FATAL(costdb_plan_options_format(&o, text, sizeof text) == 0);
    CU_ASSERT_STRING_EQUAL(text,
        "{\"tool\": \"apsolve 1.0\", \"stage_option\": \"3d\", \"micro_batches\": 16, "
        "\"global_batch\": 256, \"micro_batch_size\": 16, \"memory_budget\": 0, "
        "\"max_stages\": 0, \"inference\": false, \"objective\": \"full\", "
        "\"schedule\": \"interleaved\", \"virtual_stages\": 2, \"parallel\": {\"dp\": 2, "
        "\"tp\": 4, \"pp\": 2, \"sp\": 1, \"zero\": 1, \"recompute\": \"selective\", "
        "\"vpp\": 2, \"mbs\": 4}}");
    CU_ASSERT_FATAL(costdb_plan_options_parse(text, &back, err, sizeof err) == 0);
    CU_ASSERT(back.objective == COSTDB_OBJECTIVE_FULL && back.virtual_stages == 2 &&
              back.has_layout && back.layout.tp == 4 && back.layout.zero == 1 &&
              back.layout.mbs == 4 && back.micro_batches == 16 && back.global_batch == 256);
    CU_ASSERT_STRING_EQUAL(back.schedule, "interleaved");
    CU_ASSERT_STRING_EQUAL(back.layout.recompute, "selective");
    CU_ASSERT_STRING_EQUAL(back.tool, "apsolve 1.0");
    /* HSDP and reshard_after_forward (docs/hsdp.md): written only when
     * given, read back; "raf": 0 is raf_off */
    o.tool[0] = '\0';
    o.layout.zero = 3;
    o.layout.dp = 8;
    o.layout.dp_shard = 4;
    o.layout.raf_off = 1;
    CU_ASSERT_FATAL(costdb_plan_options_format(&o, text, sizeof text) == 0);
    CU_ASSERT(strstr(text, "\"mbs\": 4, \"dp_shard\": 4, \"dp_replicate\": 2, \"raf\": 0}") !=
              NULL);
    CU_ASSERT_FATAL(costdb_plan_options_parse(text, &back, err, sizeof err) == 0);
    CU_ASSERT(back.layout.dp_shard == 4 && back.layout.raf_off == 1 && back.layout.zero == 3);
    o.layout.raf_off = 0;
    CU_ASSERT_FATAL(costdb_plan_options_format(&o, text, sizeof text) == 0);
    CU_ASSERT(strstr(text, "\"raf\": 1}") != NULL);
    CU_ASSERT_FATAL(costdb_plan_options_parse(text, &back, err, sizeof err) == 0);
    CU_ASSERT(back.layout.dp_shard == 4 && back.layout.raf_off == 0);
    CU_ASSERT(costdb_plan_options_parse("{\"parallel\": {\"raf\": 2}}", &back, err, sizeof err) ==
              COSTDB_EPARSE);
    o.layout.dp_shard = 0;
    o.layout.zero = 1;
    o.layout.dp = 2;
    snprintf(o.tool, sizeof o.tool, "apsolve 1.0");
    /* spacing, unknown keys (a newer writer) and no options at all */
    CU_ASSERT(costdb_plan_options_parse("{\"schedule\":\"gpipe\",\"x\":[1,{\"y\":null}],"
                                        "\"objective\":\"alpa\"}", &back, err, sizeof err) == 0);
    CU_ASSERT(back.objective == COSTDB_OBJECTIVE_ALPA && !strcmp(back.schedule, "gpipe") &&
              back.virtual_stages == 1 && !back.has_layout);
    CU_ASSERT(costdb_plan_options_parse("", &back, err, sizeof err) == 0);
    CU_ASSERT(back.objective == COSTDB_OBJECTIVE_UNKNOWN && back.schedule[0] == '\0');
    /* a hostile tool name is escaped by the writer and read back whole */
    snprintf(o.tool, sizeof o.tool, "a\"b\\c\n");
    CU_ASSERT_FATAL(costdb_plan_options_format(&o, text, sizeof text) == 0);
    CU_ASSERT(costdb_plan_options_parse(text, &back, err, sizeof err) == 0);
    CU_ASSERT_STRING_EQUAL(back.tool, "a\"b\\c\n");
    /* refused: bad syntax, unknown schedule, out of range, too deep, trailing */
    CU_ASSERT(costdb_plan_options_parse("{\"schedule\": \"zigzag\"}", &back, err, sizeof err) ==
              COSTDB_EPARSE);
    CU_ASSERT(strstr(err, "column") && strstr(err, "zigzag"));
    CU_ASSERT(costdb_plan_options_parse("{\"virtual_stages\": 99999}", &back, err, sizeof err) ==
              COSTDB_EPARSE);
    CU_ASSERT(costdb_plan_options_parse("{\"micro_batches\": 1.5}", &back, err, sizeof err) ==
              COSTDB_EPARSE);
    CU_ASSERT(costdb_plan_options_parse("{\"parallel\": {\"zero\": 4}}", &back, err,
                                        sizeof err) == COSTDB_EPARSE);
    CU_ASSERT(costdb_plan_options_parse("{\"a\": [[[[[[[[[[1]]]]]]]]]]}", &back, err,
                                        sizeof err) == COSTDB_EPARSE);
    CU_ASSERT(costdb_plan_options_parse("{} x", &back, err, sizeof err) == COSTDB_EPARSE);
    CU_ASSERT(costdb_plan_options_parse("{\"tool\": \"x", &back, err, sizeof err) ==
              COSTDB_EPARSE);
    CU_ASSERT(costdb_plan_options_parse("{\"objective\" \"full\"}", &back, err, sizeof err) ==
              COSTDB_EPARSE);
    /* one string member of a stored object (a model's options) */
    {
        char v[16];
        CU_ASSERT(costdb_json_member_text("{\"preset\": \"llama-3-8b\", \"x\": {\"preset\": 1}}",
                                          "preset", v, sizeof v) == 0);
        CU_ASSERT_STRING_EQUAL(v, "llama-3-8b");
        CU_ASSERT(costdb_json_member_text("{\"x\": \"\\\"preset\\\": \\\"no\\\"\"}", "preset", v,
                                          sizeof v) == -1 && v[0] == '\0');
        CU_ASSERT(costdb_json_member_text("{\"preset\": 3}", "preset", v, sizeof v) == -1);
        CU_ASSERT(costdb_json_member_text("{\"preset\": \"a-name-longer-than-16\"}", "preset", v,
                                          sizeof v) == -1);
        CU_ASSERT(costdb_json_member_text("not json", "preset", v, sizeof v) == -1);
    }
    /* a buffer too small for the text */
    CU_ASSERT(costdb_plan_options_format(&o, text, 40) == COSTDB_EINVAL);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"format literals", test_format_literals},
        {"round trip of every small layout", test_round_trip_all},
        {"parse errors", test_parse_errors},
        {"shape parse", test_shape_parse},
        {"shape format", test_shape_format},
        {"dtype sizes", test_dtype_bytes},
        {"plan options", test_plan_options},
    };
    return CUNIT_RUN("costdb_text", tests);
}
