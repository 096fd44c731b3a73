/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal interface of the strategy ILP shared by ilp.c (building,
 * exhaustive search, cache), ilp_elim.c (the working problem in local
 * strategy indices and its exact elimination) and ilp_cbc.c (the CBC model
 * of the core that elimination leaves).
 */
#ifndef APPROF_SHARDING_ILP_INT_H
#define APPROF_SHARDING_ILP_INT_H

#include <stddef.h>

#include "sharding/ilp.h"

/* A bump allocator whose blocks are freed all at once: the problem's and
 * the working problem's cost vectors and matrices, which live exactly as
 * long as their problem (ilp.c). */
typedef struct IlpBlock IlpBlock;
typedef struct IlpArena {
    IlpBlock *head;
} IlpArena;

/* n bytes, aligned for any type, or NULL without memory. */
void *ilp_arena_alloc(IlpArena *a, size_t n);
void ilp_arena_free(IlpArena *a);

/* The problem as given (ilp.c builds it; ilp_pareto.c weighs its memory). */
struct ApprofIlp {
    IlpArena arena;             /* cost, mem and r */
    int n_nodes, cap_nodes;
    int *k;
    double **cost, **mem;       /* mem[v] NULL when not given */
    int n_edges, cap_edges;
    int *eu, *ev;
    double **r;
    double budget;
    double weight;              /* seconds per byte of mem added to node costs */
};

typedef struct WNode {
    int k;          /* allowed strategies */
    int *orig;      /* local -> original strategy */
    double *c, *m;
    int alive;
    int choice;     /* local */
    int *adj;       /* incident edge ids (may include dead ones) */
    int n_adj, cap_adj;
} WNode;

typedef struct WEdge {
    int u, v;
    double *r;      /* local k_u x k_v */
    int alive;
} WEdge;

typedef enum { EL_FIXED, EL_DEG0, EL_DEG1, EL_DEG2, EL_PAIR } ElimKind;

/* One elimination step: x eliminated (EL_PAIR: x and twin) given y and z
 * (-1 when absent); arg the argmin by y's and z's choices (EL_PAIR: x's
 * choice * twin's k + twin's choice). */
typedef struct Elim {
    ElimKind kind;
    int x, y, z;
    int *arg;
    int twin;
} Elim;

typedef struct Work {
    IlpArena arena;             /* orig, c, m, the edges' r, the eliminations' arg */
    WNode *n;
    int nn;
    WEdge *e;
    int ne, cap_e;
    Elim *el;
    int nel;
    double budget;
} Work;

/* The working problem of p (its forbidden strategies removed, the memory
 * weight in the node costs); ilp_work_free frees it, also after an error.
 * 0, APPROF_EINFEASIBLE (a node with no strategy left) or APPROF_ENOMEM. */
int ilp_work_build(const ApprofIlp *p, Work *w);
void ilp_work_free(Work *w);
/* Exact elimination (ilp_elim.c), adding the nodes it removes to
 * st->eliminated and the twin pairs to st->twin_pairs; sp: also degree-2
 * nodes and twin pairs. The alive nodes are the core. */
int ilp_work_eliminate(Work *w, int sp, ApprofIlpStats *st);
/* Sets the choice of every eliminated node, the core's being set. */
void ilp_work_backsubstitute(Work *w);
/* Grows *arr (elements of size elem, capacity *cap) to hold need. */
int ilp_grow(void **arr, int *cap, int need, size_t elem);
/* Solves the alive nodes core[0..nc) with CBC, setting their choice.
 * 0, APPROF_EINFEASIBLE, APPROF_EUNSUPPORTED (no proven optimum) or
 * APPROF_ENOMEM. Only built with HAVE_CBC. */
int ilp_core_cbc(Work *w, const int *core, int nc, ApprofIlpStats *st);

#endif
