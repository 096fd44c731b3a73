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
 * Implementation: one left end k at a time, the inbound sizes kept up to
 * date as k moves (O(ops + edges) in all) and only the span Alpa's scan
 * allows from k visited, for the layer counts q reachable at k. The DP is
 * O(ops · span · q), span ≈ ops / L · (1 + eps): still quadratic in the ops,
 * as Alpa's own recurrence is (its ties are broken in candidate order, so a
 * faster search would change the cuts); the zoo bounds the model's layers
 * (APPROF_ZOO_MAX_LAYERS). Memory O(ops · L).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "layer_uses.h"

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

/* Inbound bytes of the spans that start at op k, kept from one k to the
 * next: every tensor produced by an op before k that an op at or after k
 * reads sits at its first such reader c, as delta[c + 1] += its bytes, so
 * that the inbound size of the span [k, r) is delta[k + 1] + ... + delta[r].
 * Moving k forward touches only the tensors op k - 1 reads or writes: O(ops
 * + edges) over all k, where recomputing the row for each k was quadratic. */
typedef struct {
    int *next;             /* per tensor: index into cons of its first reader >= k */
    int64_t *delta;        /* [n + 2] */
} Inbound;

static void inbound_place(const ApprofLayerUses *u, Inbound *in, int t, int k)
{
    int end = u->cons_start[t + 1];
    while (in->next[t] < end && u->cons[in->next[t]] < k)
        in->next[t]++;
    if (in->next[t] < end)
        in->delta[u->cons[in->next[t]] + 1] += (int64_t)u->tbytes[t];
}

/* From left end k - 1 to k (k >= 1). */
static void inbound_advance(const ApprofGraph *g, const ApprofLayerUses *u, Inbound *in, int k)
{
    const ApprofOp *op = &g->ops[k - 1];
    for (int i = 0; i < op->n_inputs; i++) {
        int t = op->inputs[i], p = g->tensors[t].producer;
        /* a tensor op k - 1 reads twice moves once: its reader is then >= k */
        if (p < 0 || p >= k - 1 || in->next[t] >= u->cons_start[t + 1] || u->cons[in->next[t]] != k - 1)
            continue;
        in->delta[k] -= (int64_t)u->tbytes[t];
        inbound_place(u, in, t, k);
    }
    for (int j = 0; j < op->n_outputs; j++)
        inbound_place(u, in, op->outputs[j], k);
}

/* The last r of the span [k, r) worth scanning, with allowed[r] set for
 * r in (k, last] (Alpa's blocked[k+1][r] == 0); the scan stops where
 * Alpa's does. */
static int allowed_span(int n, int k, const double *cost, const char *heavy, double bound, int lb,
                        char *allowed)
{
    int cnt = 0, r;
    double c = 0;
    for (r = k + 1; r <= n; r++) {
        allowed[r] = 0;
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
    return r - 1;
}

/* One DP state (ops covered r, layers q). */
typedef struct {
    double maxc, sumc, imb;
    int arg;
} Cell;

int approf_layers_auto(const ApprofGraph *g, int layer_num, double eps, ApprofLayering *out)
{
    int n, L = layer_num, rc = 0, lb = 3, n_heavy = 0, n_q;
    double total = 0, bound;
    double *cost = NULL, *row = NULL;
    int *qs = NULL;
    char *heavy = NULL, *allowed = NULL;
    Cell *cell = NULL;
    Inbound in = {NULL, NULL};
    ApprofLayerUses u;

    if (!g || !out || layer_num < 1 || !(eps >= 0) || !isfinite(eps))
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    n = (int)g->n_ops;
    if (n < L)
        return APPROF_EINVAL;
    if (approf_layer_uses_build(g, &u) < 0)
        return APPROF_ENOMEM;
    cost = calloc((size_t)n + 1, sizeof *cost);
    heavy = calloc((size_t)n + 1, 1);
    allowed = calloc((size_t)n + 2, 1);
    row = calloc((size_t)n + 2, sizeof *row);
    qs = calloc((size_t)L + 1, sizeof *qs);
    in.next = malloc((g->n_tensors + 1) * sizeof *in.next);
    in.delta = calloc((size_t)n + 2, sizeof *in.delta);
    cell = malloc(sizeof *cell * (size_t)(n + 1) * (size_t)(L + 1));
    if (!cost || !heavy || !allowed || !row || !qs || !in.next || !in.delta || !cell) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        ApprofOpKind k = g->ops[i].kind;
        heavy[i] = k == APPROF_OP_MATMUL || k == APPROF_OP_BATCH_MATMUL || k == APPROF_OP_CONV2D;
        cost[i] = approf_layer_op_cost(g, i);
        total += cost[i];
        n_heavy += heavy[i];
    }
    for (size_t t = 0; t < g->n_tensors; t++)
        in.next[t] = u.cons_start[t];
    bound = total / L * (1.0 + eps);
    if ((double)n_heavy / L < lb)
        lb = (int)((double)n_heavy / L);

#define AT(r, q) cell[(size_t)(r) * (size_t)(L + 1) + (size_t)(q)]
    for (int r = 0; r <= n; r++)
        for (int q = 0; q <= L; q++)
            AT(r, q) = (Cell){INFINITY, INFINITY, q == 0 ? 0 : INFINITY, -1};
    AT(0, 0).maxc = 0;
    AT(0, 0).sumc = 0;
    /* For each state (r, q) the candidates k are tried in ascending order
     * and only a strict improvement replaces the incumbent: each k updates
     * states with r > k only, so the order of r and q within one k does
     * not change the result. */
    for (int k = 0; k < n; k++) {
        int last;
        int64_t acc = 0;
        if (k > 0)
            inbound_advance(g, &u, &in, k);
        n_q = 0;
        for (int q = 1; q <= L; q++)
            if (isfinite(AT(k, q - 1).maxc))
                qs[n_q++] = q;
        if (!n_q)
            continue;
        last = allowed_span(n, k, cost, heavy, bound, lb, allowed);
        for (int r = k + 1; r <= last; r++) {
            acc += in.delta[r];
            row[r] = (double)acc;
        }
        for (int r = k + 1; r <= last; r++) {
            if (!allowed[r])
                continue;
            for (int i = 0; i < n_q; i++) {
                int q = qs[i];
                const Cell *p = &AT(k, q - 1);
                Cell *cur = &AT(r, q);
                double nv = p->maxc > row[r] ? p->maxc : row[r];
                double ns, ni;
                if (nv > cur->maxc * (1 + 1e-4))
                    continue;   /* neither test below can pass */
                ns = p->sumc + row[r];
                ni = p->imb + (double)k * k / q - (double)r * r / (q + 1) + (double)(r - k) * (r - k);
                if (nv < cur->maxc || (ns < cur->sumc || (ns <= cur->sumc * (1 + 1e-4) && ni < cur->imb))) {
                    cur->maxc = nv;
                    cur->sumc = ns;
                    cur->imb = ni;
                    cur->arg = k;
                }
            }
        }
    }
    if (!isfinite(AT(n, L).maxc)) {
        rc = APPROF_EINFEASIBLE;
        goto cleanup;
    }
    rc = layering_alloc(out, L);
    if (rc < 0)
        goto cleanup;
    for (int q = L, r = n; q >= 1; q--) {
        int k = AT(r, q).arg;
        out->op_begin[q - 1] = k;
        out->op_end[q - 1] = r;
        r = k;
    }
#undef AT
    snprintf(out->option, sizeof out->option, "auto:eps=%g", eps);
cleanup:
    approf_layer_uses_free(&u);
    free(cost);
    free(heavy);
    free(allowed);
    free(row);
    free(qs);
    free(in.next);
    free(in.delta);
    free(cell);
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
