/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Initializers stored as external data (TensorProto.data_location
 * EXTERNAL; onnx/onnx.proto and docs/ExternalData.md of the ONNX
 * repository): their bytes lie in a file named by external_data's
 * "location", relative to the model's directory, from "offset" (default 0)
 * for "length" bytes (default: to the end of the file). approf reads only
 * the shape and the element type, which the TensorProto itself carries:
 * when a location is given the file is looked at (stat) beside the model,
 * and a missing file, a range past its end, or a length that is not the
 * tensor's size is a warning (approf_onnx_notice), never an error. Only a
 * small tensor (at most 512 bytes) is read from it, into raw_data: the
 * values a node needs as a constant (a Reshape's shape, a scale) when an
 * exporter wrote every initializer out. A malformed offset or length is an
 * error naming the initializer and the field.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "onnx.h"

/* What the last parse of this process has to say; kept when ONNX is not
 * built so the commands need no condition. */
static char notice[1024];
static int n_notices, n_dropped;

const char *approf_onnx_notice(void)
{
    return notice;
}

#if HAVE_ONNX
#include "onnx_int.h"

void ox_notice_reset(void)
{
    notice[0] = '\0';
    n_notices = n_dropped = 0;
}

/* Appends "ORIGIN: message", "; " between, while it fits (a model whose every weight
 * lies in one missing file says so once per initializer otherwise); the
 * rest is counted and summed up by ox_notice_end. */
static void ox_warn(const Ox *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void ox_warn(const Ox *c, const char *fmt, ...)
{
    char msg[512];
    size_t len = strlen(notice);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n_notices >= 3 || len + strlen(msg) + 200 >= sizeof notice) {
        n_dropped++;
        return;
    }
    snprintf(notice + len, sizeof notice - len, "%s%s: %s", len ? "; " : "",
             c->origin ? c->origin : "model", msg);
    n_notices++;
}

void ox_notice_end(void)
{
    size_t len = strlen(notice);
    if (n_dropped)
        snprintf(notice + len, sizeof notice - len, "; and %d more initializer%s alike", n_dropped,
                 n_dropped == 1 ? "" : "s");
}

/* Bytes of n elements of ONNX element type et; -1 when it has no fixed
 * size (string) or is unknown. */
static int64_t data_bytes(int32_t et, int64_t n)
{
    switch (et) {
    case 2: case 3: case 9: case 17: case 18: case 19: case 20: return n;          /* (u)int8, bool, float8 */
    case 4: case 5: case 10: case 16: return 2 * n;                                /* (u)int16, float16, bfloat16 */
    case 1: case 6: case 12: return 4 * n;                                         /* float, (u)int32 */
    case 7: case 11: case 13: case 14: return 8 * n;                               /* (u)int64, double, complex64 */
    case 15: return 16 * n;                                                        /* complex128 */
    case 21: case 22: case 23: return (n + 1) / 2;                                 /* (u)int4, float4: packed */
    default: return -1;
    }
}

/* A non-negative integer value of external_data key; -1 when absent. */
static int ext_int(Ox *c, const Onnx__TensorProto *tp, const char *key, int64_t *out)
{
    *out = -1;
    for (size_t k = 0; k < tp->n_external_data; k++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[k];
        char *end;
        long long v;
        if (!e || !e->key || strcmp(e->key, key))
            continue;
        v = e->value ? strtoll(e->value, &end, 10) : -1;
        if (!e->value || !*e->value || *end || v < 0)
            return ox_err(c, APPROF_EPARSE, "initializer '%s': field external_data.%s: '%s' is not a "
                          "byte count", tp->name, key, e->value ? e->value : "");
        *out = v;
    }
    return 0;
}

int ox_check_external(Ox *c, Onnx__TensorProto *tp)
{
    const char *loc = NULL, *slash;
    char path[4096];
    int64_t off, len, n = ox_tp_elements(tp), want;
    struct stat st;
    int rc;
    if (!tp->has_data_location || tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return 0;
    for (size_t k = 0; k < tp->n_external_data; k++)
        if (tp->external_data[k] && tp->external_data[k]->key &&
            !strcmp(tp->external_data[k]->key, "location"))
            loc = tp->external_data[k]->value;
    if ((rc = ext_int(c, tp, "offset", &off)) < 0 || (rc = ext_int(c, tp, "length", &len)) < 0)
        return rc;
    if (!loc || !*loc)
        return 0;   /* no file named: the shape is all there is to read */
    want = n < 0 ? -1 : data_bytes(tp->data_type, n);
    if (len >= 0 && want >= 0 && len != want) {
        ox_warn(c, "initializer '%s': external_data.length %lld is not its %lld bytes (its shape "
                "and dtype are used)", tp->name, (long long)len, (long long)want);
        return 0;
    }
    /* ONNX keeps external files beside the model: no absolute path, no ".." */
    if (loc[0] == '/' || !strncmp(loc, "../", 3) || strstr(loc, "/../") ||
        (strlen(loc) >= 3 && !strcmp(loc + strlen(loc) - 3, "/..")) || !strcmp(loc, "..")) {
        ox_warn(c, "initializer '%s': external_data.location '%s' is outside the model's directory "
                "(not looked at)", tp->name, loc);
        return 0;
    }
    slash = c->origin ? strrchr(c->origin, '/') : NULL;
    if (slash)
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - c->origin), c->origin, loc);
    else
        snprintf(path, sizeof path, "%s", loc);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        ox_warn(c, "initializer '%s': its external data '%s' is not beside the model (only its "
                "shape and dtype are read)", tp->name, loc);
        return 0;
    }
    if (off < 0)
        off = 0;
    if (len < 0)
        len = want >= 0 ? want : 0;
    if (off > (int64_t)st.st_size || len > (int64_t)st.st_size - off) {
        ox_warn(c, "initializer '%s': its external data '%s' holds %lld bytes, fewer than offset %lld "
                "+ length %lld (truncated?)", tp->name, loc, (long long)st.st_size, (long long)off,
                (long long)len);
        return 0;
    }
    if (want > 0 && want <= 512 && len == want && !tp->has_raw_data) {
        /* a constant's values: protobuf-c frees raw_data with the rest */
        FILE *f = fopen(path, "rb");
        uint8_t *buf = malloc((size_t)want);
        if (f && buf && fseeko(f, (off_t)off, SEEK_SET) == 0 && fread(buf, 1, (size_t)want, f) == (size_t)want) {
            tp->raw_data.data = buf;
            tp->raw_data.len = (size_t)want;
            tp->has_raw_data = 1;
            buf = NULL;
        }
        free(buf);
        if (f)
            fclose(f);
    }
    return 0;
}

#endif
