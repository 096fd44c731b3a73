/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ONNX reader on a committed GPT-2 block (tests/model/data/gpt2-block.onnx,
 * written by onnx_models.py gpt2): it loads with the zoo's parameter count,
 * its symbolic batch takes the batch asked for, and every truncation and
 * every single-byte corruption of it either loads or fails with a message
 * naming the file, never crashes (run under ASan in CI): the fuzz corpus of
 * the reader, replayed without a fuzzer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "config.h"
#include "cunit_run.h"
#include "graph.h"
#include "model/modelfile.h"
#include "model/onnx.h"

#define ORIGIN "gpt2-block.onnx"

static unsigned char *data;
static size_t len;

static int load_data(void)
{
    FILE *f = fopen(MODEL_DATA_DIR "/gpt2-block.onnx", "rb");
    long n;
    if (!f)
        return -1;
    if (fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET)) {
        fclose(f);
        return -1;
    }
    data = malloc((size_t)n);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        return -1;
    }
    len = (size_t)n;
    fclose(f);
    return 0;
}

static void test_load(void)
{
    ApprofGraph *g = NULL, *h = NULL;
    char err[512], ha[40], hb[40];
    CU_ASSERT_EQUAL_FATAL(approf_onnx_available(), 1);
    CU_ASSERT_EQUAL_FATAL(approf_onnx_parse(data, len, ORIGIN, 0, &g, err, sizeof err), 0);
    /* the zoo's gpt --num-layers 1 --hidden 64 --heads 4 --seq-len 16 --vocab 100 */
    CU_ASSERT_EQUAL(approf_graph_num_params(g), 122048);
    CU_ASSERT_EQUAL(g->batch_size, 1);
    CU_ASSERT_STRING_EQUAL(g->name, "gpt2_onnx");
    CU_ASSERT_EQUAL(approf_model_load(MODEL_DATA_DIR "/gpt2-block.onnx", &h, err, sizeof err), 0);
    if (h) {
        approf_graph_hash(g, ha, sizeof ha);
        approf_graph_hash(h, hb, sizeof hb);
        CU_ASSERT_STRING_EQUAL(ha, hb);
    }
    approf_graph_free(&h);
    /* the symbolic batch takes the batch asked for */
    CU_ASSERT_EQUAL_FATAL(approf_onnx_parse(data, len, ORIGIN, 4, &h, err, sizeof err), 0);
    CU_ASSERT_EQUAL(h->batch_size, 4);
    for (size_t i = 0; i < h->n_tensors; i++) {
        const ApprofTensor *t = &h->tensors[i];
        if (!strcmp(t->name, "input_ids") || !strcmp(t->name, "labels")) {
            CU_ASSERT_EQUAL(t->dims[0], 4);
            CU_ASSERT_EQUAL(t->batch_dim, 0);
        } else if (!strcmp(t->name, "position_ids")) {
            CU_ASSERT_EQUAL(t->batch_dim, -1);
        }
    }
    CU_ASSERT_EQUAL(approf_graph_num_params(h), 122048);
    approf_graph_free(&g);
    approf_graph_free(&h);
}

static void check(const unsigned char *buf, size_t n, int *ok, int *refused)
{
    ApprofGraph *g = NULL;
    char err[512] = "";
    int rc = approf_onnx_parse(buf, n, ORIGIN, 0, &g, err, sizeof err);
    if (rc == 0) {
        CU_ASSERT_PTR_NOT_NULL(g);
        (*ok)++;
    } else {
        CU_ASSERT_PTR_NULL(g);
        CU_ASSERT(rc == APPROF_EPARSE || rc == APPROF_EINVAL);
        CU_ASSERT_EQUAL(strncmp(err, ORIGIN ": ", strlen(ORIGIN) + 2), 0);
        (*refused)++;
    }
    approf_graph_free(&g);
}

static void test_truncated(void)
{
    int ok = 0, refused = 0;
    for (size_t n = 0; n < len; n++)
        check(data, n, &ok, &refused);
    /* the empty message and the cut ones lack the graph or a node's inputs */
    CU_ASSERT(refused > (int)len / 2);
}

static void test_corrupted(void)
{
    unsigned char *buf = malloc(len);
    int ok = 0, refused = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    for (size_t i = 0; i < len; i++) {
        static const unsigned char flips[] = {0xff, 0x01, 0x80};
        for (size_t f = 0; f < sizeof flips; f++) {
            memcpy(buf, data, len);
            buf[i] ^= flips[f];
            check(buf, len, &ok, &refused);
        }
    }
    CU_ASSERT(refused > 0);
    free(buf);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"GPT-2 block", test_load},
        {"every truncation", test_truncated},
        {"single-byte corruptions", test_corrupted},
    };
    if (load_data() < 0) {
        fprintf(stderr, "cannot read %s/gpt2-block.onnx\n", MODEL_DATA_DIR);
        return 1;
    }
    int rc = CUNIT_RUN("onnx", tests);
    free(data);
    return rc;
}
