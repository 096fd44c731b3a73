/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The boundary between costdb's error codes and approf's (issue 37 item
 * 9): the two spaces overlap (-2 is COSTDB_ENOTDB and APPROF_EINVAL, -7
 * COSTDB_ENOTFOUND and APPROF_EDB), so a costdb code never leaves a
 * profiler function unmapped. A caller that wants to tell a costdb
 * failure apart (COSTDB_ENOTFOUND, COSTDB_EBUSY) does so before mapping.
 */
#ifndef APPROF_COSTDB_ERROR_H
#define APPROF_COSTDB_ERROR_H

#include "costdb.h"
#include "graph.h"

/* 0 (or any count >= 0) as it is; COSTDB_ENOMEM is APPROF_ENOMEM; any other
 * failure APPROF_EDB, whose message is costdb_errmsg()'s. */
static inline int approf_from_costdb(int rc)
{
    return rc >= 0 ? rc : rc == COSTDB_ENOMEM ? APPROF_ENOMEM : APPROF_EDB;
}

#endif
