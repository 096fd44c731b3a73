/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exposed tail of an overlapped gradient sync (approf_stage_apply_seconds,
 * profiler/hw/cost.c exposed_tail): the last bucket, counted in bytes of the
 * gradients as the framework reduces them (f32 for Megatron's bf16 models),
 * holds at least the input embedding's table, whose gradient is complete only
 * after the backward's last operator; the leading all-gather of the updated
 * parameters moves the same bucket at the parameters' width. Counted by hand
 * on round numbers (docs/validation.md, "The last gradient bucket holds the
 * embedding").
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "costdb.h"
#include "cunit_run.h"
#include "hardware.h"
#include "hw_fixture.h"
#include "stage.h"

#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b) + 1e-300)
/* NCCL's ring, Simple (docs/nccl-tuning.md): its base latency; the round
 * spec's links have no per-step latency */
#define NCCL_BASE 8.4e-6
/* a reduce-scatter or all-gather of bytes over the 8 GPUs of one host at
 * 300 GB/s: (n - 1) / n of the bytes */
#define RING(bytes) (7.0 / 8.0 * (bytes) / 300e9 + NCCL_BASE)

typedef struct {
    ApprofStageProgram p;
    ApprofKernel fwd, bwd[2];
} Stage;

/* A bf16 stage whose forward and backward each stream 1e12 bytes (1 s at
 * 2000 GB/s x 0.5: long enough to hide every collective below but its
 * tail), whose backward ends with an embedding table's scatter-add of
 * rows x cols elements (0: none), and whose apply phase reduce-scatters
 * grad_bytes of bf16 gradients and all-gathers as many parameter bytes
 * over the 8 GPUs of one host (ZeRO-1). */
static void stage(Stage *s, int64_t rows, int64_t cols, double grad_bytes)
{
    memset(s, 0, sizeof *s);
    s->p.dtype = APPROF_BF16;
    s->fwd.kind = s->bwd[0].kind = APPROF_K_ELEMENTWISE;
    s->fwd.bytes = s->bwd[0].bytes = 1e12;
    s->bwd[1].kind = APPROF_K_GATHER;
    s->bwd[1].wgrad = 1;
    s->bwd[1].kop = rows > 0 ? APPROF_CUDA_OP_EMBEDDING : APPROF_CUDA_OP_NONE;
    s->bwd[1].extent = rows;
    s->bwd[1].cols = cols;
    s->p.kernels[0] = &s->fwd;
    s->p.n_kernels[0] = 1;
    s->p.kernels[1] = s->bwd;
    s->p.n_kernels[1] = 2;
    s->p.n_apply_colls = 2;
    s->p.apply_colls[0] = hw_fixture_coll(APPROF_COLL_REDUCE_SCATTER, grad_bytes, 8, 1);
    s->p.apply_colls[1] = hw_fixture_coll(APPROF_COLL_ALL_GATHER, grad_bytes, 8, 1);
}

/* Megatron's buckets, 1e9 bytes of f32 gradients (250 M elements), on a
 * bf16 model (grad_reduce_bytes 4), overlapped with the backward. */
static void spec(ApprofHardwareSpec *hw)
{
    hw_fixture_round_spec(hw);
    hw->grad_overlap = 1.0;
    hw->grad_bucket_bytes = 1e9;
    hw->grad_reduce_bytes = 4;
}

static void test_bucket_at_reduce_width(void)
{
    ApprofHardwareSpec hw;
    Stage s;
    spec(&hw);
    /* no embedding; 0.8e9 bytes of bf16 gradients are 1.6e9 bytes in f32,
     * more than the 1e9-byte bucket: the last bucket, 1e9 bytes, shows;
     * the all-gather's first bucket holds the same 250 M elements in bf16,
     * 0.5e9 bytes */
    stage(&s, 0, 0, 0.8e9);
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &s.p), RING(1e9) + RING(0.5e9)));
    /* a gradient sync smaller than one bucket (0.4e9 bytes in f32) is all
     * tail; its all-gather (0.2e9 bytes) too */
    stage(&s, 0, 0, 0.2e9);
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &s.p), RING(0.4e9) + RING(0.2e9)));
    /* gradients reduced at the model's width: bucket and tail are the same
     * bytes for both collectives */
    hw.grad_reduce_bytes = 0;
    stage(&s, 0, 0, 0.8e9);
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &s.p), RING(0.8e9) + RING(0.8e9)));
}

static void test_embedding_in_last_bucket(void)
{
    ApprofHardwareSpec hw;
    Stage s;
    spec(&hw);
    /* a 50000 x 10000 table: 5e8 gradient elements, 2e9 bytes in f32 (two
     * buckets' worth), all in the last bucket; the all-gather's first
     * bucket moves its 1e9 bytes of bf16 parameters */
    stage(&s, 50000, 10000, 60e9);
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &s.p), RING(2e9) + RING(1e9)));
    /* a table smaller than a bucket (1e8 elements: 0.4e9 bytes in f32):
     * the bucket is the tail */
    stage(&s, 10000, 10000, 60e9);
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &s.p), RING(1e9) + RING(0.5e9)));
    /* never more than the whole collective */
    stage(&s, 50000, 10000, 0.5e9);
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &s.p), RING(1e9) + RING(0.5e9)));
    /* a gather that is no embedding's table gradient (an MoE dispatch's
     * backward, kop none) is not counted */
    stage(&s, 50000, 10000, 60e9);
    s.bwd[1].kop = APPROF_CUDA_OP_NONE;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &s.p), RING(1e9) + RING(0.5e9)));
    /* without buckets (grad_bucket_bytes 0) everything may hide */
    stage(&s, 50000, 10000, 60e9);
    hw.grad_bucket_bytes = 0;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &s.p), 0.0));
    /* and without overlap the whole reduce-scatter (120e9 bytes in f32) and
     * all-gather show, the embedding or not */
    hw.grad_bucket_bytes = 1e9;
    hw.grad_overlap = 0;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &s.p), RING(120e9) + RING(60e9)));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"bucket counted at the reduce width", test_bucket_at_reduce_width},
        {"the embedding in the last bucket", test_embedding_in_last_bucket},
    };
    return CUNIT_RUN("hw-grad-tail", tests);
}
