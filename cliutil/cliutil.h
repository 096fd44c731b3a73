/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line helpers shared by approf, apsolve and apreport (as curl's
 * tool_paramhlp): usage errors and failures in one format, and the number,
 * size, mesh and list parsers every option goes through. Depends on libc
 * only; each main() names its program first.
 */
#ifndef CLIUTIL_H
#define CLIUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "exit_status.h" /* util/: the one family of exit statuses */

/* The name messages start with ("approf: ..."); a main() sets it before
 * anything else. */
void cli_set_program(const char *name);
const char *cli_program(void);

/* Prints "<program>: <message>" and "Try '<program> [cmd] --help'" to
 * stderr (cmd NULL or "": the program's own help); returns APPROF_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints "<program>: <message>" to stderr; returns APPROF_EXIT_FAIL. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A whole decimal integer in [lo, hi] (digits and an optional leading
 * '-'; no blanks). 0 or -1. */
int cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* A finite double in [lo, hi]. 0 or -1. */
int cli_parse_double(const char *s, double lo, double hi, double *out);
/* "NxM", both in 1 .. 2^20. 0 or -1. */
int cli_parse_mesh(const char *s, int *n, int *m);
/* A byte count in [lo, hi]: an integer with an optional binary suffix K,
 * M, G or T (either case), which may be followed by "iB" or "B" (KiB, KB:
 * 1024); a plain count may end in "B". Digits first: no sign, no
 * blanks. 0 or -1 (also on overflow). */
int cli_parse_bytes(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* A comma-separated list: each item (NUL-terminated copy) through item,
 * which returns its value (>= 0) or -1. Returns the count (<= max), or -1
 * for an empty list or item, a bad item or more than max items. */
int cli_parse_list(const char *s, int64_t (*item)(const char *), int64_t *out, int max);

/* Table-driven enum options: a choice table ends with {NULL, 0}; the
 * first entry is the one named first in messages. */
typedef struct {
    const char *name;
    int value;
} CliChoice;

/* The --format choice of the commands that print text or JSON: "text"
 * (CLI_FORMAT_TEXT) or "json" (CLI_FORMAT_JSON). */
enum { CLI_FORMAT_TEXT = 0, CLI_FORMAT_JSON = 1 };
extern const CliChoice cli_text_json[];

/* The value of name s in choices: 0, or -1 when s is none of them. */
int cli_parse_choice(const char *s, const CliChoice *choices, int *out);
/* "a|b|c": the names of choices, in order, into buf (truncated to len). */
const char *cli_choice_names(const CliChoice *choices, char *buf, size_t len);
/* Option --opt of command cmd (NULL: the program's own) set to s: 0 with
 * *out set, or the usage error "--opt: 's' is not one of a|b|c" (exit
 * status APPROF_EXIT_USAGE). */
int cli_choice_option(const char *cmd, const char *opt, const char *s, const CliChoice *choices,
                      int *out);

#endif
