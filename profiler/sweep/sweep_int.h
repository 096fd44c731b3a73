/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the sweep: the state of one sweep and the pieces sweep.c
 * provides to the driver in sweep_run.c (one process, or many under MPI).
 */
#ifndef APPROF_SWEEP_INT_H
#define APPROF_SWEEP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "costdb.h"
#include "cuda/probe.h"
#include "enumerate.h"
#include "graph.h"
#include "hash.h"
#include "hardware.h"
#include "sharding/sharding.h"
#include "sweep.h"
#include "sweep_db.h"
#include "sweep_template.h"

/* A measurement as the reuse table keeps it: every field but the error
 * text's fixed buffer, the text, when there is one, in a block of its own
 * (sweep_tuple.c packs and unpacks them). */
typedef struct ReuseMeasurement {
    unsigned char head[offsetof(ApprofMeasurement, error)];
    unsigned char tail[sizeof(ApprofMeasurement) - offsetof(ApprofMeasurement, error) -
                       sizeof(((ApprofMeasurement *)0)->error)];
    char *error;                  /* NULL: none */
} ReuseMeasurement;

/* Signature -> measured pair, for reuse of identical stage programs. */
typedef struct {
    char signature[64];
    ReuseMeasurement m[2];
    int used;
} ReuseSlot;

/* A stage program's results under its program key
 * (approf_shard_program_key): ProgTemplate, sweep_template.h. */

typedef struct {
    ReuseSlot *slots;
    size_t cap, n;
    /* A backend that measures a program the same every time (the analytic
     * one: approf_backend_prices_phases) keeps its slots under a byte cap
     * (APPROF_REUSE_CAP_BYTES, else 8 MiB): past it they start again, and
     * a program whose slot went is measured again. The signatures measured
     * are kept in full (seen: 16 bytes each, an open-addressing set), so an
     * entry's `reused` flag says what the uncapped table would have said. */
    int capped;
    size_t cap_bytes;             /* 0: not read yet */
    ApprofHash128 *seen;          /* digests of the signatures measured; {0, 0}: empty */
    size_t seen_cap, seen_n;
    TemplateStore tpl;            /* program templates, under a byte cap */
    char **specs;                 /* the spec pool: open addressing */
    size_t spec_cap, spec_n;
    int *ordinal_of;              /* per graph tensor, -1 outside a build */
    size_t held_end;              /* Sweep.shape_end of the shapes the slots and templates
                                   * hold (their largest): from that tuple on none is asked */
    ApprofPriceMemo *price_memo;  /* the analytic backend's prices kept (this thread's;
                                   * approf_phase_seconds_memo) */
    /* The program key of the tuple after the last one profiled, asked for
     * ahead when the tuples come in order, its template slots prefetched
     * (sweep_ahead.c): ahead_t the tuple, NULL when none; last_t the tuple
     * profiled last. */
    const ApprofTuple *ahead_t, *last_t;
    int ahead_have, ahead_n;
    int ahead_mode;               /* 0: not read yet; 1: on; 2: off (APPROF_KEY_AHEAD=0,
                                   * an internal knob for tests) */
    uint64_t ahead_key[2];
    const int *ahead_order;
} ReuseTable;

/* Frees the reuse table and its program templates (sweep_tuple.c). */
void approf_sweep_reuse_free(ReuseTable *t);

#define APPROF_SWEEP_MAX_DEVICES 64

typedef struct {
    ApprofGraph *graph;
    char (*shape_texts)[COSTDB_NAME_MAX]; /* per tensor: "2048,8192" */
    ApprofLayering layering;
    ApprofHardwareSpec hw;
    ApprofBackend backend;
    ApprofShardContext *shard;
    Costdb *db;
    CostdbSweepOwner owner;       /* this process, once it holds the sweep */
    int64_t owned_sweep;          /* the sweep it holds (0: none) */
    ApprofMeshShape submeshes[APPROF_MAX_SUBMESHES];
    int n_submeshes;
    ApprofConfigChoice configs[APPROF_MAX_SUBMESHES][APPROF_MAX_CONFIGS];
    int n_configs[APPROF_MAX_SUBMESHES];
    /* Per (submesh, config), from configs once final
     * (approf_sweep_config_groups): the owner of the config's sharding
     * group (the lowest config index with its logical mesh, force flag
     * and memory level), and the ZeRO stages above its own that its
     * build derives (bit z). Each tuple asks for them; each was a walk
     * over the submesh's configs. */
    short group_owner[APPROF_MAX_SUBMESHES][APPROF_MAX_CONFIGS];
    unsigned zero_above[APPROF_MAX_SUBMESHES][APPROF_MAX_CONFIGS];
    ApprofTuple *tuples;
    size_t n_tuples;
    /* Per submesh index: one past the last tuple whose submesh has its
     * shape (approf_sweep_shape_ends); NULL: not known, nothing is freed. */
    size_t *shape_end;
    ReuseTable reuse;
    ApprofIlpMethod ilp_method;
    int memory_levels;            /* the resolved space's (costdb_variant_space_resolve) */
    int cluster_devices;
    /* Measured communication curves of the sweep's hardware row (rank 0
     * reads them in approf_sweep_open_db, approf_sweep_use_curves hands
     * them to the other ranks); hw.curves points at curves. */
    CostdbCommPoint *comm_pts;
    size_t n_comm_pts;
    ApprofCommCurves *curves;
    /* Measured GEMM rates of the row in the sweep's dtype (table name
     * approf_gemm_table_dtype), likewise: read by rank 0, handed to the
     * others; hw.gemm_table points at gemm_table when it holds a complete
     * grid (approf_sweep_use_gemm). */
    CostdbGemmPoint *gemm_pts;
    size_t n_gemm_pts;
    ApprofGemmTable *gemm_table;
    /* The cluster as resolved (--cluster, else the local GPUs with CUDA,
     * else 1x8). */
    int cluster_hosts, cluster_gpus;
    /* MPI placement of this process (0 / 1 without MPI). */
    int local_rank, local_size, mpi_size;
    /* CUDA: the devices this process measures on; a worker's backend is
     * opened on devices[device_slot % n_devices]. gpu_info describes the
     * machine (its measured: hardware row). */
    int devices[APPROF_SWEEP_MAX_DEVICES];
    int n_devices, device_slot;
    int have_gpu_info;
    ApprofProbeInfo gpu_info;
    char no_gpu_why[512];
} Sweep;

/* Model, layers, hardware, backend, enumeration and sharding context: what
 * every rank derives from cfg on its own (no database). t_start: when this
 * began (for sum->t_build). 0 or a negative code with err set. */
int approf_sweep_prepare(Sweep *sw, const ApprofSweepConfig *cfg,
                         const ApprofSweepCallbacks *cb, int64_t *global_batch,
                         ApprofSweepSummary *sum, double t_start, char *err, size_t errlen);
/* Opens sw->backend as cfg->backend says (auto: CUDA when it opens, else the
 * analytic model of sw->hw, with a notice through cb). The sweep workers
 * (sweep_workers.h) open theirs with it too. 0 or a negative code with err
 * set. */
int approf_sweep_open_backend(Sweep *sw, const ApprofSweepConfig *cfg,
                              const ApprofSweepCallbacks *cb, char *err, size_t errlen);
/* Opens the database and writes the hardware, model and sweep rows (or finds
 * the sweep to resume: sum->resumed); have[n_tuples] receives, for the
 * tuples of this shard, bit 0 / bit 1 when the fwd / bwd entry exists.
 * Rank 0 only. 0 or a negative code with err set. */
/* A message for the user through cb->notice (dropped when there is none). */
void approf_sweep_notice(const ApprofSweepCallbacks *cb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

int approf_sweep_open_db(Sweep *sw, const ApprofSweepConfig *cfg,
                         const ApprofSweepCallbacks *cb, int64_t global_batch, CostdbSweep *row,
                         unsigned char *have, ApprofSweepSummary *sum, char *err,
                         size_t errlen);
/* Builds sw->curves from sw->comm_pts (points malloc'd by the caller, owned
 * by sw from here on) and points sw->hw.curves at them; the sharding context
 * borrows sw->hw, so this must precede the first tuple. 0 or APPROF_ENOMEM. */
int approf_sweep_use_curves(Sweep *sw, ApprofSweepSummary *sum);
/* Builds sw->gemm_table from sw->gemm_pts (owned by sw from here on) and
 * points sw->hw.gemm_table at it when it is a complete grid of the sweep's
 * dtype; a notice through cb says which (cb NULL: none). Like the curves,
 * before the first tuple. 0 or APPROF_ENOMEM / APPROF_EINVAL. */
int approf_sweep_use_gemm(Sweep *sw, const ApprofSweepCallbacks *cb, int64_t hardware_id);
/* A hash of the work derived from cfg (graph, layers, tuples, backend,
 * hardware, solver options), equal on ranks that agree. */
uint64_t approf_sweep_work_hash(const Sweep *sw, const ApprofSweepConfig *cfg);
/* A placement row as approf_sweep_profile_tuple hands it on: 16 bytes
 * instead of a CostdbPlacement's kilobyte of text fields, so that results
 * waiting to be written (sweep_workers.c) are small and another thread
 * reads little of what a worker wrote. spec is interned in the reuse table
 * of the Sweep that profiled the tuple and lives as long as that Sweep;
 * approf_sweep_expand_placements makes the costdb rows. */
typedef struct ApprofSlotPlacement {
    int tensor;                   /* graph tensor index */
    unsigned short role;          /* ApprofRole */
    unsigned short spec_len;      /* strlen(spec), below 512 (ApprofPlacement.spec): the
                                   * writer copies it without measuring it */
    const char *spec;
} ApprofSlotPlacement;

/* approf_sweep_writer_put of one tuple whose placements are stored by
 * key (costdb_placements_put_keyed: rows(ctx) makes them when the key is
 * not enough); the same batch and the same rollback on a failure. */
int approf_sweep_writer_put_keyed(ApprofSweepWriter *w, const CostdbEntry *entries, size_t n,
                                  const CostdbPlacementKey *key, CostdbPlacementRows rows,
                                  void *ctx);
/* Fills Sweep.group_owner and zero_above from the configs (sweep_tuple.c,
 * where the rules live); approf_sweep_prepare calls it once the configs
 * are enumerated. */
void approf_sweep_config_groups(Sweep *sw);
/* Shards and costs one tuple: entries[2] receive fwd/bwd, the placements
 * the first *n_placements rows of *placements, a buffer of *cap rows that
 * the caller owns (NULL/0 at first) and frees: grown with realloc when a
 * tuple needs more and otherwise reused, so that a sweep allocates it a
 * few times rather than once per tuple. A failure of the tuple itself is
 * stored in the entries; only ENOMEM and the like are returned. */
/* Tuple t's sharding request (sweep_ahead.c). */
void approf_sweep_tuple_request(const Sweep *sw, const ApprofTuple *t, ApprofShardRequest *req);
/* The program key of t (req its request) and the tensor order lent with it
 * (approf_shard_program_key_view): the one asked ahead when t is
 * ReuseTable.ahead_t, else asked now; 1 when there is one, else 0. */
int approf_sweep_tuple_key(Sweep *sw, const ApprofTuple *t, const ApprofShardRequest *req,
                           uint64_t key[2], const int **order, int *n_order);
/* Once t is profiled (its lent order no longer read): when t followed the
 * tuple profiled before it, asks for the key of t + 1 and prefetches its
 * template slots (sweep_ahead.c). */
void approf_sweep_key_ahead(Sweep *sw, const ApprofTuple *t);

int approf_sweep_profile_tuple(Sweep *sw, const ApprofSweepConfig *cfg, const ApprofTuple *t,
                               CostdbEntry entries[2], ApprofSlotPlacement **placements,
                               size_t *cap, int *n_placements, ApprofSweepSummary *sum);
/* The costdb rows of tuple t's n placements (in), into *buf of *cap rows
 * (the caller's, grown as needed, new rows zeroed: MPI sends whole rows);
 * returns n or APPROF_ENOMEM. described: NULL, every row complete; else
 * one flag per graph tensor, owned by the one thread that hands the rows
 * to costdb_placements_put in order: a row of a flagged tensor gets an
 * empty tensor_name, shape and dtype (that call reads them only for a
 * tensor the sweep does not hold yet, costdb.h, and every earlier row of
 * the tensor was stored before), the others are filled and flagged. */
int approf_sweep_expand_placements(const Sweep *sw, const ApprofTuple *t,
                                   const ApprofSlotPlacement *in, int n, unsigned char *described,
                                   CostdbPlacement **buf, size_t *cap);
/* The one rule for a costed entry that is not already stored: a variant
 * slot the stage does not have (status skipped) is counted in
 * sum->skipped, not stored (no reader takes it; a resumed sweep costs its
 * tuple again and again does not store it; docs/variants.md, "Storage").
 * 1 when e is to be stored, 0 when it was counted as skipped. Both the
 * tuple loop's sink (sweep_run.c) and the composition of ranges
 * (approf_sweep_compose) ask it. */
int approf_sweep_entry_kept(ApprofSweepSummary *sum, const CostdbEntry *e);
/* A stored entry in the summary: entries, and out_of_memory or failures
 * by its status. */
void approf_sweep_entry_counted(ApprofSweepSummary *sum, const CostdbEntry *e);
/* Profile mode individual: writes the range entries composed from the
 * single-layer entries of the sweep (compose.h) through w. 0, APPROF_EDB
 * (a database failure: costdb_errmsg), APPROF_ENOMEM or APPROF_EINVAL. */
int approf_sweep_compose(Sweep *sw, int64_t sweep_id, ApprofSweepWriter *w,
                         ApprofSweepSummary *sum);
/* Takes out of sw->tuples (after the enumeration) the tuples whose stage
 * is out of memory on the analytic backend whatever its configuration,
 * by a lower bound on its forward peak (sweep_prune.c says why it is one):
 * no plan can use them. *skipped: how many. Nothing without
 * cfg->skip_unfit, the analytic backend and not composition mode.
 * 0 or APPROF_ENOMEM. */
int approf_sweep_skip_unfit(Sweep *sw, const ApprofSweepConfig *cfg, size_t *skipped);
/* Fills sw->shape_end from sw->tuples (after the enumeration): the reuse
 * table's measurements and templates are keyed by the submesh's shape, so
 * a profiling thread frees them once its tuples are past the last one of
 * every shape they hold (peak memory independent of the submesh count).
 * 0 or APPROF_ENOMEM. */
int approf_sweep_shape_ends(Sweep *sw);
/* Frees everything sw holds (graph, layers, backend, database, tables). */
void approf_sweep_free(Sweep *sw);

/* err = the database's last message naming the file once; a lock timeout
 * also names the processes holding sweeps of the database (sweep_owner.c). */
void approf_sweep_db_error(const Sweep *sw, const ApprofSweepConfig *cfg, char *err,
                           size_t errlen);
/* Takes sweep id for this process (schema 5): a second writer of one sweep
 * is told who holds it instead of racing it; a holder that is gone (no
 * such process on this host, or --take-over) is taken over, with a notice
 * (sweep_owner.c). 0 or APPROF_EDB with err set. */
int approf_sweep_claim(Sweep *sw, const ApprofSweepConfig *cfg, const ApprofSweepCallbacks *cb,
                       int64_t id, char *err, size_t errlen);

#endif
