/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the schedule simulation (schedule.c, schedule_zb.c): what
 * every simulation ends with, and the zero-bubble simulations. Not
 * installed.
 */
#ifndef APREPORT_SCHEDULE_INT_H
#define APREPORT_SCHEDULE_INT_H

#include "apreport.h"
#include "schedule.h"

/* Seconds the send from virtual stage j to j + 1 (or its gradient back)
 * takes under kind with v chunks per device: 0 on one device (the V's
 * bottom), the boundary's transfer between neighbours, else wrap (the hop
 * from the last device to the first). */
double rep_sched_link(const ApreportPipeline *p, ApsolveSchedule kind, int v, double wrap, int j);
/* The model chunk of its device virtual stage j of S devices is under
 * kind: j / S, or for ZBV 0 down the V and 1 back up. */
int rep_sched_chunk(ApsolveSchedule kind, int S, int j);
/* The schedule's activation and gradient sends between consecutive of V
 * virtual stages (none within a device), each after the forward (fend) or
 * backward (bend) that produces it (micro-batch m of virtual stage j at
 * j x B + m), and the bubble fraction of the busy times: what every
 * simulation ends with. */
void rep_finish_simulation(ApreportSchedule *sc, const ApreportPipeline *p, ApsolveSchedule kind,
                           int v, int V, double wrap, const double *fend, const double *bend);
/* A schedule of kind over S stages, B micro-batches and v chunks a device,
 * its per-stage arrays zeroed and room for n_events events; NULL when out
 * of memory. What every simulation starts with. */
ApreportSchedule *rep_schedule_new(ApreportScheduleKind kind, int S, int B, int v, size_t n_events);
/* Appends stage s's pass (an event of kind ev_kind for micro-batch mb of
 * its chunk, from start to end), adds it to the stage's busy time and the
 * iteration's end, and moves *inflight, the micro-batches whose saved
 * inputs stage s holds, by delta, keeping the stage's peak. */
void rep_add_pass(ApreportSchedule *sc, int s, ApreportEventKind ev_kind, int mb, int chunk,
                  double start, double end, int delta, int *inflight);
/* ZB-H1, interleaved ZB and ZBV (apreport_simulate's contract). */
int rep_simulate_zb(const ApreportPipeline *p, ApreportScheduleKind kind, ApreportSchedule **out);

#endif
