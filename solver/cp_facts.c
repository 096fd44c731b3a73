/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stage's cp facts from its placements (cp_facts.h; moved out of
 * context_parallel.c unchanged, the fold now also serving --parallel's
 * composed ranges).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_text.h"
#include "cp_facts.h"
#include "solver_int.h"
#include "unfit_in_place.h"

static int ends(const char *name, const char *tail)
{
    size_t n = strlen(name), t = strlen(tail);
    return n >= t && !strcmp(name + n - t, tail);
}

/* Reads stage (start..end, submesh s, config c)'s facts. 0; -1 with why. */
int apsolve_cp_read_facts(struct Costdb *db, int64_t sweep, int start, int end, int s, int c,
                          CpFacts *x, char *why, size_t len)
{
    CostdbPlacement *pl = NULL;
    size_t n = 0;
    memset(x, 0, sizeof *x);
    x->dsize = 2;
    if (apsolve_stage_inputs(db, sweep, start, end, s, c, "the cp communication", &x->f, &pl,
                             &n, why, len) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int64_t d[8];
        int nd = costdb_shape_parse(pl[i].shape, d, 8);
        if (nd < 2)
            continue;
        /* the sequence: dimension 1 of the stage's inputs ([B, S] token
         * ids, [B, S, H] activations), the largest (a mask [B, 1, S, S]
         * has 1 there) */
        if (!strcmp(pl[i].role, "input") && d[0] > 0 && d[1] > x->seq) {
            x->batch = d[0];
            x->seq = d[1];
        } else if (!strcmp(pl[i].role, "param") && nd == 2) {
            const char *t = pl[i].tensor_name;
            if (ends(t, "/key/kernel") || ends(t, "/k_proj/kernel")) {
                x->layers++;
                x->kvw = (double)d[1];
                if (costdb_dtype_bytes(pl[i].dtype) > 0)
                    x->dsize = costdb_dtype_bytes(pl[i].dtype);
            } else if (ends(t, "/query/kernel") || ends(t, "/q_proj/kernel")) {
                x->qw = (double)d[1];
            }
        }
    }
    free(pl);
    x->known = 1;
    return 0;
}

/* Range i..j's facts summed from its layers' in cache (no reads): unknown
 * (known 0) from its first layer without facts on. */
void apsolve_cp_fold_facts(const CpFacts *cache, int i, int j, CpFacts *x)
{
    memset(x, 0, sizeof *x);
    for (int k = i; k <= j; k++) {
        const CpFacts *y = &cache[k];
        if (!y->known) {
            x->known = 0;
            return;
        }
        if (k == i) {
            *x = *y;
            continue;
        }
        x->layers += y->layers;
        if (y->seq > x->seq) {
            x->seq = y->seq;
            x->batch = y->batch;
        }
        if (y->layers) {
            x->kvw = y->kvw;
            x->qw = y->qw > 0 ? y->qw : x->qw;
            x->dsize = y->dsize;
        }
    }
}

/* Range i..j's facts: each layer's read once into cache (its first entry
 * of the single layer) up to the first without them, then folded. 0; -1
 * with why. */
int apsolve_cp_range_facts(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                           int as_restored, CpFacts *cache, int i, int j, CpFacts *x, char *why,
                           size_t len)
{
    for (int k = i; k <= j; k++) {
        CpFacts *y = &cache[k];
        for (int s = 0; !y->known && s < p->num_submeshes; s++)
            for (int c = 0; !y->known && c < p->num_configs; c++) {
                size_t idx = apsolve_index(p, k, k, s, c);
                if (p->configs[(size_t)s * p->num_configs + c].valid &&
                    isfinite(as_restored ? apsolve_unfit_restored_cost(p, idx) : p->cost[idx]) &&
                    apsolve_cp_read_facts(db, sweep, k, k, s, c, y, why, len))
                    return -1;
            }
        if (!y->known)
            break;
    }
    apsolve_cp_fold_facts(cache, i, j, x);
    return 0;
}
