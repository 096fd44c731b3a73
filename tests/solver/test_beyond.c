/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Beyond Alpa's T, against hand-computed values: a 2x2 cluster sweep with a
 * hardware row and stored placements (written with the costdb API) gives a
 * known full estimate (cross-stage transfer over the host boundary, ring
 * all-reduce per replicated mesh axis, Adam at memory bandwidth); a plan
 * re-evaluated at another global batch is scaled (costs, activation memory,
 * the dp rule) or priced exactly on a sweep of the same model at that
 * micro-batch; a plan without an estimate stores full_cost as NULL; the
 * full estimate's pipeline is apsolve_schedule_base_time's T bit for bit.
 * With "--make-fixture PATH" it only writes the database (for cli.sh).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <sqlite3.h>

#include "apsolve.h"
#include "costdb.h"
#include "cunit_run.h"
#include "schedule.h"
#include "solver_int.h"

#define GB (1024LL * 1024 * 1024)
#define NEAR(x, want) CU_ASSERT(fabs((double)(x) - (double)(want)) <= 1e-12 * fabs((double)(want)) + 1e-15)

static char g_path[256];

/* hardware: intra 1 GB/s + 1 us, inter 0.1 GB/s + 10 us, memory 1 GB/s */
static int64_t put_hardware(Costdb *db, const char *fp)
{
    CostdbHardware hw;
    memset(&hw, 0, sizeof hw);
    snprintf(hw.fingerprint, sizeof hw.fingerprint, "%s", fp);
    snprintf(hw.kind, sizeof hw.kind, "analytic");
    snprintf(hw.gpu_model, sizeof hw.gpu_model, "toy");
    hw.gpus_per_host = 2;
    hw.device_memory = 4 * GB;
    hw.peak_flops_f32 = 1e12;
    hw.memory_bandwidth = 1e9;
    hw.intra_host_bandwidth = 1e9;
    hw.intra_host_latency = 1e-6;
    hw.inter_host_bandwidth = 1e8;
    hw.inter_host_latency = 1e-5;
    return costdb_hardware_upsert(db, &hw) ? -1 : hw.id;
}

static int64_t put_model(Costdb *db, const char *sig, int micro)
{
    CostdbModel m;
    CostdbLayer layers[2] = {{0, 0, 2, 1e9, 2e9, 4000000, 32000, 32000},
                             {1, 2, 4, 1e9, 2e9, 4004000, 32000, 32000}};
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "toy");
    snprintf(m.signature, sizeof m.signature, "%s", sig);
    snprintf(m.graph_hash, sizeof m.graph_hash, "%s", sig);
    snprintf(m.dtype, sizeof m.dtype, "f32");
    m.num_layers = 2;
    m.batch_size = micro;
    return costdb_model_upsert(db, &m, layers, 2) ? -1 : m.id;
}

static void entry(CostdbEntry *x, int i, int j, int s, int c, int ph, double cost)
{
    memset(x, 0, sizeof *x);
    *x = (CostdbEntry){.start_layer = i, .end_layer = j, .submesh_index = s, .config_index = c,
                       .phase = ph ? COSTDB_BWD : COSTDB_FWD, .compute_cost = cost,
                       .peak_memory = GB, .intermediate_size = GB / 2, .initial_size = GB / 4,
                       .available_memory = 4 * GB, .repeats = 1, .status = COSTDB_STATUS_OK,
                       .apply_cost = -1.0 /* unknown: the placement path of older databases */};
}

static void placement(CostdbPlacement *p, int i, int j, int s, int c, int t, const char *role,
                      const char *shape, const char *spec)
{
    memset(p, 0, sizeof *p);
    *p = (CostdbPlacement){.start_layer = i, .end_layer = j, .submesh_index = s,
                           .config_index = c, .tensor_index = t};
    snprintf(p->tensor_name, sizeof p->tensor_name, "t%d", t);
    snprintf(p->role, sizeof p->role, "%s", role);
    snprintf(p->shape, sizeof p->shape, "%s", shape);
    snprintf(p->dtype, sizeof p->dtype, "f32");
    snprintf(p->sharding_spec, sizeof p->sharding_spec, "%s", spec);
}

/* One sweep of the toy model on 2x2: micro-batch `micro` (x 4 micro-batches);
 * costs multiplied by `scale`. Submeshes (1,1), (1,2), (2,2). */
static int put_sweep_setup(Costdb *db, int64_t model, int64_t hw, int micro, double scale,
                           const char *logical_space, const char *options, int64_t *id)
{
    CostdbSubmesh subs[3] = {{0, 1, 1}, {1, 1, 2}, {2, 2, 2}};
    CostdbConfig cfgs[8] = {{0, 0, 1, 1, 0}, {0, 1, 1, 1, -1},
                            {1, 0, 2, 1, 0}, {1, 1, 1, 2, 0}, {1, 2, 2, 1, -1},
                            {2, 0, 4, 1, 0}, {2, 1, 2, 2, 0}, {2, 2, 4, 1, -1}};
    static const double l1_bwd[3] = {0.03, 0.02, 0.04};
    CostdbSweep sw;
    CostdbEntry e[16];
    CostdbPlacement pl[12];
    char h_out[64];
    size_t n = 0;
    memset(&sw, 0, sizeof sw);
    snprintf(sw.name, sizeof sw.name, "toy-%d", micro);
    sw.model_id = model;
    sw.hardware_id = hw;
    sw.cluster_hosts = 2;
    sw.cluster_gpus = 2;
    sw.global_batch = 4LL * micro;
    sw.micro_batches = 4;
    sw.num_layers = 2;
    snprintf(sw.submesh_space, sizeof sw.submesh_space, "power_of_two");
    snprintf(sw.dtype, sizeof sw.dtype, "f32");
    snprintf(sw.backend, sizeof sw.backend, "analytic");
    snprintf(sw.logical_space, sizeof sw.logical_space, "%s", logical_space);
    snprintf(sw.options, sizeof sw.options, "%s", options);
    sw.status = COSTDB_SWEEP_COMPLETE;
    if (costdb_sweep_create(db, &sw, subs, 3, cfgs, 8))
        return -1;
    /* layer 0 on (1,2): c0 0.03, c1 0.04, c2 0.05; layer 1: c0 0.05, c1 0.04,
     * c2 0.06; both layers on (2,2): 0.5 each config */
    for (int c = 0; c < 3; c++) {
        entry(&e[n++], 0, 0, 1, c, 0, 0.01 * scale);
        entry(&e[n++], 0, 0, 1, c, 1, (0.02 + 0.01 * c) * scale);
        entry(&e[n++], 1, 1, 1, c, 0, 0.02 * scale);
        entry(&e[n++], 1, 1, 1, c, 1, l1_bwd[c] * scale);
    }
    for (int c = 0; c < 2; c++) {
        entry(&e[n++], 0, 1, 2, c, 0, 0.25 * scale);
        entry(&e[n++], 0, 1, 2, c, 1, 0.25 * scale);
    }
    if (costdb_entries_put(db, sw.id, e, n, 0))
        return -1;
    n = 0;
    snprintf(h_out, sizeof h_out, "%d,1000", micro);
    /* stage 0 candidate: layer 0, (1,2) logical (2,1): w0 replicated on axis 0 */
    placement(&pl[n++], 0, 0, 1, 0, 0, "input", h_out, "ShardingSpec((Chunked(2), NoSharding()), (ShardedAxis(axis=0),))");
    placement(&pl[n++], 0, 0, 1, 0, 1, "param", "1000,1000", "ShardingSpec((NoSharding(), NoSharding()), (Replicated(replicas=2),))");
    placement(&pl[n++], 0, 0, 1, 0, 2, "output", h_out, "ShardingSpec((Chunked(2), NoSharding()), (ShardedAxis(axis=0),))");
    /* stage 1 candidate: layer 1, (1,2) logical (1,2): h split in 2, w1 sharded, b1 replicated */
    placement(&pl[n++], 1, 1, 1, 1, 2, "input", h_out, "ShardingSpec((NoSharding(), Chunked(2)), (ShardedAxis(axis=0),))");
    placement(&pl[n++], 1, 1, 1, 1, 3, "param", "1000,1000", "ShardingSpec((NoSharding(), Chunked(2)), (ShardedAxis(axis=0),))");
    placement(&pl[n++], 1, 1, 1, 1, 4, "param", "1000", "ShardingSpec((NoSharding(),), (Replicated(replicas=2),))");
    placement(&pl[n++], 1, 1, 1, 1, 5, "output", "8,10", "ShardingSpec((NoSharding(), NoSharding()), (Replicated(replicas=2),))");
    /* one stage on (2,2), logical (4,1): w0 replicated over 4 devices on axis 0 */
    placement(&pl[n++], 0, 1, 2, 0, 1, "param", "1000,1000", "ShardingSpec((NoSharding(), NoSharding()), (Replicated(replicas=4),))");
    placement(&pl[n++], 0, 1, 2, 0, 0, "input", h_out, "ShardingSpec((Chunked(4), NoSharding()), (ShardedAxis(axis=0),))");
    /* logical (2,2): wa replicated on axis 1, wb on both axes */
    placement(&pl[n++], 0, 1, 2, 1, 6, "param", "1000,1000", "ShardingSpec((Chunked(2), NoSharding()), (ShardedAxis(axis=0), Replicated(replicas=2)))");
    placement(&pl[n++], 0, 1, 2, 1, 7, "param", "1000", "ShardingSpec((NoSharding(),), (Replicated(replicas=4),))");
    placement(&pl[n++], 0, 1, 2, 1, 0, "input", h_out, "ShardingSpec((Chunked(2), NoSharding()), (ShardedAxis(axis=0),))");
    if (costdb_placements_put(db, sw.id, pl, n))
        return -1;
    *id = sw.id;
    return 0;
}

static int put_sweep(Costdb *db, int64_t model, int64_t hw, int micro, double scale,
                     int64_t *id)
{
    return put_sweep_setup(db, model, hw, micro, scale, "", "", id);
}

/* Sweep 1: micro-batch 8 (global 32); sweep 2: the same model at micro 4
 * with halved costs; sweep 3: micro 4 on other hardware (must not be used). */
static int make_fixture(const char *path, int64_t ids[3])
{
    Costdb *db = NULL;
    char err[256];
    int64_t hw, hw2, m1, m2, m3;
    int rc = -1;
    unlink(path);
    if (costdb_open(path, 0, &db, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if ((hw = put_hardware(db, "toy-a")) < 0 || (hw2 = put_hardware(db, "toy-b")) < 0 ||
        (m1 = put_model(db, "toy@8", 8)) < 0 || (m2 = put_model(db, "toy@4", 4)) < 0 ||
        (m3 = put_model(db, "toy@4b", 4)) < 0 || put_sweep(db, m1, hw, 8, 1.0, &ids[0]) ||
        put_sweep(db, m2, hw, 4, 0.5, &ids[1]) || put_sweep(db, m3, hw2, 4, 0.25, &ids[2]))
        goto cleanup;
    rc = 0;
cleanup:
    if (rc)
        fprintf(stderr, "fixture: %s\n", costdb_errmsg(db));
    costdb_close(&db);
    return rc;
}

/* The manual plan [[0], [1]] on (1,2), (1,2) with logical (2,1), (1,2). */
static const ApsolveStageSpec k_two[2] = {{0, 0, 1, 2, 2, 1, 0}, {1, 1, 1, 2, 1, 2, 0}};

static void test_full_estimate(void)
{
    int64_t ids[3];
    Costdb *db = NULL;
    ApsolveOptions o = {.micro_batches = 4};
    ApsolveProblem *p = NULL;
    ApsolvePlan *pl = NULL, *autop = NULL;
    ApsolveFullEstimate f;
    ApsolveStageEstimate se[2];
    ApsolveStageSpec one = {0, 1, 2, 2, 4, 1, 0};
    char err[256];

    CU_ASSERT_FATAL(make_fixture(g_path, ids) == 0);
    CU_ASSERT_FATAL(costdb_open(g_path, COSTDB_OPEN_READONLY, &db, err, sizeof err) == 0);
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, ids[0], &o, &p) == 0);
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, k_two, 2, &pl, err, sizeof err) == 0);
    CU_ASSERT_FATAL(pl->feasible);
    NEAR(pl->cost, 0.07 + 3 * 0.04);
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], pl, 1.0, &f, se) == 0);
    CU_ASSERT_FATAL(f.available);
    /* h: 8x1000 f32 split in 2 on the receiver = 16000 B per device; stage 0
     * is on host 0, stage 1 on host 1: 10 us + 16000 / 1e8 = 170 us each way */
    NEAR(f.transfer_bytes, 16000);
    NEAR(se[0].send_fwd, 1.7e-4);
    NEAR(se[1].send_bwd, 1.7e-4);
    CU_ASSERT(se[0].send_bwd == 0 && se[1].send_fwd == 0 && se[0].send_inter);
    NEAR(f.transfers, 3.4e-4);
    /* stage 0: w0 4e6 B replicated on axis 0 (2 devices, one host), NCCL's
     * ring in Simple (docs/nccl-tuning.md): 2(1)/2 * 4e6 / 1e9 + base
     * latency 8.4 us + 2 x 1 us; Adam 1e6 x 28 B / 1e9 B/s */
    NEAR(se[0].grad_sync, 0.004 + 10.4e-6);
    NEAR(se[0].optimizer, 0.028);
    CU_ASSERT(se[0].replicas == 2 && !se[0].grad_inter);
    /* stage 1: only b1 (4000 B, axis 1 of size 2 <= 2 GPUs per host) */
    NEAR(se[1].grad_bytes, 4000);
    NEAR(se[1].grad_sync, 4e-6 + 10.4e-6);
    NEAR(se[1].optimizer, 501000.0 * 28 / 1e9);
    NEAR(se[1].period, 0.04 + 1.7e-4);
    /* 0.07 + 3.4e-4 + 3 x 0.04017, plus stage 0's apply-grad 0.0320104 */
    NEAR(f.pipeline, 0.07 + 3.4e-4 + 3 * 0.04017);
    CU_ASSERT(f.apply_stage == 0);
    NEAR(f.total, 0.07 + 3.4e-4 + 3 * 0.04017 + 0.0320104);
    CU_ASSERT(!f.apply_from_entries);
    /* With the entries' apply_cost (schema 2) that replaces the placement
     * path: the largest stage apply_cost, here stage 1's. */
    pl->stages[0].apply_cost = 0.01;
    pl->stages[1].apply_cost = 0.02;
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], pl, 1.0, &f, se) == 0);
    CU_ASSERT(f.available && f.apply_from_entries && f.apply_stage == 1);
    NEAR(f.apply, 0.02);
    NEAR(se[0].apply, 0.01);
    NEAR(f.total, 0.07 + 3.4e-4 + 3 * 0.04017 + 0.02);
    /* one unknown stage: back to the placements */
    pl->stages[0].apply_cost = -1;
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], pl, 1.0, &f, se) == 0);
    CU_ASSERT(!f.apply_from_entries);
    NEAR(f.total, 0.07 + 3.4e-4 + 3 * 0.04017 + 0.0320104);
    CU_ASSERT(f.p2p_exposed == 0);
    /* the same stages run interleaved, v = 2, as Megatron-Core does: the
     * chunks' compute (0.07 + (2 x 4 - 1) x 0.04) / 2 and the first
     * micro-batch's exchanges of 170 us across the 2 x 2 - 1 = 3 virtual
     * boundaries, forward and back; the 4 steady ones hide under chunks of
     * 5 ms and more (the periods' and v x the fill's transfers are not
     * added) */
    pl->schedule = APSOLVE_SCHEDULE_INTERLEAVED;
    pl->virtual_stages = 2;
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], pl, 1.0, &f, se) == 0);
    NEAR(f.p2p_exposed, 6 * 1.7e-4);
    NEAR(f.pipeline, (0.07 + 7 * 0.04) / 2 + 6 * 1.7e-4);
    NEAR(f.total, (0.07 + 7 * 0.04) / 2 + 6 * 1.7e-4 + 0.0320104);
    /* a framework that sends h split over 4 devices (Megatron-Core's
     * (seq / tp, mbs, hidden) shard, session_price.c), not the receiving
     * placement's 2: 8000 B, 10 us + 80 us each way, whatever the ILP
     * picked; x 0.5 (a cp plan's scale) on top: 4000 B, 50 us */
    pl->boundary_devices = 4;
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], pl, 1.0, &f, se) == 0);
    NEAR(f.transfer_bytes, 8000);
    NEAR(se[0].send_fwd, 9e-5);
    NEAR(f.p2p_exposed, 6 * 9e-5);
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], pl, 0.5, &f, se) == 0);
    NEAR(f.transfer_bytes, 4000);
    NEAR(se[1].send_bwd, 5e-5);
    pl->boundary_devices = 0;
    apsolve_plan_free(&pl);
    /* the auto plan is the same split */
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &autop) == 0);
    CU_ASSERT(autop->n_stages == 2 && autop->stages[0].config == 0 &&
              autop->stages[1].config == 1);
    apsolve_plan_free(&autop);

    /* one stage on both hosts, logical (4,1): axis 0 crosses hosts; NCCL's
     * ring in Simple: 2(3)/4 * 4e6 / 1e8 + 8.4 us + 2 x 2 hosts steps x 10
     * us + 2 steps at max(1 us, 3 x 1 us network overhead); pipeline 0.5 +
     * 3 x 0.5 */
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, &one, 1, &pl, err, sizeof err) == 0);
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], pl, 1.0, &f, se) == 0);
    CU_ASSERT(se[0].grad_inter && se[0].replicas == 4 && f.transfers == 0);
    NEAR(f.grad_sync, 0.06 + 54.4e-6);
    NEAR(f.total, 2.0 + 0.06 + 54.4e-6 + 0.028);
    apsolve_plan_free(&pl);
    /* logical (2,2): wa on axis 1 (inside a host): 2e6 / 1e9 + 8.4 + 2 us;
     * wb on both axes (leaves the host), 6000 B on the wire: NCCL's ring in
     * LL128, 0.92 of the bus bandwidth, 14 us + 2 steps x 1.9 us + 4 x 4 us */
    one.logical_a = one.logical_b = 2;
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, &one, 1, &pl, err, sizeof err) == 0);
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], pl, 1.0, &f, se) == 0);
    NEAR(se[0].grad_sync, 0.002 + 10.4e-6 + 6000 / 0.92e8 + 33.8e-6);
    NEAR(se[0].optimizer, 501000.0 * 28 / 1e9);
    CU_ASSERT(se[0].grad_inter);
    NEAR(f.total, 2.0 + 0.002 + 10.4e-6 + 6000 / 0.92e8 + 33.8e-6 + 0.014028);
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
    costdb_close(&db);
}

/* The full estimate's pipeline is apsolve_schedule_base_time's T (the one
 * definition of it, schedule.h) bit for bit, on the compute summed from the
 * last stage and the largest period (interleaved: compute), with the
 * first micro-batch's transfers on the sum under v = 1, then what the
 * schedule adds or saves: random stage costs on the two stages of k_two,
 * every schedule, v = 1..4, B = 1..9. */
static void test_full_estimate_base_time(void)
{
    int64_t ids[3];
    unsigned seed = 37u;
    int bad = 0;
    Costdb *db = NULL;
    ApsolveOptions o = {.micro_batches = 4};
    ApsolveProblem *p = NULL;
    ApsolvePlan *pl = NULL;
    char err[256];

    CU_ASSERT_FATAL(make_fixture(g_path, ids) == 0);
    CU_ASSERT_FATAL(costdb_open(g_path, COSTDB_OPEN_READONLY, &db, err, sizeof err) == 0);
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, ids[0], &o, &p) == 0);
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, k_two, 2, &pl, err, sizeof err) == 0);
    for (int trial = 0; trial < 40; trial++) {
        for (int k = 0; k < 2; k++) {
            ApsolveStage *st = &pl->stages[k];
            seed = seed * 1103515245u + 12345u;
            st->fwd_cost = 0.01 + (double)((seed >> 8) & 0xffff) / 65536.0;
            seed = seed * 1103515245u + 12345u;
            st->bwd_cost = 0.01 + 2.0 * (double)((seed >> 8) & 0xffff) / 65536.0;
            st->wgrad_cost = st->bwd_cost * (double)(trial % 5) / 4.0;
            st->cost = st->fwd_cost + st->bwd_cost + (trial % 3 ? 0 : 1e-4 * (k + 1));
        }
        for (int s = 0; s < APSOLVE_SCHEDULE_COUNT; s++)
            for (int v = 1; v <= 4; v++)
                for (int B = 1; B <= 9; B++) {
                    ApsolveFullEstimate f;
                    ApsolveStageEstimate se[2];
                    double sum = 0, period = 0, compute = 0, want;
                    ApsolveOptions so = {.schedule = s, .virtual_stages = v};
                    int vs = apsolve_virtual(&so);
                    pl->schedule = s;
                    pl->virtual_stages = vs;
                    pl->micro_batches = B;
                    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], pl, 1.0, &f, se) == 0);
                    for (int k = 2; k-- > 0;) {
                        sum += se[k].compute;
                        period = se[k].period > period ? se[k].period : period;
                        compute = se[k].compute > compute ? se[k].compute : compute;
                    }
                    if (vs > 1 && s == APSOLVE_SCHEDULE_INTERLEAVED)
                        want = apsolve_schedule_base_time(vs, B, sum, compute) + f.p2p_exposed;
                    else if (vs > 1)
                        want = apsolve_schedule_base_time(vs, B, sum, period) +
                               f.transfers * apsolve_schedule_transfer_factor(
                                                 (ApsolveSchedule)s, vs);
                    else
                        want = apsolve_schedule_base_time(1, B, sum + f.transfers, period);
                    want -= apsolve_stages_zb_saving(s, vs, B, pl->stages, 2);
                    CU_ASSERT(f.pipeline == want || (isnan(f.pipeline) && isnan(want)));
                    if (!(f.pipeline == want || (isnan(f.pipeline) && isnan(want))) &&
                        bad++ < 10)
                        fprintf(stderr, "full estimate %s v=%d B=%d: %a, base time %a\n",
                                apsolve_schedule_name((ApsolveSchedule)s), vs, B, f.pipeline,
                                want);
                }
    }
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
    costdb_close(&db);
}

static void test_rebatch(void)
{
    int64_t ids[3], found = -1;
    Costdb *db = NULL;
    ApsolveOptions o = {.micro_batches = 4};
    ApsolveProblem *p = NULL, *q = NULL;
    ApsolvePlan *pl = NULL, *np = NULL;
    ApsolveRebatch r;
    ApsolveFullEstimate f;
    char err[256];

    CU_ASSERT_FATAL(make_fixture(g_path, ids) == 0);
    CU_ASSERT_FATAL(costdb_open(g_path, COSTDB_OPEN_READONLY, &db, err, sizeof err) == 0);
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, ids[0], &o, &p) == 0);
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, k_two, 2, &pl, err, sizeof err) == 0);

    /* micro-batch 8 -> 16 (x2): costs double; stage 0 (2 stages in flight)
     * needs 1 + 0.5 (peak's activations) + 0.25 + 2 x 1 = 3.75 of 4 GB */
    CU_ASSERT_FATAL(apsolve_rebatch_plan(p, pl, 8, 16, &np) == 0);
    apsolve_rebatch_summary(np, 8, 16, &r);
    NEAR(r.cost, 2 * 0.19);
    CU_ASSERT(r.valid && r.fits && r.worst_stage == 0 && r.missing_stage == 0);
    CU_ASSERT(np->stages[0].memory_needed == 15 * GB / 4);
    CU_ASSERT(np->feasible);
    /* transfers double with the activations; apply-grad does not change */
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[0], np, 2.0, &f, NULL) == 0);
    NEAR(f.transfer_bytes, 32000);
    NEAR(f.total, 0.14 + 2 * (1e-5 + 3.2e-4) + 3 * (0.08 + 1e-5 + 3.2e-4) + 0.0320104);
    apsolve_plan_free(&np);
    /* x4: stage 0 needs 1 + 1.5 + 0.25 + 2 x 2 = 6.75 GB > 4: does not fit */
    CU_ASSERT(apsolve_rebatch(p, pl, 8, 32, &r) == 0);
    CU_ASSERT(r.valid && !r.fits && r.worst_stage == 0);
    NEAR(r.worst_need, 6.75 * GB);
    /* micro-batch 1: stage 0 forces the batch over dp = 2: invalid (Alpa's
     * failure on the last, smaller batch of an epoch) */
    CU_ASSERT(apsolve_rebatch(p, pl, 8, 1, &r) == 0);
    CU_ASSERT(!r.valid && r.first_invalid_stage == 1 && r.invalid_dp == 2);

    /* an exact sweep: same model and hardware at micro-batch 4 is sweep 2
     * (sweep 3 is newer but on other hardware); at 8 the sweep itself; none at 2 */
    CU_ASSERT(apsolve_find_batch_sweep(db, ids[0], 4, &found) == 0 && found == ids[1]);
    CU_ASSERT(apsolve_find_batch_sweep(db, ids[0], 8, &found) == 0 && found == ids[0]);
    CU_ASSERT(apsolve_find_batch_sweep(db, ids[0], 2, &found) == 0 && found == 0);
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, ids[1], &o, &q) == 0);
    CU_ASSERT_FATAL(apsolve_evaluate(q, &o, k_two, 2, &np, err, sizeof err) == 0);
    apsolve_rebatch_summary(np, 8, 4, &r);
    NEAR(r.cost, 0.035 + 3 * 0.02);
    CU_ASSERT(r.valid && r.fits);
    /* h is 4x1000 there: 8000 B per device, 10 us + 80 us each way */
    CU_ASSERT_FATAL(apsolve_full_estimate_ex(db, ids[1], np, 1.0, &f, NULL) == 0);
    NEAR(f.total, 0.035 + 1.8e-4 + 3 * (0.02 + 9e-5) + 0.0320104);
    apsolve_plan_free(&np);
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
    apsolve_problem_free(&q);
    costdb_close(&db);
}

/* The micro-batch family is the same setup but for the batch: a sweep at
 * another micro-batch size of another logical space or with other options
 * (another search space) is not one of it (issue 37: the family rule used
 * to ignore both); one that differs only in the batch is. */
static void test_family_setup(void)
{
    int64_t ids[3], m2, hw, other_space, other_opts, same = 0, found = -1;
    ApsolveBatchSweep *bs = NULL;
    Costdb *db = NULL;
    size_t n = 0;
    char err[256];

    CU_ASSERT_FATAL(make_fixture(g_path, ids) == 0);
    CU_ASSERT_FATAL(costdb_open(g_path, COSTDB_OPEN_NOCREATE, &db, err, sizeof err) == 0);
    CU_ASSERT_FATAL((hw = put_hardware(db, "toy-a")) > 0);
    CU_ASSERT_FATAL((m2 = put_model(db, "toy@2", 2)) > 0);
    CU_ASSERT_FATAL(put_sweep_setup(db, m2, hw, 2, 0.25, "all", "", &other_space) == 0);
    CU_ASSERT_FATAL(put_sweep_setup(db, m2, hw, 2, 0.25, "", "{\"sharding_solver\":\"cbc\"}",
                                    &other_opts) == 0);
    CU_ASSERT(apsolve_find_batch_sweep(db, ids[0], 2, &found) == 0 && found == 0);
    CU_ASSERT_FATAL(apsolve_batch_sweeps(db, ids[0], &bs, &n) == 0);
    CU_ASSERT_EQUAL(n, 2); /* micro-batch 4 (sweep 2) and 8 (itself) */
    CU_ASSERT(n == 2 && bs[0].sweep_id == ids[1] && bs[0].micro_batch_size == 4 &&
              bs[1].sweep_id == ids[0] && bs[1].micro_batch_size == 8);
    free(bs);
    /* the family of the sweep in the other logical space has no sweep 1 */
    CU_ASSERT(apsolve_find_batch_sweep(db, other_space, 8, &found) == 0 && found == 0);
    /* differing in the batch only: one family */
    CU_ASSERT_FATAL(put_sweep_setup(db, m2, hw, 2, 0.25, "", "", &same) == 0);
    CU_ASSERT(apsolve_find_batch_sweep(db, ids[0], 2, &found) == 0 && found == same);
    CU_ASSERT_FATAL(apsolve_batch_sweeps(db, ids[0], &bs, &n) == 0);
    CU_ASSERT(n == 3 && bs[0].sweep_id == same && bs[0].micro_batch_size == 2);
    free(bs);
    costdb_close(&db);
}

/* A plan without a full estimate stores full_cost as SQL NULL; one with an
 * estimate stores it. */
static void test_store_null(void)
{
    int64_t ids[3], id1 = 0, id2 = 0;
    Costdb *db = NULL;
    ApsolveOptions o = {.micro_batches = 4};
    ApsolveProblem *p = NULL;
    ApsolvePlan *pl = NULL;
    sqlite3 *sq = NULL;
    sqlite3_stmt *st = NULL;
    char err[256];

    CU_ASSERT_FATAL(make_fixture(g_path, ids) == 0);
    CU_ASSERT_FATAL(costdb_open(g_path, COSTDB_OPEN_NOCREATE, &db, err, sizeof err) == 0);
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, ids[0], &o, &p) == 0);
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, k_two, 2, &pl, err, sizeof err) == 0);
    CU_ASSERT(apsolve_plan_store(db, p, &o, pl, "manual", NULL, &id1) == 0);
    pl->full_cost = 0.25;
    pl->has_full_cost = 1;
    CU_ASSERT(apsolve_plan_store(db, p, &o, pl, "manual", NULL, &id2) == 0);
    costdb_close(&db);
    CU_ASSERT_FATAL(sqlite3_open_v2(g_path, &sq, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CU_ASSERT_FATAL(sqlite3_prepare_v2(sq, "SELECT full_cost IS NULL, coalesce(full_cost, -1)"
                                       " FROM plan ORDER BY id", -1, &st, NULL) == SQLITE_OK);
    CU_ASSERT(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1);
    CU_ASSERT(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_double(st, 1) == 0.25);
    CU_ASSERT(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(sq);
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
}

int main(int argc, char **argv)
{
    static const CunitTest tests[] = {
        {"full estimate, hand-computed", test_full_estimate},
        {"full estimate: the pipeline is the schedule's base time", test_full_estimate_base_time},
        {"--batch: scaled, exact sweep, dp rule", test_rebatch},
        {"micro-batch family: the same setup but the batch", test_family_setup},
        {"full_cost NULL when not estimated", test_store_null},
    };
    int64_t ids[3];
    if (argc == 3 && strcmp(argv[1], "--make-fixture") == 0)
        return make_fixture(argv[2], ids) ? 1 : 0;
    snprintf(g_path, sizeof g_path, "/tmp/apsolve-beyond-%ld.db", (long)getpid());
    int rc = CUNIT_RUN("solver_beyond", tests);
    {
        char side[300];
        unlink(g_path);
        snprintf(side, sizeof side, "%s-wal", g_path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", g_path);
        unlink(side);
    }
    return rc;
}
