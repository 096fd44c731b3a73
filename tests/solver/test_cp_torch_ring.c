/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PyTorch's ring attention under context parallelism (solver/
 * cp_torch_ring.c; docs/context-parallel.md, "PyTorch's ring"): the spec's
 * cp_ring_torch reaches the fabric apsolve reads (written, read back,
 * fingerprinted only when set); the ring's messages carry K and V at the
 * query heads' width and its gradients in f32; its merges are one f32
 * pass a step forward and three (dq, dk, dv) backward, by hand.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "collective.h"
#include "costdb.h"
#include "cp_attention.h"
#include "cp_torch_ring.h"
#include "cunit_run.h"
#include "hardware.h"

#define REL(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b))

static void fabric_of(const ApprofHardwareSpec *hw, CostdbFabric *f)
{
    static CostdbHardware row;
    memset(&row, 0, sizeof row);
    approf_hardware_to_costdb(hw, &row);
    costdb_fabric_from_hardware(&row, f);
}

static void test_field_reaches_fabric(void)
{
    ApprofHardwareSpec hw, back;
    CostdbFabric f;
    char fp0[128], fp1[128], err[256], path[] = "/tmp/approf-cp-torch-ring-XXXXXX";
    FILE *fh;
    int fd;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &hw), 0);
    CU_ASSERT_EQUAL(hw.cp_ring_torch, 0);
    fabric_of(&hw, &f);
    CU_ASSERT_EQUAL(f.cp_ring_torch, 0);
    approf_hardware_fingerprint(&hw, fp0, sizeof fp0);
    hw.cp_ring_torch = 1;
    fabric_of(&hw, &f);
    CU_ASSERT_EQUAL(f.cp_ring_torch, 1);
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    CU_ASSERT(strcmp(fp0, fp1) != 0);
    /* the spec file writes it and reads it back */
    fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    fh = fdopen(fd, "w");
    CU_ASSERT_FATAL(fh != NULL);
    CU_ASSERT_EQUAL(approf_hardware_write_spec(&hw, fh), 0);
    fclose(fh);
    CU_ASSERT_EQUAL(approf_hardware_load(path, &back, err, sizeof err), 0);
    CU_ASSERT_EQUAL(back.cp_ring_torch, 1);
    remove(path);
}

/* One layer of Llama 3.1 8B at cp 2 on h100-sxm: 32768 local tokens, 32
 * query heads of 128 (4096 wide), bf16: the local query 256 MiB, K and V
 * repeated to the query heads 512 MiB, their f32 gradients 1 GiB. */
static void test_by_hand(void)
{
    ApprofHardwareSpec hw;
    CostdbFabric f;
    double q = 32768.0 * 4096 * 2, kv = 2 * q, e = 32768.0 * 4096;
    double fs = 0, bs = 0, fb = 0, bb = 0, mf = 0, mb = 0, sr, sr32, ag;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &hw), 0);
    hw.cp_ring_torch = 1;
    fabric_of(&hw, &f);
    sr = costdb_strided_collective_seconds(&f, COSTDB_COLL_SEND_RECV, kv, 2, 1, 8);
    sr32 = costdb_strided_collective_seconds(&f, COSTDB_COLL_SEND_RECV, 2 * kv, 2, 1, 8);
    apsolve_cp_torch_ring(&f, 0, q, 2.0, 2, 1, 8, 0.0, &fs, &bs, &fb, &bb, &mf, &mb);
    CU_ASSERT(REL(fb, kv));                 /* one send of K and V at 32 heads */
    CU_ASSERT(REL(bb, kv + 2 * 2 * kv));    /* again, and two sends of their f32 gradients */
    CU_ASSERT(REL(fs, sr));
    CU_ASSERT(REL(bs, sr + 2 * sr32));
    /* one merge forward, two steps of dq, dk, dv backward: 4 + 2 + 4 bytes
     * an element of the output */
    CU_ASSERT(REL(mf, costdb_memory_seconds(&f, 10 * e)));
    CU_ASSERT(REL(mb, costdb_memory_seconds(&f, 3 * 2 * 10 * e)));
    CU_ASSERT(mf > 0 && REL(mb, 6 * mf));
    /* the all-gather rotate method: one all-gather of every rank's K and V */
    fs = bs = fb = bb = mf = mb = 0;
    ag = costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_GATHER, 8 * kv, 8, 1, 8);
    apsolve_cp_torch_ring(&f, 1, q, 2.0, 8, 1, 8, 0.0, &fs, &bs, &fb, &bb, &mf, &mb);
    CU_ASSERT(REL(fs, ag));
    CU_ASSERT(REL(fb, 7 * kv));
    CU_ASSERT(REL(mf, costdb_memory_seconds(&f, 7 * 10 * e)));
    CU_ASSERT(REL(mb, costdb_memory_seconds(&f, 3 * 8 * 10 * e)));
    /* under kernels longer than every message only the last gradients'
     * wait is left; the bytes and merges are the same */
    fs = bs = fb = bb = mf = mb = 0;
    apsolve_cp_torch_ring(&f, 0, q, 2.0, 2, 1, 8, 1.0, &fs, &bs, &fb, &bb, &mf, &mb);
    CU_ASSERT(fs == 0);
    CU_ASSERT(REL(bs, sr32));
    CU_ASSERT(REL(fb, kv));
    CU_ASSERT(REL(mf, costdb_memory_seconds(&f, 10 * e)));
    /* a kernel of half the forward message hides half of it */
    fs = bs = fb = bb = mf = mb = 0;
    apsolve_cp_torch_ring(&f, 0, q, 2.0, 2, 1, 8, sr / 2, &fs, &bs, &fb, &bb, &mf, &mb);
    CU_ASSERT(REL(fs, sr / 2));
    CU_ASSERT(REL(bs, fmax(0.0, sr + sr32 - 2.5 * sr / 2) + sr32));
}

/* The ring's step kernel, by hand: the 8B at cp 2 on the torchtitan rows'
 * FlashAttention-2 figures (0.201 at 32768 keys, bench/plans_cases.tsv):
 * 65536 tokens, one sample, 4096 wide; the stage's forward 2 x 2 x 4096 x
 * 65536 x 32768 / 2 flops in 2 kernels. */
static void test_step_by_hand(void)
{
    ApprofHardwareSpec hw;
    CostdbFabric f;
    double flops = 2.0 * 2 * 4096 * 65536.0 * 32768 / 2;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &hw), 0);
    hw.attention_eff_seq[3] = hw.attention_eff_seq[4] = 0.201;
    hw.attention_eff_seq[0] = 0.162;
    hw.attention_eff_seq[1] = 0.18;
    hw.attention_eff_seq[2] = 0.189;
    fabric_of(&hw, &f);
    CU_ASSERT(REL(apsolve_cp_ring_step_seconds(&f, 65536, 2, 2, 1.0, 4096.0),
                  flops / 2 / (f.peak_flops16 * 0.201)));
    CU_ASSERT(apsolve_cp_ring_step_seconds(&f, 65536, 1, 2, 1.0, 4096.0) == 0);
}

static void test_nothing_added(void)
{
    ApprofHardwareSpec hw;
    CostdbFabric f;
    double fs = 0, bs = 0, fb = 0, bb = 0, mf = 0, mb = 0;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &hw), 0);
    fabric_of(&hw, &f);
    apsolve_cp_torch_ring(&f, 0, 1e6, 2.0, 1, 1, 8, 0.0, &fs, &bs, &fb, &bb, &mf, &mb);
    apsolve_cp_torch_ring(&f, 0, 0.0, 2.0, 4, 1, 8, 0.0, &fs, &bs, &fb, &bb, &mf, &mb);
    CU_ASSERT(fs == 0 && bs == 0 && fb == 0 && bb == 0 && mf == 0 && mb == 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"cp_ring_torch reaches the fabric", test_field_reaches_fabric},
        {"PyTorch's ring by hand", test_by_hand},
        {"the ring's step kernel by hand", test_step_by_hand},
        {"nothing added", test_nothing_added},
    };
    return CUNIT_RUN("solver-cp-torch-ring", tests);
}
