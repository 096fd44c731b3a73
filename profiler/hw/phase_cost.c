/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A phase's time from its stage program (approf_phase_seconds and its
 * memo, approf_wgrad_seconds; hardware.h): the kernels' roofline times
 * (cost.c), the collectives' prices (approf_collective_cost) with the
 * overlap rules of the spec (tensor-parallel async gradients, Transformer
 * Engine's userbuffers, ZeRO-3's replay), and the sweep's memo of prices
 * and kernel sums over shared kernel arrays. Evaluated in a fixed order so
 * that equal inputs give bit-identical results, memo or not.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hardware.h"
#include "stage.h"

/* Largest async group of phase ph's collectives (0: none, or the spec
 * does not price them). */
static int async_groups(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph)
{
    int n = 0;
    if (!(hw->tp_async_grad > 0))
        return 0;
    for (size_t i = 0; i < p->n_colls[ph]; i++)
        if (p->colls[ph][i].async_group > n)
            n = p->colls[ph][i].async_group;
    return n;
}

/* A direct-mapped table of collective prices for one spec (hardware.h).
 * The key is every field of the collective approf_collective_cost reads
 * (link_cost, rank_copies_seconds: of zero3_unit only whether it is set);
 * bytes compared bit for bit. */
#define PRICE_MEMO_COLLS 4096
/* The key in two words (coll_key): the bytes' bits, and the small fields
 * packed with the slot's used bit on top, so that a look-up compares two
 * words instead of seven fields (issue 38, varprice). */
typedef struct {
    uint64_t bytes, small; /* small 0: an empty slot */
    double seconds;
} PriceMemoColl;
/* What the kernel loop of approf_phase_seconds_memo sums over a shared
 * kernel array (approf_kernel_share_id) with ng async groups: the phase's
 * seconds so far, its GEMMs' and the async windows (2 (ng + 1)). The
 * ZeRO variants of a stage hold the same arrays and are measured one
 * after another, and the recomputation modes of a memory level hold one
 * forward (sharding/program_held.c) with the other configs' programs
 * built in between: the recent ones are kept. n: the kernels summed, the
 * phase's all (approf_phase_kernel_count), or its first n where another
 * program's head ends (the build's backward before its end, which a
 * derived ZeRO program reads as its head: stage.h, kernel_head and
 * approf_kernel_share_mark), the loop of such a program starting there. */
#define PRICE_MEMO_SUMS 64
/* A kernel's price (approf_kernel_seconds) kept by every field of the
 * kernel that it reads: cost.c's approf_kernel_seconds and its helpers
 * (loss_f32_seconds: loss, dtype, elements; gemm_table_seconds: batch, m,
 * n, k, flops, dtype, fp8, attention; gemm_unaligned: m, n, k, fp8, dtype;
 * gemm_seconds: bytes, store_bytes; approf_kernel_rate: kind, dtype) and
 * attention_rate.c's approf_attention_efficiency (attn_skv); reals
 * compared bit for bit. A stage's layers repeat the same GEMMs, so a
 * build's arrays hold few distinct ones. Only the kinds priced through the
 * GEMM rates are kept here (APPROF_K_GEMM .. APPROF_K_CONV_BWD_FILTER): a
 * memory-bound kernel's price is a few operations, less than a look-up by
 * this key, and is kept by its kind and bytes alone (PriceMemoStream).
 * `used` is 1 in a slot filled, 0 in an empty one. */
#define PRICE_MEMO_KERNELS 2048
typedef struct {
    int32_t kind, dtype, attention, loss, fp8, used;
    int64_t batch, m, n, k, elements, attn_skv;
    double flops, bytes, store_bytes;
} PriceMemoKernelKey;
typedef struct {
    PriceMemoKernelKey key;
    double seconds;
} PriceMemoKernel;
/* A memory-bound kernel's price (kind past APPROF_K_CONV_BWD_FILTER, no
 * cross-entropy: loss 0) kept by the only fields cost.c's kernel_seconds
 * reads of it then, its kind (a reduction or not) and bytes (bit for
 * bit): two words compared, fewer operations than the price itself
 * (issue 38, varprice). kind_used: the kind + 1 in a slot filled, 0 in an
 * empty one. */
#define PRICE_MEMO_STREAMS 4096
typedef struct {
    uint64_t bytes, kind_used;
    double seconds;
} PriceMemoStream;
typedef struct {
    uint64_t id;
    size_t n;
    int ng;
    double t, gemm;
    double wgrad; /* the kernels flagged wgrad (approf_wgrad_seconds_memo) */
    double emb;   /* the embedding tables' gradient elements (ApprofPhasePrice) */
    double *win;
} PriceMemoSum;
/* What the collective loop of approf_phase_seconds_memo adds up over
 * its collectives, in order (CollRun): a prefix's (stage.h, coll_prefix)
 * kept by the prefix, its length, the async groups and the loop's start
 * (the kernels' seconds t0 and windows, bit for bit), so that another
 * program of the build whose kernels sum to the same goes on after it with
 * the same doubles. The ZeRO variants of a build share its forward
 * kernels and, two by two, its backward's (sharding/zero_family.c).
 * From another t0 (the other accumulation share's backward; a third of
 * the 70b full sweep's prefix runs) and the same windows, only the run's t
 * differs (coll_sums: the other sums read the prices and windows alone):
 * t0 plus the kept prices, in order, coll_sums' additions (issue 38,
 * zends). prices: the n_prices coll_prices gave (a buffer of prices_cap
 * kept with the slot); has_prices 0 in an entry itself resumed so. */
typedef struct {
    double t, colls, slowed, exposed, async_hidden;
} CollRun;
#define PRICE_MEMO_COLL_SUMS 64
typedef struct {
    uint64_t id;
    size_t n;
    int ng;
    double t0;
    CollRun run;
    double *win; /* 2 (ng + 1) at the start, then 2 (ng + 1) after the prefix */
    double *prices;
    size_t n_prices, prices_cap;
    int has_prices;
} PriceMemoCollSum;
struct ApprofPriceMemo {
    ApprofHardwareSpec hw; /* the spec the prices are of, bytes as given */
    PriceMemoColl slot[PRICE_MEMO_COLLS];
    PriceMemoSum sum[PRICE_MEMO_SUMS];
    int sum_next;
    PriceMemoCollSum csum[PRICE_MEMO_COLL_SUMS];
    int csum_next;
    PriceMemoKernel kern[PRICE_MEMO_KERNELS];
    PriceMemoStream stream[PRICE_MEMO_STREAMS];
    uint64_t coll_priced; /* collectives priced (approf_collective_cost) for the table */
    uint64_t kern_priced; /* kernels priced (approf_kernel_seconds) through the tables */
    double *scratch; /* coll_run's prices of a run not kept, scratch_cap of them */
    size_t scratch_cap;
};

static void price_memo_forget_sums(ApprofPriceMemo *m)
{
    for (int i = 0; i < PRICE_MEMO_SUMS; i++)
        free(m->sum[i].win);
    memset(m->sum, 0, sizeof m->sum);
    m->sum_next = 0;
    for (int i = 0; i < PRICE_MEMO_COLL_SUMS; i++) {
        free(m->csum[i].win);
        free(m->csum[i].prices);
    }
    memset(m->csum, 0, sizeof m->csum);
    m->csum_next = 0;
}

void approf_price_memo_free(ApprofPriceMemo *m)
{
    if (m) {
        price_memo_forget_sums(m);
        free(m->scratch);
    }
    free(m);
}

static const PriceMemoSum *price_memo_sum(const ApprofPriceMemo *m, uint64_t id, size_t n,
                                          int ng)
{
    for (int i = 0; m && id && i < PRICE_MEMO_SUMS; i++)
        if (m->sum[i].id == id && m->sum[i].n == n && m->sum[i].ng == ng)
            return &m->sum[i];
    return NULL;
}

/* Keeps the sums of the first n kernels of array id (without memory,
 * nothing). */
static void price_memo_keep_sum(ApprofPriceMemo *m, uint64_t id, size_t n, int ng, double t,
                                double gemm, double wgrad, double emb, const double *win)
{
    PriceMemoSum *s = &m->sum[m->sum_next];
    size_t nw = ng > 0 ? 2 * ((size_t)ng + 1) : 0;
    double *w = nw ? malloc(nw * sizeof *w) : NULL;
    if (nw && !w)
        return;
    if (nw)
        memcpy(w, win, nw * sizeof *w);
    free(s->win);
    s->id = id;
    s->n = n;
    s->ng = ng;
    s->t = t;
    s->gemm = gemm;
    s->wgrad = wgrad;
    s->emb = emb;
    s->win = w;
    m->sum_next = (m->sum_next + 1) % PRICE_MEMO_SUMS;
}

/* *memo ready for hw (allocated, emptied for another spec); NULL without
 * memory. */
static ApprofPriceMemo *price_memo_for(ApprofPriceMemo **memo, const ApprofHardwareSpec *hw)
{
    ApprofPriceMemo *m = *memo;
    if (!m && !(m = *memo = calloc(1, sizeof *m)))
        return NULL;
    if (memcmp(&m->hw, hw, sizeof *hw)) {
        memset(m->slot, 0, sizeof m->slot);
        memset(m->kern, 0, sizeof m->kern);
        memset(m->stream, 0, sizeof m->stream);
        price_memo_forget_sums(m);
        memcpy(&m->hw, hw, sizeof *hw);
    }
    return m;
}

/* Bits of the packed word of coll_key: kind, crosses_hosts, whether a
 * ZeRO-3 unit is set, group_size, hosts, span_hosts, the used bit. */
#define COLL_KEY_GROUP_BITS 20
#define COLL_KEY_HOST_BITS 18

/* The price memo's slot hash of a key's first word a and the rest of it
 * folded into r (a multiply by the golden ratio, then splitmix64's
 * finalizer steps): one rule for the three tables below. */
static inline uint64_t memo_slot_hash(uint64_t a, uint64_t r)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ r;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ h >> 32;
}

/* c's key (PriceMemoColl): *bytes the bits of c->bytes, *small kind (3
 * bits), crosses_hosts (1), zero3_unit > 0 (1), group_size (20), hosts
 * (18), span_hosts (18) and bit 63 set; one-to-one on the fields
 * approf_collective_cost reads (link_cost, rank_copies_seconds: of
 * zero3_unit only whether it is set). 0 when a field is outside its bits
 * (a negative one included): then c is priced without the table. */
static inline int coll_key(const ApprofCollective *c, uint64_t *bytes, uint64_t *small)
{
    uint64_t kind = (unsigned)c->kind, cross = (unsigned)c->crosses_hosts,
             group = (unsigned)c->group_size, hosts = (unsigned)c->hosts,
             span = (unsigned)c->span_hosts;
    if ((kind >> 3) | (cross >> 1) | (group >> COLL_KEY_GROUP_BITS) |
        (hosts >> COLL_KEY_HOST_BITS) | (span >> COLL_KEY_HOST_BITS))
        return 0;
    memcpy(bytes, &c->bytes, sizeof *bytes);
    *small = kind | cross << 3 | (uint64_t)(c->zero3_unit > 0) << 4 | group << 5 |
             hosts << (5 + COLL_KEY_GROUP_BITS) |
             span << (5 + COLL_KEY_GROUP_BITS + COLL_KEY_HOST_BITS) | 1ull << 63;
    return 1;
}

/* price_memo_coll's misses, out of line (its look-up inlined; zends) */
static __attribute__((noinline)) double price_memo_coll_fill(ApprofPriceMemo *m, PriceMemoColl *s,
                                                            const ApprofHardwareSpec *hw,
                                                            const ApprofCollective *c, uint64_t b,
                                                            uint64_t w)
{
    s->bytes = b;
    s->small = w;
    s->seconds = approf_collective_cost(hw, c);
    m->coll_priced++;
    return s->seconds;
}

static inline double price_memo_coll(ApprofPriceMemo *m, const ApprofHardwareSpec *hw,
                                     const ApprofCollective *c)
{
    uint64_t b, w, h;
    if (!coll_key(c, &b, &w))
        return approf_collective_cost(hw, c);
    h = memo_slot_hash(b, w);
    PriceMemoColl *s = &m->slot[h & (PRICE_MEMO_COLLS - 1)];
    if (s->small == w && s->bytes == b)
        return s->seconds;
    return price_memo_coll_fill(m, s, hw, c, b, w);
}

ApprofPriceMemo *approf_price_memo_ready(ApprofPriceMemo **memo, const ApprofHardwareSpec *hw)
{
    return memo && hw ? price_memo_for(memo, hw) : NULL;
}

double approf_price_memo_collective(ApprofPriceMemo *m, const ApprofHardwareSpec *hw,
                                    const ApprofCollective *c)
{
    return m ? price_memo_coll(m, hw, c) : approf_collective_cost(hw, c);
}

uint64_t approf_price_memo_collectives_priced(const ApprofPriceMemo *m)
{
    return m ? m->coll_priced : 0;
}

uint64_t approf_price_memo_kernels_priced(const ApprofPriceMemo *m)
{
    return m ? m->kern_priced : 0;
}

/* 1 when x and y have the same bits */
static inline int same_bits(double x, double y)
{
    uint64_t a, b;
    memcpy(&a, &x, sizeof a);
    memcpy(&b, &y, sizeof b);
    return a == b;
}

/* The bits of x */
static inline uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* 1 when slot key s is kernel k's (PriceMemoKernelKey): every field
 * compared, their differences or'ed into one word and tested once (the
 * same test as field by field, with one branch; issue 38, varprice) */
static inline int kernel_key_is(const PriceMemoKernelKey *s, const ApprofKernel *k)
{
    uint64_t d = (bits_of(s->flops) ^ bits_of(k->flops)) | (bits_of(s->bytes) ^ bits_of(k->bytes)) |
                 (bits_of(s->store_bytes) ^ bits_of(k->store_bytes)) |
                 (uint64_t)(s->m ^ k->m) | (uint64_t)(s->n ^ k->n) | (uint64_t)(s->k ^ k->k) |
                 (uint64_t)(s->batch ^ k->batch) | (uint64_t)(s->elements ^ k->elements) |
                 (uint64_t)(s->attn_skv ^ k->attn_skv) |
                 (uint32_t)(s->kind ^ (int32_t)k->kind) | (uint32_t)(s->dtype ^ (int32_t)k->dtype) |
                 (uint32_t)(s->attention ^ k->attention) | (uint32_t)(s->fp8 ^ k->fp8) |
                 (uint32_t)(s->loss ^ k->loss) | (uint32_t)(s->used ^ 1);
    return !d;
}

/* The misses of price_memo_kernel: k priced into slot s (kept out of
 * line, so that the look-up inlines into the phase's loop) */
static __attribute__((noinline)) double price_memo_kernel_fill(ApprofPriceMemo *m,
                                                              PriceMemoKernel *s,
                                                              const ApprofHardwareSpec *hw,
                                                              const ApprofKernel *k)
{
    s->key.kind = (int32_t)k->kind;
    s->key.dtype = (int32_t)k->dtype;
    s->key.attention = k->attention;
    s->key.loss = k->loss;
    s->key.fp8 = k->fp8;
    s->key.used = 1;
    s->key.batch = k->batch;
    s->key.m = k->m;
    s->key.n = k->n;
    s->key.k = k->k;
    s->key.elements = k->elements;
    s->key.attn_skv = k->attn_skv;
    s->key.flops = k->flops;
    s->key.bytes = k->bytes;
    s->key.store_bytes = k->store_bytes;
    s->seconds = approf_kernel_seconds(hw, k);
    m->kern_priced++;
    return s->seconds;
}

static __attribute__((noinline)) double price_memo_stream_fill(ApprofPriceMemo *m,
                                                              PriceMemoStream *s,
                                                              const ApprofHardwareSpec *hw,
                                                              const ApprofKernel *k,
                                                              uint64_t bytes, uint64_t kind)
{
    s->kind_used = kind;
    s->bytes = bytes;
    s->seconds = approf_kernel_seconds(hw, k);
    m->kern_priced++;
    return s->seconds;
}

/* approf_kernel_seconds(hw, k), kept in m (PriceMemoKernel, or
 * PriceMemoStream for a memory-bound kernel) when m is not NULL: the same
 * function of the same fields, so the same bits. */
static inline double price_memo_kernel(ApprofPriceMemo *m, const ApprofHardwareSpec *hw,
                                       const ApprofKernel *k)
{
    uint64_t f, b, h;
    if (!m)
        return approf_kernel_seconds(hw, k);
    if (k->kind > APPROF_K_CONV_BWD_FILTER) {
        if (k->loss) {
            m->kern_priced++; /* a cross-entropy's: not kept */
            return approf_kernel_seconds(hw, k);
        }
        /* memory bound (PriceMemoStream) */
        uint64_t kind = (uint64_t)(unsigned)k->kind + 1;
        memcpy(&b, &k->bytes, sizeof b);
        h = memo_slot_hash(b, kind);
        PriceMemoStream *ms = &m->stream[h & (PRICE_MEMO_STREAMS - 1)];
        if (ms->kind_used == kind && ms->bytes == b)
            return ms->seconds;
        return price_memo_stream_fill(m, ms, hw, k, b, kind);
    }
    /* the slot from the sizes (flops, bytes, m, n, k); the whole key is
     * compared */
    memcpy(&f, &k->flops, sizeof f);
    memcpy(&b, &k->bytes, sizeof b);
    h = memo_slot_hash(f, b ^ ((uint64_t)k->m << 40) ^ ((uint64_t)k->n << 20) ^ (uint64_t)k->k);
    PriceMemoKernel *s = &m->kern[h & (PRICE_MEMO_KERNELS - 1)];
    if (kernel_key_is(&s->key, k))
        return s->seconds;
    return price_memo_kernel_fill(m, s, hw, k);
}

/* The prices of collectives [from, to) of p's phase ph that coll_sums
 * adds (all but ZeRO-3's overlapped ones), in order, into P; returns how
 * many. Apart from the sums: a miss calls approf_collective_cost, and a
 * call in the summing loop kept its sums on the stack (x86-64's vector
 * registers are the caller's to save), a store and a load on the chain
 * of additions at each collective (perf annotate: the store of t the
 * loop's hottest instruction; issue 38, zends). The same lookups in the
 * same order: the table left as one loop left it. */
static size_t coll_prices(const ApprofHardwareSpec *hw, ApprofPriceMemo *m,
                          const ApprofStageProgram *p, int ph, size_t from, size_t to, double *P)
{
    const ApprofCollective *cl = p->colls[ph] + from, *end = p->colls[ph] + to;
    double *at = P;
    int z3_overlapped = hw->zero3_schedule > APPROF_ZERO3_SERIAL;
    for (; cl < end; cl++)
        if (!(cl->zero3_unit > 0 && z3_overlapped))
            *at++ = price_memo_coll(m, hw, cl);
    return (size_t)(at - P);
}

/* Collectives [from, to) of p's phase ph added onto r in order: each
 * one's price onto the phase's seconds and, unless blocking, onto the
 * collectives', the userbuffers' (approf_ub_account) and the async groups'
 * hidden seconds (their windows win, ng groups, used up as they go).
 * P: NULL (each priced here), or the prices coll_prices gave, in order. */
static void coll_sums(const ApprofHardwareSpec *hw, ApprofPriceMemo *m,
                      const ApprofStageProgram *p, int ph, size_t from, size_t to, int ng,
                      double *win, CollRun *r, const double *P)
{
    /* the sums in locals and the spec's switches read once: r and win
     * are doubles both, so the compiler would otherwise store r's sums
     * and read them back at each collective (the same additions in the
     * same order; issue 38, pricecost) */
    const ApprofCollective *cl = p->colls[ph] + from, *end = p->colls[ph] + to;
    double t = r->t, colls = r->colls, slowed = r->slowed, exposed = r->exposed,
           async_hidden = r->async_hidden;
    int z3_overlapped = hw->zero3_schedule > APPROF_ZERO3_SERIAL, ub = hw->tp_comm_overlap > 0;
    if (P && !ub && ng == 0) {
        /* no userbuffers, no async groups: only t and colls change (the
         * general loop below with its other branches never taken), in
         * a loop without calls, so in registers */
        for (; cl < end; cl++) {
            if (cl->zero3_unit > 0 && z3_overlapped)
                continue;
            double c = *P++;
            t += c;
            if (!cl->blocking)
                colls += c;
        }
        r->t = t;
        r->colls = colls;
        return;
    }
    for (; cl < end; cl++) {
        double c;
        if (cl->zero3_unit > 0 && z3_overlapped)
            continue; /* overlapped with compute: approf_zero3_exposed below */
        c = P ? *P++ : m ? price_memo_coll(m, hw, cl) : approf_collective_cost(hw, cl);
        t += c;
        if (cl->blocking)
            continue; /* issued between modules, beside no GEMM (stage.h) */
        colls += c;
        if (ub)
            approf_ub_account(hw, cl, ph, c, &slowed, &exposed);
        if (cl->async_group > 0 && cl->async_group <= ng) {
            /* issued asynchronously, waited for after the GEMM it runs
             * under: hidden as far as that GEMM (with the others of its
             * group not yet used) lasts */
            async_hidden += approf_async_hidden(
                hw, c, &win[2 * cl->async_group + (cl->async_wgrad ? 1 : 0)]);
        }
    }
    r->t = t;
    r->colls = colls;
    r->slowed = slowed;
    r->exposed = exposed;
    r->async_hidden = async_hidden;
}

/* coll_sums over collectives [from, to), priced first (coll_prices) into
 * rec (room for to - from; PriceMemoCollSum) or the memo's scratch;
 * returns how many rec holds. Without memo or room, priced as summed. */
static size_t coll_run(const ApprofHardwareSpec *hw, ApprofPriceMemo *m,
                       const ApprofStageProgram *p, int ph, size_t from, size_t to, int ng,
                       double *win, CollRun *r, double *rec)
{
    double *P = rec;
    size_t n = 0;
    if (m && !P && to > from) {
        if (to - from > m->scratch_cap) {
            double *b = realloc(m->scratch, (to - from) * sizeof *b);
            if (b) {
                m->scratch = b;
                m->scratch_cap = to - from;
            }
        }
        P = to - from <= m->scratch_cap ? m->scratch : NULL;
    }
    if (m && P)
        n = coll_prices(hw, m, p, ph, from, to, P);
    coll_sums(hw, m, p, ph, from, to, ng, win, r, m ? P : NULL);
    return rec ? n : 0;
}

/* What the kernel loop of approf_phase_price_memo sums, in kernel order:
 * the phase's seconds, its GEMMs', its weight-gradient kernels' and the
 * embedding gradient's elements (ApprofPhasePrice). */
typedef struct {
    double t, gemm, wgrad, emb;
} KernelSums;

/* Kernels ks[0 .. n) added onto s in order, and onto the async windows
 * win of ng groups: one plain array, its sums in locals (issue 38,
 * pricecost: the loop over approf_phase_kernel's head-or-own choice and a
 * test for the kept prefix's end at every kernel cost about a fifth of
 * the walk). */
static void kernel_span(ApprofPriceMemo *m, const ApprofHardwareSpec *hw,
                        const ApprofKernel *ks, size_t n, int ng, double *win, KernelSums *s)
{
    double t = s->t, gemm = s->gemm, wgrad = s->wgrad, emb = s->emb;
    for (const ApprofKernel *kr = ks, *end = ks + n; kr < end; kr++) {
        double k = price_memo_kernel(m, hw, kr);
        t += k;
        if (kr->kind == APPROF_K_GEMM)
            gemm += k;
        else if (approf_kernel_is_embedding_grad(kr))
            emb += (double)kr->extent * (double)kr->cols;
        if (kr->wgrad)
            wgrad += k;
        if (ng > 0 && kr->async_group > 0 && kr->async_group <= ng)
            win[2 * kr->async_group + (kr->async_wgrad ? 1 : 0)] += k;
    }
    s->t = t;
    s->gemm = gemm;
    s->wgrad = wgrad;
    s->emb = emb;
}

/* Kernels [from, to) of p's phase ph (approf_phase_kernel: the head's,
 * then the phase's own) added onto s in order (kernel_span). */
static void kernel_range(ApprofPriceMemo *m, const ApprofHardwareSpec *hw,
                         const ApprofStageProgram *p, int ph, size_t from, size_t to, int ng,
                         double *win, KernelSums *s)
{
    size_t h = p->n_kernel_head[ph];
    if (from < h) {
        size_t stop = to < h ? to : h;
        kernel_span(m, hw, p->kernel_head[ph] + from, stop - from, ng, win, s);
        from = stop;
    }
    if (from < to)
        kernel_span(m, hw, p->kernels[ph] + (from - h), to - from, ng, win, s);
}

/* The kept run of prefix id's first n collectives from kernels' seconds
 * t0 and windows win (2 (ng + 1), bit for bit), or NULL; *from_prices
 * (NULL where there is none) a kept run of the same prefix from the same
 * windows and another t0 whose prices are kept (PriceMemoCollSum). */
static const PriceMemoCollSum *price_memo_coll_sum(const ApprofPriceMemo *m, uint64_t id,
                                                   size_t n, int ng, double t0,
                                                   const double *win,
                                                   const PriceMemoCollSum **from_prices)
{
    size_t nw = ng > 0 ? 2 * ((size_t)ng + 1) : 0;
    *from_prices = NULL;
    for (int i = 0; i < PRICE_MEMO_COLL_SUMS; i++) {
        const PriceMemoCollSum *s = &m->csum[i];
        if (s->id == id && s->n == n && s->ng == ng &&
            (!nw || !memcmp(s->win, win, nw * sizeof *win))) {
            if (same_bits(s->t0, t0))
                return s;
            if (s->has_prices && !*from_prices)
                *from_prices = s;
        }
    }
    return NULL;
}

/* The slot price_memo_keep_coll_sum fills next, its prices' buffer with
 * room for n (NULL without memory: then kept without them). */
static double *price_memo_coll_sum_room(ApprofPriceMemo *m, size_t n)
{
    PriceMemoCollSum *s = &m->csum[m->csum_next];
    if (n > s->prices_cap) {
        double *b = realloc(s->prices, n * sizeof *b);
        if (!b)
            return NULL;
        s->prices = b;
        s->prices_cap = n;
    }
    return s->prices;
}

/* Keeps run r of prefix id's first n collectives from t0; w: the windows
 * at the start in its first 2 (ng + 1), a malloc'd array of twice that
 * (taken; NULL when ng is 0), win those after; n_prices (price_memo_coll_sum_room's
 * buffer) of them kept where has_prices. */
static void price_memo_keep_coll_sum(ApprofPriceMemo *m, uint64_t id, size_t n, int ng,
                                     double t0, const CollRun *r, double *w, const double *win,
                                     int has_prices, size_t n_prices)
{
    PriceMemoCollSum *s = &m->csum[m->csum_next];
    s->has_prices = has_prices;
    s->n_prices = has_prices ? n_prices : 0;
    size_t nw = ng > 0 ? 2 * ((size_t)ng + 1) : 0;
    if (nw)
        memcpy(w + nw, win, nw * sizeof *w);
    free(s->win);
    s->id = id;
    s->n = n;
    s->ng = ng;
    s->t0 = t0;
    s->run = *r;
    s->win = w;
    m->csum_next = (m->csum_next + 1) % PRICE_MEMO_COLL_SUMS;
}

double approf_phase_price_memo(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph,
                               ApprofPriceMemo **memo, ApprofPhasePrice *out)
{
    ApprofPriceMemo *m = NULL;
    double t = 0.0, gemm = 0.0, wgrad = 0.0, emb = 0.0, colls = 0.0, hidden, async_hidden = 0.0;
    double slowed = 0.0, exposed = 0.0; /* tp_comm_overlap's (ub_account) */
    double stack_win[2 * 64], *win = stack_win;
    int ng;
    memset(out, 0, sizeof *out);
    if (!hw || !p || ph < 0 || ph > 1)
        return 0.0;
    if (memo)
        m = price_memo_for(memo, hw);
    /* Windows of the asynchronous backward collectives (Megatron-LM 2022's
     * LinearWithGradAccumulationAndAsyncCommunication, sharding/program.c
     * mark_async_gemms): per group, the seconds of its linear layers'
     * input-gradient GEMMs [2g] and weight-gradient GEMMs [2g + 1]. */
    ng = async_groups(hw, p, ph);
    if (ng >= 64) {
        win = calloc(2 * ((size_t)ng + 1), sizeof *win);
        if (!win)
            ng = 0, win = stack_win;
    }
    if (ng > 0 && ng < 64)
        memset(win, 0, 2 * ((size_t)ng + 1) * sizeof *win);
    /* a shared kernel array summed before: the same sums (the loop below
     * starts from zero in any case) */
    size_t nk = approf_phase_kernel_count(p, ph), from = 0, mark = 0;
    uint64_t id = m ? approf_kernel_share_id(p->kernel_share[ph]) : 0, mid = 0;
    const PriceMemoSum *kept = price_memo_sum(m, id, nk, ng), *pre = NULL;
    if (kept) {
        t = kept->t;
        gemm = kept->gemm;
        wgrad = kept->wgrad;
        emb = kept->emb;
        if (ng > 0)
            memcpy(win, kept->win, 2 * ((size_t)ng + 1) * sizeof *win);
    } else if (m) {
        /* the kernels up to a head's end summed before (PriceMemoSum):
         * the loop goes on from there, in the same order */
        mid = p->head_share[ph] ? approf_kernel_share_id(p->head_share[ph]) : id;
        mark = p->head_share[ph] ? p->n_kernel_head[ph]
                                 : approf_kernel_share_mark(p->kernel_share[ph]);
        pre = mark && mark < nk ? price_memo_sum(m, mid, mark, ng) : NULL;
        if (!(mark < nk))
            mark = 0;
    }
    if (pre) {
        t = pre->t;
        gemm = pre->gemm;
        wgrad = pre->wgrad;
        emb = pre->emb;
        if (ng > 0)
            memcpy(win, pre->win, 2 * ((size_t)ng + 1) * sizeof *win);
        from = mark;
    }
    if (!kept) {
        /* in kernel order; the sums up to a head's end kept on the way
         * when they were not found (price_memo_keep_sum) */
        KernelSums ks = {t, gemm, wgrad, emb};
        if (mark && !pre) {
            kernel_range(m, hw, p, ph, from, mark, ng, win, &ks);
            price_memo_keep_sum(m, mid, mark, ng, ks.t, ks.gemm, ks.wgrad, ks.emb, win);
            from = mark;
        }
        kernel_range(m, hw, p, ph, from, nk, ng, win, &ks);
        t = ks.t;
        gemm = ks.gemm;
        wgrad = ks.wgrad;
        emb = ks.emb;
    }
    if (!kept && id)
        price_memo_keep_sum(m, id, nk, ng, t, gemm, wgrad, emb, win);
    out->wgrad_kernels = wgrad;
    out->embedding_elements = emb;
    CollRun r = {t, 0.0, 0.0, 0.0, 0.0};
    size_t cfrom = 0, cmark = m ? p->n_coll_prefix[ph] : 0;
    if (cmark && p->coll_prefix[ph] && cmark <= p->n_colls[ph]) {
        /* the build's collectives before its end, after the same kernels'
         * sum: priced before (PriceMemoCollSum), else priced and kept */
        size_t nw = ng > 0 ? 2 * ((size_t)ng + 1) : 0;
        const PriceMemoCollSum *fp;
        const PriceMemoCollSum *cs =
            price_memo_coll_sum(m, p->coll_prefix[ph], cmark, ng, t, win, &fp);
        if (cs) {
            r = cs->run;
            if (nw)
                memcpy(win, cs->win + nw, nw * sizeof *win);
        } else if (fp) {
            /* from another t0: t0 plus its prices, in order (PriceMemoCollSum) */
            double tr = t;
            for (const double *c = fp->prices, *e = fp->prices + fp->n_prices; c < e; c++)
                tr += *c;
            r = fp->run;
            r.t = tr;
            if (nw)
                memcpy(win, fp->win + nw, nw * sizeof *win);
            /* kept from this t0 too, unless into fp's own slot */
            double *start = nw ? malloc(2 * nw * sizeof *start) : NULL;
            if (nw && start)
                memcpy(start, fp->win, nw * sizeof *win);
            if (fp != &m->csum[m->csum_next] && (start || !nw))
                price_memo_keep_coll_sum(m, p->coll_prefix[ph], cmark, ng, t, &r, start, win,
                                         0, 0);
            else
                free(start);
        } else {
            double *start = nw ? malloc(2 * nw * sizeof *start) : NULL;
            double *rec = price_memo_coll_sum_room(m, cmark);
            size_t nrec;
            if (nw && start)
                memcpy(start, win, nw * sizeof *win);
            nrec = coll_run(hw, m, p, ph, 0, cmark, ng, win, &r, rec);
            if (start || !nw)
                price_memo_keep_coll_sum(m, p->coll_prefix[ph], cmark, ng, t, &r, start, win,
                                         rec != NULL, nrec);
            else
                m->csum[m->csum_next].has_prices = 0; /* the slot's entry kept, its prices not */
        }
        cfrom = cmark;
    }
    coll_run(hw, m, p, ph, cfrom, p->n_colls[ph], ng, win, &r, NULL);
    t = r.t;
    colls = r.colls;
    slowed = r.slowed;
    exposed = r.exposed;
    async_hidden = r.async_hidden;
    if (win != stack_win)
        free(win);
    t -= async_hidden;
    /* Megatron-Core's --tp-comm-overlap (Transformer Engine's userbuffers)
     * splits each sequence-parallel all-gather / reduce-scatter into chunks
     * pipelined with the GEMM next to it: the collectives run under the
     * phase's GEMMs, as far as those last (less what the asynchronous ones
     * already took), the GEMMs slowed beside them by the seconds-weighted
     * share of their rate the collectives take (ub_account), the pipelined
     * reduce-scatters' last chunks never hidden. */
    if (hw->tp_comm_overlap > 0 && colls > async_hidden + exposed) {
        hidden = approf_overlap_hidden_at(
            slowed / colls, hw->tp_comm_overlap * (colls - async_hidden - exposed),
            gemm - async_hidden);
        if (hidden > 0)
            t -= hidden;
    }
    /* ZeRO-3's gathers and reduce-scatters as the framework overlaps them
     * (hw/zero3_overlap.c): only what the compute does not hide */
    if (hw->zero3_schedule > APPROF_ZERO3_SERIAL)
        t += approf_zero3_exposed(hw, p, ph, NULL);
    out->seconds = t;
    return t;
}

double approf_wgrad_seconds_memo(const ApprofHardwareSpec *hw, const ApprofStageProgram *p,
                                 double bwd_seconds, const double *bwd_phase,
                                 ApprofPriceMemo **memo)
{
    double w = 0.0, all;
    const PriceMemoSum *kept = NULL;
    if (!hw || !p || !isfinite(bwd_seconds) || bwd_seconds < 0)
        return -1.0;
    /* a shared backward whose kernels the phase loop summed: the same
     * wgrad kernels in the same order (any number of async groups) */
    uint64_t id = memo && *memo && !memcmp(&(*memo)->hw, hw, sizeof *hw)
                      ? approf_kernel_share_id(p->kernel_share[1])
                      : 0;
    for (int i = 0; id && i < PRICE_MEMO_SUMS && !kept; i++)
        if ((*memo)->sum[i].id == id && (*memo)->sum[i].n == approf_phase_kernel_count(p, 1))
            kept = &(*memo)->sum[i];
    if (kept)
        w = kept->wgrad;
    for (size_t i = 0, nk = approf_phase_kernel_count(p, 1); !kept && i < nk; i++)
        if (approf_phase_kernel(p, 1, i)->wgrad)
            w += price_memo_kernel(id ? *memo : NULL, hw, approf_phase_kernel(p, 1, i));
    all = bwd_phase ? *bwd_phase : approf_phase_seconds(hw, p, 1);
    if (!(all > 0))
        return -1.0;
    /* x <= 1, so bwd x x <= bwd: the stored W never exceeds its backward */
    return w >= all ? bwd_seconds : bwd_seconds * (w / all);
}
