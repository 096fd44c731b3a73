/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The placements of a stage program (program_int.h): where each parameter,
 * stage input and stage output lies on the logical mesh, as Alpa
 * ShardingSpec text, and the bytes they hold per device. Used by
 * shard_build_program (program.c).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_text.h"
#include "sharding/context.h"
#include "sharding/program_int.h"

static void layout_axes(ShardLayout L, int ndim, int *axis_of_dim)
{
    for (int d = 0; d < APPROF_MAX_DIMS; d++)
        axis_of_dim[d] = -1;
    for (int d = 0; d < ndim; d++) {
        if (L.d[0] == d && L.d[1] == d)
            axis_of_dim[d] = 2;
        else if (L.d[0] == d)
            axis_of_dim[d] = 0;
        else if (L.d[1] == d)
            axis_of_dim[d] = 1;
    }
}

/* Writes placement i, that of tensor t (room for it reserved), and its
 * spec text's digest to dig[i] (the signature's). */
static void add_placement(const ShardStage *st, ApprofStageProgram *p, ApprofHash128 *dig,
                          size_t i, int t, ApprofRole role, const TInfo *ti)
{
    const ApprofGraph *g = st->g;
    ApprofPlacement *pl = &p->placements[i];
    memset(pl, 0, offsetof(ApprofPlacement, spec));
    pl->tensor = t;
    pl->role = role;
    layout_axes(ti->L, g->tensors[t].ndim, pl->mesh_axis_of_dim);
    pl->local_bytes = (int64_t)llround(ti->local);
    CostdbLayout cl = {g->tensors[t].ndim, {0}, st->mesh.n[0], st->mesh.n[1]};
    _Static_assert(APPROF_MAX_DIMS <= COSTDB_MAX_DIMS, "a tensor's rank fits a stored layout");
    memcpy(cl.mesh_axis_of_dim, pl->mesh_axis_of_dim, sizeof pl->mesh_axis_of_dim);
    size_t len;
    const char *text = shard_spec_text(st->ctx, &cl, pl->spec, sizeof pl->spec, &len, &dig[i]);
    if (text != pl->spec)
        memcpy(pl->spec, text, len + 1);
}

/* The role a touched tensor is placed in (a parameter; a stage input: read,
 * not produced in the stage; a stage output), or -1: none. */
static int place_role(const ApprofTensor *ten, const TInfo *inf)
{
    if (ten->role == APPROF_TENSOR_PARAM)
        return APPROF_ROLE_PARAM;
    if (!inf->in_range)
        return APPROF_ROLE_INPUT;
    return inf->stage_out ? APPROF_ROLE_OUTPUT : -1;
}

/* Placements of the parameters, then the stage inputs, then the stage
 * outputs, each at its first occurrence in op order (room for exactly
 * those first), with their bytes summed into *sum. touched lists each
 * tensor once at its first occurrence in op order (note_tensors: an op's
 * outputs, then its inputs), and a graph's ops come in topological order
 * with leaves (parameters, inputs) never produced (graph_check.c): so a
 * parameter or stage input is first met as an input, a stage output as
 * its producer's output, and one walk of touched, each role written from
 * its own start, gives each role's placements in op order, as the three
 * walks over the ops' input (parameters, stage inputs) and output (stage
 * outputs) slots did (docs/performance.md, "The stage program's build,
 * cheaper"). */
int shard_place_tensors(const ShardStage *st, TInfo *ti, const int *touched, int n_touched,
                        ApprofStageProgram *p, ApprofHash128 **pdig)
{
    const ApprofGraph *g = st->g;
    size_t n_role[3] = {0, 0, 0};
    for (int k = 0; k < n_touched; k++) {
        int r = place_role(&g->tensors[touched[k]], &ti[touched[k]]);
        if (r >= 0)
            n_role[r]++;
    }
    size_t n_place = n_role[0] + n_role[1] + n_role[2];
    p->placements = approf_block_take((n_place ? n_place : 1) * sizeof *p->placements);
    *pdig = malloc((n_place ? n_place : 1) * sizeof **pdig);
    if (!p->placements || !*pdig)
        return APPROF_ENOMEM;
    size_t at[3] = {0, n_role[0], n_role[0] + n_role[1]};
    for (int k = 0; k < n_touched; k++) {
        int t = touched[k];
        int r = place_role(&g->tensors[t], &ti[t]);
        if (r >= 0)
            add_placement(st, p, *pdig, at[r]++, t, (ApprofRole)r, &ti[t]);
    }
    p->n_placements = n_place;
    return 0;
}

void shard_place_sums(const ShardStage *st, const TInfo *ti, const int *touched, int n_touched,
                      ShardPlaceSums *sum)
{
    const ApprofGraph *g = st->g;
    for (int k = 0; k < n_touched; k++) {
        int t = touched[k];
        const ApprofTensor *ten = &g->tensors[t];
        const TInfo *inf = &ti[t];
        int r = place_role(ten, inf);
        if (r == APPROF_ROLE_PARAM) {
            sum->params += inf->local;
            if (inf->bwd_read)
                sum->params_read += inf->local;
            sum->param_elems += inf->local / (double)approf_dtype_size(ten->dtype);
        } else if (r == APPROF_ROLE_INPUT) {
            sum->sin += inf->local;
            if (inf->keep)
                sum->sin_saved += inf->local;
            if (ten->requires_grad)
                sum->sin_grads += inf->local;
        } else if (r == APPROF_ROLE_OUTPUT) {
            sum->sout += inf->local;
            if (inf->keep)
                sum->sout_saved += inf->local;
        }
    }
}
