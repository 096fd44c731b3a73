/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator IR's checking half: whole-graph validation (every operator
 * re-derived over the leaf tensors, so order and shapes are checked by the
 * same inference that built them), the structural hash stored with a sweep,
 * and the canonical tensor order that makes graphs equal up to tensor order
 * identical. Construction and shape inference live in graph.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "graph_int.h"
#include "fnv.h"

int approf_graph_validate(const ApprofGraph *g, char *err, size_t errlen)
{
    int rc = 0;
    char *used = NULL;
    ApprofGraph *copy = NULL;

    if (err && errlen)
        err[0] = '\0';
    used = calloc(g->n_tensors + 1, 1);
    if (!used)
        return APPROF_ENOMEM;
    rc = approf_graph_new(g->name, g->dtype, g->batch_size, &copy);
    if (rc < 0)
        goto cleanup;
    /* Re-derive every operator over the leaf tensors: checks order and shapes. */
    {
        int *map = calloc(g->n_tensors + 1, sizeof *map);
        if (!map) {
            rc = APPROF_ENOMEM;
            goto cleanup;
        }
        for (size_t t = 0; t < g->n_tensors; t++) {
            const ApprofTensor *tt = &g->tensors[t];
            map[t] = -1;
            if (tt->role != APPROF_TENSOR_ACT) {
                if (tt->producer != -1) {
                    rc = approf_op_fail(err, errlen, tt->name, "field producer: a leaf tensor has a producer");
                    break;
                }
                map[t] = approf_graph_add_tensor(copy, tt->name, tt->role, tt->dtype, tt->ndim, tt->dims, tt->batch_dim);
                if (map[t] < 0) {
                    rc = approf_op_fail(err, errlen, tt->name, "field shape: absurd tensor size or rank");
                    break;
                }
            }
        }
        for (size_t i = 0; rc == 0 && i < g->n_ops; i++) {
            const ApprofOp *op = &g->ops[i];
            int in[APPROF_MAX_INPUTS];
            const ApprofTensor *t0 = op->n_outputs > 0 ? &g->tensors[op->outputs[0]] : NULL;
            int r;
            if (op->n_inputs < 1 || op->n_inputs > APPROF_MAX_INPUTS) {
                rc = approf_op_fail(err, errlen, op->name, "field inputs: bad count %d", op->n_inputs);
                break;
            }
            for (int k = 0; k < op->n_inputs; k++) {
                int t = op->inputs[k];
                if (t < 0 || (size_t)t >= g->n_tensors || map[t] < 0) {
                    rc = approf_op_fail(err, errlen, op->name, "field inputs[%d]: tensor used before its definition (cycle?)", k);
                    break;
                }
                in[k] = map[t];
                used[t] = 1;
            }
            if (rc)
                break;
            r = approf_graph_add_op(copy, op->name, op->kind, in, op->n_inputs, &op->attrs,
                                    t0 ? t0->dims : NULL, t0 ? t0->ndim : 0, err, errlen);
            if (r < 0) {
                rc = r;
                break;
            }
            for (int j = 0; j < op->n_outputs; j++) {
                const ApprofTensor *a = &g->tensors[op->outputs[j]];
                const ApprofTensor *b = &copy->tensors[copy->ops[r].outputs[j]];
                if (a->ndim != b->ndim || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim) ||
                    a->producer != (int)i) {
                    rc = approf_op_fail(err, errlen, op->name, "field outputs[%d]: shape differs from the inferred one", j);
                    break;
                }
                map[op->outputs[j]] = copy->ops[r].outputs[j];
            }
        }
        free(map);
    }
    /* An in-place op overwrites its input: nothing else may read it, and
     * its producer may not save it for the backward. */
    for (size_t i = 0; rc == 0 && i < g->n_ops; i++) {
        const ApprofOp *op = &g->ops[i];
        if (!op->attrs.inplace)
            continue;
        int x = op->inputs[0], p = g->tensors[x].producer, readers = 0;
        for (size_t k = 0; k < g->n_ops; k++)
            for (int j = 0; j < g->ops[k].n_inputs; j++)
                readers += g->ops[k].inputs[j] == x;
        if (readers > 1)
            rc = approf_op_fail(err, errlen, op->name, "field inplace: input '%s' is read by %d "
                                "operators; an in-place op must be its only reader",
                                g->tensors[x].name, readers);
        for (int j = 0; rc == 0 && p >= 0 && j < g->ops[p].n_outputs; j++)
            if (g->ops[p].outputs[j] == x &&
                (approf_op_saved_mask(g, p) & APPROF_SAVED_OUTPUT(j)))
                rc = approf_op_fail(err, errlen, op->name, "field inplace: input '%s' is saved "
                                    "for the backward by '%s' and cannot be overwritten",
                                    g->tensors[x].name, g->ops[p].name);
    }
    for (size_t t = 0; rc == 0 && t < g->n_tensors; t++)
        if (g->tensors[t].role == APPROF_TENSOR_PARAM && !used[t])
            rc = approf_op_fail(err, errlen, g->tensors[t].name, "field role: parameter is never used");
cleanup:
    approf_graph_free(&copy);
    free(used);
    return rc;
}

/* ---- hash --------------------------------------------------------------- */

static void h64(uint64_t *h, int64_t v)
{
    *h = costdb_fnv1a_i64(*h, v);
}

void approf_graph_hash(const ApprofGraph *g, char *out, size_t len)
{
    uint64_t h1 = COSTDB_FNV_BASIS_V1, h2 = 0x9e3779b97f4a7c15ull;
    h64(&h1, g->dtype);
    h64(&h1, g->batch_size);
    h64(&h1, (int64_t)g->n_tensors);
    h64(&h1, (int64_t)g->n_ops);
    for (size_t i = 0; i < g->n_tensors; i++) {
        const ApprofTensor *t = &g->tensors[i];
        h64(&h1, t->role);
        h64(&h1, t->dtype);
        h64(&h1, t->ndim);
        for (int d = 0; d < t->ndim; d++)
            h64(&h1, t->dims[d]);
        h64(&h1, t->batch_dim);
        h64(&h1, t->producer);
    }
    for (size_t i = 0; i < g->n_ops; i++) {
        const ApprofOp *op = &g->ops[i];
        const ApprofOpAttrs *a = &op->attrs;
        h64(&h1, op->kind);
        h64(&h1, op->n_inputs);
        for (int k = 0; k < op->n_inputs; k++)
            h64(&h1, op->inputs[k]);
        h64(&h1, op->n_outputs);
        for (int k = 0; k < op->n_outputs; k++)
            h64(&h1, op->outputs[k]);
        for (int k = 0; k < 2; k++) {
            h64(&h1, a->kernel[k]);
            h64(&h1, a->stride[k]);
            h64(&h1, a->padding[k]);
        }
        h64(&h1, a->groups > 0 ? a->groups : 1);
        h64(&h1, a->axis);
        for (int k = 0; k < APPROF_MAX_DIMS; k++)
            h64(&h1, a->perm[k]);
        h64(&h1, a->transpose_a);
        h64(&h1, a->transpose_b);
        h64(&h1, a->has_bias);
        if (a->inplace)
            h64(&h1, 0x1a9ace);  /* graphs without in-place ops keep their hash */
        if (a->rerun)
            h64(&h1, 0x5e7e5e);  /* and graphs without fused activations theirs */
        if (a->unpad)
            h64(&h1, 0x0a9ad);   /* and graphs without unpadded attention theirs */
        if (a->eager)
            h64(&h1, 0xea9e5);   /* and graphs without eager element-wise ops theirs */
        if (a->probs_in_experts)
            h64(&h1, 0x9e0b5e);  /* and graphs whose combines weight theirs */
        if (op->kind >= APPROF_OP_RMS_NORM) {
            int64_t rate_bits;
            memcpy(&rate_bits, &a->rate, sizeof rate_bits);
            h64(&h1, a->start);
            h64(&h1, a->length);
            for (int k = 0; k < APPROF_MAX_OUTPUTS; k++)
                h64(&h1, a->sizes[k]);
            h64(&h1, a->causal);
            h64(&h1, a->top_k);
            h64(&h1, a->capacity);
            h64(&h1, rate_bits);
        }
        h2 ^= h1;
        h2 = (h2 << 13 | h2 >> 51) * 0xff51afd7ed558ccdull;
    }
    snprintf(out, len, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

int approf_graph_canonicalize(ApprofGraph *g)
{
    size_t nt = g->n_tensors, pos = 0;
    int *newidx = malloc((nt + 1) * sizeof *newidx);
    ApprofTensor *nts = malloc((nt + 1) * sizeof *nts);
    if (!newidx || !nts) {
        free(newidx);
        free(nts);
        return APPROF_ENOMEM;
    }
    for (size_t t = 0; t < nt; t++)
        newidx[t] = -1;
    for (size_t i = 0; i < g->n_ops; i++) {
        ApprofOp *op = &g->ops[i];
        for (int k = 0; k < op->n_inputs; k++) {
            int t = op->inputs[k];
            if (newidx[t] < 0 && g->tensors[t].role != APPROF_TENSOR_ACT) {
                nts[pos] = g->tensors[t];
                newidx[t] = (int)pos++;
            }
        }
        for (int j = 0; j < op->n_outputs; j++) {
            int t = op->outputs[j];
            nts[pos] = g->tensors[t];
            newidx[t] = (int)pos++;
        }
    }
    for (size_t t = 0; t < nt; t++)
        if (newidx[t] < 0) {
            nts[pos] = g->tensors[t];
            newidx[t] = (int)pos++;
        }
    for (size_t i = 0; i < g->n_ops; i++) {
        ApprofOp *op = &g->ops[i];
        for (int k = 0; k < op->n_inputs; k++)
            op->inputs[k] = newidx[op->inputs[k]];
        for (int j = 0; j < op->n_outputs; j++)
            op->outputs[j] = newidx[op->outputs[j]];
    }
    memcpy(g->tensors, nts, nt * sizeof *nts);
    free(nts);
    free(newidx);
    return 0;
}
