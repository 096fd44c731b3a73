/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The module's fused attention (profiler/cuda/sdpa.c, cuDNN's backend API)
 * against the CPU reference (sdpa_ref.c) on a GPU: small shapes in f16
 * and bf16, causal and not, GQA and MQA, a query length apart from the
 * keys', head dims 32 to 128. Forward: O and the log-sum-exp statistics;
 * backward (from the reference's O and statistics and a random dO): dQ,
 * dK and dV. Inputs are rounded to the dtype before the reference sees
 * them; the tolerance is the dtype's rounding of outputs and of the
 * probabilities cuDNN feeds to its second matmul. A shape cuDNN refuses
 * (NOT_SUPPORTED) fails the test: these are shapes the routing sends to
 * it. Exits 77 (skipped) without a CUDA device. Two modes need none:
 * `descriptors` (every descriptor of every case finalizes) and
 * `deviceless JSON` (heuristics and kernel compilation for the device the
 * JSON describes; sdpa_deviceless.sh runs it with the toolkit's stub
 * libcuda).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/module_int.h"
#include "sdpa_ref.h"

static int failures, checks;

static double round_to(int dt, double x)
{
    return dt == APPROF_F16 ? sdpa_ref_from_half(sdpa_ref_to_half((float)x))
                            : sdpa_ref_from_bf16(sdpa_ref_to_bf16((float)x));
}

static void rnd(double *p, int64_t n, uint64_t *st, int dt)
{
    for (int64_t i = 0; i < n; i++) {
        *st = *st * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = round_to(dt, (double)(*st >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

/* Array `a` of buffer `buf` (ApprofSdpaGraph.arrays) to the device, from doubles. */
static int put(const ApprofSdpaGraph *g, void *const bufs[3], int buf, int a, const double *x,
               int es, int dt)
{
    int64_t n = g->arrays[buf].bytes[a] / es;
    unsigned char *h = malloc((size_t)g->arrays[buf].bytes[a]);
    if (!h)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        if (es == 4) {
            float f = (float)x[i];
            memcpy(h + 4 * i, &f, 4);
        } else {
            uint16_t v = dt == APPROF_F16 ? sdpa_ref_to_half((float)x[i])
                                          : sdpa_ref_to_bf16((float)x[i]);
            memcpy(h + 2 * i, &v, 2);
        }
    }
    cudaError_t e = cudaMemcpy((char *)bufs[buf] + g->arrays[buf].offset[a], h,
                               (size_t)g->arrays[buf].bytes[a], cudaMemcpyHostToDevice);
    free(h);
    return e == cudaSuccess ? 0 : -1;
}

static int get(const ApprofSdpaGraph *g, void *const bufs[3], int buf, int a, double *x, int es,
               int dt)
{
    int64_t n = g->arrays[buf].bytes[a] / es;
    unsigned char *h = malloc((size_t)g->arrays[buf].bytes[a]);
    if (!h)
        return -1;
    cudaError_t e = cudaMemcpy(h, (char *)bufs[buf] + g->arrays[buf].offset[a],
                               (size_t)g->arrays[buf].bytes[a], cudaMemcpyDeviceToHost);
    for (int64_t i = 0; i < n && e == cudaSuccess; i++) {
        if (es == 4) {
            float f;
            memcpy(&f, h + 4 * i, 4);
            x[i] = f;
        } else {
            uint16_t v;
            memcpy(&v, h + 2 * i, 2);
            x[i] = dt == APPROF_F16 ? sdpa_ref_from_half(v) : sdpa_ref_from_bf16(v);
        }
    }
    free(h);
    return e == cudaSuccess ? 0 : -1;
}

/* |got - want| <= atol + rtol * max|want| everywhere; says the worst. */
static void compare(const char *name, const char *what, const double *got, const double *want,
                    int64_t n, double rtol, double atol)
{
    double worst = 0, mx = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++)
        mx = fmax(mx, fabs(want[i]));
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]);
        if (!(d <= worst)) {
            worst = d;
            at = i;
        }
    }
    checks++;
    if (!(worst <= atol + rtol * mx)) {
        failures++;
        printf("FAIL %s %s: |diff| %.4g at %lld (got %.6g, want %.6g; max |want| %.4g)\n", name,
               what, worst, (long long)at, got[at], want[at], mx);
    } else {
        printf("ok   %s %s: max |diff| %.4g (max |want| %.4g)\n", name, what, worst, mx);
    }
}

/* Runs the forward of s through cuDNN with its arrays already on the device. */
static int run(CudaCtx *c, const ApprofSdpaShape *s, void *const bufs[3], void *ws,
               size_t ws_size, const char *name)
{
    CudaOp op;
    char err[512] = "";
    int rc;
    memset(&op, 0, sizeof op);
    rc = cuda_sdpa_prepare(c, &op, s, bufs, ws, ws_size, err, sizeof err);
    if (rc == 0) {
        rc = cuda_sdpa_run(c, &op, err, sizeof err);
        if (rc == 0)
            rc = cuda_ck(cudaStreamSynchronize(c->stream), "sync", err, sizeof err);
    }
    cuda_sdpa_release(&op);
    if (rc < 0) {
        failures++;
        checks++;
        printf("FAIL %s: %s\n", name, err);
    }
    return rc;
}

static void one(CudaCtx *c, int dt, int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv,
                int64_t d, int causal, void *ws, size_t ws_size)
{
    ApprofSdpaShape s = {b, hq, hkv, sq, skv, d, causal, 0, (ApprofDtype)dt};
    ApprofSdpaGraph g;
    int64_t nq = b * hq * sq * d, nk = b * hkv * skv * d, nl = b * hq * sq;
    double *q = calloc((size_t)nq, 8), *k = calloc((size_t)nk, 8), *v = calloc((size_t)nk, 8);
    double *o = calloc((size_t)nq, 8), *lse = calloc((size_t)nl, 8), *dO = calloc((size_t)nq, 8);
    double *dq = calloc((size_t)nq, 8), *dk = calloc((size_t)nk, 8), *dv = calloc((size_t)nk, 8);
    double *got = calloc((size_t)(nq > nk ? nq : nk), 8);
    void *bufs[3] = {NULL, NULL, NULL};
    char name[160];
    uint64_t st = 7 + (uint64_t)(b * 131 + hq * 17 + sq + d + causal);
    double rtol = dt == APPROF_F16 ? 4e-3 : 2.5e-2;

    snprintf(name, sizeof name, "%s b%lld h%lld/%lld %lldx%lld d%lld%s",
             dt == APPROF_F16 ? "f16" : "bf16", (long long)b, (long long)hq, (long long)hkv,
             (long long)sq, (long long)skv, (long long)d, causal ? " causal" : "");
    if (!q || !k || !v || !o || !lse || !dO || !dq || !dk || !dv || !got) {
        printf("FAIL %s: out of host memory\n", name);
        failures++;
        goto out;
    }
    rnd(q, nq, &st, dt);
    rnd(k, nk, &st, dt);
    rnd(v, nk, &st, dt);
    rnd(dO, nq, &st, dt);
    sdpa_ref_forward(&s, q, k, v, o, lse);
    for (int64_t i = 0; i < nq; i++)
        o[i] = round_to(dt, o[i]);   /* the O the backward reads is the stored one */
    sdpa_ref_backward(&s, q, k, v, o, dO, lse, dq, dk, dv);

    for (int bw = 0; bw < 2; bw++) {
        s.backward = bw;
        if (approf_sdpa_graph(&s, -INFINITY, &g) < 0) {
            printf("FAIL %s: no graph\n", name);
            failures++;
            goto out;
        }
        for (int i = 0; i < 3; i++) {
            bufs[i] = NULL;
            if (g.arrays[i].total > 0 &&
                cudaMalloc(&bufs[i], (size_t)g.arrays[i].total) != cudaSuccess) {
                printf("FAIL %s: cudaMalloc\n", name);
                failures++;
                goto out;
            }
            if (bufs[i])
                cudaMemset(bufs[i], 0, (size_t)g.arrays[i].total);
        }
        if (!bw) {
            if (put(&g, bufs, 0, 0, q, 2, dt) || put(&g, bufs, 0, 1, k, 2, dt) ||
                put(&g, bufs, 0, 2, v, 2, dt))
                goto cuda_fail;
            if (run(c, &s, bufs, ws, ws_size, name) == 0) {
                if (get(&g, bufs, 1, 0, got, 2, dt))
                    goto cuda_fail;
                compare(name, "forward O", got, o, nq, rtol, 1e-3);
                if (get(&g, bufs, 1, 1, got, 4, dt))
                    goto cuda_fail;
                compare(name, "forward log-sum-exp", got, lse, nl, 1e-3, 1e-3);
            }
        } else {
            /* the backward needs its statistics (softmax) from the
             * forward; cuda_sdpa_prepare zeroes them for timing, so they
             * are put after it, by run()'s caller: prepare here, then put */
            CudaOp op;
            char err[512] = "";
            memset(&op, 0, sizeof op);
            int rc = cuda_sdpa_prepare(c, &op, &s, bufs, ws, ws_size, err, sizeof err);
            if (rc == 0 && cudaStreamSynchronize(c->stream) != cudaSuccess)
                rc = -1;
            if (rc == 0 && (put(&g, bufs, 0, 0, q, 2, dt) || put(&g, bufs, 0, 1, k, 2, dt) ||
                            put(&g, bufs, 0, 2, v, 2, dt) || put(&g, bufs, 0, 3, o, 2, dt) ||
                            put(&g, bufs, 0, 4, dO, 2, dt) || put(&g, bufs, 0, 5, lse, 4, dt)))
                rc = -1;
            for (int r = 0; r < 2 && rc == 0; r++) /* twice: nothing carries over */
                rc = cuda_sdpa_run(c, &op, err, sizeof err);
            if (rc == 0 && cudaStreamSynchronize(c->stream) != cudaSuccess)
                rc = -1;
            cuda_sdpa_release(&op);
            if (rc < 0) {
                printf("FAIL %s backward: %s\n", name, err[0] ? err : "CUDA error");
                failures++;
                checks++;
            } else {
                if (get(&g, bufs, 1, 0, got, 2, dt))
                    goto cuda_fail;
                compare(name, "backward dQ", got, dq, nq, 2 * rtol, 2e-3);
                if (get(&g, bufs, 1, 1, got, 2, dt))
                    goto cuda_fail;
                compare(name, "backward dK", got, dk, nk, 2 * rtol, 2e-3);
                if (get(&g, bufs, 1, 2, got, 2, dt))
                    goto cuda_fail;
                compare(name, "backward dV", got, dv, nk, 2 * rtol, 2e-3);
            }
        }
        for (int i = 0; i < 3; i++)
            cudaFree(bufs[i]);
        bufs[0] = bufs[1] = bufs[2] = NULL;
    }
    goto out;
cuda_fail:
    printf("FAIL %s: copy: %s\n", name, cudaGetErrorString(cudaGetLastError()));
    failures++;
out:
    for (int i = 0; i < 3; i++)
        cudaFree(bufs[i]);
    free(q), free(k), free(v), free(o), free(lse), free(dO), free(dq), free(dk), free(dv);
    free(got);
}

/* Without a device: every shape's descriptors finalize (cuDNN checks each
 * tensor's and operation's attributes on the host). With device_json (a
 * cuDNN device property description, cuDNN 9.8 on): cuDNN's heuristics
 * for that device return an engine for the graph and the engine compiles
 * its kernel, which is as far as it goes without a driver. */
static int descriptors(const char *device_json)
{
    static const int64_t shapes[][7] = {
        {2, 4, 4, 128, 128, 64, 0}, {2, 4, 4, 128, 128, 64, 1}, {1, 8, 2, 256, 256, 128, 1},
        {2, 4, 1, 64, 192, 32, 0},  {1, 2, 2, 100, 100, 64, 1}, {1, 32, 8, 8192, 8192, 128, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int dt = APPROF_F16; dt <= APPROF_BF16; dt++)
            for (int bw = 0; bw < 2; bw++) {
                const int64_t *x = shapes[i];
                /* deviceless: the engine compiles a kernel per case (NVRTC,
                 * a second or two each): three shapes, each in one dtype */
                if (device_json && (i == 1 || i == 4 || i == 5 || (dt == APPROF_BF16) != (i == 2)))
                    continue;
                ApprofSdpaShape s = {x[0], x[1], x[2], x[3], x[4], x[5], (int)x[6], bw,
                                     (ApprofDtype)dt};
                char err[512] = "", engine[256] = "";
                int rc = cuda_sdpa_check(&s, device_json, engine, sizeof engine, err, sizeof err);
                checks++;
                printf("%s %s b%lld h%lld/%lld %lldx%lld d%lld%s %s %s%s%s\n",
                       rc ? "FAIL" : "ok  ", dt == APPROF_F16 ? "f16" : "bf16", (long long)x[0],
                       (long long)x[1], (long long)x[2], (long long)x[3], (long long)x[4],
                       (long long)x[5], x[6] ? " causal" : "", bw ? "backward" : "forward",
                       device_json ? "plan" : "descriptors", rc ? ": " : "", rc ? err : "");
                if (engine[0])
                    printf("     plan: %s\n", engine);
                failures += rc != 0;
            }
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    CudaCtx c;
    int ndev = 0;
    void *ws = NULL;
    size_t ws_size = (size_t)256 << 20;
    char err[256];

    if (argc > 1 && !strcmp(argv[1], "descriptors"))
        return descriptors(NULL);
    if (argc > 2 && !strcmp(argv[1], "deviceless")) {
        /* argv[2]: a cuDNN device property JSON (CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION) */
        static char json[8192];
        FILE *f = fopen(argv[2], "r");
        size_t n = f ? fread(json, 1, sizeof json - 1, f) : 0;
        if (f)
            fclose(f);
        if (!n) {
            printf("cannot read %s\n", argv[2]);
            return 2;
        }
        json[n] = '\0';
        return descriptors(json);
    }
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    memset(&c, 0, sizeof c);
    if (cuda_ck(cudaStreamCreate(&c.stream), "stream", err, sizeof err) < 0 ||
        cudnn_ck(cudnnCreate(&c.dnn), "cudnnCreate", err, sizeof err) < 0 ||
        cudnn_ck(cudnnSetStream(c.dnn, c.stream), "cudnnSetStream", err, sizeof err) < 0 ||
        cuda_ck(cudaMalloc(&ws, ws_size), "workspace", err, sizeof err) < 0) {
        printf("FAIL setup: %s\n", err);
        return 1;
    }
    printf("cuDNN %zu (built against %d.%d.%d)\n", cudnnGetVersion(), CUDNN_MAJOR, CUDNN_MINOR,
           CUDNN_PATCHLEVEL);
    for (int dt = APPROF_F16; dt <= APPROF_BF16; dt++) {
        one(&c, dt, 2, 4, 4, 128, 128, 64, 0, ws, ws_size);
        one(&c, dt, 2, 4, 4, 128, 128, 64, 1, ws, ws_size);
        one(&c, dt, 1, 8, 2, 256, 256, 128, 1, ws, ws_size);  /* GQA, d 128 */
        one(&c, dt, 2, 4, 1, 64, 192, 32, 0, ws, ws_size);    /* MQA, sq != skv */
        one(&c, dt, 1, 2, 2, 100, 100, 64, 1, ws, ws_size);   /* lengths off 64 */
    }
    cuda_sdpa_cache_free(&c);
    cudaFree(ws);
    cudnnDestroy(c.dnn);
    cudaStreamDestroy(c.stream);
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
