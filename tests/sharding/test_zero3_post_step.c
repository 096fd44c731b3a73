/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DeepSpeed's gather of the persistent parameters after every optimizer
 * step (sharding/program_zero.c, shard_zero3_post_step; hw/cost.c,
 * approf_stage_apply_seconds; docs/validation.md, "ZeRO-3's per-rank host
 * work in DeepSpeed v0.3.13, counted"). At v0.3.13 the end of every
 * backward partitions the persistent parameters (fewer than 1e5
 * elements) with the others, and _post_step gathers them again with
 * _allgather_params: one list-form all-gather, copied out with one copy
 * per rank, then one copy_ per persistent parameter and rank whose slice
 * starts inside it. The model: the zoo's mlp (four dense layers, 2048 x
 * 8192 and 8192 x 2048 weights with their biases of 8192, 2048, 8192 and
 * 2048 elements, 2 bytes each) as one stage on 8 GPUs of one a100-80g
 * host with ZeRO-3. Hand counts:
 * - the persistent parameters are the four biases (the weights hold
 *   16777216 elements); on 8 ranks a bias of 8192 elements has slices of
 *   1024 and one of 2048 slices of 256, each rank's slice starting inside
 *   it: 4 x 8 = 32 copies, plus the all-gather's 8: 40 copies;
 * - they copy the biases' 40960 bytes twice: 81920 bytes;
 * - each copy is a copy kernel of its share: 4 us of launch plus twice
 *   81920 / 40 bytes at 2039 GB/s x 0.85 (a100-80g), so the step grows by
 *   40 x (4 us + 2 x 2048 B / 1.733 TB/s);
 * - nothing without zero3_rank_copies, under the serial schedule or under
 *   FSDP2's, and the program's signature is unchanged where nothing is
 *   counted.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "zoo_fixture.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

#define BIAS_BYTES ((2.0 * 8192.0 + 2.0 * 2048.0) * 2.0)

static ApprofGraph *mlp(int64_t batch)
{
    return zoo_fixture_mlp(batch, 0);
}

/* The whole graph as one stage with ZeRO-3 over 8 GPUs of one a100-80g
 * host under schedule, with zero3_rank_copies = copies. */
static int shard(const ApprofGraph *g, int schedule, int copies, ApprofHardwareSpec *hw,
                 ApprofStageProgram *p)
{
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-80g", hw) == 0);
    hw->zero3_schedule = schedule;
    hw->zero3_rank_copies = copies;
    return zoo_fixture_shard_whole(g, hw, 8, COSTDB_RECOMPUTE_NONE, 3, p);
}

static void test_deepspeed_post_step_copies(void)
{
    ApprofGraph *g = mlp(8);
    ApprofHardwareSpec hw_on, hw_off;
    ApprofStageProgram on, off;
    CU_ASSERT_FATAL(g != NULL);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_DEEPSPEED, 1, &hw_on, &on) == 0);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_DEEPSPEED, 0, &hw_off, &off) == 0);
    CU_ASSERT_DOUBLE_EQUAL(on.zero3_post_step_copies, 40.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(on.zero3_post_step_bytes, 2.0 * BIAS_BYTES, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(off.zero3_post_step_copies, 0.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(off.zero3_post_step_bytes, 0.0, 0.0);
    /* the step (apply-grad) grows by the 40 copies, priced on the spec
     * of the program without the field so that only the copies differ */
    double copy = 4e-6 + 2.0 * (2.0 * BIAS_BYTES / 40.0) / (2039e9 * 0.85);
    CU_ASSERT_DOUBLE_EQUAL(approf_stage_apply_seconds(&hw_off, &on) -
                               approf_stage_apply_seconds(&hw_off, &off),
                           40.0 * copy, 1e-12);
    CU_ASSERT(approf_stage_apply_seconds(&hw_on, &on) > approf_stage_apply_seconds(&hw_on, &off));
    approf_stage_program_clear(&on);
    approf_stage_program_clear(&off);
    approf_graph_free(&g);
}

static void test_other_schedules_none(void)
{
    ApprofGraph *g = mlp(8);
    ApprofHardwareSpec hw, hw0;
    ApprofStageProgram p, p0;
    CU_ASSERT_FATAL(g != NULL);
    for (int sched = APPROF_ZERO3_SERIAL; sched <= APPROF_ZERO3_DEEPSPEED; sched++) {
        if (sched == APPROF_ZERO3_DEEPSPEED)
            continue;
        CU_ASSERT_FATAL(shard(g, sched, 1, &hw, &p) == 0);
        CU_ASSERT_FATAL(shard(g, sched, 0, &hw0, &p0) == 0);
        CU_ASSERT_DOUBLE_EQUAL(p.zero3_post_step_copies, 0.0, 0.0);
        CU_ASSERT_DOUBLE_EQUAL(p.zero3_post_step_bytes, 0.0, 0.0);
        /* nothing counted, so the same program: the same signature */
        CU_ASSERT_STRING_EQUAL(p.signature, p0.signature);
        CU_ASSERT_DOUBLE_EQUAL(approf_stage_apply_seconds(&hw, &p),
                               approf_stage_apply_seconds(&hw0, &p0), 1e-15);
        approf_stage_program_clear(&p);
        approf_stage_program_clear(&p0);
    }
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"deepspeed: one copy per persistent parameter and rank after the step",
         test_deepspeed_post_step_copies},
        {"serial and fsdp2: no post-step copies", test_other_schedules_none},
    };
    return CUNIT_RUN("zero3_post_step", tests);
}
