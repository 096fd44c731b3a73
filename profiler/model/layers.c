/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layer construction: Alpa's AutoLayerOption (cluster_jaxpr_by_cost in
 * alpa/pipeline_parallel/layer_construction.py) and manual layers cut at
 * boundary markers, plus per-layer statistics.
 *
 * Auto: an operator's cost is the FLOPs of its GEMM/convolution kernels
 * (matmul, batch_matmul, conv2d are the "non-trivial" ops; all others cost
 * 0). bound = total / L · (1 + eps); lb = 3 heavy ops, lowered to
 * floor(heavy / L) when that is smaller. A span [left, r] of ops may form a
 * layer iff, scanning r upward from left with cnt heavy ops and cost c so
 * far: while cnt < lb it is allowed only once c >= bound; after that it is
 * allowed until the first heavy op at which c >= bound and cnt > lb (the
 * scan stops there). A DP over (ops covered r, layers q) minimises the
 * largest inbound size (bytes of tensors produced before the span and read
 * inside it); ties within a relative 1e-4 go to the smaller sum of inbound
 * sizes, then the smaller imbalance term imb[k][q-1] + k²/q − r²/(q+1) +
 * (r−k)², exactly Alpa's recurrence; candidates k are tried in ascending
 * order and only a strict improvement replaces the incumbent.
 * Implementation: inbound sizes and the allowed spans are computed one left
 * end k at a time (O(ops + tensors) each) so memory stays O(ops · L); the
 * whole DP is O(L · ops · (ops + tensors)).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

void approf_layering_free(ApprofLayering *l)
{
    if (!l)
        return;
    free(l->op_begin);
    free(l->op_end);
    l->op_begin = l->op_end = NULL;
    l->n_layers = 0;
}

static int layering_alloc(ApprofLayering *l, int n)
{
    memset(l, 0, sizeof *l);
    l->op_begin = calloc((size_t)n, sizeof(int));
    l->op_end = calloc((size_t)n, sizeof(int));
    if (!l->op_begin || !l->op_end) {
        approf_layering_free(l);
        return APPROF_ENOMEM;
    }
    l->n_layers = n;
    return 0;
}

static double heavy_cost(const ApprofGraph *g, int op)
{
    ApprofKernel ks[APPROF_MAX_KERNELS];
    double c = 0;
    int n;
    ApprofOpKind k = g->ops[op].kind;
    if (k != APPROF_OP_MATMUL && k != APPROF_OP_BATCH_MATMUL && k != APPROF_OP_CONV2D)
        return 0;
    n = approf_op_kernels(g, op, NULL, 0, ks, APPROF_MAX_KERNELS);
    for (int i = 0; i < n; i++)
        if (ks[i].kind == APPROF_K_GEMM || ks[i].kind == APPROF_K_CONV_FWD)
            c += ks[i].flops;
    return c;
}

typedef struct {
    int n;                 /* ops */
    int *cons_start;       /* CSR of consumers per tensor (ascending op index) */
    int *cons;
    double *tbytes;
} Uses;

static void uses_free(Uses *u)
{
    free(u->cons_start);
    free(u->cons);
    free(u->tbytes);
}

static int uses_build(const ApprofGraph *g, Uses *u)
{
    size_t nt = g->n_tensors, total = 0;
    int *fill = NULL;
    memset(u, 0, sizeof *u);
    u->n = (int)g->n_ops;
    u->cons_start = calloc(nt + 1, sizeof(int));
    u->tbytes = calloc(nt + 1, sizeof(double));
    for (size_t i = 0; i < g->n_ops; i++)
        total += (size_t)g->ops[i].n_inputs;
    u->cons = calloc(total + 1, sizeof(int));
    fill = calloc(nt + 1, sizeof(int));
    if (!u->cons_start || !u->tbytes || !u->cons || !fill) {
        free(fill);
        uses_free(u);
        return APPROF_ENOMEM;
    }
    for (size_t i = 0; i < g->n_ops; i++)
        for (int k = 0; k < g->ops[i].n_inputs; k++)
            u->cons_start[g->ops[i].inputs[k] + 1]++;
    for (size_t t = 0; t < nt; t++) {
        u->cons_start[t + 1] += u->cons_start[t];
        u->tbytes[t] = (double)approf_tensor_bytes(&g->tensors[t]);
    }
    for (size_t i = 0; i < g->n_ops; i++)
        for (int k = 0; k < g->ops[i].n_inputs; k++) {
            int t = g->ops[i].inputs[k];
            int pos = u->cons_start[t] + fill[t]++;
            /* An op reading the same tensor twice is listed twice; harmless. */
            u->cons[pos] = (int)i;
        }
    free(fill);
    return 0;
}

/* row[r] for r in (k, n]: bytes produced by ops < k and read by ops in [k, r). */
static void inbound_row(const ApprofGraph *g, const Uses *u, int k, double *row, double *delta)
{
    int n = u->n;
    for (int r = 0; r <= n + 1; r++)
        delta[r] = 0;
    for (int p = 0; p < k; p++) {
        const ApprofOp *op = &g->ops[p];
        for (int j = 0; j < op->n_outputs; j++) {
            int t = op->outputs[j];
            int lo = u->cons_start[t], hi = u->cons_start[t + 1];
            /* First consumer >= k: consumers are ascending. */
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (u->cons[mid] < k)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < u->cons_start[t + 1])
                delta[u->cons[lo] + 1] += u->tbytes[t];
        }
    }
    row[k] = 0;
    for (int r = k + 1; r <= n; r++)
        row[r] = row[r - 1] + delta[r];
}

/* allowed[r] for the span of ops [k, r) (Alpa's blocked[k+1][r] == 0). */
static void allowed_row(int n, int k, const double *cost, const char *heavy, double bound, int lb,
                        char *allowed)
{
    int cnt = 0;
    double c = 0;
    for (int r = 0; r <= n; r++)
        allowed[r] = 0;
    for (int r = k + 1; r <= n; r++) {
        if (heavy[r - 1]) {
            cnt++;
            c += cost[r - 1];
        }
        if (cnt < lb) {
            if (c >= bound)
                allowed[r] = 1;
            continue;
        }
        if (c >= bound && heavy[r - 1] && cnt > lb)
            break;
        allowed[r] = 1;
    }
}

int approf_layers_auto(const ApprofGraph *g, int layer_num, double eps, ApprofLayering *out)
{
    int n, L = layer_num, rc = 0, lb = 3, n_heavy = 0;
    double total = 0, bound;
    double *cost = NULL, *maxc = NULL, *sumc = NULL, *imb = NULL, *row = NULL, *delta = NULL;
    int *arg = NULL;
    char *heavy = NULL, *allowed = NULL;
    Uses u;

    if (!g || !out || layer_num < 1 || !(eps >= 0) || !isfinite(eps))
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    n = (int)g->n_ops;
    if (n < L)
        return APPROF_EINVAL;
    if (uses_build(g, &u) < 0)
        return APPROF_ENOMEM;
    cost = calloc((size_t)n + 1, sizeof *cost);
    heavy = calloc((size_t)n + 1, 1);
    allowed = calloc((size_t)n + 2, 1);
    row = calloc((size_t)n + 2, sizeof *row);
    delta = calloc((size_t)n + 2, sizeof *delta);
    maxc = malloc(sizeof *maxc * (size_t)(n + 1) * (size_t)(L + 1));
    sumc = malloc(sizeof *sumc * (size_t)(n + 1) * (size_t)(L + 1));
    imb = malloc(sizeof *imb * (size_t)(n + 1) * (size_t)(L + 1));
    arg = malloc(sizeof *arg * (size_t)(n + 1) * (size_t)(L + 1));
    if (!cost || !heavy || !allowed || !row || !delta || !maxc || !sumc || !imb || !arg) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        ApprofOpKind k = g->ops[i].kind;
        heavy[i] = k == APPROF_OP_MATMUL || k == APPROF_OP_BATCH_MATMUL || k == APPROF_OP_CONV2D;
        cost[i] = heavy_cost(g, i);
        total += cost[i];
        n_heavy += heavy[i];
    }
    bound = total / L * (1.0 + eps);
    if ((double)n_heavy / L < lb)
        lb = (int)((double)n_heavy / L);

#define AT(a, r, q) (a)[(size_t)(r) * (size_t)(L + 1) + (size_t)(q)]
    for (int r = 0; r <= n; r++)
        for (int q = 0; q <= L; q++) {
            AT(maxc, r, q) = INFINITY;
            AT(sumc, r, q) = INFINITY;
            AT(imb, r, q) = q == 0 ? 0 : INFINITY;
            AT(arg, r, q) = -1;
        }
    AT(maxc, 0, 0) = 0;
    AT(sumc, 0, 0) = 0;
    for (int k = 0; k < n; k++) {
        int any = 0;
        for (int q = 1; q <= L; q++)
            if (isfinite(AT(maxc, k, q - 1)))
                any = 1;
        if (!any)
            continue;
        allowed_row(n, k, cost, heavy, bound, lb, allowed);
        inbound_row(g, &u, k, row, delta);
        for (int q = 1; q <= L; q++) {
            double prev = AT(maxc, k, q - 1);
            if (!isfinite(prev))
                continue;
            for (int r = k + 1; r <= n; r++) {
                double nv, ns, ni, cur, curs;
                if (!allowed[r])
                    continue;
                nv = prev > row[r] ? prev : row[r];
                ns = AT(sumc, k, q - 1) + row[r];
                ni = AT(imb, k, q - 1) + (double)k * k / q - (double)r * r / (q + 1) +
                     (double)(r - k) * (r - k);
                cur = AT(maxc, r, q);
                curs = AT(sumc, r, q);
                if (nv < cur || (nv <= cur * (1 + 1e-4) &&
                                 (ns < curs || (ns <= curs * (1 + 1e-4) && ni < AT(imb, r, q))))) {
                    AT(maxc, r, q) = nv;
                    AT(sumc, r, q) = ns;
                    AT(imb, r, q) = ni;
                    AT(arg, r, q) = k;
                }
            }
        }
    }
    if (!isfinite(AT(maxc, n, L))) {
        rc = APPROF_EINFEASIBLE;
        goto cleanup;
    }
    rc = layering_alloc(out, L);
    if (rc < 0)
        goto cleanup;
    for (int q = L, r = n; q >= 1; q--) {
        int k = AT(arg, r, q);
        out->op_begin[q - 1] = k;
        out->op_end[q - 1] = r;
        r = k;
    }
#undef AT
    snprintf(out->option, sizeof out->option, "auto:eps=%g", eps);
cleanup:
    uses_free(&u);
    free(cost);
    free(heavy);
    free(allowed);
    free(row);
    free(delta);
    free(maxc);
    free(sumc);
    free(imb);
    free(arg);
    return rc;
}

int approf_layers_manual(const ApprofGraph *g, ApprofLayering *out)
{
    int n_layers = 0, begin = 0, rc;
    if (!g || !out || g->n_ops == 0)
        return APPROF_EINVAL;
    for (size_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].kind == APPROF_OP_BOUNDARY && i + 1 < g->n_ops)
            n_layers++;
    n_layers++;
    rc = layering_alloc(out, n_layers);
    if (rc < 0)
        return rc;
    n_layers = 0;
    for (size_t i = 0; i < g->n_ops; i++)
        if ((g->ops[i].kind == APPROF_OP_BOUNDARY && i + 1 < g->n_ops) || i + 1 == g->n_ops) {
            out->op_begin[n_layers] = begin;
            out->op_end[n_layers] = (int)i + 1;
            n_layers++;
            begin = (int)i + 1;
        }
    snprintf(out->option, sizeof out->option, "manual");
    return 0;
}

int approf_layer_stats(const ApprofGraph *g, const ApprofLayering *l, int layer,
                       ApprofLayerStats *out)
{
    char *seen;
    int b, e;
    if (!g || !l || !out || layer < 0 || layer >= l->n_layers)
        return APPROF_EINVAL;
    b = l->op_begin[layer];
    e = l->op_end[layer];
    if (b < 0 || e > (int)g->n_ops || b > e)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    seen = calloc(g->n_tensors + 1, 1);
    if (!seen)
        return APPROF_ENOMEM;
    for (int i = b; i < e; i++) {
        const ApprofOp *op = &g->ops[i];
        out->fwd_flops += approf_op_flops(g, i, 0);
        out->bwd_flops += approf_op_flops(g, i, 1);
        for (int k = 0; k < op->n_inputs; k++) {
            int t = op->inputs[k];
            const ApprofTensor *tt = &g->tensors[t];
            if (seen[t])
                continue;
            seen[t] = 1;
            if (tt->role == APPROF_TENSOR_PARAM)
                out->param_bytes += approf_tensor_bytes(tt);
            else if (tt->role == APPROF_TENSOR_ACT && tt->producer < b)
                out->inbound_bytes += approf_tensor_bytes(tt);
        }
        for (int j = 0; j < op->n_outputs; j++)
            out->activation_bytes += approf_tensor_bytes(&g->tensors[op->outputs[j]]);
    }
    free(seen);
    return 0;
}
