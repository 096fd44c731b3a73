/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of measured GEMM rates per shape (hw/gemm_table.c) and their
 * use in the analytic cost model (hw/cost.c): the interpolation is exact
 * at the grid's points, monotone between two neighbours, linear in log2 of
 * a size, clamped outside the grid; an incomplete grid prices nothing; a
 * GEMM is priced flops / rate (a batched one at the rate of (batch m) x n
 * x k), never below its memory time plus the launch overhead, with the
 * unaligned penalty kept and fused attention left to the roofline; without
 * a table, or without one of the kernel's dtype, every price is as before,
 * bit for bit; a GEMM-only stage program through the analytic backend
 * costs the sum of flops / rate.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "backend.h"
#include "costdb.h"
#include "cunit_run.h"
#include "hardware.h"
#include "stage.h"

#define GIB 1073741824.0

static const int64_t GM[3] = {512, 1024, 4096}, GN[2] = {512, 2048}, GK[1] = {1024};

/* An arbitrary rate per grid point, no two alike. */
static double grid_rate(int a, int b, int c)
{
    return 1e12 * (100.0 + 37.0 * a + 11.0 * b * b + 5.0 * c + 3.0 * a * b);
}

/* The 3 x 2 x 1 grid of dtype dt, optionally without its last point. */
static size_t grid_points(const char *dt, CostdbGemmPoint *out, int drop_last)
{
    size_t n = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 1; c++) {
                memset(&out[n], 0, sizeof out[n]);
                snprintf(out[n].dtype, sizeof out[n].dtype, "%s", dt);
                out[n].m = GM[a];
                out[n].n = GN[b];
                out[n].k = GK[c];
                out[n].rate = grid_rate(a, b, c);
                n++;
            }
    return drop_last ? n - 1 : n;
}

static ApprofGemmTable *table_of(const CostdbGemmPoint *p, size_t n)
{
    ApprofGemmTable *t = NULL;
    CU_ASSERT_EQUAL_FATAL(approf_gemm_table_new(p, n, &t), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    return t;
}

static void test_exact_at_grid_points(void)
{
    CostdbGemmPoint p[6];
    size_t n = grid_points("bf16", p, 0);
    ApprofGemmTable *t = table_of(p, n);
    int complete = 0, sz[3];
    CU_ASSERT_EQUAL(approf_gemm_table_count(t, "bf16", &complete, sz), 6);
    CU_ASSERT_EQUAL(complete, 1);
    CU_ASSERT(sz[0] == 3 && sz[1] == 2 && sz[2] == 1);
    CU_ASSERT_EQUAL(approf_gemm_table_count(t, "f16", &complete, NULL), 0);
    CU_ASSERT_EQUAL(complete, 0);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "bf16", (double)p[i].m, (double)p[i].n,
                                               (double)p[i].k), p[i].rate);
    CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "f16", 1024, 512, 1024), 0.0);
    CU_ASSERT_EQUAL(approf_gemm_table_rate(NULL, "bf16", 1024, 512, 1024), 0.0);
    CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "bf16", 0.5, 512, 1024), 0.0);
    approf_gemm_table_free(&t);
    CU_ASSERT_PTR_NULL(t);
}

/* Between two neighbours along each axis the rate moves monotonically from
 * one to the other; half way in log2 it is their mean; the whole box is
 * trilinear in log2 of the sizes. */
static void test_between_points(void)
{
    CostdbGemmPoint p[6];
    size_t n = grid_points("bf16", p, 0);
    ApprofGemmTable *t = table_of(p, n);
    for (int b = 0; b < 2; b++) {
        double lo = grid_rate(1, b, 0), hi = grid_rate(2, b, 0), prev = lo;
        int up = hi > lo;
        for (int s = 1; s < 64; s++) {
            double m = 1024.0 * pow(4.0, s / 64.0);
            double r = approf_gemm_table_rate(t, "bf16", m, (double)GN[b], 1024);
            CU_ASSERT(up ? r >= prev : r <= prev);
            CU_ASSERT(r >= fmin(lo, hi) && r <= fmax(lo, hi));
            prev = r;
        }
        CU_ASSERT_DOUBLE_EQUAL(approf_gemm_table_rate(t, "bf16", 2048, (double)GN[b], 1024),
                               (lo + hi) / 2, 1e-3 * lo);
    }
    {
        /* n half way (log2 1024 between 512 and 2048), m a quarter of the
         * way from 512 to 1024 */
        double m = 512.0 * pow(2.0, 0.25), r = approf_gemm_table_rate(t, "bf16", m, 1024, 1024);
        double want = 0.75 * 0.5 * grid_rate(0, 0, 0) + 0.75 * 0.5 * grid_rate(0, 1, 0) +
                      0.25 * 0.5 * grid_rate(1, 0, 0) + 0.25 * 0.5 * grid_rate(1, 1, 0);
        CU_ASSERT_DOUBLE_EQUAL(r, want, 1e-9 * want);
    }
    approf_gemm_table_free(&t);
}

/* Outside the grid each size takes the nearest edge's value; an axis of
 * one size is constant. */
static void test_clamped(void)
{
    CostdbGemmPoint p[6];
    size_t n = grid_points("f16", p, 0);
    ApprofGemmTable *t = table_of(p, n);
    CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "f16", 64, 512, 1024), grid_rate(0, 0, 0));
    CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "f16", 1, 1, 1), grid_rate(0, 0, 0));
    CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "f16", 1e6, 1e6, 1e6), grid_rate(2, 1, 0));
    CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "f16", 4096, 100000, 64), grid_rate(2, 1, 0));
    CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "f16", 1024, 2048, 3), grid_rate(1, 1, 0));
    CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "f16", 1024, 256, 65536), grid_rate(1, 0, 0));
    {
        /* clamped on one axis, interpolated on the other */
        double r = approf_gemm_table_rate(t, "f16", 2048, 1 << 20, 1024);
        CU_ASSERT_DOUBLE_EQUAL(r, (grid_rate(1, 1, 0) + grid_rate(2, 1, 0)) / 2,
                               1e-9 * grid_rate(2, 1, 0));
    }
    approf_gemm_table_free(&t);
}

/* A rate affine in log2 of each size (approf probe's fake module) comes
 * back exactly anywhere inside the grid. */
static void test_affine_in_log2(void)
{
    static const int64_t g[4] = {512, 1024, 4096, 16384};
    CostdbGemmPoint p[64];
    size_t n = 0;
    ApprofGemmTable *t;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++, n++) {
                memset(&p[n], 0, sizeof p[n]);
                snprintf(p[n].dtype, sizeof p[n].dtype, "bf16");
                p[n].m = g[a];
                p[n].n = g[b];
                p[n].k = g[c];
                p[n].rate = 1e12 * (10 + 10 * log2((double)g[a]) + 20 * log2((double)g[b]) +
                                    40 * log2((double)g[c]));
            }
    t = table_of(p, n);
    for (int i = 0; i < 50; i++) {
        /* inside 512 .. 16384 on every axis */
        double m = 512 * pow(32.0, i / 49.0), nn = 16384 - 300.0 * i, k = 700 + 250.0 * i;
        double want = 1e12 * (10 + 10 * log2(m) + 20 * log2(nn) + 40 * log2(k));
        CU_ASSERT_DOUBLE_EQUAL(approf_gemm_table_rate(t, "bf16", m, nn, k), want, 1e-9 * want);
    }
    approf_gemm_table_free(&t);
}

static void test_incomplete_and_bad(void)
{
    CostdbGemmPoint p[6];
    size_t n = grid_points("bf16", p, 1);
    ApprofGemmTable *t = table_of(p, n);
    int complete = 1;
    CU_ASSERT_EQUAL(approf_gemm_table_count(t, "bf16", &complete, NULL), 5);
    CU_ASSERT_EQUAL(complete, 0);
    CU_ASSERT_EQUAL(approf_gemm_table_rate(t, "bf16", 512, 512, 1024), 0.0);
    approf_gemm_table_free(&t);
    CU_ASSERT_EQUAL(approf_gemm_table_new(p, 0, &t), 0);
    CU_ASSERT_PTR_NULL(t);
    grid_points("bf16", p, 0);
    p[2].rate = 0.0;
    CU_ASSERT_EQUAL(approf_gemm_table_new(p, 6, &t), APPROF_EINVAL);
    p[2].rate = INFINITY;
    CU_ASSERT_EQUAL(approf_gemm_table_new(p, 6, &t), APPROF_EINVAL);
    p[2].rate = 1e12;
    p[3].k = 0;
    CU_ASSERT_EQUAL(approf_gemm_table_new(p, 6, &t), APPROF_EINVAL);
    CU_ASSERT_PTR_NULL(t);
}

static void test_hash(void)
{
    CostdbGemmPoint p[6], q[6];
    ApprofGemmTable *a, *b;
    char ha[32], hb[32];
    size_t n = grid_points("bf16", p, 0);
    for (size_t i = 0; i < n; i++)
        q[i] = p[n - 1 - i];
    a = table_of(p, n);
    b = table_of(q, n);
    approf_gemm_table_hash(a, ha, sizeof ha);
    approf_gemm_table_hash(b, hb, sizeof hb);
    CU_ASSERT_EQUAL(strlen(ha), 16);
    CU_ASSERT_STRING_EQUAL(ha, hb);
    approf_gemm_table_free(&b);
    q[0].rate *= 1.0 + 1e-15;
    b = table_of(q, n);
    approf_gemm_table_hash(b, hb, sizeof hb);
    CU_ASSERT_STRING_NOT_EQUAL(ha, hb);
    approf_gemm_table_free(&a);
    approf_gemm_table_free(&b);
}

static ApprofHardwareSpec spec(void)
{
    ApprofHardwareSpec hw;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &hw), 0);
    return hw;
}

static ApprofKernel gemm(ApprofDtype dt, int64_t b, int64_t m, int64_t n, int64_t k)
{
    ApprofKernel g;
    double es = dt == APPROF_F32 ? 4 : 2;
    memset(&g, 0, sizeof g);
    g.kind = APPROF_K_GEMM;
    g.dtype = dt;
    g.batch = b;
    g.m = m;
    g.n = n;
    g.k = k;
    g.flops = 2.0 * (double)b * (double)m * (double)n * (double)k;
    g.store_bytes = es * (double)(b * m * n);
    g.bytes = es * (double)(b * (m * k + k * n)) + g.store_bytes;
    return g;
}

/* A constant-rate grid of dtype dt over 512 .. 16384. */
static ApprofGemmTable *constant_table(const char *dt, double rate)
{
    static const int64_t g[2] = {512, 16384};
    CostdbGemmPoint p[8];
    size_t n = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++, n++) {
                memset(&p[n], 0, sizeof p[n]);
                snprintf(p[n].dtype, sizeof p[n].dtype, "%s", dt);
                p[n].m = g[a];
                p[n].n = g[b];
                p[n].k = g[c];
                p[n].rate = rate * (1.0 + (a ? 0.5 : 0.0)); /* m 16384: 1.5 x */
            }
    return table_of(p, n);
}

static void test_kernel_seconds(void)
{
    ApprofHardwareSpec hw = spec(), plain = spec();
    ApprofGemmTable *bf = constant_table("bf16", 400e12), *f16 = constant_table("f16", 300e12);
    ApprofKernel big = gemm(APPROF_BF16, 1, 512, 4096, 4096), k;
    double mem_rate = hw.memory_bandwidth * hw.memory_efficiency, t0, t;

    /* no table, or none of the kernel's dtype: the roofline, bit for bit */
    t0 = approf_kernel_seconds(&plain, &big);
    hw.gemm_table = f16;
    CU_ASSERT_EQUAL(approf_kernel_seconds(&hw, &big), t0);
    /* the table: flops / rate, nothing added (m = 512: the rate at 512) */
    hw.gemm_table = bf;
    t = approf_kernel_seconds(&hw, &big);
    CU_ASSERT_EQUAL(t, big.flops / 400e12);
    CU_ASSERT_NOT_EQUAL(t, t0);
    /* a batch of 32 GEMMs of 512 x 4096 x 4096: the rate of m = 16384 */
    k = gemm(APPROF_BF16, 32, 512, 4096, 4096);
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), k.flops / 600e12, 1e-15);
    /* a tiny GEMM: the clamped rate would say 3 ns; the floor is the
     * memory time plus the launch overhead */
    k = gemm(APPROF_BF16, 1, 64, 64, 64);
    CU_ASSERT_EQUAL(approf_kernel_seconds(&hw, &k), k.bytes / mem_rate + hw.kernel_launch_overhead);
    /* fused attention's GEMMs keep the roofline */
    k = big;
    k.attention = 1;
    k.store_bytes = 0;
    hw.attention_efficiency = 0.5;
    plain.attention_efficiency = 0.5;
    CU_ASSERT_EQUAL(approf_kernel_seconds(&hw, &k), approf_kernel_seconds(&plain, &k));
    /* an unaligned GEMM keeps its penalty */
    k = gemm(APPROF_BF16, 1, 512, 4095, 4096);
    hw.gemm_unaligned_factor = 0.5;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), k.flops / 200e12, 1e-15);
    hw.gemm_unaligned_factor = 0;
    /* the host overhead still bounds every kernel */
    hw.host_overhead = 1.0;
    CU_ASSERT_EQUAL(approf_kernel_seconds(&hw, &big), 1.0);
    hw.host_overhead = 0;
    /* f16 table for f16 kernels */
    hw.gemm_table = f16;
    k = gemm(APPROF_F16, 1, 512, 4096, 4096);
    CU_ASSERT_EQUAL(approf_kernel_seconds(&hw, &k), k.flops / 300e12);
    approf_gemm_table_free(&bf);
    approf_gemm_table_free(&f16);
}

/* f32 GEMMs look up "tf32" on TF32 tensor cores, else "f32". */
static void test_f32_math_class(void)
{
    ApprofHardwareSpec hw = spec();
    ApprofGemmTable *tf = constant_table("tf32", 200e12), *f32 = constant_table("f32", 50e12);
    ApprofKernel k = gemm(APPROF_F32, 1, 512, 4096, 4096);
    hw.allow_tf32 = 1;
    CU_ASSERT(hw.peak_flops_tf32 > 0);
    CU_ASSERT_STRING_EQUAL(approf_gemm_table_dtype(&hw, APPROF_F32), "tf32");
    CU_ASSERT_STRING_EQUAL(approf_gemm_table_dtype(&hw, APPROF_BF16), "bf16");
    CU_ASSERT_STRING_EQUAL(approf_gemm_table_dtype(&hw, APPROF_F16), "f16");
    hw.gemm_table = tf;
    CU_ASSERT_EQUAL(approf_kernel_seconds(&hw, &k), k.flops / 200e12);
    hw.allow_tf32 = 0;
    CU_ASSERT_STRING_EQUAL(approf_gemm_table_dtype(&hw, APPROF_F32), "f32");
    CU_ASSERT(approf_kernel_seconds(&hw, &k) != k.flops / 200e12);
    hw.gemm_table = f32;
    CU_ASSERT_EQUAL(approf_kernel_seconds(&hw, &k), k.flops / 50e12);
    approf_gemm_table_free(&tf);
    approf_gemm_table_free(&f32);
}

/* A GEMM-only stage program through the analytic backend: the sum of
 * flops / rate of its GEMMs. */
static void test_gemm_only_program(void)
{
    ApprofHardwareSpec hw = spec();
    ApprofGemmTable *bf = constant_table("bf16", 400e12);
    ApprofKernel ks[3];
    ApprofStageProgram p;
    ApprofBackend be;
    ApprofMeasurement m;
    double want = 0;
    ks[0] = gemm(APPROF_BF16, 1, 4096, 4096, 4096);
    ks[1] = gemm(APPROF_BF16, 1, 16384, 1024, 4096);
    ks[2] = gemm(APPROF_BF16, 1, 1 << 20, 8192, 8192); /* m clamped to 16384: 1.5 x */
    for (int i = 0; i < 3; i++) {
        double m_eff = fmin((double)ks[i].m, 16384.0);
        double r = 400e12 * (1.0 + 0.5 * (log2(m_eff) - 9.0) / 5.0);
        want += ks[i].flops / r;
    }
    memset(&p, 0, sizeof p);
    p.dtype = APPROF_BF16;
    p.kernels[0] = ks;
    p.n_kernels[0] = 3;
    p.mesh_hosts = p.mesh_gpus = p.logical_a = p.logical_b = 1;
    hw.gemm_table = bf;
    CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw, &p, 0), want, 1e-12 * want);
    CU_ASSERT_EQUAL_FATAL(approf_backend_analytic(&be), 0);
    CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 0, &hw, &m), 0);
    CU_ASSERT_EQUAL(m.status, COSTDB_STATUS_OK);
    CU_ASSERT_EQUAL(m.compute_cost, approf_phase_seconds(&hw, &p, 0));
    hw.gemm_table = NULL;
    CU_ASSERT(fabs(approf_phase_seconds(&hw, &p, 0) - want) > 1e-3 * want);
    approf_backend_destroy(&be);
    approf_gemm_table_free(&bf);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"exact at grid points", test_exact_at_grid_points},
        {"monotone and trilinear between points", test_between_points},
        {"clamped outside the grid", test_clamped},
        {"affine in log2 reproduced", test_affine_in_log2},
        {"incomplete grid, bad points", test_incomplete_and_bad},
        {"hash", test_hash},
        {"kernel seconds from the table", test_kernel_seconds},
        {"f32 by math class", test_f32_math_class},
        {"GEMM-only program", test_gemm_only_program},
    };
    return CUNIT_RUN("gemm_table", tests);
}
