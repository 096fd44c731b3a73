/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiling one tuple (i..j, submesh, config): the stage's sharding and
 * program, its costing by the backend, its two entries and its placements
 * (sweep_int.h). What a sweep reuses across tuples lives here too: the
 * reuse table (stage-program signature -> measurement) and the program
 * templates (program key -> entries and placements, tensors as ordinals of
 * the stage's tensor order; docs/architecture.md, "No rework per tuple").
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "collective.h"
#include "costdb.h"
#include "grow.h"
#include "backend.h"
#include "hardware.h"
#include "hash.h"
#include "sharding/sharding.h"
#include "sweep.h"
#include "sweep_int.h"
#include "table_alloc.h"

/* Copies text into a field of len bytes, truncating, as snprintf's "%s"
 * does (placements hold thousands of rows per sweep, and every entry an
 * error field: no printf machinery per field); the length copied. */
static size_t copy_text(char *dst, size_t len, const char *src)
{
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
    return n;
}

/* A struct of size n whose fixed error buffer (esize bytes at offset off)
 * is left out: the bytes before it into head, those after it into tail,
 * the text, when there is one, strdup'ed into *error (0, or
 * APPROF_ENOMEM). TemplateEntry and ReuseMeasurement keep entries and
 * measurements so (sweep_int.h). */
static int pack_without_error(unsigned char *head, unsigned char *tail, char **error,
                              const void *in, size_t n, size_t off, size_t esize)
{
    const unsigned char *b = in;
    const char *text = (const char *)b + off;
    memcpy(head, b, off);
    memcpy(tail, b + off + esize, n - off - esize);
    *error = NULL;
    if (text[0] && !(*error = strdup(text)))
        return APPROF_ENOMEM;
    return 0;
}

/* The struct pack_without_error kept, the error text back in its buffer. */
static void unpack_without_error(void *out, size_t n, size_t off, size_t esize,
                                 const unsigned char *head, const unsigned char *tail,
                                 const char *error)
{
    unsigned char *b = out;
    memset(out, 0, n);
    memcpy(b, head, off);
    memcpy(b + off + esize, tail, n - off - esize);
    if (error)
        copy_text((char *)b + off, esize, error);
}

#define PACK(out, in, T) \
    pack_without_error((out)->head, (out)->tail, &(out)->error, (in), sizeof(T), \
                       offsetof(T, error), sizeof((in)->error))
#define UNPACK(out, in, T) \
    unpack_without_error((out), sizeof(T), offsetof(T, error), sizeof((out)->error), \
                         (in)->head, (in)->tail, (in)->error)

static int entry_pack(TemplateEntry *out, const CostdbEntry *e)
{
    return PACK(out, e, CostdbEntry);
}

static void entry_unpack(CostdbEntry *out, const TemplateEntry *in)
{
    UNPACK(out, in, CostdbEntry);
}

static int measurement_pack(ReuseMeasurement *out, const ApprofMeasurement *m)
{
    return PACK(out, m, ApprofMeasurement);
}

static void measurement_unpack(ApprofMeasurement *out, const ReuseMeasurement *in)
{
    UNPACK(out, in, ApprofMeasurement);
}

/* Empties the slots in place (the array and its capacity stay). */
static void reuse_slots_clear(ReuseTable *t)
{
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].used) {
            free(t->slots[i].m[0].error);
            free(t->slots[i].m[1].error);
            memset(&t->slots[i], 0, sizeof t->slots[i]);
        }
    t->n = 0;
}

static void reuse_slots_free(ReuseTable *t)
{
    reuse_slots_clear(t);
    free(t->slots);
    t->slots = NULL;
    t->cap = 0;
}

/* The slots' byte cap: APPROF_REUSE_CAP_BYTES from the environment when
 * set (an internal knob for tests), else 8 MiB. */
static size_t reuse_cap_default(void)
{
    const char *v = getenv("APPROF_REUSE_CAP_BYTES");
    if (v && *v) {
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end == '\0')
            return n ? (size_t)n : 1;
    }
    return (size_t)8 << 20;
}

/* The most slots a table may have: a power of two (at least 2) within the
 * byte cap when the table is capped. */
static size_t reuse_max_slots(const ReuseTable *t)
{
    size_t m = 2;
    if (!t->capped)
        return SIZE_MAX;
    while (m * 2 * sizeof(ReuseSlot) <= t->cap_bytes)
        m *= 2;
    return m;
}

/* Adds signature sig to the set of those measured: 1 when it was there,
 * 0 when added, APPROF_ENOMEM. */
static int seen_add(ReuseTable *t, const char *sig)
{
    ApprofHash128 h;
    approf_hash128_init(&h, 0x5eed);
    approf_hash128_update(&h, sig, strlen(sig));
    if (!h.a && !h.b)
        h.b = 1; /* {0, 0} marks an empty slot */
    if ((t->seen_n + 1) * 2 > t->seen_cap) {
        size_t ncap = t->seen_cap ? t->seen_cap * 2 : 1024;
        ApprofHash128 *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return APPROF_ENOMEM;
        for (size_t k = 0; k < t->seen_cap; k++) {
            const ApprofHash128 *e = &t->seen[k];
            if (!e->a && !e->b)
                continue;
            size_t i = (size_t)e->a & (ncap - 1);
            while (ns[i].a || ns[i].b)
                i = (i + 1) & (ncap - 1);
            ns[i] = *e;
        }
        free(t->seen);
        t->seen = ns;
        t->seen_cap = ncap;
    }
    size_t i = (size_t)h.a & (t->seen_cap - 1);
    for (; t->seen[i].a || t->seen[i].b; i = (i + 1) & (t->seen_cap - 1))
        if (t->seen[i].a == h.a && t->seen[i].b == h.b)
            return 1;
    t->seen[i] = h;
    t->seen_n++;
    return 0;
}

static void seen_free(ReuseTable *t)
{
    free(t->seen);
    t->seen = NULL;
    t->seen_cap = t->seen_n = 0;
}

static ReuseSlot *reuse_find(ReuseTable *t, const char *sig, int insert)
{
    size_t i;
    if (!sig[0])
        return NULL;
    /* at the cap: the slots start again in their array (no fresh pages to
     * fault in, no regrowth from 1024). Exact: it holds what a freed,
     * regrown one would (the slots inserted since), and starts again at the
     * same n (the cap's (n + 1) * 2 > cap) */
    if (insert && (t->n + 1) * 2 > t->cap && t->cap >= reuse_max_slots(t))
        reuse_slots_clear(t);
    if (insert && (t->n + 1) * 2 > t->cap) {
        size_t most = reuse_max_slots(t);
        size_t ncap = t->cap ? t->cap * 2 : 1024 < most ? 1024 : most;
        ReuseSlot *ns = costdb_table_alloc(ncap, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t k = 0; k < t->cap; k++) {
            if (!t->slots[k].used)
                continue;
            i = approf_hash_text(t->slots[k].signature) & (ncap - 1);
            while (ns[i].used)
                i = (i + 1) & (ncap - 1);
            ns[i] = t->slots[k];
        }
        free(t->slots);
        t->slots = ns;
        t->cap = ncap;
    }
    if (!t->cap)
        return NULL;
    i = approf_hash_text(sig) & (t->cap - 1);
    while (t->slots[i].used) {
        if (!strcmp(t->slots[i].signature, sig))
            return &t->slots[i];
        i = (i + 1) & (t->cap - 1);
    }
    if (!insert)
        return NULL;
    t->slots[i].used = 1;
    copy_text(t->slots[i].signature, sizeof t->slots[i].signature, sig);
    t->n++;
    return &t->slots[i];
}

void approf_sweep_reuse_free(ReuseTable *t)
{
    reuse_slots_free(t);
    seen_free(t);
    template_store_clear(&t->tpl);
    for (size_t i = 0; i < t->spec_cap; i++)
        free(t->specs[i]);
    free(t->specs);
    free(t->ordinal_of);
    approf_price_memo_free(t->price_memo);
    memset(t, 0, sizeof *t);
}

/* The measurements and templates, not the spec pool: results waiting to
 * be written point into it. */
static void reuse_forget(ReuseTable *t)
{
    reuse_slots_free(t);
    seen_free(t);
    template_store_clear(&t->tpl);
}

static int same_shape(const Sweep *sw, int a, int b)
{
    return sw->submeshes[a].n == sw->submeshes[b].n && sw->submeshes[a].m == sw->submeshes[b].m;
}

int approf_sweep_shape_ends(Sweep *sw)
{
    int S = sw->n_submeshes;
    free(sw->shape_end);
    sw->shape_end = NULL;
    if (S <= 0)
        return 0;
    size_t *end = calloc((size_t)S, sizeof *end), *own = calloc((size_t)S, sizeof *own);
    if (!end || !own) {
        free(end);
        free(own);
        return APPROF_ENOMEM;
    }
    for (size_t k = 0; k < sw->n_tuples; k++)
        if (sw->tuples[k].submesh >= 0 && sw->tuples[k].submesh < S)
            own[sw->tuples[k].submesh] = k + 1;
    for (int a = 0; a < S; a++)
        for (int b = 0; b < S; b++)
            if (same_shape(sw, a, b) && own[b] > end[a])
                end[a] = own[b];
    free(own);
    sw->shape_end = end;
    return 0;
}

/* Both the signature (program.c) and the program key (memo.c) hash the
 * submesh's shape, so no tuple of another shape finds what one shape left
 * in the reuse table: once this thread's tuples (taken in increasing
 * order) are past the last tuple of every shape the table holds, nothing
 * in it is asked for again, and it is freed. The sharding ILP's solutions
 * go with it (a problem solved again gets the same answer; its costs are
 * the mesh's, so in practice none is asked again either). */
static void reuse_enter(Sweep *sw, const ApprofTuple *t)
{
    ReuseTable *rt = &sw->reuse;
    if (!sw->shape_end || t < sw->tuples || t >= sw->tuples + sw->n_tuples || t->submesh < 0 ||
        t->submesh >= sw->n_submeshes)
        return;
    size_t k = (size_t)(t - sw->tuples), end = sw->shape_end[t->submesh];
    if (k >= rt->held_end) {
        reuse_forget(rt);
        approf_shard_context_forget_solutions(sw->shard);
        rt->held_end = end;
    } else if (end > rt->held_end) {
        rt->held_end = end;
    }
}

static const char *intern_spec(ReuseTable *t, const char *spec)
{
    if ((t->spec_n + 1) * 2 > t->spec_cap) {
        size_t ncap = t->spec_cap ? t->spec_cap * 2 : 256;
        char **ns = costdb_table_alloc(ncap, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t i = 0; i < t->spec_cap; i++) {
            if (!t->specs[i])
                continue;
            size_t k = (size_t)approf_hash_text(t->specs[i]) & (ncap - 1);
            while (ns[k])
                k = (k + 1) & (ncap - 1);
            ns[k] = t->specs[i];
        }
        free(t->specs);
        t->specs = ns;
        t->spec_cap = ncap;
    }
    size_t k = (size_t)approf_hash_text(spec) & (t->spec_cap - 1);
    while (t->specs[k]) {
        if (!strcmp(t->specs[k], spec))
            return t->specs[k];
        k = (k + 1) & (t->spec_cap - 1);
    }
    t->specs[k] = strdup(spec);
    if (!t->specs[k])
        return NULL;
    t->spec_n++;
    return t->specs[k];
}

/* The apply-grad seconds of p: approf_stage_apply_seconds, except that
 * a backend that measured the optimizer step (measured > 0: Adam over
 * p->optimizer_elements, ApprofMeasurement.apply_seconds) puts its time
 * in place of the Adam bytes at the memory bandwidth; what
 * optimizer_bytes holds beyond Adam's (the FP8 weights' casts) stays
 * priced so. */
static double apply_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p,
                            double measured, const ApprofPhasePrice *phase, ApprofPriceMemo *memo)
{
    ApprofStageProgram q;
    double adam, e = (double)approf_dtype_size(p->dtype);
    CostdbAdamWidths w;
    if (!(measured > 0) || !(p->optimizer_elements > 0))
        return approf_stage_apply_seconds_priced(hw, p, phase, memo);
    q = *p;
    approf_hardware_adam_widths(hw, &w);
    adam = costdb_adam_bytes(&w, p->optimizer_elements, e, e);
    q.optimizer_bytes = p->optimizer_bytes > adam ? p->optimizer_bytes - adam : 0.0;
    return approf_stage_apply_seconds_priced(hw, &q, phase, memo) + measured;
}

/* apply: the stage's apply-grad seconds (apply_seconds), stored where the
 * phase was measured. */
static void fill_entry(CostdbEntry *e, const ApprofTuple *t, int phase,
                       const ApprofStageProgram *p, const ApprofMeasurement *m, double apply)
{
    /* an entry judged out of memory keeps the time computed for it
     * (unfit_cost) and its apply seconds, which apsolve's cp and ep steps
     * price a twin from; its cost is +inf */
    const int unfit =
        m->status == COSTDB_STATUS_OOM && m->unfit_cost > 0 && isfinite(m->unfit_cost);
    memset(e, 0, sizeof *e);
    e->apply_cost = p && (m->status == COSTDB_STATUS_OK || unfit) ? apply : -1.0;
    e->unfit_cost = unfit ? m->unfit_cost : 0.0;
    e->wgrad_cost = -1.0;
    e->start_layer = t->start;
    e->end_layer = t->end;
    e->submesh_index = t->submesh;
    e->config_index = t->config;
    e->phase = phase ? COSTDB_BWD : COSTDB_FWD;
    e->status = (CostdbStatus)m->status;
    e->compute_cost = m->status == COSTDB_STATUS_OK ? m->compute_cost : INFINITY;
    e->available_memory = m->available_memory;
    e->repeats = m->repeats > 0 ? m->repeats : 1;
    e->spread = m->spread;
    copy_text(e->error, sizeof e->error, m->error);
    if (p) {
        e->peak_memory = p->peak_memory[phase];
        e->invar_size = p->invar_size[phase];
        e->outvar_size = p->outvar_size[phase];
        e->temp_buffer_size = p->temp_buffer_size[phase];
        e->intermediate_size = p->intermediate_size;
        e->initial_size = p->initial_size;
        e->temp_activation_size = p->temp_activation_size[phase];
        /* a measured peak other than the program's: the program's split
         * of its transient is not the measurement's (unknown, NULL) */
        if (m->peak_memory > 0 && m->peak_memory != p->peak_memory[phase]) {
            e->peak_memory = m->peak_memory;
            e->temp_activation_size = 0;
        }
    }
}

/* The owner of config c's sharding group on submesh sm: the lowest config
 * index with its logical mesh, force flag and memory level. */
static int sharding_group_owner(const Sweep *sw, int sm, int c)
{
    const ApprofConfigChoice *k = &sw->configs[sm][c];
    for (int i = 0; i < sw->n_configs[sm]; i++) {
        const ApprofConfigChoice *o = &sw->configs[sm][i];
        if (o->logical_a == k->logical_a && o->logical_b == k->logical_b &&
            o->force_batch_dim == k->force_batch_dim &&
            o->variant.memory_level == k->variant.memory_level)
            return i;
    }
    return -1;
}

/* The ZeRO stages above config c's that submesh sm profiles for the same
 * logical mesh, force flag, memory level and recomputation (bit z): the
 * configs that follow c (zero is the innermost loop of the variants,
 * approf_config_variants), whose programs the build of c's derives. */
static unsigned zero_siblings(const Sweep *sw, int sm, int c)
{
    const ApprofConfigChoice *k = &sw->configs[sm][c];
    unsigned mask = 0;
    for (int i = 0; i < sw->n_configs[sm]; i++) {
        const ApprofConfigChoice *o = &sw->configs[sm][i];
        if (o->variant.zero > k->variant.zero && o->logical_a == k->logical_a &&
            o->logical_b == k->logical_b && o->force_batch_dim == k->force_batch_dim &&
            o->variant.memory_level == k->variant.memory_level &&
            o->variant.recompute == k->variant.recompute)
            mask |= 1u << o->variant.zero;
    }
    return mask;
}

void approf_sweep_config_groups(Sweep *sw)
{
    for (int sm = 0; sm < sw->n_submeshes && sm < APPROF_MAX_SUBMESHES; sm++)
        for (int c = 0; c < sw->n_configs[sm] && c < APPROF_MAX_CONFIGS; c++) {
            sw->group_owner[sm][c] = (short)sharding_group_owner(sw, sm, c);
            sw->zero_above[sm][c] = zero_siblings(sw, sm, c);
        }
}

/* The size of a placement's spec field: its texts are shorter. */
#define PLACEMENT_SPEC_BYTES sizeof(((ApprofPlacement *)0)->spec)

/* The placement rows of a program built for the tuple, specs interned. */
static int program_placements(Sweep *sw, const ApprofStageProgram *p, ApprofSlotPlacement **buf,
                              size_t *cap)
{
    if (!p->n_placements)
        return 0;
    /* rows added zeroed: every byte defined (MPI sends whole rows) */
    if (util_grow_zero((void **)buf, cap, p->n_placements, sizeof **buf) < 0)
        return APPROF_ENOMEM;
    for (size_t k = 0; k < p->n_placements; k++) {
        const ApprofPlacement *src = &p->placements[k];
        ApprofSlotPlacement *d = &(*buf)[k];
        d->tensor = src->tensor;
        d->role = (unsigned short)src->role;
        /* a row with the spec of the row before (a stage's layers repeat
         * their layouts) takes its interned text without a hash */
        if (k && !strcmp(src->spec, src[-1].spec)) {
            d->spec = d[-1].spec;
            d->spec_len = d[-1].spec_len;
        } else if (!(d->spec = intern_spec(&sw->reuse, src->spec))) {
            return APPROF_ENOMEM;
        } else {
            d->spec_len = (unsigned short)strnlen(src->spec, PLACEMENT_SPEC_BYTES);
        }
    }
    return (int)p->n_placements;
}

int approf_sweep_expand_placements(const Sweep *sw, const ApprofTuple *t,
                                   const ApprofSlotPlacement *in, int n, unsigned char *described,
                                   CostdbPlacement **buf, size_t *cap)
{
    /* the role names with their NULs, copied whole (each fits d->role) */
    static const char roles[3][8] = {"param", "input", "output"};
    _Static_assert(sizeof roles[0] == sizeof((CostdbPlacement *)0)->role, "role field");
    if (n <= 0)
        return 0;
    /* rows added zeroed: every byte defined (MPI sends whole rows) */
    if (util_grow_zero((void **)buf, cap, (size_t)n, sizeof **buf) < 0)
        return APPROF_ENOMEM;
    for (int k = 0; k < n; k++) {
        const ApprofTensor *tt = &sw->graph->tensors[in[k].tensor];
        CostdbPlacement *d = &(*buf)[k];
        d->start_layer = t->start;
        d->end_layer = t->end;
        d->submesh_index = t->submesh;
        d->config_index = t->config;
        d->tensor_index = in[k].tensor;
        /* a tensor's texts once per sweep (a 126-layer full sweep hands
         * over some 10^8 rows of a few thousand tensors) */
        if (described && described[in[k].tensor]) {
            d->tensor_name[0] = d->shape[0] = d->dtype[0] = '\0';
        } else {
            copy_text(d->tensor_name, sizeof d->tensor_name, tt->name);
            copy_text(d->shape, sizeof d->shape, sw->shape_texts[in[k].tensor]);
            copy_text(d->dtype, sizeof d->dtype, approf_dtype_name(tt->dtype));
            if (described)
                described[in[k].tensor] = 1;
        }
        memcpy(d->role, roles[in[k].role], sizeof d->role);
        /* the spec's length came with it (copy_text without the strnlen) */
        size_t len = in[k].spec_len < sizeof d->sharding_spec - 1 ? in[k].spec_len
                                                                  : sizeof d->sharding_spec - 1;
        memcpy(d->sharding_spec, in[k].spec, len);
        d->sharding_spec[len] = '\0';
    }
    return n;
}

/* Shards and costs one tuple; entries[2] receive fwd/bwd. */
/* Whether tuple t stores placements (entries filled): they belong to the
 * owner of the config's sharding group (the lowest index of its logical
 * mesh, force flag and memory level: the costdb rule); other variants read
 * the owner's. An owner that fails in both phases stores none unless the
 * failure is a memory one: a recomputing or ZeRO variant may fit, and the
 * cp and ep steps of apsolve read an out-of-memory twin's placements
 * (docs/context-parallel.md, "Refusals"). */
static int wants_placements(const Sweep *sw, const ApprofTuple *t, const CostdbEntry e[2])
{
    int owner = sw->group_owner[t->submesh][t->config];
    int both_failed = e[0].status != COSTDB_STATUS_OK && e[1].status != COSTDB_STATUS_OK;
    int memory_only = e[0].status != COSTDB_STATUS_FAILED && e[1].status != COSTDB_STATUS_FAILED &&
                      (e[0].status == COSTDB_STATUS_OOM || e[1].status == COSTDB_STATUS_OOM);
    return owner == t->config && !(both_failed && !memory_only);
}

/* Placement rows of a template, its tensors read through the stage's
 * tensor order: template_placement_next's rows in its order (run by run,
 * each block reps times, the r-th with the ordinals plus r * delta), the
 * runs expanded here rather than a call per row. */
static int template_placements(const ProgTemplate *tp, const int *order, int n_order,
                               ApprofSlotPlacement **buf, size_t *cap)
{
    int k = 0;
    if (!tp->n_pl)
        return 0;
    /* rows added zeroed: every byte defined (MPI sends whole rows) */
    if (util_grow_zero((void **)buf, cap, (size_t)tp->n_pl, sizeof **buf) < 0)
        return APPROF_ENOMEM;
    ApprofSlotPlacement *out = *buf;
    for (int r = 0; r < tp->n_runs && k < tp->n_pl; r++) {
        const TemplateRun *run = &tp->run[r];
        const TemplatePlacement *block = tp->rows + run->at;
        for (int rep = 0, shift = 0; rep < run->reps; rep++, shift += run->delta)
            for (int q = 0; q < run->len; q++, k++) {
                int ordinal = block[q].ordinal + shift;
                if (ordinal < 0 || ordinal >= n_order)
                    return APPROF_EINVAL;
                out[k].tensor = order[ordinal];
                out[k].role = block[q].role;
                out[k].spec_len = block[q].spec_len;
                out[k].spec = block[q].spec;
            }
    }
    return k == tp->n_pl ? k : APPROF_EINVAL;
}

/* Records the results of a stage built from scratch under its key; without
 * memory the template is simply not kept (a later alike stage is built).
 * interned: prog's placement rows as program_placements made them (their
 * specs interned, row for row), or NULL (the specs are interned here). */
static void template_record(Sweep *sw, const ApprofTuple *t, const uint64_t key[2],
                            const CostdbEntry e[2], int measured, const ApprofStageProgram *prog,
                            const ApprofSlotPlacement *interned, const int *order, int n_order)
{
    ReuseTable *rt = &sw->reuse;
    size_t nt = sw->graph->n_tensors ? sw->graph->n_tensors : 1;
    TemplatePlacement *pl = NULL;
    /* The key hashes the config's logical mesh, force flag, memory level,
     * recomputation and ZeRO stage, so tuples of this config find the
     * template; one that is not its sharding group's owner never stores
     * placements (wants_placements), so they are not kept (an owner of
     * the same key, were there one, builds its stage: pl_kept). */
    int owner = sw->group_owner[t->submesh][t->config];
    int keep = owner == t->config || !prog || !prog->n_placements;
    int n_pl = prog && keep ? (int)prog->n_placements : 0, ok = 1;
    if (!rt->ordinal_of) {
        rt->ordinal_of = malloc(nt * sizeof(int));
        if (!rt->ordinal_of)
            return;
        for (size_t i = 0; i < nt; i++)
            rt->ordinal_of[i] = -1;
    }
    if (n_pl) {
        pl = malloc((size_t)n_pl * sizeof *pl);
        if (!pl)
            return;
        for (int k = 0; k < n_order; k++)
            rt->ordinal_of[order[k]] = k;
        for (int k = 0; k < n_pl && ok; k++) {
            const char *text = prog->placements[k].spec;
            pl[k].role = (unsigned short)prog->placements[k].role;
            pl[k].ordinal = rt->ordinal_of[prog->placements[k].tensor];
            pl[k].spec = interned ? interned[k].spec : intern_spec(rt, text);
            pl[k].spec_len = interned ? interned[k].spec_len
                                      : (unsigned short)strnlen(text, PLACEMENT_SPEC_BYTES);
            ok = pl[k].ordinal >= 0 && pl[k].spec != NULL;
        }
        for (int k = 0; k < n_order; k++)
            rt->ordinal_of[order[k]] = -1;
    }
    ProgTemplate tp;
    memset(&tp, 0, sizeof tp);
    tp.key[0] = key[0];
    tp.key[1] = key[1];
    tp.measured = measured;
    tp.pl_kept = keep;
    if (!ok || template_store_find(&rt->tpl, key) || template_set_placements(&tp, pl, n_pl) ||
        !(tp.e = calloc(2, sizeof *tp.e)) || entry_pack(&tp.e[0], &e[0]) ||
        entry_pack(&tp.e[1], &e[1])) {
        template_free(&tp);
        free(pl);
        return;
    }
    free(pl);
    template_store_put(&rt->tpl, &tp);
}

int approf_sweep_profile_tuple(Sweep *sw, const ApprofSweepConfig *cfg, const ApprofTuple *t,
                               CostdbEntry entries[2], ApprofSlotPlacement **placements,
                               size_t *cap, int *n_placements, ApprofSweepSummary *sum)
{
    ApprofShardRequest req;
    ApprofStageProgram prog;
    ApprofMeasurement m[2];
    char why[512] = "";
    double t0 = costdb_monotonic_seconds(), t1;
    int rc, n_order = 0, have_key;
    const int *order = NULL;
    uint64_t key[2] = {0, 0};
    ReuseSlot *slot;

    reuse_enter(sw, t);
    approf_sweep_tuple_request(sw, t, &req);
    memset(&prog, 0, sizeof prog);
    *n_placements = 0;

    /* A stage alike to one built before (same program key): its entries
     * and placements without building the program. order is the key
     * memo's own array (no copy per tuple), kept until the next key: the
     * build below asks for none, the next tuple's is asked once this one
     * is done (approf_sweep_key_ahead). */
    have_key = approf_sweep_tuple_key(sw, t, &req, key, &order, &n_order);
    const ProgTemplate *tp = have_key ? template_store_find(&sw->reuse.tpl, key) : NULL;
    if (tp && !tp->pl_kept && sw->group_owner[t->submesh][t->config] == t->config)
        tp = NULL;
    if (tp) {
        for (int ph = 0; ph < 2; ph++) {
            entry_unpack(&entries[ph], &tp->e[ph]);
            entries[ph].start_layer = t->start;
            entries[ph].end_layer = t->end;
            entries[ph].submesh_index = t->submesh;
            entries[ph].config_index = t->config;
            /* what the signature-keyed reuse table would have answered */
            entries[ph].reused = tp->measured;
        }
        if (tp->measured)
            sum->reused += 2;
        approf_shard_note_reuse(sw->shard);
        rc = wants_placements(sw, t, entries)
                 ? template_placements(tp, order, n_order, placements, cap)
                 : 0;
        sum->t_sharding += costdb_monotonic_seconds() - t0;
        if (rc < 0)
            return rc;
        *n_placements = rc;
        approf_sweep_key_ahead(sw, t);
        return 0;
    }

    rc = approf_shard_stage(sw->shard, &req, &prog, why, sizeof why);
    t1 = costdb_monotonic_seconds();
    sum->t_sharding += t1 - t0;
    if (rc < 0) {
        if (rc == APPROF_ENOMEM)
            return rc;
        for (int ph = 0; ph < 2; ph++) {
            memset(&m[ph], 0, sizeof m[ph]);
            m[ph].status = rc == APPROF_ENOVARIANT ? COSTDB_STATUS_SKIPPED : COSTDB_STATUS_FAILED;
            m[ph].available_memory = approf_hardware_available_memory(&sw->hw);
            /* %.245s: what fits after "sharding: " anyway (-Wformat-truncation);
             * the backward's text is the forward's */
            if (ph)
                memcpy(m[1].error, m[0].error, sizeof m[1].error);
            else
                snprintf(m[0].error, sizeof m[0].error, "%s: %.245s",
                         rc == APPROF_ENOVARIANT ? "variant" : "sharding",
                         why[0] ? why : approf_strerror(rc));
            fill_entry(&entries[ph], t, ph, NULL, &m[ph], -1.0);
        }
        if (have_key)
            template_record(sw, t, key, entries, 0, NULL, NULL, order, n_order);
        approf_stage_program_clear(&prog);
        approf_sweep_key_ahead(sw, t);
        return 0;
    }
    /* prog's phases as its measurement priced them, when it did
     * (approf_backend_prices_phases): the apply-grad and weight-gradient
     * shares below then read them (approf_phase_price_memo) and do not
     * go over the kernels again */
    ApprofPhasePrice phase[2];
    int priced = 0, reused;
    ReuseTable *rt = &sw->reuse;
    if (!rt->cap_bytes) {
        rt->cap_bytes = reuse_cap_default();
        rt->capped = approf_backend_prices_phases(&sw->backend);
    }
    slot = reuse_find(rt, prog.signature, 0);
    reused = slot != NULL;
    if (slot) {
        measurement_unpack(&m[0], &slot->m[0]);
        measurement_unpack(&m[1], &slot->m[1]);
    } else {
        /* the analytic backend with this thread's collective prices */
        int memo = approf_backend_prices_phases(&sw->backend);
        for (int ph = 0; ph < 2; ph++) {
            memset(&m[ph], 0, sizeof m[ph]);
            rc = memo ? approf_analytic_measure_priced(&sw->reuse.price_memo, &prog, ph,
                                                       &sw->hw, &m[ph], &phase[ph])
                      : sw->backend.measure(sw->backend.ctx, &prog, ph, &sw->hw, &m[ph]);
            if (rc < 0) {
                m[ph].status = COSTDB_STATUS_FAILED;
                if (!m[ph].error[0])
                    snprintf(m[ph].error, sizeof m[ph].error, "backend: %s",
                             approf_strerror(rc));
            }
        }
        priced = approf_backend_prices_phases(&sw->backend);
        /* a phase that fits or not was priced (compute_cost or
         * unfit_cost: phase[ph].seconds) */
        for (int ph = 0; ph < 2 && priced; ph++)
            if (m[ph].status != COSTDB_STATUS_OK && m[ph].status != COSTDB_STATUS_OOM)
                priced = 0;
        /* packed first: a slot once inserted is used (without memory
         * nothing is kept, and a later alike program is measured) */
        ReuseMeasurement pm[2];
        int packed = measurement_pack(&pm[0], &m[0]) == 0;
        packed = measurement_pack(&pm[1], &m[1]) == 0 && packed;
        slot = packed ? reuse_find(rt, prog.signature, 1) : NULL;
        if (slot) {
            slot->m[0] = pm[0];
            slot->m[1] = pm[1];
        } else {
            free(pm[0].error);
            free(pm[1].error);
        }
        slot = NULL;
        /* measured before, its slot gone under the cap: the same
         * measurement (the backend's is deterministic), and the entry as
         * the slot would have made it (reused, its shares priced again) */
        if (rt->capped && prog.signature[0] && seen_add(rt, prog.signature) == 1) {
            reused = 1;
            priced = 0;
        }
    }
    sum->t_costing += costdb_monotonic_seconds() - t1;
    /* priced for an entry with a time: one measured, or computed before it
     * was judged out of memory (unfit_cost, which apsolve's cp/ep steps use) */
    double apply = m[0].status == COSTDB_STATUS_OK || m[1].status == COSTDB_STATUS_OK ||
                           m[0].unfit_cost > 0 || m[1].unfit_cost > 0
                       ? apply_seconds(&sw->hw, &prog,
                                       m[1].status == COSTDB_STATUS_OK ? m[1].apply_seconds : 0.0,
                                       priced ? phase : NULL,
                                       priced ? approf_price_memo_ready(&sw->reuse.price_memo,
                                                                        &sw->hw)
                                              : NULL)
                       : -1.0;
    for (int ph = 0; ph < 2; ph++) {
        fill_entry(&entries[ph], t, ph, &prog, &m[ph], apply);
        entries[ph].reused = reused;
    }
    /* the backward's weight-gradient share (the zero-bubble schedules' W) */
    if (m[1].status == COSTDB_STATUS_OK)
        entries[1].wgrad_cost =
            priced ? approf_wgrad_seconds_priced(m[1].compute_cost, &phase[1])
                   : approf_wgrad_seconds_memo(&sw->hw, &prog, m[1].compute_cost, NULL,
                                               &sw->reuse.price_memo);
    if (reused)
        sum->reused += 2;
    /* the placement rows first: the template takes their interned specs */
    rc = wants_placements(sw, t, entries) ? program_placements(sw, &prog, placements, cap) : 0;
    if (have_key && rc >= 0)
        template_record(sw, t, key, entries, 1, &prog, rc > 0 ? *placements : NULL, order,
                        n_order);
    approf_stage_program_clear(&prog);
    if (rc < 0)
        return rc;
    *n_placements = rc;
    approf_sweep_key_ahead(sw, t);
    (void)cfg;
    return 0;
}
