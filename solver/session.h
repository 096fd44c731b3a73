/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One apsolve run as a library call (session.c, a pipeline of steps over
 * session_search.c and session_price.c). The CLI parses options into an
 * ApsolveRequest, runs it, writes the outputs and prints the messages, and
 * after a usage error the pointer to its --help; the library prints
 * nothing, exits nowhere and gives no command-line hints. The request's
 * notice callback receives every notice, warning and error, one message
 * per call, without the "apsolve: " prefix (a message may span lines); a
 * failure also comes back as a typed error (ApsolveError).
 */
#ifndef APSOLVE_SESSION_H
#define APSOLVE_SESSION_H

#include <stdint.h>

#include "apsolve.h"
#include "exit_status.h" /* util/: APPROF_EXIT_*, the apsolve command's exit status */

#ifdef __cplusplus
extern "C" {
#endif

/* Megatron's degrees and knobs (--parallel). */
typedef struct ApsolveParallel {
    int dp, tp, pp;
    int sp;                           /* sequence parallelism: recorded (the ILP picks it) */
    int zero;                         /* 0..3 */
    int recompute;                    /* CostdbRecompute */
    int vpp;                          /* interleaved chunks per device; 0/1: plain 1F1B */
    int mbs;                          /* Megatron's per-replica micro-batch; 0: the sweep's */
    int cp;                           /* context parallelism (0 or 1: none); world dp*tp*pp*cp */
    int cp_comm;                      /* ApsolveCpComm (context_parallel.h) */
    int cp_micro_batches;             /* --plan of a stored cp plan whose micro-batches cp
                                       * does not divide: their count (session_cp.c); 0:
                                       * cp x the twin's */
    int ep;                           /* expert parallelism (0 or 1: none) */
    int etp;                          /* expert tensor parallelism; 0: tp (Megatron's default) */
    int dp_shard;                     /* HSDP: ZeRO-3 shards within groups of dp_shard of the
                                       * dp replicas (0: all of them; docs/hsdp.md) */
    int raf_off;                      /* FSDP2 reshard_after_forward off (raf=0) */
    int recompute_layers;             /* with recompute full: the first K layers of each chunk
                                       * recomputed (Megatron's --recompute-method block);
                                       * APSOLVE_RECOMPUTE_LAYERS_AUTO (-1): the cheapest K
                                       * that fits; 0: every layer (docs/variants.md) */
    int offload;                      /* activation offload: the first N layers of each
                                       * stage (0: none; activation_offload.h) */
    int moe_a2a_overlap;              /* Megatron-Core's overlap_moe_expert_parallel_comm
                                       * (Megatron-Bridge's moe_a2a_overlap): one more
                                       * micro-batch in flight, the ep all-to-alls under the
                                       * other micro-batch's compute (docs/expert-parallel.md) */
} ApsolveParallel;

/* Parses the --parallel text "dp=D,tp=T,pp=P[,sp=0|1][,zero=0..3]
 * [,recompute=none|selective|full|op][,vpp=V][,mbs=M][,cp=C][,cp_comm=p2p|a2a|a2a+p2p]
 * [,ep=E][,etp=T][,dp_shard=S][,raf=0|1][,recompute_layers=K|auto][,offload=N]
 * [,moe_a2a_overlap=0|1]" (any order, each knob
 * at most once; dp, tp, pp required) into *par. 0, or -1 with errbuf
 * naming the knob and what it must be. */
int apsolve_parallel_parse(const char *s, ApsolveParallel *par, char *errbuf, size_t errlen);

typedef void (*ApsolveNotice)(void *ctx, const char *msg);

/* Why a run failed. The code gives the exit status and tells a command
 * line whether to point to its --help: the library never prints such a
 * hint, the CLI does (apsolve_main.c). */
typedef enum {
    APSOLVE_ERROR_NONE = 0,
    APSOLVE_ERROR_FAILED,             /* a runtime failure (database, memory): exit 1 */
    APSOLVE_ERROR_USAGE,              /* options that do not go together, or not with the
                                       * sweep: exit 2, and the CLI points to --help */
    APSOLVE_ERROR_INPUT,              /* a plan list that does not parse, a size, layout or
                                       * plan the database cannot serve: exit 2, no pointer */
    APSOLVE_ERROR_INFEASIBLE,         /* no feasible plan, or the given one is not: exit 3 */
} ApsolveErrorCode;

/* A failed run's typed error: its code and its message (the one the
 * notice callback received, without the prefix; "" when the run failed
 * without one, as on running out of memory). */
typedef struct ApsolveError {
    ApsolveErrorCode code;
    char msg[1024];
} ApsolveError;

/* The exit status (APPROF_EXIT_*) of an error code. */
int apsolve_error_exit(ApsolveErrorCode code);

/* One run's request: what apsolve's options say (docs/solver.md). The
 * strings are borrowed for the run and the session's lifetime. */
typedef struct ApsolveRequest {
    const char *db;                   /* the cost database (required) */
    const char *stage_option;         /* auto | manual | uniform */
    const char *layer_ids, *submeshes, *logicals, *dicts; /* manual plan lists */
    const char *parallel;             /* --parallel text (labels and stored options) */
    const char *framework;            /* --framework: the best plan this framework runs as
                                       * priced (its key, apsolve_framework_key); NULL: none */
    int submesh_hosts, submesh_gpus;  /* uniform plan: the stages' submesh (0: none) */
    int logical_a, logical_b;         /* uniform plan: their logical mesh (0: the ILP's) */
    int64_t sweep;                    /* 0: the latest sweep */
    int no_store, quiet, num_stages, micro_batches;
    int threads;                      /* --threads: the auto search's threads; 0: the
                                       * online CPUs (apsolve_threads_default), 1: serial */
    int64_t batch;                    /* --batch: re-evaluate at this global batch */
    int64_t plan;                     /* --plan: re-evaluate this stored plan */
    int64_t global_batch;             /* --global-batch; 0: the sweep's */
    int64_t micro_batch_size;         /* --micro-batch-size; 0: search every size */
    int objective;                    /* -1: default (full when apply costs are known) */
    int schedule, virtual_stages;     /* --schedule, --virtual-stages */
    int schedule_set;                 /* --schedule given (else --plan restores it) */
    ApsolveParallel par;              /* when parallel != NULL */
    ApsolveOptions opt;               /* memory budget, max stages, inference; the run
                                       * fills in schedule, virtual_stages, objective */
    ApsolveNotice notice;             /* NULL: messages are dropped */
    void *notice_ctx;
    ApsolveError *error;              /* NULL, or where a run (and apsolve_session_finish)
                                       * that fails leaves its typed error */
} ApsolveRequest;

typedef struct ApsolveSession ApsolveSession;

/* Runs req: opens the database (read-only with no_store), picks the sweep
 * and batch, builds, prices and (unless no_store or plan) stores the
 * plans. APPROF_EXIT_OK with *out holding the outputs to write; else the
 * exit status, *out NULL, after a message to req->notice, with the typed
 * error in *req->error. */
int apsolve_session_run(ApsolveRequest *req, ApsolveSession **out);
/* The outputs to write with apsolve_write, *n of them; owned by s. */
const ApsolveOutput *apsolve_session_outputs(const ApsolveSession *s, size_t *n);
/* After the outputs are written: APPROF_EXIT_INFEASIBLE, with its
 * messages (and APSOLVE_ERROR_INFEASIBLE in *req->error), when the --batch
 * re-evaluation or the given plan is not usable as it is; else
 * APPROF_EXIT_OK. */
int apsolve_session_finish(const ApsolveSession *s, const ApsolveRequest *req);
void apsolve_session_free(ApsolveSession **s);

#ifdef __cplusplus
}
#endif

#endif
