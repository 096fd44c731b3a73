/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profiler's in-memory hash: 128 bits over byte strings, eight bytes per
 * step. For keys that live only in one process (the sharding ILP cache, the
 * stage-program signature of the sweep's reuse table); what is stored in a
 * database (graph and hardware hashes) uses costdb/fnv.h's FNV-1a, so
 * these values may change between versions without touching any file.
 */
#ifndef APPROF_HASH_H
#define APPROF_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct ApprofHash128 {
    uint64_t a, b;
} ApprofHash128;

static inline void approf_hash128_init(ApprofHash128 *h, uint64_t seed)
{
    h->a = 0xcbf29ce484222325ULL ^ seed;
    h->b = 0x243f6a8885a308d3ULL + seed * 0x9e3779b97f4a7c15ULL;
}

static inline void approf_hash128_word(ApprofHash128 *h, uint64_t w)
{
    h->a = (h->a ^ w) * 0x9e3779b97f4a7c15ULL;
    h->a ^= h->a >> 32;
    h->b = (h->b + w) * 0xc2b2ae3d27d4eb4fULL;
    h->b = (h->b << 31) | (h->b >> 33);
}

static inline void approf_hash128_update(ApprofHash128 *h, const void *data, size_t n)
{
    const unsigned char *s = data;
    uint64_t w;
    for (; n >= 8; n -= 8, s += 8) {
        memcpy(&w, s, 8);
        approf_hash128_word(h, w);
    }
    w = (uint64_t)n << 56;  /* the tail, with its length */
    for (size_t i = 0; i < n; i++)
        w |= (uint64_t)s[i] << (8 * i);
    approf_hash128_word(h, w);
}

/* 64 bits of a NUL-terminated text, for in-memory tables keyed by names. */
static inline uint64_t approf_hash_text(const char *s)
{
    ApprofHash128 h;
    approf_hash128_init(&h, 0);
    approf_hash128_update(&h, s, strlen(s));
    return h.a;
}

#endif
