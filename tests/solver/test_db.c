/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The solver on a real database: a small 1x4 sweep (4 layers, Alpa's
 * submeshes and configs, memory statistics, a failed and a missing entry)
 * is written with the costdb API; the adapter must build the costs and
 * max_n_succ_stages of docs/alpa-semantics.md, the solver's optimum must match the
 * brute force on what was loaded, and a stored plan must read back. Plan
 * evaluation (manual, uniform, 3-D), the plan-text parsers and the
 * infeasibility explanation are checked here too.
 * With "--make-fixture PATH" it only writes the database (for the CLI test).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "context_parallel.h"
#include "costdb.h"
#include "cunit_run.h"
#include "oracle.h"
#include "session.h"

#define GB (1024LL * 1024 * 1024)

static char g_path[256];

static int make_fixture(const char *path, int64_t *sweep_id)
{
    static const int cfg_a[3][4] = {{1, 1}, {2, 1, 2}, {4, 2, 1, 4}};
    static const int cfg_b[3][4] = {{1, 1}, {1, 2, 1}, {1, 2, 4, 1}};
    static const int cfg_n[3] = {2, 3, 4};
    CostdbSubmesh subs[3] = {{0, 1, 1}, {1, 1, 2}, {2, 1, 4}};
    CostdbConfig cfgs[9];
    CostdbEntry *e = NULL;
    CostdbSweep sw;
    Costdb *db = NULL;
    char err[256];
    size_t nc = 0, ne = 0;
    int rc = -1;

    unlink(path);
    if (costdb_open(path, 0, &db, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    for (int s = 0; s < 3; s++)
        for (int c = 0; c < cfg_n[s]; c++)
            cfgs[nc++] = (CostdbConfig){s, c, cfg_a[s][c], cfg_b[s][c], c == cfg_n[s] - 1 ? -1 : 0};
    memset(&sw, 0, sizeof sw);
    snprintf(sw.name, sizeof sw.name, "fixture");
    sw.cluster_hosts = 1;
    sw.cluster_gpus = 4;
    sw.global_batch = 32;
    sw.micro_batches = 4;
    sw.num_layers = 4;
    snprintf(sw.submesh_space, sizeof sw.submesh_space, "power_of_two");
    snprintf(sw.backend, sizeof sw.backend, "analytic");
    sw.status = COSTDB_SWEEP_COMPLETE;
    if (costdb_sweep_create(db, &sw, subs, 3, cfgs, nc))
        goto cleanup;
    e = calloc(10 * 3 * 4 * 2, sizeof *e);
    if (!e)
        goto cleanup;
    for (int i = 0; i < 4; i++)
        for (int j = i; j < 4; j++)
            for (int s = 0; s < 3; s++) {
                int dev = 1 << s, len = j - i + 1;
                if (s == 2 && !(i == 0 && j == 3))
                    continue; /* the whole cluster: (0, L-1) only */
                for (int c = 0; c < cfg_n[s]; c++)
                    for (int ph = 0; ph < 2; ph++) {
                        CostdbEntry *x = &e[ne];
                        if (i == 1 && j == 1 && s == 1 && c == 1 && ph == 1)
                            continue; /* missing backward entry */
                        memset(x, 0, sizeof *x);
                        x->start_layer = i;
                        x->end_layer = j;
                        x->submesh_index = s;
                        x->config_index = c;
                        x->phase = ph ? COSTDB_BWD : COSTDB_FWD;
                        x->compute_cost = (ph ? 0.02 : 0.01) * len / dev * (1 + 0.125 * c);
                        x->peak_memory = (ph ? 2 : 1) * len * GB / dev;
                        x->intermediate_size = len * GB / (4 * dev) * (ph ? 1 : 2);
                        x->initial_size = len * GB / (2 * dev);
                        x->available_memory = 8 * GB;
                        x->apply_cost = -1.0; /* a database before schema 2 */
                        x->repeats = 1;
                        x->status = COSTDB_STATUS_OK;
                        if (i == 0 && j == 0 && s == 0 && c == 0 && ph == 1) {
                            x->status = COSTDB_STATUS_FAILED;
                            x->compute_cost = INFINITY;
                            snprintf(x->error, sizeof x->error, "worker died");
                        }
                        ne++;
                    }
            }
    if (costdb_entries_put(db, sw.id, e, ne, 0))
        goto cleanup;
    if (sweep_id)
        *sweep_id = sw.id;
    rc = 0;
cleanup:
    if (rc)
        fprintf(stderr, "fixture: %s\n", costdb_errmsg(db));
    free(e);
    costdb_close(&db);
    return rc;
}

static void test_adapter(void)
{
    Costdb *db = NULL;
    ApsolveProblem *p = NULL;
    ApsolveOptions o = {4, 0, 0, 0, 0};
    ApsolvePlan *pl = NULL;
    CostdbPlan got;
    CostdbPlanStage *st = NULL;
    size_t n = 0, idx;
    int64_t sweep = 0, id = 0;
    char err[256];

    CU_ASSERT_FATAL(make_fixture(g_path, &sweep) == 0);
    CU_ASSERT_FATAL(costdb_open(g_path, COSTDB_OPEN_NOCREATE, &db, err, sizeof err) == 0);
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, sweep, &o, &p) == APSOLVE_OK);
    CU_ASSERT(p->num_layers == 4 && p->num_devices == 4);
    CU_ASSERT(p->num_submeshes == 3 && p->num_configs == 4);
    CU_ASSERT(p->configs[2 * 4 + 3].valid && p->configs[2 * 4 + 3].force_batch_dim == -1);
    CU_ASSERT(!p->configs[0 * 4 + 2].valid);
    /* (0..1, (1,2), c=0): fwd 0.01, bwd 0.02 -> 0.03; peak max(1, 2) GB,
     * intermediate max(0.5, 0.25) GB, initial 0.5 GB, avail 8 GB:
     * floor((8 - 2 - 0.5) / 0.5) - 1 = 10. */
    idx = apsolve_index(p, 0, 1, 1, 0);
    CU_ASSERT(fabs(p->cost[idx] - 0.03) < 1e-15);
    CU_ASSERT(p->max_n_succ_stages[idx] == 10);
    CU_ASSERT(apsolve_memory_at(p, idx)->peak == 2 * GB);
    /* (0..3, (1,1)): peak 8 GB alone exceeds 8 GB minus initial: never fits. */
    CU_ASSERT(p->max_n_succ_stages[apsolve_index(p, 0, 3, 0, 0)] == -1);
    /* Failed and missing entries are +inf. */
    CU_ASSERT(isinf(p->cost[apsolve_index(p, 0, 0, 0, 0)]));
    CU_ASSERT(isinf(p->cost[apsolve_index(p, 1, 1, 1, 1)]));
    CU_ASSERT(isinf(p->cost[apsolve_index(p, 1, 2, 2, 0)]));
    CU_ASSERT(!isinf(p->cost[apsolve_index(p, 0, 3, 2, 0)]));

    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT(pl->cost == brute_force(p, 4, 0, 0));
    CU_ASSERT(apsolve_plan_store(db, p, &o, pl, "auto", "{\"test\": 1}", &id) == APSOLVE_OK);
    CU_ASSERT_FATAL(costdb_plan_get(db, id, &got, &st, &n) == 0);
    CU_ASSERT(n == pl->n_stages);
    CU_ASSERT(got.cost == pl->cost && strcmp(got.kind, "auto") == 0);
    CU_ASSERT(got.sweep_id == sweep && got.micro_batches == 4 && got.feasible == 1);
    for (size_t k = 0; k < n; k++) {
        CU_ASSERT(st[k].start_layer == pl->stages[k].start_layer);
        CU_ASSERT(st[k].end_layer == pl->stages[k].end_layer);
        CU_ASSERT(st[k].config_index == pl->stages[k].config);
        CU_ASSERT(st[k].fwd_cost + st[k].bwd_cost == pl->stages[k].cost);
    }
    free(st);
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);

    /* A 1.5 GB budget: nothing fits (the least peak + initial is 1.5 GB
     * plus an intermediate); the explanation names memory. */
    o.memory_budget = 3 * GB / 2;
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, sweep, &o, &p) == APSOLVE_OK);
    CU_ASSERT(apsolve_solve(p, &o, &pl) == APSOLVE_EINFEASIBLE);
    apsolve_explain(p, &o, err, sizeof err);
    CU_ASSERT(strstr(err, "memory") != NULL);
    apsolve_problem_free(&p);
    costdb_close(&db);
}

static void test_evaluate(void)
{
    uint64_t rng = 99;
    OracleGen g = {8, 2, 4, 0.0, 0.0, 0, 0, 0.2};
    ApsolveProblem *p = NULL;
    ApsolveOptions o = {8, 0, 0, 0, 0};
    ApsolveStageSpec specs[4];
    ApsolvePlan *pl = NULL, *best = NULL;
    double sum = 0, mx = 0;
    char err[128];

    CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
    /* 3-D dp=2, tp=2, pp=2 on 2x4: two stages of 4 layers on (1, 4), logical (2, 2) forced. */
    CU_ASSERT_FATAL(apsolve_3d_specs(8, 4, 2, 2, 2, specs) == APSOLVE_OK);
    CU_ASSERT(specs[0].end_layer == 3 && specs[1].start_layer == 4 && specs[1].gpus == 4);
    CU_ASSERT(specs[0].logical_a == 2 && specs[0].logical_b == 2 && specs[0].force_batch_dim == 0);
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, specs, 2, &pl, err, sizeof err) == APSOLVE_OK);
    CU_ASSERT(pl->feasible);
    for (int k = 1; k >= 0; k--) {
        /* (1,4) is submesh 2; (2,2) forced is config 1 in Alpa's order. */
        double c = p->cost[apsolve_index(p, specs[k].start_layer, specs[k].end_layer, 2, 1)];
        CU_ASSERT(pl->stages[k].config == 1);
        sum += c;
        mx = c > mx ? c : mx;
    }
    CU_ASSERT(pl->cost == sum + 7 * mx);
    /* The auto plan is never worse than a given feasible plan. */
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &best) == APSOLVE_OK);
    CU_ASSERT(best->cost <= pl->cost);
    apsolve_plan_free(&pl);
    /* dp*tp = 8 > 4 GPUs per host: (2, 4). */
    CU_ASSERT(apsolve_3d_specs(8, 4, 4, 2, 1, specs) == APSOLVE_OK);
    CU_ASSERT(specs[0].hosts == 2 && specs[0].gpus == 4 && specs[0].end_layer == 7);
    /* Uniform, 3 stages of 8 layers: 3 + 3 + 2; (1,2) x 3 = 6 devices != 8: infeasible. */
    CU_ASSERT(apsolve_uniform_specs(8, 3, 1, 2, 0, 0, -2, specs) == APSOLVE_OK);
    CU_ASSERT(specs[0].end_layer == 2 && specs[1].end_layer == 5 && specs[2].end_layer == 7);
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, specs, 3, &pl, err, sizeof err) == APSOLVE_OK);
    CU_ASSERT(!pl->feasible && pl->devices_used == 6);
    apsolve_plan_free(&pl);
    /* A gap in the layers is refused. */
    specs[1].start_layer = 4;
    CU_ASSERT(apsolve_evaluate(p, &o, specs, 3, &pl, err, sizeof err) == APSOLVE_EINVAL);
    CU_ASSERT(strstr(err, "contiguously") != NULL);
    /* A submesh that is not in the sweep gets cost +inf. */
    CU_ASSERT(apsolve_uniform_specs(8, 1, 1, 8, 0, 0, -2, specs) == APSOLVE_OK);
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, specs, 1, &pl, err, sizeof err) == APSOLVE_OK);
    CU_ASSERT(pl->stages[0].submesh == -1 && isinf(pl->cost) && !pl->feasible);
    apsolve_plan_free(&pl);
    apsolve_plan_free(&best);
    apsolve_problem_free(&p);
}

static void test_parse(void)
{
    int *a = NULL, *b = NULL;
    size_t n = 0;
    char err[128];
    CU_ASSERT_FATAL(apsolve_parse_layer_ids(" [[0, 1, 2, 3], [4,5,6,7,]]", &a, &b, &n, err,
                                            sizeof err) == 0);
    CU_ASSERT(n == 2 && a[0] == 0 && b[0] == 3 && a[1] == 4 && b[1] == 7);
    free(a);
    free(b);
    CU_ASSERT(apsolve_parse_layer_ids("[[0, 2]]", &a, &b, &n, err, sizeof err) == APSOLVE_EPARSE);
    CU_ASSERT(strstr(err, "column 7") != NULL);
    CU_ASSERT(apsolve_parse_layer_ids("[[0, 1]", &a, &b, &n, err, sizeof err) == APSOLVE_EPARSE);
    CU_ASSERT(apsolve_parse_layer_ids("[[0]] x", &a, &b, &n, err, sizeof err) == APSOLVE_EPARSE);
    CU_ASSERT_FATAL(apsolve_parse_shapes("[(1, 4), [2,8]]", &a, &b, &n, err, sizeof err) == 0);
    CU_ASSERT(n == 2 && a[0] == 1 && b[0] == 4 && a[1] == 2 && b[1] == 8);
    free(a);
    free(b);
    CU_ASSERT(apsolve_parse_shapes("[(1, 0)]", &a, &b, &n, err, sizeof err) == APSOLVE_EPARSE);
    CU_ASSERT(apsolve_parse_shapes("[(1 4)]", &a, &b, &n, err, sizeof err) == APSOLVE_EPARSE);
    CU_ASSERT_FATAL(apsolve_parse_option_dicts(
                        "[{}, {'force_batch_dim_to_mesh_dim': 0}, {\"force_batch_dim_to_mesh_dim\":0,}]",
                        &a, &n, err, sizeof err) == 0);
    CU_ASSERT(n == 3 && a[0] == -1 && a[1] == 0 && a[2] == 0);
    free(a);
    CU_ASSERT(apsolve_parse_option_dicts("[{'foo': 0}]", &a, &n, err, sizeof err) ==
              APSOLVE_EPARSE);
    CU_ASSERT(strstr(err, "unknown option") != NULL);
    CU_ASSERT(apsolve_parse_option_dicts("[{'force_batch_dim_to_mesh_dim: 0}]", &a, &n, err,
                                         sizeof err) == APSOLVE_EPARSE);
}

static void test_explain(void)
{
    uint64_t rng = 5;
    OracleGen g = {5, 1, 4, 0.0, 0.0, 0, 0, 0.2};
    ApsolveProblem *p = NULL;
    ApsolveOptions o = {4, 0, 0, 0, 0};
    ApsolvePlan *pl = NULL;
    char msg[512];
    CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
    /* Remove every entry covering layers 2 and 3. */
    for (int i = 0; i <= 3; i++)
        for (int j = 2 > i ? 2 : i; j < 5; j++)
            for (int s = 0; s < p->num_submeshes; s++)
                for (int c = 0; c < p->num_configs; c++)
                    p->cost[apsolve_index(p, i, j, s, c)] = i <= 3 && j >= 2 ? INFINITY
                        : p->cost[apsolve_index(p, i, j, s, c)];
    for (int s = 0; s < p->num_submeshes; s++)
        for (int c = 0; c < p->num_configs; c++) {
            p->cost[apsolve_index(p, 3, 3, s, c)] = INFINITY;
            p->cost[apsolve_index(p, 3, 4, s, c)] = INFINITY;
        }
    CU_ASSERT(apsolve_solve(p, &o, &pl) == APSOLVE_EINFEASIBLE);
    apsolve_explain(p, &o, msg, sizeof msg);
    CU_ASSERT(strstr(msg, "layers 2-3 have no finite entry") != NULL);
    apsolve_problem_free(&p);
    /* Only 1 stage of (1, 2) allowed for every range: 4 devices cannot be used. */
    CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
    o.max_stages = 1;
    CU_ASSERT(apsolve_solve(p, &o, &pl) == APSOLVE_OK); /* (1,4) for all 5 layers */
    apsolve_plan_free(&pl);
    for (int c = 0; c < p->num_configs; c++)
        p->cost[apsolve_index(p, 0, 4, 2, c)] = INFINITY;
    CU_ASSERT(apsolve_solve(p, &o, &pl) == APSOLVE_EINFEASIBLE);
    apsolve_explain(p, &o, msg, sizeof msg);
    CU_ASSERT(strstr(msg, "--max-stages 1") != NULL);
    apsolve_problem_free(&p);

    /* Memory: the fastest plan (layers 0-1 on (1, 2), T = 2 s) needs 40 GB;
     * the two-stage plan on (1, 1) + (1, 1) (T = 3 s) needs 26 GB (stage 0
     * holds 2 micro-batches of 8 GB activations over its 10 GB peak); 20 GB
     * are available, and each layer alone would fit as the last stage. The
     * message quotes the least memory any plan needs, 26 GB, and that plan,
     * not the fastest plan's 40 GB. */
    CU_ASSERT_FATAL(apsolve_problem_new(2, 1, 2, 2, 1, 1, &p) == APSOLVE_OK);
    p->submeshes[0] = (ApsolveSubmesh){1, 1};
    p->submeshes[1] = (ApsolveSubmesh){1, 2};
    p->configs[0] = (ApsolveConfig){1, 1, 1, -1, {0, 0, 0}};
    p->configs[1] = (ApsolveConfig){1, 2, 1, -1, {0, 0, 0}};
    {
        struct { int i, j, s; int64_t peak, inter; } e[] = {
            {0, 1, 1, 40 * GB, 0}, {0, 0, 0, 10 * GB, 8 * GB}, {1, 1, 0, 10 * GB, 0},
        };
        for (size_t k = 0; k < sizeof e / sizeof e[0]; k++) {
            size_t idx = apsolve_index(p, e[k].i, e[k].j, e[k].s, 0);
            p->cost[idx] = 1.0;
            apsolve_times_own(p, idx)->fwd = 0.5;
            apsolve_times_own(p, idx)->bwd = 0.5;
            *apsolve_memory_own(p, idx) = (ApsolveMemory){e[k].peak, e[k].inter, 0, 20 * GB};
            p->max_n_succ_stages[idx] = apsolve_max_n_succ_stages(20 * GB, e[k].peak, 0,
                                                                  e[k].inter);
        }
    }
    o = (ApsolveOptions){2, 0, 0, 0, 0};
    CU_ASSERT(apsolve_solve(p, &o, &pl) == APSOLVE_EINFEASIBLE);
    apsolve_explain(p, &o, msg, sizeof msg);
    if (!strstr(msg, "needs 26.000 GiB per device"))
        fprintf(stderr, "\nexplain: %s\n", msg);
    CU_ASSERT(strstr(msg, "the plan needing the least memory needs 26.000 GiB per device") != NULL);
    CU_ASSERT(strstr(msg, "stages 0-0 on (1, 1), 1-1 on (1, 1)") != NULL);
    CU_ASSERT(strstr(msg, "but 20.000 GiB are available") != NULL);
    CU_ASSERT(strstr(msg, "40.000") == NULL);
    /* With 5 GB no entry fits even as the last stage: the message names the
     * layers and still quotes the least memory a plan needs (26 GB). */
    for (size_t idx = 0; idx < apsolve_problem_cells(p); idx++)
        if (apsolve_memory_at(p, idx)->avail) {
            ApsolveMemory *m = apsolve_memory_own(p, idx);
            m->avail = 5 * GB;
            p->max_n_succ_stages[idx] =
                apsolve_max_n_succ_stages(5 * GB, m->peak, 0, m->intermediate);
        }
    CU_ASSERT(apsolve_solve(p, &o, &pl) == APSOLVE_EINFEASIBLE);
    apsolve_explain(p, &o, msg, sizeof msg);
    CU_ASSERT(strstr(msg, "every entry covering them exceeds the available memory") != NULL);
    CU_ASSERT(strstr(msg, "the plan needing the least memory needs 26.000 GiB per device") != NULL);
    CU_ASSERT(strstr(msg, "but 5.000 GiB are available") != NULL);
    apsolve_problem_free(&p);
}

/* The session API runs what the apsolve command runs and prints nothing:
 * messages reach the callback, usage errors come back as exit statuses. */
static char g_msgs[4096];

static void collect(void *ctx, const char *msg)
{
    size_t at = strlen(g_msgs);
    (void)ctx;
    snprintf(g_msgs + at, sizeof g_msgs - at, "%s|", msg);
}

static void session_request(ApsolveRequest *r)
{
    memset(r, 0, sizeof *r);
    r->db = g_path;
    r->stage_option = "auto";
    r->objective = -1;
    r->notice = collect;
    g_msgs[0] = '\0';
}

static void test_session(void)
{
    ApsolveRequest r;
    ApsolveSession *s = NULL;
    const ApsolveOutput *o;
    size_t n = 0;
    CU_ASSERT_FATAL(make_fixture(g_path, NULL) == 0);

    /* auto, not stored: the fixture has no apply costs, so objective alpa */
    session_request(&r);
    r.no_store = 1;
    CU_ASSERT_EQUAL_FATAL(apsolve_session_run(&r, &s), APPROF_EXIT_OK);
    o = apsolve_session_outputs(s, &n);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_STRING_EQUAL(o[0].kind, "auto");
    CU_ASSERT(o[0].plan->feasible);
    CU_ASSERT_EQUAL(o[0].plan_id, 0);
    CU_ASSERT_EQUAL(r.opt.objective, APSOLVE_OBJECTIVE_ALPA);
    CU_ASSERT(strstr(g_msgs, "without apply_cost") != NULL);
    CU_ASSERT(strstr(g_msgs, "solved in") != NULL);
    /* the time of the whole search, not the chosen plan's DP alone */
    CU_ASSERT(strstr(g_msgs, "the whole auto search") != NULL);
    CU_ASSERT(strstr(g_msgs, "apsolve: ") == NULL);
    CU_ASSERT_EQUAL(apsolve_session_finish(s, &r), APPROF_EXIT_OK);
    apsolve_session_free(&s);
    CU_ASSERT_PTR_NULL(s);

    /* a manual plan, stored: only that plan (no auto search) */
    session_request(&r);
    r.stage_option = "manual";
    r.layer_ids = "[[0, 1], [2, 3]]";
    r.submeshes = "[(1, 2), (1, 2)]";
    r.quiet = 1;
    CU_ASSERT_EQUAL_FATAL(apsolve_session_run(&r, &s), APPROF_EXIT_OK);
    o = apsolve_session_outputs(s, &n);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_STRING_EQUAL(o[0].kind, "manual");
    CU_ASSERT(o[0].plan_id > 0);
    CU_ASSERT_EQUAL(o[0].plan->n_stages, 2);
    apsolve_session_free(&s);

    /* usage errors: no session, one message each, with the --help hint */
    session_request(&r);
    r.micro_batch_size = 3;
    CU_ASSERT_EQUAL(apsolve_session_run(&r, &s), APPROF_EXIT_USAGE);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT(strstr(g_msgs, "at micro-batch size 3") != NULL);
    session_request(&r);
    r.stage_option = "uniform";
    CU_ASSERT_EQUAL(apsolve_session_run(&r, &s), APPROF_EXIT_USAGE);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT(strstr(g_msgs, "needs --num-stages and --submesh|") != NULL);
    CU_ASSERT(strstr(g_msgs, "Try 'apsolve") == NULL);   /* the CLI prints the hint */
    /* a missing database is a runtime failure */
    session_request(&r);
    r.db = "/nonexistent/apsolve-session.db";
    CU_ASSERT_EQUAL(apsolve_session_run(&r, &s), APPROF_EXIT_FAIL);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT(strstr(g_msgs, "/nonexistent/apsolve-session.db") != NULL);
    unlink(g_path);
}

/* The --parallel text: every knob, any order; refusals name the knob. */
static void test_parallel_text(void)
{
    ApsolveParallel par;
    char err[256];
    CU_ASSERT_EQUAL(apsolve_parallel_parse("pp=4,dp=2,tp=8,zero=1,recompute=selective,vpp=2,"
                                           "mbs=1,sp=1", &par, err, sizeof err), 0);
    CU_ASSERT(par.dp == 2 && par.tp == 8 && par.pp == 4 && par.zero == 1 && par.vpp == 2 &&
              par.mbs == 1 && par.sp == 1 && par.recompute == COSTDB_RECOMPUTE_SELECTIVE);
    CU_ASSERT(par.cp == 1 && par.cp_comm == APSOLVE_CP_P2P);
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=2,cp_comm=a2a+p2p,tp=1,pp=1,cp=4", &par, err,
                                           sizeof err), 0);
    CU_ASSERT(par.cp == 4 && par.cp_comm == APSOLVE_CP_A2A_P2P);
    CU_ASSERT(par.ep == 1 && par.etp == 0);
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=2,tp=1,pp=1,cp=2,cp_comm=all_gather", &par, err,
                                           sizeof err), 0);
    CU_ASSERT(par.cp == 2 && par.cp_comm == APSOLVE_CP_ALL_GATHER);
    CU_ASSERT_STRING_EQUAL(apsolve_cp_comm_name(APSOLVE_CP_ALL_GATHER), "all_gather");
    /* the expert grid folded into the stage: etp x ep divides dp x tp */
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=8,tp=2,pp=4,ep=8,etp=2", &par, err, sizeof err),
                    0);
    CU_ASSERT(par.ep == 8 && par.etp == 2);
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=4,tp=2,pp=1,ep=8,etp=1", &par, err, sizeof err),
                    0);
    static const struct { const char *text, *says; } bad[] = {
        {"dp=4,tp=1,pp=1,ep=3", "etp x ep = 3 does not divide dp x tp = 4"},
        {"dp=4,tp=2,pp=1,ep=8", "etp x ep = 16 does not divide dp x tp = 8"},
        {"dp=2,tp=2,pp=1,ep=2,etp=4", "etp x ep = 8 does not divide dp x tp = 4"},
        {"dp=2,tp=1,pp=1,ep=0", "ep must be an integer in 1..65536, not '0'"},
        {"dp=2,tp=1,pp=1,etp=0", "etp must be an integer in 1..65536, not '0'"},
        {"dp=2,tp=1,pp=1,cp=0", "cp must be an integer in 1..65536, not '0'"},
        {"dp=2,tp=1,pp=1,cp=2,cp_comm=ring", "cp_comm must be p2p, a2a, a2a+p2p or all_gather, not 'ring'"},
        {"dp=2,tp=1,pp=1,cp_comm=a2a", "cp_comm needs context parallelism (cp >= 2)"},
        {"dp=1024,tp=1024,pp=1,cp=2", "dp x tp x pp x cp = 2097152 devices"},
        {"dp=2,tp=1", "dp, tp and pp are required"},
        {"", "dp, tp and pp are required"},
        {"dp=2,tp=1,pp=1,dp=2", "dp given twice"},
        {"dp=0,tp=1,pp=1", "dp must be an integer in 1..65536, not '0'"},
        {"dp=+2,tp=1,pp=1", "not '+2'"},
        {"dp=2,tp=1,pp=1,zero=4", "zero must be an integer in 0..3"},
        {"dp=2,tp=1,pp=1,recompute=some", "recompute must be none, selective, full or op"},
        {"dp=2,tp=1,pp=1,sp", "'sp' is not KNOB=VALUE"},
        {"dp=2,tp=1,pp=1,tensor=2", "unknown knob 'tensor'"},
        {"dp=99999999999,tp=1,pp=1", "not '99999999999'"},
        /* the product wrapped an int to 4 and passed the fit check */
        {"dp=54161,tp=39650,pp=2", "dp x tp x pp = 4294967300 devices is more than 1048576"},
        {"dp=65536,tp=65536,pp=65536", "is more than 1048576"},
        {"dp=1024,tp=1024,pp=2", "dp x tp x pp = 2097152"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CU_ASSERT_EQUAL(apsolve_parallel_parse(bad[i].text, &par, err, sizeof err), -1);
        if (!strstr(err, bad[i].says))
            fprintf(stderr, "\n'%s': %s\n", bad[i].text, err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].says));
    }
}

int main(int argc, char **argv)
{
    static const CunitTest tests[] = {
        {"database adapter and plan store", test_adapter},
        {"manual, uniform and 3-D evaluation", test_evaluate},
        {"plan text parsers", test_parse},
        {"infeasibility explanation", test_explain},
        {"session API", test_session},
        {"--parallel text", test_parallel_text},
    };
    if (argc == 3 && strcmp(argv[1], "--make-fixture") == 0)
        return make_fixture(argv[2], NULL) ? 1 : 0;
    snprintf(g_path, sizeof g_path, "/tmp/apsolve-test-%ld.db", (long)getpid());
    int rc = CUNIT_RUN("solver_db", tests);
    unlink(g_path);
    {
        char side[300];
        snprintf(side, sizeof side, "%s-wal", g_path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", g_path);
        unlink(side);
    }
    return rc;
}
