/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared table of the exact search's stage options (ApsolveDpShared,
 * dp_int.h; what dp_prep.c's preps read): per (i, j, submesh), in Alpa's
 * loop order (end descending, submesh ascending), every usable config
 * (allowed by the objective, finite cost) sorted by (cost, config), with
 * its apply cost. Made once per problem and objective class, lent to the
 * zero-bubble families' tables (apsolve_dp_shared_borrow).
 *
 * With two threads or more (ApsolveOptions.load_threads) a large table is
 * built in two parts side by side: rows 0 .. m - 1 into the table itself,
 * rows m .. L - 1 into buffers of their own on a second thread, then
 * appended (docs/perf-apsdense.md). A row's options and items depend on
 * the problem, the objective and the row alone (the sort hints only speed
 * a sort whose result is the total order (cost, config): dp_sort.c), so
 * the table is the one a single thread builds, byte for byte.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dp_int.h"
#include "page_populate.h"
#include "search_pool.h"
#include "solver_int.h"

/* The most hint slots a part keeps (L x S x C ints), else no hints */
#define SORT_HINT_CELLS ((size_t)1 << 24)
/* The fewest cells of a table built in two parts: below, a thread's start
 * is not worth it (the 126-layer file has 6.9 M) */
#define SPLIT_MIN_CELLS ((size_t)1 << 16)

ApsolveDpShared *apsolve_dp_shared_new(void)
{
    return calloc(1, sizeof(ApsolveDpShared));
}

static void shared_clear(ApsolveDpShared *sh)
{
    apsolve_dp_prep_free(&sh->prep);
    apsolve_dp_prep_free(&sh->plain);
    if (!sh->borrowed) {
        free(sh->opts);
        free(sh->opt_off);
        free(sh->items);
    }
    free(sh->limits);
    apsolve_dp_chains_free(&sh->chains);
    memset(sh, 0, sizeof *sh);
}

int apsolve_dp_shared_whole_only(const ApsolveDpShared *sh)
{
    return sh->whole_only;
}

/* A table lent rather than built again: the chunked families' searches
 * on two threads (session_search.c, chunked_threads) each built their own
 * copy of the interleaved family's table, some 40 MB of items and apply
 * costs on the 126-layer file, the pages' first touch (about 2 s per GB
 * of CPU on this machine) most of each build's time. */
int apsolve_dp_shared_borrow(ApsolveDpShared *sh, const ApsolveDpShared *from)
{
    if (!sh || !from || sh->built || !from->built || from->whole_only)
        return 0;
    sh->p = from->p;
    sh->full = from->full;
    sh->whole_only = 0;
    sh->opts = from->opts;
    sh->opt_off = from->opt_off;
    sh->items = from->items;
    sh->n_opts = from->n_opts;
    sh->n_items = from->n_items;
    sh->borrowed = 1;
    sh->built = 1;
    return 1;
}

void apsolve_dp_shared_free(ApsolveDpShared *sh)
{
    if (!sh)
        return;
    shared_clear(sh);
    free(sh);
}

/* Rows i0 .. i1 - 1 of a table: their options (item_off from 0) and
 * items, and opt_off[i - i0] per row (from 0), in arrays with room for
 * rows i0 .. room - 1 (room >= i1: the rows of a part appended later). */
typedef struct SharedRows {
    const ApsolveProblem *p;
    const ApsolveOptions *opt;
    const unsigned char *allowed; /* apsolve_config_allowed per (submesh, config) */
    int whole_only, i0, i1, room;
    DpOpt *opts;
    int *opt_off;
    DpSharedItem *items;
    size_t cap, n_opts, n_items;  /* cap: items room (every cell of the rows) */
    int rc;
} SharedRows;

/* The cells (i <= j, submesh, config) of rows i0 .. i1 - 1, and their
 * ranges (i, j) times the submeshes: each part's room. */
static size_t rows_ranges(int L, int i0, int i1)
{
    size_t n = 0;
    for (int i = i0; i < i1; i++)
        n += (size_t)(L - i);
    return n;
}

/* Builds r's rows into r's arrays (allocated: room for every cell of its
 * room's rows). */
static int rows_build(SharedRows *r)
{
    const ApsolveProblem *p = r->p;
    int L = p->num_layers, S = p->num_submeshes, C = p->num_configs, D = p->num_devices;
    size_t max_opts = rows_ranges(L, r->i0, r->room) * (size_t)S;
    size_t done = 0; /* bytes of items populated */
    DpItem *tmp = malloc(2 * (size_t)(C ? C : 1) * sizeof *tmp);
    /* apsolve_dp_sort_items_hinted's hints per (length, submesh), NULL: none */
    size_t hint_cells = (size_t)L * (size_t)S * (size_t)(C ? C : 1);
    int *hint = hint_cells <= SORT_HINT_CELLS ? malloc(hint_cells * sizeof *hint) : NULL;
    int *hint_n = hint ? calloc((size_t)L * (size_t)S, sizeof *hint_n) : NULL;
    int *pos = hint_n ? malloc((size_t)(C ? C : 1) * sizeof *pos) : NULL;
    int rc = APSOLVE_ENOMEM;

    r->cap = max_opts * (size_t)(C ? C : 1);
    r->opts = malloc((max_opts ? max_opts : 1) * sizeof *r->opts);
    r->opt_off = malloc((size_t)(r->room - r->i0 + 1) * sizeof *r->opt_off);
    /* room for every (i <= j, submesh, config) at once: grown by doubling,
     * a full-space table (15 MB) was copied on every growth of every
     * search; pages never written cost nothing */
    r->items = malloc((r->cap ? r->cap : 1) * sizeof *r->items);
    if (!tmp || !r->opts || !r->opt_off || !r->items)
        goto done;
    for (int c = 0; pos && c < C; c++)
        pos[c] = -1;
    for (int i = r->i0; i < r->i1; i++) {
        r->opt_off[i - r->i0] = (int)r->n_opts;
        for (int j = L - 1; j >= i; j--)
            for (int s = 0; s < S && (!r->whole_only || apsolve_chunks_whole(r->opt, i, j));
                 s++) {
                int dev = p->submeshes[s].hosts * p->submeshes[s].gpus, nt = 0, nan = 0;
                if (p->submeshes[s].hosts < 1 || p->submeshes[s].gpus < 1 || dev > D)
                    continue;
                for (int c = 0; c < C; c++) {
                    size_t idx = apsolve_index(p, i, j, s, c);
                    double cost;
                    /* a raw cost of +inf or NaN is never usable: skipped
                     * before the calls (most of a sweep's table) */
                    if (!r->allowed[(size_t)s * (size_t)C + (size_t)c] ||
                        !(p->cost[idx] < INFINITY))
                        continue;
                    cost = apsolve_cell_cost(p, idx, (size_t)s * (size_t)C + (size_t)c);
                    if (isinf(cost))
                        continue;
                    nan |= isnan(cost);
                    tmp[nt].cost = cost;
                    tmp[nt].mnss = 0;
                    tmp[nt].config = c;
                    tmp[nt].opt = (int)idx; /* its entry */
                    nt++;
                }
                if (!nt)
                    continue;
                if (pos && !nan) {
                    size_t h = (size_t)(j - i) * (size_t)S + (size_t)s;
                    int *order = hint + h * (size_t)C;
                    apsolve_dp_sort_items_hinted(tmp, tmp + C, nt, order, &hint_n[h], pos);
                } else {
                    apsolve_dp_sort_items(tmp, tmp + C, nt);
                }
                /* fresh pages faulted in ahead, many per call, not one
                 * fault each at the first write (on the 126-layer file
                 * 1.2 M items, 29 MB: some 7,200 faults of several
                 * microseconds each on a virtual machine; pages already
                 * resident, reused from the heap, cost a walk only) */
                cdb_populate_ahead(r->items, r->cap * sizeof *r->items,
                                   (r->n_items + (size_t)nt) * sizeof *r->items, &done);
                for (int k = 0; k < nt; k++)
                    r->items[r->n_items + (size_t)k] = (DpSharedItem){
                        tmp[k].cost, p->apply_cost[tmp[k].opt], tmp[k].config, tmp[k].opt};
                r->opts[r->n_opts] = (DpOpt){.end = j, .submesh = s, .dev = dev,
                                             .item_off = (int)r->n_items, .item_n = nt};
                r->n_items += (size_t)nt;
                r->n_opts++;
            }
    }
    r->opt_off[r->i1 - r->i0] = (int)r->n_opts;
    rc = APSOLVE_OK;
done:
    free(tmp);
    free(hint);
    free(hint_n);
    free(pos);
    return rc;
}

static void rows_free(SharedRows *r)
{
    free(r->opts);
    free(r->opt_off);
    free(r->items);
}

static void rows_task(void *ctx, int k)
{
    SharedRows *r = (SharedRows *)ctx + k;
    r->rc = rows_build(r);
}

/* The first row of the second part: rows 0 .. m - 1 hold about half the
 * ranges (row i holds L - i of them). */
static int split_row(int L)
{
    size_t half = rows_ranges(L, 0, L) / 2, n = 0;
    int m = 0;
    while (m < L && n + (size_t)(L - m) <= half)
        n += (size_t)(L - m++);
    return m > 0 ? m : 1;
}

/* Part b (rows after a's) appended to a: its options' item_off and its
 * rows' opt_off moved past a's, its items copied after a's (their pages
 * populated first: a's room holds them, unwritten). */
static void rows_append(SharedRows *a, const SharedRows *b)
{
    size_t done = a->n_items * sizeof *a->items;
    for (size_t q = 0; q < b->n_opts; q++) {
        a->opts[a->n_opts + q] = b->opts[q];
        a->opts[a->n_opts + q].item_off += (int)a->n_items;
    }
    for (int i = 0; i <= b->i1 - b->i0; i++)
        a->opt_off[b->i0 - a->i0 + i] = b->opt_off[i] + (int)a->n_opts;
    cdb_populate_ahead(a->items, a->cap * sizeof *a->items,
                       (a->n_items + b->n_items) * sizeof *a->items, &done);
    memcpy(a->items + a->n_items, b->items, b->n_items * sizeof *b->items);
    a->n_opts += b->n_opts;
    a->n_items += b->n_items;
    a->i1 = b->i1;
}

/* Builds the table of sh for p under opt's objective: in two parts when
 * opt allows two threads and the table is large, else in one. */
static int shared_build(ApsolveDpShared *sh, const ApsolveProblem *p, const ApsolveOptions *opt)
{
    int L = p->num_layers, S = p->num_submeshes, C = p->num_configs, rc;
    int parts = opt->load_threads >= 2 && L >= 2 && apsolve_problem_cells(p) >= SPLIT_MIN_CELLS
                    ? 2 : 1;
    int m = parts == 2 ? split_row(L) : L;
    /* apsolve_config_allowed of every (submesh, config), once per table */
    unsigned char *allowed = malloc((size_t)S * (size_t)(C ? C : 1));
    /* the first part is the table: room for every row */
    SharedRows r[2] = {{.p = p, .opt = opt, .whole_only = sh->whole_only, .i0 = 0, .i1 = m,
                        .room = L, .rc = APSOLVE_ENOMEM},
                       {.p = p, .opt = opt, .whole_only = sh->whole_only, .i0 = m, .i1 = L,
                        .room = L, .rc = APSOLVE_ENOMEM}};
    if (!allowed)
        return APSOLVE_ENOMEM;
    r[0].allowed = r[1].allowed = allowed;
    for (int s = 0; s < S; s++)
        for (int c = 0; c < C; c++)
            allowed[(size_t)s * (size_t)C + (size_t)c] =
                (unsigned char)apsolve_config_allowed(p, opt, s, c);
    if (parts == 2)
        apsolve_pool_run(2, 2, rows_task, r);
    else
        r[0].rc = rows_build(&r[0]);
    rc = r[0].rc ? r[0].rc : parts == 2 ? r[1].rc : APSOLVE_OK;
    free(allowed);
    if (rc == APSOLVE_OK && parts == 2)
        rows_append(&r[0], &r[1]);
    rows_free(&r[1]);
    if (rc != APSOLVE_OK) {
        rows_free(&r[0]);
        return rc;
    }
    sh->opts = r[0].opts;
    sh->opt_off = r[0].opt_off;
    sh->items = r[0].items;
    sh->n_opts = r[0].n_opts;
    sh->n_items = r[0].n_items;
    return APSOLVE_OK;
}

int apsolve_dp_shared_ready(ApsolveDpShared *sh, const ApsolveProblem *p,
                            const ApsolveOptions *opt)
{
    int full = opt->objective == APSOLVE_OBJECTIVE_FULL, whole = sh->whole_only;
    if (sh->built && sh->p == p && sh->full == full)
        return APSOLVE_OK;
    shared_clear(sh);
    sh->whole_only = whole;
    if (shared_build(sh, p, opt) != APSOLVE_OK)
        return APSOLVE_ENOMEM;
    sh->p = p;
    sh->full = full;
    sh->built = 1;
    return APSOLVE_OK;
}
