/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the session: messages and typed errors, the state one run's steps
 * share (session.c runs them; session_search.c, session_price.c), and the
 * plans a request gives rather than searches (session_plans.c).
 */
#ifndef APSOLVE_SESSION_INT_H
#define APSOLVE_SESSION_INT_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"
#include "costdb.h"
#include "frameworks.h"
#include "session.h"

struct Costdb;

/* One message to the request's notice callback (printf-style, no prefix). */
void apsolve_say(const ApsolveRequest *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A failure: the message to the callback, as apsolve_say, and with code
 * into the request's typed error; returns the exit status of code. No
 * command-line hint: the CLI adds one for APSOLVE_ERROR_USAGE. */
int apsolve_fail(const ApsolveRequest *a, ApsolveErrorCode code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Pipeline-bubble warnings for a plan with few micro-batches per stage. */
void apsolve_warn_batches(const ApsolveRequest *a, const ApsolvePlan *pl, const char *label);
/* session_warn.c: a warning per stage of pl that fits in its device's
 * memory but leaves less free than the headroom (ApsolveStage
 * memory_reserve) the auto search keeps. */
void apsolve_warn_headroom(const ApsolveRequest *a, const ApsolvePlan *pl, const char *label);

/* One sweep at one micro-batch size with its loaded problem. */
typedef struct ApsolveCand {
    int64_t sweep;
    CostdbSweep sw;
    ApsolveProblem *p;
    ApsolveOptions opt;
    int64_t global_batch, micro;
} ApsolveCand;

/* What one written plan carries beyond Alpa's T. */
typedef struct ApsolveExtra {
    ApsolveFullEstimate full, rfull;
    ApsolveStageEstimate *stages;     /* per-stage parts of full */
    ApsolveRebatch reb;
    ApsolvePlan *rplan;               /* the plan at --batch */
    ApsolveProblem *xp;               /* the exact sweep's problem, if used */
    ApsolveFwVerdict fw;              /* which frameworks run the plan as priced */
} ApsolveExtra;

struct ApsolveSession {
    ApsolvePlan *autop, *given;       /* the auto plan, the given (stored, manual, 3-D) one */
    ApsolveOutput outs[2];
    size_t nout;
    ApsolveExtra extra[2];            /* what outs[k] carries beyond Alpa's T */
    char label[96], stored_kind[16];
    int rebatch_bad;                  /* --batch: a plan is not usable as it is */
    int given_whole;                  /* the given plan uses exactly all devices */
};

/* One run in progress: what each step of apsolve_session_run decides, for
 * the steps after it. */
typedef struct ApsolveRun {
    ApsolveRequest *a;
    ApsolveSession *s;                /* what the run hands back */
    struct Costdb *db;
    int64_t sweep;                    /* the main sweep */
    CostdbSweep sw;                   /* its row */
    ApsolveBatchSweep *bs;            /* its family: one sweep per micro-batch size */
    size_t nbs;
    int64_t G, micro;                 /* global batch (0: unknown), micro-batch size */
    int B;                            /* micro-batches per iteration */
    ApsolveCand main_c;               /* the main sweep at B */
    ApsolveCand auto_c, par_c;        /* the auto plan's, the 3-D plan's (when not main_c) */
    ApsolveCand cp_c;                 /* a 3-D plan with cp > 1: its entries as cp stages
                                       * (context_parallel.h), cp x the micro-batches */
    int have_auto_c, have_par_c, have_cp_c; /* auto_c, par_c, cp_c own their problems */
    ApsolveCand ep_c;                 /* a 3-D plan with ep/etp: its entries as ep stages
                                       * (expert_parallel.h) */
    int have_ep_c;
    ApsolveStageSpec *specs;          /* the given plan's stages; NULL: none given */
    int *plan_configs;                /* --plan: each stored stage's config index */
    size_t nspec;
    const char *kind;                 /* the given plan's kind */
    const ApsolveCand *out_c[2];      /* the candidate outs[k] was made on */
} ApsolveRun;

/* session_search.c: loads sweep id as a candidate with B micro-batches of
 * micro samples (global_batch in all); 0, or 1 after a message. */
int apsolve_cand_load(struct Costdb *db, const ApsolveRequest *a, int64_t id,
                      int64_t global_batch, int64_t micro, int B, ApsolveCand *c);
void apsolve_cand_free(ApsolveCand *c);
/* session_search.c: the search's order of two plans of one kind: x beats
 * y (or y is NULL) by a lower objective (total_cost), then a lower T. */
int apsolve_plan_better(const ApsolvePlan *x, const ApsolvePlan *y);
/* session_search.c: the batch a plan was made for, from its candidate. */
void apsolve_plan_batch(ApsolvePlan *pl, const ApsolveCand *c);
/* session_search.c: the auto search step (see there); 0 or an exit status. */
int apsolve_run_auto_search(ApsolveRun *r);
/* session_autocp.c: context parallelism in the auto search (see there):
 * the best cp plan replaces s->autop (and auto_c) when it is better; 0 or
 * 1 after a message. */
int apsolve_run_auto_cp(ApsolveRun *r);
/* session_price.c: the pricing step (see there); 0 or an exit status. */
int apsolve_run_price(ApsolveRun *r);
void apsolve_extra_free(ApsolveExtra *x);

/* session_cp.c: with cp > 1, makes r->cp_c from *pc, the candidate of
 * the equivalent layout (dp cp, tp) whose specs are r->specs: its entries
 * as cp stages, cp x the micro-batches; *pc becomes &r->cp_c. Refuses
 * inference, --batch, a micro-batch that cp does not divide, a plan
 * without attention, a sequence that 2 x cp does not divide. 0 or an exit
 * status after a message. */
int apsolve_run_cp(ApsolveRun *r, ApsolveCand **pc);

/* session_ep.c: with ep > 1 or etp other than tp, makes r->ep_c from *pc
 * (whose specs are r->specs): its entries as ep stages; *pc becomes
 * &r->ep_c (after the cp step: ep on a cp plan's entries). Refuses
 * inference, --batch, ZeRO-2/3, a model without
 * experts or without its recorded routing, ep not dividing the experts, a
 * stage no stored level can price. 0 or an exit status after a message. */
int apsolve_run_ep(ApsolveRun *r, ApsolveCand **pc);
/* session_ep.c: what expert parallelism adds to each stage of plan g as
 * priced (its chosen entries), as messages; nothing without r->ep_c or
 * with --quiet. */
void apsolve_ep_say(ApsolveRun *r, const ApsolvePlan *g);

/* session_warn.c: why the sweep has no config for --parallel stage st (the
 * micro-batch cannot split dp ways, the logical space lacks the mesh, the
 * variant was not profiled) and the sweep option that adds it, into out. */
void apsolve_missing_layout_reason(const ApsolveProblem *p, const CostdbSweep *sw,
                                   const ApsolveStage *st, const ApsolveParallel *par,
                                   int64_t micro, int64_t G, const ApsolveBatchSweep *fam,
                                   size_t nfam, char *out, size_t len);
/* session_warn.c: a warning per stage of a --parallel plan whose priced
 * sharding keeps weight matrices whole over the tp axis (placements read
 * from db, sweep). */
void apsolve_tp_whole_warning(struct Costdb *db, const ApsolveRequest *a, int64_t sweep,
                              const ApsolvePlan *pl);

/* The specs of a manual or uniform plan from the request's lists (layer
 * ids, submesh and logical shapes, option dicts; or num_stages, submesh,
 * logical). 0 with *out malloc'd, else an exit status after a message. */
int apsolve_request_specs(const ApsolveRequest *a, const ApsolveProblem *p,
                          ApsolveStageSpec **out, size_t *n_out);
/* Stores pl as a plan of kind with the options that made it (a JSON
 * object); *id gets its id. 0, or 1 after a message. */
int apsolve_request_store(struct Costdb *db, const ApsolveRequest *a, const ApsolveProblem *p,
                          const ApsolveOptions *o, const ApsolvePlan *pl, const char *kind,
                          int64_t *id);
/* --plan ID: the stored plan's stages as specs (*specs, *n, malloc'd), its
 * inputs as defaults in a (sweep, micro-batches, schedule unless given);
 * *configs gets each stage's config index (the variant is read from the
 * sweep once it is loaded), kind its kind. 0, else an exit status after a
 * message. */
int apsolve_request_load_plan(struct Costdb *db, ApsolveRequest *a, int64_t *sweep,
                              ApsolveStageSpec **specs, int **configs, size_t *n, char *kind,
                              size_t kindlen);
/* The variant of each stored stage from its config index in p. */
void apsolve_specs_variants(const ApsolveProblem *p, ApsolveStageSpec *sp, const int *configs,
                            size_t n);

/* tp_layout.c: a --parallel plan with tp > 1 is priced with the memory
 * levels of each stage's mesh, recompute and ZeRO whose stored placements
 * keep the fewest weight matrices whole on the tp axis, as the framework's
 * tensor parallelism splits them. apsolve_3d_tp_levels fills lv[k] with
 * those levels (lowest first; none where every level ties) and pins
 * sp[k].memory_level to the first. After an evaluation,
 * apsolve_3d_tp_bump moves each stage that does not fit to its next such
 * level and returns how many moved (0: keep the plan). */
#define APSOLVE_TP_MAX_LEVELS 16
typedef struct ApsolveTpLevels {
    int n, next;
    int level[APSOLVE_TP_MAX_LEVELS];
} ApsolveTpLevels;
void apsolve_3d_tp_levels(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                          ApsolveStageSpec *sp, size_t n, ApsolveTpLevels *lv);
/* Weight matrices of the stage (start..end, submesh, config) that its
 * stored placements keep whole on axis 1 of logical mesh (a, b), the rule
 * apreport warns by (costdb_weight_whole_on_axis1); *weights counts its
 * weight matrices. -1 when the placements cannot be read. */
int apsolve_whole_weights(struct Costdb *db, int64_t sweep, int start, int end, int submesh,
                          int config, int a, int b, size_t *weights);
size_t apsolve_3d_tp_bump(const ApsolvePlan *pl, ApsolveStageSpec *sp, ApsolveTpLevels *lv,
                          size_t n);

#endif
