/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test databases for the report tests, built without the sweep: a cost
 * table imported from CSV (costdb_csv_import), then placements and a plan
 * inserted through the costdb API. "mlp" is the Alpa tutorial MLP (4 dense
 * layers 2048->8192->2048->8192->2048, batch 2048, 4 micro-batches) on 1x4
 * with a data-parallel stage and a tensor-parallel stage; "resnet50" a
 * 2-stage ResNet-50 plan on 1x8 (2 micro-batches). scale multiplies every
 * compute cost (a second "machine"); drop_entry removes the (0, 0) forward
 * entries of submesh (1, 2) and adds a (3, 3) one of a new config, so two
 * databases differ in which entries they hold.
 */
#ifndef REPORTS_FIXTURES_H
#define REPORTS_FIXTURES_H

#include <stdint.h>

#include "costdb.h"

typedef struct FixtureOptions {
    double scale;                     /* 1: the reference machine */
    int drop_entry;
    int with_plan;                    /* store placements and the plan */
    int uniform;                      /* resnet50: both stages on logical (2, 2) */
    int hostile;                      /* mlp: tensor names, a dtype and a shape that try to
                                         break out of HTML, Python and comments
                                         (FIXTURE_HOSTILE_*) */
} FixtureOptions;

/* The hostile fixture's texts: the graph input's name, the name of the
 * tensor that crosses the stage boundary (so it reaches the resharding
 * tasks), a parameter's dtype and a parameter's shape. Each would print
 * PWNED if it escaped from a Python literal or comment. */
#define FIXTURE_HOSTILE_INPUT "x'\nprint('PWNED')\n#<img src=x onerror=alert(1)>\xc3\xa9\xff"
#define FIXTURE_HOSTILE_CROSS "layer1/out\"'\r\n__import__('os').system('echo PWNED')\n#</pre><script>"
#define FIXTURE_HOSTILE_DTYPE "f'\n1/0"
#define FIXTURE_HOSTILE_SHAPE "8192\nprint('PWNED')"

/* Creates the database at path (removed first) for model "mlp" or
 * "resnet50"; sets *plan_id when with_plan. Returns 0 or a costdb error. */
int fixture_build(const char *path, const char *model, const FixtureOptions *opt,
                  int64_t *plan_id);

#endif
