/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Multi-process sweeps under an MPI launcher (mpirun -np R approf sweep ...).
 * Rank r costs its share of the tuples; ranks > 0 send every tuple's entries
 * and placements to rank 0, which alone opens and writes the database. The
 * protocol (point-to-point, MPI_COMM_WORLD):
 *   all:     agree (allreduce of each rank's status and work hash), then
 *            rank 0 broadcasts what --resume found;
 *   r > 0:   TUPLE messages (packed CostdbEntry[2] + placements, raw bytes:
 *            every rank runs the same approf build), then DONE(status),
 *            then waits for FINAL(status of the sweep) from rank 0;
 *   rank 0:  between its own tuples receives what has arrived, stores it;
 *            STOP to every worker when it is interrupted or a worker was;
 *            after its own tuples receives until every worker is DONE,
 *            commits, marks the sweep and sends FINAL.
 * Nothing here depends on MPI headers: sweep_mpi.c implements it with Open
 * MPI when the build has HAVE_MPI, sweep_mpi_stub.c (single process) when
 * not, so the core carries no MPI symbols without MPI.
 */
#ifndef APPROF_SWEEP_MPI_H
#define APPROF_SWEEP_MPI_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "costdb.h"

typedef struct ApprofSweepMpi ApprofSweepMpi;

/* Called by rank 0 for each tuple a worker sent: k is the tuple's index in
 * the sweep's enumeration. Non-zero stops the receive and is returned. */
typedef int (*ApprofMpiTupleFn)(void *ctx, size_t k, const CostdbEntry e[2],
                                const CostdbPlacement *pl, size_t n_pl);

/* 1 when an MPI launcher started this process as one of several (Open MPI's
 * OMPI_COMM_WORLD_SIZE, or PMI_SIZE, greater than 1), else 0. Without MPI
 * support in the build: always 0. A plain `approf sweep` never initialises
 * MPI (Open MPI's singleton start is slow and noisy). */
int approf_sweep_mpi_launched(void);

/* MPI_Init (once per process) and this process's place: *rank, *size, and
 * *local_rank / *local_size among the ranks of this host (device choice).
 * *out is the caller's until approf_sweep_mpi_finalize(). APPROF_EUNSUPPORTED
 * without MPI support; APPROF_EIO with a message when MPI fails to start. */
int approf_sweep_mpi_init(ApprofSweepMpi **out, int *rank, int *size, int *local_rank,
                          int *local_size, char *err, size_t errlen);
/* Waits for outstanding sends, MPI_Finalize, frees *m and sets it NULL. */
void approf_sweep_mpi_finalize(ApprofSweepMpi **m);

/* Collective: every rank passes its status (0 or negative) and a hash of the
 * work it derived from its command line. 0 when every status is 0 and every
 * hash equal; otherwise the smallest status (or APPROF_EINVAL for differing
 * hashes) with a message naming the first failing rank in err. */
int approf_sweep_mpi_agree(ApprofSweepMpi *m, int status, uint64_t hash, char *err,
                           size_t errlen);
/* Collective: rank 0's len bytes at buf to every rank. */
int approf_sweep_mpi_bcast(ApprofSweepMpi *m, void *buf, size_t len);
/* The same, shaped as ApprofProcessGroup.bcast / .barrier (ctx is the
 * ApprofSweepMpi). */
int approf_sweep_mpi_pg_bcast(void *ctx, void *buf, size_t len, int root);
int approf_sweep_mpi_pg_barrier(void *ctx);
/* ApprofProcessGroup.agree: the smallest status of all ranks (MPI_MIN). */
int approf_sweep_mpi_pg_agree(void *ctx, int status);

/* Rank > 0: queues one tuple for rank 0 (non-blocking send; the data is
 * copied). 0, APPROF_ENOMEM or APPROF_EIO. */
int approf_sweep_mpi_send_tuple(ApprofSweepMpi *m, size_t k, const CostdbEntry e[2],
                                const CostdbPlacement *pl, size_t n_pl);
/* Rank > 0: 1 once rank 0 has asked to stop (checked without blocking). */
int approf_sweep_mpi_stop_requested(ApprofSweepMpi *m);
/* Rank > 0: reports status (0 done, APPROF_EINTR, or an error) to rank 0 and
 * waits for the sweep's final status, returned in *final. 0 or APPROF_EIO. */
int approf_sweep_mpi_worker_finish(ApprofSweepMpi *m, int status, int *final);

/* Rank 0: receives the tuples that have arrived (block = 0) or everything
 * until every worker has reported DONE (block = 1), passing each to fn.
 * *worker_status receives the first non-zero DONE status and *worker_rank
 * its rank (untouched while there is none). 0, fn's non-zero value, or
 * APPROF_EIO / APPROF_ENOMEM. */
int approf_sweep_mpi_root_poll(ApprofSweepMpi *m, int block, ApprofMpiTupleFn fn, void *ctx,
                               int *worker_status, int *worker_rank);
/* Rank 0: asks every worker to stop after its tuple in flight (once). */
int approf_sweep_mpi_root_stop(ApprofSweepMpi *m);
/* Rank 0: 1 when every worker has reported DONE. */
int approf_sweep_mpi_root_all_done(const ApprofSweepMpi *m);
/* Rank 0: sends the sweep's final status to every worker. */
int approf_sweep_mpi_root_finish(ApprofSweepMpi *m, int final);

#endif
