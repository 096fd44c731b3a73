/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON output (json_write.h): one escaping rule for string literals, used
 * by the stream and the buffer writer, and the shortest round-trip text
 * of a number.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_write.h"

/* The escape of byte c inside a JSON string, in buf (7 bytes), or NULL
 * when c stands for itself. */
static const char *escape(unsigned char c, char buf[7])
{
    if (c == '"')
        return "\\\"";
    if (c == '\\')
        return "\\\\";
    if (c == '\n')
        return "\\n";
    if (c == '\t')
        return "\\t";
    if (c < 0x20) {
        snprintf(buf, 7, "\\u%04x", c);
        return buf;
    }
    return NULL;
}

void costdb_json_string(FILE *f, const char *s)
{
    char buf[7];
    fputc('"', f);
    for (; s && *s; s++) {
        const char *e = escape((unsigned char)*s, buf);
        if (e)
            fputs(e, f);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

size_t costdb_json_escape(char *out, size_t len, const char *s)
{
    char buf[7];
    size_t n = 0;
    for (; s && *s; s++) {
        char one[2] = {*s, '\0'};
        const char *e = escape((unsigned char)*s, buf);
        for (e = e ? e : one; *e; e++, n++)
            if (n + 1 < len)
                out[n] = *e;
    }
    if (len)
        out[n < len ? n : len - 1] = '\0';
    return n;
}

char *costdb_json_number_text(double v, char *buf, size_t len)
{
    if (len < 32) {
        if (len)
            buf[0] = '\0';
        return buf;
    }
    if (!isfinite(v)) {
        snprintf(buf, len, "null");
        return buf;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

void costdb_json_number(FILE *f, double v)
{
    char buf[32];
    fputs(costdb_json_number_text(v, buf, sizeof buf), f);
}
