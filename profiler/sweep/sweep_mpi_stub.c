/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sweep_mpi.h for builds without MPI: never launched under MPI, so a sweep
 * is one process; the remaining entry points fail with APPROF_EUNSUPPORTED
 * and are never reached by the sweep.
 */
#include <stdio.h>

#include "graph.h"
#include "sweep_mpi.h"

int approf_sweep_mpi_launched(void)
{
    return 0;
}

int approf_sweep_mpi_init(ApprofSweepMpi **out, int *rank, int *size, int *local_rank,
                          int *local_size, char *err, size_t errlen)
{
    *out = NULL;
    *rank = *local_rank = 0;
    *size = *local_size = 1;
    snprintf(err, errlen, "this approf was built without MPI (meson feature 'mpi')");
    return APPROF_EUNSUPPORTED;
}

void approf_sweep_mpi_finalize(ApprofSweepMpi **m)
{
    if (m)
        *m = NULL;
}

int approf_sweep_mpi_agree(ApprofSweepMpi *m, int status, uint64_t hash, char *err,
                           size_t errlen)
{
    (void)m, (void)hash, (void)err, (void)errlen;
    return status;
}

int approf_sweep_mpi_bcast(ApprofSweepMpi *m, void *buf, size_t len)
{
    (void)m, (void)buf, (void)len;
    return 0;
}

int approf_sweep_mpi_pg_bcast(void *ctx, void *buf, size_t len, int root)
{
    (void)ctx, (void)buf, (void)len, (void)root;
    return 0;
}

int approf_sweep_mpi_pg_barrier(void *ctx)
{
    (void)ctx;
    return 0;
}

int approf_sweep_mpi_pg_agree(void *ctx, int status)
{
    (void)ctx;
    return status;
}

int approf_sweep_mpi_send_tuple(ApprofSweepMpi *m, size_t k, const CostdbEntry e[2],
                                const CostdbPlacement *pl, size_t n_pl)
{
    (void)m, (void)k, (void)e, (void)pl, (void)n_pl;
    return APPROF_EUNSUPPORTED;
}

int approf_sweep_mpi_stop_requested(ApprofSweepMpi *m)
{
    (void)m;
    return 0;
}

int approf_sweep_mpi_worker_finish(ApprofSweepMpi *m, int status, int *final)
{
    (void)m;
    *final = status;
    return APPROF_EUNSUPPORTED;
}

int approf_sweep_mpi_root_poll(ApprofSweepMpi *m, int block, ApprofMpiTupleFn fn, void *ctx,
                               int *worker_status, int *worker_rank)
{
    (void)m, (void)block, (void)fn, (void)ctx, (void)worker_status, (void)worker_rank;
    return 0;
}

int approf_sweep_mpi_root_stop(ApprofSweepMpi *m)
{
    (void)m;
    return 0;
}

int approf_sweep_mpi_root_all_done(const ApprofSweepMpi *m)
{
    (void)m;
    return 1;
}

int approf_sweep_mpi_root_finish(ApprofSweepMpi *m, int final)
{
    (void)m, (void)final;
    return 0;
}
