/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A reader of the JSON the database stores (costdb-internal): plan options
 * (plan_options.c), hardware capabilities (collective.c). Recursive descent
 * over objects, strings, integers, numbers, booleans and null; strict about
 * syntax, bounded in depth and string length, every error "NAME: column N:
 * ...". The text is input: someone else may have written the database.
 */
#ifndef COSTDB_JSON_READ_H
#define COSTDB_JSON_READ_H

#include <stddef.h>

#define CJR_MAX_DEPTH 8

typedef struct CjrParser {
    const char *s, *p;
    const char *what;                 /* the field named in messages ("options") */
    char *err;
    size_t errlen;
    int failed;
} CjrParser;

/* One member of an object: the value at ps->p belongs to key; consume it. */
typedef int (*CjrMemberFn)(CjrParser *ps, const char *key, void *ctx, int depth);

/* Records the first error (COSTDB_EPARSE). */
int cjr_fail(CjrParser *ps, const char *fmt, ...);
void cjr_skip_ws(CjrParser *ps);
/* A string literal into out (len bytes; longer fails). */
int cjr_string(CjrParser *ps, char *out, size_t len);
/* An integer in [lo, hi]. */
int cjr_int(CjrParser *ps, long long lo, long long hi, long long *v);
/* A finite number. */
int cjr_number(CjrParser *ps, double *v);
int cjr_bool(CjrParser *ps, int *v);
/* Skips any value (a key the reader does not know). */
int cjr_skip_value(CjrParser *ps, int depth);
/* An object whose members go to fn. */
int cjr_object(CjrParser *ps, CjrMemberFn fn, void *ctx, int depth);

#endif
