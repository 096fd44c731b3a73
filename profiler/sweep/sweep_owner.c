/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who writes a sweep (schema 5's sweep_owner): claiming a sweep for this
 * process, taking over from a holder that is gone, and naming the holders
 * in a database error that is a lock timeout (sweep_int.h).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "costdb.h"
#include "sweep.h"
#include "sweep_int.h"

/* A write timed out on the lock: say which other processes hold sweeps of
 * this database (one stopped with Ctrl-Z keeps its batch's lock). */
static void name_lock_holders(Costdb *db, const CostdbSweepOwner *me, char *err, size_t errlen)
{
    CostdbSweepOwner *o = NULL;
    size_t n = 0, len = strlen(err);
    int said = 0;
    if (costdb_sweep_owners(db, &o, &n) < 0)
        return;
    for (size_t i = 0; i < n && len + 1 < errlen; i++) {
        if (o[i].pid == me->pid && !strcmp(o[i].host, me->host))
            continue;
        len += (size_t)snprintf(err + len, errlen - len, "%s process %lld on %s (sweep %lld, "
                                "since %s)", said++ ? "," : "; held by", (long long)o[i].pid,
                                o[i].host, (long long)o[i].sweep_id, o[i].since);
        if (len >= errlen)
            len = errlen - 1;
    }
    if (said && len + 1 < errlen)
        snprintf(err + len, errlen - len, ": if it is stopped (Ctrl-Z), continue it (fg) or "
                 "end it, then run this command again (add --resume to continue what it "
                 "wrote)");
    free(o);
}

void approf_sweep_db_error(const Sweep *sw, const ApprofSweepConfig *cfg, char *err,
                           size_t errlen)
{
    const char *m = sw->db ? costdb_errmsg(sw->db) : "cannot open";
    size_t pl = strlen(cfg->db_path);
    /* costdb's messages mostly name the file already */
    if (!strncmp(m, cfg->db_path, pl) && m[pl] == ':')
        snprintf(err, errlen, "%s", m);
    else
        snprintf(err, errlen, "%s: %s", cfg->db_path, m);
    if (sw->db && strstr(err, "locked"))
        name_lock_holders(sw->db, &sw->owner, err, errlen);
}

/* A holder of a sweep is gone: on this host with no such process, or the
 * user said --take-over. */
static int owner_stale(void *ctx, const CostdbSweepOwner *h)
{
    const ApprofSweepConfig *cfg = ctx;
    char host[COSTDB_NAME_MAX] = "";
    if (cfg->take_over)
        return 1;
    if (gethostname(host, sizeof host - 1) != 0 || strcmp(host, h->host))
        return 0;
    return h->pid > 0 && h->pid <= INT_MAX && kill((pid_t)h->pid, 0) != 0 && errno == ESRCH;
}

int approf_sweep_claim(Sweep *sw, const ApprofSweepConfig *cfg, const ApprofSweepCallbacks *cb,
                      int64_t id, char *err, size_t errlen)
{
    CostdbSweepOwner holder;
    int taken = 0, rc;
    memset(&sw->owner, 0, sizeof sw->owner);
    sw->owner.pid = (int64_t)getpid();
    if (gethostname(sw->owner.host, sizeof sw->owner.host - 1) != 0)
        snprintf(sw->owner.host, sizeof sw->owner.host, "unknown");
    rc = costdb_sweep_claim(sw->db, id, &sw->owner, owner_stale, (void *)cfg, &holder, &taken);
    if (rc == COSTDB_EBUSY) {
        snprintf(err, errlen, "%s; wait for it to finish, or stop it and resume%s",
                 costdb_errmsg(sw->db),
                 strcmp(holder.host, sw->owner.host)
                     ? " (if that process is gone, --take-over takes the sweep over)" : "");
        return APPROF_EDB;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", costdb_errmsg(sw->db));
        return APPROF_EDB;
    }
    if (taken && cb && cb->notice) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "sweep %lld: taking over from process %lld on %s (since %s), which is gone",
                 (long long)id, (long long)holder.pid, holder.host, holder.since);
        cb->notice(cb->ctx, msg);
    }
    sw->owned_sweep = id;
    return 0;
}
