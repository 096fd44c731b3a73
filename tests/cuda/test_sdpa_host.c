/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host side of backend ABI 14 (no GPU needed): the fused attention's
 * kernels carry their shape (a llama block's attention through the
 * lowering), which of them go to cuDNN (approf_sdpa_route), the graph
 * handed to cuDNN (approf_sdpa_graph: tensor dims, strides, ids, arrays,
 * the operations of the causal mask and of GQA), and what that graph
 * computes: evaluated operation by operation on the CPU (sdpa_ref.c) it
 * gives the attention's output, statistics and gradients as written out
 * directly.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/sdpa.h"
#include "cunit_run.h"
#include "model/zoo.h"
#include "sdpa_ref.h"

static ApprofKernel lead(int lead_kind, int64_t d)
{
    ApprofKernel k;
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_GEMM;
    k.attention = 1;
    k.attn_lead = lead_kind;
    k.attn_b = 2;
    k.attn_hq = 8;
    k.attn_hkv = 2;
    k.attn_sq = k.attn_skv = 256;
    k.attn_d = d;
    k.attn_causal = 1;
    return k;
}

static void test_route(void)
{
    ApprofSdpaShape s;
    const char *why = "x";
    ApprofKernel k = lead(1, 128);

    CU_ASSERT_EQUAL(approf_sdpa_route(&k, APPROF_BF16, &s, &why), 1);
    CU_ASSERT_PTR_NULL(why);
    CU_ASSERT(s.b == 2 && s.hq == 8 && s.hkv == 2 && s.sq == 256 && s.skv == 256 && s.d == 128);
    CU_ASSERT(s.causal == 1 && s.backward == 0 && s.dtype == APPROF_BF16);
    k.attn_lead = 2;
    CU_ASSERT_EQUAL(approf_sdpa_route(&k, APPROF_F16, &s, &why), 1);
    CU_ASSERT_EQUAL(s.backward, 1);
    /* f32 stays on the GEMMs, with a reason */
    CU_ASSERT_EQUAL(approf_sdpa_route(&k, APPROF_F32, &s, &why), 0);
    CU_ASSERT_PTR_NOT_NULL(why);
    /* head dims above 128 or not a multiple of 8 */
    k = lead(1, 136);
    CU_ASSERT_EQUAL(approf_sdpa_route(&k, APPROF_BF16, &s, &why), 0);
    CU_ASSERT_PTR_NOT_NULL(why);
    k = lead(1, 100);
    CU_ASSERT_EQUAL(approf_sdpa_route(&k, APPROF_BF16, &s, &why), 0);
    CU_ASSERT_PTR_NOT_NULL(why);
    /* the other GEMMs of the attention, and a plain GEMM: no lead, no reason */
    k = lead(0, 64);
    CU_ASSERT_EQUAL(approf_sdpa_route(&k, APPROF_BF16, &s, &why), 0);
    CU_ASSERT_PTR_NULL(why);
    k = lead(1, 64);
    k.attention = 0;
    CU_ASSERT_EQUAL(approf_sdpa_route(&k, APPROF_BF16, &s, &why), 0);
    CU_ASSERT_PTR_NULL(why);
    /* heads that do not group */
    k = lead(1, 64);
    k.attn_hkv = 3;
    CU_ASSERT_EQUAL(approf_sdpa_route(&k, APPROF_BF16, &s, &why), 0);
}

/* The kernels a lead stands for: its followers of the same operator up
 * to the next lead (a recomputed forward before the backward's group). */
static void test_group(void)
{
    ApprofKernel k[9];
    for (int i = 0; i < 9; i++) {
        k[i] = lead(0, 64);
        k[i].op = 3;
    }
    k[0].attn_lead = 1;             /* recomputed forward: 0, 1 */
    k[2].attn_lead = 2;             /* backward: 2 .. 6 */
    k[7].op = 4;                    /* another operator's attention GEMM */
    k[8].attention = 0;             /* a plain GEMM */
    CU_ASSERT_EQUAL(approf_sdpa_group(k, 9, 0), 2);
    CU_ASSERT_EQUAL(approf_sdpa_group(k, 9, 2), 5);
    CU_ASSERT_EQUAL(approf_sdpa_group(k, 9, 1), 0);
    CU_ASSERT_EQUAL(approf_sdpa_group(k, 9, 8), 0);
    CU_ASSERT_EQUAL(approf_sdpa_group(k, 4, 2), 2);  /* cut at n */
    k[7].op = 3;
    k[7].attention = 0;
    k[7].kind = APPROF_K_ELEMENTWISE;
    CU_ASSERT_EQUAL(approf_sdpa_group(k, 9, 2), 5);
    CU_ASSERT_EQUAL(approf_sdpa_group(k, 9, 9), 0);
}

/* A llama block's attention lowers to GEMMs that carry its shape: the
 * forward's first GEMM leads (1), the backward's (2), the rest follow. */
static void test_lowering(void)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    int seen = 0;
    memset(&o, 0, sizeof o);
    o.preset = "llama-3-8b";
    o.num_layers = 1;
    o.batch = 2;
    o.seq_len = 64;
    o.dtype = "bf16";
    CU_ASSERT_EQUAL_FATAL(approf_zoo_build("llama", &o, &g, err, sizeof err), 0);
    for (size_t op = 0; op < g->n_ops; op++) {
        if (g->ops[op].kind != APPROF_OP_ATTENTION)
            continue;
        for (int ph = 0; ph < 2; ph++) {
            ApprofKernel ks[APPROF_MAX_KERNELS];
            int nk = approf_op_kernels(g, (int)op, NULL, ph, ks, APPROF_MAX_KERNELS);
            ApprofSdpaShape s;
            const char *why;
            CU_ASSERT_EQUAL(nk, ph ? 5 : 2);
            for (int i = 0; i < nk; i++) {
                CU_ASSERT_EQUAL(ks[i].attn_lead, i == 0 ? 1 + ph : 0);
                CU_ASSERT(ks[i].attn_b == 2 && ks[i].attn_hq == 32 && ks[i].attn_hkv == 8 &&
                          ks[i].attn_sq == 64 && ks[i].attn_skv == 64 && ks[i].attn_d == 128 &&
                          ks[i].attn_causal == 1);
            }
            CU_ASSERT_EQUAL(approf_sdpa_route(&ks[0], APPROF_BF16, &s, &why), 1);
            CU_ASSERT_EQUAL(approf_sdpa_group(ks, (size_t)nk, 0), (size_t)nk);
            CU_ASSERT_EQUAL(s.backward, ph);
            seen++;
        }
    }
    CU_ASSERT_EQUAL(seen, 2);
    approf_graph_free(&g);
}

static int count(const ApprofSdpaGraph *g, int kind, int mode)
{
    int n = 0;
    for (int i = 0; i < g->nop; i++)
        n += g->op[i].kind == kind && (mode < 0 || g->op[i].mode == mode);
    return n;
}

static void test_graph_forward(void)
{
    ApprofSdpaShape s = {2, 8, 2, 32, 48, 64, 0, 0, APPROF_BF16};
    ApprofSdpaGraph g;
    CU_ASSERT_EQUAL_FATAL(approf_sdpa_graph(&s, -INFINITY, &g), 0);
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_MATMUL, -1), 2);
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_GEN_INDEX), 0);
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_REDUCTION, APPROF_SDPA_RED_MAX), 1);
    /* Q, K^T, V in; O, stats out; unique ids 1.. */
    CU_ASSERT_EQUAL(g.arrays[0].n, 3);
    CU_ASSERT_EQUAL(g.arrays[1].n, 2);
    CU_ASSERT_EQUAL(g.arrays[2].n, 0);
    CU_ASSERT_EQUAL(g.t[0].uid, 1);
    CU_ASSERT(g.t[0].dim[0] == 2 && g.t[0].dim[1] == 8 && g.t[0].dim[2] == 32 &&
              g.t[0].dim[3] == 64);
    CU_ASSERT_EQUAL(g.t[0].dtype, APPROF_SDPA_BF16);
    /* K as K^T over K's dense [b, hkv, skv, d] memory */
    CU_ASSERT(g.t[1].dim[1] == 2 && g.t[1].dim[2] == 64 && g.t[1].dim[3] == 48);
    CU_ASSERT(g.t[1].stride[0] == 2 * 48 * 64 && g.t[1].stride[1] == 48 * 64 &&
              g.t[1].stride[2] == 1 && g.t[1].stride[3] == 64);
    CU_ASSERT_EQUAL(g.arrays[0].bytes[1], 2 * 2 * 48 * 64 * 2);
    CU_ASSERT_EQUAL(g.arrays[1].bytes[1], 2 * 8 * 32 * 4); /* stats f32 */
    CU_ASSERT_EQUAL(g.arrays[1].offset[1] % 256, 0);
    for (int i = 0; i < g.nt; i++) {
        CU_ASSERT_EQUAL(g.t[i].uid, i + 1);
        CU_ASSERT(!(g.t[i].virt && g.t[i].buf >= 0));
        if (g.t[i].by_value)
            CU_ASSERT(g.t[i].dim[0] == 1 && g.t[i].dim[3] == 1);
    }
    /* causal: two index generators (rows, columns), a compare, a select of neg_inf */
    s.causal = 1;
    CU_ASSERT_EQUAL_FATAL(approf_sdpa_graph(&s, -7.0f, &g), 0);
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_GEN_INDEX), 2);
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_CMP_GE), 1);
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_BINARY_SELECT), 1);
    for (int i = 0; i < g.nop; i++) {
        const ApprofSdpaOp *o = &g.op[i];
        if (o->mode == APPROF_SDPA_PW_GEN_INDEX && o->kind == APPROF_SDPA_POINTWISE)
            CU_ASSERT(o->axis == 2 || o->axis == 3);
        if (o->mode == APPROF_SDPA_PW_BINARY_SELECT && o->kind == APPROF_SDPA_POINTWISE) {
            CU_ASSERT(g.t[o->b].by_value && g.t[o->b].value == -7.0f);
            CU_ASSERT_EQUAL(g.t[o->t].dtype, APPROF_SDPA_BOOL);
        }
    }
    /* refused: f32, heads that do not group, a non-positive size */
    s.dtype = APPROF_F32;
    CU_ASSERT_EQUAL(approf_sdpa_graph(&s, 0, &g), -1);
    s.dtype = APPROF_F16;
    s.hkv = 3;
    CU_ASSERT_EQUAL(approf_sdpa_graph(&s, 0, &g), -1);
    s.hkv = 2;
    s.sq = 0;
    CU_ASSERT_EQUAL(approf_sdpa_graph(&s, 0, &g), -1);
}

static void test_graph_backward(void)
{
    ApprofSdpaShape s = {2, 8, 2, 32, 32, 64, 1, 1, APPROF_F16};
    ApprofSdpaGraph g;
    CU_ASSERT_EQUAL_FATAL(approf_sdpa_graph(&s, -INFINITY, &g), 0);
    /* S, dV, dP, dK, dQ */
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_MATMUL, -1), 5);
    /* rowsum(dO * O) and, under GQA, the heads of dV and dK summed */
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_REDUCTION, APPROF_SDPA_RED_ADD), 3);
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_RESHAPE, -1), 3);
    CU_ASSERT_EQUAL(g.arrays[0].n, 6);
    CU_ASSERT_EQUAL(g.arrays[1].n, 3);
    CU_ASSERT_EQUAL(g.arrays[2].n, 2);
    CU_ASSERT_FATAL(g.dq_accum >= 0);
    CU_ASSERT_EQUAL(g.t[g.dq_accum].dtype, APPROF_SDPA_F32);
    CU_ASSERT_EQUAL(g.t[g.dq_accum].virt, 0);
    CU_ASSERT_EQUAL(g.arrays[2].bytes[1], 2 * 8 * 32 * 64 * 4);
    /* the reshaped P: [b, hq, skv, sq] over P's [b, hq, sq, skv] */
    for (int i = 0; i < g.nop; i++)
        if (g.op[i].kind == APPROF_SDPA_RESHAPE && g.t[g.op[i].y].dim[3] == 32 &&
            g.t[g.op[i].y].dim[1] == 8)
            CU_ASSERT(g.t[g.op[i].y].stride[2] == 1 && g.t[g.op[i].y].stride[3] == 32);
    /* without GQA: no head reductions */
    s.hkv = 8;
    CU_ASSERT_EQUAL_FATAL(approf_sdpa_graph(&s, -INFINITY, &g), 0);
    CU_ASSERT_EQUAL(count(&g, APPROF_SDPA_REDUCTION, APPROF_SDPA_RED_ADD), 1);
}

/* ---- the graph evaluated against the direct form -------------------------- */

static void fill(double *p, int64_t n, uint64_t *st)
{
    for (int64_t i = 0; i < n; i++) {
        *st = *st * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (double)(*st >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    }
}

static double maxdiff(const double *a, const double *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

static void eval_case(int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv, int64_t d,
                      int causal)
{
    ApprofSdpaShape s = {b, hq, hkv, sq, skv, d, causal, 0, APPROF_BF16};
    int64_t nq = b * hq * sq * d, nk = b * hkv * skv * d, nl = b * hq * sq;
    double *q = calloc((size_t)nq, 8), *k = calloc((size_t)nk, 8), *v = calloc((size_t)nk, 8);
    double *o = calloc((size_t)nq, 8), *lse = calloc((size_t)nl, 8), *dO = calloc((size_t)nq, 8);
    double *dq = calloc((size_t)nq, 8), *dk = calloc((size_t)nk, 8), *dv = calloc((size_t)nk, 8);
    double *go = calloc((size_t)nq, 8), *gl = calloc((size_t)nl, 8), *gdq = calloc((size_t)nq, 8);
    double *gdk = calloc((size_t)nk, 8), *gdv = calloc((size_t)nk, 8);
    double *acc = calloc((size_t)nq, 8), *ssum = calloc((size_t)nl, 8);
    ApprofSdpaGraph g;
    char err[128] = "";
    uint64_t st = 42;

    CU_ASSERT_FATAL(q && k && v && o && lse && dO && dq && dk && dv && go && gl && gdq && gdk &&
                    gdv && acc && ssum);
    fill(q, nq, &st);
    fill(k, nk, &st);
    fill(v, nk, &st);
    fill(dO, nq, &st);
    sdpa_ref_forward(&s, q, k, v, o, lse);
    sdpa_ref_backward(&s, q, k, v, o, dO, lse, dq, dk, dv);

    CU_ASSERT_EQUAL_FATAL(approf_sdpa_graph(&s, -INFINITY, &g), 0);
    {
        double *in[] = {q, k, v}, *out[] = {go, gl}, *none[] = {NULL};
        double *const *arr[3] = {in, out, none};
        CU_ASSERT_EQUAL(sdpa_ref_eval(&g, arr, err, sizeof err), 0);
    }
    CU_ASSERT(maxdiff(go, o, nq) < 1e-12);
    CU_ASSERT(maxdiff(gl, lse, nl) < 1e-12);

    s.backward = 1;
    CU_ASSERT_EQUAL_FATAL(approf_sdpa_graph(&s, -INFINITY, &g), 0);
    {
        double *in[] = {q, k, v, o, dO, lse}, *out[] = {gdq, gdk, gdv}, *aux[] = {ssum, acc};
        double *const *arr[3] = {in, out, aux};
        CU_ASSERT_EQUAL(sdpa_ref_eval(&g, arr, err, sizeof err), 0);
    }
    CU_ASSERT(maxdiff(gdq, dq, nq) < 1e-12);
    CU_ASSERT(maxdiff(gdk, dk, nk) < 1e-12);
    CU_ASSERT(maxdiff(gdv, dv, nk) < 1e-12);
    if (err[0])
        fprintf(stderr, "%s\n", err);
    free(q), free(k), free(v), free(o), free(lse), free(dO), free(dq), free(dk), free(dv);
    free(go), free(gl), free(gdq), free(gdk), free(gdv), free(acc), free(ssum);
}

static void test_graph_eval(void)
{
    eval_case(2, 2, 2, 5, 7, 8, 0);   /* MHA, sq != skv */
    eval_case(1, 3, 3, 6, 6, 8, 1);   /* causal */
    eval_case(2, 4, 2, 6, 6, 16, 1);  /* GQA, causal */
    eval_case(1, 6, 1, 4, 9, 8, 0);   /* MQA */
}

/* The direct form itself on a case small enough to work out: one query
 * row, keys equal, so the softmax is uniform. */
static void test_reference(void)
{
    ApprofSdpaShape s = {1, 1, 1, 1, 2, 8, 0, 0, APPROF_BF16};
    double q[8], k[16], v[16], o[8], lse;
    for (int i = 0; i < 8; i++) {
        q[i] = 1;
        k[i] = k[8 + i] = 0.5;
        v[i] = 1;
        v[8 + i] = 3;
    }
    sdpa_ref_forward(&s, q, k, v, o, &lse);
    CU_ASSERT_DOUBLE_EQUAL(o[0], 2.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(lse, 4.0 / sqrt(8.0) + log(2.0), 1e-6); /* the scale is a float */
    CU_ASSERT_EQUAL(sdpa_ref_to_bf16(1.0f), 0x3f80);
    CU_ASSERT_EQUAL(sdpa_ref_to_half(1.0f), 0x3c00);
    CU_ASSERT_EQUAL(sdpa_ref_to_half(-2.5f), 0xc100);
    CU_ASSERT_DOUBLE_EQUAL(sdpa_ref_from_half(0x3555), 0.333251953125, 1e-12);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"route", test_route},
        {"lowering", test_lowering},
        {"group", test_group},
        {"graph_forward", test_graph_forward},
        {"graph_backward", test_graph_backward},
        {"graph_eval", test_graph_eval},
        {"reference", test_reference},
    };
    return CUNIT_RUN("cuda_sdpa_host", tests);
}
