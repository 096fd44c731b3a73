/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FNV-1a, 64 bit: the one hash of what approf stores or compares across
 * processes and versions (graph hashes, sweep fingerprints, hardware spec
 * fingerprints, measured-curve hashes, the cuDNN algorithm cache key) and of
 * costdb's own small tables. Byte by byte, so it is the same on every
 * platform; in-memory keys that never leave a process use profiler/hash.h
 * instead, which is faster and may change between versions.
 *
 * Two offset bases are in use and both must stay as they are, since the
 * hashes made with them are stored in databases and compared:
 * COSTDB_FNV_BASIS is FNV's; COSTDB_FNV_BASIS_V1 is the basis approf's
 * first schema used for graph hashes, sweep fingerprints and name tables,
 * FNV's with its last digit missing. Changing either would make every
 * stored graph hash differ from a fresh build of the same model.
 */
#ifndef COSTDB_FNV_H
#define COSTDB_FNV_H

#include <stddef.h>
#include <stdint.h>

#define COSTDB_FNV_PRIME UINT64_C(1099511628211)
#define COSTDB_FNV_BASIS UINT64_C(14695981039346656037)
#define COSTDB_FNV_BASIS_V1 UINT64_C(1469598103934665603)

/* h extended by the n bytes at data. */
static inline uint64_t costdb_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= COSTDB_FNV_PRIME;
    }
    return h;
}

/* h extended by the bytes of the NUL-terminated s (not the NUL). */
static inline uint64_t costdb_fnv1a_str(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= COSTDB_FNV_PRIME;
    }
    return h;
}

/* h extended by the eight bytes of v, least significant first (the same
 * value on every platform, whatever its byte order). */
static inline uint64_t costdb_fnv1a_i64(uint64_t h, int64_t v)
{
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++) {
        h ^= (u >> (8 * i)) & 0xffu;
        h *= COSTDB_FNV_PRIME;
    }
    return h;
}

#endif
