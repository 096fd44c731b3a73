/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA backend loader without a GPU: a missing or broken module is
 * APPROF_ENODEV with a one-line reason; a fake module (FAKE_MODULE_DIR)
 * shows that measurements pass through with the phase's collectives added
 * (spec model, or the hook), that failed entries are not touched, and that
 * the module's messages reach the caller on one line; the real module
 * (REAL_MODULE_BUILT=1), with no device visible, says "no CUDA device".
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cuda/probe.h"
#include "cunit_run.h"

static int one_line(const char *s)
{
    return strchr(s, '\n') == NULL && strchr(s, '\r') == NULL;
}

static void test_missing_module(void)
{
    ApprofBackend b;
    ApprofProbeRequest req;
    ApprofProbeInfo info;
    char err[512], path[512];

    setenv("APPROF_MODULE_DIR", "/nonexistent/approf-test-dir", 1);
    approf_cuda_module_path(path, sizeof path);
    CU_ASSERT_STRING_EQUAL(path, "/nonexistent/approf-test-dir/approf-cuda.so");
    memset(&b, 0xab, sizeof b);
    CU_ASSERT_EQUAL(approf_backend_cuda(&b, err, sizeof err), APPROF_ENODEV);
    CU_ASSERT_PTR_NULL(b.measure);
    CU_ASSERT_PTR_NULL(b.ctx);
    CU_ASSERT(one_line(err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/approf-test-dir/approf-cuda.so"));
    memset(&req, 0, sizeof req);
    CU_ASSERT_EQUAL(approf_cuda_probe(&req, &info, err, sizeof err), APPROF_ENODEV);
    CU_ASSERT(one_line(err));
    /* No err buffer is fine too. */
    CU_ASSERT_EQUAL(approf_backend_cuda(&b, NULL, 0), APPROF_ENODEV);
    unsetenv("APPROF_MODULE_DIR");
}

static void test_broken_module(void)
{
    char dir[] = "/tmp/approf-test-mod-XXXXXX", file[600], err[512];
    ApprofBackend b;
    FILE *f;

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/approf-cuda.so", dir);
    f = fopen(file, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("not an ELF file\n", f);
    fclose(f);
    setenv("APPROF_MODULE_DIR", dir, 1);
    CU_ASSERT_EQUAL(approf_backend_cuda(&b, err, sizeof err), APPROF_ENODEV);
    CU_ASSERT(one_line(err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot load"));
    unsetenv("APPROF_MODULE_DIR");
    unlink(file);
    rmdir(dir);
}

static double hook(void *user, const ApprofCollective *c, const ApprofHardwareSpec *hw)
{
    (void)hw;
    (*(int *)user)++;
    return c->bytes * 1e-9;
}

static void test_fake_module(void)
{
    const char *dir = getenv("FAKE_MODULE_DIR");
    ApprofBackend b, a;
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    ApprofKernel ks[3];
    ApprofCollective cs[2];
    ApprofMeasurement m;
    char err[512];
    double comm;
    int calls = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    setenv("APPROF_MODULE_DIR", dir, 1);
    CU_ASSERT_EQUAL_FATAL(approf_backend_cuda(&b, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(b.name, "cuda");
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("a100-40g", &hw), 0);
    memset(&p, 0, sizeof p);
    memset(ks, 0, sizeof ks);
    memset(cs, 0, sizeof cs);
    p.kernels[1] = ks;
    p.n_kernels[1] = 3;
    cs[0].kind = APPROF_COLL_ALL_REDUCE;
    cs[0].group_size = 4;
    cs[0].bytes = 64e6;
    cs[1].kind = APPROF_COLL_ALL_GATHER;
    cs[1].group_size = 2;
    cs[1].crosses_hosts = 1;
    cs[1].bytes = 8e6;
    p.colls[1] = cs;
    p.n_colls[1] = 2;
    p.peak_memory[1] = 1000;
    comm = approf_collective_seconds(&hw, cs[0].kind, cs[0].bytes, 4, 0) +
           approf_collective_seconds(&hw, cs[1].kind, cs[1].bytes, 2, 1);
    CU_ASSERT(comm > 0);
    CU_ASSERT_EQUAL(b.measure(b.ctx, &p, 1, &hw, &m), 0);
    CU_ASSERT_EQUAL(m.status, 0);
    CU_ASSERT_DOUBLE_EQUAL(m.compute_cost, 1.5 + comm, 1e-12);
    CU_ASSERT_EQUAL(m.peak_memory, 1000);
    CU_ASSERT_EQUAL(m.repeats, 3);
    /* Phase 0 has neither kernels nor collectives. */
    CU_ASSERT_EQUAL(b.measure(b.ctx, &p, 0, &hw, &m), 0);
    CU_ASSERT_DOUBLE_EQUAL(m.compute_cost, 0.0, 0.0);
    /* The hook replaces the spec model. */
    CU_ASSERT_EQUAL(approf_backend_cuda_set_coll_cost(&b, hook, &calls), 0);
    CU_ASSERT_EQUAL(b.measure(b.ctx, &p, 1, &hw, &m), 0);
    CU_ASSERT_DOUBLE_EQUAL(m.compute_cost, 1.5 + 0.064 + 0.008, 1e-12);
    CU_ASSERT_EQUAL(calls, 2);
    /* An out-of-memory entry stays +inf with its message. */
    p.peak_memory[1] = (int64_t)2 << 30;
    CU_ASSERT_EQUAL(b.measure(b.ctx, &p, 1, &hw, &m), 0);
    CU_ASSERT_EQUAL(m.status, 1);
    CU_ASSERT(isinf(m.compute_cost));
    CU_ASSERT_STRING_EQUAL(m.error, "out of memory");
    CU_ASSERT_EQUAL(calls, 2);
    CU_ASSERT_EQUAL(b.measure(b.ctx, &p, 2, &hw, &m), APPROF_EINVAL);
    approf_backend_destroy(&b);
    CU_ASSERT_PTR_NULL(b.measure);
    /* The hook only fits the CUDA backend. */
    CU_ASSERT_EQUAL(approf_backend_analytic(&a), 0);
    CU_ASSERT_EQUAL(approf_backend_cuda_set_coll_cost(&a, hook, &calls), APPROF_EINVAL);
    /* Devices, one backend per device, and the device information. */
    {
        ApprofProbeInfo info;
        setenv("FAKE_APPROF_DEVICES", "3", 1);
        CU_ASSERT_EQUAL(approf_backend_cuda_on(2, &b, err, sizeof err), 0);
        CU_ASSERT_STRING_EQUAL(b.name, "cuda");
        CU_ASSERT_PTR_NULL(b.join);  /* the fake module has none */
        approf_backend_destroy(&b);
        CU_ASSERT_EQUAL(approf_backend_cuda_on(3, &b, err, sizeof err), APPROF_ENODEV);
        CU_ASSERT_STRING_EQUAL(err, "no CUDA device 3: this process sees 3");
        CU_ASSERT_EQUAL(approf_cuda_device_info(&info, err, sizeof err), 0);
        CU_ASSERT_STRING_EQUAL(info.gpu_model, "Fake GPU 40GB");
        CU_ASSERT_EQUAL(info.device_count, 3);
        unsetenv("FAKE_APPROF_DEVICES");
    }
    /* The module's own no-device message, flattened to one line. */
    setenv("FAKE_APPROF_NODEV", "1", 1);
    {
        ApprofProbeInfo info;
        CU_ASSERT_EQUAL(approf_cuda_device_info(&info, err, sizeof err), APPROF_ENODEV);
        CU_ASSERT_STRING_EQUAL(err, "no CUDA device: fake module second line");
    }
    CU_ASSERT_EQUAL(approf_backend_cuda(&b, err, sizeof err), APPROF_ENODEV);
    CU_ASSERT_STRING_EQUAL(err, "no CUDA device: fake module second line");
    unsetenv("FAKE_APPROF_NODEV");
    unsetenv("APPROF_MODULE_DIR");
}

static void test_real_module_nodev(void)
{
    const char *built = getenv("REAL_MODULE_BUILT");
    ApprofBackend b;
    ApprofProbeRequest req;
    ApprofProbeInfo info;
    char err[512];

    if (!built || strcmp(built, "1"))
        return;                     /* toolkit absent: covered by the missing-module test */
    /* No device visible, whether or not the machine has one. */
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    unsetenv("APPROF_MODULE_DIR");
    CU_ASSERT_EQUAL(approf_backend_cuda(&b, err, sizeof err), APPROF_ENODEV);
    CU_ASSERT(one_line(err));
    CU_ASSERT_EQUAL(strncmp(err, "no CUDA device: cudaGetDeviceCount: ", 36), 0);
    CU_ASSERT_PTR_NULL(b.measure);
    memset(&req, 0, sizeof req);
    CU_ASSERT_EQUAL(approf_cuda_probe(&req, &info, err, sizeof err), APPROF_ENODEV);
    CU_ASSERT_EQUAL(strncmp(err, "no CUDA device: ", 16), 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"missing_module", test_missing_module},
        {"broken_module", test_broken_module},
        {"fake_module", test_fake_module},
        {"real_module_nodev", test_real_module_nodev},
    };
    return CUNIT_RUN("cuda-loader", tests);
}
