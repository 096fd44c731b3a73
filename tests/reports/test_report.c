/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Report tests on databases built by fixtures.c: every dump matches its
 * golden file (tests/reports/golden/<model>/), placement specs in the
 * database parse back into the same layouts, resharding tasks are derived
 * and stored, report.json is valid JSON with the expected verdicts and
 * conversions, and approf compare's library matches two databases.
 * Usage: test_report GOLDEN_DIR [--regen] | --write DIR (builds the mlp
 * database and writes its report into DIR, for the HTML and CLI tests).
 */
#include <CUnit/Basic.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apreport.h"
#include "cunit_run.h"
#include "fixtures.h"

static const char *golden_dir;
static int regen;
static char tmpdir[256];

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1))) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = '\0';
        }
    }
    fclose(f);
    return buf;
}

static void compare_golden(const char *model, const char *outdir, const char *file)
{
    char got_path[512], want_path[512];
    snprintf(got_path, sizeof(got_path), "%s/%s", outdir, file);
    snprintf(want_path, sizeof(want_path), "%s/%s/%s", golden_dir, model, file);
    char *got = slurp(got_path), *want;
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    if (regen) {
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/%s", golden_dir, model);
        mkdir(dir, 0777);
        FILE *f = fopen(want_path, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fputs(got, f);
        fclose(f);
    }
    want = slurp(want_path);
    CU_ASSERT_PTR_NOT_NULL(want);
    if (want && strcmp(got, want)) {
        fprintf(stderr, "\n%s differs from %s\n", got_path, want_path);
        CU_FAIL("output differs from the golden file");
    }
    free(got);
    free(want);
}

static int build_and_report(const char *model, const char *outdir, int64_t *plan_id, char *dbpath,
                            size_t dblen)
{
    FixtureOptions fo = {1.0, 0, 1, 0};
    ApreportOptions opt = {0, model, 1};
    Costdb *db = NULL;
    ApreportReport *r = NULL;
    char err[512] = "";
    int rc;
    snprintf(dbpath, dblen, "%s/%s.db", tmpdir, model);
    if ((rc = fixture_build(dbpath, model, &fo, plan_id)) < 0) {
        fprintf(stderr, "fixture %s: %s\n", model, costdb_strerror(rc));
        return rc;
    }
    if ((rc = costdb_open(dbpath, COSTDB_OPEN_NOCREATE, &db, err, sizeof(err))) < 0)
        return rc;
    opt.plan_id = *plan_id;
    rc = apreport_load(db, &opt, &r, err, sizeof(err));
    if (rc == 0)
        rc = apreport_write_all(r, outdir, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "report %s: %s\n", model, err);
    apreport_free(&r);
    costdb_close(&db);
    return rc;
}

static void check_model(const char *model, size_t want_tasks)
{
    char outdir[512], dbpath[512], file[256], err[256];
    int64_t plan_id = 0;
    snprintf(outdir, sizeof(outdir), "%s/out-%s", tmpdir, model);
    CU_ASSERT_EQUAL_FATAL(build_and_report(model, outdir, &plan_id, dbpath, sizeof(dbpath)), 0);
    static const char *const files[] = {"input_placement_specs.txt", "output_placement_specs.txt",
                                        "resharding_tasks.txt", "stage_0.mem_usage.txt",
                                        "stage_1.mem_usage.txt", "plan.py"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(file, sizeof(file), "%s_%s", model, files[i]);
        compare_golden(model, outdir, file);
    }
    compare_golden(model, outdir, "dp_result.txt");
    compare_golden(model, outdir, "report.json");

    /* The derived tasks were stored, and specs parse back to themselves. */
    Costdb *db = NULL;
    CostdbReshardingTask *t = NULL;
    size_t nt = 0;
    CU_ASSERT_EQUAL_FATAL(costdb_open(dbpath, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_resharding_get(db, plan_id, &t, &nt), 0);
    CU_ASSERT_EQUAL(nt, want_tasks);
    free(t);
    CostdbPlan plan;
    CostdbPlanStage *st = NULL;
    size_t ns = 0, checked = 0;
    CU_ASSERT_EQUAL_FATAL(costdb_plan_get(db, plan_id, &plan, &st, &ns), 0);
    for (size_t k = 0; k < ns; k++) {
        CostdbPlacement *p = NULL;
        size_t np = 0;
        CU_ASSERT_EQUAL(costdb_placements_get(db, plan.sweep_id, st[k].start_layer, st[k].end_layer,
                                              st[k].submesh_index, st[k].config_index, &p, &np), 0);
        for (size_t i = 0; i < np; i++) {
            ApreportLayout l;
            char back[COSTDB_TEXT_MAX];
            CU_ASSERT_EQUAL(costdb_spec_parse(p[i].sharding_spec, st[k].logical_a,
                                                st[k].logical_b, &l, err, sizeof(err)), 0);
            costdb_spec_format(&l, back, sizeof(back));
            CU_ASSERT_STRING_EQUAL(back, p[i].sharding_spec);
            checked++;
        }
        free(p);
    }
    CU_ASSERT(checked >= 10);
    free(st);
    costdb_close(&db);
}

static json_t *load_json(const char *model)
{
    char path[512];
    json_error_t je;
    snprintf(path, sizeof(path), "%s/out-%s/report.json", tmpdir, model);
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        fprintf(stderr, "%s:%d: %s\n", path, je.line, je.text);
    return j;
}

static const char *verdict_of(json_t *root, size_t stage, const char *role, const char *name)
{
    json_t *ts = json_object_get(json_array_get(json_object_get(root, "stages"), stage), "tensors");
    size_t i;
    json_t *t;
    json_array_foreach(ts, i, t)
        if (!strcmp(json_string_value(json_object_get(t, "name")), name) &&
            !strcmp(json_string_value(json_object_get(t, "role")), role))
            return json_string_value(json_object_get(t, "verdict"));
    return "";
}

static void test_mlp(void)
{
    check_model("mlp", 1);
    json_t *j = load_json("mlp");
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(verdict_of(j, 0, "param", "layer0/dense/kernel"), "replicated (data parallel)");
    CU_ASSERT_STRING_EQUAL(verdict_of(j, 1, "param", "layer2/dense/kernel"),
                           "sharded weight (tensor/model parallel)");
    CU_ASSERT_STRING_EQUAL(verdict_of(j, 0, "input", "x"),
                           "sharded on the batch axis only (data parallel)");
    CU_ASSERT_STRING_EQUAL(verdict_of(j, 1, "input", "layer1/out"), "replicated activation");
    /* Stage 0 is data parallel on (2, 1): 4 parameter gradients all-reduce;
     * the boundary tensor goes from batch-split to replicated. */
    json_t *convs = json_object_get(j, "conversions"), *c;
    size_t i, allreduce = 0, gather = 0, flagged = 0;
    json_array_foreach(convs, i, c) {
        const char *k = json_string_value(json_object_get(c, "kind"));
        allreduce += !strcmp(k, "partial-sum->all-reduce");
        gather += !strcmp(k, "split->gather");
        flagged += json_is_true(json_object_get(c, "flagged"));
    }
    CU_ASSERT_EQUAL(allreduce, 4);
    CU_ASSERT_EQUAL(gather, 1);
    CU_ASSERT_EQUAL(flagged, 0);
    json_t *task = json_array_get(json_object_get(j, "resharding_tasks"), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(task, "strategy")), "local-allgather");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(task, "bytes")), 512 * 2048 * 4);
    /* 1F1B with 2 stages and 4 micro-batches: in flight 2 and 1. */
    json_t *pif = json_object_get(json_object_get(json_object_get(j, "schedules"), "1f1b"),
                                  "peak_in_flight");
    CU_ASSERT_EQUAL(json_integer_value(json_array_get(pif, 0)), 2);
    CU_ASSERT_EQUAL(json_integer_value(json_array_get(pif, 1)), 1);
    CU_ASSERT_FALSE(json_is_true(json_object_get(json_object_get(j, "deadlock"), "deadlocked")));
    json_decref(j);
}

static void test_resnet(void)
{
    check_model("resnet50", 1);
    json_t *j = load_json("resnet50");
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(verdict_of(j, 1, "param", "layer2/conv1/kernel"),
                           "sharded weight (tensor/model parallel)");
    CU_ASSERT_STRING_EQUAL(verdict_of(j, 1, "param", "layer3/fc/kernel"), "replicated (data parallel)");
    /* 2 micro-batches on 2 stages: the 2 x stages rule of thumb warns. */
    json_t *w = json_object_get(j, "warnings");
    CU_ASSERT(json_array_size(w) >= 1);
    CU_ASSERT(strstr(json_string_value(json_array_get(w, 0)), "2 x pipeline stages") != NULL);
    json_decref(j);
}

static void test_compare(void)
{
    char a[512], b[512], err[512] = "";
    FixtureOptions fa = {1.0, 0, 0, 0}, fb = {0.5, 1, 0, 0};
    int64_t unused = 0;
    Costdb *da = NULL, *db = NULL;
    ApreportCompare *c = NULL;
    ApreportCompareSummary s;
    snprintf(a, sizeof(a), "%s/a100.db", tmpdir);
    snprintf(b, sizeof(b), "%s/h100.db", tmpdir);
    CU_ASSERT_EQUAL_FATAL(fixture_build(a, "mlp", &fa, &unused), 0);
    CU_ASSERT_EQUAL_FATAL(fixture_build(b, "mlp", &fb, &unused), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(a, COSTDB_OPEN_READONLY, &da, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(b, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    ApreportCompareOptions o = {0, 0, "a100.db", "h100.db", 1};
    CU_ASSERT_EQUAL_FATAL(apreport_compare(da, db, &o, &c, err, sizeof(err)), 0);
    apreport_compare_summary(c, &s);
    /* mlp table: 10 ranges x 3 configs of (1, 2) + (0, 3) on (1, 4), fwd and bwd. */
    CU_ASSERT_EQUAL(s.only_a, 2);
    CU_ASSERT_EQUAL(s.only_b, 1);
    CU_ASSERT_EQUAL(s.matched, 31 * 2 - 2);
    CU_ASSERT_EQUAL(s.ratios, s.matched);
    CU_ASSERT_DOUBLE_EQUAL(s.geomean, 0.5, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(s.min_ratio, 0.5, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(s.max_ratio, 0.5, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(s.max_abs_peak_diff, 0, 0);
    CU_ASSERT_TRUE(s.models_match);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    CU_ASSERT_EQUAL(apreport_compare_write(c, "text", m), 0);
    fclose(m);
    /* Both sides planned by the solver. */
    CU_ASSERT(strstr(buf, "plan on A") && strstr(buf, "plan on B"));
    char *first = strstr(buf, "Result forward_stage_layer_ids");
    CU_ASSERT(first && strstr(first + 1, "Result forward_stage_layer_ids"));
    CU_ASSERT(strstr(buf, "only in A: (0, 0, (1, 2), (2, 1) f) fwd") != NULL);
    CU_ASSERT(strstr(buf, "Memory headroom: 5 % of each device's memory") != NULL);
    free(buf);
    buf = NULL;
    m = open_memstream(&buf, &len);
    CU_ASSERT_EQUAL(apreport_compare_write(c, "json", m), 0);
    fclose(m);
    json_error_t je;
    json_t *j = json_loads(buf, 0, &je);
    CU_ASSERT_PTR_NOT_NULL(j);
    if (j)
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(j, "summary"), "only_b")), 1);
    /* Each side's auto plan is made by apsolve's rule with its default
     * memory headroom: 5 % of each stage's memory is its reserve, and the
     * plan keeps it (the fixture's stages need 2 of 16 GiB). */
    for (size_t w = 0; j && w < 2; w++) {
        json_t *side = json_array_get(json_object_get(j, "sides"), w);
        json_t *st = json_object_get(json_object_get(side, "plan"), "stages");
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(side, "memory_headroom")), "5%");
        CU_ASSERT_TRUE(json_is_true(json_object_get(side, "headroom_kept")));
        CU_ASSERT(json_array_size(st) >= 1);
        for (size_t k = 0; k < json_array_size(st); k++) {
            json_int_t avail = json_integer_value(json_object_get(json_array_get(st, k),
                                                                  "available_memory"));
            json_int_t res = json_integer_value(json_object_get(json_array_get(st, k),
                                                                "memory_reserve"));
            CU_ASSERT(avail > 0);
            CU_ASSERT_EQUAL(res, (json_int_t)llround(avail * 0.05));
        }
    }
    json_decref(j);
    free(buf);
    CU_ASSERT_EQUAL(apreport_compare_write(c, "xml", stdout), APREPORT_EINVAL);
    apreport_compare_free(&c);
    CU_ASSERT_PTR_NULL(c);
    costdb_close(&da);
    costdb_close(&db);
}

/* A uniform plan (both stages on (1, 4) with logical (2, 2)) also gets the
 * LiBai / Megatron settings: dp 2, tp 2, pp 2, micro-batch 64 / 2 / 2 = 16. */
static void test_uniform_code(void)
{
    char path[512], err[512] = "";
    FixtureOptions fo = {1.0, 0, 1, 1};
    int64_t plan_id = 0;
    Costdb *db = NULL;
    ApreportReport *r = NULL;
    ApreportOptions opt = {0, NULL, 0};
    char *buf = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/uniform.db", tmpdir);
    CU_ASSERT_EQUAL_FATAL(fixture_build(path, "resnet50", &fo, &plan_id), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(apreport_load(db, &opt, &r, err, sizeof(err)), 0);
    FILE *m = open_memstream(&buf, &len);
    CU_ASSERT_EQUAL(apreport_write_code(r, m), 0);
    fclose(m);
    CU_ASSERT(strstr(buf, "submesh_logical_shapes=[(2, 2), (2, 2)]") != NULL);
    CU_ASSERT(strstr(buf, "# train.dist.data_parallel_size = 2\n") != NULL);
    CU_ASSERT(strstr(buf, "# train.dist.tensor_parallel_size = 2\n") != NULL);
    CU_ASSERT(strstr(buf, "# train.dist.pipeline_parallel_size = 2\n") != NULL);
    CU_ASSERT(strstr(buf, "# train.train_micro_batch_size = 16\n") != NULL);
    CU_ASSERT(strstr(buf, "# train.num_accumulation_steps = 2\n") != NULL);
    CU_ASSERT(strstr(buf, "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
                          "--micro-batch-size 16 --global-batch-size 64") != NULL);
    free(buf);
    apreport_free(&r);
    costdb_close(&db);
}

static void test_trace(void)
{
    char path[512];
    json_error_t je;
    snprintf(path, sizeof(path), "%s/out-mlp/trace.json", tmpdir);
    json_t *j = json_load_file(path, 0, &je), *ev;
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    size_t i, x = 0, fwd = 0;
    json_array_foreach(json_object_get(j, "traceEvents"), i, ev) {
        if (!strcmp(json_string_value(json_object_get(ev, "ph")), "X")) {
            x++;
            fwd += !strcmp(json_string_value(json_object_get(ev, "cat")), "forward");
            CU_ASSERT(json_number_value(json_object_get(ev, "dur")) >= 0);
        }
    }
    /* 2 stages x 4 micro-batches x (fwd + bwd) + 4 activations + 4 gradients. */
    CU_ASSERT_EQUAL(x, 2 * 4 * 2 + 8);
    CU_ASSERT_EQUAL(fwd, 8);
    json_decref(j);
}

static void test_missing_plan(void)
{
    char path[512], err[512] = "";
    FixtureOptions fo = {1.0, 0, 0, 0};
    int64_t unused = 0;
    Costdb *db = NULL;
    ApreportReport *r = NULL;
    ApreportOptions opt = {0, NULL, 0};
    snprintf(path, sizeof(path), "%s/noplan.db", tmpdir);
    CU_ASSERT_EQUAL_FATAL(fixture_build(path, "mlp", &fo, &unused), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(apreport_load(db, &opt, &r, err, sizeof(err)), APREPORT_ENOTFOUND);
    CU_ASSERT(strstr(err, "no plan") != NULL);
    opt.plan_id = 99;
    CU_ASSERT_EQUAL(apreport_load(db, &opt, &r, err, sizeof(err)), APREPORT_ENOTFOUND);
    CU_ASSERT_PTR_NULL(r);
    costdb_close(&db);
}

int main(int argc, char **argv)
{
    static const CunitTest tests[] = {
        {"tutorial mlp, 2 stages", test_mlp},
        {"resnet50, 2 stages", test_resnet},
        {"trace.json", test_trace},
        {"uniform plan as LiBai / Megatron settings", test_uniform_code},
        {"compare two databases", test_compare},
        {"missing plan", test_missing_plan},
    };
    if (argc == 3 && !strcmp(argv[1], "--write")) {
        int64_t plan_id;
        char dbpath[512];
        snprintf(tmpdir, sizeof(tmpdir), "%s", argv[2]);
        mkdir(tmpdir, 0777);
        return build_and_report("mlp", argv[2], &plan_id, dbpath, sizeof(dbpath)) ? 1 : 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--write-hostile")) {
        /* the hostile mlp database, DIR/hostile.db, for tests/reports/outputs.sh */
        FixtureOptions fo = {1.0, 0, 1, 0, 1};
        int64_t plan_id;
        char dbpath[512];
        mkdir(argv[2], 0777);
        snprintf(dbpath, sizeof(dbpath), "%s/hostile.db", argv[2]);
        return fixture_build(dbpath, "mlp", &fo, &plan_id) < 0 ? 1 : 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: test_report GOLDEN_DIR [--regen] | --write DIR | "
                "--write-hostile DIR\n");
        return 2;
    }
    /* the suite's own scratch directory (the --write modes above use the caller's) */
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/approf-reports-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    golden_dir = argv[1];
    regen = argc > 2 && !strcmp(argv[2], "--regen");
    int rc = CUNIT_RUN("reports-db", tests);
    if (rc == 0) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return rc;
}
