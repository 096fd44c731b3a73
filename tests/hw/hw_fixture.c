/* SPDX-License-Identifier: Apache-2.0 */
/* What the profiler/hw unit tests share (see hw_fixture.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "hw_fixture.h"

void hw_fixture_round_spec(ApprofHardwareSpec *hw)
{
    memset(hw, 0, sizeof *hw);
    snprintf(hw->name, sizeof hw->name, "t");
    hw->peak_flops[APPROF_F32] = 20e12;
    hw->peak_flops[APPROF_F16] = 300e12;
    hw->peak_flops[APPROF_BF16] = 300e12;
    hw->memory_bandwidth = 2000e9;
    hw->memory_efficiency = 0.5;
    hw->device_memory = (int64_t)80 << 30;
    hw->gpus_per_host = 8;
    hw->intra_host_bandwidth = 300e9;
    hw->inter_host_bandwidth = 25e9;
    hw->gemm_efficiency = 0.5;
    hw->conv_efficiency = 0.25;
}

ApprofCollective hw_fixture_coll(ApprofCollKind kind, double bytes, int group, int hosts)
{
    ApprofCollective c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.bytes = bytes;
    c.group_size = group;
    c.hosts = hosts;
    c.crosses_hosts = hosts > 1;
    return c;
}

void hw_fixture_phase(HwFixturePhase *ph, ApprofDtype gemm_dtype, double gemm_flops)
{
    memset(ph, 0, sizeof *ph);
    ph->ks[0].kind = APPROF_K_GEMM;
    ph->ks[0].dtype = gemm_dtype;
    ph->ks[0].flops = gemm_flops;
    ph->ks[1].kind = APPROF_K_ELEMENTWISE;
    ph->ks[1].bytes = 0.05e12;
    ph->c = hw_fixture_coll(APPROF_COLL_ALL_GATHER, 8e9, 8, 1);
    ph->p.kernels[1] = ph->ks;
    ph->p.n_kernels[1] = 2;
    ph->p.colls[1] = &ph->c;
    ph->p.n_colls[1] = 1;
}

void hw_fixture_grad_sync(HwFixtureGradSync *g, double fwd_bytes, double bwd_bytes)
{
    memset(g, 0, sizeof *g);
    g->fwd.kind = g->bwd.kind = APPROF_K_ELEMENTWISE;
    g->fwd.bytes = fwd_bytes;
    g->bwd.bytes = bwd_bytes;
    g->p.kernels[0] = &g->fwd;
    g->p.n_kernels[0] = 1;
    g->p.kernels[1] = &g->bwd;
    g->p.n_kernels[1] = 1;
    g->p.n_apply_colls = 1;
    g->p.apply_colls[0] = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, 15e9, 8, 1);
}

static char tmp_path[64];

/* A fresh empty temporary file, its path in tmp_path, open for writing. */
static FILE *fresh_tmp(void)
{
    int fd;
    FILE *f;
    snprintf(tmp_path, sizeof tmp_path, "/tmp/approf-hw-test-XXXXXX");
    fd = mkstemp(tmp_path);
    if (fd < 0)
        return NULL;
    f = fdopen(fd, "w");
    if (!f)
        close(fd);
    return f;
}

const char *hw_fixture_tmp(const char *text)
{
    FILE *f;
    hw_fixture_tmp_remove();
    f = fresh_tmp();
    if (!f)
        return NULL;
    fputs(text, f);
    fclose(f);
    return tmp_path;
}

void hw_fixture_tmp_remove(void)
{
    if (tmp_path[0])
        unlink(tmp_path);
    tmp_path[0] = '\0';
}

void hw_fixture_refused(const char *text, int line, const char *expect)
{
    ApprofHardwareSpec hw;
    char err[512] = "", want[600];
    const char *p = hw_fixture_tmp(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_EPARSE);
    snprintf(want, sizeof want, "%s:%d: %s", p, line, expect);
    if (strncmp(err, want, strlen(want)) != 0) {
        fprintf(stderr, "\ngot  '%s'\nwant '%s...'\n", err, want);
        CU_FAIL("wrong error message");
    }
}

int hw_fixture_reload(const ApprofHardwareSpec *hw, ApprofHardwareSpec *back, char *err,
                      size_t errlen)
{
    FILE *f;
    int rc;
    hw_fixture_tmp_remove();
    f = fresh_tmp();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(approf_hardware_write_spec(hw, f), APPROF_OK);
    fclose(f);
    rc = approf_hardware_load(tmp_path, back, err, errlen);
    hw_fixture_tmp_remove();
    return rc;
}

void hw_fixture_flag_key(const char *key, int (*get)(const ApprofHardwareSpec *hw))
{
    ApprofHardwareSpec hw, back;
    CostdbHardware row;
    char err[512] = "", fp0[128], fp1[128], text[1024], stored[160];
    const char *p = hw_fixture_tmp(HW_FIXTURE_REQUIRED);

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(get(&hw), 0);
    approf_hardware_fingerprint(&hw, fp0, sizeof fp0);
    approf_hardware_to_costdb(&hw, &row);
    CU_ASSERT_PTR_NULL(strstr(row.capabilities, key));

    snprintf(text, sizeof text, "%s%s = 1\n", HW_FIXTURE_REQUIRED, key);
    p = hw_fixture_tmp(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(get(&hw), 1);
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    CU_ASSERT(strcmp(fp0, fp1) != 0);
    approf_hardware_to_costdb(&hw, &row);
    snprintf(stored, sizeof stored, "\"%s\": 1", key);
    CU_ASSERT_PTR_NOT_NULL(strstr(row.capabilities, stored));
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(get(&back), 1);
    approf_hardware_fingerprint(&back, fp0, sizeof fp0);
    CU_ASSERT_STRING_EQUAL(fp0, fp1);

    snprintf(text, sizeof text, "%s%s = 2\n", HW_FIXTURE_REQUIRED, key);
    snprintf(stored, sizeof stored, "field '%s'", key);
    hw_fixture_refused(text, 10, stored);
    hw_fixture_tmp_remove();
}
