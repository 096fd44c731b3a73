/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal interface of the strategy ILP shared by ilp.c (building,
 * exhaustive search, cache), ilp_elim.c (the working problem in local
 * strategy indices, its exact elimination and the elimination's replay),
 * ilp_steps.c (the arithmetic of each elimination step, which the
 * elimination and the replay share),
 * ilp_cbc.c (the CBC model of the core that elimination leaves) and
 * ilp_pareto.c (the time-versus-memory Pareto points).
 */
#ifndef APPROF_SHARDING_ILP_INT_H
#define APPROF_SHARDING_ILP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h"
#include "sharding/ilp.h"

/* A bump allocator whose blocks are freed all at once: the problem's and
 * the working problem's cost vectors and matrices, which live exactly as
 * long as their problem (ilp.c). */
typedef struct IlpBlock {
    struct IlpBlock *next;
    size_t used, cap;
    max_align_t data[];
} IlpBlock;
typedef struct IlpArena {
    IlpBlock *head;
} IlpArena;

/* The n bytes (a multiple of max_align_t's size) in a new block at the
 * head of a; NULL without memory (ilp.c). */
void *ilp_arena_alloc_block(IlpArena *a, size_t n);

/* n bytes, aligned for any type, or NULL without memory: taken from the
 * head block when it has room (inline: a problem's build asks for about
 * 1.6 a node and edge, docs/performance.md "NCCL's prices kept per
 * thread, the ILP arena's bump inline"), else from a new block. */
static inline void *ilp_arena_alloc(IlpArena *a, size_t n)
{
    const size_t align = sizeof(max_align_t);
    if (n > SIZE_MAX - align)
        return NULL;
    n = n ? (n + align - 1) / align * align : align;
    IlpBlock *b = a->head;
    if (!b || b->cap - b->used < n)
        return ilp_arena_alloc_block(a, n);
    void *p = (unsigned char *)b->data + b->used;
    b->used += n;
    return p;
}
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
    int *adj;       /* incident edge ids (may include dead ones), in the arena */
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
 * choice * twin's k + twin's choice). What a replay (ilp_work_replay)
 * needs besides: the edges the step read, in the order it read them
 * (EL_FIXED: fixed[0..n_fixed), x's alive edges; EL_DEG1: e[0]; EL_DEG2:
 * e[0..2) to y and z; EL_PAIR: x-twin, x-y, x-z, twin-y, twin-z, the last
 * two -1 when absent), and for EL_DEG2 and EL_PAIR the new y-z table r and
 * the edge dest it became or was added into. */
typedef struct Elim {
    ElimKind kind;
    int x, y, z;
    int *arg;
    int twin;
    int e[5];
    int *fixed, n_fixed;
    double *r;
    int dest;
} Elim;

typedef struct Work {
    IlpArena arena;             /* orig, c, m, adj, the edges' r, the eliminations' tables */
    WNode *n;
    int nn;
    WEdge *e;
    int ne, cap_e;
    Elim *el;
    int nel;
    double budget;
    /* The nodes' strategy slots end to end (node v's from the sum of the
     * k of the nodes before it in p, its allowed ones first): every c and
     * m, and the costs as given (c0, without the memory weight). */
    double *c_all, *m_all, *c0;
    size_t n_slots;
    /* With a replay in view (ilp_work_keep_built before the elimination):
     * the edge tables as built, edges [0, ne_built), end to end. */
    double *r_built;
    int ne_built;
    /* The built edges a step's table is added into (the only built tables
     * the elimination changes), listed by the first replay: edge ids and
     * where each one's table starts in r_built; n_restore -1 until then. */
    int *restore;
    size_t *restore_at;
    int n_restore;
    /* The replay's plan of each EL_DEG2 and EL_PAIR step (by step; NULL
     * until the first replay makes them, with restore). */
    union StepPlan *plan;
    /* The most scratch (doubles) a plan's fill asks for: a replay calls
     * the fills itself, with one buffer (docs/performance.md "The
     * intra-op ILP's replays: the fills called from the replay's loop"). */
    size_t plan_scratch;
    /* The core the elimination left (the alive nodes, in index order):
     * the same at every weight; n_core -1 until the first replay. */
    int *core, n_core;
    /* After a replay: the eliminated parts' least weighted cost as its
     * steps found it, the EL_DEG0 steps' minima and the EL_FIXED nodes'
     * costs added in step order (the whole optimum when no core is left;
     * ilp_pareto.c's bound, docs/performance.md "The bisection's ending
     * solves settled by the elimination's value"). */
    double elim_value;
    double *scratch;            /* ilp_elim.c's, malloc'd */
    size_t cap_scratch;
} Work;

static inline int ilp_other_end(const WEdge *e, int x)
{
    return e->u == x ? e->v : e->u;
}

/* The steps' arithmetic (ilp_steps.c), each one function shared by the
 * elimination and its replay. Where a step's y-z table goes: r (k_y x k_z)
 * when acc is NULL, else added into edge acc's table (ends y and z) in
 * place, entry by entry, as edge_accumulate adds a table into it: the
 * same sums. */
typedef struct StepOut {
    double *r;
    const WEdge *acc;
    int y;
} StepOut;
/* EL_FIXED: x's one strategy folded into the other end of edge e. */
void ilp_fold_fixed(Work *w, int x, int e);
/* EL_DEG0: arg[0] the cheapest strategy of x; APPROF_EINFEASIBLE when
 * even that one is infinite. */
int ilp_table_deg0(const Work *w, int x, int *arg);
/* EL_DEG1: x's best strategy for each of y's (the other end of e) folded
 * into y's costs, the argmin into arg. */
void ilp_fold_deg1(Work *w, int x, int e, int *arg);
/* EL_DEG2 (edges e1 to y, e2 to z) and EL_PAIR (e as Elim.e): the table
 * into out, the argmin into arg; 0 or APPROF_ENOMEM. ilp_table_deg2 is
 * ilp_deg2_plan then ilp_deg2_run. */
int ilp_table_deg2(Work *w, int x, int e1, int e2, int *arg, const StepOut *out);
/* A degree-2 step with its operands resolved: x's costs, the two tables
 * and where the new table goes, as pointers and strides, and the instance
 * of the fill for its strategies' counts. Every pointer stays valid for
 * the working problem's life (its arrays are in the arena and never
 * move), so a replay plans each step once and runs the plan at every
 * weight (docs/performance.md "The memory levels' replays planned once"). */
typedef struct Deg2Plan Deg2Plan;
typedef void (*Deg2Fill)(const Deg2Plan *pl, double *t);
struct Deg2Plan {
    Deg2Fill fill;
    const double *c, *r1, *r2;
    double *r;
    int *arg;
    size_t si1, sj1, si2, sl2, rj, rl;
    int kx, ky, kz;
};
/* args 0: the plan's run writes the table only, not the argmin (a
 * replay's, whose back-substitution asks ilp_deg2_arg_at). */
void ilp_deg2_plan(const Work *w, int x, int e1, int e2, int *arg, const StepOut *out,
                   Deg2Plan *pl, int args);
/* The plan's table and argmin, with the values ilp_table_deg2 gives for
 * the same operands; 0 or APPROF_ENOMEM. */
int ilp_deg2_run(Work *w, const Deg2Plan *pl);
/* The argmin the plan's run writes at y's strategy j and z's l (the
 * same candidates in the same order), from its operands as they are: a
 * step's operands are final when it runs (what is added into x's costs
 * or into an edge's table comes from steps before it) and no later step
 * changes them (x and the two edges are gone), so after a replay they
 * are what the step read. */
int ilp_deg2_arg_at(const Deg2Plan *p, int j, int l);
/* The same for a twin-pair step (ilp_table_pair): x's and the twin's
 * costs, the five tables (rya, ryc NULL when absent) and where the new
 * table goes. */
typedef struct PairPlan PairPlan;
typedef void (*PairFill)(const PairPlan *pl, double *base);
struct PairPlan {
    PairFill fill;
    const double *nxc, *nyc, *rxy, *rxa, *rxc, *rya, *ryc;
    double *r;
    int *arg;
    size_t sxy_i, sxy_j, sxa_i, sxa_s, sxc_i, sxc_u, sya_j, sya_s, syc_j, syc_u, rs, ru;
    int kx, ky, ka, kc;
};
void ilp_pair_plan(const Work *w, int x, const int e[5], int *arg, const StepOut *out,
                   PairPlan *pl, int args);
int ilp_pair_run(Work *w, const PairPlan *pl);
/* The scratch (doubles) a pair plan's fill writes and reads: its base. */
size_t ilp_pair_scratch(const PairPlan *pl);
/* A scratch buffer of n doubles, w's (valid until the next call; NULL
 * without memory): a step's sums that no later step reads. */
double *ilp_work_scratch(Work *w, size_t n);
/* The argmin (x's choice * k_y + the twin's) at a's strategy s and c's u,
 * as ilp_deg2_arg_at. */
int ilp_pair_arg_at(const PairPlan *p, int s, int u);
typedef union StepPlan {
    Deg2Plan deg2;
    PairPlan pair;
} StepPlan;
int ilp_table_pair(Work *w, int x, const int e[5], int *arg, const StepOut *out);

/* The working problem of p (its forbidden strategies removed, the memory
 * weight in the node costs); ilp_work_free frees it, also after an error.
 * 0, APPROF_EINFEASIBLE (a node with no strategy left) or APPROF_ENOMEM. */
int ilp_work_build(const ApprofIlp *p, Work *w);
void ilp_work_free(Work *w);
/* Exact elimination (ilp_elim.c), adding the nodes it removes to
 * st->eliminated and the twin pairs to st->twin_pairs; sp: also degree-2
 * nodes and twin pairs. The alive nodes are the core. */
int ilp_work_eliminate(Work *w, int sp, ApprofIlpStats *st);
/* Sets the choice of every eliminated node, the core's being set: from
 * the steps' argmin tables, or after a replay (w->plan made) from the
 * steps' plans. */
void ilp_work_backsubstitute(Work *w);
/* Keeps a copy of the edge tables as built (before ilp_work_eliminate), so
 * that the working problem can be replayed; 0 or APPROF_ENOMEM. */
int ilp_work_keep_built(Work *w);
/* The working problem of p again, for p's current memory weight, from w as
 * ilp_work_build, ilp_work_keep_built and ilp_work_eliminate left it for
 * the same p under another weight: the node costs reweighed, the edge
 * tables as built, and every recorded elimination step redone in its
 * order with the same arithmetic, so the values (hence the core and the
 * solution) are bit for bit those a fresh build and elimination would
 * give: what the elimination decides (which nodes, which edges, in what
 * order) depends on the strategies' counts and the graph, never on the
 * costs. Only the built tables a step adds into are copied back (the
 * others stay as built). The degree-2 and twin-pair steps run from plans
 * made by the first replay (Work.plan) and write their tables only: the
 * back-substitution finds the argmin entries it reads from the steps'
 * operands (ilp_deg2_arg_at), the entries the elimination's tables hold
 * at the same weight. 0, APPROF_EINFEASIBLE or APPROF_ENOMEM. */
int ilp_work_replay(const ApprofIlp *p, Work *w);
/* The least memory of any choice as ilp.h's approf_ilp_memory adds it up
 * (node by node, each node's least over its allowed strategies): no
 * choice's memory is below it. */
double ilp_work_memory_floor(const Work *w);
/* Grows *arr (elements of size elem, capacity *cap) to hold need. */
int ilp_grow(void **arr, int *cap, int need, size_t elem);
/* Solves the alive nodes core[0..nc) with CBC, setting their choice.
 * 0, APPROF_EINFEASIBLE, APPROF_EUNSUPPORTED (no proven optimum) or
 * APPROF_ENOMEM. Only built with HAVE_CBC. */
int ilp_core_cbc(Work *w, const int *core, int nc, ApprofIlpStats *st);

/* approf_ilp_solve, which with keep (zeroed by the caller) hands over the
 * working problem of a fresh, successful solve, its elimination recorded
 * for ilp_work_replay (keep left zeroed otherwise; the caller frees it
 * with ilp_work_free either way), and with key sets the problem's cache
 * key (when cache is given). */
int ilp_solve_keep(const ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                   int *choice, double *objective, ApprofIlpStats *stats, Work *keep,
                   ApprofHash128 *key);
/* Solves p again on w (ilp_solve_keep's, for the same p under another
 * memory weight) by ilp_work_replay and the core's solver, as
 * approf_ilp_solve would without a cache: the same choice and objective. */
int ilp_solve_replay(const ApprofIlp *p, ApprofIlpMethod method, Work *w, int *choice,
                     double *objective);
/* ilp_solve_replay's second half, after ilp_work_replay: the core's
 * solver, the back-substitution, the objective and, with memory, the
 * solution's approf_ilp_memory (added up with the objective). */
int ilp_replay_finish(const ApprofIlp *p, ApprofIlpMethod method, Work *w, int *choice,
                      double *objective, double *memory);

/* The Pareto points of a problem stored in the cache under its key at
 * weight 0 (ilp_solve_keep's) and max_points: 1 and the points copied out
 * when there, 0 when not. */
int ilp_cache_points_find(ApprofIlpCache *c, ApprofHash128 key, int max_points, int n,
                          int *choices, double *times, double *mems, int *n_points);
/* Stores them; 0 or APPROF_ENOMEM. */
int ilp_cache_points_put(ApprofIlpCache *c, ApprofHash128 key, int max_points, int n,
                         const int *choices, const double *times, const double *mems,
                         int n_points);

/* How approf_ilp_pareto solves for each weight: ILP_PARETO_REPLAY replays
 * the first solve's elimination (ilp_solve_replay), skips the least-memory
 * solve when the fastest point has the least memory already, and keeps its
 * answer in the cache as one entry; ILP_PARETO_FRESH, the reference the
 * tests compare it with, solves every weight from scratch through the
 * cache (approf_ilp_solve). Both give the same points, bit for bit. */
typedef enum { ILP_PARETO_REPLAY = 0, ILP_PARETO_FRESH } IlpParetoMode;
int ilp_pareto_run(ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                   IlpParetoMode mode, int max_points, int *choices, double *times, double *mems,
                   int *n_points, ApprofIlpStats *stats);
/* The mode approf_ilp_pareto uses with cache c (ILP_PARETO_REPLAY unless
 * set), so a test can run a whole stage both ways. */
void ilp_cache_set_pareto_mode(ApprofIlpCache *c, IlpParetoMode mode);
IlpParetoMode ilp_cache_pareto_mode(const ApprofIlpCache *c);
/* The bisection's replays with cache c so far (ilp_pareto.c): all of
 * them, and those settled by the elimination's value without the core's
 * solver and the back-substitution (a test's view of the bound). */
void ilp_cache_pareto_replays(const ApprofIlpCache *c, size_t *replays, size_t *settled);
void ilp_cache_count_replays(ApprofIlpCache *c, size_t replays, size_t settled);

#endif
