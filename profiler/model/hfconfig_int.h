/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the Hugging Face config reader: the checked field readers of
 * hfconfig.c ("PATH: field F: ..." on a wrong or missing field) and the
 * families' readers, hfconfig.c (llama, mistral, mixtral, qwen2, deepseek,
 * gpt2, bert) and hfconfig_variants.c (the decoders that vary the Llama
 * layout). Not part of the library's interface.
 */
#ifndef APPROF_HFCONFIG_INT_H
#define APPROF_HFCONFIG_INT_H

#include <stdint.h>

#include "config.h"
#include "hfconfig.h"

#define HF_MAX_SIZE ((int64_t)1 << 24)

#if HAVE_JANSSON
#include <jansson.h>

typedef struct {
    const char *path;        /* the file, as errors name it */
    char *err;
    size_t errlen;
} HfRd;

/* "PATH: " and the message into r->err; returns APPROF_EPARSE. */
int hf_err(HfRd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An integer field in lo..hi; def < 0 makes it required; null is absent. */
int hf_get_int(HfRd *r, json_t *root, const char *key, int64_t lo, int64_t hi, int64_t def, int *out);
int hf_get_bool(HfRd *r, json_t *root, const char *key, int def, int *out);
/* A positive number. */
int hf_get_num(HfRd *r, json_t *root, const char *key, double def, double *out);
/* A string that, when present, is one of ok (NULL-terminated). */
int hf_check_str(HfRd *r, json_t *root, const char *key, const char *const *ok);
/* rope_theta at the top level or in rope_parameters; rope_scaling checked. */
int hf_get_rope(HfRd *r, json_t *root, double def, double *out);
/* architectures, when present, lists only "<cls>ForCausalLM". */
int hf_check_archs(HfRd *r, json_t *root, const char *cls);

/* hfconfig_variants.c */
int hf_read_variant(HfRd *r, json_t *root, ApprofHfConfig *c);
int hf_read_neox(HfRd *r, json_t *root, ApprofHfConfig *c);
int hf_read_falcon(HfRd *r, json_t *root, ApprofHfConfig *c);
int hf_read_mla(HfRd *r, json_t *root, ApprofHfConfig *c);
int hf_read_llama4(HfRd *r, json_t *root, ApprofHfConfig *c);
#endif

#endif
