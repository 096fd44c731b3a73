/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for ONNX model files (approf_onnx_parse). Properties checked
 * on every graph the reader accepts: it has an operator, it validates, its
 * names are what the JSON writer can write, its JSON export loads back to
 * the same graph hash (what one reader accepts the writer round-trips), and
 * automatic and manual layering either fail cleanly or cover every operator
 * once. A refused file leaves a message naming it. Hostile nesting (the
 * stack of a recursive unpacker) is in the corpus as seed-nested-40.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_graph.h"
#include "graph.h"
#include "model/modelfile.h"
#include "model/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ApprofGraph *g = NULL, *g2 = NULL;
    char err[1024] = "", h1[128], h2[128];
    char *json = NULL;
    int rc;

    if (size > 1 << 18)
        return 0;
    rc = approf_onnx_parse(data, size, "fuzz.onnx", 0, &g, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0 && g == NULL);
        FUZZ_CHECK(strncmp(err, "fuzz.onnx: ", 11) == 0);
        goto cleanup;
    }
    FUZZ_CHECK(g->n_ops >= 1);
    FUZZ_CHECK(approf_graph_validate(g, err, sizeof err) == 0);
    FUZZ_CHECK(approf_graph_num_params(g) >= 0);
    approf_graph_hash(g, h1, sizeof h1);
    rc = approf_model_to_json(g, &json);
    if (rc == APPROF_EUNSUPPORTED)
        goto cleanup;  /* no jansson in this build */
    FUZZ_CHECK(rc == 0 && json != NULL);
    rc = approf_model_parse(json, "export.json", &g2, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "fuzz_onnx: export does not load back: %s\n", err);
    FUZZ_CHECK(rc == 0);
    approf_graph_hash(g2, h2, sizeof h2);
    FUZZ_CHECK(strcmp(h1, h2) == 0);

    fuzz_check_layerings(g);
cleanup:
    approf_graph_free(&g);
    approf_graph_free(&g2);
    free(json);
    return 0;
}
