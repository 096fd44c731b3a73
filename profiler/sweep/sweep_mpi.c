/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Open MPI side of multi-process sweeps (protocol in sweep_mpi.h):
 * initialisation from the launcher's environment, agreement and broadcast
 * at start, non-blocking tuple sends from the workers, and rank 0's receive
 * loop. Compiled only when the build has MPI (HAVE_MPI).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "graph.h"
#include "grow.h"
#include "sweep_mpi.h"

enum { TAG_TUPLE = 1, TAG_DONE, TAG_STOP, TAG_FINAL };

/* Header of a TUPLE message, followed by CostdbEntry[2] and the placements. */
typedef struct {
    int64_t k, n_pl;
} TupleHeader;

typedef struct {
    MPI_Request req;
    void *buf;
} PendingSend;

struct ApprofSweepMpi {
    int rank, size;
    int stop_seen;             /* worker: STOP received */
    int stop_sent;             /* root: STOP sent to the workers */
    int n_done;                /* root: workers that reported DONE */
    unsigned char *done;       /* root: per rank */
    PendingSend *pending;      /* worker: sends not yet completed */
    size_t n_pending, cap_pending;
    int we_initialised;
};

/* Waits for a message like MPI_Probe, but sleeping between checks: Open
 * MPI's blocking calls spin, which would take a core from the ranks still
 * working on an oversubscribed host. */
static int probe_sleeping(int source, int tag, MPI_Status *st)
{
    struct timespec pause = {0, 200000};
    for (;;) {
        int flag = 0;
        if (MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, st) != MPI_SUCCESS)
            return APPROF_EIO;
        if (flag)
            return 0;
        nanosleep(&pause, NULL);
    }
}

static int env_size(const char *name)
{
    const char *v = getenv(name);
    char *end = NULL;
    long n;
    if (!v || !*v)
        return 0;
    n = strtol(v, &end, 10);
    return end != v && *end == '\0' && n > 0 && n < 1 << 24 ? (int)n : 0;
}

int approf_sweep_mpi_launched(void)
{
    return env_size("OMPI_COMM_WORLD_SIZE") > 1 || env_size("PMI_SIZE") > 1;
}

int approf_sweep_mpi_init(ApprofSweepMpi **out, int *rank, int *size, int *local_rank,
                          int *local_size, char *err, size_t errlen)
{
    ApprofSweepMpi *m;
    MPI_Comm node = MPI_COMM_NULL;
    int inited = 0;
    *out = NULL;
    m = calloc(1, sizeof *m);
    if (!m)
        return APPROF_ENOMEM;
    MPI_Initialized(&inited);
    if (!inited) {
        /* FUNNELED: with --workers N the process has threads, but only this
         * (main) thread calls MPI (sweep_workers.h) */
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            snprintf(err, errlen, "MPI_Init failed");
            free(m);
            return APPROF_EIO;
        }
        m->we_initialised = 1;
    }
    /* errors come back as codes, so that a failure is reported, not fatal */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    *local_rank = 0;
    *local_size = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m->rank, MPI_INFO_NULL,
                            &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, local_rank);
        MPI_Comm_size(node, local_size);
        MPI_Comm_free(&node);
    }
    {
        /* APPROF_MPI_RANKS_PER_HOST=N: every N consecutive ranks form one
         * host, whatever the launcher says (a multi-host layout rehearsed on
         * one machine, or hosts shared memory cannot tell apart) */
        const char *e = getenv("APPROF_MPI_RANKS_PER_HOST");
        char *end = NULL;
        long n = e && *e ? strtol(e, &end, 10) : 0;
        if (end && *end)
            n = 0;  /* not a whole number: ignored */
        if (n >= 1 && n <= m->size && m->size % n == 0) {
            *local_rank = m->rank % (int)n;
            *local_size = (int)n;
        }
    }
    m->done = calloc((size_t)m->size, 1);
    if (!m->done) {
        approf_sweep_mpi_finalize(&m);
        return APPROF_ENOMEM;
    }
    *rank = m->rank;
    *size = m->size;
    *out = m;
    return 0;
}

static void wait_pending(ApprofSweepMpi *m)
{
    for (size_t i = 0; i < m->n_pending; i++) {
        MPI_Wait(&m->pending[i].req, MPI_STATUS_IGNORE);
        free(m->pending[i].buf);
    }
    m->n_pending = 0;
}

void approf_sweep_mpi_finalize(ApprofSweepMpi **mp)
{
    ApprofSweepMpi *m = mp ? *mp : NULL;
    int fin = 0;
    if (!m)
        return;
    wait_pending(m);
    MPI_Finalized(&fin);
    if (m->we_initialised && !fin)
        MPI_Finalize();
    free(m->pending);
    free(m->done);
    free(m);
    *mp = NULL;
}

int approf_sweep_mpi_agree(ApprofSweepMpi *m, int status, uint64_t hash, char *err,
                           size_t errlen)
{
    /* [0]: -status (max = worst), [1]: hash, [2]: ~hash (max of both = min/max) */
    unsigned long long in[3], mx[3];
    int bad_rank = status < 0 ? m->rank : m->size, first_bad = m->size;
    in[0] = (unsigned long long)(status < 0 ? -status : 0);
    in[1] = hash;
    in[2] = ~hash;
    if (MPI_Allreduce(in, mx, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD) !=
            MPI_SUCCESS ||
        MPI_Allreduce(&bad_rank, &first_bad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) !=
            MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Allreduce failed");
        return APPROF_EIO;
    }
    if (mx[0]) {
        if (status >= 0)
            snprintf(err, errlen, "rank %d of %d failed to start (see its message)",
                     first_bad, m->size);
        return -(int)mx[0];
    }
    if (mx[1] != ~mx[2]) {
        snprintf(err, errlen,
                 "the %d ranks do not agree on the work (model, layers, tuples, backend): "
                 "give every rank the same command line and approf build", m->size);
        return APPROF_EINVAL;
    }
    return 0;
}

int approf_sweep_mpi_bcast(ApprofSweepMpi *m, void *buf, size_t len)
{
    return approf_sweep_mpi_pg_bcast(m, buf, len, 0);
}

int approf_sweep_mpi_pg_bcast(void *ctx, void *buf, size_t len, int root)
{
    unsigned char *p = buf;
    (void)ctx;
    /* MPI counts are int: broadcast in chunks */
    while (len > 0) {
        int chunk = len > (1u << 30) ? 1 << 30 : (int)len;
        if (MPI_Bcast(p, chunk, MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS)
            return APPROF_EIO;
        p += chunk;
        len -= (size_t)chunk;
    }
    return 0;
}

int approf_sweep_mpi_pg_barrier(void *ctx)
{
    (void)ctx;
    return MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : APPROF_EIO;
}

int approf_sweep_mpi_pg_agree(void *ctx, int status)
{
    int worst = 0;
    (void)ctx;
    if (MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
        return APPROF_EIO;
    return worst;
}

/* Frees the sends that have completed. */
static void reap_pending(ApprofSweepMpi *m)
{
    size_t w = 0;
    for (size_t i = 0; i < m->n_pending; i++) {
        int flag = 0;
        MPI_Test(&m->pending[i].req, &flag, MPI_STATUS_IGNORE);
        if (flag)
            free(m->pending[i].buf);
        else
            m->pending[w++] = m->pending[i];
    }
    m->n_pending = w;
}

int approf_sweep_mpi_send_tuple(ApprofSweepMpi *m, size_t k, const CostdbEntry e[2],
                                const CostdbPlacement *pl, size_t n_pl)
{
    size_t len = sizeof(TupleHeader) + 2 * sizeof(CostdbEntry) + n_pl * sizeof(CostdbPlacement);
    TupleHeader h = {(int64_t)k, (int64_t)n_pl};
    unsigned char *buf;
    reap_pending(m);
    if (len > (size_t)1 << 30)
        return APPROF_EINVAL;
    if (UTIL_GROW(m->pending, m->cap_pending, m->n_pending + 1) < 0)
        return APPROF_ENOMEM;
    buf = malloc(len);
    if (!buf)
        return APPROF_ENOMEM;
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, e, 2 * sizeof *e);
    if (n_pl)
        memcpy(buf + sizeof h + 2 * sizeof *e, pl, n_pl * sizeof *pl);
    if (MPI_Isend(buf, (int)len, MPI_BYTE, 0, TAG_TUPLE, MPI_COMM_WORLD,
                  &m->pending[m->n_pending].req) != MPI_SUCCESS) {
        free(buf);
        return APPROF_EIO;
    }
    m->pending[m->n_pending++].buf = buf;
    return 0;
}

int approf_sweep_mpi_stop_requested(ApprofSweepMpi *m)
{
    int flag = 0;
    reap_pending(m);
    if (m->stop_seen)
        return 1;
    if (MPI_Iprobe(0, TAG_STOP, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
        flag) {
        int dummy;
        MPI_Recv(&dummy, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        m->stop_seen = 1;
    }
    return m->stop_seen;
}

int approf_sweep_mpi_worker_finish(ApprofSweepMpi *m, int status, int *final)
{
    *final = APPROF_EIO;
    /* DONE follows the tuples: MPI keeps the order of one sender's messages */
    if (MPI_Send(&status, 1, MPI_INT, 0, TAG_DONE, MPI_COMM_WORLD) != MPI_SUCCESS)
        return APPROF_EIO;
    for (;;) {
        MPI_Status st;
        int v;
        reap_pending(m);
        if (probe_sleeping(0, MPI_ANY_TAG, &st) < 0 ||
            MPI_Recv(&v, 1, MPI_INT, 0, st.MPI_TAG, MPI_COMM_WORLD, &st) != MPI_SUCCESS)
            return APPROF_EIO;
        if (st.MPI_TAG == TAG_FINAL) {
            *final = v;
            break;
        }
        /* a STOP that crossed our DONE */
    }
    wait_pending(m);
    return 0;
}

/* Receives the message that st announced. */
static int root_receive(ApprofSweepMpi *m, const MPI_Status *st, ApprofMpiTupleFn fn, void *ctx,
                        int *worker_status, int *worker_rank)
{
    int count = 0, rc = 0;
    unsigned char *buf;
    if (st->MPI_TAG == TAG_DONE) {
        int v;
        if (MPI_Recv(&v, 1, MPI_INT, st->MPI_SOURCE, TAG_DONE, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return APPROF_EIO;
        if (!m->done[st->MPI_SOURCE]) {
            m->done[st->MPI_SOURCE] = 1;
            m->n_done++;
        }
        if (v != 0 && *worker_status == 0) {
            *worker_status = v;
            *worker_rank = st->MPI_SOURCE;
        }
        /* one rank stopped (signal or error): the sweep cannot complete */
        if (v != 0)
            return approf_sweep_mpi_root_stop(m);
        return 0;
    }
    MPI_Get_count(st, MPI_BYTE, &count);
    buf = malloc(count > 0 ? (size_t)count : 1);
    if (!buf)
        return APPROF_ENOMEM;
    if (MPI_Recv(buf, count, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        free(buf);
        return APPROF_EIO;
    }
    if (st->MPI_TAG == TAG_TUPLE && (size_t)count >= sizeof(TupleHeader) + 2 * sizeof(CostdbEntry)) {
        TupleHeader h;
        CostdbEntry e[2];
        size_t n_pl;
        memcpy(&h, buf, sizeof h);
        memcpy(e, buf + sizeof h, sizeof e);
        n_pl = (size_t)h.n_pl;
        if (h.k < 0 || h.n_pl < 0 ||
            (size_t)count != sizeof h + sizeof e + n_pl * sizeof(CostdbPlacement)) {
            free(buf);
            return APPROF_EIO;
        }
        /* placements are read in place (the buffer is suitably aligned by malloc
         * and the header and entries are multiples of 8 bytes) */
        rc = fn(ctx, (size_t)h.k, e,
                n_pl ? (const CostdbPlacement *)(const void *)(buf + sizeof h + sizeof e) : NULL,
                n_pl);
    }
    free(buf);
    return rc;
}

int approf_sweep_mpi_root_poll(ApprofSweepMpi *m, int block, ApprofMpiTupleFn fn, void *ctx,
                               int *worker_status, int *worker_rank)
{
    for (;;) {
        MPI_Status st;
        int flag = 0, rc;
        if (block) {
            if (m->n_done >= m->size - 1)
                return 0;
            if (probe_sleeping(MPI_ANY_SOURCE, MPI_ANY_TAG, &st) < 0)
                return APPROF_EIO;
        } else {
            if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) !=
                MPI_SUCCESS)
                return APPROF_EIO;
            if (!flag)
                return 0;
        }
        rc = root_receive(m, &st, fn, ctx, worker_status, worker_rank);
        if (rc != 0)
            return rc;
    }
}

int approf_sweep_mpi_root_stop(ApprofSweepMpi *m)
{
    int v = 1;
    if (m->stop_sent)
        return 0;
    m->stop_sent = 1;
    for (int r = 1; r < m->size; r++)
        if (!m->done[r] && MPI_Send(&v, 1, MPI_INT, r, TAG_STOP, MPI_COMM_WORLD) != MPI_SUCCESS)
            return APPROF_EIO;
    return 0;
}

int approf_sweep_mpi_root_all_done(const ApprofSweepMpi *m)
{
    return m->n_done >= m->size - 1;
}

int approf_sweep_mpi_root_finish(ApprofSweepMpi *m, int final)
{
    int rc = 0;
    for (int r = 1; r < m->size; r++)
        if (MPI_Send(&final, 1, MPI_INT, r, TAG_FINAL, MPI_COMM_WORLD) != MPI_SUCCESS)
            rc = APPROF_EIO;
    return rc;
}
