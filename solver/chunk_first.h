/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A chunked family's first plan to beat when it has none (session_search.c,
 * try_chunks; docs/performance.md, "A plan to beat first for the
 * interleaved family"): the chunk count v the floors rank best is searched
 * first, whole, and its plan's full estimate X is the others' bar, with
 * the family's tie rule kept (the first v of least full estimate wins):
 * a v before it is kept at X too, one after it only below X.
 */
#ifndef APSOLVE_CHUNK_FIRST_H
#define APSOLVE_CHUNK_FIRST_H

#include "solver_int.h"

/* The order of a family's v = vmin .. vmax with first searched first
 * (first < 0: in order), and the plan to beat of each. */
typedef struct ApsolveChunkOrder {
    int vmin, vmax, first;
    int at;        /* the next v of the ascending pass; vmin - 1 before first */
    int first_won; /* best is first's full estimate, kept by no v since */
} ApsolveChunkOrder;

void apsolve_chunk_order_init(ApsolveChunkOrder *o, int vmin, int vmax, int first);
/* The next v to search: first, then vmin .. vmax without it; -1 at the end. */
int apsolve_chunk_order_next(ApsolveChunkOrder *o);
/* v's plan to beat given the family's best full estimate so far: best, or
 * where best is first's and v comes before first in the family's order,
 * the next double above it (a plan of v at X is kept, as it would be with
 * first searched in its place). */
double apsolve_chunk_order_bar(const ApsolveChunkOrder *o, int v, double best);
/* v's plan was kept (its full estimate the new best). */
void apsolve_chunk_order_kept(ApsolveChunkOrder *o, int v);

/* try_chunks's order for kind from the plan to beat bar (f NULL: no
 * floor): the interleaved family from none (+inf) with
 * apsolve_chunk_first_v's v first, every other search in order. */
void apsolve_chunk_order_start(ApsolveChunkOrder *o, const ApsolveStageFloor *f, int kind,
                               int vmin, int vmax, int B, int nmax, double bar, double *each);

/* The v in vmin .. vmax (v <= the layers) whose floor the schedule's time
 * ranks least: min over stage counts n of apsolve_schedule_base_time(v, B,
 * n each[n], each[n]) (every stage at the count's floor of the largest
 * stage; the transfers left out); -1 when none has a finite floor. A
 * ranking only: any v keeps the search exact. each: scratch of nmax + 1. */
int apsolve_chunk_first_v(const ApsolveStageFloor *f, int kind, int vmin, int vmax, int B,
                          int nmax, double *each);

#endif
