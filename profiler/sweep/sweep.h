/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profiling sweep: builds the model, constructs layers, enumerates
 * (layer range, submesh, config) tuples, shards each stage, costs its
 * forward and backward modules with a backend and writes every tuple's
 * entries and placements to the cost database as soon as they exist, in
 * batch transactions (the writer in sweep_db.c): a batch is committed after
 * the tuple that makes it commit_every tuples (default 64) or finds it open
 * for 50 ms or more. A kill therefore loses the tuples of the open batch
 * (at most commit_every - 1) besides those in flight; a stop (SIGINT,
 * SIGTERM, SIGHUP) or an error commits what was finished. --resume
 * profiles whatever is missing.
 */
#ifndef APPROF_SWEEP_H
#define APPROF_SWEEP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "costdb.h"
#include "sharding/ilp.h"
#include "enumerate.h"
#include "graph.h"

/* Most profiling threads of one sweep process (ApprofSweepConfig.workers). */
#define APPROF_SWEEP_MAX_WORKERS 256
/* Tuples counted before a sweep starts: above WARN a notice says how many
 * and how to shrink or spread them; above MAX the sweep is refused unless
 * ApprofSweepConfig.allow_large (docs/reliability.md has the figures). */
#define APPROF_SWEEP_WARN_TUPLES 100000
#define APPROF_SWEEP_MAX_TUPLES 2000000

typedef struct ApprofSweepConfig {
    const char *db_path;
    const char *model_name;       /* zoo name ... */
    const char *model_file;       /* ... or a model file (one of the two) */
    const char *preset;           /* zoo options, NULL/0 = the model's default */
    const char *hf_facts;         /* --hf-config: what the config says that no placement shows
                                   * (heads, key/value heads, rope_theta, context, router
                                   * top-k), as JSON members ",\"hf_heads\":32,...", stored in
                                   * the model's options for the launch files; NULL: none */
    const char *attention;        /* gpt and llama families: "flash" | "eager" | NULL */
    int activation_fusion;        /* llama family: the gated MLP's activation fused as
                                   * Megatron-Core runs it (ApprofZooOptions); the graph's
                                   * hash carries it, so resume and merge compare it */
    int eager_elementwise;        /* llama family: torchtitan's eager RMSNorm, rotary and
                                   * K/V repeat (ApprofZooOptions); in the graph's hash */
    int attention_unpad;          /* gpt, bert: the flash kernel through flash-attn's
                                   * unpad/pad copies (ApprofZooOptions) */
    const char *dataset;
    int zoo_num_layers, zoo_hidden, zoo_heads, zoo_seq_len, zoo_vocab;
    int zoo_depth, zoo_width;
    int zoo_mlm_positions;        /* bert: masked positions the head scores; 0 = all */
    double zoo_dropout;           /* bert: dropout rate; 0 = none */
    int manual_boundary;          /* mlp: with the boundary marker */
    int layers;                   /* layer_num for auto layering; 0 = manual */
    int layers_default;           /* layers is the default, not asked for: a model that cannot
                                   * be split into it takes the most layers it can (a notice) */
    double eps;
    int cluster_hosts, cluster_gpus;
    int64_t global_batch;         /* 0: the model's default */
    int micro_batches;
    ApprofDtype dtype;
    int dtype_default;            /* 1: no --dtype given: a language transformer of the zoo
                                   * trains in approf_mixed_precision_dtype of the hardware,
                                   * every other model in dtype */
    const char *hardware;         /* spec name or file */
    int64_t hardware_id;          /* > 0: price on this stored hardware row (approf probe's
                                   * measured one, say): its measured communication curves
                                   * and GEMM rates, the spec for everything else; the sweep
                                   * records that row. 0: the spec's own row (with CUDA:
                                   * this machine's measured row) */
    const char *backend;          /* auto | model | cuda */
    int backend_given;            /* 1: --backend named on the command line. With the
                                   * default (0) a machine without a GPU falls back to the
                                   * analytic model without a notice (the summary's
                                   * "backend model" says it); docs/reliability.md */
    ApprofSubmeshSpace submesh_space;
    ApprofMeshShape manual_submeshes[APPROF_MAX_SUBMESHES];
    int n_manual_submeshes;
    ApprofLogicalSpace logical_space;
    int individual;               /* profile mode individual (else composition) */
    double imbalance_tol;         /* < 0: off */
    int skip_unfit;               /* --skip-unfit: leave out (and count) the tuples whose every
                                   * entry is out of memory by approf_sweep_skip_unfit's
                                   * bound (sweep_int.h); 0, the default: profile them */
    int keep_dominated;           /* --keep-dominated: store every variant; 0, the default:
                                   * a complete sweep leaves out the variants another of the
                                   * same stage dominates (sweep_dominated.h) */
    int resume;
    int take_over;                /* take a sweep over from a holder on another host */
    int shard_k, shard_n;         /* this process profiles tuples with index % n == k */
    int commit_every;             /* tuples per transaction (0: default) */
    int workers;                  /* profiling threads of this process, 1..256 (0: the
                                   * backend's default, sweep_workers.h); results are
                                   * written in tuple order whatever the count */
    ApprofIlpMethod sharding_method; /* APPROF_ILP_SERIES_PARALLEL (the default: exact
                                   * series-parallel elimination, CBC for the rest) or
                                   * APPROF_ILP_ELIMINATE_TREES_THEN_CBC (--sharding-solver
                                   * cbc: every residual core to CBC) */
    /* The stage variants profiled (docs/variants.md); all zero (the
     * default) is Alpa's plain space. */
    CostdbVariantSpace variants;
    int allow_large;              /* run even above APPROF_SWEEP_MAX_TUPLES tuples */
    const char *tool_version;
    int fp8;                      /* --fp8 (--fp8-recipe): the CostdbFp8RecipeId the linear
                                   * layers' GEMMs run in FP8 with, as Transformer Engine
                                   * runs it (docs/fp8.md); 0: 16 bits. The analytic backend
                                   * of a spec that can run it, a 16-bit model */
    int zero3_schedule;           /* --zero3-schedule: how ZeRO-3's collectives overlap
                                   * compute (an ApprofZero3Schedule; 0: serial, the
                                   * pricing before 2026-11-28); the analytic backend */
} ApprofSweepConfig;

/* approf sweep --variants all: 3 memory levels, recomputation none,
 * selective and full, ZeRO 0-3 (docs/variants.md, "The default space"). */
#define APPROF_SWEEP_WHOLE_SPACE ((CostdbVariantSpace){3, 7u, 15u})
/* --variants auto where the training state fits one device: Alpa's plain
 * space (one memory level, no recomputation) with ZeRO 0-3, the sharded
 * optimizer state, gradients and weights of Megatron-LM's distributed
 * optimizer, DeepSpeed's ZeRO and FSDP (docs/variants.md, "The default
 * space"). */
#define APPROF_SWEEP_ZERO_SPACE ((CostdbVariantSpace){1, 1u, 15u})

/* Whether the model of cfg needs the whole search space (--variants auto,
 * docs/variants.md "The default space"): its training state kept whole on
 * one device (every parameter, its gradient and Adam's state, in the
 * precision the sweep would use) against that device's memory on cfg's
 * hardware (the sweep's own resolution of both). 1 when it does not fit
 * (data parallelism alone cannot train it: the memory levels, ZeRO and
 * recomputation decide the plan), 0 when it fits, negative with err on a
 * model or hardware the sweep would refuse. *state and *device: bytes. */
int approf_sweep_needs_whole_space(const ApprofSweepConfig *cfg, double *state, double *device,
                                   char *err, size_t errlen);

/* The global batch a sweep with cfg uses: cfg->global_batch, else the zoo
 * model's default (a model file needs an explicit one). */
int approf_sweep_global_batch(const ApprofSweepConfig *cfg, int64_t *out, char *err,
                              size_t errlen);

struct ApprofSweepSummary;

typedef struct ApprofSweepCallbacks {
    void *ctx;
    /* A new submesh starts (index, shape) — Alpa's "- Profiling for submesh" */
    void (*submesh)(void *ctx, int index, int n, int m);
    /* One entry was computed and written (or found already written on resume). */
    void (*entry)(void *ctx, const CostdbEntry *e);
    /* done of total tuples, and their work: a tuple weighs the operators of
     * its layer range (the size of the sharding ILP that dominates its cost),
     * so an ETA from work_done / work_total follows the cost, not the count. */
    void (*progress)(void *ctx, size_t done, size_t total, double work_done, double work_total);
    /* One-line notices (backend fallback, resume). */
    void (*notice)(void *ctx, const char *msg);
    /* Set asynchronously (signal handler) to stop after the tuple in flight. */
    volatile sig_atomic_t *stop;
    /* The sweep stopped (a signal, or another rank's). On rank 0 the sweep
     * is marked interrupted in the database and sum has its id and counts;
     * called once, before the other ranks are released: under mpirun they
     * then exit non-zero at once and the launcher kills rank 0 (SIGTERM,
     * SIGKILL a second later), so what rank 0 says after that can be lost.
     * On another rank (sum->mpi_rank > 0) called before it tells rank 0 it
     * is done, for the same reason: rank 0 may exit as soon as it knows. */
    void (*interrupted)(void *ctx, const struct ApprofSweepSummary *sum);
} ApprofSweepCallbacks;

typedef struct ApprofSweepSummary {
    int64_t sweep_id;
    int resumed;                  /* continued an unfinished sweep */
    size_t tuples, entries;       /* tuples of this sweep/shard, entries written now */
    size_t existing;              /* entries already present (resume) */
    size_t failures;              /* entries that failed: status failed or timeout */
    size_t skipped;               /* entries of variant slots the stage does not have
                                   * (status skipped: a memory level past its distinct
                                   * sharding points, ZeRO without data-parallel replicas,
                                   * selective recomputation without attention); counted,
                                   * not stored (docs/variants.md, "Storage") */
    size_t out_of_memory;         /* entries that do not fit in memory: status oom (not
                                   * counted in failures: the sweep worked, the layout is too
                                   * big) */
    size_t unfit;                 /* tuples left out: out of memory whatever their
                                   * configuration (approf_sweep_skip_unfit) */
    size_t dominated;             /* (i, j, s, c) entries left out: dominated variants
                                   * (approf_sweep_leave_out_dominated) */
    size_t reused;                /* entries copied from an identical stage program */
    size_t sharding_solved, sharding_cached;
    double t_build, t_enumerate, t_sharding, t_costing, t_writing, t_total;
    /* t_writing: the writer thread's time in the database (sweep_writer.h)
     * and the main thread's at the end; t_handover: the main thread's time
     * handing results to the writer thread (placement rows made, waits on
     * a full queue), the writing the profiling still waits for */
    double t_handover;
    char backend[16];
    char hardware[64];
    char dtype[8];                /* the compute dtype the sweep profiled */
    int dtype_mixed_default;      /* dtype is the mixed-precision default (no --dtype) */
    int fp8;                      /* --fp8 priced: its CostdbFp8RecipeId */
    int zero3_schedule;           /* --zero3-schedule priced (ApprofZero3Schedule) */
    char collectives[128];        /* how collectives were priced */
    char comm_timing[640];        /* when the framework's communication runs (the
                                   * spec's grad_overlap, tp_comm_overlap,
                                   * tp_async_grad, grad_reduce_bytes,
                                   * grad_accum_fusion; ZeRO-3) */
    int workers;                  /* profiling threads used */
    char devices[128];            /* CUDA: "2 x Fake GPU 40GB (devices 0,1)", else "" */
    int interrupted;
    int mpi_rank, mpi_size;       /* under mpirun: this process and all (else 0, 1);
                                   * only rank 0 writes and reports */
} ApprofSweepSummary;

/* Runs (or, with resume, continues) a sweep described by cfg. Under an MPI
 * launcher (mpirun -np R, sweep_mpi.h) every rank runs it with the same cfg:
 * rank r costs every R-th tuple still to do, rank 0 alone writes the
 * database and calls cb (the other ranks only read cb->stop), and every rank
 * returns the sweep's outcome. Returns 0,
 * APPROF_EINTR when *cb->stop was raised (what was computed is committed and
 * the sweep is marked interrupted), or a negative error with err set. */
int approf_sweep_run(const ApprofSweepConfig *cfg, const ApprofSweepCallbacks *cb,
                     ApprofSweepSummary *summary, char *err, size_t errlen);

#endif
