/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the approf commands: messages, number parsing, opening
 * the database. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fputs("approf: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (cmd && *cmd)
        fprintf(stderr, "\nTry 'approf %s --help'\n", cmd);
    else
        fputs("\nTry 'approf --help'\n", stderr);
    return APPROF_EXIT_USAGE;
}

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    fputs("approf: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return APPROF_EXIT_FAIL;
}

int cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    long long v;
    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int64_t)v;
    return 0;
}

int cli_parse_list(const char *s, int64_t (*item)(const char *), int64_t *out, int max)
{
    char buf[64];
    int n = 0;
    if (!s || !*s)
        return -1;
    for (;;) {
        size_t len = strcspn(s, ",");
        if (len == 0 || len >= sizeof buf || n == max)
            return -1;
        memcpy(buf, s, len);
        buf[len] = '\0';
        out[n] = item(buf);
        if (out[n++] < 0)
            return -1;
        if (!s[len])
            return n;
        s += len + 1;
    }
}

int cli_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    double v;
    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_mesh(const char *s, int *n, int *m)
{
    char *end = NULL;
    long a, b;
    if (!s || !*s)
        return -1;
    errno = 0;
    a = strtol(s, &end, 10);
    if (errno || end == s || (*end != 'x' && *end != 'X') || a <= 0 || a > 1 << 20)
        return -1;
    s = end + 1;
    b = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || b <= 0 || b > 1 << 20)
        return -1;
    *n = (int)a;
    *m = (int)b;
    return 0;
}

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
