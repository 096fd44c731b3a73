/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator kernels of kernels.h on a real GPU: every operator of
 * op_shape.h, forward and backward, in f32 and bf16 (not f16: a third
 * conversion of the same kernels), against a double-precision CPU reference
 * (kernel_ref.c) fed the same rounded inputs. Each case lays out its three
 * buffers with approf_op_layout (checked against op_shape.h's array list),
 * fills them with pseudo-random values, lets approf_cuda_op_init write the
 * ids/labels, runs the kernel twice and checks the results, that they did
 * not change between the runs (what may be summed with atomics excepted: it
 * rounds in any order) and that what is documented as untouched is.
 * Failures name the operator, direction, dtype, shape, array and first bad
 * index, so a device run's log is enough to diagnose it. The optimizer step
 * (ADAM, in place: run 2 starts from run 1's inputs again) is one of them;
 * the module's grouped GEMM of a MoE layer's experts (grouped_gemm.c) is
 * checked against ref_expert_gemm. Exits 77 (skipped) without a CUDA
 * device.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/kernels.h"
#include "cuda/module_int.h"
#include "cunit_run.h"
#include "kernel_ref.h"

/* Relative tolerances: f32 math against double; bf16 also rounds every
 * store to 8 significant bits (2^-9 relative), well inside 2e-2. */
#define TOL_F32 1e-4
#define TOL_BF16 2e-2
#define DROP_RATE 0.1f
#define DROP_SLACK 0.01

static cudaStream_t stream;
static uint64_t case_counter;
static int cases_run;

typedef struct Case {
    ApprofOpShape s;
    char name[200];
    RefOp d;
    ApprofOpArrays lay[3];
    unsigned char *host[3];  /* the buffers as last uploaded / downloaded */
    unsigned char *saved[3]; /* before init, then after the first run */
    unsigned char *init[3];  /* after init: what a run in place starts from */
    void *dev[3];
    RefVals v, r, got; /* inputs (and initial contents), references, results */
    double tol;
    int failed;
} Case;

static const char *const buf_name[3] = {"in", "out", "aux"};

/* ---- reporting ------------------------------------------------------------ */

/* Prints the failure at once (a device log is read top to bottom) and
 * records it with CUnit under the same text; CUnit copies the string. */
static void fail_at(unsigned line, Case *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail_at(unsigned line, Case *c, const char *fmt, ...)
{
    char msg[512];
    int len = snprintf(msg, sizeof msg, "%s: ", c->name);
    va_list ap;
    va_start(ap, fmt);
    if (len > 0 && (size_t)len < sizeof msg)
        vsnprintf(msg + len, sizeof msg - (size_t)len, fmt, ap);
    va_end(ap);
    printf("\n  FAIL %s\n", msg);
    CU_assertImplementation(CU_FALSE, line, msg, __FILE__, "", CU_FALSE);
    c->failed = 1;
}
#define FAIL(c, ...) fail_at(__LINE__, (c), __VA_ARGS__)

/* A CUDA call's status: 0, or -1 after reporting what failed. */
static int ck_at(unsigned line, Case *c, int rc, const char *what)
{
    if (rc == 0)
        return 0;
    fail_at(line, c, "%s: %s (%d)", what, cudaGetErrorString((cudaError_t)rc), rc);
    return -1;
}
#define CK(c, call) ck_at(__LINE__, (c), (int)(call), #call)

/* ---- element encoding ----------------------------------------------------- */

/* bf16 from f32: round to nearest even on the upper 16 bits (NaN kept a NaN). */
static uint16_t bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int64_t elem_size(int type, int dtype)
{
    return type == REF_ES && dtype != 0 ? 2 : 4;
}

static unsigned char *arr_ptr(unsigned char *base, const Case *c, int b, int k)
{
    return base + c->lay[b].offset[k];
}

static double get_elem(const Case *c, const unsigned char *p, int type, int64_t i)
{
    float f;
    int32_t id;
    uint16_t h;
    if (type == REF_I32) {
        memcpy(&id, p + 4 * i, 4);
        return id;
    }
    if (type == REF_ES && c->s.dtype == 2) {
        memcpy(&h, p + 2 * i, 2);
        return bf16_to_float(h);
    }
    memcpy(&f, p + 4 * i, 4);
    return f;
}

static void put_elem(const Case *c, unsigned char *p, int type, int64_t i, double x)
{
    float f = (float)x;
    int32_t id = (int32_t)x;
    uint16_t h;
    if (type == REF_I32) {
        memcpy(p + 4 * i, &id, 4);
    } else if (type == REF_ES && c->s.dtype == 2) {
        h = bf16_from_float(f);
        memcpy(p + 2 * i, &h, 2);
    } else {
        memcpy(p + 4 * i, &f, 4);
    }
}

/* Host buffer <- v, then v <- host buffer: v holds exactly what the kernel
 * will read (bf16- or f32-rounded). */
static void encode_all(Case *c)
{
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < c->d.n[b]; k++) {
            const RefArray *a = &c->d.a[b][k];
            unsigned char *p = arr_ptr(c->host[b], c, b, k);
            for (int64_t i = 0; i < a->n; i++)
                put_elem(c, p, a->type, i, c->v[b][k][i]);
            for (int64_t i = 0; i < a->n; i++)
                c->v[b][k][i] = get_elem(c, p, a->type, i);
        }
}

static void decode(const Case *c, const unsigned char *base, int b, int k, double *dst)
{
    const RefArray *a = &c->d.a[b][k];
    const unsigned char *p = base + c->lay[b].offset[k];
    for (int64_t i = 0; i < a->n; i++)
        dst[i] = get_elem(c, p, a->type, i);
}

/* ---- set-up --------------------------------------------------------------- */

static const char *dtype_name(int dt)
{
    return dt == 0 ? "f32" : dt == 1 ? "f16" : "bf16";
}

static void case_name(Case *c)
{
    const ApprofOpShape *s = &c->s;
    int len = snprintf(c->name, sizeof c->name, "%s %s %s (", ref_op_name(s->op),
                       s->backward ? "bwd" : "fwd", dtype_name(s->dtype));
    char *p = c->name + len;
    size_t left = sizeof c->name - (size_t)len;
    if (s->op == APPROF_CUDA_OP_BATCH_NORM || s->op == APPROF_CUDA_OP_MAX_POOL ||
        s->op == APPROF_CUDA_OP_AVG_POOL) {
        len = snprintf(p, left, "n %lld, c %lld, h %lld, w %lld", (long long)s->n,
                       (long long)s->c, (long long)s->h, (long long)s->w);
        if (s->op != APPROF_CUDA_OP_BATCH_NORM && len > 0 && (size_t)len < left)
            snprintf(p + len, left - (size_t)len, ", window %dx%d, stride %d, pad %d -> %lldx%lld)",
                     s->r, s->s, s->stride[0], s->pad[0], (long long)s->oh, (long long)s->ow);
        else if (len > 0 && (size_t)len < left)
            snprintf(p + len, left - (size_t)len, ")");
    } else {
        snprintf(p, left, "rows %lld, cols %lld, extent %lld%s)", (long long)s->rows,
                 (long long)s->cols, (long long)s->extent,
                 s->op == APPROF_CUDA_OP_DROPOUT ? ", rate 0.1" : "");
    }
}

/* The layout against op_shape.h's arrays: count, sizes, 256-byte alignment. */
static int check_layout(Case *c)
{
    for (int b = 0; b < 3; b++) {
        if (c->lay[b].n != c->d.n[b]) {
            FAIL(c, "approf_op_layout: %s has %d arrays, op_shape.h documents %d", buf_name[b],
                 c->lay[b].n, c->d.n[b]);
            return -1;
        }
        for (int k = 0; k < c->d.n[b]; k++) {
            const RefArray *a = &c->d.a[b][k];
            int64_t want = a->n * elem_size(a->type, c->s.dtype);
            if (c->lay[b].bytes[k] != want || c->lay[b].offset[k] % 256 ||
                c->lay[b].offset[k] + want > c->lay[b].total) {
                FAIL(c, "approf_op_layout: %s.%s at %lld, %lld bytes; want %lld bytes, aligned",
                     buf_name[b], a->name, (long long)c->lay[b].offset[k],
                     (long long)c->lay[b].bytes[k], (long long)want);
                return -1;
            }
        }
    }
    return 0;
}

/* Host and device memory and the initial values; -1 after a failure. */
static int case_setup(Case *c)
{
    uint64_t st = 0x5eed0000u + ++case_counter;
    if (ref_describe(&c->s, &c->d) < 0 || approf_op_layout(&c->s, c->lay) < 0) {
        FAIL(c, "no layout (ref_describe or approf_op_layout refused the shape)");
        return -1;
    }
    if (check_layout(c) < 0)
        return -1;
    for (int b = 0; b < 3; b++) {
        size_t total = (size_t)c->lay[b].total;
        c->host[b] = calloc(total ? total : 1, 1);
        c->saved[b] = calloc(total ? total : 1, 1);
        c->init[b] = calloc(total ? total : 1, 1);
        if (!c->host[b] || !c->saved[b] || !c->init[b])
            abort();
        for (int k = 0; k < c->d.n[b]; k++) {
            size_t n = (size_t)c->d.a[b][k].n;
            c->v[b][k] = calloc(n, sizeof(double));
            c->r[b][k] = calloc(n, sizeof(double));
            c->got[b][k] = calloc(n, sizeof(double));
            if (!c->v[b][k] || !c->r[b][k] || !c->got[b][k])
                abort();
            /* Outputs get random values too: a kernel that accumulates into
             * what it should overwrite, or skips elements, shows. The odd
             * numerator keeps every value away from 0 (dropout's marker). */
            for (size_t i = 0; i < n; i++)
                c->v[b][k][i] = c->d.a[b][k].role == ROLE_IDX
                                    ? -1
                                    : (double)((ref_rand(&st) >> 40) * 2 + 1) / 16777216.0 - 1;
        }
        if (total && CK(c, cudaMalloc(&c->dev[b], total)) < 0)
            return -1;
    }
    encode_all(c);
    ref_prepare(&c->s, &c->d, c->v, st);
    encode_all(c);
    return 0;
}

static void case_free(Case *c)
{
    for (int b = 0; b < 3; b++) {
        if (c->dev[b])
            cudaFree(c->dev[b]);
        free(c->host[b]);
        free(c->saved[b]);
        free(c->init[b]);
        for (int k = 0; k < APPROF_OP_MAX_ARRAYS; k++) {
            free(c->v[b][k]);
            free(c->r[b][k]);
            free(c->got[b][k]);
        }
    }
}

static int transfer(Case *c, int to_device)
{
    for (int b = 0; b < 3; b++) {
        size_t total = (size_t)c->lay[b].total;
        if (total && to_device &&
            CK(c, cudaMemcpyAsync(c->dev[b], c->host[b], total, cudaMemcpyHostToDevice,
                                  stream)) < 0)
            return -1;
        if (total && !to_device &&
            CK(c, cudaMemcpyAsync(c->host[b], c->dev[b], total, cudaMemcpyDeviceToHost,
                                  stream)) < 0)
            return -1;
    }
    return CK(c, cudaStreamSynchronize(stream));
}

/* Uploads, runs approf_cuda_op_init and checks it wrote ids in range and
 * nothing else. */
static int case_init(Case *c)
{
    for (int b = 0; b < 3; b++)
        memcpy(c->saved[b], c->host[b], (size_t)c->lay[b].total);
    if (transfer(c, 1) < 0 ||
        CK(c, approf_cuda_op_init(&c->s, c->dev[0], c->dev[1], c->dev[2], stream)) < 0 ||
        transfer(c, 0) < 0)
        return -1;
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < c->d.n[b]; k++) {
            const RefArray *a = &c->d.a[b][k];
            if (a->role != ROLE_IDX) {
                if (memcmp(arr_ptr(c->host[b], c, b, k), arr_ptr(c->saved[b], c, b, k),
                           (size_t)c->lay[b].bytes[k])) {
                    FAIL(c, "approf_cuda_op_init changed %s.%s", buf_name[b], a->name);
                    return -1;
                }
                continue;
            }
            decode(c, c->host[b], b, k, c->v[b][k]);
            for (int64_t i = 0; i < a->n; i++)
                if (!(c->v[b][k][i] >= 0 && c->v[b][k][i] < (double)a->lim)) {
                    FAIL(c, "approf_cuda_op_init: %s.%s[%lld] = %.0f, not in [0, %lld)",
                         buf_name[b], a->name, (long long)i, c->v[b][k][i], (long long)a->lim);
                    return -1;
                }
        }
    return 0;
}

static int case_launch(Case *c)
{
    if (CK(c, approf_cuda_launch_op(&c->s, c->dev[0], c->dev[1], c->dev[2], stream)) < 0)
        return -1;
    return transfer(c, 0);
}

/* ---- checks --------------------------------------------------------------- */

/* got[b][k] against r[b][k]: |got - want| <= tol * (|want| + rms(want)); the
 * rms term keeps the bound sane where a value cancels to near 0. */
static void compare(Case *c, int b, int k, const char *run)
{
    const RefArray *a = &c->d.a[b][k];
    const double *got = c->got[b][k], *want = c->r[b][k];
    double ss = 0, rms;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < a->n; i++)
        ss += want[i] * want[i];
    rms = sqrt(ss / (double)a->n);
    for (int64_t i = 0; i < a->n; i++)
        if (!(fabs(got[i] - want[i]) <= c->tol * (fabs(want[i]) + rms))) {
            first = first < 0 ? i : first;
            bad++;
        }
    if (bad)
        FAIL(c, "%s: %s.%s[%lld]: got %.9g want %.9g (%lld of %lld outside %g relative)", run,
             buf_name[b], a->name, (long long)first, got[first], want[first], (long long)bad,
             (long long)a->n, c->tol);
}

/* Dropout forward: each y is 0 or x / (1 - p), and about p of them are 0. */
static void check_dropout(Case *c, const char *run)
{
    const double *x = c->v[0][0], *y = c->got[1][0];
    double scale = 1.0 / (1.0 - (double)c->s.rate), frac;
    int64_t n = c->d.a[1][0].n, zeros = 0, bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        if (y[i] == 0) {
            zeros++;
        } else if (!(fabs(y[i] - x[i] * scale) <= c->tol * fabs(x[i] * scale))) {
            first = first < 0 ? i : first;
            bad++;
        }
    }
    if (bad)
        FAIL(c, "%s: out.y[%lld]: got %.9g, neither 0 nor x/(1-p) = %.9g (%lld of %lld)", run,
             (long long)first, y[first], x[first] * scale, (long long)bad, (long long)n);
    frac = (double)zeros / (double)n;
    if (fabs(frac - (double)c->s.rate) > DROP_SLACK)
        FAIL(c, "%s: %.4f of the outputs dropped, want %.2f +- %.2f", run, frac,
             (double)c->s.rate, DROP_SLACK);
}

static int checked(int role)
{
    return role == ROLE_OUT || role == ROLE_SCATTER || role == ROLE_SUM || role == ROLE_KEEP ||
           role == ROLE_INOUT;
}

/* The second run against the first: bit for bit, except what atomics may
 * sum in another order (scatter-adds, sums: against the reference again) and
 * dropout's draw (its properties again). */
static void check_rerun(Case *c, int random)
{
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < c->d.n[b]; k++) {
            const RefArray *a = &c->d.a[b][k];
            int64_t es = elem_size(a->type, c->s.dtype);
            const unsigned char *p1 = arr_ptr(c->saved[b], c, b, k);
            const unsigned char *p2 = arr_ptr(c->host[b], c, b, k);
            if (!checked(a->role))
                continue;
            decode(c, c->host[b], b, k, c->got[b][k]);
            if (random) {
                check_dropout(c, "run 2");
                continue;
            }
            if (a->role == ROLE_SCATTER || a->role == ROLE_SUM) {
                compare(c, b, k, "run 2");
                continue;
            }
            for (int64_t i = 0; i < a->n; i++)
                if (memcmp(p1 + i * es, p2 + i * es, (size_t)es)) {
                    FAIL(c, "not deterministic: %s.%s[%lld] is %.9g in run 1, %.9g in run 2",
                         buf_name[b], a->name, (long long)i, get_elem(c, p1, a->type, i),
                         get_elem(c, p2, a->type, i));
                    break;
                }
        }
}

static int in_place(const Case *c)
{
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < c->d.n[b]; k++)
            if (c->d.a[b][k].role == ROLE_INOUT)
                return 1;
    return 0;
}

static void run_case(const ApprofOpShape *s)
{
    Case c;
    int random;

    memset(&c, 0, sizeof c);
    c.s = *s;
    c.tol = s->dtype == 0 ? TOL_F32 : TOL_BF16;
    case_name(&c);
    cases_run++;
    if (case_setup(&c) < 0 || case_init(&c) < 0)
        goto out;
    for (int b = 0; b < 3; b++)
        memcpy(c.init[b], c.host[b], (size_t)c.lay[b].total);
    random = ref_compute(&c.s, c.v, c.r);
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < c.d.n[b]; k++)
            if (c.d.a[b][k].role == ROLE_KEEP)
                memcpy(c.r[b][k], c.v[b][k], (size_t)c.d.a[b][k].n * sizeof(double));
    if (case_launch(&c) < 0)
        goto out;
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < c.d.n[b]; k++) {
            if (!checked(c.d.a[b][k].role))
                continue;
            decode(&c, c.host[b], b, k, c.got[b][k]);
            if (random)
                check_dropout(&c, "run 1");
            else
                compare(&c, b, k, "run 1");
        }
    for (int b = 0; b < 3; b++)
        memcpy(c.saved[b], c.host[b], (size_t)c.lay[b].total);
    /* a kernel that updates its inputs in place starts again from them */
    if (in_place(&c)) {
        for (int b = 0; b < 3; b++)
            memcpy(c.host[b], c.init[b], (size_t)c.lay[b].total);
        if (transfer(&c, 1) < 0)
            goto out;
    }
    if (case_launch(&c) < 0)
        goto out;
    check_rerun(&c, random);
out:
    if (!c.failed)
        CU_PASS("case ok");
    case_free(&c);
}

/* ---- the cases ------------------------------------------------------------ */

enum { F32 = 1u << 0, BF16 = 1u << 2, BOTH = F32 | BF16 };

static ApprofOpShape rowwise(int op, int64_t rows, int64_t cols, int64_t extent)
{
    ApprofOpShape s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.rows = rows;
    s.cols = cols;
    s.extent = extent;
    s.rate = op == APPROF_CUDA_OP_DROPOUT ? DROP_RATE : 0.0f;
    return s;
}

/* NCHW 3x5x13x11 (odd sizes), pooled 3x3, stride 2, pad 1: 7x6 out. */
static ApprofOpShape nchw(int op)
{
    ApprofOpShape s = rowwise(op, 3 * 5, 13 * 11, 0);
    s.n = 3;
    s.c = 5;
    s.h = 13;
    s.w = 11;
    s.r = s.s = 3;
    s.stride[0] = s.stride[1] = 2;
    s.pad[0] = s.pad[1] = 1;
    s.oh = (s.h + 2 * s.pad[0] - s.r) / s.stride[0] + 1;
    s.ow = (s.w + 2 * s.pad[1] - s.s) / s.stride[1] + 1;
    return s;
}

/* s forward then backward, in each dtype of the mask fwd_dt (forward) and
 * bwd_dt (backward). */
static void run_dirs(ApprofOpShape s, unsigned fwd_dt, unsigned bwd_dt)
{
    for (int dt = 0; dt <= 2; dt++)
        for (int bw = 0; bw <= 1; bw++)
            if ((bw ? bwd_dt : fwd_dt) & (1u << dt)) {
                s.dtype = dt;
                s.backward = bw;
                run_case(&s);
            }
}

/* The row-wise reductions at an odd row length and at 4096 (many warps per row). */
static void run_reduction(int op)
{
    run_dirs(rowwise(op, 37, 300, 0), BOTH, BOTH);
    run_dirs(rowwise(op, 37, 4096, 0), BOTH, BOTH);
}

static void test_layer_norm(void) { run_reduction(APPROF_CUDA_OP_LAYER_NORM); }
static void test_rms_norm(void) { run_reduction(APPROF_CUDA_OP_RMS_NORM); }
static void test_softmax(void) { run_reduction(APPROF_CUDA_OP_SOFTMAX); }
static void test_cross_entropy(void) { run_reduction(APPROF_CUDA_OP_CROSS_ENTROPY); }

static void test_activations(void)
{
    run_dirs(rowwise(APPROF_CUDA_OP_GELU, 37, 300, 0), BOTH, BOTH);
    run_dirs(rowwise(APPROF_CUDA_OP_SILU, 37, 300, 0), BOTH, BOTH);
    run_dirs(rowwise(APPROF_CUDA_OP_RELU, 37, 300, 0), BOTH, BOTH);
}

/* 100k elements: the dropped fraction's standard deviation is ~0.001. */
static void test_dropout(void) { run_dirs(rowwise(APPROF_CUDA_OP_DROPOUT, 100, 1000, 0), BOTH, BOTH); }

static void test_add_mul(void)
{
    for (int op = APPROF_CUDA_OP_ADD; op <= APPROF_CUDA_OP_MUL; op++) {
        run_dirs(rowwise(op, 37, 300, 37 * 300), BOTH, BOTH); /* same shape */
        run_dirs(rowwise(op, 37, 300, 300), BOTH, BOTH);      /* a row broadcast */
    }
}

static void test_bias(void) { run_dirs(rowwise(APPROF_CUDA_OP_BIAS, 37, 300, 0), BOTH, BOTH); }

static void test_embedding(void)
{
    run_dirs(rowwise(APPROF_CUDA_OP_EMBEDDING, 37, 300, 50), BOTH, BOTH);
    /* 512 ids over 50 rows: every row hit ~10 times, so the atomics collide. */
    run_dirs(rowwise(APPROF_CUDA_OP_EMBEDDING, 512, 64, 50), BOTH, BOTH);
}

static void test_batch_norm(void) { run_dirs(nchw(APPROF_CUDA_OP_BATCH_NORM), BOTH, BOTH); }

static void test_pooling(void)
{
    /* No bf16 max-pool backward: bf16 rounding makes window maxima tie, and
     * which tied element gets the gradient is the kernel's choice. */
    run_dirs(nchw(APPROF_CUDA_OP_MAX_POOL), BOTH, F32);
    run_dirs(nchw(APPROF_CUDA_OP_AVG_POOL), BOTH, BOTH);
    run_dirs(rowwise(APPROF_CUDA_OP_GLOBAL_POOL, 15, 143, 0), BOTH, BOTH);
    run_dirs(rowwise(APPROF_CUDA_OP_GLOBAL_POOL, 37, 4096, 0), BOTH, BOTH);
}

static void test_rope(void)
{
    run_dirs(rowwise(APPROF_CUDA_OP_ROPE, 37, 300, 16), BOTH, BOTH); /* position = row % 16 */
    run_dirs(rowwise(APPROF_CUDA_OP_ROPE, 37, 300, 0), BOTH, BOTH);  /* position = row */
}

/* The optimizer step (forward only), over 5 chunks of 65536 and a part. */
static void test_adam(void)
{
    run_dirs(rowwise(APPROF_CUDA_OP_ADAM, 1, 4 * 65536 + 12345, 0), BOTH, 0);
}

/* ---- grouped GEMM (grouped_gemm.c) ---------------------------------------- */

/* One expert GEMM through the module's grouped GEMM (cuda_grouped_prepare
 * and _run: the plan, the device pointers, cublasGemmGroupedBatchedEx)
 * against ref_expert_gemm, which knows the layout from the semantics only.
 * Every buffer byte gets a value, so a GEMM that reads outside its expert's
 * operands shows. */
static void run_grouped(int dt, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t experts,
                        int experts_k)
{
    Case c; /* for the failure messages and the element encoding */
    ApprofKernel kern;
    ApprofKernelBuffers kb;
    ApprofGroupedGemm plan;
    CudaCtx ctx;
    CudaOp op;
    char err[256];
    double *v[3] = {NULL, NULL, NULL}, *want = NULL, *got = NULL;
    unsigned char *h[3] = {NULL, NULL, NULL};
    uint64_t st = 0x6e6e0000u + ++case_counter;
    int64_t n_el[3], es = dt == 0 ? 4 : 2;

    memset(&c, 0, sizeof c);
    memset(&kern, 0, sizeof kern);
    memset(&ctx, 0, sizeof ctx);
    memset(&op, 0, sizeof op);
    memset(&plan, 0, sizeof plan);
    c.s.dtype = dt;
    c.tol = dt == 0 ? TOL_F32 : TOL_BF16;
    snprintf(c.name, sizeof c.name, "grouped GEMM %s (batch %lld, %lld x %lld x %lld, %lld experts%s)",
             dtype_name(dt), (long long)batch, (long long)m, (long long)n, (long long)k,
             (long long)experts, experts_k ? ", tokens in k" : "");
    cases_run++;
    kern.kind = APPROF_K_GEMM;
    kern.batch = batch;
    kern.m = m;
    kern.n = n;
    kern.k = k;
    kern.experts = experts;
    kern.experts_k = experts_k;
    if (approf_kernel_buffers(&kern, (ApprofDtype)dt, &kb) < 0 ||
        approf_grouped_gemm_plan(&kern, (ApprofDtype)dt, 0, NULL, &plan) < 0) {
        FAIL(&c, "no buffers or no grouped plan");
        goto out;
    }
    for (int b = 0; b < 3; b++) {
        n_el[b] = kb.bytes[b] / es;
        v[b] = calloc((size_t)n_el[b], sizeof(double));
        h[b] = calloc((size_t)kb.bytes[b], 1);
        if (!v[b] || !h[b])
            abort();
        for (int64_t i = 0; i < n_el[b]; i++) {
            put_elem(&c, h[b], REF_ES, i, (double)((ref_rand(&st) >> 40) * 2 + 1) / 16777216.0 - 1);
            v[b][i] = get_elem(&c, h[b], REF_ES, i);
        }
        if (CK(&c, cudaMalloc(&op.buf[b], (size_t)kb.bytes[b])) < 0 ||
            CK(&c, cudaMemcpy(op.buf[b], h[b], (size_t)kb.bytes[b], cudaMemcpyHostToDevice)) < 0)
            goto out;
    }
    want = calloc((size_t)n_el[2], sizeof(double));
    got = calloc((size_t)n_el[2], sizeof(double));
    if (!want || !got)
        abort();
    ref_expert_gemm(batch, m, n, k, experts, experts_k, v[0], v[1], want);
    ctx.stream = stream;
    if (cublasCreate(&ctx.blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(ctx.blas, stream) != CUBLAS_STATUS_SUCCESS) {
        FAIL(&c, "cublasCreate");
        goto out;
    }
    op.k = kern;
    err[0] = '\0';
    if (cuda_grouped_prepare(&ctx, &op, (ApprofDtype)dt, NULL, 0, err, sizeof err) != 0 ||
        cuda_grouped_run(&ctx, &op, err, sizeof err) < 0) {
        FAIL(&c, "%s", err[0] ? err : "cuda_grouped_prepare: not a grouped GEMM");
        goto out;
    }
    if (CK(&c, cudaMemcpyAsync(h[2], op.buf[2], (size_t)kb.bytes[2], cudaMemcpyDeviceToHost,
                               stream)) < 0 ||
        CK(&c, cudaStreamSynchronize(stream)) < 0)
        goto out;
    {
        /* compare() over C's used part, as array 0 of "out" */
        int64_t used = plan.elems_c;
        for (int64_t i = 0; i < used; i++)
            got[i] = get_elem(&c, h[2], REF_ES, i);
        c.d.n[1] = 1;
        c.d.a[1][0].name = "C";
        c.d.a[1][0].n = used;
        c.got[1][0] = got;
        c.r[1][0] = want;
        compare(&c, 1, 0, "run 1");
        c.got[1][0] = c.r[1][0] = NULL;
    }
out:
    if (!c.failed)
        CU_PASS("case ok");
    cuda_grouped_release(&op);
    if (ctx.blas)
        cublasDestroy(ctx.blas);
    approf_grouped_gemm_free(&plan);
    for (int b = 0; b < 3; b++) {
        if (op.buf[b])
            cudaFree(op.buf[b]);
        free(v[b]);
        free(h[b]);
    }
    free(want);
    free(got);
}

/* Mixtral's experts in small: 2 samples x 3 experts of 5 slots, forward /
 * input gradient (tokens in m) and weight gradient (tokens in k); odd sizes. */
static void test_grouped_gemm(void)
{
    for (int dt = 0; dt <= 2; dt += 2) {
        run_grouped(dt, 6, 5, 24, 40, 3, 0);
        run_grouped(dt, 6, 5, 40, 24, 3, 0);
        run_grouped(dt, 3, 40, 24, 10, 3, 1);
        run_grouped(dt, 8, 33, 17, 29, 8, 0);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"layer_norm", test_layer_norm}, {"rms_norm", test_rms_norm},
        {"softmax", test_softmax}, {"activations", test_activations},
        {"dropout", test_dropout}, {"add_mul", test_add_mul},
        {"bias", test_bias}, {"embedding", test_embedding},
        {"cross_entropy", test_cross_entropy}, {"batch_norm", test_batch_norm},
        {"pooling", test_pooling}, {"rope", test_rope},
        {"adam", test_adam}, {"grouped_gemm", test_grouped_gemm},
    };
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);

    if (e != cudaSuccess || ndev == 0) {
        printf("skipped: no CUDA device (%s)\n", cudaGetErrorString(e));
        return 77;
    }
    e = cudaStreamCreate(&stream);
    if (e != cudaSuccess) {
        printf("cudaStreamCreate: %s\n", cudaGetErrorString(e));
        return 1;
    }
    int rc = CUNIT_RUN("cuda-kernels", tests);
    printf("%d cases\n", cases_run);
    cudaStreamDestroy(stream);
    return rc;
}
