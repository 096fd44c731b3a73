/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prices kept (approf_phase_seconds_memo, hw/cost.c; docs/performance.md,
 * "Shared kernel arrays and prices kept"): a phase priced through the memo equals
 * approf_phase_seconds bit for bit, for collectives that differ from one
 * another in one field of the memo's key each (kind, bytes by one ulp,
 * group, hosts, crossing hosts, hosts spanned in a scale-up domain, the
 * ZeRO-3 mark under per-rank copies), after more distinct collectives
 * than the memo has slots, after the spec changes under the same memo;
 * and for programs that hold one shared kernel array with different
 * collectives (other async groups: other windows), and another array of
 * other kernels; kernel prices kept (PriceMemoKernel) for kernels one
 * field away from another in each field approf_kernel_seconds reads
 * (a field the slot does not depend on: both in one slot; a size it does:
 * more kernels than slots), each priced anew; and programs of one build
 * that start with the same collectives (stage.h, coll_prefix) and end
 * with others, the prefix's run resumed only after the same kernels'
 * sum and windows, or from another sum by the kept prices (issue 38,
 * zends): each as a fresh price, bit for bit.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "hardware.h"
#include "hw_fixture.h"
#include "stage.h"

/* Phase 0 of a program of the one collective c: through memo and plain,
 * the same bits; returns the price. */
static double same_price(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                         const ApprofCollective *c)
{
    ApprofStageProgram p;
    ApprofCollective one = *c;
    memset(&p, 0, sizeof p);
    p.colls[0] = &one;
    p.n_colls[0] = 1;
    double plain = approf_phase_seconds(hw, &p, 0);
    double kept = approf_phase_seconds_memo(hw, &p, 0, memo);
    CU_ASSERT_EQUAL(memcmp(&plain, &kept, sizeof plain), 0);
    return plain;
}

/* The variants of base, each one key field away from it: priced in turn
 * through one memo, each gets its own price (which differs from base's,
 * so a memo that left the field out of its key would answer base's). */
static void check_variants(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                           ApprofCollective base, unsigned same_ok)
{
    ApprofCollective v[8];
    int n = 0;
    double b = same_price(hw, memo, &base);
    v[n] = base, v[n++].kind = APPROF_COLL_ALL_REDUCE;
    v[n] = base, v[n++].bytes = nextafter(base.bytes, INFINITY) * 4.0;
    v[n] = base, v[n++].group_size = base.group_size * 2;
    v[n] = base, v[n++].hosts = base.hosts * 2;
    v[n] = base, v[n++].crosses_hosts = !base.crosses_hosts;
    v[n] = base, v[n++].span_hosts = base.span_hosts + 4;
    v[n] = base, v[n++].zero3_unit = 1;
    for (int i = 0; i < n; i++) {
        double p = same_price(hw, memo, &v[i]);
        if (!(same_ok >> i & 1))
            CU_ASSERT(p != b); /* the field matters to the price */
        same_price(hw, memo, &base); /* and base's is still base's */
    }
}

static void test_memo_equals_plain(void)
{
    ApprofHardwareSpec hw;
    ApprofPriceMemo *memo = NULL;
    hw_fixture_round_spec(&hw);
    /* a scale-up domain of four hosts (span_hosts counts) and ZeRO-3's
     * per-rank copies (zero3_unit counts) */
    hw.scaleup_gpus = 32;
    hw.zero3_rank_copies = 1;
    hw.kernel_launch_overhead = 2e-6;
    ApprofCollective base = hw_fixture_coll(APPROF_COLL_ALL_GATHER, 3e8, 16, 2);
    base.span_hosts = 4;
    /* in a scale-up domain the hosts spanned count, not the crossing nor
     * the hosts */
    check_variants(&hw, &memo, base, 1u << 4 | 1u << 3);
    ApprofHardwareSpec flat = hw;
    flat.scaleup_gpus = 0;
    ApprofCollective local = hw_fixture_coll(APPROF_COLL_ALL_GATHER, 3e8, 8, 1);
    local.span_hosts = 1;
    /* without one, the crossing counts, and neither the hosts spanned
     * nor (within a host) the hosts */
    check_variants(&flat, &memo, local, 1u << 5 | 1u << 3);
    /* across hosts, the hosts count (each host's network adapters) */
    ApprofCollective wide = hw_fixture_coll(APPROF_COLL_ALL_GATHER, 3e8, 16, 2);
    check_variants(&flat, &memo, wide, 1u << 5);
    /* more distinct collectives than slots, then the first ones again */
    for (int round = 0; round < 2; round++)
        for (int i = 1; i <= 6000; i++) {
            ApprofCollective c = hw_fixture_coll((ApprofCollKind)(i % 4), 1024.0 * i,
                                                 2 << (i % 5), 1 + (i % 3));
            same_price(&hw, &memo, &c);
        }
    /* another spec under the same memo: its own prices */
    hw.inter_host_bandwidth *= 0.5;
    hw.intra_host_bandwidth *= 2.0;
    check_variants(&hw, &memo, base, 1u << 4 | 1u << 3);
    approf_price_memo_free(memo);
}

/* p and q priced through memo in turn: each as approf_phase_seconds. */
static void same_phase(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                       const ApprofStageProgram *p)
{
    double plain = approf_phase_seconds(hw, p, 1);
    double kept = approf_phase_seconds_memo(hw, p, 1, memo);
    CU_ASSERT_EQUAL(memcmp(&plain, &kept, sizeof plain), 0);
}

static void test_shared_kernel_sums(void)
{
    ApprofHardwareSpec hw;
    ApprofPriceMemo *memo = NULL;
    ApprofStageProgram p, q, r;
    ApprofCollective cp[2], cq[3];
    hw_fixture_round_spec(&hw);
    hw.tp_async_grad = 1.0;
    memset(&p, 0, sizeof p);
    memset(&q, 0, sizeof q);
    memset(&r, 0, sizeof r);
    /* four linear layers' GEMMs in async groups 1..2 (input and weight
     * gradients) and an elementwise kernel */
    p.kernels[1] = calloc(5, sizeof *p.kernels[1]);
    CU_ASSERT_FATAL(p.kernels[1] != NULL);
    p.n_kernels[1] = 5;
    for (int i = 0; i < 5; i++) {
        ApprofKernel *k = &p.kernels[1][i];
        k->kind = i < 4 ? APPROF_K_GEMM : APPROF_K_ELEMENTWISE;
        k->dtype = APPROF_BF16;
        k->batch = 1;
        k->m = k->n = k->k = 4096;
        k->flops = 2.0 * 4096 * 4096 * 4096 * (1 + i);
        k->bytes = 3.0 * 4096 * 4096 * 2;
        k->async_group = i < 4 ? 1 + i / 2 : 0;
        k->async_wgrad = i % 2;
    }
    ApprofKernelShare *s = approf_kernel_share(&p, 1);
    CU_ASSERT_FATAL(s != NULL);
    approf_kernel_share_hold(&q, 1, s);
    CU_ASSERT_FATAL(q.kernels[1] == p.kernels[1] && q.n_kernels[1] == 5);
    /* p's collectives in group 1 only (one window pair), q's in 1 and 2
     * and one outside any */
    cp[0] = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, 5e8, 8, 1);
    cp[0].async_group = 1;
    cp[1] = hw_fixture_coll(APPROF_COLL_ALL_GATHER, 2e8, 8, 1);
    cp[1].async_group = 1;
    cp[1].async_wgrad = 1;
    cq[0] = cp[0];
    cq[1] = hw_fixture_coll(APPROF_COLL_REDUCE_SCATTER, 9e8, 8, 1);
    cq[1].async_group = 2;
    cq[1].async_wgrad = 1;
    cq[2] = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, 1e8, 16, 2);
    p.colls[1] = cp;
    p.n_colls[1] = 2;
    q.colls[1] = cq;
    q.n_colls[1] = 3;
    for (int round = 0; round < 2; round++) {
        same_phase(&hw, &memo, &p);
        same_phase(&hw, &memo, &q);
    }
    /* another array: other kernels, its own sums */
    r.kernels[1] = calloc(5, sizeof *r.kernels[1]);
    CU_ASSERT_FATAL(r.kernels[1] != NULL);
    memcpy(r.kernels[1], p.kernels[1], 5 * sizeof *r.kernels[1]);
    r.kernels[1][3].flops *= 3.0;
    r.n_kernels[1] = 5;
    ApprofKernelShare *s2 = approf_kernel_share(&r, 1);
    CU_ASSERT_FATAL(s2 != NULL);
    CU_ASSERT(approf_kernel_share_id(s2) != approf_kernel_share_id(s));
    r.colls[1] = cq;
    r.n_colls[1] = 3;
    same_phase(&hw, &memo, &r);
    same_phase(&hw, &memo, &q);
    p.colls[1] = q.colls[1] = r.colls[1] = NULL; /* on the stack */
    approf_kernel_share_release(s);
    approf_kernel_share_release(s2);
    approf_stage_program_clear(&p);
    approf_stage_program_clear(&q);
    approf_stage_program_clear(&r);
    approf_price_memo_free(memo);
}

/* Phase 1 of a program of the one kernel k in an array of its own (no
 * share: the kernel loop runs), through memo and plain: the same bits;
 * returns the price. */
static double same_kernel_price(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                                const ApprofKernel *k)
{
    ApprofStageProgram p;
    ApprofKernel one = *k;
    memset(&p, 0, sizeof p);
    p.kernels[1] = &one;
    p.n_kernels[1] = 1;
    double plain = approf_phase_seconds(hw, &p, 1);
    double kept = approf_phase_seconds_memo(hw, &p, 1, memo);
    CU_ASSERT_EQUAL(memcmp(&plain, &kept, sizeof plain), 0);
    return plain;
}

/* base, then v (base one field away, a field the slot does not depend
 * on: the same slot), then base again: each its own price, and v's not
 * base's (the field matters). */
static void check_kernel_pair(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                              const ApprofKernel *base, const ApprofKernel *v)
{
    double b = same_kernel_price(hw, memo, base);
    CU_ASSERT(same_kernel_price(hw, memo, v) != b);
    CU_ASSERT(same_kernel_price(hw, memo, base) == b);
}

/* n kernels from base, the i-th with field *f of its own copy set by
 * set(k, i): more than the memo's slots, so two of them share a slot;
 * each priced as plain. */
static void check_kernel_run(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                             const ApprofKernel *base, void (*set)(ApprofKernel *, int))
{
    double first = 0.0, last = 0.0;
    for (int i = 0; i < 3000; i++) {
        ApprofKernel k = *base;
        set(&k, i);
        last = same_kernel_price(hw, memo, &k);
        if (!i)
            first = last;
    }
    CU_ASSERT(first != last); /* the field matters */
}

static void set_flops(ApprofKernel *k, int i) { k->flops *= 1.0 + i / 4096.0; }
static void set_bytes(ApprofKernel *k, int i) { k->bytes *= 1.0 + i / 4096.0; }
static void set_m(ApprofKernel *k, int i) { k->m = 600 + i; }
static void set_n(ApprofKernel *k, int i) { k->n = 600 + i; }
static void set_k(ApprofKernel *k, int i) { k->k = 600 + i; }

/* Kernel prices kept (phase_cost.c, PriceMemoKernel): a kernel one field
 * away from another, in each field approf_kernel_seconds reads, is priced
 * anew, under a spec where that field changes the price. */
static void test_kernel_prices_kept(void)
{
    ApprofHardwareSpec hw;
    ApprofPriceMemo *memo = NULL;
    hw_fixture_round_spec(&hw);
    hw.kernel_launch_overhead = 2e-6;
    hw.gemm_unaligned_factor = 0.5;
    hw.gemm_store_overlap = 0.5;
    hw.peak_flops_fp8 = 600e12;
    hw.attention_efficiency = 0.3;
    hw.attention_eff_seq[1] = 0.2; /* 4096 keys */
    hw.attention_eff_seq[2] = 0.4; /* 8192 */
    hw.loss_f32 = 1;
    ApprofKernel g;
    memset(&g, 0, sizeof g);
    g.kind = APPROF_K_GEMM;
    g.dtype = APPROF_BF16;
    g.batch = 1;
    g.m = g.n = g.k = 4096;
    g.flops = 2.0 * 4096 * 4096 * 4096;
    g.bytes = 3.0 * 4096 * 4096 * 2;
    g.store_bytes = 4096.0 * 4096 * 2;
    ApprofKernel v = g;
    v.kind = APPROF_K_CONV_FWD;
    check_kernel_pair(&hw, &memo, &g, &v);
    v = g, v.dtype = APPROF_F32;
    check_kernel_pair(&hw, &memo, &g, &v);
    v = g, v.fp8 = 1;
    check_kernel_pair(&hw, &memo, &g, &v);
    v = g, v.attention = 1;
    check_kernel_pair(&hw, &memo, &g, &v);
    v = g, v.store_bytes *= 0.5;
    check_kernel_pair(&hw, &memo, &g, &v);
    ApprofKernel e = g; /* elements count only in a loss kernel */
    e.elements = 1 << 20;
    v = e, v.loss = 1;
    check_kernel_pair(&hw, &memo, &e, &v);
    ApprofKernel a = g; /* a fused attention's GEMM at 4096 keys */
    a.attention = 1;
    a.attn_skv = 4096;
    v = a, v.attn_skv = 8192;
    check_kernel_pair(&hw, &memo, &a, &v);
    ApprofKernel l = g; /* a cross-entropy's kernel under loss_f32 */
    l.loss = 1;
    l.elements = 1 << 20;
    v = l, v.elements *= 2;
    check_kernel_pair(&hw, &memo, &l, &v);
    check_kernel_run(&hw, &memo, &g, set_flops);
    ApprofKernel mb = g; /* memory bound: the bytes count */
    mb.flops = 1e6;
    check_kernel_run(&hw, &memo, &mb, set_bytes);
    /* measured rates: the sizes count (a batch as (batch m) x n x k) */
    CostdbGemmPoint pt[8];
    static const int64_t side[2] = {512, 4096};
    for (int i = 0; i < 8; i++) {
        memset(&pt[i], 0, sizeof pt[i]);
        snprintf(pt[i].dtype, sizeof pt[i].dtype, "bf16");
        pt[i].m = side[i >> 2 & 1];
        pt[i].n = side[i >> 1 & 1];
        pt[i].k = side[i & 1];
        pt[i].rate = 1e12 * (100.0 + 37.0 * (i >> 2 & 1) + 11.0 * (i >> 1 & 1) + 5.0 * (i & 1));
    }
    ApprofGemmTable *tab = NULL;
    CU_ASSERT_EQUAL_FATAL(approf_gemm_table_new(pt, 8, &tab), 0);
    hw.gemm_table = tab;
    hw.gemm_unaligned_factor = 0.0;
    ApprofKernel t = g;
    t.m = t.n = t.k = 1024;
    t.flops = 2.0 * 1024 * 1024 * 1024;
    t.bytes = 1.0;
    t.store_bytes = 0.0;
    v = t, v.batch = 2;
    check_kernel_pair(&hw, &memo, &t, &v);
    check_kernel_run(&hw, &memo, &t, set_m);
    check_kernel_run(&hw, &memo, &t, set_n);
    check_kernel_run(&hw, &memo, &t, set_k);
    /* another spec under the same memo: its own prices */
    double before = same_kernel_price(&hw, &memo, &t);
    hw.gemm_table = NULL;
    approf_gemm_table_free(&tab);
    CU_ASSERT(same_kernel_price(&hw, &memo, &t) != before);
    approf_price_memo_free(memo);
}

/* Phase ph of p through memo and plain: the same bits. */
static void same_phase_of(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                          const ApprofStageProgram *p, int ph)
{
    double plain = approf_phase_seconds(hw, p, ph);
    double kept = approf_phase_seconds_memo(hw, p, ph, memo);
    CU_ASSERT_EQUAL(memcmp(&plain, &kept, sizeof plain), 0);
}

/* A build's programs (the build and its derived ones: the same
 * collectives first, their own after) priced in turn through one memo:
 * the run over the shared prefix resumed (PriceMemoCollSum) equals a
 * fresh one for each, also for a program of other kernels (another
 * starting sum: not resumed from the first's) and other windows. */
static void test_coll_prefix_resumed(void)
{
    ApprofHardwareSpec hw;
    ApprofPriceMemo *memo = NULL;
    enum { NP = 6, NE = 3 };
    ApprofStageProgram prog[4];
    ApprofCollective c[4][NP + NE];
    ApprofKernel k[2][4];
    hw_fixture_round_spec(&hw);
    hw.tp_async_grad = 1.0;
    hw.tp_comm_overlap = 0.8;
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 4; i++) {
            ApprofKernel *kr = &k[a][i];
            memset(kr, 0, sizeof *kr);
            kr->kind = APPROF_K_GEMM;
            kr->dtype = APPROF_BF16;
            kr->batch = 1;
            kr->m = kr->n = kr->k = 4096;
            kr->flops = 2.0 * 4096 * 4096 * 4096 * (1 + i) * (a ? 1.5 : 1.0);
            kr->bytes = 3.0 * 4096 * 4096 * 2;
            kr->async_group = 1 + i / 2;
            kr->async_wgrad = i % 2;
        }
    uint64_t id = approf_coll_prefix_id();
    CU_ASSERT(id != 0 && approf_coll_prefix_id() != id);
    for (int q = 0; q < 4; q++) {
        memset(&prog[q], 0, sizeof prog[q]);
        for (int i = 0; i < NP + NE; i++) {
            /* the prefix the same in all; the ends differ by program */
            int v = i < NP ? i : i + 7 * (q + 1);
            c[q][i] = hw_fixture_coll((ApprofCollKind)(v % 3), 1e7 * (1 + v), 8, 1);
            c[q][i].async_group = v % 3;
            c[q][i].async_wgrad = v % 2;
            c[q][i].blocking = v == 4;
        }
        /* programs 0..2 of the same kernels, 3 of others */
        prog[q].kernels[1] = k[q == 3];
        prog[q].n_kernels[1] = 4;
        prog[q].colls[1] = c[q];
        prog[q].n_colls[1] = NP + NE;
        prog[q].coll_prefix[1] = id;
        prog[q].n_coll_prefix[1] = NP;
    }
    /* program 2 with the prefix alone (a build whose end adds none) */
    prog[2].n_colls[1] = NP;
    for (int round = 0; round < 2; round++)
        for (int q = 0; q < 4; q++)
            same_phase_of(&hw, &memo, &prog[q], 1);
    /* without async groups (no windows): another key, the same bits */
    hw.tp_async_grad = 0.0;
    for (int q = 0; q < 4; q++)
        same_phase_of(&hw, &memo, &prog[q], 1);
    approf_price_memo_free(memo);
}

/* A build's programs whose kernels sum to other seconds before the same
 * collective prefix (the other accumulation share's backward): the kept
 * run resumed from its prices (PriceMemoCollSum, issue 38, zends) equals
 * a fresh price bit for bit, from the same windows (an extra kernel in no
 * async group) and without async groups, with blocking and userbuffers'
 * collectives and ZeRO-3's skipped ones in the prefix; again after the
 * resumed run is kept (its own t0: the exact hit), from a third t0 (the
 * resumed entry keeps no prices: resumed from the first's), and after
 * more prefixes than the memo keeps (the slots' price buffers reused);
 * the prices looked up before they are summed (coll_prices, coll_sums),
 * with and without userbuffers and async groups. */
static void test_coll_prefix_other_sum(void)
{
    enum { NP = 9, NE = 2, NK = 5, NQ = 4 };
    ApprofKernel k[NQ][NK];
    ApprofCollective c[NQ][NP + NE];
    ApprofStageProgram prog[NQ];
    for (int q = 0; q < NQ; q++)
        for (int i = 0; i < NK; i++) {
            ApprofKernel *kr = &k[q][i];
            memset(kr, 0, sizeof *kr);
            kr->kind = APPROF_K_GEMM;
            kr->dtype = APPROF_BF16;
            kr->batch = 1;
            kr->m = kr->n = kr->k = 2048;
            kr->flops = 2.0 * 2048 * 2048 * 2048 * (1 + i);
            kr->bytes = 3.0 * 2048 * 2048 * 2;
            kr->async_group = i < 4 ? 1 + i / 2 : 0;
            kr->async_wgrad = i % 2;
            /* the last kernel in no async group: another sum, the same
             * windows; its size by program (0 and 3 the same) */
            if (i == NK - 1)
                kr->flops *= 1.0 + 0.37 * (double)(q % 3);
        }
    /* async groups; userbuffers; ZeRO-3 overlapped; neither userbuffers
     * nor async groups (coll_sums' loop for the sums alone), with ZeRO-3
     * overlapped and serial */
    for (int pass = 0; pass < 5; pass++) {
        ApprofHardwareSpec hw;
        ApprofPriceMemo *memo = NULL;
        hw_fixture_round_spec(&hw);
        hw.tp_async_grad = pass == 0 ? 1.0 : 0.0;
        hw.tp_comm_overlap = pass < 3 ? 0.8 : 0.0;
        hw.zero3_schedule = pass == 2 || pass == 3 ? APPROF_ZERO3_FSDP2 : APPROF_ZERO3_SERIAL;
        uint64_t id = approf_coll_prefix_id();
        for (int q = 0; q < NQ; q++) {
            memset(&prog[q], 0, sizeof prog[q]);
            for (int i = 0; i < NP + NE; i++) {
                int v = i < NP ? i : i + 5 * (q + 1);
                c[q][i] = hw_fixture_coll((ApprofCollKind)(v % 3), 3e6 * (1 + v), 8, 1);
                c[q][i].async_group = v % 3;
                c[q][i].async_wgrad = v % 2;
                c[q][i].blocking = v == 4;
                c[q][i].zero3_unit = v == 2 || v == 6 ? 1 + v / 4 : 0;
            }
            prog[q].kernels[1] = k[q];
            prog[q].n_kernels[1] = NK;
            prog[q].colls[1] = c[q];
            prog[q].n_colls[1] = NP + NE;
            prog[q].coll_prefix[1] = id;
            prog[q].n_coll_prefix[1] = NP;
        }
        /* 0 kept with its prices, 1 resumed, 1 again (its own entry), 2
         * resumed (from 0's), 3 of 0's sum (the exact hit) */
        for (int q = 0; q < NQ; q++)
            same_phase_of(&hw, &memo, &prog[q], 1);
        same_phase_of(&hw, &memo, &prog[1], 1);
        /* more prefixes than the memo keeps, of other lengths, then the
         * first again: priced anew, the slots' buffers grown and reused */
        for (int r = 0; r < 150; r++) {
            ApprofStageProgram o = prog[r % NQ];
            o.coll_prefix[1] = approf_coll_prefix_id();
            o.n_coll_prefix[1] = 1 + (size_t)r % NP;
            same_phase_of(&hw, &memo, &o, 1);
            same_phase_of(&hw, &memo, &prog[(r + 1) % NQ], 1);
        }
        approf_price_memo_free(memo);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"memoized phase prices equal the plain ones", test_memo_equals_plain},
        {"shared kernel arrays: sums kept per array and groups", test_shared_kernel_sums},
        {"kernel prices kept: each field of the key", test_kernel_prices_kept},
        {"a build's collective prefix resumed as priced fresh", test_coll_prefix_resumed},
        {"a collective prefix resumed from another kernel sum", test_coll_prefix_other_sum},
    };
    return CUNIT_RUN("collective prices kept", tests);
}
