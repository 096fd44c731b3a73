/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zoo models without attention: Alpa's tutorial MLP (docs pipeshard
 * tutorial: four Dense layers with relu, MSE loss), torchvision's ResNet-50
 * (v1.5: stride on the 3x3 conv, no conv biases, BN scale and bias) and the
 * Wide-ResNet of Alpa's benchmarks (alpa/model/wide_resnet.py: Flax ResNetV1
 * whose bottleneck 3x3 conv has filters x width_factor channels).
 */
#include <stdio.h>
#include <string.h>

#include "zoo_build.h"

int zoo_mlp(Zb *b, const ApprofZooOptions *o)
{
    int64_t h = o->hidden ? o->hidden : 2048, bs = b->g->batch_size;
    int layers = o->num_layers ? o->num_layers : 4;
    int64_t dims[2] = {bs, h};
    int x, y;

    if (layers % 2)
        return zb_fail(b, APPROF_EINVAL, "mlp: --num-layers must be even (pairs of h->4h->h)");
    x = zb_input(b, "x", 2, dims, 0, b->dt);
    y = zb_input(b, "y", 2, dims, 0, b->dt);
    for (int i = 0; i < layers; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "Dense_%d", i);
        x = zb_dense(b, nm, x, i % 2 ? h : 4 * h, 1);
        x = zb_unary(b, APPROF_OP_RELU, nm, "relu", x);
        if (o->manual_boundaries && i == layers / 2 - 1)
            x = zb_boundary(b, "pipeline_boundary", x);
    }
    zb_binary(b, APPROF_OP_MSE_LOSS, "loss", NULL, x, y);
    return b->rc;
}

static int image_inputs(Zb *b, int64_t img, int *x, int *labels)
{
    int64_t dims[4] = {b->g->batch_size, 3, img, img};
    *x = zb_input(b, "images", 4, dims, 0, b->dt);
    *labels = zb_input(b, "labels", 1, dims, 0, APPROF_F32);
    return b->rc;
}

static int classifier(Zb *b, int x, int labels, int64_t classes, const char *fc)
{
    x = zb_unary(b, APPROF_OP_GLOBAL_POOL, "avgpool", NULL, x);
    x = zb_dense(b, fc, x, classes, 1);
    zb_binary(b, APPROF_OP_CROSS_ENTROPY, "loss", NULL, x, labels);
    return b->rc;
}

static int dataset_dims(Zb *b, const ApprofZooOptions *o, const char *def, int64_t *img, int64_t *classes)
{
    const char *ds = o->dataset ? o->dataset : def;
    if (!strcmp(ds, "imagenet")) {
        *img = 224;
        *classes = 1000;
    } else if (!strcmp(ds, "cifar10")) {
        *img = 32;
        *classes = 10;
    } else if (!strcmp(ds, "cifar100")) {
        *img = 32;
        *classes = 100;
    } else {
        return zb_fail(b, APPROF_EINVAL, "unknown dataset '%s' (imagenet, cifar10, cifar100)", ds);
    }
    if (o->image_size)
        *img = o->image_size;
    if (o->num_classes)
        *classes = o->num_classes;
    return 0;
}

/* torchvision Bottleneck: 1x1, 3x3 (stride), 1x1 x4, projection when needed.
 * Every ReLU runs in place, as torchvision's nn.ReLU(inplace=True)
 * (torchvision/models/resnet.py). */
static int tv_bottleneck(Zb *b, const char *pre, int x, int64_t planes, int stride, int down)
{
    char p[96];
    int y, r = x;
    snprintf(p, sizeof p, "%s/conv1", pre);
    y = zb_conv(b, p, x, planes, 1, 1, 0, 0);
    snprintf(p, sizeof p, "%s/bn1", pre);
    y = zb_relu_inplace(b, p, zb_norm(b, APPROF_OP_BATCH_NORM, p, y));
    snprintf(p, sizeof p, "%s/conv2", pre);
    y = zb_conv(b, p, y, planes, 3, stride, 1, 0);
    snprintf(p, sizeof p, "%s/bn2", pre);
    y = zb_relu_inplace(b, p, zb_norm(b, APPROF_OP_BATCH_NORM, p, y));
    snprintf(p, sizeof p, "%s/conv3", pre);
    y = zb_conv(b, p, y, planes * 4, 1, 1, 0, 0);
    snprintf(p, sizeof p, "%s/bn3", pre);
    y = zb_norm(b, APPROF_OP_BATCH_NORM, p, y);
    if (down) {
        snprintf(p, sizeof p, "%s/downsample/conv", pre);
        r = zb_conv(b, p, x, planes * 4, 1, stride, 0, 0);
        snprintf(p, sizeof p, "%s/downsample/bn", pre);
        r = zb_norm(b, APPROF_OP_BATCH_NORM, p, r);
    }
    return zb_relu_inplace(b, pre, zb_binary(b, APPROF_OP_ADD, pre, "add", y, r));
}

int zoo_resnet50(Zb *b, const ApprofZooOptions *o)
{
    static const int blocks[4] = {3, 4, 6, 3};
    int64_t img = 0, classes = 0, inplanes = 64;
    int x, labels;

    if (dataset_dims(b, o, "imagenet", &img, &classes) < 0 || image_inputs(b, img, &x, &labels) < 0)
        return b->rc;
    x = zb_conv(b, "conv1", x, 64, 7, 2, 3, 0);
    x = zb_relu_inplace(b, "bn1", zb_norm(b, APPROF_OP_BATCH_NORM, "bn1", x));
    x = zb_pool(b, APPROF_OP_MAX_POOL, "maxpool", x, 3, 2, 1);
    for (int s = 0; s < 4; s++) {
        int64_t planes = (int64_t)64 << s;
        for (int i = 0; i < blocks[s]; i++) {
            char pre[32];
            int stride = s > 0 && i == 0 ? 2 : 1;
            snprintf(pre, sizeof pre, "layer%d.%d", s + 1, i);
            x = tv_bottleneck(b, pre, x, planes, stride, i == 0 && (stride != 1 || inplanes != planes * 4));
            inplanes = planes * 4;
        }
    }
    return classifier(b, x, labels, classes, "fc");
}

/* Alpa's ResNetBlock / BottleneckResNetBlock; Flax "SAME" padding. */
static int wr_block(Zb *b, const char *pre, int x, int64_t filters, int stride, int width, int bottleneck)
{
    char p[96];
    int y, r = x;
    int64_t out_c = bottleneck ? filters * 4 : filters;
    const ApprofTensor *t = &b->g->tensors[x < 0 ? 0 : x];
    int proj = x >= 0 && (t->dims[1] != out_c || stride != 1);

    if (bottleneck) {
        snprintf(p, sizeof p, "%s/Conv_0", pre);
        y = zb_conv(b, p, x, filters, 1, 1, 0, 0);
        snprintf(p, sizeof p, "%s/BatchNorm_0", pre);
        y = zb_unary(b, APPROF_OP_RELU, p, "relu", zb_norm(b, APPROF_OP_BATCH_NORM, p, y));
        snprintf(p, sizeof p, "%s/Conv_1", pre);
        y = zb_conv(b, p, y, filters * width, 3, stride, 1, 0);
        snprintf(p, sizeof p, "%s/BatchNorm_1", pre);
        y = zb_unary(b, APPROF_OP_RELU, p, "relu", zb_norm(b, APPROF_OP_BATCH_NORM, p, y));
        snprintf(p, sizeof p, "%s/Conv_2", pre);
        y = zb_conv(b, p, y, filters * 4, 1, 1, 0, 0);
        snprintf(p, sizeof p, "%s/BatchNorm_2", pre);
        y = zb_norm(b, APPROF_OP_BATCH_NORM, p, y);
    } else {
        snprintf(p, sizeof p, "%s/Conv_0", pre);
        y = zb_conv(b, p, x, filters, 3, stride, 1, 0);
        snprintf(p, sizeof p, "%s/BatchNorm_0", pre);
        y = zb_unary(b, APPROF_OP_RELU, p, "relu", zb_norm(b, APPROF_OP_BATCH_NORM, p, y));
        snprintf(p, sizeof p, "%s/Conv_1", pre);
        y = zb_conv(b, p, y, filters, 3, 1, 1, 0);
        snprintf(p, sizeof p, "%s/BatchNorm_1", pre);
        y = zb_norm(b, APPROF_OP_BATCH_NORM, p, y);
    }
    if (proj) {
        snprintf(p, sizeof p, "%s/conv_proj", pre);
        r = zb_conv(b, p, x, out_c, 1, stride, 0, 0);
        snprintf(p, sizeof p, "%s/norm_proj", pre);
        r = zb_norm(b, APPROF_OP_BATCH_NORM, p, r);
    }
    return zb_unary(b, APPROF_OP_RELU, pre, "relu", zb_binary(b, APPROF_OP_ADD, pre, "add", r, y));
}

int zoo_wide_resnet(Zb *b, const ApprofZooOptions *o)
{
    static const struct { int depth; int stages[4]; int bottleneck; } cfg[] = {
        {18, {2, 2, 2, 2}, 0}, {34, {3, 4, 6, 3}, 0}, {50, {3, 4, 6, 3}, 1},
        {101, {3, 4, 23, 3}, 1}, {152, {3, 8, 36, 3}, 1}, {200, {3, 24, 36, 3}, 1},
    };
    int depth = o->depth ? o->depth : 50, width = o->width_factor ? o->width_factor : 2;
    int64_t filters = o->num_filters ? o->num_filters : 160, img = 0, classes = 0;
    int x, labels, c = -1, n = 0;

    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++)
        if (cfg[i].depth == depth)
            c = (int)i;
    if (c < 0)
        return zb_fail(b, APPROF_EINVAL, "wide_resnet: --depth must be 18, 34, 50, 101, 152 or 200");
    if (!cfg[c].bottleneck && width != 1 && o->width_factor)
        return zb_fail(b, APPROF_EINVAL, "wide_resnet: depth %d uses basic blocks, width factor must be 1", depth);
    if (!cfg[c].bottleneck)
        width = 1;
    if (dataset_dims(b, o, "cifar10", &img, &classes) < 0 || image_inputs(b, img, &x, &labels) < 0)
        return b->rc;
    x = zb_conv(b, "conv_init", x, filters, 7, 2, 3, 0);
    x = zb_unary(b, APPROF_OP_RELU, "bn_init", "relu", zb_norm(b, APPROF_OP_BATCH_NORM, "bn_init", x));
    x = zb_pool(b, APPROF_OP_MAX_POOL, "max_pool", x, 3, 2, 1);
    for (int s = 0; s < 4; s++)
        for (int j = 0; j < cfg[c].stages[s]; j++) {
            char pre[48];
            snprintf(pre, sizeof pre, "%s_%d", cfg[c].bottleneck ? "BottleneckResNetBlock" : "ResNetBlock", n++);
            x = wr_block(b, pre, x, filters << s, s > 0 && j == 0 ? 2 : 1, width, cfg[c].bottleneck);
        }
    return classifier(b, x, labels, classes, "Dense_0");
}
