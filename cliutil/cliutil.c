/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line helpers shared by the three tools (cliutil.h). */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliutil.h"

static const char *program = "?";

void cli_set_program(const char *name)
{
    program = name && *name ? name : "?";
}

const char *cli_program(void)
{
    return program;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", program);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (cmd && *cmd)
        fprintf(stderr, "\nTry '%s %s --help'\n", program, cmd);
    else
        fprintf(stderr, "\nTry '%s --help'\n", program);
    return APPROF_EXIT_USAGE;
}

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", program);
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
    assert(out && lo <= hi);  /* the option's own range; s is the user's text */
    /* digits, with a leading '-' at most: no blanks, no '+' */
    if (!s || !(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int64_t)v;
    return 0;
}

int cli_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    double v;
    assert(out && lo <= hi);
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
    assert(n && m);
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

int cli_parse_bytes(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    long long v;
    int64_t mul = 1;
    assert(out && lo <= hi);
    if (!s || !isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    if (*end == 'K' || *end == 'k')
        mul = (int64_t)1 << 10;
    else if (*end == 'M' || *end == 'm')
        mul = (int64_t)1 << 20;
    else if (*end == 'G' || *end == 'g')
        mul = (int64_t)1 << 30;
    else if (*end == 'T' || *end == 't')
        mul = (int64_t)1 << 40;
    if (mul > 1) {
        end++;
        if (end[0] == 'i' && end[1] == 'B')
            end += 2;
        else if (end[0] == 'B')
            end++;
    } else if (end[0] == 'B') {
        end++;
    }
    if (*end || v > INT64_MAX / mul || v * mul < lo || v * mul > hi)
        return -1;
    *out = v * mul;
    return 0;
}

int cli_parse_list(const char *s, int64_t (*item)(const char *), int64_t *out, int max)
{
    char buf[64];
    int n = 0;
    assert(item && out && max >= 0);
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

const CliChoice cli_text_json[] = {{"text", CLI_FORMAT_TEXT}, {"json", CLI_FORMAT_JSON}, {NULL, 0}};

int cli_parse_choice(const char *s, const CliChoice *choices, int *out)
{
    assert(choices && out);
    for (const CliChoice *c = choices; s && c->name; c++)
        if (!strcmp(s, c->name)) {
            *out = c->value;
            return 0;
        }
    return -1;
}

const char *cli_choice_names(const CliChoice *choices, char *buf, size_t len)
{
    size_t off = 0;
    assert(choices && (buf || !len));
    if (!len)
        return buf;
    buf[0] = '\0';
    for (const CliChoice *c = choices; c->name; c++) {
        int n = snprintf(buf + off, len - off, "%s%s", c == choices ? "" : "|", c->name);
        if (n < 0 || (size_t)n >= len - off) {
            buf[off] = '\0';  /* a name that does not fit is left out whole */
            break;
        }
        off += (size_t)n;
    }
    return buf;
}

int cli_choice_option(const char *cmd, const char *opt, const char *s, const CliChoice *choices,
                      int *out)
{
    char names[256];
    if (cli_parse_choice(s, choices, out) == 0)
        return 0;
    return cli_usage_error(cmd, "--%s: '%s' is not one of %s", opt, s ? s : "",
                           cli_choice_names(choices, names, sizeof names));
}
