/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for Hugging Face config.json files (approf_hf_config_load and
 * approf_zoo_build_hf). Properties: a refusal names the file; an accepted
 * config has every size in the documented range (layers 1..1024, sizes
 * 1..2^24, heads dividing the hidden size, an even head_dim where rope
 * rotates it, the shared experts' intermediate size at most 2^24), and a
 * small one (up to 8 layers, hidden 4096) builds a graph that validates,
 * or is refused with a message; it never builds a graph of other sizes
 * than the file's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "graph.h"
#include "model/hfconfig.h"
#include "model/zoo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ApprofHfConfig c;
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[1024] = "";
    const char *path;
    int rc;

    if (size > 1 << 16)
        return 0;
    path = fuzz_write_file("config.json", data, size);
    rc = approf_hf_config_load(path, &c, err, sizeof err);
    if (rc == APPROF_EUNSUPPORTED)
        return 0;  /* no jansson in this build */
    if (rc != 0) {
        FUZZ_CHECK(rc < 0);
        FUZZ_CHECK(strstr(err, path) != NULL);
        return 0;
    }
    FUZZ_CHECK(c.zoo_name != NULL);
    FUZZ_CHECK(c.layers >= 1 && c.layers <= APPROF_ZOO_MAX_LAYERS);
    FUZZ_CHECK(c.hidden >= 1 && c.hidden <= 1 << 24);
    FUZZ_CHECK(c.heads >= 1 && c.hidden % c.heads == 0);
    FUZZ_CHECK(c.ffn >= 1 && c.vocab >= 1 && c.positions >= 1);
    FUZZ_CHECK(c.kv_heads >= 1 && c.heads % c.kv_heads == 0);
    FUZZ_CHECK(c.head_dim >= 1);
    /* the llama family rotates pairs (rope); GPT-2 and BERT have no rope */
    if (strcmp(c.zoo_name, "gpt") && strcmp(c.zoo_name, "bert"))
        FUZZ_CHECK(c.head_dim % 2 == 0);
    FUZZ_CHECK(c.shared_ffn >= 0 && c.shared_ffn <= 1 << 24);
    FUZZ_CHECK(c.experts >= 0 && c.top_k <= c.experts);
    FUZZ_CHECK(c.first_dense >= 0 && c.first_dense <= c.layers);
    if (c.layers > 8 || c.hidden > 4096 || c.ffn > 16384 || c.vocab > 65536 ||
        c.positions > 4096 || c.experts > 64 || c.moe_ffn > 16384 || c.shared_ffn > 16384)
        return 0;  /* building is linear in these; keep executions fast */
    memset(&o, 0, sizeof o);
    o.batch = 1;
    rc = approf_zoo_build_hf(path, &o, &g, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0 && g == NULL);
        FUZZ_CHECK(err[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(g->n_ops >= 1);
    FUZZ_CHECK(approf_graph_validate(g, err, sizeof err) == 0);
    FUZZ_CHECK(approf_graph_num_params(g) > 0);
    approf_graph_free(&g);
    return 0;
}
