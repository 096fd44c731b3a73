/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers the report writers share: dtype sizes and JAX names, shape
 * text, Alpa's GB, HTML and JSON escaping, Python option dicts.
 */
#include <string.h>

#include "report_int.h"

int rep_dtype_bytes(const char *dtype)
{
    if (!dtype)
        return 4;
    if (!strcmp(dtype, "f16") || !strcmp(dtype, "bf16") || !strcmp(dtype, "float16") ||
        !strcmp(dtype, "bfloat16") || !strcmp(dtype, "i16"))
        return 2;
    if (!strcmp(dtype, "f64") || !strcmp(dtype, "float64") || !strcmp(dtype, "i64") ||
        !strcmp(dtype, "int64"))
        return 8;
    if (!strcmp(dtype, "i8") || !strcmp(dtype, "int8") || !strcmp(dtype, "u8") ||
        !strcmp(dtype, "bool"))
        return 1;
    return 4;
}

const char *rep_dtype_jax(const char *dtype)
{
    static const struct { const char *a, *b; } map[] = {
        {"f32", "float32"}, {"f16", "float16"}, {"bf16", "bfloat16"}, {"f64", "float64"},
        {"i32", "int32"}, {"i64", "int64"}, {"i8", "int8"}, {"u8", "uint8"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (dtype && !strcmp(dtype, map[i].a))
            return map[i].b;
    return dtype && *dtype ? dtype : "float32";
}

void rep_shape_text(const char *shape, int jax, char *out, size_t len)
{
    int64_t dims[APREPORT_MAX_DIMS];
    int n = apreport_shape_parse(shape, dims, APREPORT_MAX_DIMS);
    size_t pos = 0;
    if (!len)
        return;
    out[0] = '\0';
    if (n < 0) {
        snprintf(out, len, "%s", shape ? shape : "");
        return;
    }
    pos += (size_t)snprintf(out, len, "%s", jax ? "[" : "(");
    for (int i = 0; i < n && pos < len; i++)
        pos += (size_t)snprintf(out + pos, len - pos, "%s%lld", i ? (jax ? "," : ", ") : "",
                                (long long)dims[i]);
    if (pos < len)
        snprintf(out + pos, len - pos, "%s", jax ? "]" : n == 1 ? ",)" : ")");
}

double rep_gb(int64_t bytes)
{
    return (double)bytes / (double)(1LL << 30);
}

void rep_html_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

void rep_option_dict(int force_batch_dim, char *out, size_t len)
{
    if (force_batch_dim < 0)
        snprintf(out, len, "{}");
    else
        snprintf(out, len, "{'force_batch_dim_to_mesh_dim': %d}", force_batch_dim);
}
