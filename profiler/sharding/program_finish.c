/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The end of a stage program (shard_finish_program, program_int.h): the
 * ZeRO sharding, the gradient accumulation, FP8 weights, the peak memory
 * Alpa's way, and the program signature: a hash of everything but layer
 * and operator ids, so identical stages at different depths share it.
 * Moved out of program.c as it was.
 */
#include <stdint.h>
#include <string.h>

#include "hash.h"
#include "costdb.h"
#include "sharding/context.h"
#include "sharding/sharding_int.h"
#include "sharding/program_int.h"
#include "sharding/sharding.h"

/* The words of kernels [from, to) of one array k with digests d into s. */
static ApprofHash128 kernel_run_words(ApprofHash128 s, const ApprofKernel *k,
                                      const ApprofHash128 *d, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        approf_hash128_word(&s, d[i].a);
        approf_hash128_word(&s, d[i].b);
        if (k[i].async_group)
            approf_hash128_word(&s, (uint64_t)k[i].async_group * 2 + (uint64_t)k[i].async_wgrad);
    }
    return s;
}

/* What the signature hashes of phase ph's kernels [from, to) into h:
 * each kernel's digest (shard_kernel_digest: head_dig of the head's,
 * stage.h kernel_head; dig of the phase's own) and its async marks, the
 * head's then the phase's own. */
static void kernel_words(ApprofHash128 *h, const ApprofStageProgram *p, int ph,
                         const ApprofHash128 *head_dig, const ApprofHash128 *dig, size_t from,
                         size_t to)
{
    size_t nh = p->n_kernel_head[ph];
    if (from < nh)
        *h = kernel_run_words(*h, p->kernel_head[ph], head_dig, from, to < nh ? to : nh);
    if (to > nh)
        *h = kernel_run_words(*h, p->kernels[ph], dig, (from > nh ? from : nh) - nh, to - nh);
}

/* What the signature hashes of p's phase ph's kernels: each kernel's
 * words (kernel_words), then their count, counted last so that a digest
 * of the phase's first kernels is where one of the whole phase resumes;
 * once per kernel array a build's programs share (ends: the build's ended
 * backwards; its first program ended is the one whose forward the others
 * hold). Every backward
 * of a build begins with the build's backward before its end (ends->pre_n
 * kernels: the build's own, a copy or the head), so the digest's state
 * after them is computed once, by the first (the build), and the others
 * resume from it (docs/performance.md, "The stage program's build,
 * cheaper"). */
static ApprofHash128 kernel_list(const ApprofStageProgram *p, int ph, const ApprofHash128 *dig,
                                 BackwardEnds *ends)
{
    ApprofHash128 *kept = NULL;
    int *set = NULL;
    /* the build's own end (ends->fwd not made yet: shard_build_program
     * makes it of this program's forward after) digests the forward that
     * every derived program then holds unchanged (the end only touches
     * the backward and the collectives): the one digest for all of them */
    if (ends && ph == 0 && (!ends->fwd || p->kernel_share[0] == ends->fwd)) {
        kept = &ends->fwd_list;
        set = &ends->fwd_list_set;
    }
    for (int i = 0; ends && ph == 1 && p->kernel_share[1] && i < ends->n; i++)
        if (ends->e[i].k == p->kernel_share[1]) {
            kept = &ends->e[i].list;
            set = &ends->e[i].list_set;
        }
    if (kept && *set)
        return *kept;
    /* a head is only ever the build's backward before its end (ends) */
    const ApprofHash128 *head_dig = ends ? ends->pre_dig : NULL;
    size_t n = approf_phase_kernel_count(p, ph), from = 0;
    ApprofHash128 h;
    if (ends && ph == 1 && ends->pre_n <= n) {
        if (!ends->pre_list_set) {
            approf_hash128_init(&ends->pre_list, 0x6c);
            kernel_words(&ends->pre_list, p, ph, head_dig, dig, 0, ends->pre_n);
            ends->pre_list_set = 1;
        }
        h = ends->pre_list;
        from = ends->pre_n;
    } else {
        approf_hash128_init(&h, 0x6c);
    }
    kernel_words(&h, p, ph, head_dig, dig, from, n);
    approf_hash128_word(&h, n);
    if (kept) {
        *kept = h;
        *set = 1;
    }
    return h;
}

/* One collective into a digest: the state is a local copy, kept in
 * registers (through *h the compiler must store it after each word, as
 * it may alias the collective) and inlined into its loops. Its four int
 * fields go two to a word (each as its 32 bits: the pair is the word, so
 * no two collectives that differ in them share it) and its bytes in a
 * third, at a fixed count: three steps of the hash where the five words
 * of a byte string and its tail took six (lvlends2; the signature is an
 * in-memory key, hash.h). */
static inline void coll_word(ApprofHash128 *h, const ApprofStageProgram *p,
                             const ApprofCollective *c)
{
    ApprofHash128 s = *h;
    uint64_t bytes;
    memcpy(&bytes, &c->bytes, sizeof bytes);
    approf_hash128_word(&s, (uint64_t)(uint32_t)c->kind | (uint64_t)(uint32_t)c->axes << 32);
    approf_hash128_word(&s, (uint64_t)(uint32_t)c->group_size |
                                (uint64_t)(uint32_t)c->crosses_hosts << 32);
    approf_hash128_word(&s, bytes);
    if (c->async_group)
        approf_hash128_word(&s, (uint64_t)c->async_group * 2 + (uint64_t)c->async_wgrad);
    if (c->blocking)
        approf_hash128_word(&s, 0xb10cb10cull);
    if (c->zero3_unit) { /* an overlapping ZeRO-3 schedule (program_zero.c) */
        int64_t z[3] = {c->zero3_unit, c->zero3_issue, c->op - p->op_begin};
        approf_hash128_update(&s, z, sizeof(z));
    }
    *h = s;
}

/* What the signature hashes of phase ph's collectives: each one, then
 * their count. The collectives the build had before the end are the
 * first ones of every program of the build (the end only appends), so
 * their part is digested once per build (sig). */
static ApprofHash128 coll_list(const ApprofStageProgram *p, int ph, SigShared *sig)
{
    ApprofHash128 h;
    size_t from = 0;
    if (sig && sig->pre_colls[ph] <= p->n_colls[ph]) {
        if (!sig->colls_set[ph]) {
            approf_hash128_init(&sig->colls[ph], 0x636f);
            for (size_t i = 0; i < sig->pre_colls[ph]; i++)
                coll_word(&sig->colls[ph], p, &p->colls[ph][i]);
            sig->colls_set[ph] = 1;
        }
        h = sig->colls[ph];
        from = sig->pre_colls[ph];
    } else {
        approf_hash128_init(&h, 0x636f);
    }
    for (size_t i = from; i < p->n_colls[ph]; i++)
        coll_word(&h, p, &p->colls[ph][i]);
    approf_hash128_word(&h, p->n_colls[ph]);
    return h;
}

/* What the signature hashes of the placements (pdig: of each one's spec
 * text): the same for every program of a build (sig). */
static ApprofHash128 place_list(const ApprofStageProgram *p, const ApprofHash128 *pdig,
                                SigShared *sig)
{
    ApprofHash128 h;
    if (sig && sig->place_set)
        return sig->place;
    approf_hash128_init(&h, 0x706c);
    approf_hash128_word(&h, p->n_placements);
    for (size_t i = 0; i < p->n_placements; i++) {
        int64_t w[4] = {p->placements[i].role, p->placements[i].local_bytes,
                        (int64_t)pdig[i].a, (int64_t)pdig[i].b};
        approf_hash128_update(&h, w, sizeof(w));
    }
    if (sig) {
        sig->place = h;
        sig->place_set = 1;
    }
    return h;
}

/* klist: per phase, kernel_list; pdig: of each placement's spec
 * text; sig: what the build's programs share (NULL: none). The signature
 * is an in-memory key of the sweep's measurement reuse only, never
 * stored; its body (stage.h, signature_body) is the digest of everything
 * the program holds but what shard_sign_program adds, which it then
 * signs. */
static void signature(ApprofStageProgram *p, const ApprofHash128 klist[2],
                      const ApprofHash128 *pdig, SigShared *sig)
{
    ApprofHash128 h;
    approf_hash128_init(&h, 0);
    for (int ph = 0; ph < 2; ph++) {
        approf_hash128_word(&h, klist[ph].a);
        approf_hash128_word(&h, klist[ph].b);
        ApprofHash128 cl = coll_list(p, ph, sig);
        approf_hash128_word(&h, cl.a);
        approf_hash128_word(&h, cl.b);
        int64_t mem[4] = {p->invar_size[ph], p->outvar_size[ph], p->temp_buffer_size[ph],
                          p->peak_memory[ph]};
        approf_hash128_update(&h, mem, sizeof(mem));
    }
    int64_t more[7] = {p->intermediate_size, p->initial_size, p->param_bytes, p->variant.recompute,
                       p->variant.zero, p->grad_sync.axes, 0};
    memcpy(&more[6], &p->grad_sync.bytes, sizeof(double));
    approf_hash128_update(&h, more, sizeof(more));
    /* what a measuring backend's Adam step runs over (its measurement is
     * reused with the phases') */
    uint64_t opt;
    memcpy(&opt, &p->optimizer_elements, sizeof opt);
    approf_hash128_word(&h, opt);
    if (p->zero3_post_step_copies > 0) {
        /* DeepSpeed's post-step copies (program_zero.c); hashed only when
         * there are some, so every other program keeps its signature */
        uint64_t w[2];
        memcpy(&w[0], &p->zero3_post_step_copies, sizeof w[0]);
        memcpy(&w[1], &p->zero3_post_step_bytes, sizeof w[1]);
        approf_hash128_update(&h, w, sizeof w);
    }
    ApprofHash128 pl = place_list(p, pdig, sig);
    approf_hash128_word(&h, pl.a);
    approf_hash128_word(&h, pl.b);
    p->signature_body[0] = h.a;
    p->signature_body[1] = h.b;
    shard_sign_program(p);
}

/* The one owner of the signature's text (program.h). */
void shard_sign_program(ApprofStageProgram *p)
{
    ApprofHash128 h;
    approf_hash128_init(&h, 0x5167);
    int64_t hdr[9] = {p->mesh_hosts, p->mesh_gpus, p->logical_a, p->logical_b,
                      p->force_batch_dim, (int)p->dtype, 0, (int64_t)p->signature_body[0],
                      (int64_t)p->signature_body[1]};
    memcpy(&hdr[6], &p->ilp_objective, sizeof(double));
    approf_hash128_update(&h, hdr, sizeof(hdr));
    /* the text snprintf's "%016llx%016llx" writes (32 lower-case hex
     * digits and the NUL), digit by digit: a tenth of snprintf's
     * instructions, once per program (callgrind) */
    static const char hex[] = "0123456789abcdef";
    _Static_assert(sizeof p->signature > 32, "a signature holds 32 digits and the NUL");
    for (int i = 15; i >= 0; i--) {
        p->signature[i] = hex[(h.a >> (4 * (15 - i))) & 15];
        p->signature[16 + i] = hex[(h.b >> (4 * (15 - i))) & 15];
    }
    p->signature[32] = '\0';
}

/* The end of a stage program (program_int.h): with the build's ended
 * backwards (tl->ends) the gradient accumulation may be an earlier
 * program's backward, held (shard_end_backward). */
int shard_finish_program(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                         const ZeroTail *tl, size_t kcap[2], size_t ccap[2],
                         ApprofHash128 *kdig[2])
{
    const ApprofHash128 *dig[2] = {kdig[0], NULL};
    int rc = shard_apply_zero(st, ti, p, tl->param_elems, tl->read_share, tl->blk, tl->n_blk,
                              ccap);
    if (!rc && tl->ends)
        rc = shard_end_backward(st, ti, p, &kcap[1], kdig, &dig[1], tl->ends);
    else if (!rc)
        rc = shard_push_grad_accum(st, ti, p, &kcap[1], kdig);
    if (!tl->ends)
        dig[1] = kdig[1];
    if (!rc)
        rc = shard_fp8_weights(st, ti, p, ccap);
    if (rc)
        return rc;
    /* Alpa: temp = peak - invars - outvars + donated */
    for (int ph = 0; ph < 2; ph++)
        p->peak_memory[ph] = p->invar_size[ph] + p->outvar_size[ph] + p->temp_buffer_size[ph] -
                             p->donated_size[ph];
    ApprofHash128 klist[2] = {kernel_list(p, 0, dig[0], tl->ends),
                              kernel_list(p, 1, dig[1], tl->ends)};
    signature(p, klist, tl->pdig, tl->sig);
    return 0;
}
