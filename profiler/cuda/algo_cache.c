/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cuDNN algorithm cache: cudnnFind*AlgorithmEx runs once per
 * convolution shape, dtype and direction, and its choice is kept in this
 * open-addressing hash table (linear probing, grown at half load) for every
 * later stage that has the same convolution.
 */
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "fnv.h"

typedef struct Slot {
    int used;
    ApprofConvKey key;
    ApprofConvAlgo val;
} Slot;

struct ApprofAlgoCache {
    Slot *slots;
    size_t cap;      /* a power of two */
    size_t count;
};

int approf_conv_key_from_kernel(const ApprofKernel *k, ApprofDtype dt, ApprofConvKey *key)
{
    if (!k || !key)
        return APPROF_EINVAL;
    memset(key, 0, sizeof *key);
    switch (k->kind) {
    case APPROF_K_CONV_FWD: key->dir = APPROF_CONV_DIR_FWD; break;
    case APPROF_K_CONV_BWD_DATA: key->dir = APPROF_CONV_DIR_BWD_DATA; break;
    case APPROF_K_CONV_BWD_FILTER: key->dir = APPROF_CONV_DIR_BWD_FILTER; break;
    default: return APPROF_EINVAL;
    }
    key->dtype = (int)dt;
    key->n = k->conv_n;
    key->c = k->conv_c;
    key->h = k->conv_h;
    key->w = k->conv_w;
    key->k = k->conv_k;
    key->r = k->conv_r;
    key->s = k->conv_s;
    key->stride[0] = k->conv_stride[0] > 0 ? k->conv_stride[0] : 1;
    key->stride[1] = k->conv_stride[1] > 0 ? k->conv_stride[1] : 1;
    key->pad[0] = k->conv_pad[0];
    key->pad[1] = k->conv_pad[1];
    key->groups = k->conv_groups > 0 ? k->conv_groups : 1;
    if (key->n <= 0 || key->c <= 0 || key->h <= 0 || key->w <= 0 || key->k <= 0 ||
        key->r <= 0 || key->s <= 0 || key->pad[0] < 0 || key->pad[1] < 0 ||
        key->c % key->groups || key->k % key->groups)
        return APPROF_EINVAL;
    return APPROF_OK;
}

static uint64_t fnv(uint64_t h, int64_t v)
{
    return costdb_fnv1a_i64(h, v);
}

uint64_t approf_conv_key_hash(const ApprofConvKey *key)
{
    uint64_t h = COSTDB_FNV_BASIS;
    const int64_t f[] = {key->dir, key->dtype, key->n, key->c, key->h, key->w, key->k,
                         key->r, key->s, key->stride[0], key->stride[1], key->pad[0],
                         key->pad[1], key->groups};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        h = fnv(h, f[i]);
    return h;
}

static int key_equal(const ApprofConvKey *a, const ApprofConvKey *b)
{
    return a->dir == b->dir && a->dtype == b->dtype && a->n == b->n && a->c == b->c &&
           a->h == b->h && a->w == b->w && a->k == b->k && a->r == b->r && a->s == b->s &&
           a->stride[0] == b->stride[0] && a->stride[1] == b->stride[1] &&
           a->pad[0] == b->pad[0] && a->pad[1] == b->pad[1] && a->groups == b->groups;
}

int approf_algo_cache_new(ApprofAlgoCache **out)
{
    ApprofAlgoCache *c;
    if (!out)
        return APPROF_EINVAL;
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (!c)
        return APPROF_ENOMEM;
    c->cap = 64;
    c->slots = calloc(c->cap, sizeof *c->slots);
    if (!c->slots) {
        free(c);
        return APPROF_ENOMEM;
    }
    *out = c;
    return APPROF_OK;
}

void approf_algo_cache_free(ApprofAlgoCache **c)
{
    if (!c || !*c)
        return;
    free((*c)->slots);
    free(*c);
    *c = NULL;
}

/* The slot holding key, or the empty slot where it would go. */
static Slot *find_slot(Slot *slots, size_t cap, const ApprofConvKey *key)
{
    size_t i = (size_t)approf_conv_key_hash(key) & (cap - 1);
    while (slots[i].used && !key_equal(&slots[i].key, key))
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

int approf_algo_cache_get(const ApprofAlgoCache *c, const ApprofConvKey *key, ApprofConvAlgo *out)
{
    const Slot *s;
    if (!c || !key)
        return 0;
    s = find_slot(c->slots, c->cap, key);
    if (!s->used)
        return 0;
    if (out)
        *out = s->val;
    return 1;
}

static int grow(ApprofAlgoCache *c)
{
    size_t cap = c->cap * 2;
    Slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return APPROF_ENOMEM;
    for (size_t i = 0; i < c->cap; i++)
        if (c->slots[i].used)
            *find_slot(slots, cap, &c->slots[i].key) = c->slots[i];
    free(c->slots);
    c->slots = slots;
    c->cap = cap;
    return APPROF_OK;
}

int approf_algo_cache_put(ApprofAlgoCache *c, const ApprofConvKey *key, const ApprofConvAlgo *v)
{
    Slot *s;
    if (!c || !key || !v)
        return APPROF_EINVAL;
    s = find_slot(c->slots, c->cap, key);
    if (s->used) {
        s->val = *v;
        return APPROF_OK;
    }
    if (2 * (c->count + 1) > c->cap) {
        int rc = grow(c);
        if (rc < 0)
            return rc;
        s = find_slot(c->slots, c->cap, key);
    }
    s->used = 1;
    s->key = *key;
    s->val = *v;
    c->count++;
    return APPROF_OK;
}

size_t approf_algo_cache_count(const ApprofAlgoCache *c)
{
    return c ? c->count : 0;
}
