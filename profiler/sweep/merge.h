/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf merge: the sweeps of `approf sweep --shard K/N` runs (one file per
 * shard, or several shards in one file) combined into one complete sweep,
 * as if one process had run it. Uses only the costdb API.
 */
#ifndef APPROF_MERGE_H
#define APPROF_MERGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ApprofMergeSummary {
    int64_t sweep_id;            /* the new sweep in the output database */
    int shard_n;                 /* N of the shards merged */
    size_t entries;              /* entries copied from the shards */
    size_t composed;             /* range entries composed (profile mode individual) */
    size_t placements;
    char profile_mode[32];
} ApprofMergeSummary;

/* Reads, from each input database, its newest sweep that is a shard ("K/N")
 * and the newest sweep of every other shard value with the same provenance
 * in that file; checks that together they are shards 0..N-1 of one sweep,
 * each exactly once, each complete, all with the same provenance (model
 * signature, hardware fingerprint, cluster, batch, layers, spaces, mode,
 * dtype, backend, options, submeshes and configs). Then writes into out_path
 * (created if missing; an existing file gets a new sweep) in one
 * transaction: the hardware and model rows (reused when present), one sweep
 * with shard '' and status complete, its submeshes and configs, every entry
 * and placement, and for profile mode individual the composed range entries.
 * Returns 0; APPROF_EINVAL with the reason in err when the shards do not
 * make one sweep (nothing written); APPROF_EDB with the database message;
 * APPROF_ENOMEM. */
int approf_merge_shards(const char *out_path, const char *const *inputs, size_t n_inputs,
                        ApprofMergeSummary *sum, char *err, size_t errlen);

#endif
