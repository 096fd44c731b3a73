/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the session (session.c, session_plans.c): messages and the plans
 * a request gives rather than searches.
 */
#ifndef APSOLVE_SESSION_INT_H
#define APSOLVE_SESSION_INT_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"
#include "session.h"

struct Costdb;

/* One message to the request's notice callback (printf-style, no prefix). */
void apsolve_say(const ApsolveRequest *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A usage error: fmt with arg (one %s), then the pointer to --help;
 * returns APSOLVE_EXIT_USAGE. */
int apsolve_usage_error(const ApsolveRequest *a, const char *fmt, const char *arg);

/* session_warn.c: why the sweep has no config for --parallel stage st (the
 * micro-batch cannot split dp ways, the logical space lacks the mesh, the
 * variant was not profiled) and the sweep option that adds it, into out. */
void apsolve_missing_layout_reason(const ApsolveProblem *p, const CostdbSweep *sw,
                                   const ApsolveStage *st, const ApsolveParallel *par,
                                   int64_t micro, int64_t G, char *out, size_t len);
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

#endif
