/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Real ONNX graphs as an exporter wrote them: the nine ImageNet CNNs of the
 * ONNX model zoo that onnx-caffe2 exported at opset 9 (onnx/onnx's
 * backend test models, weights stripped; ONNX_REAL_DIR/SOURCES.md says
 * where each comes from and how it was stripped). Each loads as shipped
 * and its parameter count and the forward FLOPs of its convolutions and
 * matrix products equal the figures tests/model/onnx_counts.py computes
 * with python3-onnx alone (its own walk of the initializers, onnx's shape
 * inference); the published figures they agree with are noted beside
 * them (docs/models.md, "Real exports"). Skipped (77) when the corpus is
 * not in the tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <CUnit/Basic.h>

#include "config.h"
#include "cunit_run.h"
#include "graph.h"
#include "model/modelfile.h"
#include "model/onnx.h"

static const struct {
    const char *file;
    int64_t params;
    double gemm_flops;      /* forward: Conv, Gemm, MatMul; 2 per multiply-add */
} corpus[] = {
    /* Caffe's bvlc_alexnet (two groups in conv2, conv4, conv5): 60,965,224 */
    {"bvlc_alexnet.onnx", 60965224, 1309120768.0},
    /* Caffe DenseNet-121: torchvision's 7,978,856 plus 83,648: each of its
     * BatchNormalizations carries a scale and bias (1 and 0 in Caffe) and
     * the Scale layer after it its own; 2.83 GMACs as torchvision's */
    {"densenet121.onnx", 8062504, 5668323328.0},
    /* BVLC GoogLeNet: 6,998,552 (Caffe); its pools lost Caffe's ceil mode
     * in the export (112 -> 55), so 1.43 GMACs, not the paper's 1.5 */
    {"inception_v1.onnx", 6998552, 2863112704.0},
    /* BN-Inception, the same BatchNormalization + Scale pairs */
    {"inception_v2.onnx", 11214888, 4037703680.0},
    /* torchvision's resnet50: 25,557,032 parameters, 4.09 GMACs */
    {"resnet50.onnx", 25557032, 8178368512.0},
    {"shufflenet.onnx", 1393320, 249329056.0},
    /* SqueezeNet 1.1 (torchvision squeezenet1_1: 1,235,496, 0.35 GMACs) */
    {"squeezenet.onnx", 1235496, 698303872.0},
    /* torchvision's vgg19: 143,667,240 parameters, 19.63 GMACs */
    {"vgg19.onnx", 143667240, 39264124928.0},
    {"zfnet512.onnx", 87250536, 2963454016.0},
};

static double gemm_flops(const ApprofGraph *g)
{
    double f = 0;
    for (size_t op = 0; op < g->n_ops; op++) {
        ApprofKernel ks[APPROF_MAX_KERNELS];
        int n = approf_op_kernels(g, (int)op, NULL, 0, ks, APPROF_MAX_KERNELS);
        for (int i = 0; i < n; i++)
            if (ks[i].kind == APPROF_K_GEMM || ks[i].kind == APPROF_K_CONV_FWD)
                f += ks[i].flops;
    }
    return f;
}

static void test_corpus(void)
{
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        char path[512], err[1024];
        ApprofGraph *g = NULL;
        int rc;
        snprintf(path, sizeof path, "%s/%s", ONNX_REAL_DIR, corpus[i].file);
        rc = approf_model_load(path, &g, err, sizeof err);
        if (rc != 0) {
            printf("\n  %s: %s\n", corpus[i].file, err);
            CU_FAIL("a real export does not load");
            continue;
        }
        if (approf_graph_num_params(g) != corpus[i].params || gemm_flops(g) != corpus[i].gemm_flops)
            printf("\n  %s: %lld parameters, %.0f GEMM FLOPs; expected %lld, %.0f\n", corpus[i].file,
                   (long long)approf_graph_num_params(g), gemm_flops(g), (long long)corpus[i].params,
                   corpus[i].gemm_flops);
        CU_ASSERT_EQUAL(approf_graph_num_params(g), corpus[i].params);
        CU_ASSERT_DOUBLE_EQUAL(gemm_flops(g), corpus[i].gemm_flops, 0.5);
        CU_ASSERT_EQUAL(g->batch_size, 1);  /* the zoo's fixed [1, 3, 224, 224] */
        approf_graph_free(&g);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"model-zoo CNNs exported by onnx-caffe2", test_corpus},
    };
    struct stat st;
    if (!approf_onnx_available()) {
        printf("skip: this build has no ONNX reader\n");
        return 77;
    }
    if (stat(ONNX_REAL_DIR "/SOURCES.md", &st) != 0) {
        printf("skip: the corpus of real exports is not in the tree (%s)\n", ONNX_REAL_DIR);
        return 77;
    }
    return CUNIT_RUN("onnx real exports", tests);
}
