/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb: the SQLite cost database every approf tool shares. It holds
 * hardware fingerprints and their capabilities, models and their layers,
 * sweeps with their submesh/config enumeration, stage profiles
 * (ModuleProfileResult per (i, j, s, c, phase)), communication profiles,
 * placements, plans and resharding tasks. The schema is documented in
 * schemas/README.md and applied by ordered migrations (PRAGMA user_version).
 *
 * Conventions: functions return 0 or a negative COSTDB_E* code; the last
 * detailed message (sqlite3_errmsg, the statement, file:line:column for input
 * errors) is available from costdb_errmsg(). Nothing here prints or exits.
 * Text fields in the structs below are fixed-size, NUL-terminated buffers:
 * input longer than the buffer is rejected with COSTDB_EINVAL, never cut.
 *
 * Contracts that hold for every function unless its comment says otherwise:
 *  - A NULL handle or a NULL required pointer is COSTDB_EINVAL (with no
 *    message: there may be no handle to hold one).
 *  - Ownership. The Costdb from costdb_open() is the caller's until
 *    costdb_close(). An array result (T **out, size_t *n) is one malloc'd
 *    block that the caller releases with a single free(); its rows hold no
 *    pointers. On success *out is NULL exactly when *n is 0. On failure
 *    nothing stays allocated: *out and *n are NULL and 0, or untouched when
 *    the call failed before reading (initialise them). A struct result (T *out) is caller memory the
 *    function fills; after a failure its contents are unspecified.
 *    Arguments are only read during the call: costdb keeps no pointer to
 *    them. Returned strings are static, or the handle's (costdb_errmsg,
 *    costdb_path): do not free them.
 *  - Writes. Each write is one unit: its own BEGIN IMMEDIATE transaction,
 *    or a savepoint inside the caller's costdb_begin() transaction. A write
 *    that fails is rolled back whole, so the database is as it was before
 *    the call (and the caller's transaction stays open). Input is checked
 *    before anything is written. On a handle opened read-only every write
 *    fails with COSTDB_EREADONLY.
 *  - Reads check what they decode: a value of the wrong type or outside the
 *    COSTDB_MAX_* limits is COSTDB_ECORRUPT naming table, row and column.
 */
#ifndef COSTDB_H
#define COSTDB_H

#include <stdint.h>
#include <stdio.h>

#include "variant.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    COSTDB_OK = 0,
    COSTDB_EIO = -1,         /* cannot open/read/write the file */
    COSTDB_ENOTDB = -2,      /* the file is not a SQLite database */
    COSTDB_ECORRUPT = -3,    /* the database is malformed */
    COSTDB_ETOONEW = -4,     /* written by a newer approf (user_version) */
    COSTDB_ENOMEM = -5,
    COSTDB_EINVAL = -6,      /* bad argument or bad input data */
    COSTDB_ENOTFOUND = -7,   /* no such row (sweep, plan, ...) */
    COSTDB_EBUSY = -8,       /* locked past the busy timeout */
    COSTDB_ESQL = -9,        /* any other SQLite failure */
    COSTDB_EPARSE = -10,     /* malformed input file (CSV) */
    COSTDB_EFULL = -11,      /* disk or quota full */
    COSTDB_EREADONLY = -12,  /* read-only file or directory */
    COSTDB_ECONSTRAINT = -13,/* duplicate key or failed CHECK */
    COSTDB_EUNTRUSTED = -14, /* triggers, views, tables or indexes approf did not create */
};

#define COSTDB_NAME_MAX 128
#define COSTDB_TEXT_MAX 512

/* Limits on what costdb reads from (and imports into) a database: a value
 * outside them is refused with COSTDB_ECORRUPT (on read) or COSTDB_EINVAL /
 * COSTDB_EPARSE (on write and CSV import), naming table, row and field, so
 * no count, index or size from a file sizes an allocation, a loop or an
 * output beyond them, and sums of costs and sizes stay finite and exact
 * (docs/reliability.md, "Opening a database you did not write"). */
#define COSTDB_MAX_DEVICES (1 << 20)   /* hosts x GPUs of a cluster, submesh, mesh */
#define COSTDB_MAX_LAYERS (1 << 16)    /* layers of a model; layer indices below it */
#define COSTDB_MAX_INDEX (1 << 16)     /* submesh, config, stage, task, tensor indices */
#define COSTDB_MAX_OPS (1 << 24)       /* operator indices of a layer */
#define COSTDB_MAX_MICRO_BATCHES (1 << 20)
/* The micro-batch sizes that matter for a global batch gb, the family
 * approf sweep profiles by default and apsolve's messages name
 * (docs/solver.md, "Micro-batch sizes"): gb / B for B = 1, 2, 4, 8, 16
 * micro-batches that divide gb, in that order (16 last: the newest sweep,
 * which plans given by hand use, is the one Alpa's default of 16 makes).
 * Writes at most max; returns how many (0 for gb <= 0). */
int costdb_micro_batch_family(int64_t gb, int64_t *sizes, int max);
#define COSTDB_MAX_BATCH (INT64_C(1) << 40)
#define COSTDB_MAX_BYTES (INT64_C(1) << 50) /* any size: 1 PiB */
#define COSTDB_MAX_SECONDS 1e9          /* any finite time: about 31 years */

/* Flags for costdb_open(). */
#define COSTDB_OPEN_READONLY 0x1 /* never write; fails on a missing file */
#define COSTDB_OPEN_NOCREATE 0x2 /* open read-write, but fail on a missing file */
/* With COSTDB_OPEN_READONLY: open the file as immutable (SQLite's
 * immutable=1: no locks, no -wal/-shm files), for a file nobody writes
 * while it is open. COSTDB_OPEN_READONLY alone chooses this by itself when
 * the file's directory is not writable (and no -wal file holds unmerged
 * transactions), so readers work on a read-only file in a read-only
 * directory owned by someone else and leave nothing behind. */
#define COSTDB_OPEN_IMMUTABLE 0x4

typedef struct Costdb Costdb;

/* Phase of a module: forward (m=0) or backward (m=1). */
typedef enum { COSTDB_FWD = 0, COSTDB_BWD = 1 } CostdbPhase;

typedef enum {
    COSTDB_STATUS_OK = 0,
    COSTDB_STATUS_OOM,
    COSTDB_STATUS_FAILED,
    COSTDB_STATUS_TIMEOUT,
    COSTDB_STATUS_SKIPPED,
} CostdbStatus;

typedef struct CostdbHardware {
    int64_t id;
    char fingerprint[COSTDB_TEXT_MAX];
    char kind[16];                    /* analytic | measured | imported */
    char spec_name[COSTDB_NAME_MAX];  /* analytic spec name, or "" */
    char gpu_model[COSTDB_NAME_MAX];
    int gpus_per_host;
    int64_t device_memory;            /* bytes */
    char driver_version[64];
    char cuda_version[64];
    char nccl_version[64];
    char interconnect[COSTDB_NAME_MAX];
    double peak_flops_f32, peak_flops_f16, peak_flops_bf16; /* FLOP/s */
    double memory_bandwidth;          /* bytes/s */
    double intra_host_bandwidth, intra_host_latency; /* bytes/s, s */
    double inter_host_bandwidth, inter_host_latency;
    char capabilities[COSTDB_TEXT_MAX * 4]; /* JSON object or "" */
} CostdbHardware;

typedef struct CostdbModel {
    int64_t id;
    char name[COSTDB_NAME_MAX];
    char signature[COSTDB_NAME_MAX];  /* hash of graph + layer split */
    char graph_hash[COSTDB_NAME_MAX];
    char options[COSTDB_TEXT_MAX];    /* JSON or "" */
    char dtype[8];
    int64_t batch_size;
    int64_t num_params;
    int num_layers;
    char layer_option[64];
} CostdbModel;

typedef struct CostdbLayer {
    int layer_index;
    int op_begin, op_end;             /* [op_begin, op_end) */
    double fwd_flops, bwd_flops;
    int64_t param_bytes, activation_bytes, inbound_bytes;
} CostdbLayer;

typedef enum {
    COSTDB_SWEEP_RUNNING = 0,
    COSTDB_SWEEP_COMPLETE,
    COSTDB_SWEEP_INTERRUPTED,
    COSTDB_SWEEP_FAILED,
    COSTDB_SWEEP_IMPORTED,
} CostdbSweepStatus;

typedef struct CostdbSweep {
    int64_t id;
    char name[COSTDB_NAME_MAX];
    int64_t model_id;                 /* 0: none (imported table) */
    int64_t hardware_id;              /* 0: none */
    int cluster_hosts, cluster_gpus;  /* N x M */
    int64_t global_batch;
    int micro_batches;
    /* samples per micro-batch, the batch the model's graph is built for
     * (schema 10); global_batch = micro_batch_size x micro_batches. 0:
     * unknown (a CSV import whose count does not divide its batch). On
     * create, 0 is derived from the two when the count divides the batch. */
    int64_t micro_batch_size;
    int num_layers;
    char layer_option[64];
    char submesh_space[COSTDB_NAME_MAX];
    char logical_space[64];
    char profile_mode[32];
    char dtype[8];
    char backend[16];
    char tool_version[32];
    char options[COSTDB_TEXT_MAX];    /* JSON or "" */
    char shard[32];                   /* "K/N" or "" */
    char source[COSTDB_TEXT_MAX];
    char started_at[32], finished_at[32];
    CostdbSweepStatus status;
} CostdbSweep;

typedef struct CostdbSubmesh {
    int index;
    int hosts, gpus_per_host;         /* (n, m) */
} CostdbSubmesh;

/* What the price of a ZeRO-3 variant assumes of the runtime: DeepSpeed's
 * stage3_max_reuse_distance in parameter elements, its default since
 * v0.3.13 (docs/variants.md, "ZeRO-3 and recomputation"). The stage
 * program prices the second gathers under full recomputation with it;
 * apreport's DeepSpeed export writes it. */
#define COSTDB_ZERO3_MAX_REUSE_DISTANCE 1000000000LL

/* One autosharding config of a submesh. Alpa's configs are (logical mesh,
 * force_batch_dim); approf adds variants of each (docs/variants.md): the
 * memory level of the sharding solution (0: the fastest, Alpa's ILP
 * optimum; higher: solutions that keep less memory resident), activation
 * recomputation and ZeRO sharding across the data-parallel replicas
 * (variant.h). A config whose variant is plain (costdb_variant_is_plain)
 * is Alpa's; those are the only ones --objective alpa reads. */
typedef struct CostdbConfig {
    int submesh_index, config_index;
    int logical_a, logical_b;
    int force_batch_dim;              /* -1: no option; else mesh axis (0) */
    CostdbVariant variant;            /* valid (costdb_variant_valid) */
} CostdbConfig;

/* One ModuleProfileResult row. compute_cost is +inf when status != OK. */
typedef struct CostdbEntry {
    int start_layer, end_layer;       /* inclusive layer range i..j */
    int submesh_index, config_index;
    CostdbPhase phase;
    double compute_cost;              /* seconds */
    int64_t peak_memory, invar_size, outvar_size, temp_buffer_size;
    int64_t available_memory;
    int64_t intermediate_size, initial_size;
    int repeats;
    double spread;                    /* relative spread of the repeats */
    int reused;
    CostdbStatus status;
    char error[COSTDB_TEXT_MAX];
    /* Seconds the stage spends once per iteration after its last backward:
     * gradient synchronisation across data-parallel replicas plus the
     * optimizer step (both already divided as ZeRO shards them). < 0:
     * unknown (stored as NULL; CSV imports, databases before schema 2). */
    double apply_cost;
    /* Seconds of a backward entry's compute_cost that compute the
     * parameters' gradients: the W pass of the zero-bubble schedules
     * (schema 12; docs/solver.md, "Schedules"). < 0: unknown (stored as
     * NULL; forward entries, CSV imports, databases before schema 12); a
     * value outside 0..compute_cost is stored as unknown. */
    double wgrad_cost;
    /* status OOM only: the seconds the sweep computed for the phase before
     * judging it out of memory (the analytic backend's), which the cp and
     * ep steps of apsolve price a plan from (docs/context-parallel.md,
     * "Refusals"); its cost stays compute_cost, +inf. Stored in the
     * compute_cost column of the oom row, which every costdb reader hands
     * out as +inf. <= 0: unknown (a measured OOM, rows written before). */
    double unfit_cost;
    /* The bytes of temp_buffer_size that scale with the tokens the GPU
     * holds (per-token buffers: the activations' gradients, the loss's
     * logits, a recomputed block's activations); the rest is weight-sized
     * (ZeRO-3's gathered blocks, a parameter's fresh gradient). apsolve's
     * cp step divides this part by cp (docs/context-parallel.md, "The
     * transient's activation-sized part"). Schema 17; <= 0: none or
     * unknown (stored as NULL: rows before schema 17, CSV imports without
     * it (schemas/csv-format.md), measured peaks; a composed entry takes
     * the largest of its layers'), and
     * the cp step divides no transient. A
     * value above temp_buffer_size is stored as NULL. */
    int64_t temp_activation_size;
} CostdbEntry;

typedef struct CostdbCommPoint {
    char collective[32];              /* all-reduce | all-gather | ... */
    char group_desc[COSTDB_NAME_MAX];
    char dtype[8];
    int64_t bytes;
    double seconds;
} CostdbCommPoint;

typedef struct CostdbComputePoint {
    char op[32];                      /* gemm | memcpy */
    char dtype[8];
    int64_t size;
    double rate;                      /* FLOP/s or bytes/s */
} CostdbComputePoint;

/* One measured GEMM shape (table gemm_profile, schema 9): C[m x n] =
 * A[m x k] B[k x n] in dtype, timed whole (main loop, epilogue, the gap to
 * the next GEMM) as `approf probe` times it. */
typedef struct CostdbGemmPoint {
    char dtype[8];                    /* bf16 | f16 | ... */
    int64_t m, n, k;                  /* 1..COSTDB_MAX_GEMM_DIM */
    double rate;                      /* FLOP/s: 2 m n k / seconds; finite, > 0 */
} CostdbGemmPoint;
#define COSTDB_MAX_GEMM_DIM (INT64_C(1) << 31)

typedef struct CostdbPlacement {
    int start_layer, end_layer, submesh_index, config_index;
    int tensor_index;
    char tensor_name[COSTDB_NAME_MAX * 2];
    char role[8];                     /* param | input | output */
    char shape[COSTDB_NAME_MAX];      /* "2048,8192" */
    char dtype[8];
    char sharding_spec[COSTDB_TEXT_MAX];
} CostdbPlacement;

typedef struct CostdbPlan {
    int64_t id;
    int64_t sweep_id;
    char kind[16];                    /* auto | manual | uniform | 3d */
    char objective[16];               /* training | inference */
    int micro_batches;
    int64_t global_batch;             /* 0: the sweep's */
    int64_t memory_budget;            /* 0: none */
    int max_stages;                   /* 0: none */
    double cost, full_cost;
    int feasible;
    double solve_seconds;
    char options[COSTDB_TEXT_MAX * 2];
    char created_at[32];
} CostdbPlan;

typedef struct CostdbPlanStage {
    int stage_index;
    int start_layer, end_layer;
    int submesh_index;                /* -1 if not one of the sweep's */
    int submesh_hosts, submesh_gpus;
    int config_index;                 /* -1 if not one of the sweep's */
    int logical_a, logical_b;
    int force_batch_dim;              /* -1: none */
    double fwd_cost, bwd_cost;
    int64_t peak_memory, memory_needed, available_memory;
} CostdbPlanStage;

typedef struct CostdbReshardingTask {
    int task_index;
    int src_stage, dst_stage;
    char tensor_name[COSTDB_NAME_MAX * 2];
    char shape[COSTDB_NAME_MAX];
    char dtype[8];
    char src_spec[COSTDB_TEXT_MAX], dst_spec[COSTDB_TEXT_MAX];
    int64_t bytes;
    char strategy[32];
    double seconds;
} CostdbReshardingTask;

/* ---- open, close, errors, transactions -------------------------------- */

/* Opens (creating unless flags forbid) the database at path, applies any
 * pending migrations and sets busy_timeout, WAL, synchronous=NORMAL and
 * foreign_keys=ON. A non-database, corrupt or newer file fails with
 * ENOTDB/ECORRUPT/ETOONEW and is left untouched. Every file is treated as
 * untrusted input: the connection is DEFENSIVE with trusted_schema off, and
 * a file holding a trigger, view, table or index that approf's migrations
 * did not create (or altered) fails with EUNTRUSTED, naming them, before
 * anything in it runs. Values read later are type- and bounds-checked
 * (COSTDB_MAX_*). flags: COSTDB_OPEN_*. On success the caller owns *out and
 * releases it with costdb_close(). On failure *out is NULL and errbuf (if
 * given, errlen bytes) holds the message. */
int costdb_open(const char *path, int flags, Costdb **out, char *errbuf, size_t errlen);
/* Rolls back a transaction left open, finalizes every statement, closes the
 * database, frees the handle and sets *db to NULL. db == NULL and
 * *db == NULL are fine (nothing to do). */
void costdb_close(Costdb **db);
/* Copies the write-ahead log into the database file and syncs both to disk
 * (a passive checkpoint: it waits for no reader). COSTDB_OK, also when
 * another process holds the log (its checkpoint syncs it); else an I/O
 * error (a failed fsync, a full disk) with a message that names the file.
 * Writers call it once at the end, before they report success: SQLite
 * ignores the errors of its automatic checkpoints. */
int costdb_sync(Costdb *db);
/* The write-ahead log is copied into the database file (and both
 * synced) once it holds this many pages (SQLite's default 1,000, 4 MB at
 * 4 kB pages), for this handle only: a writer of many small transactions
 * syncs less often, the log growing to about pages times the page size
 * between checkpoints (more while a reader keeps it). No row changes.
 * COSTDB_OK, EINVAL (pages <= 0), or an error. */
int costdb_wal_autocheckpoint(Costdb *db, int pages);
/* Frees what the handle remembers of the rows it wrote (the placement
 * texts' and the cost rows' ids, which only spare lookups and repeats):
 * for a writer done writing that goes on reading. db NULL: nothing. */
void costdb_forget_written(Costdb *db);
/* A static one-line description of a COSTDB_E* code (never NULL). */
const char *costdb_strerror(int err);
/* The message of the last failure on this handle ("no error" if none, "no
 * database" for NULL; never NULL). Later successes do not clear it. The
 * text is the handle's: valid until the next failing call or
 * costdb_close(). */
const char *costdb_errmsg(const Costdb *db);
/* The path the handle was opened with ("" for NULL); the handle's. */
const char *costdb_path(const Costdb *db);
/* The schema version this build writes: the number of migrations in
 * schemas/ (NNN_*.sql). */
int costdb_schema_version(void);
/* *version = the open file's schema version (PRAGMA user_version). */
int costdb_file_version(Costdb *db, int *version);

/* BEGIN IMMEDIATE / COMMIT / ROLLBACK of the caller's transaction, inside
 * which every write below becomes a savepoint. Not nested: costdb_begin
 * fails with EINVAL while a transaction is open and with EREADONLY on a
 * read-only handle; costdb_commit fails with EINVAL when none is open (a
 * failed COMMIT leaves it open unless SQLite rolled it back). costdb_rollback
 * with no transaction open is 0. */
int costdb_begin(Costdb *db);
int costdb_commit(Costdb *db);
int costdb_rollback(Costdb *db);

/* Current UTC time as "YYYY-MM-DDTHH:MM:SSZ" into buf (21 bytes or more,
 * else buf gets ""; the structs' *_at fields have 32). */
void costdb_now(char *buf, size_t len);

/* ---- hardware ----------------------------------------------------------- */

/* Inserts hw unless a row with the same fingerprint exists (that row is
 * kept as it is, not updated); either way sets hw->id to the row's id. */
int costdb_hardware_upsert(Costdb *db, CostdbHardware *hw);
/* Fills *out with hardware row id, or ENOTFOUND. */
int costdb_hardware_get(Costdb *db, int64_t id, CostdbHardware *out);
/* Fills *out with the row of this fingerprint, or ENOTFOUND. */
int costdb_hardware_find(Costdb *db, const char *fingerprint, CostdbHardware *out);
/* For every (collective, group, dtype) that occurs in pts, replaces that
 * curve of hardware_id by the points of pts (n == 0: nothing changes). */
int costdb_comm_put(Costdb *db, int64_t hardware_id, const CostdbCommPoint *pts, size_t n);
/* The points of (hardware, collective, group, dtype) sorted by bytes;
 * *out malloc'd (the caller frees it), *n may be 0. */
int costdb_comm_get(Costdb *db, int64_t hardware_id, const char *collective,
                    const char *group_desc, const char *dtype,
                    CostdbCommPoint **out, size_t *n);
/* Every comm point of a hardware row, ordered by collective, group, dtype,
 * bytes; *out malloc'd (the caller frees it), *n may be 0. */
int costdb_comm_list(Costdb *db, int64_t hardware_id, CostdbCommPoint **out, size_t *n);
/* For every (op, dtype) that occurs in pts, replaces that curve of
 * hardware_id by the points of pts. */
int costdb_compute_put(Costdb *db, int64_t hardware_id, const CostdbComputePoint *pts, size_t n);
/* The points of (hardware, op, dtype) sorted by size; *out malloc'd (the
 * caller frees it), *n may be 0. */
int costdb_compute_get(Costdb *db, int64_t hardware_id, const char *op, const char *dtype,
                       CostdbComputePoint **out, size_t *n);
/* For every dtype that occurs in pts, replaces that GEMM shape table of
 * hardware_id by the points of pts, in one transaction (n == 0: nothing
 * changes). Every point is checked first: dtype text, m, n, k in
 * 1..COSTDB_MAX_GEMM_DIM, rate finite and > 0 (EINVAL naming the point and
 * field; nothing is written); a shape twice in pts keeps the last. */
int costdb_gemm_put(Costdb *db, int64_t hardware_id, const CostdbGemmPoint *pts, size_t n);
/* The GEMM points of (hardware, dtype) ordered by m, n, k; *out malloc'd
 * (the caller frees it), *n may be 0 (also for a file of schema 8 or
 * older, which has no table). A stored value that is not what
 * costdb_gemm_put accepts is ECORRUPT naming table gemm_profile, the row's
 * key and the column. */
int costdb_gemm_get(Costdb *db, int64_t hardware_id, const char *dtype, CostdbGemmPoint **out,
                    size_t *n);
/* Every GEMM point of a hardware row, ordered by dtype, m, n, k; checked as
 * costdb_gemm_get checks them. */
int costdb_gemm_list(Costdb *db, int64_t hardware_id, CostdbGemmPoint **out, size_t *n);

/* ---- models ------------------------------------------------------------- */

/* Inserts the model and its layers unless a model with m->signature exists
 * (then the stored model and layers are kept and layers is not stored); sets
 * m->id either way. */
int costdb_model_upsert(Costdb *db, CostdbModel *m, const CostdbLayer *layers, size_t n_layers);
/* Fills *out with model row id, or ENOTFOUND. */
int costdb_model_get(Costdb *db, int64_t id, CostdbModel *out);
/* The layers of a model ordered by layer_index; *out malloc'd (the caller
 * frees it); an unknown model has none (*n = 0, not ENOTFOUND). */
int costdb_model_layers(Costdb *db, int64_t model_id, CostdbLayer **out, size_t *n);

/* ---- sweeps ------------------------------------------------------------- */

/* Creates the sweep row with its submeshes and configs in one unit. Sets
 * s->id (0 on failure) and fills the empty fields started_at (now),
 * tool_version (this build's), profile_mode ("composition") and dtype
 * ("f32") of *s. */
int costdb_sweep_create(Costdb *db, CostdbSweep *s,
                        const CostdbSubmesh *submeshes, size_t n_submeshes,
                        const CostdbConfig *configs, size_t n_configs);
/* Fills *out with sweep row id, or ENOTFOUND. */
int costdb_sweep_get(Costdb *db, int64_t id, CostdbSweep *out);
/* *id = the newest sweep (highest id), or ENOTFOUND when there is none. */
int costdb_sweep_latest(Costdb *db, int64_t *id);
/* All sweeps ordered by id; *out malloc'd (the caller frees it). */
int costdb_sweep_list(Costdb *db, CostdbSweep **out, size_t *n);
/* Sets the status of sweep id, and finished_at to now when set_finished;
 * ENOTFOUND when there is no such sweep, EINVAL for a status out of range. */
int costdb_sweep_set_status(Costdb *db, int64_t id, CostdbSweepStatus st, int set_finished);
/* A sweep's submeshes ordered by index; *out malloc'd (the caller frees
 * it); an unknown sweep has none. */
int costdb_sweep_submeshes(Costdb *db, int64_t sweep_id, CostdbSubmesh **out, size_t *n);
/* A sweep's configs ordered by (submesh_index, config_index); *out malloc'd
 * (the caller frees it); an unknown sweep has none. */
int costdb_sweep_configs(Costdb *db, int64_t sweep_id, CostdbConfig **out, size_t *n);
/* Deletes a sweep and everything hanging off it (entries, placements,
 * plans); ENOTFOUND when there is no such sweep. */
int costdb_sweep_delete(Costdb *db, int64_t id);

/* "The same setup": whether one sweep stands for another, defined once
 * (costdb/sweep_setup.c) for resume, merge and the micro-batch family, each
 * naming what it ignores. The fields of the sweep, model and hardware rows
 * that must agree, in the order they are compared: */
typedef enum {
    COSTDB_SETUP_CLUSTER = 1u << 0,        /* cluster_hosts x cluster_gpus */
    COSTDB_SETUP_GLOBAL_BATCH = 1u << 1,
    COSTDB_SETUP_MICRO_BATCHES = 1u << 2,  /* micro_batches, micro_batch_size */
    COSTDB_SETUP_LAYERS = 1u << 3,         /* num_layers, layer_option */
    COSTDB_SETUP_SUBMESH_SPACE = 1u << 4,
    COSTDB_SETUP_LOGICAL_SPACE = 1u << 5,
    COSTDB_SETUP_PROFILE_MODE = 1u << 6,
    COSTDB_SETUP_DTYPE = 1u << 7,
    COSTDB_SETUP_BACKEND = 1u << 8,
    COSTDB_SETUP_OPTIONS = 1u << 9,        /* the sweep's options (solver, variants, ...) */
    COSTDB_SETUP_SHARD = 1u << 10,         /* "K/N" or "" */
    COSTDB_SETUP_HARDWARE = 1u << 11,      /* the hardware row's fingerprint */
    /* The model row's signature (graph + layer split; the graph is built
     * for the micro-batch). With the batch fields ignored: what the
     * signature covers apart from the batch, the model's name, options and
     * layer boundaries (operator ranges). */
    COSTDB_SETUP_MODEL = 1u << 12,
} CostdbSetupField;
#define COSTDB_SETUP_BATCH (COSTDB_SETUP_GLOBAL_BATCH | COSTDB_SETUP_MICRO_BATCHES)
/* What each use ignores. Never part of the setup: a sweep's id, name,
 * tool_version, source, times and status (the record of a run; each use
 * filters statuses itself). */
#define COSTDB_SETUP_IGNORE_RESUME 0u                    /* continue this very sweep */
#define COSTDB_SETUP_IGNORE_MERGE COSTDB_SETUP_SHARD     /* shards of one sweep */
#define COSTDB_SETUP_IGNORE_FAMILY COSTDB_SETUP_BATCH    /* one sweep per micro-batch size */
/* Compares sweep a of database da with sweep b of database dbb (the same
 * handle or two files; ids are only compared within one file): *differ =
 * the first field above, outside ignore, in which they differ, 0 when they
 * have the same setup. The model and hardware rows are read (by the
 * sweeps' model_id and hardware_id, 0 = none) only when every sweep field
 * agrees. Returns 0, or the error of reading a row. */
int costdb_setup_diff(Costdb *da, const CostdbSweep *a, Costdb *dbb, const CostdbSweep *b,
                      unsigned ignore, unsigned *differ);
/* The name of one CostdbSetupField for messages ("global batch", "logical
 * space", ...); "" for anything else. Static. */
const char *costdb_setup_field_name(unsigned field);

/* Who writes a sweep (schema 5, sweep_owner). */
typedef struct CostdbSweepOwner {
    int64_t sweep_id;                 /* filled by costdb_sweep_owners */
    int64_t pid;
    char host[COSTDB_NAME_MAX];
    char since[32];                   /* ISO 8601 UTC, set by costdb_sweep_claim */
} CostdbSweepOwner;

/* Decides whether a holder's claim may be taken over (its process is gone);
 * 1 yes, 0 no. */
typedef int (*CostdbOwnerStale)(void *ctx, const CostdbSweepOwner *holder);

/* Takes sweep id for me (pid > 0, host; since is filled in), in one write
 * transaction: 0 when it had no owner, was held by me already, or its
 * holder is stale by stale(ctx, holder) (stale may be NULL: never); then
 * *taken_over (may be NULL) says whether a holder was replaced and *holder
 * (may be NULL) who it was. COSTDB_EBUSY when another owner holds it, with
 * *holder filled. */
int costdb_sweep_claim(Costdb *db, int64_t id, CostdbSweepOwner *me, CostdbOwnerStale stale,
                       void *ctx, CostdbSweepOwner *holder, int *taken_over);
/* Gives sweep id back if me (pid, host) holds it; 0 otherwise too. */
int costdb_sweep_release(Costdb *db, int64_t id, const CostdbSweepOwner *me);
/* Every sweep's holder, by sweep id; *out malloc'd (the caller frees it).
 * Works while another connection holds the write lock (WAL readers). */
int costdb_sweep_owners(Costdb *db, CostdbSweepOwner **out, size_t *n);
/* The name of a sweep status ("unknown" out of range); static. */
const char *costdb_sweep_status_name(CostdbSweepStatus st);
/* *out = the status named s, or EINVAL (s NULL or unknown; *out untouched). */
int costdb_sweep_status_parse(const char *s, CostdbSweepStatus *out);

/* ---- stage profiles ----------------------------------------------------- */

/* Inserts n entries of one sweep in one unit. A duplicate key is
 * ECONSTRAINT unless replace is set (then the stored entry is replaced). */
int costdb_entries_put(Costdb *db, int64_t sweep_id, const CostdbEntry *e, size_t n, int replace);
/* Copies e to *dst as costdb_entries_put reads it: every field, and of
 * error its text and NUL (all of its bytes when it has no NUL), not the
 * unused rest of the buffer, which no reader looks at (the text is read as
 * a string). An entry is 656 bytes, 512 of them error, most often empty: a
 * sweep hands millions of entries from thread to thread. */
void costdb_entry_copy(CostdbEntry *dst, const CostdbEntry *e);
/* All entries of a sweep ordered by (submesh desc, start, end, config, phase);
 * *out malloc'd (the caller frees it). */
int costdb_entries_get(Costdb *db, int64_t sweep_id, CostdbEntry **out, size_t *n);
/* Yes/no: *exists = 1 when the entry (i..j, s, c, phase) of the sweep is
 * stored, else 0 (used by --resume). */
int costdb_entry_exists(Costdb *db, int64_t sweep_id, int start, int end, int submesh,
                        int config, CostdbPhase phase, int *exists);
/* *n = the number of entries stored for the sweep (0 for an unknown one). */
int costdb_entries_count(Costdb *db, int64_t sweep_id, int64_t *n);
/* The name of an entry status ("unknown" out of range); static. */
const char *costdb_status_name(CostdbStatus st);
/* *out = the status named s, or EINVAL (s NULL or unknown; *out untouched). */
int costdb_status_parse(const char *s, CostdbStatus *out);

/* ---- placements --------------------------------------------------------- */

/* Stores placements in one unit; a row with the same (i, j, s, c, role,
 * tensor_index) is replaced (a re-profiled stage overwrites its
 * placements). A role other than param, input or output, or a negative
 * tensor_index, is ECONSTRAINT; a role or spec not NUL-terminated in its
 * field is EINVAL, and so is a tensor_name, shape or dtype of a tensor the
 * sweep does not hold yet. A tensor keeps the name, shape and dtype it was
 * first stored with: those fields of a row whose tensor the sweep holds
 * are not read. */
int costdb_placements_put(Costdb *db, int64_t sweep_id, const CostdbPlacement *p, size_t n);
/* One stage's rows for costdb_placements_put_keyed, made only when it
 * needs them: *rows (*n of them, all of the key's stage; the callee's,
 * read before it returns to its caller). 0, or a negative code that the
 * put returns as it is. */
typedef int (*CostdbPlacementRows)(void *ctx, const CostdbPlacement **rows, size_t *n);
/* A caller's name for one stage's placement rows. bytes (len of them) must
 * tell apart any two lists of rows that differ in their order, a role, a
 * sharding_spec, or a tensor_index less base: equal bytes, equal rows but
 * for their tensors (shifted by the difference of the bases) and those
 * tensors' texts. A key may name texts by the caller's pointers, so it
 * must keep its meaning until costdb_forget_written or costdb_close. */
typedef struct CostdbPlacementKey {
    int start_layer, end_layer, submesh_index, config_index;   /* the stage */
    int base;                     /* the tensor_index the key counts from */
    const void *bytes;
    size_t len;
} CostdbPlacementKey;
/* Stores what costdb_placements_put(db, sweep_id, rows, n) stores for the
 * rows that rows(ctx) makes, the same rows with the same ids, but makes
 * them only when the connection has not stored a set under the same key
 * since its caches were last dropped (a rollback, costdb_forget_written),
 * or the sweep does not hold every tensor of that set counted from this
 * base: else it stores the set from what it remembers (issue 38: a
 * 126-layer sweep stores 384,049 sets of some 386 rows, most of them a
 * list stored before). The memory is bounded (placement_memo.h). */
int costdb_placements_put_keyed(Costdb *db, int64_t sweep_id, const CostdbPlacementKey *key,
                                CostdbPlacementRows rows, void *ctx);
/* Placements of one (i, j, s, c) ordered by role (param, input, output),
 * then tensor_index. For a variant config c these are the placements stored
 * under its owner (same logical mesh, force flag and memory level, recompute
 * none, zero 0: docs/variants.md); the rows carry config_index c. *out
 * malloc'd (the caller frees it), *n may be 0. */
int costdb_placements_get(Costdb *db, int64_t sweep_id, int start, int end, int submesh,
                          int config, CostdbPlacement **out, size_t *n);
/* The config whose placements costdb_placements_get reads for config c of
 * submesh s (its owner, the rule above; c itself when it has none) into
 * *owner: placements of configs with one owner are the same. 0 or < 0. */
int costdb_placements_owner(Costdb *db, int64_t sweep_id, int submesh, int config, int *owner);
/* Every placement of a sweep as stored (owner configs only, no variant
 * mapping) ordered by (submesh, start, end, config, role, tensor_index);
 * *out malloc'd (the caller frees it), *n may be 0. */
int costdb_placements_list(Costdb *db, int64_t sweep_id, CostdbPlacement **out, size_t *n);

/* ---- plans -------------------------------------------------------------- */

/* Stores a plan with its stages in one unit. Sets p->id (0 on failure) and
 * an empty p->created_at to now. A NaN full_cost (not estimated) is stored
 * as NULL and reads back as 0; any other NaN field is EINVAL. */
int costdb_plan_put(Costdb *db, CostdbPlan *p, const CostdbPlanStage *stages, size_t n);
/* Fills *out with plan row id, or ENOTFOUND. stages may be NULL: the plan
 * row only (n is then not used). Otherwise *stages is the plan's stages
 * ordered by stage_index, malloc'd and owned by the caller, who frees it
 * with free() (NULL when *n is 0); on failure *stages is NULL and *n 0. */
int costdb_plan_get(Costdb *db, int64_t id, CostdbPlan *out, CostdbPlanStage **stages, size_t *n);
/* *id = the newest plan (highest id), of one sweep when sweep_id > 0, of
 * any sweep otherwise; ENOTFOUND when there is none. */
int costdb_plan_latest(Costdb *db, int64_t sweep_id, int64_t *id);
/* Stores the resharding tasks of plan_id in one unit. */
int costdb_resharding_put(Costdb *db, int64_t plan_id, const CostdbReshardingTask *t, size_t n);
/* The resharding tasks of a plan ordered by task_index; *out malloc'd (the
 * caller frees it), *n may be 0. */
int costdb_resharding_get(Costdb *db, int64_t plan_id, CostdbReshardingTask **out, size_t *n);

/* ---- CSV interchange (schemas/csv-format.md) ---------------------------- */

/* Writes the stage profiles of a sweep as CSV (header first), largest
 * submesh shape first, then by config, start, end, phase. Floats are printed
 * in the shortest form that reads back exactly (at most %.17g digits; +inf
 * as "inf"), so export -> import -> export is byte-identical. out stays the
 * caller's (flushed, not closed); ENOTFOUND for an unknown sweep, EIO when
 * writing fails. */
int costdb_csv_export(Costdb *db, int64_t sweep_id, FILE *out);

typedef struct CostdbImportOptions {
    int cluster_hosts, cluster_gpus;  /* 0: inferred from the largest submesh */
    int micro_batches;                /* 0: 1 */
    int64_t global_batch;             /* 0: 1 */
    const char *name;                 /* NULL: the file's base name */
} CostdbImportOptions;

/* Creates a sweep (status 'imported') from the CSV file at path, in one
 * transaction: on any error nothing is imported, and costdb_errmsg() names
 * path:line:column and the field. opt may be NULL (all defaults). Sets
 * *sweep_id. */
int costdb_csv_import(Costdb *db, const char *path, const CostdbImportOptions *opt,
                      int64_t *sweep_id);

/* ---- Alpa-format printing ----------------------------------------------- */

/* Prints the entries of a sweep as Alpa logs them, grouped under
 * "- Profiling for submesh K (n, m):" headers, largest submesh first, each
 * line followed by "  # temp_activation_size=X GB" (schema 17; "=NULL"
 * when none or unknown), which Alpa does not write. out
 * stays the caller's (flushed, not closed); ENOTFOUND for an unknown sweep,
 * EIO when writing fails. */
int costdb_print_alpa(Costdb *db, int64_t sweep_id, FILE *out);
/* One entry line: result[(i, j, s, c), m] = ModuleProfileResult(...), cut
 * to len bytes and NUL-terminated (len 0: nothing written; e NULL: ""). */
void costdb_format_entry(const CostdbEntry *e, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
