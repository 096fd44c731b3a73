/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The layering checks of the model-reading harnesses (fuzz_graph.h):
 * model files and ONNX files.
 */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_graph.h"

static void check_layering(const ApprofGraph *g, const ApprofLayering *l)
{
    int next = 0;
    FUZZ_CHECK(l->n_layers >= 1);
    for (int k = 0; k < l->n_layers; k++) {
        ApprofLayerStats st;
        FUZZ_CHECK(l->op_begin[k] == next);
        FUZZ_CHECK(l->op_end[k] > l->op_begin[k]);
        next = l->op_end[k];
        if (approf_layer_stats(g, l, k, &st) == 0) {
            FUZZ_CHECK(isfinite(st.fwd_flops) && st.fwd_flops >= 0);
            FUZZ_CHECK(isfinite(st.bwd_flops) && st.bwd_flops >= 0);
            FUZZ_CHECK(st.param_bytes >= 0 && st.activation_bytes >= 0 &&
                       st.inbound_bytes >= 0);
        }
    }
    FUZZ_CHECK((size_t)next == g->n_ops);
}

void fuzz_check_layerings(const ApprofGraph *g)
{
    ApprofLayering l;
    memset(&l, 0, sizeof l);
    if (approf_layers_auto(g, 2, 0.5, &l) == 0)
        check_layering(g, &l);
    approf_layering_free(&l);
    memset(&l, 0, sizeof l);
    if (approf_layers_manual(g, &l) == 0)
        check_layering(g, &l);
    approf_layering_free(&l);
}
