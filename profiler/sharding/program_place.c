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

/* Appends the placement of tensor t (room for it reserved), and its spec
 * text's digest to dig (the signature's). */
static void add_placement(const ShardStage *st, ApprofStageProgram *p, ApprofHash128 *dig, int t,
                          ApprofRole role, const TInfo *ti)
{
    const ApprofGraph *g = st->g;
    ApprofPlacement *pl = &p->placements[p->n_placements];
    memset(pl, 0, offsetof(ApprofPlacement, spec));
    pl->tensor = t;
    pl->role = role;
    layout_axes(ti->L, g->tensors[t].ndim, pl->mesh_axis_of_dim);
    pl->local_bytes = (int64_t)llround(ti->local);
    CostdbLayout cl = {g->tensors[t].ndim, {0}, st->mesh.n[0], st->mesh.n[1]};
    _Static_assert(APPROF_MAX_DIMS <= COSTDB_MAX_DIMS, "a tensor's rank fits a stored layout");
    memcpy(cl.mesh_axis_of_dim, pl->mesh_axis_of_dim, sizeof pl->mesh_axis_of_dim);
    size_t len;
    const char *text = shard_spec_text(st->ctx, &cl, pl->spec, sizeof pl->spec, &len,
                                       &dig[p->n_placements]);
    if (text != pl->spec)
        memcpy(pl->spec, text, len + 1);
    p->n_placements++;
}

/* Placements of the parameters, then the stage inputs, then the stage
 * outputs, each at its first occurrence in op order (room for exactly
 * those first), with their bytes summed into *sum. */
int shard_place_tensors(const ShardStage *st, TInfo *ti, const int *touched, int n_touched,
                        ApprofStageProgram *p, ApprofHash128 **pdig, ShardPlaceSums *sum)
{
    const ApprofGraph *g = st->g;
    size_t n_place = 0;
    for (int k = 0; k < n_touched; k++) {
        int t = touched[k];
        n_place += g->tensors[t].role == APPROF_TENSOR_PARAM || !ti[t].in_range ||
                   ti[t].stage_out;
    }
    p->placements = malloc((n_place ? n_place : 1) * sizeof *p->placements);
    *pdig = malloc((n_place ? n_place : 1) * sizeof **pdig);
    if (!p->placements || !*pdig)
        return APPROF_ENOMEM;
    for (int role = 0; role < 3; role++)
        for (int o = st->op_begin; o < st->op_end; o++) {
            const ApprofOp *op = &g->ops[o];
            int n = role == 2 ? op->n_outputs : op->n_inputs;
            for (int i = 0; i < n; i++) {
                int t = role == 2 ? op->outputs[i] : op->inputs[i];
                const ApprofTensor *ten = &g->tensors[t];
                TInfo *inf = &ti[t];
                int is_param = ten->role == APPROF_TENSOR_PARAM;
                int want = role == 0 ? is_param
                         : role == 1 ? !is_param && !inf->in_range
                                     : inf->stage_out;
                /* the first occurrence only: set == 2 marks a placed tensor */
                if (!want || inf->set != 1)
                    continue;
                inf->set = 2;
                ApprofRole r = role == 0 ? APPROF_ROLE_PARAM
                             : role == 1 ? APPROF_ROLE_INPUT
                                         : APPROF_ROLE_OUTPUT;
                add_placement(st, p, *pdig, t, r, inf);
                if (role == 0) {
                    sum->params += inf->local;
                    if (inf->bwd_read)
                        sum->params_read += inf->local;
                    sum->param_elems += inf->local / (double)approf_dtype_size(ten->dtype);
                } else if (role == 1) {
                    sum->sin += inf->local;
                    if (inf->keep)
                        sum->sin_saved += inf->local;
                    if (ten->requires_grad)
                        sum->sin_grads += inf->local;
                } else {
                    sum->sout += inf->local;
                    if (inf->keep)
                        sum->sout_saved += inf->local;
                }
            }
        }
    return 0;
}
