/* SPDX-License-Identifier: Apache-2.0 */
/* What the layer construction reads of a graph (layer_uses.h). */
#include <stdlib.h>
#include <string.h>

#include "layer_uses.h"

double approf_layer_op_cost(const ApprofGraph *g, int op)
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

void approf_layer_uses_free(ApprofLayerUses *u)
{
    free(u->cons_start);
    free(u->cons);
    free(u->tbytes);
}

int approf_layer_uses_build(const ApprofGraph *g, ApprofLayerUses *u)
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
        approf_layer_uses_free(u);
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

