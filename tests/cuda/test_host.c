/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the CUDA backend's host logic (no GPU needed): repeat
 * statistics, the cuDNN algorithm cache, the tracking allocator over a fake
 * device, the cuBLASLt descriptor (checked by running the column-major
 * problem it describes on the host against a plain row-major matmul),
 * buffer sizing, the memory reserve, the probe's sizes, counts and
 * nccl-tests bandwidth formulas, and the probe's database rows.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/host.h"
#include "cunit_run.h"
#include "model/zoo.h"
#include "cuda/probe_store.h"

#define NEAR(a, b) CU_ASSERT_DOUBLE_EQUAL((a), (b), 1e-12 * (fabs(b) + 1.0))

static void test_stats(void)
{
    double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2}, one[] = {5}, zeros[] = {0, 0};
    double bad[] = {1, -1}, nan_[] = {1, NAN};
    double med = -1, spread = -1;

    CU_ASSERT_EQUAL(approf_cuda_stats(odd, 3, &med, &spread), 0);
    NEAR(med, 2.0);
    NEAR(spread, 1.0);
    CU_ASSERT_EQUAL(odd[0], 3);                 /* input untouched */
    CU_ASSERT_EQUAL(approf_cuda_stats(even, 4, &med, &spread), 0);
    NEAR(med, 2.5);
    NEAR(spread, 3.0 / 2.5);
    CU_ASSERT_EQUAL(approf_cuda_stats(one, 1, &med, &spread), 0);
    NEAR(med, 5.0);
    NEAR(spread, 0.0);
    CU_ASSERT_EQUAL(approf_cuda_stats(zeros, 2, &med, &spread), 0);
    NEAR(med, 0.0);
    NEAR(spread, 0.0);
    CU_ASSERT_EQUAL(approf_cuda_stats(odd, 0, &med, &spread), APPROF_EINVAL);
    CU_ASSERT_EQUAL(approf_cuda_stats(bad, 2, &med, &spread), APPROF_EINVAL);
    CU_ASSERT_EQUAL(approf_cuda_stats(nan_, 2, &med, &spread), APPROF_EINVAL);
}

static ApprofKernel conv_kernel(void)
{
    ApprofKernel k;
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_CONV_FWD;
    k.conv_n = 2; k.conv_c = 4; k.conv_h = 9; k.conv_w = 9;
    k.conv_k = 8; k.conv_r = 3; k.conv_s = 3;
    k.conv_stride[0] = k.conv_stride[1] = 2;
    k.conv_pad[0] = k.conv_pad[1] = 1;
    k.conv_groups = 2;
    return k;
}

static void test_algo_cache(void)
{
    ApprofAlgoCache *c = NULL;
    ApprofKernel k = conv_kernel();
    ApprofConvKey key, other;
    ApprofConvAlgo a = {3, 1, 4096, 0.25f}, got;

    CU_ASSERT_EQUAL(approf_conv_key_from_kernel(&k, APPROF_F16, &key), 0);
    CU_ASSERT_EQUAL(key.dir, APPROF_CONV_DIR_FWD);
    CU_ASSERT_EQUAL(key.groups, 2);
    CU_ASSERT_EQUAL(approf_algo_cache_new(&c), 0);
    CU_ASSERT_EQUAL(approf_algo_cache_get(c, &key, &got), 0);
    CU_ASSERT_EQUAL(approf_algo_cache_put(c, &key, &a), 0);
    CU_ASSERT_EQUAL(approf_algo_cache_get(c, &key, &got), 1);
    CU_ASSERT_EQUAL(got.algo, 3);
    CU_ASSERT_EQUAL(got.workspace, 4096);
    /* Each field is part of the key. */
    other = key; other.dir = APPROF_CONV_DIR_BWD_DATA;
    CU_ASSERT_EQUAL(approf_algo_cache_get(c, &other, &got), 0);
    other = key; other.dtype = APPROF_BF16;
    CU_ASSERT_EQUAL(approf_algo_cache_get(c, &other, &got), 0);
    other = key; other.pad[1] = 0;
    CU_ASSERT_EQUAL(approf_algo_cache_get(c, &other, &got), 0);
    other = key; other.stride[0] = 1;
    CU_ASSERT_EQUAL(approf_algo_cache_get(c, &other, &got), 0);
    other = key; other.groups = 1;
    CU_ASSERT_EQUAL(approf_algo_cache_get(c, &other, &got), 0);
    other = key;
    CU_ASSERT_EQUAL(approf_conv_key_hash(&other), approf_conv_key_hash(&key));
    /* Replacing keeps one entry. */
    a.algo = 5;
    CU_ASSERT_EQUAL(approf_algo_cache_put(c, &key, &a), 0);
    CU_ASSERT_EQUAL(approf_algo_cache_count(c), 1);
    CU_ASSERT_EQUAL(approf_algo_cache_get(c, &key, &got), 1);
    CU_ASSERT_EQUAL(got.algo, 5);
    /* Growth past the initial 64 slots keeps every entry. */
    for (int i = 0; i < 1000; i++) {
        other = key;
        other.n = 100 + i;
        a.algo = i;
        CU_ASSERT_EQUAL_FATAL(approf_algo_cache_put(c, &other, &a), 0);
    }
    CU_ASSERT_EQUAL(approf_algo_cache_count(c), 1001);
    for (int i = 0; i < 1000; i++) {
        other = key;
        other.n = 100 + i;
        CU_ASSERT_EQUAL_FATAL(approf_algo_cache_get(c, &other, &got), 1);
        CU_ASSERT_EQUAL(got.algo, i);
    }
    CU_ASSERT_EQUAL(approf_algo_cache_get(c, &key, &got), 1);
    CU_ASSERT_EQUAL(got.algo, 5);
    approf_algo_cache_free(&c);
    CU_ASSERT_PTR_NULL(c);
    /* Bad kernels. */
    k.kind = APPROF_K_GEMM;
    CU_ASSERT_EQUAL(approf_conv_key_from_kernel(&k, APPROF_F32, &key), APPROF_EINVAL);
    k = conv_kernel();
    k.conv_c = 5;                               /* not divisible by groups */
    CU_ASSERT_EQUAL(approf_conv_key_from_kernel(&k, APPROF_F32, &key), APPROF_EINVAL);
    k = conv_kernel();
    k.conv_groups = 0;                          /* means 1 */
    CU_ASSERT_EQUAL(approf_conv_key_from_kernel(&k, APPROF_F32, &key), 0);
    CU_ASSERT_EQUAL(key.groups, 1);
}

/* A fake device of 1000 bytes. */
typedef struct FakeDev {
    size_t used, cap;
    int fail_code;
} FakeDev;

static int fake_alloc(void *user, size_t bytes, void **ptr)
{
    FakeDev *d = user;
    if (d->fail_code)
        return d->fail_code;
    if (d->used + bytes > d->cap)
        return APPROF_ENOMEM;
    *ptr = malloc(bytes + sizeof(size_t));
    if (!*ptr)
        return APPROF_ENOMEM;
    *(size_t *)*ptr = bytes;
    d->used += bytes;
    return 0;
}

static void fake_free(void *user, void *ptr)
{
    FakeDev *d = user;
    d->used -= *(size_t *)ptr;
    free(ptr);
}

static void test_track_alloc(void)
{
    FakeDev dev = {0, 1000, 0};
    ApprofTrackAlloc t;
    void *a, *b, *c, *d;
    int x;

    approf_track_init(&t, fake_alloc, fake_free, &dev);
    CU_ASSERT_EQUAL(approf_track_alloc(&t, 100, &a), 0);
    CU_ASSERT_EQUAL(approf_track_alloc(&t, 200, &b), 0);
    CU_ASSERT_EQUAL(t.current, 300);
    CU_ASSERT_EQUAL(t.peak, 300);
    CU_ASSERT_EQUAL(approf_track_free(&t, a), 0);
    CU_ASSERT_EQUAL(t.current, 200);
    CU_ASSERT_EQUAL(t.peak, 300);
    CU_ASSERT_EQUAL(approf_track_alloc(&t, 500, &c), 0);
    CU_ASSERT_EQUAL(t.current, 700);
    CU_ASSERT_EQUAL(t.peak, 700);
    /* Out of device memory: nothing counted. */
    CU_ASSERT_EQUAL(approf_track_alloc(&t, 400, &d), APPROF_ENOMEM);
    CU_ASSERT_PTR_NULL(d);
    CU_ASSERT_EQUAL(t.current, 700);
    CU_ASSERT_EQUAL(t.n_live, 2);
    /* Another failure keeps its code. */
    dev.fail_code = APPROF_EIO;
    CU_ASSERT_EQUAL(approf_track_alloc(&t, 10, &d), APPROF_EIO);
    dev.fail_code = 0;
    CU_ASSERT_EQUAL(approf_track_free(&t, &x), APPROF_EINVAL);
    CU_ASSERT_EQUAL(approf_track_alloc(&t, 0, &d), APPROF_EINVAL);
    CU_ASSERT_EQUAL(t.n_allocs, 3);
    /* After an error everything is released; the peak stays. */
    approf_track_release_all(&t);
    CU_ASSERT_EQUAL(t.current, 0);
    CU_ASSERT_EQUAL(t.peak, 700);
    CU_ASSERT_EQUAL(dev.used, 0);
    CU_ASSERT_EQUAL(t.n_live, 0);
    /* Many blocks (bookkeeping growth), freed in any order. */
    dev.cap = 1 << 20;
    approf_track_init(&t, fake_alloc, fake_free, &dev);
    {
        void *p[100];
        for (int i = 0; i < 100; i++)
            CU_ASSERT_EQUAL_FATAL(approf_track_alloc(&t, (size_t)(i + 1), &p[i]), 0);
        CU_ASSERT_EQUAL(t.current, 5050);
        for (int i = 0; i < 100; i += 2)
            CU_ASSERT_EQUAL(approf_track_free(&t, p[i]), 0);
        CU_ASSERT_EQUAL(t.current, 2550);       /* the even sizes 2..100 remain */
        CU_ASSERT_EQUAL(t.peak, 5050);
        approf_track_release_all(&t);
        CU_ASSERT_EQUAL(dev.used, 0);
    }
}

/* The column-major problem of d (cuBLAS's C' = A' B', no transposes) run on
 * host arrays, for one batch b. */
static void colmajor_gemm(const ApprofGemmDesc *d, const double *A, const double *B, double *C, int64_t b)
{
    for (int64_t i = 0; i < d->M; i++)
        for (int64_t j = 0; j < d->N; j++) {
            double s = 0;
            for (int64_t p = 0; p < d->K; p++)
                s += A[b * d->stride_a + i + p * d->lda] * B[b * d->stride_b + p + j * d->ldb];
            C[b * d->stride_c + i + j * d->ldc] = s;
        }
}

static void test_gemm_desc(void)
{
    ApprofKernel k;
    ApprofGemmDesc d;
    enum { BT = 2, M = 3, N = 5, K = 7 };
    double x[BT * M * K], w[BT * K * N], y[BT * M * N], ref[BT * M * N];

    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_GEMM;
    k.batch = BT; k.m = M; k.n = N; k.k = K;
    CU_ASSERT_EQUAL_FATAL(approf_gemm_desc(&k, APPROF_F16, 1, &d), 0);
    CU_ASSERT_EQUAL(d.M, N);
    CU_ASSERT_EQUAL(d.N, M);
    CU_ASSERT_EQUAL(d.K, K);
    CU_ASSERT_EQUAL(d.lda, N);
    CU_ASSERT_EQUAL(d.ldb, K);
    CU_ASSERT_EQUAL(d.ldc, N);
    CU_ASSERT_EQUAL(d.stride_a, K * N);
    CU_ASSERT_EQUAL(d.stride_b, M * K);
    CU_ASSERT_EQUAL(d.stride_c, M * N);
    CU_ASSERT_EQUAL(d.bytes_a, BT * K * N * 2);
    CU_ASSERT_EQUAL(d.bytes_b, BT * M * K * 2);
    CU_ASSERT_EQUAL(d.bytes_c, BT * M * N * 2);
    CU_ASSERT_EQUAL(d.compute, APPROF_GEMM_COMPUTE_32F);
    CU_ASSERT_EQUAL(d.ab_type, APPROF_F16);
    CU_ASSERT(d.scale_f32);
    /* Row-major y = x @ w per batch equals the column-major problem with A'
     * = w and B' = x. */
    for (int i = 0; i < BT * M * K; i++)
        x[i] = (double)((i * 7) % 11) - 5;
    for (int i = 0; i < BT * K * N; i++)
        w[i] = (double)((i * 5) % 13) - 6;
    for (int b = 0; b < BT; b++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int p = 0; p < K; p++)
                    s += x[b * M * K + i * K + p] * w[b * K * N + p * N + j];
                ref[b * M * N + i * N + j] = s;
            }
    for (int b = 0; b < BT; b++)
        colmajor_gemm(&d, w, x, y, b);
    for (int i = 0; i < BT * M * N; i++)
        CU_ASSERT_EQUAL(y[i], ref[i]);

    CU_ASSERT_EQUAL(approf_gemm_desc(&k, APPROF_F32, 1, &d), 0);
    CU_ASSERT_EQUAL(d.compute, APPROF_GEMM_COMPUTE_32F_FAST_TF32);
    CU_ASSERT_EQUAL(d.bytes_c, BT * M * N * 4);
    CU_ASSERT_EQUAL(approf_gemm_desc(&k, APPROF_F32, 0, &d), 0);
    CU_ASSERT_EQUAL(d.compute, APPROF_GEMM_COMPUTE_32F);
    CU_ASSERT_EQUAL(approf_gemm_desc(&k, APPROF_BF16, 1, &d), 0);
    CU_ASSERT_EQUAL(d.compute, APPROF_GEMM_COMPUTE_32F);
    k.batch = 0;                                /* plain GEMM */
    CU_ASSERT_EQUAL(approf_gemm_desc(&k, APPROF_BF16, 1, &d), 0);
    CU_ASSERT_EQUAL(d.batch, 1);
    k.m = 0;
    CU_ASSERT_EQUAL(approf_gemm_desc(&k, APPROF_F32, 1, &d), APPROF_EINVAL);
    k.m = (int64_t)1 << 40; k.k = (int64_t)1 << 40;
    CU_ASSERT_EQUAL(approf_gemm_desc(&k, APPROF_F32, 1, &d), APPROF_EINVAL);
    k.kind = APPROF_K_COPY;
    CU_ASSERT_EQUAL(approf_gemm_desc(&k, APPROF_F32, 1, &d), APPROF_EINVAL);
}

static void test_buffers(void)
{
    ApprofKernel k = conv_kernel();
    ApprofKernelBuffers b;

    CU_ASSERT_EQUAL_FATAL(approf_kernel_buffers(&k, APPROF_F32, &b), 0);
    CU_ASSERT_EQUAL(b.n, 3);
    CU_ASSERT_EQUAL(b.out_h, 5);                /* (9 + 2 - 3) / 2 + 1 */
    CU_ASSERT_EQUAL(b.out_w, 5);
    CU_ASSERT_EQUAL(b.bytes[0], 2 * 4 * 9 * 9 * 4);
    CU_ASSERT_EQUAL(b.bytes[1], 8 * 2 * 3 * 3 * 4);
    CU_ASSERT_EQUAL(b.bytes[2], 2 * 8 * 5 * 5 * 4);
    CU_ASSERT_EQUAL(approf_kernel_buffers_total(&b), 2816 + 768 + 1792);
    k.kind = APPROF_K_CONV_BWD_FILTER;          /* same buffers, any direction */
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_F16, &b), 0);
    CU_ASSERT_EQUAL(b.bytes[2], 2 * 8 * 5 * 5 * 2);
    k.conv_r = 12;                              /* window larger than the padded input */
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_F16, &b), APPROF_EINVAL);

    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_ELEMENTWISE;              /* binary add, f16: read 2e, write e */
    k.elements = 100;
    k.bytes = 600;
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_F16, &b), 0);
    CU_ASSERT_EQUAL(b.n, 2);
    CU_ASSERT_EQUAL(b.in_elems, 200);
    CU_ASSERT_EQUAL(b.out_elems, 100);
    CU_ASSERT_EQUAL(b.pattern, APPROF_BW_STREAM);
    k.kind = APPROF_K_REDUCTION;                /* 1000 -> 10, f32 */
    k.elements = 1000;
    k.bytes = 4040;
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_F32, &b), 0);
    CU_ASSERT_EQUAL(b.in_elems, 1000);
    CU_ASSERT_EQUAL(b.out_elems, 10);
    k.bytes = 4000;                             /* all of it read: one element written */
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_F32, &b), 0);
    CU_ASSERT_EQUAL(b.in_elems, 999);
    CU_ASSERT_EQUAL(b.out_elems, 1);
    k.kind = APPROF_K_COPY;                     /* bytes unknown: read e, write e */
    k.elements = 64;
    k.bytes = 0;
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_BF16, &b), 0);
    CU_ASSERT_EQUAL(b.in_elems, 64);
    CU_ASSERT_EQUAL(b.out_elems, 64);
    CU_ASSERT_EQUAL(b.bytes[0], 128);
    k.kind = APPROF_K_GATHER;
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_BF16, &b), 0);
    CU_ASSERT_EQUAL(b.pattern, APPROF_BW_GATHER);
    k.elements = 0;
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_BF16, &b), APPROF_EINVAL);

    CU_ASSERT_EQUAL(approf_cuda_align(1), 256);
    CU_ASSERT_EQUAL(approf_cuda_align(256), 256);
    CU_ASSERT_EQUAL(approf_cuda_align(257), 512);
    CU_ASSERT_EQUAL(approf_cuda_align(0), 0);
}

static void test_reserve(void)
{
    int64_t gib = (int64_t)1 << 30;
    CU_ASSERT_EQUAL(approf_cuda_memory_reserve(80 * gib), ((int64_t)512 << 20) + 80 * gib / 50);
    CU_ASSERT_EQUAL(approf_cuda_available_memory(70 * gib, 80 * gib),
                    70 * gib - ((int64_t)512 << 20) - 80 * gib / 50);
    CU_ASSERT_EQUAL(approf_cuda_available_memory(100 << 20, 80 * gib), 0);
}

static void test_probe_sizes(void)
{
    int64_t s[64];
    int g[8];
    CU_ASSERT_EQUAL(approf_probe_sizes(1024, (int64_t)1 << 30, s, 64), 21);
    CU_ASSERT_EQUAL(s[0], 1024);
    CU_ASSERT_EQUAL(s[1], 2048);
    CU_ASSERT_EQUAL(s[20], (int64_t)1 << 30);
    CU_ASSERT_EQUAL(approf_probe_sizes(1024, 3000, s, 64), 3);
    CU_ASSERT_EQUAL(s[2], 3000);
    CU_ASSERT_EQUAL(approf_probe_sizes(1024, 1024, s, 64), 1);
    CU_ASSERT_EQUAL(approf_probe_sizes(1024, (int64_t)1 << 30, s, 4), 4);
    CU_ASSERT_EQUAL(s[3], 8192);
    CU_ASSERT_EQUAL(approf_probe_sizes(0, 10, s, 64), APPROF_EINVAL);
    CU_ASSERT_EQUAL(approf_probe_sizes(2048, 1024, s, 64), APPROF_EINVAL);
    CU_ASSERT_EQUAL(approf_probe_groups(8, g, 8), 3);
    CU_ASSERT_EQUAL(g[0], 2);
    CU_ASSERT_EQUAL(g[2], 8);
    CU_ASSERT_EQUAL(approf_probe_groups(6, g, 8), 2);
    CU_ASSERT_EQUAL(approf_probe_groups(1, g, 8), 0);
    {
        /* 2 hosts x 8 ranks: 1x2 1x4 1x8, 2x1 2x2 2x4 2x8 */
        int h[16], gg[16];
        CU_ASSERT_EQUAL(approf_probe_mpi_groups(2, 8, h, gg, 16), 7);
        CU_ASSERT(h[0] == 1 && gg[0] == 2);
        CU_ASSERT(h[2] == 1 && gg[2] == 8);
        CU_ASSERT(h[3] == 2 && gg[3] == 1);
        CU_ASSERT(h[6] == 2 && gg[6] == 8);
        /* 3 hosts x 6 ranks: powers of two only */
        CU_ASSERT_EQUAL(approf_probe_mpi_groups(3, 6, h, gg, 16), 5);
        CU_ASSERT(h[4] == 2 && gg[4] == 4);
        CU_ASSERT_EQUAL(approf_probe_mpi_groups(1, 1, h, gg, 16), 0);
        CU_ASSERT_EQUAL(approf_probe_mpi_groups(4, 8, h, gg, 3), 3);
    }
    CU_ASSERT_EQUAL(approf_probe_iters(1024), 20);
    CU_ASSERT_EQUAL(approf_probe_iters((int64_t)128 << 20), 10);
    CU_ASSERT_EQUAL(approf_probe_iters((int64_t)1 << 30), 5);
}

static void test_coll_counts(void)
{
    ApprofCollCounts c;
    CU_ASSERT_EQUAL(approf_coll_counts(APPROF_COLL_ALL_GATHER, 1024, 8, 4, &c), 0);
    CU_ASSERT_EQUAL(c.bytes, 1024);
    CU_ASSERT_EQUAL(c.count, 32);
    CU_ASSERT_EQUAL(c.send_elems, 32);
    CU_ASSERT_EQUAL(c.recv_elems, 256);
    CU_ASSERT_EQUAL(approf_coll_counts(APPROF_COLL_ALL_GATHER, 1000, 8, 4, &c), 0);
    CU_ASSERT_EQUAL(c.bytes, 992);
    CU_ASSERT_EQUAL(approf_coll_counts(APPROF_COLL_REDUCE_SCATTER, 1024, 8, 4, &c), 0);
    CU_ASSERT_EQUAL(c.count, 32);
    CU_ASSERT_EQUAL(c.send_elems, 256);
    CU_ASSERT_EQUAL(c.recv_elems, 32);
    CU_ASSERT_EQUAL(approf_coll_counts(APPROF_COLL_ALL_TO_ALL, 1024, 8, 4, &c), 0);
    CU_ASSERT_EQUAL(c.count, 32);
    CU_ASSERT_EQUAL(c.send_elems, 256);
    CU_ASSERT_EQUAL(c.recv_elems, 256);
    CU_ASSERT_EQUAL(approf_coll_counts(APPROF_COLL_ALL_REDUCE, 1026, 8, 4, &c), 0);
    CU_ASSERT_EQUAL(c.bytes, 1024);
    CU_ASSERT_EQUAL(c.count, 256);
    CU_ASSERT_EQUAL(approf_coll_counts(APPROF_COLL_SEND_RECV, 1024, 2, 2, &c), 0);
    CU_ASSERT_EQUAL(c.count, 512);
    CU_ASSERT_EQUAL(approf_coll_counts(APPROF_COLL_ALL_TO_ALL, 16, 8, 4, &c), APPROF_EINVAL);
    CU_ASSERT_EQUAL(approf_coll_counts(APPROF_COLL_ALL_REDUCE, 0, 8, 4, &c), APPROF_EINVAL);
}

static void test_busbw(void)
{
    /* nccl-tests: all-reduce of 1 GiB in 10 ms on 8 ranks. */
    double alg = approf_algbw((int64_t)1 << 30, 0.010);
    NEAR(alg, 107374182400.0);
    NEAR(alg * approf_busbw_factor(APPROF_COLL_ALL_REDUCE, 8), 107374182400.0 * 1.75);
    NEAR(approf_busbw_factor(APPROF_COLL_ALL_REDUCE, 2), 1.0);
    NEAR(approf_busbw_factor(APPROF_COLL_ALL_REDUCE, 1), 0.0);
    NEAR(approf_busbw_factor(APPROF_COLL_ALL_GATHER, 8), 0.875);
    NEAR(approf_busbw_factor(APPROF_COLL_REDUCE_SCATTER, 4), 0.75);
    NEAR(approf_busbw_factor(APPROF_COLL_ALL_TO_ALL, 8), 0.875);
    NEAR(approf_busbw_factor(APPROF_COLL_SEND_RECV, 8), 1.0);
    NEAR(approf_busbw_factor(APPROF_COLL_ALL_REDUCE, 0), 0.0);
    NEAR(approf_algbw(100, 0.0), 0.0);
}

static ApprofProbeInfo fake_info(void)
{
    ApprofProbeInfo info;
    memset(&info, 0, sizeof info);
    snprintf(info.gpu_model, sizeof info.gpu_model, "NVIDIA H100 80GB HBM3");
    info.device_count = 4;
    info.device_memory = (int64_t)81559 << 20;
    info.cc_major = 9;
    info.sm_count = 132;
    snprintf(info.driver_version, sizeof info.driver_version, "13.0");
    snprintf(info.runtime_version, sizeof info.runtime_version, "13.0");
    snprintf(info.nccl_version, sizeof info.nccl_version, "2.28.3");
    return info;
}

static void comm(CostdbCommPoint *p, const char *coll, const char *group, int64_t bytes, double s)
{
    memset(p, 0, sizeof *p);
    snprintf(p->collective, sizeof p->collective, "%s", coll);
    snprintf(p->group_desc, sizeof p->group_desc, "%s", group);
    snprintf(p->dtype, sizeof p->dtype, "f32");
    p->bytes = bytes;
    p->seconds = s;
}

static void test_probe_store(void)
{
    ApprofProbeInfo info = fake_info();
    /* the 16 MiB copy ran from L2: the bandwidth is the largest copy's */
    CostdbComputePoint cp[5] = {
        {"gemm", "f16", 4096, 600e12}, {"gemm", "f16", 8192, 700e12},
        {"gemm", "f32", 8192, 300e12}, {"memcpy", "u8", 1 << 30, 2.8e12},
        {"memcpy", "u8", 16 << 20, 3.8e12},
    };
    CostdbCommPoint mp[5];
    CostdbHardware hw, back;
    CostdbCommPoint *got = NULL;
    size_t n = 0;
    Costdb *db = NULL;
    char path[] = "/tmp/approf-test-probe-XXXXXX";
    char fp[512];
    int fd;
    int64_t id;

    comm(&mp[0], "send-recv", "1x2", 1024, 5e-6);
    comm(&mp[1], "send-recv", "1x2", 1 << 30, 0.0125);
    comm(&mp[2], "send-recv", "1x4", 1 << 30, 0.001);        /* not the smallest group */
    comm(&mp[3], "all-reduce", "1x2", 2048, 9e-6);
    comm(&mp[4], "all-reduce", "1x2", 1024, 8e-6);

    approf_probe_fingerprint(&info, fp, sizeof fp);
    CU_ASSERT_STRING_EQUAL(fp, "measured:NVIDIA H100 80GB HBM3:4x81559MiB:driver 13.0:cuda 13.0:nccl 2.28.3");
    CU_ASSERT_EQUAL_FATAL(approf_probe_hardware_row(&info, cp, 5, mp, 5, &hw), 0);
    CU_ASSERT_STRING_EQUAL(hw.kind, "measured");
    CU_ASSERT_STRING_EQUAL(hw.fingerprint, fp);
    CU_ASSERT_EQUAL(hw.gpus_per_host, 4);
    NEAR(hw.peak_flops_f16, 700e12);
    NEAR(hw.peak_flops_f32, 300e12);
    NEAR(hw.peak_flops_bf16, 0.0);
    NEAR(hw.memory_bandwidth, 2.8e12);
    NEAR(hw.intra_host_bandwidth, (double)(1 << 30) / 0.0125);
    NEAR(hw.intra_host_latency, 5e-6);
    CU_ASSERT_PTR_NOT_NULL(strstr(hw.capabilities, "\"compute_capability\": \"9.0\""));

    fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    unlink(path);
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, 0, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(approf_probe_store(db, &hw, cp, 5, mp, 5), 0);
    id = hw.id;
    CU_ASSERT(id > 0);
    CU_ASSERT_EQUAL(costdb_hardware_find(db, fp, &back), 0);
    CU_ASSERT_EQUAL(back.id, id);
    CU_ASSERT_STRING_EQUAL(back.kind, "measured");
    CU_ASSERT_STRING_EQUAL(back.nccl_version, "2.28.3");
    CU_ASSERT_EQUAL(costdb_comm_get(db, id, "all-reduce", "1x2", "f32", &got, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_EQUAL(got[0].bytes, 1024);       /* sorted by bytes */
    CU_ASSERT_EQUAL(got[1].bytes, 2048);
    free(got);
    /* A second probe of the same machine keeps the row and replaces curves. */
    comm(&mp[0], "all-reduce", "1x2", 4096, 1e-5);
    CU_ASSERT_EQUAL(approf_probe_store(db, &hw, cp, 4, mp, 1), 0);
    CU_ASSERT_EQUAL(hw.id, id);
    CU_ASSERT_EQUAL(costdb_comm_get(db, id, "all-reduce", "1x2", "f32", &got, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(got[0].bytes, 4096);
    free(got);
    costdb_close(&db);
    unlink(path);
    {
        char side[sizeof path + 8];
        snprintf(side, sizeof side, "%s-wal", path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", path);
        unlink(side);
    }
}

/* The overlap points (probe_overlap.c) give the spec's
 * overlap_gemm_slowdown: the worse collective's 1 - beside / alone, in the
 * measured row's capabilities; none without a pair. */
static void test_probe_overlap(void)
{
    ApprofProbeInfo info = fake_info();
    CostdbComputePoint cp[6] = {
        {"gemm", "bf16", 8192, 700e12},
        {"overlap-gemm:all-reduce", "bf16", 8192, 640e12},
        {"overlap-gemm+all-reduce", "bf16", 8192, 560e12}, /* 1 - 560/640 = 0.125 */
        {"overlap-gemm:all-gather", "bf16", 8192, 650e12},
        {"overlap-gemm+all-gather", "bf16", 8192, 585e12}, /* 0.1 */
        {"overlap-all-reduce", "f32", 1 << 28, 300e9},
    };
    CostdbHardware hw;
    char which[32];
    double s = -1;

    CU_ASSERT_EQUAL(approf_probe_overlap_slowdown(cp, 6, &s, which, sizeof which), 1);
    NEAR(s, 0.125);
    CU_ASSERT_STRING_EQUAL(which, "all-reduce");
    CU_ASSERT_EQUAL_FATAL(approf_probe_hardware_row(&info, cp, 6, NULL, 0, &hw), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hw.capabilities, "\"overlap_gemm_slowdown\": 0.125}"));
    NEAR(hw.peak_flops_bf16, 700e12); /* the overlap points are not peaks */
    /* only all-gather's pair: its figure */
    CU_ASSERT_EQUAL(approf_probe_overlap_slowdown(cp + 3, 3, &s, which, sizeof which), 1);
    NEAR(s, 0.1);
    CU_ASSERT_STRING_EQUAL(which, "all-gather");
    /* a GEMM faster beside the collective: noise, 0 */
    cp[2].rate = 650e12;
    CU_ASSERT_EQUAL(approf_probe_overlap_slowdown(cp, 3, &s, NULL, 0), 1);
    NEAR(s, 0.0);
    /* half a pair, or none: not measured, and not in the row */
    CU_ASSERT_EQUAL(approf_probe_overlap_slowdown(cp, 2, &s, which, sizeof which), 0);
    NEAR(s, 0.0);
    CU_ASSERT_STRING_EQUAL(which, "");
    CU_ASSERT_EQUAL_FATAL(approf_probe_hardware_row(&info, cp, 2, NULL, 0, &hw), 0);
    CU_ASSERT_PTR_NULL(strstr(hw.capabilities, "overlap_gemm_slowdown"));
}

/* The operators' arrays (op_shape.h): sizes, 256-byte offsets, the
 * direction's extra arrays, and shapes the kernels do not take. */
static void test_op_layout(void)
{
    ApprofOpShape s;
    ApprofOpArrays l[3];
    memset(&s, 0, sizeof s);
    s.op = APPROF_CUDA_OP_LAYER_NORM;
    s.dtype = 2;
    s.rows = 3;
    s.cols = 100;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), 0);
    CU_ASSERT_EQUAL(l[0].n, 1);
    CU_ASSERT_EQUAL(l[0].bytes[0], 600);
    CU_ASSERT_EQUAL(l[1].bytes[0], 600);
    CU_ASSERT_EQUAL(l[2].n, 4);
    CU_ASSERT_EQUAL(l[2].offset[1], 256);          /* gamma's 200 bytes, aligned */
    CU_ASSERT_EQUAL(l[2].bytes[2], 12);            /* mean: f32 per row */
    CU_ASSERT_EQUAL(l[2].total, 4 * 256);
    s.backward = 1;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), 0);
    CU_ASSERT_EQUAL(l[0].n, 2);                    /* x and dy */
    CU_ASSERT_EQUAL(l[0].offset[1], 768);
    CU_ASSERT_EQUAL(l[2].n, 6);                    /* dgamma, dbeta */
    CU_ASSERT_EQUAL(l[2].bytes[5], 400);
    /* A broadcast operand must be the row or the whole tensor. */
    s.op = APPROF_CUDA_OP_MUL;
    s.backward = 0;
    s.extent = 100;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), 0);
    CU_ASSERT_EQUAL(l[0].bytes[1], 200);
    s.extent = 7;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), -1);
    CU_ASSERT_EQUAL(l[0].total, 0);
    /* Embedding backward: a f32 table gradient of E rows. */
    memset(&s, 0, sizeof s);
    s.op = APPROF_CUDA_OP_EMBEDDING;
    s.backward = 1;
    s.dtype = 0;
    s.rows = 10;
    s.cols = 8;
    s.extent = 50;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), 0);
    CU_ASSERT_EQUAL(l[1].bytes[0], 50 * 8 * 4);
    s.extent = 0;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), -1);
    s.extent = INT64_MAX / 2;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), -1);
    s.op = APPROF_CUDA_OP_COUNT;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), -1);
    s.op = APPROF_CUDA_OP_DROPOUT;
    s.extent = 0;
    s.rate = 1.0f;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), -1);
    s.rate = 0.1f;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), 0);
}

/* A memory-bound kernel that names its operator gets that operator's
 * buffers; one whose shape the kernels do not take falls back to the
 * bandwidth kernel's. */
static void test_op_buffers(void)
{
    ApprofKernel k;
    ApprofKernelBuffers b;
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_REDUCTION;
    k.elements = 64 * 512;
    k.bytes = 2.0 * 64 * 512 * 2;
    k.kop = APPROF_CUDA_OP_SOFTMAX;
    k.rows = 64;
    k.cols = 512;
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_BF16, &b), 0);
    CU_ASSERT_EQUAL(b.real, 1);
    CU_ASSERT_EQUAL(b.n, 3);
    CU_ASSERT_EQUAL(b.bytes[0], 64 * 512 * 2);
    CU_ASSERT_EQUAL(b.bytes[2], 0);
    CU_ASSERT_EQUAL(b.op.rows, 64);
    k.kop = APPROF_CUDA_OP_MAX_POOL;   /* no window: not a pooling shape */
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_BF16, &b), 0);
    CU_ASSERT_EQUAL(b.real, 0);
    CU_ASSERT_EQUAL(b.n, 2);
    k.conv_n = 2; k.conv_c = 3; k.conv_h = 9; k.conv_w = 9;
    k.conv_r = k.conv_s = 3;
    k.conv_stride[0] = k.conv_stride[1] = 2;
    k.conv_pad[0] = k.conv_pad[1] = 1;
    CU_ASSERT_EQUAL(approf_kernel_buffers(&k, APPROF_F32, &b), 0);
    CU_ASSERT_EQUAL(b.real, 1);
    CU_ASSERT_EQUAL(b.op.oh, 5);
    CU_ASSERT_EQUAL(b.bytes[1], approf_cuda_align(2 * 3 * 5 * 5 * 4));   /* a whole buffer */
}

/* Every memory-bound kernel of the zoo's transformers and ResNet that names
 * its operator gets a layout the module's kernels take (so the module runs
 * the operator's kernel, not the stand-in), whole-graph and on one device;
 * the kernels the operators' kernels cover are all named. */
static void test_zoo_kops(void)
{
    static const char *models[][2] = {{"gpt", "gpt2-small"}, {"llama", "llama-3-8b"},
                                      {"resnet50", NULL}};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        ApprofZooOptions o;
        ApprofGraph *g = NULL;
        char err[256];
        int named = 0, norms = 0;
        memset(&o, 0, sizeof o);
        o.preset = models[m][1];
        o.num_layers = 1;
        o.batch = 2;
        o.dtype = m < 2 ? "bf16" : "f32";
        CU_ASSERT_EQUAL_FATAL(approf_zoo_build(models[m][0], &o, &g, err, sizeof err), 0);
        for (size_t op = 0; op < g->n_ops; op++) {
            for (int ph = 0; ph < 2; ph++) {
                ApprofKernel ks[APPROF_MAX_KERNELS];
                int nk = approf_op_kernels(g, (int)op, NULL, ph, ks, APPROF_MAX_KERNELS);
                for (int i = 0; i < nk; i++) {
                    ApprofKernelBuffers b;
                    ApprofOpKind kind = g->ops[op].kind;
                    if (ks[i].kind < APPROF_K_ELEMENTWISE)
                        continue;
                    if (kind == APPROF_OP_LAYER_NORM || kind == APPROF_OP_RMS_NORM ||
                        kind == APPROF_OP_BATCH_NORM) {
                        norms++;
                        CU_ASSERT(ks[i].kop != APPROF_CUDA_OP_NONE);
                    }
                    if (ks[i].kop == APPROF_CUDA_OP_NONE)
                        continue;
                    named++;
                    CU_ASSERT_EQUAL(ks[i].kop_backward, ph);
                    CU_ASSERT_EQUAL(approf_kernel_buffers(&ks[i], g->dtype, &b), 0);
                    if (!b.real)
                        printf("\n  %s op %zu (%s) kop %d: no layout\n", models[m][0], op,
                               approf_op_kind_name(kind), ks[i].kop);
                    CU_ASSERT_EQUAL(b.real, 1);
                }
            }
        }
        CU_ASSERT(named > 0);
        CU_ASSERT(norms > 0);
        approf_graph_free(&g);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"stats", test_stats},
        {"probe_overlap", test_probe_overlap},
        {"algo_cache", test_algo_cache},
        {"track_alloc", test_track_alloc},
        {"gemm_desc", test_gemm_desc},
        {"buffers", test_buffers},
        {"op_layout", test_op_layout},
        {"op_buffers", test_op_buffers},
        {"zoo_kops", test_zoo_kops},
        {"reserve", test_reserve},
        {"probe_sizes", test_probe_sizes},
        {"coll_counts", test_coll_counts},
        {"busbw", test_busbw},
        {"probe_store", test_probe_store},
    };
    return CUNIT_RUN("cuda-host", tests);
}
