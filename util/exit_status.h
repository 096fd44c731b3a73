/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exit statuses of approf, apsolve and apreport, one family
 * (README.md, "Exit codes"). Each library keeps its own error codes
 * (COSTDB_E*, APPROF_E*, APSOLVE_E*, APREPORT_E*, negative); each maps
 * another's explicitly where it calls it (docs/architecture.md, "Errors
 * and exit statuses"), and only a command line, or apsolve's session
 * (which ends in the apsolve command's status), turns one into an exit
 * status. Header-only; libc only.
 */
#ifndef APPROF_EXIT_STATUS_H
#define APPROF_EXIT_STATUS_H

enum {
    APPROF_EXIT_OK = 0,
    APPROF_EXIT_FAIL = 1,       /* a runtime failure: bad input file, database, memory, device */
    APPROF_EXIT_USAGE = 2,      /* a usage error: unknown option, bad value, a request the
                                 * database cannot serve */
    APPROF_EXIT_INFEASIBLE = 3, /* apsolve: no feasible plan, or the given one is not */
};

/* Stopped by signal sig (SIGINT: 130, SIGTERM: 143), as a shell reports it;
 * what was computed is in the database. */
#define APPROF_EXIT_SIGNAL(sig) (128 + (sig))

#endif
