/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The phase's kernel walk over plain arrays (hw/phase_cost.c,
 * kernel_range and kernel_span; docs/performance.md, "The pricing's
 * loops over plain arrays (issue 38, pricecost)"): a program whose phase
 * is another program's first kernels (a head, stage.h kernel_head) and
 * its own after them, and the build's program whose array holds a kept
 * prefix's end (approf_kernel_share_set_mark), priced through one memo in
 * either order, fresh and again, with the prefix's end inside the head,
 * at its end or in the build's array at any kernel: the seconds, the
 * weight-gradient kernels' sum and the embedding gradient's elements
 * equal those of a walk kernel by kernel in approf_phase_kernel's order,
 * bit for bit; with async groups and their collectives (windows), the
 * memo's price equals the memo-less one.
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "hardware.h"
#include "hw_fixture.h"
#include "stage.h"

enum { NB = 11, NOWN = 4 };

/* Kernel i of a backward: GEMMs in async groups 1..3 (input and weight
 * gradients), elementwise and reduction kernels, an embedding's
 * gradient gather; scaled by a so that two arrays differ. */
static void make_kernel(ApprofKernel *k, int i, double a)
{
    memset(k, 0, sizeof *k);
    k->dtype = APPROF_BF16;
    if (i % 3 != 2) {
        k->kind = APPROF_K_GEMM;
        k->batch = 1;
        k->m = 1024 + 64 * i;
        k->n = k->k = 4096;
        k->flops = 2.0 * (double)k->m * 4096.0 * 4096.0 * a;
        k->bytes = 3.0 * 4096 * 4096 * 2 * a;
        k->async_group = 1 + i % 3;
        k->async_wgrad = i % 2;
        k->wgrad = i % 2;
    } else if (i == 5) {
        k->kind = APPROF_K_GATHER;
        k->kop = APPROF_CUDA_OP_EMBEDDING;
        k->wgrad = 1;
        k->extent = 128256;
        k->cols = 4096;
        k->bytes = 1.7e8 * a;
    } else {
        k->kind = i % 2 ? APPROF_K_REDUCTION : APPROF_K_ELEMENTWISE;
        k->bytes = 1e7 * (1 + i) * a;
    }
}

/* The sums of p's phase 1 kernel by kernel (no async groups). */
static ApprofPhasePrice walk(const ApprofHardwareSpec *hw, const ApprofStageProgram *p)
{
    ApprofPhasePrice r = {0.0, 0.0, 0.0};
    for (size_t i = 0; i < approf_phase_kernel_count(p, 1); i++) {
        const ApprofKernel *k = approf_phase_kernel(p, 1, i);
        double s = approf_kernel_seconds(hw, k);
        r.seconds += s;
        if (k->wgrad)
            r.wgrad_kernels += s;
        if (k->kind != APPROF_K_GEMM && approf_kernel_is_embedding_grad(k))
            r.embedding_elements += (double)k->extent * (double)k->cols;
    }
    return r;
}

static int same_bits(double x, double y) { return !memcmp(&x, &y, sizeof x); }

/* p's phase 1 through memo: the walk's three sums without async groups,
 * the memo-less price with them. */
static void check_priced(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                         const ApprofStageProgram *p)
{
    ApprofPhasePrice got, want;
    approf_phase_price_memo(hw, p, 1, memo, &got);
    if (hw->tp_async_grad > 0)
        approf_phase_price_memo(hw, p, 1, NULL, &want);
    else
        want = walk(hw, p);
    CU_ASSERT(same_bits(got.seconds, want.seconds));
    CU_ASSERT(same_bits(got.wgrad_kernels, want.wgrad_kernels));
    CU_ASSERT(same_bits(got.embedding_elements, want.embedding_elements));
    CU_ASSERT(got.embedding_elements > 0); /* kernel 5 in each program */
}

static void run_case(ApprofHardwareSpec *hw, size_t mark, size_t head, int build_first,
                     ApprofCollective *colls, size_t n_colls)
{
    ApprofStageProgram b, q;
    ApprofPriceMemo *memo = NULL;
    memset(&b, 0, sizeof b);
    memset(&q, 0, sizeof q);
    b.kernels[1] = calloc(NB, sizeof *b.kernels[1]);
    q.kernels[1] = calloc(NOWN, sizeof *q.kernels[1]);
    CU_ASSERT_FATAL(b.kernels[1] && q.kernels[1]);
    b.n_kernels[1] = NB;
    q.n_kernels[1] = NOWN;
    for (int i = 0; i < NB; i++)
        make_kernel(&b.kernels[1][i], i, 1.0);
    for (int i = 0; i < NOWN; i++)
        make_kernel(&q.kernels[1][i], i + 3, 1.25);
    ApprofKernelShare *s = approf_kernel_share(&b, 1);
    CU_ASSERT_FATAL(s != NULL);
    approf_kernel_share_set_mark(s, mark);
    CU_ASSERT_FATAL(approf_kernel_share_head(&q, 1, s, head) == 0);
    CU_ASSERT_FATAL(approf_phase_kernel_count(&q, 1) == head + NOWN);
    b.colls[1] = q.colls[1] = colls;
    b.n_colls[1] = q.n_colls[1] = n_colls;
    for (int round = 0; round < 2; round++) {
        if (build_first)
            check_priced(hw, &memo, &b);
        check_priced(hw, &memo, &q);
        if (!build_first)
            check_priced(hw, &memo, &b);
    }
    b.colls[1] = q.colls[1] = NULL; /* the caller's */
    approf_kernel_share_release(s);
    approf_stage_program_clear(&b);
    approf_stage_program_clear(&q);
    approf_price_memo_free(memo);
}

/* Every prefix end (none, 1 .. NB - 1) with heads of 1, 5 and all NB
 * kernels (the end inside the head, at it, after it), either program
 * priced first; without and with async groups. */
static void test_walk_spans(void)
{
    ApprofHardwareSpec hw;
    ApprofCollective c[3];
    static const size_t heads[] = {1, 5, NB};
    hw_fixture_round_spec(&hw);
    c[0] = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, 5e8, 8, 1);
    c[0].async_group = 1;
    c[1] = hw_fixture_coll(APPROF_COLL_REDUCE_SCATTER, 9e8, 8, 1);
    c[1].async_group = 2;
    c[1].async_wgrad = 1;
    c[2] = hw_fixture_coll(APPROF_COLL_ALL_GATHER, 2e8, 8, 1);
    c[2].async_group = 3;
    for (int async = 0; async < 2; async++) {
        hw.tp_async_grad = async ? 1.0 : 0.0;
        for (size_t mark = 0; mark < NB; mark++)
            for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++)
                for (int first = 0; first < 2; first++)
                    run_case(&hw, mark, heads[h], first, async ? c : NULL, async ? 3 : 0);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the kernel walk's spans: head, own, kept prefix's end", test_walk_spans},
    };
    return CUNIT_RUN("phase price walk", tests);
}
