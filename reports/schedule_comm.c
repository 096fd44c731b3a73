/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The blocking send/recv program of a simulated pipeline schedule and its
 * deadlock check: each stage issues its transfers in the order of their
 * simulated time; the check runs the program with rendezvous semantics
 * (a send and a receive complete together) and reports the wait-for cycle
 * of the stages that never finish, or the first pair of stages that list
 * their common messages in different orders. Also the micro-batch
 * warnings of a pipeline that never fills.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apreport.h"

/* ---- send/recv program ---------------------------------------------------- */

typedef struct {
    double t;
    int src, dst, tag, chunk;
} Msg;

static int msg_cmp(const void *x, const void *y)
{
    const Msg *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->src != b->src)
        return a->src - b->src;
    if (a->tag != b->tag)
        return a->tag - b->tag;
    return a->chunk - b->chunk;
}

int apreport_comm_program(const ApreportSchedule *s, ApreportCommProgram **out)
{
    ApreportCommProgram *p = NULL;
    Msg *msgs = NULL;
    size_t nm = 0;
    int rc = APREPORT_ENOMEM;
    if (!s || !out)
        return APREPORT_EINVAL;
    *out = NULL;
    msgs = malloc(sizeof(Msg) * (s->n_events + 1));
    p = calloc(1, sizeof(*p));
    if (!msgs || !p)
        goto cleanup;
    p->n_stages = s->n_stages;
    p->ops = calloc((size_t)s->n_stages, sizeof(*p->ops));
    p->n_ops = calloc((size_t)s->n_stages, sizeof(size_t));
    if (!p->ops || !p->n_ops)
        goto cleanup;
    for (size_t i = 0; i < s->n_events; i++) {
        const ApreportEvent *e = &s->events[i];
        if (e->kind != APREPORT_EV_SEND_ACT && e->kind != APREPORT_EV_SEND_GRAD)
            continue;
        msgs[nm].t = e->start;
        msgs[nm].src = e->stage;
        msgs[nm].dst = e->peer;
        msgs[nm].tag = e->micro_batch * 2 + (e->kind == APREPORT_EV_SEND_GRAD);
        msgs[nm].chunk = e->chunk;
        nm++;
    }
    qsort(msgs, nm, sizeof(Msg), msg_cmp);
    for (int st = 0; st < s->n_stages; st++) {
        size_t k = 0;
        for (size_t i = 0; i < nm; i++)
            k += msgs[i].src == st || msgs[i].dst == st;
        p->ops[st] = calloc(k ? k : 1, sizeof(ApreportCommOp));
        if (!p->ops[st])
            goto cleanup;
        for (size_t i = 0; i < nm; i++) {
            if (msgs[i].src != st && msgs[i].dst != st)
                continue;
            ApreportCommOp *op = &p->ops[st][p->n_ops[st]++];
            op->is_send = msgs[i].src == st;
            op->peer = op->is_send ? msgs[i].dst : msgs[i].src;
            op->tag = msgs[i].tag;
            op->chunk = msgs[i].chunk;
        }
    }
    *out = p;
    p = NULL;
    rc = 0;
cleanup:
    apreport_comm_program_free(&p);
    free(msgs);
    return rc;
}

void apreport_comm_program_free(ApreportCommProgram **p)
{
    if (!p || !*p)
        return;
    if ((*p)->ops)
        for (int s = 0; s < (*p)->n_stages; s++)
            free((*p)->ops[s]);
    free((*p)->ops);
    free((*p)->n_ops);
    free(*p);
    *p = NULL;
}

/* ---- deadlock check -------------------------------------------------------- */

static int matches(const ApreportCommOp *a, int a_stage, const ApreportCommOp *b, int b_stage)
{
    return a->is_send != b->is_send && a->peer == b_stage && b->peer == a_stage &&
           a->tag == b->tag && a->chunk == b->chunk;
}

/* First pair (s, t) whose programs list their common messages in different
 * orders; 0 and -1s when all pairs agree. */
static void pair_check(const ApreportCommProgram *p, ApreportDeadlock *d)
{
    for (int s = 0; s < p->n_stages; s++)
        for (int t = s + 1; t < p->n_stages; t++) {
            size_t i = 0, j = 0;
            for (;;) {
                while (i < p->n_ops[s] && p->ops[s][i].peer != t)
                    i++;
                while (j < p->n_ops[t] && p->ops[t][j].peer != s)
                    j++;
                if (i >= p->n_ops[s] || j >= p->n_ops[t]) {
                    if (i < p->n_ops[s] || j < p->n_ops[t]) {
                        d->pair_src = s, d->pair_dst = t;
                        return;
                    }
                    break;
                }
                if (!matches(&p->ops[s][i], s, &p->ops[t][j], t)) {
                    d->pair_src = s, d->pair_dst = t;
                    return;
                }
                i++, j++;
            }
        }
}

int apreport_deadlock_check(const ApreportCommProgram *p, ApreportDeadlock *d)
{
    size_t *pos = NULL;
    int S, *seen = NULL, rc = APREPORT_ENOMEM;
    if (!p || !d || p->n_stages < 1 || !p->ops || !p->n_ops)
        return APREPORT_EINVAL;
    memset(d, 0, sizeof(*d));
    d->pair_src = d->pair_dst = -1;
    S = p->n_stages;
    for (int s = 0; s < S; s++)
        for (size_t i = 0; i < p->n_ops[s]; i++)
            if (p->ops[s][i].peer < 0 || p->ops[s][i].peer >= S || p->ops[s][i].peer == s)
                return APREPORT_EINVAL;
    pos = calloc((unsigned)S, sizeof(size_t));
    seen = calloc((unsigned)S, sizeof(int));
    if (!pos || !seen)
        goto cleanup;
    for (int progress = 1; progress;) {
        progress = 0;
        for (int s = 0; s < S; s++) {
            if (pos[s] >= p->n_ops[s])
                continue;
            const ApreportCommOp *op = &p->ops[s][pos[s]];
            int t = op->peer;
            if (pos[t] < p->n_ops[t] && matches(op, s, &p->ops[t][pos[t]], t)) {
                pos[s]++, pos[t]++;
                progress = 1;
            }
        }
    }
    pair_check(p, d);
    int start = -1;
    for (int s = 0; s < S && start < 0; s++)
        if (pos[s] < p->n_ops[s])
            start = s;
    if (start < 0) {
        if (d->pair_src >= 0)
            snprintf(d->message, sizeof(d->message),
                     "no deadlock, but stages %d and %d disagree on message order",
                     d->pair_src, d->pair_dst);
        rc = 0;
        goto cleanup;
    }
    d->deadlocked = 1;
    /* Each blocked stage waits on exactly one peer: walk until a stage
     * repeats (cycle) or a finished stage is reached (unmatched op). */
    for (int s = 0; s < S; s++)
        seen[s] = -1;
    int s = start, step = 0;
    while (pos[s] < p->n_ops[s] && seen[s] < 0) {
        seen[s] = step++;
        s = p->ops[s][pos[s]].peer;
    }
    size_t mlen = 0;
    if (pos[s] < p->n_ops[s]) {
        int first = s;
        do {
            if (d->cycle_len < APREPORT_MAX_CYCLE)
                d->cycle[d->cycle_len++] = s;
            s = p->ops[s][pos[s]].peer;
        } while (s != first);
        mlen = (size_t)snprintf(d->message, sizeof(d->message), "deadlock: wait-for cycle");
        for (int k = 0; k < d->cycle_len && mlen < sizeof(d->message); k++) {
            const ApreportCommOp *op = &p->ops[d->cycle[k]][pos[d->cycle[k]]];
            char chunk[32] = "";
            if (op->chunk)
                snprintf(chunk, sizeof(chunk), " chunk %d", op->chunk);
            mlen += (size_t)snprintf(d->message + mlen, sizeof(d->message) - mlen,
                                     "%s stage %d blocked in %s stage %d (micro-batch %d%s %s)",
                                     k ? ";" : "", d->cycle[k], op->is_send ? "send to" : "recv from",
                                     op->peer, op->tag / 2, chunk,
                                     op->tag % 2 ? "gradient" : "activation");
        }
    } else {
        const ApreportCommOp *op = &p->ops[start][pos[start]];
        snprintf(d->message, sizeof(d->message),
                 "deadlock: stage %d blocked in %s stage %d, which never posts the matching op",
                 start, op->is_send ? "send to" : "recv from", op->peer);
    }
    rc = 0;
cleanup:
    free(pos);
    free(seen);
    return rc;
}

int apreport_microbatch_warning(int stages, int micro_batches, char *buf, size_t len)
{
    if (buf && len)
        buf[0] = '\0';
    if (stages <= 1)
        return 0;
    if (micro_batches < stages) {
        snprintf(buf, len, "micro-batches (%d) < pipeline stages (%d): the pipeline never fills",
                 micro_batches, stages);
        return 1;
    }
    if (micro_batches < 2 * stages) {
        snprintf(buf, len,
                 "micro-batches (%d) < 2 x pipeline stages (%d): bubbles dominate "
                 "(rule of thumb: at least %d)", micro_batches, stages, 2 * stages);
        return 1;
    }
    return 0;
}
