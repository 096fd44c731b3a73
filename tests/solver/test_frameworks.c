/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rule of which frameworks run a plan as priced (solver/frameworks.h),
 * one case per limit it knows, and the stored verdict's round trip through
 * the plan options (costdb/plan_options.c).
 */
#include <CUnit/Basic.h>
#include <string.h>

#include "context_parallel.h"
#include "costdb.h"
#include "cunit_run.h"
#include "expert_parallel.h"
#include "frameworks.h"
#include "hsdp.h"
#include "plan_options.h"
#include "schedule.h"

#define MEG (1u << APSOLVE_FW_MEGATRON)
#define DS (1u << APSOLVE_FW_DEEPSPEED)
#define TT (1u << APSOLVE_FW_TORCHTITAN)

static ApsolveFwStage st[4];

/* pp uniform stages of dp x tp on (1, dp tp), layers each, variant (rec, zero). */
static ApsolveFwPlan plan(int pp, int dp, int tp, int layers, int rec, int zero)
{
    for (int k = 0; k < pp; k++)
        st[k] = (ApsolveFwStage){layers, 1, dp * tp, dp, tp, 0, {0, rec, zero}, 0};
    return (ApsolveFwPlan){st, (size_t)pp, APSOLVE_SCHEDULE_1F1B, 1, 0};
}

static unsigned runs(const ApsolveFwPlan *p, ApsolveFwVerdict *v)
{
    apsolve_frameworks(p, v);
    for (int f = 0; f < APSOLVE_FW_COUNT; f++)
        CU_ASSERT((v->runs >> f & 1u) == (v->why[f][0] == '\0'));
    return v->runs;
}

static void test_rule(void)
{
    ApsolveFwVerdict v;
    ApsolveFwPlan p;
    /* data parallelism with ZeRO-0, one stage: everyone */
    p = plan(1, 8, 1, 4, 0, 0);
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | DS | TT);
    /* 3-D with ZeRO-0: torchtitan's DDP takes one dimension only */
    p = plan(2, 2, 2, 2, 0, 0);
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | DS);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_TORCHTITAN], "DDP"));
    /* ZeRO-1 with a pipeline: Megatron's distributed optimizer, DeepSpeed;
     * FSDP has no ZeRO-1 */
    p = plan(2, 2, 2, 2, 0, 1);
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | DS);
    /* ZeRO-3 with a pipeline: torchtitan's FSDP and Megatron-FSDP
     * (DeepSpeed's PipelineEngine asserts stage < 2), and only when the
     * sweep priced FSDP2's overlap, which Megatron-FSDP runs with the
     * file's unit size: the serial schedule (the default) is not how
     * either runs it */
    p = plan(2, 4, 1, 2, 0, 3);
    p.zero3_schedule = APSOLVE_ZERO3_FSDP2;
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | TT);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_DEEPSPEED], "PipelineEngine"));
    p.zero3_schedule = APSOLVE_ZERO3_SERIAL;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_TORCHTITAN], "ZeRO-3 priced with the serial "
                                                                 "schedule"));
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_TORCHTITAN], "--zero3-schedule fsdp2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_MEGATRON], "ZeRO-3 priced with the serial "
                                                               "schedule: Megatron-FSDP"));
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_MEGATRON], "--suggested-communication-unit-"
                                                               "size"));
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_DEEPSPEED], "PipelineEngine"));
    p.zero3_schedule = APSOLVE_ZERO3_DEEPSPEED;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    /* ZeRO-3 data parallelism: the framework whose schedule was priced */
    p = plan(1, 8, 1, 4, 0, 3);
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_DEEPSPEED], "--zero3-schedule deepspeed"));
    p.zero3_schedule = APSOLVE_ZERO3_FSDP2;
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | TT);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_DEEPSPEED], "with the fsdp2 schedule"));
    p.zero3_schedule = APSOLVE_ZERO3_DEEPSPEED;
    CU_ASSERT_EQUAL(runs(&p, &v), DS);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_TORCHTITAN], "with the deepspeed schedule"));
    CU_ASSERT_EQUAL(apsolve_zero3_schedule_of("{\"zero3_schedule\":\"fsdp2\"}"),
                    APSOLVE_ZERO3_FSDP2);
    CU_ASSERT_EQUAL(apsolve_zero3_schedule_of("{\"zero3_schedule\":\"deepspeed\"}"),
                    APSOLVE_ZERO3_DEEPSPEED);
    CU_ASSERT_EQUAL(apsolve_zero3_schedule_of("{\"variants\":\"all\"}"), APSOLVE_ZERO3_SERIAL);
    CU_ASSERT_EQUAL(apsolve_zero3_schedule_of(""), APSOLVE_ZERO3_SERIAL);
    /* ZeRO-2 without a pipeline: DeepSpeed, torchtitan and Megatron-FSDP
     * (optim_grads), with one too: Megatron-FSDP */
    p = plan(1, 8, 1, 4, 0, 2);
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | DS | TT);
    p = plan(2, 4, 1, 2, 0, 2);
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | TT);
    /* selective recomputation (Megatron's attention core): not DeepSpeed,
     * nor torchtitan (its selective modes are per-op or per layer) */
    p = plan(1, 8, 1, 4, COSTDB_RECOMPUTE_SELECTIVE, 2);
    CU_ASSERT_EQUAL(runs(&p, &v), MEG);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_TORCHTITAN], "per-op"));
    p = plan(1, 8, 1, 4, COSTDB_RECOMPUTE_SELECTIVE, 1);
    CU_ASSERT_EQUAL(runs(&p, &v), MEG);
    /* torchtitan's per-op recomputation: torchtitan only */
    p = plan(1, 8, 1, 4, COSTDB_RECOMPUTE_OP, 2);
    CU_ASSERT_EQUAL(runs(&p, &v), TT);
    p = plan(1, 8, 1, 4, COSTDB_RECOMPUTE_OP, 1);
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_MEGATRON], "--recompute-modules"));
    /* GPipe with a pipeline: torchtitan only; interleaved: not DeepSpeed */
    p = plan(2, 4, 1, 2, 0, 1);
    p.schedule = APSOLVE_SCHEDULE_GPIPE;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    p = plan(2, 4, 1, 2, 0, 2);
    p.schedule = APSOLVE_SCHEDULE_GPIPE;
    CU_ASSERT_EQUAL(runs(&p, &v), TT);
    p = plan(2, 2, 2, 2, 0, 1);
    p.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
    p.virtual_stages = 2;
    CU_ASSERT_EQUAL(runs(&p, &v), MEG);
    /* ZB-H1 with a pipeline: no one (torchtitan's zero-bubble schedules
     * take 2+ stages per rank); without a pipeline it is plain data
     * parallelism, which all run */
    p = plan(2, 1, 4, 2, 0, 0);
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | DS | TT);
    p.schedule = APSOLVE_SCHEDULE_ZB_H1;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_TORCHTITAN], "2 or more stages per rank"));
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_MEGATRON], "no zero-bubble"));
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_DEEPSPEED], "ZB-H1"));
    /* the zero-bubble schedules on 2 or more chunks per rank: torchtitan
     * only (InterleavedZeroBubble, ZBVZeroBubble); one chunk is ZB-H1 */
    p.schedule = APSOLVE_SCHEDULE_INTERLEAVED_ZB;
    p.virtual_stages = 2;
    CU_ASSERT_EQUAL(runs(&p, &v), TT);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_MEGATRON], "no zero-bubble"));
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_DEEPSPEED], "interleaved zero-bubble"));
    p.virtual_stages = 1;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_TORCHTITAN], "2 or more stages per rank"));
    p.schedule = APSOLVE_SCHEDULE_ZBV;
    p.virtual_stages = 2;
    CU_ASSERT_EQUAL(runs(&p, &v), TT);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_MEGATRON], "ZB-V"));
    p = plan(1, 8, 1, 4, 0, 1);
    p.schedule = APSOLVE_SCHEDULE_ZB_H1;
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | DS);
    /* float16: not torchtitan */
    p = plan(1, 8, 1, 4, 0, 2);
    p.fp16 = 1;
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | DS);
    /* weights whole over the tp axis: no one */
    p = plan(2, 2, 2, 2, 0, 1);
    st[1].tp_whole = 3;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_MEGATRON], "whole"));
    /* stages on different meshes, or of different variants: no one */
    p = plan(2, 2, 2, 2, 0, 1);
    st[1].logical_a = 4, st[1].logical_b = 1;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_DEEPSPEED], "not uniform"));
    p = plan(2, 2, 2, 2, 0, 1);
    st[1].variant.zero = 0;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    p = plan(2, 2, 2, 2, 0, 1);
    st[0].variant.recompute = -1;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    /* unequal layers: Megatron states the first and last stage's; the
     * others split evenly; more than one apart: no one */
    p = plan(3, 2, 2, 2, 0, 1);
    st[0].layers = 3;
    CU_ASSERT_EQUAL(runs(&p, &v), MEG);
    p = plan(4, 2, 1, 2, 0, 1);
    st[1].layers = 3;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    p = plan(2, 2, 2, 2, 0, 1);
    st[0].layers = 4;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
    /* no stages */
    p.n = 0;
    CU_ASSERT_EQUAL(runs(&p, &v), 0u);
}

/* HSDP and raf=0 on top of the layout's verdict (solver/hsdp.c): DeepSpeed
 * and Megatron-FSDP have no reshard_after_forward and DeepSpeed's MiCS
 * groups consecutive ranks; torchtitan keeps its verdict. */
static void test_hsdp(void)
{
    ApsolveFwVerdict v;
    unsigned all = (1u << APSOLVE_FW_COUNT) - 1, ds = 1u << APSOLVE_FW_DEEPSPEED;
    unsigned meg = 1u << APSOLVE_FW_MEGATRON;
    memset(&v, 0, sizeof v);
    v.runs = all;
    apsolve_hsdp_frameworks(4, 1, 1, &v); /* HSDP, pure data parallelism: MiCS */
    CU_ASSERT(v.runs == all);
    apsolve_hsdp_frameworks(0, 2, 0, &v); /* raf=0 */
    CU_ASSERT(v.runs == (all & ~ds & ~meg));
    CU_ASSERT(strstr(v.why[APSOLVE_FW_DEEPSPEED], "reshard_after_forward") != NULL);
    CU_ASSERT(strstr(v.why[APSOLVE_FW_MEGATRON], "Megatron-FSDP reshards") != NULL);
    v.runs = all;
    memset(v.why, 0, sizeof v.why);
    apsolve_hsdp_frameworks(4, 2, 1, &v); /* HSDP with tp 2 */
    CU_ASSERT(v.runs == (all & ~ds));
    CU_ASSERT(strstr(v.why[APSOLVE_FW_DEEPSPEED], "MiCS") != NULL);
    /* a framework already refused keeps its first reason */
    apsolve_hsdp_frameworks(0, 1, 0, &v);
    CU_ASSERT(strstr(v.why[APSOLVE_FW_DEEPSPEED], "MiCS") != NULL);
}

static void test_stored(void)
{
    CostdbPlanOptions o, back;
    char js[512], err[200];
    char list[64];
    memset(&o, 0, sizeof o);
    snprintf(o.tool, sizeof o.tool, "apsolve test");
    snprintf(o.stage_option, sizeof o.stage_option, "auto");
    o.headroom_percent = 5;
    o.headroom_kept = 1;
    o.has_frameworks = 1;
    o.frameworks = MEG | TT;
    CU_ASSERT_EQUAL(costdb_plan_options_format(&o, js, sizeof js), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"frameworks\": \"megatron,torchtitan\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(js, "\"memory_headroom\": \"5%\""));
    CU_ASSERT_EQUAL(costdb_plan_options_parse(js, &back, err, sizeof err), 0);
    CU_ASSERT(back.has_frameworks && back.frameworks == (MEG | TT));
    CU_ASSERT(back.headroom_percent == 5 && back.headroom_bytes == 0 && back.headroom_kept);
    o.headroom_percent = 0;
    o.headroom_bytes = 1 << 30;
    o.has_frameworks = 1;
    o.frameworks = 0;
    CU_ASSERT_EQUAL(costdb_plan_options_format(&o, js, sizeof js), 0);
    CU_ASSERT_EQUAL(costdb_plan_options_parse(js, &back, err, sizeof err), 0);
    CU_ASSERT(back.has_frameworks && back.frameworks == 0 && back.headroom_bytes == 1 << 30);
    /* a plan stored before: no verdict */
    CU_ASSERT_EQUAL(costdb_plan_options_parse("{\"tool\": \"x\"}", &back, err, sizeof err), 0);
    CU_ASSERT(!back.has_frameworks && back.headroom_percent == 0);
    /* refused: an unknown framework, a bad headroom */
    CU_ASSERT_NOT_EQUAL(costdb_plan_options_parse("{\"frameworks\": \"megatron,jax\"}", &back,
                                                  err, sizeof err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "jax"));
    CU_ASSERT_NOT_EQUAL(costdb_plan_options_parse("{\"memory_headroom\": \"5x%\"}", &back, err,
                                                  sizeof err), 0);
    apsolve_frameworks_list(MEG | DS, list, sizeof list);
    CU_ASSERT_STRING_EQUAL(list, "Megatron-LM, DeepSpeed");
    apsolve_frameworks_list(0, list, sizeof list);
    CU_ASSERT_STRING_EQUAL(list, "none");
}

static void test_reserve(void)
{
    ApsolveOptions o;
    memset(&o, 0, sizeof o);
    CU_ASSERT_EQUAL(apsolve_memory_reserve(&o, 1000), 0);
    o.headroom_percent = 5;
    CU_ASSERT_EQUAL(apsolve_memory_reserve(&o, 1000), 50);
    CU_ASSERT_EQUAL(apsolve_memory_reserve(&o, 0), 0); /* unknown capacity */
    o.headroom_bytes = 300;
    CU_ASSERT_EQUAL(apsolve_memory_reserve(&o, 1000), 300);
    CU_ASSERT_EQUAL(apsolve_memory_reserve(&o, 200), 200);
}

/* The one check of a cp layout (context_parallel.h): the sequence in 2 cp
 * chunks; a2a's query and key/value heads per tp rank divisible by cp
 * (a2a+p2p: by its inner group); the ring takes any heads; unknown heads
 * pass with a note. */
static void test_cp_check(void)
{
    char why[400], note[400];
    ApsolveCpLayout ring = {1, 2, 4, APSOLVE_CP_P2P, 0}, a2a = {1, 2, 4, APSOLVE_CP_A2A, 0};
    ApsolveCpLayout hier = {1, 2, 4, APSOLVE_CP_A2A_P2P, 2};
    CU_ASSERT_TRUE(apsolve_cp_check(&ring, 8192, 6, 2, why, sizeof why, note, sizeof note));
    CU_ASSERT_STRING_EQUAL(note, "");
    CU_ASSERT_FALSE(apsolve_cp_check(&ring, 8188, 32, 8, why, sizeof why, NULL, 0));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "does not divide by 2 x cp = 8"));
    /* 32 heads, 8 kv heads over tp = 2: 16 and 4 per rank, cp = 4 divides both */
    CU_ASSERT_TRUE(apsolve_cp_check(&a2a, 8192, 32, 8, why, sizeof why, NULL, 0));
    /* 24 heads: 12 per rank, cp = 4 divides; 6 kv heads: 3 per rank, no */
    CU_ASSERT_FALSE(apsolve_cp_check(&a2a, 8192, 24, 6, why, sizeof why, NULL, 0));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "6 key/value heads (query groups) over tp = 2 are 3 per "
                                       "rank, which 4 does not divide"));
    /* 20 heads: 10 per rank */
    CU_ASSERT_FALSE(apsolve_cp_check(&a2a, 8192, 20, 0, why, sizeof why, NULL, 0));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "20 query heads over tp = 2 are 10 per rank, which 4"));
    /* a2a+p2p all-to-alls over its inner group of 2: 10 per rank divides */
    CU_ASSERT_TRUE(apsolve_cp_check(&hier, 8192, 20, 0, why, sizeof why, NULL, 0));
    hier.a2a = 4;
    CU_ASSERT_FALSE(apsolve_cp_check(&hier, 8192, 20, 0, why, sizeof why, NULL, 0));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "its inner group of 4"));
    /* heads that do not split over tp */
    CU_ASSERT_FALSE(apsolve_cp_check(&a2a, 8192, 7, 0, why, sizeof why, NULL, 0));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "7 query heads do not split over tp = 2"));
    /* unknown heads: not refused, said */
    CU_ASSERT_TRUE(apsolve_cp_check(&a2a, 8192, 0, 0, why, sizeof why, note, sizeof note));
    CU_ASSERT_PTR_NOT_NULL(strstr(note, "records no heads"));
}

/* What a launch file adapts is judged by the verdict (issue 32): an MoE
 * stage with tp > 1 priced without the sequence split, transformer blocks
 * split unevenly between stages, and the ep knobs. */
static void test_adapt(void)
{
    ApsolveFwVerdict v;
    ApsolveFwPlan p;
    /* MoE with tp > 1: Megatron only with the sequence split priced */
    p = plan(1, 4, 2, 4, 0, 1);
    st[0].moe = 1;
    CU_ASSERT_EQUAL(runs(&p, &v) & MEG, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_MEGATRON], "--sequence-parallel"));
    st[0].seq_split = 1;
    CU_ASSERT_EQUAL(runs(&p, &v) & MEG, MEG);
    /* MoE with tp = 1 needs no sequence parallelism */
    p = plan(1, 8, 1, 4, 0, 1);
    st[0].moe = 1;
    CU_ASSERT_EQUAL(runs(&p, &v) & MEG, MEG);
    /* equal layers, unequal transformer blocks (4, 4, 3): the blocks are
     * what the frameworks split; Megatron states the last stage's */
    p = plan(3, 2, 1, 4, 0, 1);
    st[0].blocks = st[1].blocks = 4;
    st[2].blocks = 3;
    CU_ASSERT_EQUAL(runs(&p, &v), MEG);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_DEEPSPEED], "transformer blocks"));
    /* ... but not with the stages between unequal (3, 4, 2, 3) */
    p = plan(4, 2, 1, 4, 0, 1);
    st[0].blocks = 3;
    st[1].blocks = 4;
    st[2].blocks = 2;
    st[3].blocks = 3;
    CU_ASSERT_EQUAL(runs(&p, &v), 0);
    /* unequal layers (5, 3), equal blocks: every framework */
    p = plan(2, 4, 1, 4, 0, 1);
    st[0].layers = 5;
    st[1].layers = 3;
    st[0].blocks = st[1].blocks = 6;
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | DS);
    /* not judged yet (a layout before pricing): no reason from the sizes */
    st[0].blocks = st[1].blocks = APSOLVE_FW_BLOCKS_LATER;
    CU_ASSERT_EQUAL(runs(&p, &v), MEG | DS);
    /* the ep knobs: DeepSpeed takes ep from the dp ranks and etp 1 or tp;
     * torchtitan builds ep inside FSDP and takes etp 1 or tp */
    memset(&v, 0, sizeof v);
    v.runs = MEG | DS | TT;
    apsolve_ep_frameworks(4, 2, 4, 1, 0, &v);
    CU_ASSERT_EQUAL(v.runs, MEG);
    memset(&v, 0, sizeof v);
    v.runs = MEG | DS | TT;
    apsolve_ep_frameworks(4, 2, 2, 2, 2, &v);
    CU_ASSERT_EQUAL(v.runs, MEG | DS | TT);
    memset(&v, 0, sizeof v);
    v.runs = MEG | DS | TT;
    apsolve_ep_frameworks(2, 4, 4, 2, 2, &v);
    CU_ASSERT_EQUAL(v.runs, MEG);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why[APSOLVE_FW_TORCHTITAN], "ParallelDims"));
}

/* The memory-headroom rule for a priced layout (apsolve_keep_headroom,
 * apsolve_evaluate_as_run_keep): one stage, a fast level that fits the raw
 * capacity only and a slower one that keeps the headroom. */
static void test_keep_headroom(void)
{
    ApsolveProblem *p = NULL;
    ApsolvePlan *pl = NULL;
    ApsolveOptions o;
    ApsolveStageSpec sp = {0, 0, 1, 1, 1, 1, 0, {-1, 0, 0}};
    const int64_t peak[2] = {960, 800};
    char err[128];
    CU_ASSERT_FATAL(apsolve_problem_new(1, 1, 1, 1, 2, 1, &p) == APSOLVE_OK);
    p->submeshes[0] = (ApsolveSubmesh){1, 1};
    for (int c = 0; c < 2; c++) {
        size_t idx = apsolve_index(p, 0, 0, 0, c);
        p->configs[c] = (ApsolveConfig){.valid = 1, .logical_a = 1, .logical_b = 1,
                                        .force_batch_dim = 0, .variant.memory_level = c};
        p->cost[idx] = c ? 1.5 : 1.0;
        p->apply_cost[idx] = 0;
        *apsolve_memory_own(p, idx) = (ApsolveMemory){.avail = 1000, .peak = peak[c]};
        p->max_n_succ_stages[idx] = apsolve_max_n_succ_stages(1000, peak[c], 0, 0);
    }
    memset(&o, 0, sizeof o);
    o.micro_batches = 1;
    o.objective = APSOLVE_OBJECTIVE_FULL;
    o.headroom_percent = 10;
    /* judged by the raw capacity (--parallel): the fast level */
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, &sp, 1, &pl, err, sizeof err) == APSOLVE_OK);
    CU_ASSERT(pl->feasible && pl->stages[0].variant.memory_level == 0);
    apsolve_plan_free(&pl);
    /* the search's rule: the slower level that keeps 100 bytes free */
    CU_ASSERT_FATAL(apsolve_evaluate_as_run_keep(NULL, 0, p, &o, &sp, 1, &pl, err,
                                                 sizeof err) == APSOLVE_OK);
    CU_ASSERT(pl->feasible && o.search_headroom && pl->stages[0].variant.memory_level == 1);
    CU_ASSERT_EQUAL(sp.variant.memory_level, -1); /* the specs as given */
    apsolve_plan_free(&pl);
    /* a headroom the fast level keeps: the fast level */
    o.headroom_percent = 3;
    CU_ASSERT_FATAL(apsolve_evaluate_as_run_keep(NULL, 0, p, &o, &sp, 1, &pl, err,
                                                 sizeof err) == APSOLVE_OK);
    CU_ASSERT(pl->feasible && o.search_headroom && pl->stages[0].variant.memory_level == 0);
    apsolve_plan_free(&pl);
    /* a headroom no level keeps: the raw capacity, the fast level */
    o.headroom_percent = 25;
    CU_ASSERT_FATAL(apsolve_evaluate_as_run_keep(NULL, 0, p, &o, &sp, 1, &pl, err,
                                                 sizeof err) == APSOLVE_OK);
    CU_ASSERT(pl->feasible && !o.search_headroom && pl->stages[0].variant.memory_level == 0);
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"which frameworks run a plan as priced", test_rule},
        {"the stored verdict and headroom", test_stored},
        {"HSDP and raf=0", test_hsdp},
        {"the memory headroom in bytes", test_reserve},
        {"the cp layout check: sequence, heads", test_cp_check},
        {"what a launch file adapts", test_adapt},
        {"a layout's levels under the headroom rule", test_keep_headroom},
    };
    return CUNIT_RUN("frameworks", tests);
}
