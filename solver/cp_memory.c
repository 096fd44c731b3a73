/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memory of a cp stage (context_parallel.h; docs/context-parallel.md,
 * "Memory" and "The transient's activation-sized part"): what of its
 * dp x cp twin's entry a cp GPU holds 1/cp of. The twin holds mbs x dp x cp
 * whole sequences over dp x cp replicas, mbs a replica; a cp GPU holds
 * seq / cp tokens of each of its mbs sequences (Megatron-Core core_v0.19.0
 * get_batch_on_this_cp_rank, megatron/core/utils.py; torchtitan 9dec370
 * create_context_parallel_ctx, torchtitan/utils.py, which shards the
 * inputs, labels and rotary table on the sequence dimension before the
 * forward): its per-token buffers are 1/cp of the twin's, its weights,
 * their gathered copies and gradients the twin's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb.h"
#include "costdb_rows.h"

int64_t apsolve_cp_intermediate(int64_t intermediate, int cp)
{
    return cp > 1 && intermediate > 0 ? (intermediate + cp - 1) / cp : intermediate;
}

/* The activation-sized part of phase x's transient that a cp GPU holds
 * 1/cp of: schema 17's temp_activation where it is a part of the phase's
 * transient and of its peak ((0, min(temp, peak)]), else none. The sweep
 * writes peak >= temp >= the part; a row whose part exceeds its peak
 * (edited, or damaged) would cut the cp stage below the 1/cp of the part
 * it still holds, even below zero, so such a part counts as none and the
 * phase keeps the twin's peak (never a cut too large). The one validity
 * rule of --parallel's cut and the auto search's tables. */
static int64_t phase_activation(const CostdbPhaseTransient *x)
{
    int64_t a = x->temp_activation;
    return a > 0 && a <= x->temp && a <= x->peak ? a : 0;
}

/* The one rule of the cut: the entry's peak (its larger phase's, peak0
 * forward, peak1 backward) less the larger of the cp stage's phase peaks,
 * each the twin's less a - ceil(a / cp) (a[] the phases' activation-sized
 * parts, phase_activation; rounded up as the saved activations,
 * apsolve_cp_intermediate). The peaks may be relative to any common origin
 * (the auto search's tables keep the backward's less the forward's): a
 * valid part is at most its peak, so no phase falls below zero and nothing
 * is clamped. */
static int64_t cut_of_phases(int64_t peak0, int64_t peak1, const int64_t a[2], int cp)
{
    int64_t q0 = peak0 - (a[0] - apsolve_cp_intermediate(a[0], cp)),
            q1 = peak1 - (a[1] - apsolve_cp_intermediate(a[1], cp));
    int64_t before = peak0 > peak1 ? peak0 : peak1, after = q0 > q1 ? q0 : q1;
    return cp > 1 && before > after ? before - after : 0;
}

int64_t apsolve_cp_transient_cut_of(const CostdbPhaseTransient *ph, int cp)
{
    int64_t a[2] = {phase_activation(&ph[0]), phase_activation(&ph[1])};
    return cut_of_phases(ph[0].peak, ph[1].peak, a, cp);
}

int apsolve_cp_transient_cut(struct Costdb *db, int64_t sweep, int start, int end, int s, int c,
                             int cp, int64_t *cut, char *why, size_t len)
{
    CostdbPhaseTransient ph[2];
    int rc;
    *cut = 0;
    if (cp <= 1)
        return 0;
    rc = costdb_entry_transient(db, sweep, start, end, s, c, ph);
    if (rc < 0) {
        snprintf(why, len, "the cp stage's memory: %s", costdb_errmsg(db));
        return -1;
    }
    if (rc == 0)
        *cut = apsolve_cp_transient_cut_of(ph, cp);
    return 0;
}

struct ApsolveCpTransients {
    size_t pairs, kept, ranges;
    int *slot;          /* [pairs]: the pair's place among the kept, -1 none */
    int64_t (*f)[3];    /* [ranges * kept]: the backward's peak less the forward's,
                         * a[0], a[1] (cut_of_phases, phase_activation) */
    unsigned char *seen; /* [ranges * kept]: bit p set when phase p's row was read */
    int any;            /* an activation-sized part seen */
};

typedef struct TransientRead {
    ApsolveCpTransients *t;
    const ApsolveProblem *p;
} TransientRead;

static int transient_row(void *ctx, int start, int end, int s, int c, int phase,
                         const CostdbPhaseTransient *x)
{
    TransientRead *r = ctx;
    const ApsolveProblem *p = r->p;
    ApsolveCpTransients *t = r->t;
    int k;
    if (start < 0 || end < start || end >= p->num_layers || s >= p->num_submeshes ||
        c >= p->num_configs || (k = t->slot[(size_t)s * p->num_configs + c]) < 0)
        return 0;
    size_t at = apsolve_range_index(p->num_layers, start, end) * t->kept + (size_t)k;
    int64_t *f = t->f[at];
    int64_t a = phase_activation(x);
    if (t->seen[at] & (1u << phase))
        return 0; /* the key is unique: a phase comes once (a guard only) */
    t->seen[at] |= (unsigned char)(1u << phase);
    f[0] += phase ? x->peak : -x->peak;
    f[1 + phase] = a;
    t->any |= a > 0;
    return 0;
}

int apsolve_cp_transients_read(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                               ApsolveCpTransients **out, char *why, size_t len)
{
    ApsolveCpTransients *t;
    TransientRead r;
    int v = 0, rc;
    *out = NULL;
    if (costdb_file_version(db, &v) < 0 || v < 17)
        return APSOLVE_OK; /* no activation-sized part known */
    if (!(t = calloc(1, sizeof *t)))
        return APSOLVE_ENOMEM;
    t->pairs = (size_t)p->num_submeshes * (size_t)p->num_configs;
    t->ranges = apsolve_range_index(p->num_layers, p->num_layers - 1, p->num_layers - 1) + 1;
    if (!(t->slot = malloc((t->pairs ? t->pairs : 1) * sizeof *t->slot))) {
        apsolve_cp_transients_free(&t);
        return APSOLVE_ENOMEM;
    }
    /* the pairs that can hold a cp stage: (dp cp, tp) with the batch on
     * axis 0, dp cp even */
    for (size_t x = 0; x < t->pairs; x++) {
        const ApsolveConfig *cf = &p->configs[x];
        t->slot[x] = cf->valid && cf->force_batch_dim == 0 && cf->logical_a % 2 == 0
                         ? (int)t->kept++ : -1;
    }
    if (t->kept && (!(t->f = calloc(t->ranges * t->kept, sizeof *t->f)) ||
                    !(t->seen = calloc(t->ranges * t->kept, 1)))) {
        apsolve_cp_transients_free(&t);
        return APSOLVE_ENOMEM;
    }
    r = (TransientRead){t, p};
    if (t->kept && (rc = costdb_entry_transients(db, sweep, transient_row, &r)) < 0) {
        snprintf(why, len, "the cp stages' memory: %s", costdb_errmsg(db));
        apsolve_cp_transients_free(&t);
        return APSOLVE_EDB;
    }
    if (!t->any) /* nothing to divide: as a file before schema 17 */
        apsolve_cp_transients_free(&t);
    *out = t;
    return APSOLVE_OK;
}

int64_t apsolve_cp_transients_cut(const ApsolveCpTransients *t, const ApsolveProblem *p, int i,
                                  int j, int s, int c, int cp)
{
    int k;
    if (!t || cp <= 1 || (k = t->slot[(size_t)s * p->num_configs + c]) < 0)
        return 0;
    size_t at = apsolve_range_index(p->num_layers, i, j) * t->kept + (size_t)k;
    /* an entry with one phase's row only is no entry (costdb_stage_pairs
     * pairs none; costdb_entry_transient reads none): no cut, as
     * apsolve_cp_transient_cut's */
    if (t->seen[at] != 3)
        return 0;
    return cut_of_phases(0, t->f[at][0], t->f[at] + 1, cp);
}

void apsolve_cp_transients_free(ApsolveCpTransients **t)
{
    if (!t || !*t)
        return;
    free((*t)->slot);
    free((*t)->f);
    free((*t)->seen);
    free(*t);
    *t = NULL;
}
