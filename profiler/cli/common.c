/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the approf commands: opening the database and picking
 * a sweep with a message (the generic ones are in cliutil/). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "outfile.h"

int cli_open_db(const char *path, int flags, Costdb **out)
{
    char err[1024];
    int rc = costdb_open(path, flags, out, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "approf: %s\n", err[0] ? err : costdb_strerror(rc));
    return rc;
}

int cli_pick_sweep(Costdb *db, int64_t requested, int64_t *out)
{
    CostdbSweep s;
    int rc;
    if (requested > 0) {
        rc = costdb_sweep_get(db, requested, &s);
        if (rc == COSTDB_ENOTFOUND) {
            fprintf(stderr, "approf: %s: no sweep %lld\n", costdb_path(db), (long long)requested);
            return rc;
        }
    } else {
        rc = costdb_sweep_latest(db, &requested);
        if (rc == COSTDB_ENOTFOUND) {
            fprintf(stderr, "approf: %s: the database holds no sweep\n", costdb_path(db));
            return rc;
        }
    }
    if (rc < 0) {
        fprintf(stderr, "approf: %s\n", costdb_errmsg(db));
        return rc;
    }
    *out = requested;
    return 0;
}

int cli_stdout_finish(int rc)
{
    char err[256];
    if (apsolve_stdout_check(err, sizeof err) < 0 && rc == APPROF_EXIT_OK) {
        cli_fail("%s", err);
        return APPROF_EXIT_FAIL;
    }
    return rc;
}

int cli_bad_value(const char *cmd, const char *opt, const char *value, const char *what, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, what);
    vsnprintf(text, sizeof text, what, ap);
    va_end(ap);
    return cli_usage_error(cmd, "--%s needs %s, got '%s'", opt, text, value ? value : "");
}

int cli_int_value(const char *cmd, const char *opt, const char *value, int64_t lo, int64_t hi,
                  int64_t *out)
{
    if (cli_parse_int(value, lo, hi, out) < 0)
        return cli_bad_value(cmd, opt, value, "an integer in %lld..%lld", (long long)lo,
                             (long long)hi);
    return 0;
}

int cli_choice_value(const char *cmd, const char *opt, const char *value, const CliChoice *choices,
                     int *out)
{
    char names[256];
    if (cli_parse_choice(value, choices, out) < 0)
        return cli_bad_value(cmd, opt, value, "one of %s",
                             cli_choice_names(choices, names, sizeof names));
    return 0;
}

const char *cli_stop_signal_name(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "SIGINT";
}
