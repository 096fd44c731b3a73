/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Each phase of a stage program priced once in a sweep
 * (docs/performance.md, "Each phase priced once"): the sweep takes the
 * seconds of a program's phases from the analytic backend's measurement
 * (approf_backend_prices_phases) and hands them to the apply-grad and
 * weight-gradient prices (approf_stage_apply_seconds_of,
 * approf_wgrad_seconds_of) instead of pricing the phases again. What makes
 * that exact: the measurement's compute_cost (a phase that fits) and
 * unfit_cost (one out of memory) are approf_phase_seconds bit for bit, and
 * the prices given the phases equal those that price them, bit for bit:
 * for every ZeRO stage and recomputation mode of a GPT stage on meshes with
 * data-parallel replicas, on a device where it fits and on one where it
 * does not.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "cunit_run.h"
#include "costdb.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"
#include "zoo_fixture.h"

/* Bitwise equality of two prices (== would take -0 for 0 and fail NaNs). */
static int same_bits(double a, double b)
{
    return !memcmp(&a, &b, sizeof a);
}

/* The phases of p as the analytic backend measures them, and the prices
 * that use them, against the prices that compute them. */
static void check_program(const ApprofHardwareSpec *hw, const ApprofBackend *be,
                          const ApprofStageProgram *p, int *oom_seen)
{
    double phase[2];
    ApprofMeasurement m[2];
    for (int ph = 0; ph < 2; ph++) {
        CU_ASSERT_FATAL(be->measure(be->ctx, p, ph, hw, &m[ph]) == 0);
        double want = approf_phase_seconds(hw, p, ph);
        CU_ASSERT(m[ph].status == COSTDB_STATUS_OK || m[ph].status == COSTDB_STATUS_OOM);
        phase[ph] = m[ph].status == COSTDB_STATUS_OK ? m[ph].compute_cost : m[ph].unfit_cost;
        *oom_seen |= m[ph].status == COSTDB_STATUS_OOM;
        CU_ASSERT(same_bits(phase[ph], want));
    }
    CU_ASSERT(same_bits(approf_stage_apply_seconds_of(hw, p, phase),
                        approf_stage_apply_seconds(hw, p)));
    for (int k = 0; k < 2; k++) {
        double bwd = k ? phase[1] : 0.75 * phase[1]; /* the analytic one, a measured one */
        CU_ASSERT(same_bits(approf_wgrad_seconds_of(hw, p, bwd, &phase[1]),
                            approf_wgrad_seconds(hw, p, bwd)));
    }
}

static void check_device(const ApprofGraph *g, int64_t memory, double overlap, int want_oom)
{
    ApprofHardwareSpec hw;
    ApprofBackend be;
    ApprofLayering l;
    int begin = 0, end = (int)g->n_ops, oom_seen = 0, built = 0;
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    hw.grad_overlap = overlap; /* the apply price reads the phases */
    if (memory > 0)
        hw.device_memory = memory;
    CU_ASSERT_FATAL(approf_backend_analytic(&be) == 0);
    CU_ASSERT(approf_backend_prices_phases(&be));
    memset(&l, 0, sizeof l);
    l.n_layers = 1;
    l.op_begin = &begin;
    l.op_end = &end;
    static const int meshes[][2] = {{8, 1}, {2, 4}};
    for (size_t mi = 0; mi < sizeof meshes / sizeof meshes[0]; mi++) {
        for (int r = 0; r < COSTDB_RECOMPUTE_COUNT; r++) {
            for (int z = 0; z <= 3; z++) {
                ApprofShardContext *ctx = NULL;
                ApprofShardRequest req;
                ApprofStageProgram p;
                char err[256];
                CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &ctx) == 0);
                memset(&req, 0, sizeof req);
                memset(&p, 0, sizeof p);
                req.mesh_hosts = 1;
                req.mesh_gpus = meshes[mi][0] * meshes[mi][1];
                req.logical_a = meshes[mi][0];
                req.logical_b = meshes[mi][1];
                req.method = APPROF_ILP_SERIES_PARALLEL;
                req.memory_levels = 1;
                req.variant.recompute = r;
                req.variant.zero = z;
                if (approf_shard_stage(ctx, &req, &p, err, sizeof err) == 0) {
                    check_program(&hw, &be, &p, &oom_seen);
                    built++;
                }
                approf_stage_program_clear(&p);
                approf_shard_context_free(&ctx);
            }
        }
    }
    CU_ASSERT(built >= 2 * 4 * (COSTDB_RECOMPUTE_COUNT - 1));
    CU_ASSERT_EQUAL(oom_seen, want_oom);
    approf_backend_destroy(&be);
}

static void test_phases_priced_once(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    /* the apply collectives hidden whole under the phases, and in part */
    for (int k = 0; k < 2; k++) {
        double overlap = k ? 1e-3 : 1.0;
        check_device(g, 0, overlap, 0);          /* fits: compute_cost */
        check_device(g, 64LL << 20, overlap, 1); /* 64 MiB: out of memory, unfit_cost */
    }
    approf_graph_free(&g);
}

/* A backend that measures is not taken for the analytic one. */
static int measured(void *ctx, const ApprofStageProgram *p, int phase,
                    const ApprofHardwareSpec *hw, ApprofMeasurement *out)
{
    (void)ctx, (void)p, (void)phase, (void)hw;
    memset(out, 0, sizeof *out);
    out->compute_cost = 1.0;
    return 0;
}

static void test_other_backend(void)
{
    ApprofBackend be;
    memset(&be, 0, sizeof be);
    be.name = "cuda";
    be.measure = measured;
    CU_ASSERT(!approf_backend_prices_phases(&be));
    CU_ASSERT(!approf_backend_prices_phases(NULL));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the analytic measurement's phases price apply and wgrad as before",
         test_phases_priced_once},
        {"a measuring backend does not price the phases", test_other_backend},
    };
    return CUNIT_RUN("each phase priced once", tests);
}
