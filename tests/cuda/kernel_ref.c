/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU reference of the CUDA kernels (see kernel_ref.h). Everything is in
 * double so that the only error a comparison sees is the kernel's own (f32
 * math, bf16 stores). The formulas follow op_shape.h word for word; where a
 * backward reads a saved statistic (mean, rstd, lse) the reference reads the
 * same saved value the kernel gets.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_ref.h"

#define NORM_EPS 1e-5
#define ROPE_THETA 10000.0

const char *ref_op_name(int op)
{
    if (op == APPROF_CUDA_OP_ADAM)
        return "ADAM";
    static const char *const names[APPROF_CUDA_OP_COUNT] = {
        "NONE", "LAYER_NORM", "RMS_NORM", "SOFTMAX", "GELU", "SILU", "RELU", "DROPOUT",
        "ADD", "MUL", "BIAS", "EMBEDDING", "CROSS_ENTROPY", "BATCH_NORM", "MAX_POOL",
        "AVG_POOL", "GLOBAL_POOL", "ROPE"};
    return op >= 0 && op < APPROF_CUDA_OP_COUNT ? names[op] : "?";
}

static void add(RefOp *d, int buf, const char *name, int type, int role, int64_t n)
{
    RefArray *a = &d->a[buf][d->n[buf]++];
    a->name = name;
    a->type = type;
    a->role = role;
    a->n = n;
    a->lim = 0;
}

int ref_describe(const ApprofOpShape *s, RefOp *d)
{
    int64_t n = s->rows * s->cols, e = s->extent, x = s->n * s->c * s->h * s->w;
    int bw = s->backward != 0, rms = s->op == APPROF_CUDA_OP_RMS_NORM;

    memset(d, 0, sizeof *d);
    switch (s->op) {
    case APPROF_CUDA_OP_LAYER_NORM: case APPROF_CUDA_OP_RMS_NORM:
        add(d, 0, "x", REF_ES, ROLE_IN, n);
        if (bw)
            add(d, 0, "dy", REF_ES, ROLE_IN, n);
        add(d, 1, bw ? "dx" : "y", REF_ES, ROLE_OUT, n);
        add(d, 2, "gamma", REF_ES, ROLE_IN, s->cols);
        add(d, 2, "beta", REF_ES, ROLE_IN, s->cols);
        /* RMS norm "as LAYER_NORM with mean 0": whether its forward writes
         * mean (zeros) is not said, so it is not checked; its backward gets
         * zeros there, right under either reading. */
        add(d, 2, "mean", REF_F32, bw ? ROLE_STAT : rms ? ROLE_FREE : ROLE_OUT, s->rows);
        add(d, 2, "rstd", REF_F32, bw ? ROLE_STAT : ROLE_OUT, s->rows);
        if (bw) {
            add(d, 2, "dgamma", REF_F32, ROLE_SUM, s->cols);
            add(d, 2, "dbeta", REF_F32, rms ? ROLE_KEEP : ROLE_SUM, s->cols);
        }
        return 0;
    case APPROF_CUDA_OP_SOFTMAX: case APPROF_CUDA_OP_GELU: case APPROF_CUDA_OP_SILU:
    case APPROF_CUDA_OP_RELU: case APPROF_CUDA_OP_DROPOUT: {
        int saved_y = s->op == APPROF_CUDA_OP_SOFTMAX || s->op == APPROF_CUDA_OP_RELU ||
                      s->op == APPROF_CUDA_OP_DROPOUT;
        add(d, 0, bw && saved_y ? "y" : "x", REF_ES, ROLE_IN, n);
        if (bw)
            add(d, 0, "dy", REF_ES, ROLE_IN, n);
        add(d, 1, bw ? "dx" : "y", REF_ES, ROLE_OUT, n);
        return 0;
    }
    case APPROF_CUDA_OP_ADD: case APPROF_CUDA_OP_MUL:
        if (!bw) {
            add(d, 0, "a", REF_ES, ROLE_IN, n);
            add(d, 0, "b", REF_ES, ROLE_IN, e);
            add(d, 1, "y", REF_ES, ROLE_OUT, n);
        } else if (s->op == APPROF_CUDA_OP_ADD) {
            add(d, 0, "dy", REF_ES, ROLE_IN, n);
            /* E == R*C: "none is run", so db keeps what it held. */
            add(d, 1, "db", e < n ? REF_F32 : REF_ES, e < n ? ROLE_SUM : ROLE_KEEP, e);
        } else {
            add(d, 0, "a", REF_ES, ROLE_IN, n);
            add(d, 0, "b", REF_ES, ROLE_IN, e);
            add(d, 0, "dy", REF_ES, ROLE_IN, n);
            add(d, 1, "da", REF_ES, ROLE_OUT, n);
            add(d, 1, "db", e < n ? REF_F32 : REF_ES, e < n ? ROLE_SUM : ROLE_OUT, e);
        }
        return 0;
    case APPROF_CUDA_OP_BIAS:
        add(d, 0, bw ? "dy" : "x", REF_ES, ROLE_IN, n);
        if (bw) {
            add(d, 1, "db", REF_F32, ROLE_SUM, s->cols);
        } else {
            add(d, 1, "y", REF_ES, ROLE_OUT, n);
            add(d, 2, "bias", REF_ES, ROLE_IN, s->cols);
        }
        return 0;
    case APPROF_CUDA_OP_EMBEDDING:
        add(d, 0, "ids", REF_I32, ROLE_IDX, s->rows);
        d->a[0][0].lim = e;
        if (bw) {
            add(d, 0, "dy", REF_ES, ROLE_IN, n);
            add(d, 1, "dtable", REF_F32, ROLE_SCATTER, e * s->cols);
        } else {
            add(d, 1, "y", REF_ES, ROLE_OUT, n);
            add(d, 2, "table", REF_ES, ROLE_IN, e * s->cols);
        }
        return 0;
    case APPROF_CUDA_OP_CROSS_ENTROPY:
        add(d, 0, "logits", REF_ES, ROLE_IN, n);
        if (bw)
            add(d, 1, "dlogits", REF_ES, ROLE_OUT, n);
        else
            add(d, 1, "loss", REF_F32, ROLE_OUT, s->rows);
        add(d, 2, "labels", REF_I32, ROLE_IDX, s->rows);
        d->a[2][0].lim = s->cols;
        add(d, 2, "lse", REF_F32, bw ? ROLE_STAT : ROLE_OUT, s->rows);
        return 0;
    case APPROF_CUDA_OP_BATCH_NORM:
        /* Every output goes through per-channel sums over the whole batch
         * (ROLE_SUM: a kernel may add chunks' sums atomically). */
        add(d, 0, "x", REF_ES, ROLE_IN, x);
        if (bw)
            add(d, 0, "dy", REF_ES, ROLE_IN, x);
        add(d, 1, bw ? "dx" : "y", REF_ES, ROLE_SUM, x);
        add(d, 2, "gamma", REF_F32, ROLE_IN, s->c);
        add(d, 2, "beta", REF_F32, ROLE_IN, s->c);
        /* Not documented as written by the forward (unlike layer norm's). */
        add(d, 2, "mean", REF_F32, bw ? ROLE_STAT : ROLE_FREE, s->c);
        add(d, 2, "rstd", REF_F32, bw ? ROLE_STAT : ROLE_FREE, s->c);
        add(d, 2, "running_mean", REF_F32, ROLE_FREE, s->c);
        add(d, 2, "running_var", REF_F32, ROLE_FREE, s->c);
        if (bw) {
            add(d, 2, "dgamma", REF_F32, ROLE_SUM, s->c);
            add(d, 2, "dbeta", REF_F32, ROLE_SUM, s->c);
        }
        return 0;
    case APPROF_CUDA_OP_MAX_POOL: case APPROF_CUDA_OP_AVG_POOL:
        add(d, 0, "x", REF_ES, ROLE_IN, x);
        if (bw) {
            add(d, 0, "dy", REF_ES, ROLE_IN, s->n * s->c * s->oh * s->ow);
            add(d, 1, "dx", REF_F32, ROLE_SCATTER, x);
        } else {
            add(d, 1, "y", REF_ES, ROLE_OUT, s->n * s->c * s->oh * s->ow);
        }
        return 0;
    case APPROF_CUDA_OP_GLOBAL_POOL:
        add(d, 0, bw ? "dy" : "x", REF_ES, ROLE_IN, bw ? s->rows : n);
        add(d, 1, bw ? "dx" : "y", REF_ES, ROLE_OUT, bw ? n : s->rows);
        return 0;
    case APPROF_CUDA_OP_ROPE:
        add(d, 0, bw ? "dy" : "x", REF_ES, ROLE_IN, n);
        add(d, 1, bw ? "dx" : "y", REF_ES, ROLE_OUT, n);
        return 0;
    case APPROF_CUDA_OP_ADAM:
        if (bw)
            return -1;
        add(d, 0, "g", REF_ES, ROLE_IN, n);
        /* f32: the parameter itself is read and written; 16-bit: written
         * from the f32 master */
        add(d, 1, "p", REF_ES, s->dtype == 0 ? ROLE_INOUT : ROLE_OUT, n);
        if (s->dtype != 0)
            add(d, 2, "master", REF_F32, ROLE_INOUT, n);
        add(d, 2, "m", REF_F32, ROLE_INOUT, n);
        add(d, 2, "v", REF_F32, ROLE_INOUT, n);
        return 0;
    default:
        return -1;
    }
}

/* ---- inputs --------------------------------------------------------------- */

uint64_t ref_rand(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Row-wise mean and rstd of R rows of C (mean 0 for RMS norm), as saved by
 * the forward. */
static void row_stats(const double *x, int64_t rows, int64_t cols, int rms, double *mean,
                      double *rstd)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double m = 0, var = 0;
        if (!rms) {
            for (int64_t j = 0; j < cols; j++)
                m += xr[j];
            m /= (double)cols;
        }
        for (int64_t j = 0; j < cols; j++)
            var += (xr[j] - m) * (xr[j] - m);
        mean[r] = m;
        rstd[r] = 1.0 / sqrt(var / (double)cols + NORM_EPS);
    }
}

/* Per-channel mean and rstd of NCHW x (biased variance over n, h, w). */
static void chan_stats(const ApprofOpShape *s, const double *x, double *mean, double *rstd)
{
    int64_t hw = s->h * s->w, m = s->n * hw;
    for (int64_t ch = 0; ch < s->c; ch++) {
        double sum = 0, var = 0;
        for (int64_t b = 0; b < s->n; b++)
            for (int64_t k = 0; k < hw; k++)
                sum += x[(b * s->c + ch) * hw + k];
        sum /= (double)m;
        for (int64_t b = 0; b < s->n; b++)
            for (int64_t k = 0; k < hw; k++) {
                double t = x[(b * s->c + ch) * hw + k] - sum;
                var += t * t;
            }
        mean[ch] = sum;
        rstd[ch] = 1.0 / sqrt(var / (double)m + NORM_EPS);
    }
}

static double row_lse(const double *x, int64_t cols)
{
    double mx = x[0], sum = 0;
    for (int64_t j = 1; j < cols; j++)
        mx = x[j] > mx ? x[j] : mx;
    for (int64_t j = 0; j < cols; j++)
        sum += exp(x[j] - mx);
    return mx + log(sum);
}

void ref_prepare(const ApprofOpShape *s, const RefOp *d, RefVals v, uint64_t seed)
{
    int64_t n0 = d->a[0][0].n;
    switch (s->op) {
    case APPROF_CUDA_OP_LAYER_NORM: case APPROF_CUDA_OP_RMS_NORM:
        if (s->backward)
            row_stats(v[0][0], s->rows, s->cols, s->op == APPROF_CUDA_OP_RMS_NORM, v[2][2],
                      v[2][3]);
        break;
    case APPROF_CUDA_OP_BATCH_NORM:
        if (s->backward)
            chan_stats(s, v[0][0], v[2][2], v[2][3]);
        break;
    case APPROF_CUDA_OP_CROSS_ENTROPY:
        if (s->backward)
            for (int64_t r = 0; r < s->rows; r++)
                v[2][1][r] = row_lse(v[0][0] + r * s->cols, s->cols);
        break;
    case APPROF_CUDA_OP_RELU:
        /* A ReLU output is never negative; about half of it is 0. */
        if (s->backward)
            for (int64_t i = 0; i < n0; i++)
                v[0][0][i] = v[0][0][i] > 0 ? v[0][0][i] : 0;
        break;
    case APPROF_CUDA_OP_DROPOUT:
        /* A dropout output: a tenth dropped (0), the rest any value. */
        if (s->backward)
            for (int64_t i = 0; i < n0; i++)
                if (((uint32_t)i * 2654435761u >> 16) % 10 == 0)
                    v[0][0][i] = 0;
        break;
    case APPROF_CUDA_OP_ADAM:
        /* A second moment is never negative. */
        for (int64_t i = 0; i < n0; i++) {
            double *v2 = s->dtype == 0 ? v[2][1] : v[2][2];
            v2[i] = fabs(v2[i]);
        }
        break;
    case APPROF_CUDA_OP_MAX_POOL: {
        /* Distinct values (a random permutation of an even grid), so that
         * every window has one maximum and the backward one destination. */
        int64_t *perm = malloc((size_t)n0 * sizeof *perm);
        uint64_t st = seed;
        if (!perm)
            abort();
        for (int64_t i = 0; i < n0; i++)
            perm[i] = i;
        for (int64_t i = n0 - 1; i > 0; i--) {
            int64_t j = (int64_t)(ref_rand(&st) % (uint64_t)(i + 1)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int64_t i = 0; i < n0; i++)
            v[0][0][perm[i]] = -1.0 + (2.0 * (double)i + 1.0) / (double)n0;
        free(perm);
        break;
    }
    default:
        break;
    }
}

/* ---- the operators -------------------------------------------------------- */

static void norm_rows(const ApprofOpShape *s, RefVals v, RefVals r)
{
    int64_t rows = s->rows, cols = s->cols;
    int rms = s->op == APPROF_CUDA_OP_RMS_NORM;
    const double *x = v[0][0], *gamma = v[2][0], *beta = v[2][1];

    if (!s->backward) {
        row_stats(x, rows, cols, rms, r[2][2], r[2][3]);
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
                r[1][0][i * cols + j] = (x[i * cols + j] - r[2][2][i]) * r[2][3][i] * gamma[j] +
                                        (rms ? 0 : beta[j]);
        return;
    }
    /* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma; RMS
     * norm has no mean term (its mean is 0, not a function of x). */
    const double *dy = v[0][1], *mean = v[2][2], *rstd = v[2][3];
    double *dx = r[1][0], *dgamma = r[2][4], *dbeta = r[2][5];
    for (int64_t j = 0; j < cols; j++)
        dgamma[j] = dbeta[j] = 0;
    for (int64_t i = 0; i < rows; i++) {
        double mg = 0, mgx = 0;
        for (int64_t j = 0; j < cols; j++) {
            double xh = (x[i * cols + j] - mean[i]) * rstd[i], g = dy[i * cols + j] * gamma[j];
            mg += g;
            mgx += g * xh;
            dgamma[j] += dy[i * cols + j] * xh;
            dbeta[j] += dy[i * cols + j];
        }
        mg = rms ? 0 : mg / (double)cols;
        mgx /= (double)cols;
        for (int64_t j = 0; j < cols; j++) {
            double xh = (x[i * cols + j] - mean[i]) * rstd[i], g = dy[i * cols + j] * gamma[j];
            dx[i * cols + j] = rstd[i] * (g - mg - xh * mgx);
        }
    }
}

static void batch_norm(const ApprofOpShape *s, RefVals v, RefVals r)
{
    int64_t hw = s->h * s->w, m = s->n * hw;
    const double *x = v[0][0], *gamma = v[2][0], *beta = v[2][1];
    double *stats = NULL;
    const double *mean = v[2][2], *rstd = v[2][3];

    if (!s->backward) {
        /* Training mode: the batch's own statistics. */
        stats = malloc(2 * (size_t)s->c * sizeof *stats);
        if (!stats)
            abort();
        chan_stats(s, x, stats, stats + s->c);
        mean = stats;
        rstd = stats + s->c;
    }
    for (int64_t ch = 0; ch < s->c; ch++) {
        double mg, mgx, sdy = 0, sdyx = 0;
        for (int64_t b = 0; b < s->n; b++)
            for (int64_t k = 0; k < hw; k++) {
                int64_t i = (b * s->c + ch) * hw + k;
                double xh = (x[i] - mean[ch]) * rstd[ch];
                if (!s->backward) {
                    r[1][0][i] = xh * gamma[ch] + beta[ch];
                    continue;
                }
                sdy += v[0][1][i];
                sdyx += v[0][1][i] * xh;
            }
        if (!s->backward)
            continue;
        r[2][6][ch] = sdyx;
        r[2][7][ch] = sdy;
        mg = gamma[ch] * sdy / (double)m;
        mgx = gamma[ch] * sdyx / (double)m;
        for (int64_t b = 0; b < s->n; b++)
            for (int64_t k = 0; k < hw; k++) {
                int64_t i = (b * s->c + ch) * hw + k;
                double xh = (x[i] - mean[ch]) * rstd[ch];
                r[1][0][i] = rstd[ch] * (v[0][1][i] * gamma[ch] - mg - xh * mgx);
            }
    }
    free(stats);
}

static void softmax(const ApprofOpShape *s, RefVals v, RefVals r)
{
    for (int64_t i = 0; i < s->rows; i++) {
        const double *x = v[0][0] + i * s->cols;
        double *out = r[1][0] + i * s->cols;
        if (!s->backward) {
            double lse = row_lse(x, s->cols);
            for (int64_t j = 0; j < s->cols; j++)
                out[j] = exp(x[j] - lse);
        } else {
            const double *dy = v[0][1] + i * s->cols;
            double dot = 0;
            for (int64_t j = 0; j < s->cols; j++)
                dot += dy[j] * x[j];
            for (int64_t j = 0; j < s->cols; j++)
                out[j] = x[j] * (dy[j] - dot);
        }
    }
}

/* f(x) and f'(x) of the pointwise activations. */
static double act(int op, double x, double *deriv)
{
    if (op == APPROF_CUDA_OP_GELU) {
        const double k = sqrt(2.0 / M_PI), a = 0.044715;
        double t = tanh(k * (x + a * x * x * x));
        *deriv = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * a * x * x);
        return 0.5 * x * (1 + t);
    }
    if (op == APPROF_CUDA_OP_SILU) {
        double sg = 1.0 / (1.0 + exp(-x));
        *deriv = sg * (1 + x * (1 - sg));
        return x * sg;
    }
    *deriv = x > 0 ? 1 : 0; /* RELU; its backward gets y, and y > 0 iff x > 0 */
    return x > 0 ? x : 0;
}

static void pointwise(const ApprofOpShape *s, RefVals v, RefVals r)
{
    int64_t n = s->rows * s->cols;
    double p = (double)s->rate;
    for (int64_t i = 0; i < n; i++) {
        double x = v[0][0][i], dfx, y;
        if (s->op == APPROF_CUDA_OP_DROPOUT) { /* backward only */
            r[1][0][i] = x != 0 ? v[0][1][i] / (1 - p) : 0;
            continue;
        }
        y = act(s->op, x, &dfx);
        r[1][0][i] = s->backward ? dfx * v[0][1][i] : y;
    }
}

static void binary(const ApprofOpShape *s, RefVals v, RefVals r)
{
    int64_t n = s->rows * s->cols, e = s->extent;
    int mul = s->op == APPROF_CUDA_OP_MUL;
    if (!s->backward) {
        for (int64_t i = 0; i < n; i++)
            r[1][0][i] = mul ? v[0][0][i] * v[0][1][i % e] : v[0][0][i] + v[0][1][i % e];
        return;
    }
    if (!mul) {
        if (e < n) {
            for (int64_t j = 0; j < e; j++)
                r[1][0][j] = 0;
            for (int64_t i = 0; i < n; i++)
                r[1][0][i % e] += v[0][0][i];
        }
        return;
    }
    for (int64_t j = 0; j < e; j++)
        r[1][1][j] = 0;
    for (int64_t i = 0; i < n; i++) {
        r[1][0][i] = v[0][2][i] * v[0][1][i % e];
        r[1][1][i % e] += v[0][2][i] * v[0][0][i];
    }
}

static void bias(const ApprofOpShape *s, RefVals v, RefVals r)
{
    int64_t c = s->cols, n = s->rows * c;
    if (s->backward)
        for (int64_t j = 0; j < c; j++)
            r[1][0][j] = 0;
    for (int64_t i = 0; i < n; i++) {
        if (s->backward)
            r[1][0][i % c] += v[0][0][i];
        else
            r[1][0][i] = v[0][0][i] + v[2][0][i % c];
    }
}

static void embedding(const ApprofOpShape *s, RefVals v, RefVals r)
{
    int64_t c = s->cols;
    if (s->backward)
        for (int64_t i = 0; i < s->extent * c; i++)
            r[1][0][i] = 0;
    for (int64_t row = 0; row < s->rows; row++) {
        int64_t id = (int64_t)v[0][0][row];
        for (int64_t j = 0; j < c; j++) {
            if (s->backward)
                r[1][0][id * c + j] += v[0][1][row * c + j];
            else
                r[1][0][row * c + j] = v[2][0][id * c + j];
        }
    }
}

static void cross_entropy(const ApprofOpShape *s, RefVals v, RefVals r)
{
    for (int64_t i = 0; i < s->rows; i++) {
        const double *x = v[0][0] + i * s->cols;
        int64_t label = (int64_t)v[2][0][i];
        if (!s->backward) {
            r[2][1][i] = row_lse(x, s->cols);
            r[1][0][i] = r[2][1][i] - x[label];
            continue;
        }
        for (int64_t j = 0; j < s->cols; j++)
            r[1][0][i * s->cols + j] = exp(x[j] - v[2][1][i]) - (j == label ? 1 : 0);
    }
}

static void pool(const ApprofOpShape *s, RefVals v, RefVals r)
{
    int max = s->op == APPROF_CUDA_OP_MAX_POOL;
    const double *x = v[0][0];
    if (s->backward)
        for (int64_t i = 0; i < s->n * s->c * s->h * s->w; i++)
            r[1][0][i] = 0;
    for (int64_t nc = 0; nc < s->n * s->c; nc++)
        for (int64_t oy = 0; oy < s->oh; oy++)
            for (int64_t ox = 0; ox < s->ow; ox++) {
                int64_t o = (nc * s->oh + oy) * s->ow + ox, arg = -1;
                double acc = max ? -INFINITY : 0;
                for (int64_t ky = 0; ky < s->r; ky++)
                    for (int64_t kx = 0; kx < s->s; kx++) {
                        int64_t iy = oy * s->stride[0] - s->pad[0] + ky;
                        int64_t ix = ox * s->stride[1] - s->pad[1] + kx;
                        int64_t i = (nc * s->h + iy) * s->w + ix;
                        if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w)
                            continue; /* padding: never the max, 0 in the sum */
                        if (!max && s->backward)
                            r[1][0][i] += v[0][1][o] / (double)(s->r * s->s);
                        else if (!max)
                            acc += x[i];
                        else if (x[i] > acc)
                            acc = x[i], arg = i;
                    }
                if (!s->backward)
                    r[1][0][o] = max ? acc : acc / (double)(s->r * s->s);
                else if (max && arg >= 0)
                    r[1][0][arg] += v[0][1][o];
            }
}

static void global_pool(const ApprofOpShape *s, RefVals v, RefVals r)
{
    for (int64_t i = 0; i < s->rows; i++) {
        double sum = 0;
        for (int64_t j = 0; j < s->cols; j++) {
            if (s->backward)
                r[1][0][i * s->cols + j] = v[0][0][i] / (double)s->cols;
            else
                sum += v[0][0][i * s->cols + j];
        }
        if (!s->backward)
            r[1][0][i] = sum / (double)s->cols;
    }
}

static void rope(const ApprofOpShape *s, RefVals v, RefVals r)
{
    int64_t c = s->cols, half = c / 2;
    for (int64_t i = 0; i < s->rows; i++) {
        double pos = (double)(s->extent > 0 ? i % s->extent : i);
        const double *x = v[0][0] + i * c;
        double *y = r[1][0] + i * c;
        for (int64_t j = 0; j < half; j++) {
            double a = pos * pow(ROPE_THETA, -2.0 * (double)j / (double)c);
            double cs = cos(a), sn = s->backward ? -sin(a) : sin(a); /* inverse: -angle */
            y[j] = x[j] * cs - x[j + half] * sn;
            y[j + half] = x[j + half] * cs + x[j] * sn;
        }
    }
}

/* op_shape.h's ADAM: one AdamW step at step 1, the constants it names. */
static void adam(const ApprofOpShape *s, RefVals v, RefVals r)
{
    const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
    int mixed = s->dtype != 0;
    int64_t n = s->rows * s->cols;
    for (int64_t i = 0; i < n; i++) {
        double g = v[0][0][i], p = mixed ? v[2][0][i] : v[1][0][i];
        double m = b1 * v[2][mixed][i] + (1 - b1) * g;
        double v2 = b2 * v[2][mixed + 1][i] + (1 - b2) * g * g;
        p -= lr * ((m / (1 - b1)) / (sqrt(v2 / (1 - b2)) + eps) + wd * p);
        r[1][0][i] = p;
        if (mixed)
            r[2][0][i] = p;
        r[2][mixed][i] = m;
        r[2][mixed + 1][i] = v2;
    }
}

void ref_expert_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t experts,
                     int experts_k, const double *a, const double *b, double *c)
{
    int64_t t = batch / experts * (experts_k ? k : m);
    int64_t rows = experts_k ? m : t, inner = experts_k ? t : k;
    for (int64_t e = 0; e < experts; e++) {
        const double *ae = a + e * inner * n, *be = b + e * rows * inner;
        double *ce = c + e * rows * n;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t q = 0; q < inner; q++)
                    acc += be[i * inner + q] * ae[q * n + j];
                ce[i * n + j] = acc;
            }
    }
}

int ref_compute(const ApprofOpShape *s, RefVals v, RefVals r)
{
    switch (s->op) {
    case APPROF_CUDA_OP_LAYER_NORM: case APPROF_CUDA_OP_RMS_NORM: norm_rows(s, v, r); break;
    case APPROF_CUDA_OP_SOFTMAX: softmax(s, v, r); break;
    case APPROF_CUDA_OP_DROPOUT:
        if (!s->backward)
            return 1;
        pointwise(s, v, r);
        break;
    case APPROF_CUDA_OP_GELU: case APPROF_CUDA_OP_SILU: case APPROF_CUDA_OP_RELU:
        pointwise(s, v, r);
        break;
    case APPROF_CUDA_OP_ADD: case APPROF_CUDA_OP_MUL: binary(s, v, r); break;
    case APPROF_CUDA_OP_BIAS: bias(s, v, r); break;
    case APPROF_CUDA_OP_EMBEDDING: embedding(s, v, r); break;
    case APPROF_CUDA_OP_CROSS_ENTROPY: cross_entropy(s, v, r); break;
    case APPROF_CUDA_OP_BATCH_NORM: batch_norm(s, v, r); break;
    case APPROF_CUDA_OP_MAX_POOL: case APPROF_CUDA_OP_AVG_POOL: pool(s, v, r); break;
    case APPROF_CUDA_OP_GLOBAL_POOL: global_pool(s, v, r); break;
    case APPROF_CUDA_OP_ROPE: rope(s, v, r); break;
    case APPROF_CUDA_OP_ADAM: adam(s, v, r); break;
    default: break;
    }
    return 0;
}
