/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads the output of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf,
 * reduce_scatter_perf, alltoall_perf, sendrecv_perf) into communication
 * points: one point per result line, seconds = the out-of-place "time"
 * column (microseconds), bytes = the "size" column, which is the convention
 * approf's collectives use (hardware.h). The collective comes from the
 * "# Collective test starting: X_perf" line or the caller; the group (HxG)
 * from the "#  Rank N Group G Pid P on HOST device D" lines (H distinct
 * hosts, ranks / H devices each) or the caller.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "grow.h"
#include "hardware.h"

#define MAX_FIELDS 24
#define MAX_HOSTS 4096
#define MAX_POINTS 10000
#define MAX_RANKS 65536

typedef struct {
    CostdbCommPoint *pts;
    size_t n, cap;
    char hosts[64][64];
    int n_hosts_named, ranks;
    int many_hosts;            /* more distinct host names than we keep */
    int time_col;              /* index of the out-of-place time column */
    int wrong_col;
    int tests;                 /* "# Collective test starting:" lines seen */
    unsigned char rank_seen[MAX_RANKS];
    char collective[32];
} Parse;

static int split(char *line, char **f, int max)
{
    char *save = NULL;
    int n = 0;
    for (char *t = strtok_r(line, " \t\r\n", &save); t && n < max;
         t = strtok_r(NULL, " \t\r\n", &save))
        f[n++] = t;
    return n;
}

static const char *collective_of_binary(const char *bin)
{
    static const struct { const char *bin, *name; } map[] = {
        {"all_reduce_perf", "all-reduce"},   {"all_gather_perf", "all-gather"},
        {"reduce_scatter_perf", "reduce-scatter"}, {"alltoall_perf", "all-to-all"},
        {"sendrecv_perf", "send-recv"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(bin, map[i].bin))
            return map[i].name;
    return NULL;
}

static const char *dtype_of(const char *t)
{
    if (!strcmp(t, "float"))
        return "f32";
    if (!strcmp(t, "half"))
        return "f16";
    if (!strcmp(t, "bfloat16"))
        return "bf16";
    if (!strcmp(t, "double"))
        return "f64";
    return t;
}

/* A header line; -1 with err set ("PATH:LINE: ...") when it is refused. */
static int header_line(Parse *p, char *line, const char *path, long lineno, char *err,
                       size_t errlen)
{
    char *f[MAX_FIELDS];
    int n = split(line, f, MAX_FIELDS);
    /* "# Collective test starting: all_reduce_perf" */
    if (n >= 5 && !strcmp(f[1], "Collective") && !strcmp(f[2], "test") &&
        !strcmp(f[3], "starting:")) {
        const char *c = collective_of_binary(f[4]);
        /* Two logs in one file (all_reduce then all_gather) would store the
         * second test's times under the first collective. */
        if (++p->tests > 1) {
            snprintf(err, errlen, "%s:%ld: a second nccl-tests run starts here (%s); import one"
                     " run per file", path, lineno, f[4]);
            return -1;
        }
        if (!c) {
            snprintf(err, errlen, "%s:%ld: unknown collective '%s' (all_reduce_perf,"
                     " all_gather_perf, reduce_scatter_perf, alltoall_perf or sendrecv_perf)",
                     path, lineno, f[4]);
            return -1;
        }
        if (!p->collective[0])
            snprintf(p->collective, sizeof p->collective, "%s", c);
        return 0;
    }
    /* "#  Rank  0 Group  0 Pid  41069 on   node1 device  0 [0x07] NVIDIA ..." */
    if (n >= 9 && !strcmp(f[1], "Rank") && !strcmp(f[3], "Group") && !strcmp(f[7], "on")) {
        const char *host = f[8];
        char *end = NULL;
        long r;
        int known = 0;
        errno = 0;
        r = strtol(f[2], &end, 10);
        if (errno || end == f[2] || *end || r < 0 || r >= MAX_RANKS) {
            snprintf(err, errlen, "%s:%ld: field Rank: '%s' is not a rank 0..%d", path, lineno,
                     f[2], MAX_RANKS - 1);
            return -1;
        }
        if (p->rank_seen[r]) {
            snprintf(err, errlen, "%s:%ld: field Rank: rank %ld appears twice (two logs in one"
                     " file?)", path, lineno, r);
            return -1;
        }
        p->rank_seen[r] = 1;
        p->ranks++;
        for (int i = 0; i < p->n_hosts_named; i++)
            if (!strcmp(p->hosts[i], host))
                known = 1;
        if (!known) {
            if (p->n_hosts_named < 64)
                snprintf(p->hosts[p->n_hosts_named++], sizeof p->hosts[0], "%s", host);
            else
                p->many_hosts = 1;
        }
        return 0;
    }
    /* "#       size         count      type   redop    root     time ..." */
    if (n >= 4 && !strcmp(f[1], "size") && !strcmp(f[2], "count")) {
        p->time_col = p->wrong_col = -1;
        for (int i = 1; i < n; i++) {
            if (!strcmp(f[i], "time") && p->time_col < 0)
                p->time_col = i - 1;       /* data lines have no leading '#' */
            else if (!strcmp(f[i], "#wrong") && p->wrong_col < 0)
                p->wrong_col = i - 1;
        }
    }
    return 0;
}

static int parse_int64(const char *s, int64_t *out)
{
    char *end;
    long long v;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return (errno || end == s || *end) ? -1 : 0;
}

int approf_nccl_tests_parse(FILE *f, const char *path, const char *collective,
                            const char *group, CostdbCommPoint **out, size_t *n_out, char *err,
                            size_t errlen)
{
    Parse p;
    char line[4096], work[4096], *fld[MAX_FIELDS];
    char grp[32] = "";
    long lineno = 0;
    int rc = APPROF_EINVAL;

    memset(&p, 0, sizeof p);
    p.time_col = 5;  /* size count type redop root time: nccl-tests 2.x */
    p.wrong_col = 8;
    *out = NULL;
    *n_out = 0;
    if (collective && collective[0]) {
        ApprofCollKind k;
        int ok = 0;
        for (int i = 0; i < APPROF_COLL_KIND_COUNT; i++)
            if (!strcmp(collective, approf_coll_kind_name((ApprofCollKind)i)))
                ok = 1, k = (ApprofCollKind)i;
        (void)k;
        if (!ok) {
            snprintf(err, errlen,
                     "--collective: unknown collective '%s' (all-reduce, all-gather, "
                     "reduce-scatter, all-to-all or send-recv)",
                     collective);
            return APPROF_EINVAL;
        }
        snprintf(p.collective, sizeof p.collective, "%s", collective);
    }
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        char *s = line;
        int nf;
        lineno++;
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            snprintf(err, errlen, "%s:%ld: line longer than %zu characters", path, lineno,
                     sizeof line - 2);
            goto fail;
        }
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            continue;
        snprintf(work, sizeof work, "%s", s);
        if (*s == '#') {
            if (header_line(&p, work, path, lineno, err, errlen) < 0)
                goto fail;
            continue;
        }
        if (!isdigit((unsigned char)*s) && *s != '-' && *s != '+')
            continue;  /* banners and warnings some builds print */
        nf = split(work, fld, MAX_FIELDS);
        if (nf <= p.time_col || nf < 3) {
            snprintf(err, errlen, "%s:%ld: field time: the line has %d fields, the header "
                                  "promised at least %d", path, lineno, nf, p.time_col + 1);
            goto fail;
        }
        {
            CostdbCommPoint pt;
            double us;
            memset(&pt, 0, sizeof pt);
            if (parse_int64(fld[0], &pt.bytes) < 0 || pt.bytes <= 0) {
                snprintf(err, errlen, "%s:%ld: field size: '%s' is not a positive byte count",
                         path, lineno, fld[0]);
                goto fail;
            }
            if (parse_double(fld[p.time_col], &us) < 0 || !(us > 0) || us > 1e15) {
                snprintf(err, errlen, "%s:%ld: field time: '%s' is not a time in microseconds"
                         " (> 0)", path, lineno, fld[p.time_col]);
                goto fail;
            }
            for (size_t k = 0; k < p.n; k++) {
                if (p.pts[k].bytes == pt.bytes && !strcmp(p.pts[k].dtype, dtype_of(fld[2]))) {
                    snprintf(err, errlen, "%s:%ld: field size: %lld bytes measured twice",
                             path, lineno, (long long)pt.bytes);
                    goto fail;
                }
            }
            if (p.wrong_col > 0 && p.wrong_col < nf && strcmp(fld[p.wrong_col], "N/A")) {
                int64_t wrong;
                if (parse_int64(fld[p.wrong_col], &wrong) < 0 || wrong != 0) {
                    snprintf(err, errlen,
                             "%s:%ld: field #wrong: '%s': the collective returned wrong data; "
                             "not importing a failed run",
                             path, lineno, fld[p.wrong_col]);
                    goto fail;
                }
            }
            pt.seconds = us * 1e-6;
            snprintf(pt.dtype, sizeof pt.dtype, "%s", dtype_of(fld[2]));
            if (p.n >= MAX_POINTS) {
                snprintf(err, errlen, "%s:%ld: more than %d result lines; split the file",
                         path, lineno, MAX_POINTS);
                goto fail;
            }
            if (UTIL_GROW(p.pts, p.cap, p.n + 1) < 0) {
                rc = APPROF_ENOMEM;
                snprintf(err, errlen, "%s: out of memory", path);
                goto fail;
            }
            p.pts[p.n++] = pt;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = APPROF_EIO;
        goto fail;
    }
    if (!p.n) {
        snprintf(err, errlen, "%s: no nccl-tests result lines (size count type ... time ...)",
                 path);
        goto fail;
    }
    if (!p.collective[0]) {
        snprintf(err, errlen,
                 "%s: the output does not say which collective it measured (no '# Collective "
                 "test starting:' line); give --collective",
                 path);
        goto fail;
    }
    if (group && group[0]) {
        int h, g;
        char tail;
        if (sscanf(group, "%dx%d%c", &h, &g, &tail) != 2 || h < 1 || g < 1 || h > MAX_HOSTS ||
            g > MAX_HOSTS) {
            snprintf(err, errlen, "--group: '%s' is not HOSTSxGPUS (e.g. 1x8, 2x8)", group);
            goto fail;
        }
        snprintf(grp, sizeof grp, "%dx%d", h, g);
    } else {
        if (p.ranks < 1) {
            snprintf(err, errlen,
                     "%s: no '#  Rank N ... on HOST device D' lines to tell the group; give "
                     "--group HOSTSxGPUS",
                     path);
            goto fail;
        }
        if (p.many_hosts || p.ranks % p.n_hosts_named) {
            snprintf(err, errlen,
                     "%s: %d ranks on %d hosts is not a HOSTSxGPUS group; give --group", path,
                     p.ranks, p.n_hosts_named);
            goto fail;
        }
        snprintf(grp, sizeof grp, "%dx%d", p.n_hosts_named, p.ranks / p.n_hosts_named);
    }
    for (size_t i = 0; i < p.n; i++) {
        snprintf(p.pts[i].collective, sizeof p.pts[i].collective, "%s", p.collective);
        snprintf(p.pts[i].group_desc, sizeof p.pts[i].group_desc, "%s", grp);
    }
    /* nccl-tests may repeat a size (several -b/-e runs in one log): the last wins */
    for (size_t i = 0; i < p.n; i++)
        for (size_t j = i + 1; j < p.n; j++)
            if (p.pts[i].bytes == p.pts[j].bytes && !strcmp(p.pts[i].dtype, p.pts[j].dtype)) {
                p.pts[i].bytes = 0;
                break;
            }
    {
        size_t k = 0;
        for (size_t i = 0; i < p.n; i++)
            if (p.pts[i].bytes > 0)
                p.pts[k++] = p.pts[i];
        p.n = k;
    }
    *out = p.pts;
    *n_out = p.n;
    return 0;
fail:
    free(p.pts);
    return rc;
}
