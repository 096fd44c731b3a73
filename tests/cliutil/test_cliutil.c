/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cliutil: sizes, integers, doubles, meshes and lists, accepted and
 * refused (the forms the three tools' options document), and the usage
 * message format with the program name.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"
#include "cunit_run.h"

static void test_bytes(void)
{
    static const struct { const char *s; int64_t v; } ok[] = {
        {"1", 1}, {"123B", 123}, {"4K", 4096}, {"4k", 4096}, {"4KiB", 4096}, {"4KB", 4096},
        {"1536M", 1536LL << 20}, {"1536MiB", 1536LL << 20}, {"1536MB", 1536LL << 20},
        {"2G", 2LL << 30}, {"2GiB", 2LL << 30}, {"8589934592", 8LL << 30},
        {"1T", 1LL << 40}, {"2TiB", 2LL << 40}, {"3TB", 3LL << 40}, {"3t", 3LL << 40},
    };
    static const char *bad[] = {"", "0", "-1G", "5iB", "5Gi", "5iK", "1.5G", "G", "4P", "4KiBx",
                                "99999999999999999999", "9223372036854775807G", " 4K", "4 K"};
    int64_t v;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        v = -1;
        CU_ASSERT_EQUAL(cli_parse_bytes(ok[i].s, 1, INT64_MAX, &v), 0);
        CU_ASSERT_EQUAL(v, ok[i].v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(cli_parse_bytes(bad[i], 1, INT64_MAX, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_bytes(NULL, 1, 10, &v), -1);
    /* the bounds apply to the value with its suffix */
    CU_ASSERT_EQUAL(cli_parse_bytes("1024G", 1, (int64_t)1 << 40, &v), 0);
    CU_ASSERT_EQUAL(cli_parse_bytes("1025G", 1, (int64_t)1 << 40, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_bytes("1K", 2048, INT64_MAX, &v), -1);
}

static void test_numbers(void)
{
    int64_t v;
    double d;
    int n, m;
    CU_ASSERT_EQUAL(cli_parse_int("42", 1, 100, &v), 0);
    CU_ASSERT_EQUAL(v, 42);
    CU_ASSERT_EQUAL(cli_parse_int("101", 1, 100, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_int("4x", 1, 100, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_int("", 1, 100, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_int(" 42", 1, 100, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_int("+42", 1, 100, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_int("-3", -5, 100, &v), 0);
    CU_ASSERT_EQUAL(v, -3);
    CU_ASSERT_EQUAL(cli_parse_int("99999999999999999999", 1, INT64_MAX, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_double("0.5", 0, 1, &d), 0);
    CU_ASSERT_DOUBLE_EQUAL(d, 0.5, 0);
    CU_ASSERT_EQUAL(cli_parse_double("nan", 0, 1, &d), -1);
    CU_ASSERT_EQUAL(cli_parse_double("inf", 0, 1e300, &d), -1);
    CU_ASSERT_EQUAL(cli_parse_mesh("2x8", &n, &m), 0);
    CU_ASSERT(n == 2 && m == 8);
    CU_ASSERT_EQUAL(cli_parse_mesh("2X8", &n, &m), 0);
    CU_ASSERT_EQUAL(cli_parse_mesh("0x8", &n, &m), -1);
    CU_ASSERT_EQUAL(cli_parse_mesh("2x", &n, &m), -1);
    CU_ASSERT_EQUAL(cli_parse_mesh("2x8x1", &n, &m), -1);
    CU_ASSERT_EQUAL(cli_parse_mesh("2x2000000", &n, &m), -1);
}

static int64_t small(const char *s)
{
    int64_t v;
    return cli_parse_int(s, 0, 9, &v) ? -1 : v;
}

static void test_list(void)
{
    int64_t out[3];
    CU_ASSERT_EQUAL(cli_parse_list("1,2,3", small, out, 3), 3);
    CU_ASSERT(out[0] == 1 && out[2] == 3);
    CU_ASSERT_EQUAL(cli_parse_list("1,2,3,4", small, out, 3), -1);
    CU_ASSERT_EQUAL(cli_parse_list("1,,3", small, out, 3), -1);
    CU_ASSERT_EQUAL(cli_parse_list("1,x", small, out, 3), -1);
    CU_ASSERT_EQUAL(cli_parse_list("", small, out, 3), -1);
}

/* "<program>: <message>" then the help hint, on stderr; exit status 2 */
static void test_usage_message(void)
{
    char path[] = "/tmp/cliutil-XXXXXX", buf[256] = "";
    int fd = mkstemp(path), saved = dup(2);
    CU_ASSERT_FATAL(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, 2);
    cli_set_program("apsolve");
    CU_ASSERT_EQUAL(cli_usage_error(NULL, "bad --sweep '%s'", "x"), APPROF_EXIT_USAGE);
    cli_set_program("approf");
    CU_ASSERT_EQUAL(cli_usage_error("probe", "--max-bytes: %d", 7), APPROF_EXIT_USAGE);
    CU_ASSERT_EQUAL(cli_fail("%s", "gone"), APPROF_EXIT_FAIL);
    {
        static const CliChoice backends[] = {{"auto", 0}, {"model", 1}, {"cuda", 2}, {NULL, 0}};
        int v = -1;
        CU_ASSERT_EQUAL(cli_choice_option("sweep", "backend", "cuda", backends, &v), 0);
        CU_ASSERT_EQUAL(v, 2);
        CU_ASSERT_EQUAL(cli_choice_option("sweep", "backend", "gpu", backends, &v), APPROF_EXIT_USAGE);
        CU_ASSERT_EQUAL(v, 2);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    CU_ASSERT_FATAL(f != NULL);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    close(fd);
    unlink(path);
    CU_ASSERT_STRING_EQUAL(buf, "apsolve: bad --sweep 'x'\nTry 'apsolve --help'\n"
                                "approf: --max-bytes: 7\nTry 'approf probe --help'\n"
                                "approf: gone\n"
                                "approf: --backend: 'gpu' is not one of auto|model|cuda\n"
                                "Try 'approf sweep --help'\n");
}

static void test_choices(void)
{
    static const CliChoice formats[] = {{"text", 0}, {"json", 1}, {NULL, 0}};
    static const CliChoice none[] = {{NULL, 0}};
    char names[16];
    int v = -1;
    CU_ASSERT_EQUAL(cli_parse_choice("json", formats, &v), 0);
    CU_ASSERT_EQUAL(v, 1);
    CU_ASSERT_EQUAL(cli_parse_choice("JSON", formats, &v), -1);  /* exact names only */
    CU_ASSERT_EQUAL(cli_parse_choice("", formats, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_choice(NULL, formats, &v), -1);
    CU_ASSERT_EQUAL(cli_parse_choice("text", none, &v), -1);
    CU_ASSERT_EQUAL(v, 1);
    CU_ASSERT_STRING_EQUAL(cli_choice_names(formats, names, sizeof names), "text|json");
    CU_ASSERT_STRING_EQUAL(cli_choice_names(none, names, sizeof names), "");
    /* a name that does not fit is left out whole */
    CU_ASSERT_STRING_EQUAL(cli_choice_names(formats, names, 8), "text");
}

int main(void)
{
    static const CunitTest tests[] = {
        {"byte sizes", test_bytes},
        {"integers, doubles, meshes", test_numbers},
        {"lists", test_list},
        {"usage messages", test_usage_message},
        {"choice options", test_choices},
    };
    return CUNIT_RUN("cliutil", tests);
}
