/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generic strategy-selection ILP behind intra-op sharding (docs/alpa-semantics.md
 * "Intra-op sharding"): nodes with k_v strategies and a cost per strategy,
 * edges with a k_u x k_v resharding cost matrix, an optional memory budget,
 * minimise the sum of the chosen node and edge costs. Infinite entries
 * forbid a strategy or a pair. The solver first removes what is exactly
 * solvable by variable elimination (single-strategy nodes, degree-0/1 nodes,
 * i.e. trees and chains, and, with APPROF_ILP_SERIES_PARALLEL, degree-2
 * nodes of series-parallel parts and twin pairs, ilp_elim.c) and hands the
 * remaining core to CBC through its C
 * interface as a 0-1 program with one-hot s_v and the tight marginal
 * linearisation of e_uv. Without CBC (HAVE_CBC 0) the core is solved by
 * exhaustive search when it has at most 2^20 combinations, otherwise
 * APPROF_EUNSUPPORTED is returned. Solutions can be cached by a 128-bit hash
 * of the whole problem so identical problems are solved once.
 */
#ifndef APPROF_SHARDING_ILP_H
#define APPROF_SHARDING_ILP_H

#include <stddef.h>
#include <stdint.h>

/* Limit of combinations the exhaustive search (and the no-CBC fallback)
 * accepts. */
#define APPROF_ILP_EXHAUSTIVE_MAX (1L << 20)

typedef struct ApprofIlp ApprofIlp;
typedef struct ApprofIlpCache ApprofIlpCache;

typedef enum {
    /* Exact elimination of single-strategy nodes and of the tree parts
     * (degree 0/1 nodes, so chains and trees never reach the solver); the
     * remaining core of the DAG goes to CBC (or to the exhaustive fallback
     * without CBC). */
    APPROF_ILP_ELIMINATE_TREES_THEN_CBC = 0,
    /* Only forbidden strategies are removed; everything else goes to CBC.
     * APPROF_EUNSUPPORTED without CBC. Used to check CBC itself. */
    APPROF_ILP_CBC_ONLY,
    /* Exhaustive enumeration of every combination (small problems only). */
    APPROF_ILP_EXHAUSTIVE,
    /* AUTO plus the elimination of degree-2 nodes (series reduction): a
     * series-parallel DAG (chains with skip connections, residual blocks,
     * attention) is solved exactly without CBC; and of twin pairs (two
     * adjacent nodes with the same two other neighbours, as a
     * mixture-of-experts router's dispatch and combine make), so the
     * expert layers are too; what remains goes to CBC. */
    APPROF_ILP_SERIES_PARALLEL,
} ApprofIlpMethod;

typedef struct ApprofIlpStats {
    int nodes, edges;           /* of the problem as given */
    int eliminated;             /* nodes removed by exact elimination */
    int twin_pairs;             /* of them, pairs removed together (ilp_elim.c) */
    int core_nodes, core_edges; /* what went to CBC / exhaustive search */
    int cbc_cols, cbc_rows;     /* size of the CBC model (0: CBC not run) */
    int used_cbc;               /* 1 when CBC solved the core */
    int cached;                 /* 1 when the answer came from the cache */
} ApprofIlpStats;

/* Creates an empty problem; the caller owns *out (approf_ilp_free). */
int approf_ilp_new(ApprofIlp **out);
void approf_ilp_free(ApprofIlp **p);

/* Adds a node with k >= 1 strategies; cost[k] is copied (INFINITY forbids a
 * strategy), mem[k] (bytes, may be NULL for 0) too. Returns the node index
 * (>= 0) or a negative error. */
int approf_ilp_add_node(ApprofIlp *p, int k, const double *cost, const double *mem);

/* Adds an edge u-v (u != v, both existing) with the row-major k_u x k_v cost
 * matrix r (copied; INFINITY forbids a pair). Parallel edges add up. Returns
 * the edge index or a negative error. */
int approf_ilp_add_edge(ApprofIlp *p, int u, int v, const double *r);

/* Memory budget: sum over nodes of mem[v][s_v] <= budget. A negative value
 * (the default) means no budget. */
void approf_ilp_set_memory_budget(ApprofIlp *p, double budget);

/* Lagrangian weight (seconds per byte, >= 0; default 0): the solver
 * minimises sum(cost) + weight * sum(mem) + edges, exactly as with
 * weight 0 (elimination stays exact: the weighted memory is a node cost).
 * The objective reported is still the time sum without the memory term. */
void approf_ilp_set_memory_weight(ApprofIlp *p, double weight);

/* Sum over nodes of mem[v][choice[v]] (bytes). */
double approf_ilp_memory(const ApprofIlp *p, const int *choice);

/* The supported time-versus-memory Pareto points of p (the lower convex
 * hull of (time, memory) over all choices), found by bisecting on the
 * weight (each step one exact weighted solve; after the first, a replay of
 * the first one's elimination under the new weight, which gives what a
 * solve from scratch gives, ilp_pareto.c): at most max_points
 * solutions, fastest first and each using strictly less memory than the
 * one before. choices is max_points * n_nodes ints (caller allocated);
 * times and mems max_points doubles. *n_points gets the count (>= 1 on
 * success). Errors as approf_ilp_solve. */
int approf_ilp_pareto(ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                      int max_points, int *choices, double *times, double *mems,
                      int *n_points, ApprofIlpStats *stats);

int approf_ilp_num_nodes(const ApprofIlp *p);

/* Solves p with the given method. On success choice[v] (n_nodes entries,
 * caller allocated) holds the chosen strategy of every node and *objective
 * the total cost recomputed in double from the original costs. Returns 0,
 * APPROF_EINFEASIBLE when no finite-cost choice satisfies the constraints,
 * APPROF_EUNSUPPORTED when the core is too large without CBC (or method CBC
 * without CBC), APPROF_ENOMEM, or APPROF_EINVAL. cache may be NULL; stats
 * may be NULL. Not thread-safe with respect to a shared cache. */
int approf_ilp_solve(const ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                     int *choice, double *objective, ApprofIlpStats *stats);

/* Objective of a given choice (INFINITY if it uses a forbidden entry or
 * breaks the memory budget). */
double approf_ilp_evaluate(const ApprofIlp *p, const int *choice);

/* 128-bit hash of the problem (node costs, memory, edges, budget) as 32 hex
 * characters plus NUL into out (len >= 33). */
void approf_ilp_hash(const ApprofIlp *p, char *out, size_t len);

/* Solution cache keyed by the problem hash and method. */
int approf_ilp_cache_new(ApprofIlpCache **out);
void approf_ilp_cache_free(ApprofIlpCache **c);
/* Forgets every stored solution (the hit count stays): a later lookup of
 * one solves the problem again, which gives the same answer. */
void approf_ilp_cache_clear(ApprofIlpCache *c);
/* What the cache holds, in bytes (its slots included). It keeps at most
 * its byte cap (APPROF_ILP_CACHE_CAP_BYTES, default 32 MiB) plus one
 * entry: past it, the next entry starts the cache again. */
size_t approf_ilp_cache_bytes(const ApprofIlpCache *c);
/* Lookups that hit and entries stored so far. */
void approf_ilp_cache_counts(const ApprofIlpCache *c, size_t *hits, size_t *entries);

/* 1 when the build has CBC. */
int approf_ilp_have_cbc(void);

#endif
