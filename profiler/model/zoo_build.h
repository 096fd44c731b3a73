/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the zoo: a small builder over approf_graph_add_op that keeps
 * the first error, so model code reads as a straight sequence of layers.
 * Every helper returns a tensor index, or -1 once an error has occurred.
 */
#ifndef APPROF_ZOO_BUILD_H
#define APPROF_ZOO_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "zoo.h"

typedef struct Zb {
    ApprofGraph *g;
    ApprofDtype dt;
    int rc;
    char *err;
    size_t errlen;
    int eager;      /* llama family: ApprofOpAttrs.eager on its RMSNorms, rotary embeddings
                     * and grouped-query attentions (ApprofZooOptions.eager_elementwise) */
} Zb;

int zb_input(Zb *b, const char *name, int ndim, const int64_t *dims, int batch_dim, ApprofDtype dt);
int zb_param(Zb *b, const char *prefix, const char *leaf, int ndim, const int64_t *dims);
int zb_op(Zb *b, ApprofOpKind kind, const char *name, const int *in, int n_in, const ApprofOpAttrs *a);
int zb_unary(Zb *b, ApprofOpKind kind, const char *prefix, const char *leaf, int x);
/* prefix/leaf, a silu or gelu; rerun: its output is not kept for the
 * backward, which reruns it (ApprofOpAttrs.rerun) */
int zb_activation(Zb *b, ApprofOpKind kind, const char *prefix, const char *leaf, int x, int rerun);
/* prefix/relu overwriting x (torchvision's nn.ReLU(inplace=True)) */
int zb_relu_inplace(Zb *b, const char *prefix, int x);
int zb_binary(Zb *b, ApprofOpKind kind, const char *prefix, const char *leaf, int x, int y);
int zb_dense(Zb *b, const char *prefix, int x, int64_t n_out, int bias);
int zb_conv(Zb *b, const char *prefix, int x, int64_t k, int r, int stride, int pad, int bias);
int zb_norm(Zb *b, ApprofOpKind kind, const char *prefix, int x);
int zb_reshape(Zb *b, const char *prefix, const char *leaf, int x, int ndim, const int64_t *dims);
int zb_transpose(Zb *b, const char *prefix, const char *leaf, int x, int ndim, const int *perm);
int zb_pool(Zb *b, ApprofOpKind kind, const char *prefix, int x, int k, int stride, int pad);
int zb_softmax(Zb *b, const char *prefix, int x, int axis);
int zb_boundary(Zb *b, const char *name, int x);
int zb_fail(Zb *b, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Model builders (zoo_cnn.c, zoo_tf.c). */
int zoo_mlp(Zb *b, const ApprofZooOptions *o);
int zoo_resnet50(Zb *b, const ApprofZooOptions *o);
int zoo_wide_resnet(Zb *b, const ApprofZooOptions *o);
int zoo_gpt(Zb *b, const ApprofZooOptions *o);
int zoo_bert(Zb *b, const ApprofZooOptions *o);
int zoo_swin(Zb *b, const ApprofZooOptions *o);
/* zoo_llama.c: llama, mistral, mixtral, qwen2, deepseek_moe (b->g->name). */
int zoo_decoder(Zb *b, const ApprofZooOptions *o);
/* The presets of a decoder family as "a|b|c" in buf. */
const char *zoo_decoder_presets(const char *family, char *buf, size_t len);
/* zoo_presets.c: the config.json text of preset name (NULL: the default)
 * of a Hugging Face family with a zoo name of its own, NULL when there is
 * none; and the family's presets as "a|b|c" in buf. */
const char *zoo_hf_preset(const char *family, const char *name);
const char *zoo_hf_presets(const char *family, char *buf, size_t len);

#endif
