/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "The same setup" of two sweeps (costdb_setup_diff): the one comparison
 * behind approf sweep --resume (profiler/sweep/sweep_db.c), approf merge
 * (profiler/sweep/merge.c) and apsolve's micro-batch family
 * (solver/rebatch.c). Each use passes the fields it ignores; the fields and
 * their order are the enum in costdb.h, their names here.
 */
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"

static const char *const field_names[] = {
    "cluster",
    "global batch",
    "micro-batches",
    "layers",
    "submesh space",
    "logical space",
    "profile mode",
    "dtype",
    "backend",
    "options (sharding solver, imbalance tolerance)",
    "shard",
    "hardware (fingerprint)",
    "model (graph or layer split)",
};
#define N_FIELDS (sizeof field_names / sizeof field_names[0])

const char *costdb_setup_field_name(unsigned field)
{
    for (size_t i = 0; i < N_FIELDS; i++)
        if (field == 1u << i)
            return field_names[i];
    return "";
}

/* The first sweep-row field outside ignore in which a and b differ, or 0. */
static unsigned sweep_diff(const CostdbSweep *a, const CostdbSweep *b, unsigned ignore)
{
#define DIFF(field, differs) \
    if (!(ignore & (field)) && (differs)) return (field)
    DIFF(COSTDB_SETUP_CLUSTER,
         a->cluster_hosts != b->cluster_hosts || a->cluster_gpus != b->cluster_gpus);
    DIFF(COSTDB_SETUP_GLOBAL_BATCH, a->global_batch != b->global_batch);
    DIFF(COSTDB_SETUP_MICRO_BATCHES,
         a->micro_batches != b->micro_batches || a->micro_batch_size != b->micro_batch_size);
    DIFF(COSTDB_SETUP_LAYERS,
         a->num_layers != b->num_layers || strcmp(a->layer_option, b->layer_option));
    DIFF(COSTDB_SETUP_SUBMESH_SPACE, strcmp(a->submesh_space, b->submesh_space));
    DIFF(COSTDB_SETUP_LOGICAL_SPACE, strcmp(a->logical_space, b->logical_space));
    DIFF(COSTDB_SETUP_PROFILE_MODE, strcmp(a->profile_mode, b->profile_mode));
    DIFF(COSTDB_SETUP_DTYPE, strcmp(a->dtype, b->dtype));
    DIFF(COSTDB_SETUP_BACKEND, strcmp(a->backend, b->backend));
    DIFF(COSTDB_SETUP_OPTIONS, strcmp(a->options, b->options));
    DIFF(COSTDB_SETUP_SHARD, strcmp(a->shard, b->shard));
#undef DIFF
    return 0;
}

/* The model row of id (0: none, an empty row). */
static int model_row(Costdb *db, int64_t id, CostdbModel *m)
{
    memset(m, 0, sizeof *m);
    return id ? costdb_model_get(db, id, m) : 0;
}

/* Whether two models are the same apart from the batch their graphs are
 * built for: name, options and layer boundaries. */
static int same_model_but_batch(Costdb *da, const CostdbModel *a, Costdb *dbb,
                                const CostdbModel *b, int *same)
{
    CostdbLayer *la = NULL, *lb = NULL;
    size_t na = 0, nb = 0;
    int rc = 0;
    *same = !strcmp(a->name, b->name) && !strcmp(a->options, b->options);
    if (!*same || (!a->id && !b->id))
        return 0;
    if ((a->id && (rc = costdb_model_layers(da, a->id, &la, &na)) < 0) ||
        (b->id && (rc = costdb_model_layers(dbb, b->id, &lb, &nb)) < 0))
        goto cleanup;
    *same = na == nb;
    for (size_t k = 0; k < na && *same; k++)
        *same = la[k].op_begin == lb[k].op_begin && la[k].op_end == lb[k].op_end;
cleanup:
    free(la);
    free(lb);
    return rc;
}

static int model_diff(Costdb *da, const CostdbSweep *a, Costdb *dbb, const CostdbSweep *b,
                      unsigned ignore, int *same)
{
    CostdbModel ma, mb;
    int rc;
    *same = 1;
    if (da == dbb && a->model_id == b->model_id)
        return 0;
    if ((rc = model_row(da, a->model_id, &ma)) < 0 || (rc = model_row(dbb, b->model_id, &mb)) < 0)
        return rc;
    if ((ignore & COSTDB_SETUP_BATCH) == COSTDB_SETUP_BATCH)
        return same_model_but_batch(da, &ma, dbb, &mb, same);
    *same = !strcmp(ma.signature, mb.signature);
    return 0;
}

static int hardware_diff(Costdb *da, const CostdbSweep *a, Costdb *dbb, const CostdbSweep *b,
                         int *same)
{
    CostdbHardware ha, hb;
    int rc;
    *same = 1;
    if (da == dbb && a->hardware_id == b->hardware_id)
        return 0;
    memset(&ha, 0, sizeof ha);
    memset(&hb, 0, sizeof hb);
    if ((a->hardware_id && (rc = costdb_hardware_get(da, a->hardware_id, &ha)) < 0) ||
        (b->hardware_id && (rc = costdb_hardware_get(dbb, b->hardware_id, &hb)) < 0))
        return rc;
    *same = !strcmp(ha.fingerprint, hb.fingerprint);
    return 0;
}

int costdb_setup_diff(Costdb *da, const CostdbSweep *a, Costdb *dbb, const CostdbSweep *b,
                      unsigned ignore, unsigned *differ)
{
    int rc, same = 1;
    if (!da || !a || !dbb || !b || !differ)
        return COSTDB_EINVAL;
    if ((*differ = sweep_diff(a, b, ignore)) != 0)
        return 0;
    if (!(ignore & COSTDB_SETUP_HARDWARE)) {
        if ((rc = hardware_diff(da, a, dbb, b, &same)) < 0)
            return rc;
        if (!same) {
            *differ = COSTDB_SETUP_HARDWARE;
            return 0;
        }
    }
    if (!(ignore & COSTDB_SETUP_MODEL)) {
        if ((rc = model_diff(da, a, dbb, b, ignore, &same)) < 0)
            return rc;
        if (!same)
            *differ = COSTDB_SETUP_MODEL;
    }
    return 0;
}
