/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A search candidate of a session (session_int.h): a sweep at one
 * micro-batch size with its loaded problem, and what the searches ask of
 * a plan made on it (its batch, which of two is better, its full
 * estimate). Moved out of session_search.c, which neared 800 lines.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"
#include "session.h"
#include "session_int.h"
#include "solver_int.h"

void apsolve_cand_free(ApsolveCand *c)
{
    if (c->borrowed)
        c->p = NULL; /* main_c's: freed with it */
    else
        apsolve_problem_free(&c->p);
    c->borrowed = 0;
}

/* Loads sweep id as a candidate with B = global_batch / micro. */
int apsolve_cand_load(Costdb *db, const ApsolveRequest *a, int64_t id, int64_t global_batch,
                      int64_t micro, int B, ApsolveCand *c)
{
    char why[256];
    int e;
    memset(c, 0, sizeof *c);
    c->sweep = id;
    if (costdb_sweep_get(db, id, &c->sw))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "sweep %lld: %s", (long long)id,
                            costdb_errmsg(db));
    c->opt = a->opt;
    c->opt.micro_batches = B;
    c->global_batch = global_batch;
    c->micro = micro;
    e = apsolve_problem_from_db_msg(db, id, &c->opt, &c->p, why, sizeof why);
    if (e)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "sweep %lld: %s", (long long)id,
                            e == APSOLVE_EDB ? costdb_errmsg(db)
                                             : why[0] ? why : apsolve_strerror(e));
    return 0;
}

void apsolve_plan_batch(ApsolvePlan *pl, const ApsolveCand *c)
{
    pl->global_batch = c->global_batch;
    pl->micro_batch_size = c->micro;
}

int apsolve_plan_better(const ApsolvePlan *x, const ApsolvePlan *y)
{
    return !y || x->total_cost < y->total_cost ||
           (x->total_cost == y->total_cost && x->cost < y->cost);
}

double apsolve_full_price_scaled(Costdb *db, int64_t sweep, const ApsolvePlan *pl,
                                 double activation_scale)
{
    ApsolveFullEstimate f;
    if (apsolve_full_estimate_ex(db, sweep, pl, activation_scale, &f, NULL) == 0 &&
        f.available && isfinite(f.total))
        return f.total;
    return pl->total_cost;
}

double apsolve_full_price(Costdb *db, int64_t sweep, const ApsolvePlan *pl)
{
    return apsolve_full_price_scaled(db, sweep, pl, 1.0);
}
