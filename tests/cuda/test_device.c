/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA backend on a real GPU: every kernel kind in every dtype measures
 * with status ok, a finite positive cost and a tracked peak at least the
 * operands' size; an entry that cannot fit is status oom with +inf and a
 * message, and the next entry measures normally again; every operator
 * kernel (kernel_op.h) measures too, a MoE layer's expert GEMMs (one grouped
 * GEMM), the optimizer step (with the backward phase) and a fused attention
 * (cuDNN's, and as its GEMMs with APPROF_CUDA_SDPA=0). Exits 77 (skipped)
 * when no module or device is available.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cuda/host.h"
#include "cunit_run.h"
#include "model/zoo.h"

static ApprofBackend be;
static ApprofHardwareSpec hw;

static ApprofKernel kern(ApprofKernelKind kind)
{
    ApprofKernel k;
    memset(&k, 0, sizeof k);
    k.kind = kind;
    if (kind == APPROF_K_GEMM) {
        k.batch = 2;
        k.m = 1024; k.n = 768; k.k = 512;
    } else if (kind <= APPROF_K_CONV_BWD_FILTER) {
        k.conv_n = 8; k.conv_c = 64; k.conv_h = 56; k.conv_w = 56;
        k.conv_k = 64; k.conv_r = 3; k.conv_s = 3;
        k.conv_stride[0] = k.conv_stride[1] = 1;
        k.conv_pad[0] = k.conv_pad[1] = 1;
        k.conv_groups = 1;
    } else {
        k.elements = 1 << 22;
        k.bytes = 3.0 * (1 << 22) * 4;
    }
    return k;
}

static void test_kinds(void)
{
    static const ApprofKernelKind kinds[] = {
        APPROF_K_GEMM, APPROF_K_CONV_FWD, APPROF_K_CONV_BWD_DATA, APPROF_K_CONV_BWD_FILTER,
        APPROF_K_ELEMENTWISE, APPROF_K_REDUCTION, APPROF_K_GATHER, APPROF_K_COPY};
    for (int dt = APPROF_F32; dt <= APPROF_BF16; dt++) {
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            ApprofKernel k = kern(kinds[i]);
            ApprofKernelBuffers b;
            ApprofStageProgram p;
            ApprofMeasurement m;
            memset(&p, 0, sizeof p);
            p.dtype = (ApprofDtype)dt;
            k.dtype = (ApprofDtype)dt;
            p.kernels[0] = &k;
            p.n_kernels[0] = 1;
            CU_ASSERT_EQUAL_FATAL(approf_kernel_buffers(&k, p.dtype, &b), 0);
            CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 0, &hw, &m), 0);
            if (m.status != 0)
                printf("\n  dtype %d kind %d: %s\n", dt, (int)kinds[i], m.error);
            CU_ASSERT_EQUAL(m.status, 0);
            CU_ASSERT(isfinite(m.compute_cost) && m.compute_cost > 0);
            CU_ASSERT(m.peak_memory >= approf_kernel_buffers_total(&b));
            CU_ASSERT(m.available_memory > 0);
            CU_ASSERT(m.repeats >= 1);
            CU_ASSERT(m.spread >= 0);
        }
    }
}

/* A memory-bound kernel that names its operator runs that operator's
 * kernel (batch norm through cuDNN): every operator, both directions, every
 * dtype measures with status ok and a peak at least its arrays. */
static void test_operators(void)
{
    for (int dt = APPROF_F32; dt <= APPROF_BF16; dt++) {
        for (int op = APPROF_CUDA_OP_NONE + 1; op < APPROF_CUDA_OP_COUNT; op++) {
            for (int bw = 0; bw < 2; bw++) {
                ApprofKernel k = kern(APPROF_K_REDUCTION);
                ApprofKernelBuffers b;
                ApprofStageProgram p;
                ApprofMeasurement m;
                k.dtype = (ApprofDtype)dt;
                k.kop = op;
                k.kop_backward = bw;
                k.rows = 4096;
                k.cols = 1024;
                k.extent = op == APPROF_CUDA_OP_EMBEDDING ? 50304
                           : op == APPROF_CUDA_OP_ADD || op == APPROF_CUDA_OP_MUL ? 1024 : 0;
                k.rate = 0.1;
                k.conv_n = 16; k.conv_c = 64; k.conv_h = 56; k.conv_w = 56;
                k.conv_r = k.conv_s = 3;
                k.conv_stride[0] = k.conv_stride[1] = 2;
                k.conv_pad[0] = k.conv_pad[1] = 1;
                memset(&p, 0, sizeof p);
                p.dtype = (ApprofDtype)dt;
                p.kernels[0] = &k;
                p.n_kernels[0] = 1;
                CU_ASSERT_EQUAL_FATAL(approf_kernel_buffers(&k, p.dtype, &b), 0);
                CU_ASSERT_EQUAL(b.real, 1);
                CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 0, &hw, &m), 0);
                if (m.status != 0)
                    printf("\n  dtype %d operator %d %s: %s\n", dt, op, bw ? "bwd" : "fwd",
                           m.error);
                CU_ASSERT_EQUAL(m.status, 0);
                CU_ASSERT(isfinite(m.compute_cost) && m.compute_cost > 0);
                CU_ASSERT(m.peak_memory >= approf_kernel_buffers_total(&b));
            }
        }
    }
}

static void test_oom_then_ok(void)
{
    ApprofKernel k = kern(APPROF_K_GEMM);
    ApprofStageProgram p;
    ApprofMeasurement m;
    memset(&p, 0, sizeof p);
    p.kernels[1] = &k;
    p.n_kernels[1] = 1;
    p.peak_memory[1] = (int64_t)1 << 50;       /* a petabyte */
    CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 1, &hw, &m), 0);
    CU_ASSERT_EQUAL(m.status, 1);
    CU_ASSERT(isinf(m.compute_cost));
    CU_ASSERT(m.error[0] != '\0');
    p.peak_memory[1] = 0;
    CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 1, &hw, &m), 0);
    CU_ASSERT_EQUAL(m.status, 0);
    CU_ASSERT(isfinite(m.compute_cost));
}

/* A MoE layer's expert GEMMs (experts > 0: one grouped GEMM) measure in
 * every dtype, forward / input gradient and weight gradient. */
static void test_experts(void)
{
    for (int dt = APPROF_F32; dt <= APPROF_BF16; dt++)
        for (int wgrad = 0; wgrad < 2; wgrad++) {
            ApprofKernel k = kern(APPROF_K_GEMM);
            ApprofStageProgram p;
            ApprofMeasurement m;
            /* 2 samples x 8 experts of 256 slots, 1024 -> 768; the weight
             * gradient: 8 experts, 1024 x 512 tokens @ 512 tokens x 768 */
            k.batch = wgrad ? 8 : 16;
            k.m = wgrad ? 1024 : 256;
            k.k = wgrad ? 512 : 1024;
            k.experts = 8;
            k.experts_k = wgrad;
            k.dtype = (ApprofDtype)dt;
            memset(&p, 0, sizeof p);
            p.dtype = (ApprofDtype)dt;
            p.kernels[0] = &k;
            p.n_kernels[0] = 1;
            CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 0, &hw, &m), 0);
            if (m.status != 0)
                printf("\n  dtype %d expert GEMM%s: %s\n", dt, wgrad ? " (wgrad)" : "", m.error);
            CU_ASSERT_EQUAL(m.status, 0);
            CU_ASSERT(isfinite(m.compute_cost) && m.compute_cost > 0);
            CU_ASSERT_EQUAL(m.apply_seconds, 0.0);
        }
}

/* The optimizer step measures with the backward phase only, leaves the
 * phase's peak alone, and without room for its arrays is left to the
 * analytic price (apply_seconds 0, the entry still ok). */
static void test_adam(void)
{
    for (int dt = APPROF_F32; dt <= APPROF_BF16; dt++) {
        ApprofKernel k = kern(APPROF_K_ELEMENTWISE);
        ApprofStageProgram p;
        ApprofMeasurement m, plain;
        memset(&p, 0, sizeof p);
        p.dtype = (ApprofDtype)dt;
        k.dtype = (ApprofDtype)dt;
        p.kernels[0] = p.kernels[1] = &k;
        p.n_kernels[0] = p.n_kernels[1] = 1;
        CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 1, &hw, &plain), 0);
        CU_ASSERT_EQUAL(plain.apply_seconds, 0.0);
        p.optimizer_elements = 100e6;
        CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 1, &hw, &m), 0);
        if (m.status != 0)
            printf("\n  dtype %d optimizer step: %s\n", dt, m.error);
        CU_ASSERT_EQUAL(m.status, 0);
        /* 100M parameters, 28 bytes each: about 1 ms at 3 TB/s */
        CU_ASSERT(m.apply_seconds > 1e-4 && m.apply_seconds < 0.1);
        printf("\n  dtype %d: Adam over 1e8 parameters %.3f ms (%.0f GB/s at 28 B each)", dt,
               m.apply_seconds * 1e3, 28e8 / m.apply_seconds / 1e9);
        CU_ASSERT_EQUAL(m.peak_memory, plain.peak_memory);
        CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 0, &hw, &m), 0);
        CU_ASSERT_EQUAL(m.apply_seconds, 0.0);
        p.optimizer_elements = 1e14;   /* 2.8 PB of state */
        CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 1, &hw, &m), 0);
        CU_ASSERT_EQUAL(m.status, 0);
        CU_ASSERT_EQUAL(m.apply_seconds, 0.0);
    }
}

/* A llama block's attention (GQA 32/8 heads, d 128, causal, 2 x 512
 * tokens, bf16 and f16; the lowering's own kernels), forward and backward:
 * measured as cuDNN's fused attention (backend ABI 14) and, on a second
 * backend opened with APPROF_CUDA_SDPA=0, as its GEMMs; both ok. */
static void test_attention(void)
{
    ApprofBackend gemms;
    char err[512];
    setenv("APPROF_CUDA_SDPA", "0", 1);
    int rc = approf_backend_cuda(&gemms, err, sizeof err);
    unsetenv("APPROF_CUDA_SDPA");
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    for (int dt = APPROF_F16; dt <= APPROF_BF16; dt++) {
        ApprofZooOptions o;
        ApprofGraph *g = NULL;
        memset(&o, 0, sizeof o);
        o.preset = "llama-3-8b";
        o.num_layers = 1;
        o.batch = 2;
        o.seq_len = 512;
        o.dtype = dt == APPROF_F16 ? "f16" : "bf16";
        CU_ASSERT_EQUAL_FATAL(approf_zoo_build("llama", &o, &g, err, sizeof err), 0);
        for (size_t op = 0; op < g->n_ops; op++) {
            if (g->ops[op].kind != APPROF_OP_ATTENTION)
                continue;
            for (int ph = 0; ph < 2; ph++) {
                ApprofKernel ks[APPROF_MAX_KERNELS];
                ApprofStageProgram p;
                ApprofMeasurement m[2];
                int nk = approf_op_kernels(g, (int)op, NULL, ph, ks, APPROF_MAX_KERNELS);
                memset(&p, 0, sizeof p);
                p.dtype = (ApprofDtype)dt;
                p.kernels[ph] = ks;
                p.n_kernels[ph] = (size_t)nk;
                CU_ASSERT_EQUAL(be.measure(be.ctx, &p, ph, &hw, &m[0]), 0);
                CU_ASSERT_EQUAL(gemms.measure(gemms.ctx, &p, ph, &hw, &m[1]), 0);
                for (int i = 0; i < 2; i++) {
                    if (m[i].status != 0)
                        printf("\n  attention %s: %s", i ? "GEMMs" : "fused", m[i].error);
                    CU_ASSERT_EQUAL(m[i].status, 0);
                    CU_ASSERT(isfinite(m[i].compute_cost) && m[i].compute_cost > 0);
                }
                printf("\n  dtype %d attention %s: fused %.3f ms, as GEMMs %.3f ms", dt,
                       ph ? "bwd" : "fwd", m[0].compute_cost * 1e3, m[1].compute_cost * 1e3);
            }
            break;
        }
        approf_graph_free(&g);
    }
    approf_backend_destroy(&gemms);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"kinds", test_kinds},
        {"operators", test_operators},
        {"oom_then_ok", test_oom_then_ok},
        {"experts", test_experts},
        {"adam", test_adam},
        {"attention", test_attention},
    };
    char err[512];
    int rc = approf_backend_cuda(&be, err, sizeof err);
    if (rc == APPROF_ENODEV) {
        printf("skipped: %s\n", err);
        return 77;
    }
    if (rc < 0 || approf_hardware_builtin("h100-sxm", &hw) < 0) {
        if (rc < 0 || approf_hardware_builtin("a100-40g", &hw) < 0) {
            printf("setup failed: %s\n", rc < 0 ? err : "no built-in spec");
            return 1;
        }
    }
    rc = CUNIT_RUN("cuda-device", tests);
    approf_backend_destroy(&be);
    return rc;
}
