/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared utilities of the per-device stage program (stage.h): freeing and
 * deep-copying its arrays, kernel and collective arrays several programs
 * share, and the names of collective kinds as the cost
 * database spells them (CostdbCommPoint.collective).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#include <pthread.h>
#endif

#include "stage.h"

/* The block pool (stage.h). Why: a build's arrays are large (304-byte
 * kernels; a recomputing backward holds the forward again: a 40-layer
 * stage's backward is about a megabyte) and short-lived (the sweep clears
 * a program once it is costed). glibc hands them out from the top of its
 * heap, and when they are freed together the top is trimmed (brk) as soon
 * as it exceeds its trim threshold, so the next build's arrays are fresh
 * pages again, each a page fault (expensive on a paravirtualised machine:
 * llama-3-70b 40 layers 8x8 alpa with --recompute none,full made about
 * 250 k of them, 2 s of system time; docs/performance.md, "The builds'
 * arrays kept mapped"). Kept here, the
 * blocks stay mapped and the heap above them is not trimmed either.
 * Per thread, as the sharding contexts that make and free programs are
 * one per sweep worker (a block freed on a thread is kept by that
 * thread's pool; any malloc'd block may go to any pool). Only blocks of
 * at least POOL_MIN_BYTES are kept (smaller ones come from glibc's bins
 * without fresh pages), at most POOL_SLOTS of them and POOL_MAX_BYTES in
 * all (the smallest let go first). A block's size is what glibc says it
 * holds (malloc_usable_size), so nothing else records it; without glibc
 * the pool keeps nothing. Which block a build gets never changes what it
 * writes: only where. */
#define POOL_SLOTS 4
#define POOL_MIN_BYTES ((size_t)32 << 10)
#define POOL_MAX_BYTES ((size_t)16 << 20)

#ifdef __GLIBC__
typedef struct {
    void *p[POOL_SLOTS];
    size_t n[POOL_SLOTS]; /* usable bytes of p[i] */
    int count;
    size_t bytes;         /* sum of n */
    int registered;       /* pool_key set for this thread (drained at its exit) */
} BlockPool;

static _Thread_local BlockPool pool;
static pthread_key_t pool_key;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static int pool_key_ok;

static void pool_free_all(BlockPool *bp)
{
    for (int i = 0; i < bp->count; i++)
        free(bp->p[i]);
    bp->count = 0;
    bp->bytes = 0;
}

/* a thread's destructor: its pool's blocks (the value is its pool) */
static void pool_exit(void *bp)
{
    pool_free_all(bp);
}

static void pool_key_make(void)
{
    pool_key_ok = pthread_key_create(&pool_key, pool_exit) == 0;
}

/* 1 when this thread's pool will be drained at the thread's exit (the
 * process's main thread exits with its blocks reachable) */
static int pool_ready(void)
{
    if (pool.registered)
        return 1;
    pthread_once(&pool_once, pool_key_make);
    pool.registered = pool_key_ok && pthread_setspecific(pool_key, &pool) == 0;
    return pool.registered;
}

static int pool_smallest(void)
{
    int s = 0;
    for (int i = 1; i < pool.count; i++)
        if (pool.n[i] < pool.n[s])
            s = i;
    return s;
}

static void pool_drop(int i)
{
    pool.bytes -= pool.n[i];
    pool.count--;
    pool.p[i] = pool.p[pool.count];
    pool.n[i] = pool.n[pool.count];
}

void *approf_block_take(size_t bytes)
{
    int best = -1;
    /* the smallest that holds it, and not twice over: a large block
     * handed out for a small array leaves the next large one to fresh
     * pages */
    if (bytes >= POOL_MIN_BYTES)
        for (int i = 0; i < pool.count; i++)
            if (pool.n[i] >= bytes && pool.n[i] / 2 <= bytes &&
                (best < 0 || pool.n[i] < pool.n[best]))
                best = i;
    if (best < 0)
        return malloc(bytes ? bytes : 1);
    void *b = pool.p[best];
    pool_drop(best);
    return b;
}

void approf_block_give(void *b)
{
    if (!b)
        return;
    size_t n = malloc_usable_size(b);
    if (n < POOL_MIN_BYTES || n > POOL_MAX_BYTES || !pool_ready()) {
        free(b);
        return;
    }
    while (pool.count == POOL_SLOTS || pool.bytes + n > POOL_MAX_BYTES) {
        int s = pool_smallest();
        if (pool.n[s] >= n) {
            free(b);
            return;
        }
        free(pool.p[s]);
        pool_drop(s);
    }
    pool.p[pool.count] = b;
    pool.n[pool.count++] = n;
    pool.bytes += n;
}

void approf_block_pool_drain(void)
{
    pool_free_all(&pool);
}

/* the bytes b holds (its request's or more) */
static size_t block_room(void *b)
{
    return malloc_usable_size(b);
}
#else
void *approf_block_take(size_t bytes)
{
    return malloc(bytes ? bytes : 1);
}

void approf_block_give(void *b)
{
    free(b);
}

void approf_block_pool_drain(void)
{
}

static size_t block_room(void *b)
{
    (void)b;
    return 0;
}
#endif

int approf_block_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    /* util_grow's sizes (grow.c) */
    size_t max = (size_t)PTRDIFF_MAX / elem;
    if (need > max) {
        errno = ENOMEM;
        return -1;
    }
    size_t ncap = *cap <= max / 2 ? 2 * *cap : need;
    ncap = ncap < 16 ? (16 <= max ? 16 : max) : ncap;
    ncap = ncap < need ? need : ncap;
    /* a kept block handed out for less often holds the room already */
    if (*arr && block_room(*arr) >= ncap * elem) {
        *cap = ncap;
        return 0;
    }
    void *b = approf_block_take(ncap * elem);
    if (!b) {
        errno = ENOMEM;
        return -1;
    }
    if (*cap)
        memcpy(b, *arr, *cap * elem);
    approf_block_give(*arr);
    *arr = b;
    *cap = ncap;
    return 0;
}

/* A kernel array and how many programs (and builders) hold it. Holders
 * are counted without atomics: a share lives in the sharding context of
 * one thread (a sweep worker's) and in the programs it hands out there. */
struct ApprofKernelShare {
    int holders;
    ApprofKernel *k;
    size_t n;
    uint64_t id; /* unique in the process: a price kept for it is never another's */
    /* the head of the phase it was made of (stage.h, kernel_head; held) */
    ApprofKernelShare *head;
    const ApprofKernel *head_k;
    size_t n_head;
    size_t mark; /* approf_kernel_share_mark */
};

void approf_kernel_share_set_mark(ApprofKernelShare *s, size_t mark)
{
    if (s && mark < s->n)
        s->mark = mark;
}

size_t approf_kernel_share_mark(const ApprofKernelShare *s)
{
    return s ? s->mark : 0;
}

/* ids from 1 (0: no share), across threads */
static atomic_uint_fast64_t share_ids;

uint64_t approf_kernel_share_id(const ApprofKernelShare *s)
{
    return s ? s->id : 0;
}

uint64_t approf_coll_prefix_id(void)
{
    return (uint64_t)atomic_fetch_add(&share_ids, 1) + 1;
}

void approf_kernel_share_release(ApprofKernelShare *s)
{
    if (!s || --s->holders > 0)
        return;
    approf_kernel_share_release(s->head);
    approf_block_give(s->k);
    free(s);
}

ApprofKernelShare *approf_kernel_share(ApprofStageProgram *p, int ph)
{
    ApprofKernelShare *s = p->kernel_share[ph];
    if (!s) {
        if (!(s = malloc(sizeof *s)))
            return NULL;
        s->holders = 1;
        s->id = (uint64_t)atomic_fetch_add(&share_ids, 1) + 1;
        s->k = p->kernels[ph];
        s->n = p->n_kernels[ph];
        s->mark = 0;
        s->head = p->head_share[ph];
        s->head_k = p->kernel_head[ph];
        s->n_head = p->n_kernel_head[ph];
        if (s->head)
            s->head->holders++;
        p->kernel_share[ph] = s;
    }
    s->holders++;
    return s;
}

void approf_kernel_share_hold(ApprofStageProgram *q, int ph, ApprofKernelShare *s)
{
    if (q->kernel_share[ph])
        approf_kernel_share_release(q->kernel_share[ph]);
    else
        approf_block_give(q->kernels[ph]);
    s->holders++;
    q->kernel_share[ph] = s;
    q->kernels[ph] = s->k;
    q->n_kernels[ph] = s->n;
    approf_kernel_share_release(q->head_share[ph]);
    if (s->head)
        s->head->holders++;
    q->head_share[ph] = s->head;
    q->kernel_head[ph] = s->head_k;
    q->n_kernel_head[ph] = s->n_head;
}

int approf_kernel_share_head(ApprofStageProgram *q, int ph, ApprofKernelShare *s, size_t n)
{
    if (!s || s->head || n > s->n || q->head_share[ph])
        return -1;
    s->holders++;
    q->head_share[ph] = s;
    q->kernel_head[ph] = s->k;
    q->n_kernel_head[ph] = n;
    return 0;
}

/* A collective array and how many programs (and builders) hold it,
 * counted as ApprofKernelShare's holders are (one thread's). */
struct ApprofCollShare {
    int holders;
    ApprofCollective *c;
    size_t n;
};

ApprofCollShare *approf_coll_share(ApprofStageProgram *p, int ph)
{
    ApprofCollShare *s = p->coll_share[ph];
    if (!s) {
        if (!(s = malloc(sizeof *s)))
            return NULL;
        s->holders = 1;
        s->c = p->colls[ph];
        s->n = p->n_colls[ph];
        p->coll_share[ph] = s;
    }
    s->holders++;
    return s;
}

void approf_coll_share_hold(ApprofStageProgram *q, int ph, ApprofCollShare *s, size_t n)
{
    if (q->coll_share[ph])
        approf_coll_share_release(q->coll_share[ph]);
    else
        approf_block_give(q->colls[ph]);
    s->holders++;
    q->coll_share[ph] = s;
    q->colls[ph] = s->c;
    q->n_colls[ph] = n < s->n ? n : s->n;
}

void approf_coll_share_release(ApprofCollShare *s)
{
    if (!s || --s->holders > 0)
        return;
    approf_block_give(s->c);
    free(s);
}

void approf_stage_program_clear(ApprofStageProgram *p)
{
    if (!p)
        return;
    for (int ph = 0; ph < 2; ph++) {
        if (p->kernel_share[ph])
            approf_kernel_share_release(p->kernel_share[ph]);
        else
            approf_block_give(p->kernels[ph]);
        approf_kernel_share_release(p->head_share[ph]);
        if (p->coll_share[ph])
            approf_coll_share_release(p->coll_share[ph]);
        else
            approf_block_give(p->colls[ph]);
    }
    approf_block_give(p->placements);
    memset(p, 0, sizeof *p);
}

/* malloc'd copy of n elements of size sz; NULL with *rc untouched for
 * n == 0, NULL with *rc set on failure. */
static void *dup_array(const void *src, size_t n, size_t sz, int *rc)
{
    void *dst;
    if (n == 0)
        return NULL;
    if (!src || n > SIZE_MAX / sz) {
        *rc = APPROF_EINVAL;
        return NULL;
    }
    dst = approf_block_take(n * sz);
    if (!dst) {
        *rc = APPROF_ENOMEM;
        return NULL;
    }
    memcpy(dst, src, n * sz);
    return dst;
}

/* malloc'd copy of src's kernels of phase ph, its head's first (NULL
 * with *rc untouched for none, NULL with *rc set on failure). */
static ApprofKernel *joined_kernels(const ApprofStageProgram *src, int ph, int *rc)
{
    size_t h = src->n_kernel_head[ph], n = src->n_kernels[ph];
    if (!h)
        return dup_array(src->kernels[ph], n, sizeof(ApprofKernel), rc);
    ApprofKernel *k =
        h + n <= SIZE_MAX / sizeof *k ? approf_block_take((h + n) * sizeof *k) : NULL;
    if (!k) {
        *rc = APPROF_ENOMEM;
        return NULL;
    }
    memcpy(k, src->kernel_head[ph], h * sizeof *k);
    if (n)
        memcpy(k + h, src->kernels[ph], n * sizeof *k);
    return k;
}

int approf_stage_program_flatten(ApprofStageProgram *p)
{
    int rc = APPROF_OK;
    for (int ph = 0; ph < 2; ph++) {
        if (!p->head_share[ph])
            continue;
        ApprofKernel *k = joined_kernels(p, ph, &rc);
        if (rc < 0)
            return rc;
        size_t n = approf_phase_kernel_count(p, ph);
        if (p->kernel_share[ph])
            approf_kernel_share_release(p->kernel_share[ph]);
        else
            approf_block_give(p->kernels[ph]);
        approf_kernel_share_release(p->head_share[ph]);
        p->kernel_share[ph] = p->head_share[ph] = NULL;
        p->kernel_head[ph] = NULL;
        p->n_kernel_head[ph] = 0;
        p->kernels[ph] = k;
        p->n_kernels[ph] = n;
    }
    return APPROF_OK;
}

int approf_stage_program_copy(ApprofStageProgram *dst, const ApprofStageProgram *src)
{
    ApprofStageProgram tmp;
    int rc = APPROF_OK;

    if (!dst || !src)
        return APPROF_EINVAL;
    tmp = *src;
    tmp.kernels[0] = tmp.kernels[1] = NULL;
    tmp.kernel_share[0] = tmp.kernel_share[1] = NULL;
    tmp.colls[0] = tmp.colls[1] = NULL;
    tmp.coll_share[0] = tmp.coll_share[1] = NULL;
    tmp.placements = NULL;
    for (int ph = 0; ph < 2; ph++) {
        tmp.kernel_head[ph] = NULL;
        tmp.n_kernel_head[ph] = 0;
        tmp.head_share[ph] = NULL;
    }
    for (int ph = 0; ph < 2; ph++) {
        tmp.kernels[ph] = joined_kernels(src, ph, &rc);
        tmp.n_kernels[ph] = approf_phase_kernel_count(src, ph);
        if (rc < 0)
            goto cleanup;
        tmp.colls[ph] = dup_array(src->colls[ph], src->n_colls[ph], sizeof(ApprofCollective), &rc);
        if (rc < 0)
            goto cleanup;
    }
    tmp.placements = dup_array(src->placements, src->n_placements, sizeof(ApprofPlacement), &rc);
cleanup:
    if (rc < 0) {
        approf_stage_program_clear(&tmp);
        return rc;
    }
    *dst = tmp;
    return APPROF_OK;
}

const char *approf_coll_kind_name(ApprofCollKind k)
{
    switch (k) {
    case APPROF_COLL_ALL_REDUCE:
        return "all-reduce";
    case APPROF_COLL_ALL_GATHER:
        return "all-gather";
    case APPROF_COLL_REDUCE_SCATTER:
        return "reduce-scatter";
    case APPROF_COLL_ALL_TO_ALL:
        return "all-to-all";
    case APPROF_COLL_SEND_RECV:
        return "send-recv";
    default:
        return "unknown";
    }
}
