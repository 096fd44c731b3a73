/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one JSON writer of every tool (json_write.c): string literals with
 * one escaping rule, to a stream or into a buffer, and numbers printed
 * one way. apsolve's and apreport's JSON, approf's --format json, and the
 * JSON texts the database stores (plan options, hardware capabilities)
 * all go through it; costdb/json_read.c reads the stored texts back.
 */
#ifndef UTIL_JSON_WRITE_H
#define UTIL_JSON_WRITE_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes s as a JSON string literal ("..." with \", \\, \n, \t and
 * \u00XX escapes for the other control characters; NULL as ""). The one
 * JSON string writer of every tool. */
void costdb_json_string(FILE *f, const char *s);
/* The body of that literal (the text between the quotes, by the same
 * rule) into out: the first len - 1 bytes of it, always terminated when
 * len > 0. Returns the length of the whole body, as snprintf does: the
 * body was cut when the result is >= len. s NULL: "". */
size_t costdb_json_escape(char *out, size_t len, const char *s);
/* Writes v as a JSON number: the shortest of %.15g, %.16g and %.17g that
 * reads back (strtod) as exactly v, so every tool prints one value one way
 * and no digit is lost; null when v is not finite. The one JSON number
 * writer of every tool. */
void costdb_json_number(FILE *f, double v);
/* The text costdb_json_number writes, in buf (at least 32 bytes; else "").
 * Returns buf. */
char *costdb_json_number_text(double v, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
