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
    int borrowed;                     /* p is main_c's: apsolve_cand_free leaves it */
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
    ApsolveFwSearch fws;              /* --framework: the search that chose the given plan */
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
    ApsolveCand hsdp_c;               /* a 3-D ZeRO-3 plan with dp_shard or raf=0: its
                                       * entries as HSDP stages (hsdp.h) */
    int have_hsdp_c;
    ApsolveCand rl_c;                 /* a 3-D recompute=full plan with recompute_layers: its
                                       * full entries as composed stages (recompute_layers.h) */
    int have_rl_c, rl_k;              /* rl_c owns its problem; the K priced (0: none) */
    const ApsolveCand *rl_src;        /* the candidate rl_c was composed from */
    ApsolveCand offload_c;            /* a 3-D plan with offload=N: its stages' entries with
                                       * N layers' activations on the host
                                       * (activation_offload.h) */
    int have_offload_c;
    const ApsolveProblem *offload_src; /* the entries offload_c was made from */
    ApsolveStageSpec *specs;          /* the given plan's stages; NULL: none given */
    int *plan_configs;                /* --plan: each stored stage's config index */
    size_t nspec;
    const char *kind;                 /* the given plan's kind */
    const ApsolveCand *out_c[2];      /* the candidate outs[k] was made on */
    int fw;                           /* --framework: APSOLVE_FW_*; -1: none */
    const char *req_parallel;         /* the request's --parallel before the framework search
                                       * pointed it at its winner (restored at the end) */
    /* the partial-recomputation step's winning K composed in main_c's
     * problem itself, which auto_c borrows (session_autorl.c): its stored
     * entries, put back before the cp step and composed again after it */
    struct ApsolveRecomputeSaved *rl_saved;
    int rl_auto_k, rl_auto_chunks;
    int step_cut;                     /* the cp and ep steps' pruning solves may cut
                                       * (apsolve_solve_to_beat; session_autocp.c) */
    int cut_inexact;                  /* pruned candidates whose bound they did not price */
} ApsolveRun;

/* session_search.c: loads sweep id as a candidate with B micro-batches of
 * micro samples (global_batch in all); 0, or 1 after a message. */
int apsolve_cand_load(struct Costdb *db, const ApsolveRequest *a, int64_t id,
                      int64_t global_batch, int64_t micro, int B, ApsolveCand *c);
void apsolve_cand_free(ApsolveCand *c);
/* session_search.c: the search's order of two plans of one kind: x beats
 * y (or y is NULL) by a lower objective (total_cost), then a lower T. */
int apsolve_plan_better(const ApsolvePlan *x, const ApsolvePlan *y);
/* search_bar.c: the bar of the plain search's 1F1B solve (options o)
 * against the chunked schedules' best full estimate C: a 1F1B plan whose
 * total_cost is above it has T above C, so its full estimate is above C
 * (with straddle_free and every cheap entry's apply_cost known, the bar
 * is C: the full estimate is at least the total_cost). */
double apsolve_plain_bar(const ApsolveProblem *p, const ApsolveOptions *o, double C,
                         int straddle_free);
/* search_bar.c: the bar of a chunked schedule's search (options o: the
 * schedule and its v) against the plan to beat's full estimate best, over
 * the stage counts ns[0 .. count) it searches: a plan of one of them whose
 * total_cost is above the bar, or that is not feasible, has a full
 * estimate at or above best (try_chunks keeps none such). */
double apsolve_chunk_bar(const ApsolveProblem *p, const ApsolveOptions *o, double best,
                         const int *ns, int count, int straddle_free);
/* session_search.c: the batch a plan was made for, from its candidate. */
void apsolve_plan_batch(ApsolvePlan *pl, const ApsolveCand *c);
/* session_search.c: the auto search step (see there); 0 or an exit status. */
int apsolve_run_auto_search(ApsolveRun *r);
/* The threads r's auto search runs its independent searches on (--threads,
 * search_pool.h). */
int apsolve_run_threads(const ApsolveRun *r);
/* session_search.c: whether the auto search tries the family's size k
 * (r->bs[k]; k = 0 the main sweep alone when the family is empty): 1 with
 * *m its micro-batch size and *own whether it is the main candidate's
 * sweep, else 0. The --framework search tries the same sizes. */
int apsolve_size_searched(const ApsolveRun *r, size_t k, int64_t *m, int *own);
/* session_search.c: whether the zero-bubble schedules can be priced on
 * candidate c (training, 2 or more micro-batches and devices, every
 * entry's weight-gradient seconds): the auto search and the --framework
 * search try them only then. */
int apsolve_zero_bubble_known(const ApsolveCand *c);
/* session_search.c: the full estimate of pl on sweep (transfers, gradient
 * sync, optimizer), or its objective where the sweep has no placements to
 * estimate from: what the auto search and the --framework search compare. */
double apsolve_full_price(struct Costdb *db, int64_t sweep, const ApsolvePlan *pl);
/* session_search.c: the same with the cross-stage activations scaled
 * (a cp plan's stages send 1/cp of its entries', context_parallel.h), as
 * the pricing step estimates a --parallel cp plan (session_price.c). */
double apsolve_full_price_scaled(struct Costdb *db, int64_t sweep, const ApsolvePlan *pl,
                                 double activation_scale);
/* session_framework.c: --framework F with the options it cannot go with
 * refused (exit 2); *fw gets APSOLVE_FW_* (-1 without --framework). */
int apsolve_framework_request(const ApsolveRequest *a, int *fw);
/* session_framework.c: the --framework search step (see there): the best
 * uniform layout F runs as priced becomes the request's --parallel layout
 * (a->parallel, a->par), which the given-plan step then prices, prints and
 * stores as --parallel would; 0 or an exit status after a message (exit 3
 * when no layout F runs fits, naming the closest reasons). */
int apsolve_run_framework(ApsolveRun *r);
/* session_fw_layout.c: the --parallel knobs that go on a 3-D plan's specs
 * and options (after the cp and ep steps): vpp > 1 the interleaved
 * schedule with vpp chunks, every stage the given recompute and ZeRO
 * stage. The --parallel plan and the --framework search price with it. */
void apsolve_parallel_apply(const ApsolveParallel *par, ApsolveOptions *opt,
                            ApsolveStageSpec *specs, size_t n);
/* session.c: the index in r->bs of the family's sweep at micro-batch size
 * want; r->nbs if none. */
size_t apsolve_family_index(const ApsolveRun *r, int64_t want);
/* session_given.c: the given-plan step (--parallel, manual, uniform,
 * --plan), its plan priced and made the first output; 0 or an exit
 * status after a message. */
int apsolve_given_plan(ApsolveRun *r);
/* session_given.c: the --parallel steps that transform candidate *pc for the
 * knobs of r->a->par on r->specs (cp, ep, HSDP, recompute_layers:
 * apsolve_run_cp, apsolve_run_ep, apsolve_run_hsdp,
 * apsolve_run_recompute_layers, in that order); *pc becomes the last
 * transformed candidate. 0 or an exit status after a message. */
int apsolve_parallel_knobs(ApsolveRun *r, ApsolveCand **pc);
/* session.c: frees what a --parallel pricing made (r->specs, the given
 * plan, the transformed candidates), for the next try. */
void apsolve_parallel_undo(ApsolveRun *r);
/* session_autocp.c: context and expert parallelism in the auto search
 * (see there): the best cp, ep or cp + ep plan replaces s->autop (and
 * auto_c) when it is better; 0 or 1 after a message. */
int apsolve_run_auto_cp(ApsolveRun *r);

/* One candidate the auto search's cp and ep steps tried, for its lines. */
typedef struct ApsolveAutoTried {
    int cp, ep, etp;                  /* 1, 0, 0: not used */
    int64_t m, sweep;                 /* the micro-batch size, its sweep */
    int B, headroom, feasible;        /* feasible -1: pruned by the bound, -2: an ep plan
                                       * no better than its candidate's without ep */
    double total;                     /* the plan's objective, or the pruning bound's */
    int comm;                         /* the cp communication (ApsolveCpComm); 0: the ring */
    int a2a_overlap;                  /* ep with the MoE all-to-all overlap (session_autoep.c) */
} ApsolveAutoTried;

/* The best cp or ep plan so far (session_autocp.c, session_autoep.c). */
typedef struct ApsolveAutoBest {
    ApsolvePlan *best;                /* NULL: none yet */
    int best_h;                       /* it keeps the memory headroom */
    ApsolveCand bestc;                /* its candidate, owning its problem */
    ApsolveAutoTried tried[128];
    size_t nt;
} ApsolveAutoBest;

/* session_autocp.c: whether plan x (keeping the headroom: xh) beats y by
 * the search's rule (the headroom kept first, then the objective); any
 * plan beats NULL. */
int apsolve_auto_better(const ApsolvePlan *x, int xh, const ApsolvePlan *y, int yh);

/* session_autostep.c: a search step that solves the auto plan's problem
 * composed per K or N (session_autorl.c, session_autooffload.c) keeps
 * here the plan it would beat (plain, headroom plain_h; NULL when none
 * fits) and its best so far. */
typedef struct ApsolveAutoStep {
    const ApsolvePlan *plain;
    int plain_h;
    ApsolvePlan *best;        /* owned; NULL: none beats plain */
    ApsolveProblem *bestq;    /* owned: the problem best was solved on */
    ApsolveOptions besto;     /* the options best was solved with */
    int best_n, best_h;       /* the K or N of best, its headroom kept */
    int priced;               /* tries that gave a feasible plan */
} ApsolveAutoStep;
/* A solve's result (e, *pl, under o) offered to st: a feasible plan that
 * beats the best so far (else plain) by apsolve_auto_better becomes st's
 * best (*pl then NULL) with n and no problem yet (bestq NULL); else *pl is
 * freed. 1 taken, 0 not, or the solver's error e. */
int apsolve_auto_step_offer(ApsolveAutoStep *st, int e, ApsolvePlan **pl,
                            const ApsolveOptions *o, int n);
/* Makes st's best the auto plan, its candidate base's with st's problem
 * and options; st no longer owns them. */
void apsolve_auto_step_install(ApsolveRun *r, ApsolveAutoStep *st, const ApsolveCand *base);
void apsolve_auto_step_free(ApsolveAutoStep *st);
/* apsolve_solve_keep_headroom of a try that only matters if it beats bar
 * (headroom bar_h) by apsolve_auto_better: when bar keeps the headroom (or
 * none is asked for), a plan beats it only keeping the headroom with a
 * lower objective, so the search leaves out what is bounded at or above
 * bar's (apsolve_solve_below), and without the headroom only the first DPs
 * run (its feasibility); a plan at or below bar, or not feasible, is
 * solved again whole, except with decide a feasible one below bar, which
 * the whole search's then beats bar too. So the error, the feasibility,
 * the headroom kept and whether the plan beats bar are
 * apsolve_solve_keep_headroom's, and so is the plan when *exact is set;
 * when not, only that. */
int apsolve_solve_to_beat(const ApsolveProblem *p, ApsolveOptions *opt, const ApsolvePlan *bar,
                          int bar_h, int decide, ApsolvePlan **out, int *exact);
/* session_autocp.c: the best plan of one layout (submesh and logical mesh
 * with the batch on axis 0, equal stages) on candidate c's problem, whose
 * every entry is already that of the layout it prices (+inf where none);
 * layouts with cp not dividing logical_a are skipped. Pruned (*headroom
 * -1, *bound its objective) when the plan of any layouts does not beat
 * bar. *pl the plan or NULL. what names the step in a failure. 0, or 1
 * after a message. */
int apsolve_auto_layouts(ApsolveRun *r, ApsolveCand *c, int cp, const char *what,
                         const ApsolvePlan *bar, int bar_h, ApsolvePlan **pl, int *headroom,
                         double *bound);
/* session_autocp.c: records a tried candidate, and takes pl (with its
 * candidate c, whose problem it then owns) as b's best when it beats it;
 * else frees both. */
void apsolve_auto_offer(ApsolveAutoBest *b, const ApsolveAutoTried *t, ApsolvePlan *pl, int h,
                        ApsolveCand *c);

struct ApsolveEpCache;
/* session_autoep.c: expert parallelism in the auto search on candidate c
 * (the sweep at micro-batch size m: plain, cp 1, or a cp candidate whose
 * entries are cp stages): for each ep dividing the experts and etp, the
 * best plan of one layout with every entry made the ep stage of its own
 * layout (apsolve_ep_problem_auto), offered to b (bar: the plan to beat
 * when b has none) when it beats twin, the candidate's plan without ep
 * (NULL: none; a tie keeps the plan without ep). cache: the facts of c's
 * sweep (apsolve_ep_cache_new). Nothing for a model without recorded
 * routing. 0,
 * or 1 after a message. */
int apsolve_auto_ep(ApsolveRun *r, const ApsolveCand *c, int cp, struct ApsolveEpCache *cache,
                    const ApsolvePlan *bar, int bar_h, const ApsolvePlan *twin, int twin_h,
                    ApsolveAutoBest *b);
/* session_ep.c: the routing a model's options record (top_k experts per
 * token, capacity slots per expert and sample); 0 both when none. */
void apsolve_ep_routing(struct Costdb *db, int64_t model_id, int *top_k, int64_t *capacity);
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
/* session_cp.c: the one rule of how many micro-batches a cp plan runs,
 * from its twin's global batch, micro-batch m (mbs x dp x cp) and B, and
 * a stored plan's count (stored > 0, else 0): *count = stored, or
 * G / (m / cp) where m does not divide G (BATCH), else cp x B (TWIN);
 * NOT_WHOLE (*count 0) where cp does not divide m or G is not whole
 * micro-batches of m / cp. The caller bounds *count
 * (COSTDB_MAX_MICRO_BATCHES). */
typedef enum ApsolveCpCount {
    APSOLVE_CP_COUNT_TWIN,
    APSOLVE_CP_COUNT_BATCH,
    APSOLVE_CP_COUNT_STORED,
    APSOLVE_CP_COUNT_NOT_WHOLE
} ApsolveCpCount;
ApsolveCpCount apsolve_cp_micro_batches(int64_t global_batch, int64_t micro, int batches, int cp,
                                        int stored, int64_t *count);

/* session_twin.c: the twin a cp or ep plan is priced from, eq's entries of
 * logical (la, lb) with the batch forced on axis 0 on each of r->specs'
 * stages. 0 when each stage has one with a time (or none of that mesh:
 * the plan's own refusals say so); else the exit status after a refusal
 * naming the stage and why it has no time: stored out of memory or
 * failed, or no entry (approf sweep --skip-unfit, an unfinished sweep).
 * what: the layout as in the plan's messages; knob: "cp=2", "ep=4". */
int apsolve_twin_check(ApsolveRun *r, const ApsolveCand *eq, int la, int lb, const char *what,
                       const char *knob);
/* session_twin.c: the auto search's cp and ep steps price a stage from
 * its twin out of memory as --parallel does (apsolve_unfit_restore): *out
 * a clone of p with every entry the sweep judged out of memory, and whose
 * time it kept, restored (cost, phases, apply, memory, the stage count
 * that memory allows), for the cp or ep transformation to make stages of;
 * NULL when p has none (use p). Never solved as it is: after the
 * transformation apsolve_unfit_settle puts +inf back on each restored
 * entry no step changed, so the candidate holds such an entry only as a
 * cp or ep stage, which fits or not on its transformed memory (the same
 * rule as every entry). APSOLVE_OK or APSOLVE_ENOMEM. */
int apsolve_unfit_open(const ApsolveProblem *p, ApsolveProblem **out);
void apsolve_unfit_settle(ApsolveProblem *q);
/* session_twin.c: whether every entry of p with a time has its apply cost
 * (apsolve_problem_apply_known), those out of memory that kept their time
 * included: a sweep whose every entry is out of memory is not taken for
 * one without apply costs (the objective; session.c). On two halves of
 * the table side by side with threads >= 2 (a large table): the same
 * answer. */
int apsolve_unfit_apply_known(const ApsolveProblem *p, int threads);

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

/* session_hsdp.c: with dp_shard or raf=0, makes r->hsdp_c from *pc
 * (whose specs are r->specs): its ZeRO-3 entries as HSDP stages; *pc
 * becomes &r->hsdp_c. Refuses inference, --batch, a sweep that prices
 * ZeRO-3 with an overlapping schedule. 0 or an exit status after a
 * message. */
int apsolve_run_hsdp(ApsolveRun *r, ApsolveCand **pc);
/* session_hsdp.c: what HSDP changes in each stage of plan g as priced,
 * as messages; nothing without r->hsdp_c or with --quiet. */
void apsolve_hsdp_say(ApsolveRun *r, const ApsolvePlan *g);

/* session_fw_partial.c: apsolve --framework megatron's search beside
 * layout par on candidate c (its recompute, zero, vpp set; c's entries
 * those of its cp and ep knobs): recompute_layers=K for each K of 1 ..
 * the chunk's layers - 1 when par recomputes full and the sweep holds
 * none too (has_none), and offload=N for each N of 1 .. the layers - 1
 * when par is pp=1, recompute=none, one chunk, under its plain schedule
 * (plain_schedule) and the sweep's hardware has a host link; each priced
 * by try_fn(ctx, candidate, par) with par's knob set and the candidate's
 * problem *scratch (a clone of c's, made on first use, rewritten for each
 * K or N; the caller frees it once done with c). par's knobs are 0 again
 * on return. 0, or 1 (out of memory, or try_fn's 1). */
typedef int (*ApsolveFwTry)(void *ctx, const ApsolveCand *c, ApsolveParallel *par);
int apsolve_fw_partial(const ApsolveRun *r, const ApsolveCand *c, ApsolveParallel *par,
                       int plain_schedule, int has_none, ApsolveProblem **scratch,
                       ApsolveFwTry try_fn, void *ctx);
/* session_rlayers.c: with recompute_layers, makes r->rl_c from *pc (whose
 * specs are r->specs): the full entries of each stage's range composed of
 * the first K layers of each chunk under full and the rest under none,
 * K given or, for auto, the cheapest that fits; *pc becomes &r->rl_c.
 * Refuses inference, --batch, chunks that do not split a stage. 0 or an
 * exit status after a message. */
int apsolve_run_recompute_layers(ApsolveRun *r, ApsolveCand **pc);
/* session_rlayers.c: sets plan g's recompute_layers to the K priced and
 * says what each stage recomputes, as messages (none with --quiet). */
void apsolve_recompute_layers_say(ApsolveRun *r, ApsolvePlan *g);
/* session_rlayers.c: what each `full` stage of g recomputes with k layers
 * of each of its chunks, q the problem it was priced on and src the
 * entries q was composed from, as messages (none with --quiet). */
void apsolve_recompute_layers_stages_say(const ApsolveRequest *a, const ApsolvePlan *g,
                                         const ApsolveProblem *q, const ApsolveProblem *src,
                                         int k, int chunks);
/* session_autorl.c: partial recomputation in the auto search (see there):
 * the best plan with the first K layers of each chunk of its `full`
 * stages recomputed, for the K that pays, replaces s->autop (and auto_c)
 * when it is better by the search's rule. 0, or 1 after a message. */
int apsolve_run_auto_recompute_layers(ApsolveRun *r);
/* session_autorl.c: around the cp step, main_c's problem holds its stored
 * entries where the cp step reads them and, after, the winning K again
 * where that plan is still the auto plan (auto_c borrows main_c's
 * problem). The step puts them back itself: it calls _stored before it reads more of main_c's problem than which
 * single-layer entries have a time (those compose_all never writes), and
 * where it never does, _again keeps the K's entries in place instead of
 * composing them again (docs/performance.md, "apsolve: the cp step's
 * restore and the stored entries put back only when read"). 0 (nothing
 * fails). */
void apsolve_auto_recompute_layers_stored(ApsolveRun *r);
int apsolve_auto_recompute_layers_again(ApsolveRun *r);
/* session_plans.c: what the --parallel knobs' steps priced in plan g
 * (ep, HSDP, recompute_layers, offload), as messages (none with --quiet). */
void apsolve_knobs_say(ApsolveRun *r, ApsolvePlan *g);
/* session_offload.c: with offload=N, makes r->offload_c from *pc (whose
 * specs are r->specs): N layers of each stage offloaded; *pc becomes
 * &r->offload_c. Refuses what Megatron-Core's TransformerConfig refuses
 * (pp > 1, recomputation), inference and --batch. 0 or an exit status
 * after a message. */
int apsolve_run_offload(ApsolveRun *r, ApsolveCand **pc);
/* session_offload.c: what offload changes in each stage of plan g as
 * priced, as messages, and its figures into g (output.c writes them);
 * nothing without r->offload_c. */
void apsolve_offload_say(ApsolveRun *r, ApsolvePlan *g);
/* session_offload.c: the same for plan g priced with the first n layers
 * of each stage offloaded on entries composed from src (sweep sw's):
 * sets g's offload and its figures, says each stage's (none with
 * --quiet). */
void apsolve_offload_stages_say(const ApsolveRequest *a, struct Costdb *db,
                                const CostdbSweep *sw, const ApsolveProblem *src, int n,
                                ApsolvePlan *g);
/* session_autooffload.c: activation offload in the auto search (see
 * there): the best one-stage plan with the first N layers' saved
 * activations in host memory, for the N that pays, replaces s->autop (and
 * auto_c) when it is better by the search's rule. 0, or 1 after a
 * message. */
int apsolve_run_auto_offload(ApsolveRun *r);

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
 * apsolve_3d_tp_bump moves each stage that does not fit (within the
 * headroom when opt keeps it) to its next such level and returns how many moved (0: keep the plan). */
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
/* The same count over placements already read. */
struct CostdbPlacement;
int apsolve_placements_whole(const struct CostdbPlacement *ps, size_t n, int a, int b,
                             size_t *weights);
size_t apsolve_3d_tp_bump(const ApsolvePlan *pl, const ApsolveOptions *opt, ApsolveStageSpec *sp,
                          ApsolveTpLevels *lv, size_t n);

#endif
