/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LD_PRELOAD shim for eio.sh, test-only (nothing in approf loads it): with
 * APPROF_TEST_EIO_AFTER=N in the environment, the first N calls of fsync
 * and fdatasync in the process pass through to libc and every later one
 * fails with EIO, as on a disk that has gone bad; with
 * APPROF_TEST_SYNC_LOG=FILE each call appends a line to FILE (to count
 * them). Without either it only passes through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int fsync(int fd);
int fdatasync(int fd);

static long calls;

/* 1 when this call must fail. */
static int next_fails(void)
{
    const char *after = getenv("APPROF_TEST_EIO_AFTER"), *log = getenv("APPROF_TEST_SYNC_LOG");
    calls++;
    if (log) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            ssize_t w = write(fd, "sync\n", 5);
            (void)w;
            close(fd);
        }
    }
    return after && calls > atol(after);
}

int fsync(int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    if (next_fails()) {
        errno = EIO;
        return -1;
    }
    return real ? real(fd) : 0;
}

int fdatasync(int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (next_fails()) {
        errno = EIO;
        return -1;
    }
    return real ? real(fd) : 0;
}
