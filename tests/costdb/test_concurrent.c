/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Integration test: two processes open the same new database file at the
 * same moment (both race to migrate it), each creates its own sweep and
 * writes entries in many small transactions. Neither may see SQLITE_BUSY
 * (busy_timeout and BEGIN IMMEDIATE must absorb the contention) and every
 * entry of both must be in the file afterwards.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "costdb.h"
#include "testutil.h"

#define BATCHES 40
#define PER_BATCH 10
#define LAYERS 20

/* The child's work; returns its exit status. */
static int writer(const char *path, int who, int go_fd)
{
    static const CostdbSubmesh sm[] = {{0, 1, 1}};
    static const CostdbConfig cf[] = {{0, 0, 1, 1, 0}};
    CostdbSweep s;
    Costdb *db = NULL;
    char err[1024], c;
    int rc, k = 0;
    if (read(go_fd, &c, 1) != 1)
        return 3;
    rc = costdb_open(path, 0, &db, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "writer %d: open: %s\n", who, err);
        return 1;
    }
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "writer-%d", who);
    s.cluster_hosts = s.cluster_gpus = 1;
    s.global_batch = s.micro_batches = 1;
    s.num_layers = 2 * LAYERS; /* entries reach layer 9 + 19 (costdb refuses past num_layers) */
    snprintf(s.backend, sizeof s.backend, "model");
    if ((rc = costdb_sweep_create(db, &s, sm, 1, cf, 1)) < 0)
        goto fail;
    for (int b = 0; b < BATCHES; b++) {
        CostdbEntry e[PER_BATCH];
        memset(e, 0, sizeof e);
        for (int i = 0; i < PER_BATCH; i++, k++) {
            e[i].start_layer = k / (2 * LAYERS);
            e[i].end_layer = e[i].start_layer + (k / 2) % LAYERS;
            e[i].phase = (k % 2) ? COSTDB_BWD : COSTDB_FWD;
            e[i].compute_cost = 0.001 * k + who;
            e[i].repeats = 1;
        }
        if ((rc = costdb_begin(db)) < 0 ||
            (rc = costdb_entries_put(db, s.id, e, PER_BATCH, 0)) < 0 ||
            (rc = costdb_commit(db)) < 0)
            goto fail;
    }
    costdb_close(&db);
    return 0;
fail:
    fprintf(stderr, "writer %d: %s (%s)\n", who, costdb_strerror(rc), costdb_errmsg(db));
    costdb_close(&db);
    return rc == COSTDB_EBUSY ? 2 : 1;
}

static void test_two_writers(void)
{
    const char *path = tu_path("shared.db");
    int go[2];
    pid_t pid[2];
    Costdb *db = NULL;
    CostdbSweep *list = NULL;
    size_t n = 0;
    tu_unlink_db(path);
    CU_ASSERT_EQUAL_FATAL(pipe(go), 0);
    for (int w = 0; w < 2; w++) {
        pid[w] = fork();
        CU_ASSERT_FATAL(pid[w] >= 0);
        if (pid[w] == 0) {
            close(go[1]);
            _exit(writer(path, w, go[0]));
        }
    }
    close(go[0]);
    /* Release both at once. */
    CU_ASSERT_EQUAL(write(go[1], "gg", 2), 2);
    close(go[1]);
    for (int w = 0; w < 2; w++) {
        int status = 0;
        CU_ASSERT_EQUAL(waitpid(pid[w], &status, 0), pid[w]);
        CU_ASSERT(WIFEXITED(status));
        CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    }
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_sweep_list(db, &list, &n), 0);
    CU_ASSERT_EQUAL(n, 2);
    for (size_t i = 0; i < n; i++) {
        int64_t count = 0;
        CU_ASSERT_EQUAL(costdb_entries_count(db, list[i].id, &count), 0);
        CU_ASSERT_EQUAL(count, BATCHES * PER_BATCH);
    }
    free(list);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(path, "stage_profile"), 2 * BATCHES * PER_BATCH);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"two processes, one file", test_two_writers},
    };
    return TU_RUN("costdb concurrency", tests);
}
