/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU references for the fused attention (sdpa_ref.h): the direct form,
 * and an interpreter of approf_sdpa_graph's operations with the semantics
 * cuDNN's backend API documents (graph API: a matmul batched over the
 * leading dims, an operand with fewer heads broadcast to groups of
 * consecutive heads; pointwise operands broadcast where a dim is 1;
 * GEN_INDEX writes the index along its axis; BINARY_SELECT is t ? x : b; a
 * reduction sums or maxes the input over the dims its output is smaller
 * in; a reshape views the same elements through its output's dims and
 * strides).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdpa_ref.h"

/* ---- direct form ---------------------------------------------------------- */

#define QI(s, b, h, i, x) ((((b) * (s)->hq + (h)) * (s)->sq + (i)) * (s)->d + (x))
#define KI(s, b, h, j, x) ((((b) * (s)->hkv + (h)) * (s)->skv + (j)) * (s)->d + (x))

/* Softmax row i of (b, h) into p[skv]; returns the log-sum-exp. */
static double probs(const ApprofSdpaShape *s, const double *q, const double *k, int64_t b,
                    int64_t h, int64_t i, double *p)
{
    int64_t kh = h / (s->hq / s->hkv);
    double scale = approf_sdpa_scale(s->d), m = -INFINITY, z = 0;
    for (int64_t j = 0; j < s->skv; j++) {
        double acc = 0;
        for (int64_t x = 0; x < s->d; x++)
            acc += q[QI(s, b, h, i, x)] * k[KI(s, b, kh, j, x)];
        p[j] = s->causal && j > i ? -INFINITY : acc * scale;
        if (p[j] > m)
            m = p[j];
    }
    for (int64_t j = 0; j < s->skv; j++)
        z += (p[j] = exp(p[j] - m));
    for (int64_t j = 0; j < s->skv; j++)
        p[j] /= z;
    return m + log(z);
}

void sdpa_ref_forward(const ApprofSdpaShape *s, const double *q, const double *k, const double *v,
                      double *o, double *lse)
{
    double *p = malloc((size_t)s->skv * sizeof *p);
    if (!p)
        abort();
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t h = 0; h < s->hq; h++)
            for (int64_t i = 0; i < s->sq; i++) {
                int64_t kh = h / (s->hq / s->hkv);
                lse[(b * s->hq + h) * s->sq + i] = probs(s, q, k, b, h, i, p);
                for (int64_t x = 0; x < s->d; x++) {
                    double acc = 0;
                    for (int64_t j = 0; j < s->skv; j++)
                        acc += p[j] * v[KI(s, b, kh, j, x)];
                    o[QI(s, b, h, i, x)] = acc;
                }
            }
    free(p);
}

void sdpa_ref_backward(const ApprofSdpaShape *s, const double *q, const double *k,
                       const double *v, const double *o, const double *dO, const double *lse,
                       double *dq, double *dk, double *dv)
{
    double scale = approf_sdpa_scale(s->d);
    double *p = malloc((size_t)s->skv * sizeof *p), *ds = malloc((size_t)s->skv * sizeof *ds);
    if (!p || !ds)
        abort();
    (void)lse;
    memset(dk, 0, (size_t)(s->b * s->hkv * s->skv * s->d) * sizeof *dk);
    memset(dv, 0, (size_t)(s->b * s->hkv * s->skv * s->d) * sizeof *dv);
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t h = 0; h < s->hq; h++)
            for (int64_t i = 0; i < s->sq; i++) {
                int64_t kh = h / (s->hq / s->hkv);
                double D = 0;
                probs(s, q, k, b, h, i, p);
                for (int64_t x = 0; x < s->d; x++)
                    D += dO[QI(s, b, h, i, x)] * o[QI(s, b, h, i, x)];
                for (int64_t j = 0; j < s->skv; j++) {
                    double dp = 0;
                    for (int64_t x = 0; x < s->d; x++)
                        dp += dO[QI(s, b, h, i, x)] * v[KI(s, b, kh, j, x)];
                    ds[j] = p[j] * (dp - D) * scale;
                    for (int64_t x = 0; x < s->d; x++) {
                        dv[KI(s, b, kh, j, x)] += p[j] * dO[QI(s, b, h, i, x)];
                        dk[KI(s, b, kh, j, x)] += ds[j] * q[QI(s, b, h, i, x)];
                    }
                }
                for (int64_t x = 0; x < s->d; x++) {
                    double acc = 0;
                    for (int64_t j = 0; j < s->skv; j++)
                        acc += ds[j] * k[KI(s, b, kh, j, x)];
                    dq[QI(s, b, h, i, x)] = acc;
                }
            }
    free(p);
    free(ds);
}

/* ---- graph interpreter ---------------------------------------------------- */

typedef struct Mem {
    double *p;
    int own;
} Mem;

static int64_t span(const ApprofSdpaTensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < 4; i++)
        n += (t->dim[i] - 1) * t->stride[i];
    return n;
}

static int64_t off(const ApprofSdpaTensor *t, const int64_t idx[4])
{
    return idx[0] * t->stride[0] + idx[1] * t->stride[1] + idx[2] * t->stride[2] +
           idx[3] * t->stride[3];
}

/* The index into operand t of output index idx (dims of y): equal dims
 * map through, a dim of 1 broadcasts, a dim dividing y's maps groups of
 * consecutive indices (heads) onto one. -1 when none applies. */
static int map_idx(const ApprofSdpaTensor *t, const ApprofSdpaTensor *y, const int64_t idx[4],
                   int64_t out[4], int skip_last2)
{
    for (int i = 0; i < 4; i++) {
        if (skip_last2 && i >= 2) {
            out[i] = 0;
            continue;
        }
        if (t->dim[i] == y->dim[i])
            out[i] = idx[i];
        else if (t->dim[i] == 1)
            out[i] = 0;
        else if (y->dim[i] % t->dim[i] == 0)
            out[i] = idx[i] / (y->dim[i] / t->dim[i]);
        else
            return -1;
    }
    return 0;
}

#define FOR4(t, idx)                                                                   \
    for (idx[0] = 0; idx[0] < (t)->dim[0]; idx[0]++)                                   \
        for (idx[1] = 0; idx[1] < (t)->dim[1]; idx[1]++)                               \
            for (idx[2] = 0; idx[2] < (t)->dim[2]; idx[2]++)                           \
                for (idx[3] = 0; idx[3] < (t)->dim[3]; idx[3]++)

static double pw(int mode, double x, double b, double t, int64_t idx_axis)
{
    switch (mode) {
    case APPROF_SDPA_PW_ADD: return x + b;
    case APPROF_SDPA_PW_SUB: return x - b;
    case APPROF_SDPA_PW_MUL: return x * b;
    case APPROF_SDPA_PW_DIV: return x / b;
    case APPROF_SDPA_PW_EXP: return exp(x);
    case APPROF_SDPA_PW_LOG: return log(x);
    case APPROF_SDPA_PW_GEN_INDEX: return (double)idx_axis;
    case APPROF_SDPA_PW_CMP_GE: return x >= b ? 1.0 : 0.0;
    case APPROF_SDPA_PW_BINARY_SELECT: return t != 0.0 ? x : b;
    default: return x;
    }
}

static int eval_op(const ApprofSdpaGraph *g, const ApprofSdpaOp *o, Mem *m, char *err,
                   size_t errlen)
{
    const ApprofSdpaTensor *x = &g->t[o->x], *y = &g->t[o->y];
    const ApprofSdpaTensor *b = o->b >= 0 ? &g->t[o->b] : NULL, *t = o->t >= 0 ? &g->t[o->t] : NULL;
    int64_t idx[4], xi[4], bi[4], ti[4];

    switch (o->kind) {
    case APPROF_SDPA_RESHAPE:
        if (span(y) > span(x)) {
            snprintf(err, errlen, "reshape to a larger view");
            return -1;
        }
        m[o->y].p = m[o->x].p;
        m[o->y].own = 0;
        return 0;
    case APPROF_SDPA_MATMUL:
        if (x->dim[3] != b->dim[2] || x->dim[2] != y->dim[2] || b->dim[3] != y->dim[3]) {
            snprintf(err, errlen, "matmul dims");
            return -1;
        }
        FOR4(y, idx) {
            double acc = 0;
            if (map_idx(x, y, idx, xi, 1) < 0 || map_idx(b, y, idx, bi, 1) < 0) {
                snprintf(err, errlen, "matmul batch dims");
                return -1;
            }
            for (int64_t k = 0; k < x->dim[3]; k++) {
                xi[2] = idx[2];
                xi[3] = k;
                bi[2] = k;
                bi[3] = idx[3];
                acc += m[o->x].p[off(x, xi)] * m[o->b].p[off(b, bi)];
            }
            m[o->y].p[off(y, idx)] = acc;
        }
        return 0;
    case APPROF_SDPA_POINTWISE:
        FOR4(y, idx) {
            double xv = 0, bv = 0, tv = 0;
            if (map_idx(x, y, idx, xi, 0) < 0 || (b && map_idx(b, y, idx, bi, 0) < 0) ||
                (t && map_idx(t, y, idx, ti, 0) < 0)) {
                snprintf(err, errlen, "pointwise broadcast");
                return -1;
            }
            xv = m[o->x].p[off(x, xi)];
            if (b)
                bv = m[o->b].p[off(b, bi)];
            if (t)
                tv = m[o->t].p[off(t, ti)];
            m[o->y].p[off(y, idx)] = pw(o->mode, xv, bv, tv, o->axis >= 0 ? idx[o->axis] : 0);
        }
        return 0;
    case APPROF_SDPA_REDUCTION:
        FOR4(y, idx) m[o->y].p[off(y, idx)] = o->mode == APPROF_SDPA_RED_MAX ? -INFINITY : 0.0;
        FOR4(x, idx) {
            /* the output index of input index idx: the inverse of map_idx */
            int64_t yi[4];
            for (int i = 0; i < 4; i++) {
                if (y->dim[i] == x->dim[i])
                    yi[i] = idx[i];
                else if (y->dim[i] == 1)
                    yi[i] = 0;
                else if (x->dim[i] % y->dim[i] == 0)
                    yi[i] = idx[i] / (x->dim[i] / y->dim[i]);
                else {
                    snprintf(err, errlen, "reduction dims");
                    return -1;
                }
            }
            double v = m[o->x].p[off(x, idx)], *r = &m[o->y].p[off(y, yi)];
            if (o->mode == APPROF_SDPA_RED_MAX)
                *r = v > *r ? v : *r;
            else
                *r += v;
        }
        return 0;
    default:
        snprintf(err, errlen, "unknown operation kind %d", o->kind);
        return -1;
    }
}

int sdpa_ref_eval(const ApprofSdpaGraph *g, double *const *const arr[3], char *err,
                  size_t errlen)
{
    Mem m[APPROF_SDPA_MAX_TENSORS];
    double val[APPROF_SDPA_MAX_TENSORS];
    int rc = 0;

    memset(m, 0, sizeof m);
    for (int i = 0; i < g->nt; i++) {
        const ApprofSdpaTensor *t = &g->t[i];
        if (t->by_value) {
            val[i] = t->value;
            m[i].p = &val[i];
        } else if (t->buf >= 0) {
            m[i].p = arr[t->buf][t->array];
        } else if (t->virt) {
            /* filled by its producer (a reshape aliases its input) */
            int aliased = 0;
            for (int j = 0; j < g->nop; j++)
                aliased |= g->op[j].y == i && g->op[j].kind == APPROF_SDPA_RESHAPE;
            if (!aliased) {
                m[i].p = calloc((size_t)span(t), sizeof(double));
                m[i].own = 1;
                if (!m[i].p)
                    abort();
            }
        }
    }
    for (int j = 0; j < g->nop && rc == 0; j++)
        rc = eval_op(g, &g->op[j], m, err, errlen);
    for (int i = 0; i < g->nt; i++)
        if (m[i].own)
            free(m[i].p);
    return rc;
}

/* ---- 16-bit floats -------------------------------------------------------- */

uint16_t sdpa_ref_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float sdpa_ref_from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t sdpa_ref_to_half(float f)
{
    /* through double arithmetic: exact for the values the tests use
     * (normal halves, |x| < 65504) */
    double a = fabs((double)f);
    uint16_t sign = f < 0 ? 0x8000 : 0;
    if (a == 0)
        return sign;
    if (a >= 65520.0)
        return sign | 0x7c00;
    int e;
    double mant = frexp(a, &e); /* a = mant * 2^e, mant in [0.5, 1) */
    int exp = e - 1 + 15;
    if (exp <= 0) {             /* subnormal: multiples of 2^-24 */
        double q = nearbyint(a * 16777216.0);
        return sign | (uint16_t)q;
    }
    double q = nearbyint((mant * 2.0 - 1.0) * 1024.0);
    if (q >= 1024.0) {
        q = 0;
        exp++;
    }
    if (exp >= 31)
        return sign | 0x7c00;
    return sign | (uint16_t)(exp << 10) | (uint16_t)q;
}

float sdpa_ref_from_half(uint16_t h)
{
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = mant / 16777216.0;
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp(1.0 + mant / 1024.0, exp - 15);
    return (float)((h & 0x8000) ? -v : v);
}
