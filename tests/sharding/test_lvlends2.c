/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ends of a build's programs written in place (docs/performance.md,
 * "The ends' runs written in place, a collective in three words (issue
 * 38, lvlends2)"): the accumulation adds (shard_push_grad_accum) and
 * ZeRO-3's per-module collectives (shard_apply_zero, serial) are written
 * into room made once, not pushed one at a time; the signature hashes a
 * collective's four int fields two to a word. Checked on a synthetic
 * stage against the rules written out here: an add per op with
 * parameters (shard_grad_accum_kernel of its elements, its digest, the
 * op set, after the backward's kernels, which stay as they were), ZeRO-3's
 * forward all-gathers one per module of its share of S, in order; and a
 * program's signature (shard_finish_program) told apart from the same
 * program with one collective's field changed, two fields' values
 * swapped among them included, and equal to a copy's; its text what
 * snprintf's "%016llx%016llx" writes, now written digit by digit.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "costdb.h"
#include "graph.h"
#include "hash.h"
#include "sharding/program_int.h"

enum { N_OPS = 19, N_T = 48 };

typedef struct {
    ApprofGraph g;
    ApprofOp ops[N_OPS];
    ApprofTensor tensors[N_T];
    TInfo ti[N_T];
    int t_first[N_T];
    double op_param[N_OPS];
    int param_ops[N_OPS];
    int blk[3];
} Fixture;

/* Op o reads an activation and none (o % 3 == 2) or one or two
 * parameters, of sizes repeated and not (more than the adds' memo of
 * eight sizes). */
static void fixture_make(Fixture *f)
{
    memset(f, 0, sizeof *f);
    f->g.dtype = APPROF_BF16;
    f->g.ops = f->ops;
    f->g.n_ops = N_OPS;
    f->g.tensors = f->tensors;
    f->g.n_tensors = N_T;
    for (int i = 0; i < N_T; i++)
        f->t_first[i] = -1;
    for (int o = 0, t = 0; o < N_OPS; o++) {
        ApprofOp *op = &f->ops[o];
        int np = o % 3 == 2 ? 0 : 1 + o % 2;
        CU_ASSERT_FATAL(t + 1 + np <= N_T);
        f->tensors[t].role = APPROF_TENSOR_ACT;
        op->inputs[op->n_inputs++] = t++;
        for (int k = 0; k < np; k++, t++) {
            f->tensors[t].role = APPROF_TENSOR_PARAM;
            f->ti[t].local = o % 4 == 0 ? 65536.0 : 8192.0 * (o + 1) + 512.0 * k;
            f->t_first[t] = o;
            op->inputs[op->n_inputs++] = t;
        }
    }
    f->blk[0] = 0;
    f->blk[1] = 7;
    f->blk[2] = 13;
}

static void stage_make(Fixture *f, ShardStage *st, int zero)
{
    memset(st, 0, sizeof *st);
    st->g = &f->g;
    st->op_begin = 0;
    st->op_end = N_OPS;
    st->n_ops = N_OPS;
    st->t_first = f->t_first;
    st->variant.zero = zero;
    for (int o = 0; o < N_OPS; o++)
        f->op_param[o] = shard_op_param_bytes_of(st, f->ti, o);
    st->op_param = f->op_param;
    st->param_ti = f->ti;
    shard_param_ops_index(st, f->param_ops);
}

/* The adds at the whole share and a partition, after a backward of three
 * kernels with no room left: each op with parameters one add of its
 * elements, in op order, the backward's kernels untouched. */
static void test_adds_written_in_place(void)
{
    Fixture f;
    ShardStage st;
    fixture_make(&f);
    stage_make(&f, &st, 0);
    const double shares[2] = {1.0, 0.25};
    double gw = (double)approf_dtype_size(f.g.dtype);
    for (int s = 0; s < 2; s++) {
        ApprofStageProgram p;
        memset(&p, 0, sizeof p);
        size_t cap = 3;
        ApprofHash128 *dig[2] = {NULL, calloc(cap, sizeof(ApprofHash128))};
        p.kernels[1] = calloc(cap, sizeof *p.kernels[1]);
        CU_ASSERT_FATAL(p.kernels[1] && dig[1]);
        for (int i = 0; i < 3; i++) {
            p.kernels[1][i].kind = APPROF_K_GEMM;
            p.kernels[1][i].op = 100 + i;
            p.kernels[1][i].async_group = 1;
            dig[1][i].a = dig[1][i].b = (uint64_t)(7 + i);
        }
        p.n_kernels[1] = 3;
        p.param_bytes = 1 << 20;
        p.donated_size[1] = (int64_t)(shares[s] * (double)p.param_bytes);
        CU_ASSERT_EQUAL_FATAL(shard_push_grad_accum(&st, f.ti, &p, &cap, dig), 0);
        CU_ASSERT(cap >= p.n_kernels[1]);
        for (int i = 0; i < 3; i++) {
            CU_ASSERT_EQUAL(p.kernels[1][i].op, 100 + i);
            CU_ASSERT_EQUAL(p.kernels[1][i].async_group, 1);
            CU_ASSERT(dig[1][i].a == (uint64_t)(7 + i) && dig[1][i].b == (uint64_t)(7 + i));
        }
        size_t at = 3;
        for (int o = 0; o < N_OPS; o++) {
            double elems = f.op_param[o] / gw * shares[s];
            if (!(elems >= 1.0))
                continue;
            ApprofKernel k;
            shard_grad_accum_kernel(&st, elems, &k);
            ApprofHash128 d = shard_kernel_digest(&k);
            k.op = o;
            CU_ASSERT_FATAL(at < p.n_kernels[1]);
            CU_ASSERT(memcmp(&p.kernels[1][at], &k, sizeof k) == 0);
            CU_ASSERT(dig[1][at].a == d.a && dig[1][at].b == d.b);
            at++;
        }
        CU_ASSERT_EQUAL(at, p.n_kernels[1]);
        CU_ASSERT(at > 3 + 8); /* more adds than the memo's sizes */
        free(p.kernels[1]);
        free(dig[1]);
    }
}

/* A program of two collectives per phase before its end, over a group of
 * 4 (ZeRO's S: the gradient synchronisation's bytes). */
static void program_make(ApprofStageProgram *p)
{
    memset(p, 0, sizeof *p);
    p->param_bytes = 1 << 20;
    p->grad_sync.kind = APPROF_COLL_ALL_REDUCE;
    p->grad_sync.group_size = 4;
    p->grad_sync.axes = 1;
    p->grad_sync.bytes = (double)(1 << 19);
    p->initial_size = 1 << 24;
    p->invar_size[0] = p->invar_size[1] = 1 << 22;
    p->outvar_size[1] = p->donated_size[1] = 1 << 21;
    for (int ph = 0; ph < 2; ph++) {
        p->colls[ph] = calloc(2, sizeof *p->colls[ph]);
        CU_ASSERT_FATAL(p->colls[ph] != NULL);
        for (int i = 0; i < 2; i++) {
            p->colls[ph][i].kind = i ? APPROF_COLL_ALL_GATHER : APPROF_COLL_ALL_REDUCE;
            p->colls[ph][i].axes = 2;
            p->colls[ph][i].group_size = 2;
            p->colls[ph][i].bytes = 1000.0 * (ph + 1) + i;
            p->colls[ph][i].op = i;
        }
        p->n_colls[ph] = 2;
    }
}

/* ZeRO-3 serial: the forward's all-gathers one per op with parameters,
 * in order, each grad_sync as an all-gather of S times its share of the
 * stage's bytes, after the program's own; the backward's end with the
 * same run after its gradient collectives. */
static void test_module_colls_written_in_place(void)
{
    Fixture f;
    ShardStage st;
    ApprofStageProgram p;
    fixture_make(&f);
    stage_make(&f, &st, 3);
    program_make(&p);
    size_t ccap[2] = {2, 2}; /* no room: made once */
    CU_ASSERT_EQUAL_FATAL(shard_apply_zero(&st, f.ti, &p, 5e5, 0.5, f.blk, 3, ccap), 0);
    double S = p.grad_sync.bytes, total = st.param_total;
    size_t n = 0;
    for (int o = 0; o < N_OPS; o++) {
        if (!(f.op_param[o] > 0.0))
            continue;
        const ApprofCollective *c = &p.colls[0][2 + n];
        CU_ASSERT_FATAL(2 + n < p.n_colls[0]);
        CU_ASSERT_EQUAL(c->kind, APPROF_COLL_ALL_GATHER);
        CU_ASSERT_EQUAL(c->group_size, 4);
        CU_ASSERT_EQUAL(c->axes, 1);
        CU_ASSERT_EQUAL(c->op, p.grad_sync.op);
        double want = S * (f.op_param[o] / total);
        CU_ASSERT(memcmp(&c->bytes, &want, sizeof want) == 0);
        n++;
    }
    CU_ASSERT(n > 8);
    CU_ASSERT_EQUAL(p.n_colls[0], 2 + n);
    CU_ASSERT(ccap[0] >= p.n_colls[0] && ccap[1] >= p.n_colls[1]);
    /* the backward: its own two, the gradients' n, the forward's run */
    CU_ASSERT_EQUAL_FATAL(p.n_colls[1], 2 + 2 * n);
    CU_ASSERT(p.colls[1][0].bytes == 2000.0 && p.colls[1][1].bytes == 2001.0);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(p.colls[1][2 + i].kind, APPROF_COLL_REDUCE_SCATTER);
        CU_ASSERT(memcmp(&p.colls[1][2 + i].bytes, &p.colls[0][2 + i].bytes, sizeof(double)) ==
                  0);
        CU_ASSERT(memcmp(&p.colls[1][2 + n + i], &p.colls[0][2 + i], sizeof(ApprofCollective)) ==
                  0);
    }
    free(p.colls[0]);
    free(p.colls[1]);
}

/* p ended (ZeRO 0, no spec, nothing shared) and its signature's text. */
static void sign(Fixture *f, ApprofStageProgram *p, char *out, size_t n)
{
    ShardStage st;
    stage_make(f, &st, 0);
    size_t kcap[2] = {0, 0}, ccap[2] = {p->n_colls[0], p->n_colls[1]};
    ApprofHash128 *kdig[2] = {NULL, NULL};
    ZeroTail tl = {5e5, 0.5, f->blk, 3, NULL, NULL, NULL};
    CU_ASSERT_EQUAL_FATAL(shard_finish_program(&st, f->ti, p, &tl, kcap, ccap, kdig), 0);
    snprintf(out, n, "%s", p->signature);
    free(kdig[0]);
    free(kdig[1]);
    approf_stage_program_clear(p);
}

/* A collective's fields changed one at a time, and two fields' values
 * swapped where the signature packs them into one word: every one a
 * signature of its own; the same program twice the same one. */
static void test_signature_tells_collectives_apart(void)
{
    Fixture f;
    fixture_make(&f);
    enum { N_CASES = 8 };
    char sig[N_CASES][sizeof(((ApprofStageProgram *)0)->signature)];
    for (int c = 0; c < N_CASES; c++) {
        ApprofStageProgram p;
        program_make(&p);
        ApprofCollective *x = &p.colls[1][1];
        x->kind = APPROF_COLL_ALL_GATHER;
        x->axes = 2;
        x->group_size = 2;
        x->crosses_hosts = 0;
        switch (c) {
        case 1: x->kind = APPROF_COLL_REDUCE_SCATTER; break;
        case 2: x->axes = 1; break;
        case 3: x->group_size = 4; break;
        case 4: x->crosses_hosts = 1; break;
        case 5: x->bytes += 1.0; break;
        case 6: /* kind and axes swapped */
            x->kind = (ApprofCollKind)2;
            x->axes = (int)APPROF_COLL_ALL_GATHER;
            break;
        case 7: /* group size and crossing swapped */
            x->group_size = 0;
            x->crosses_hosts = 2;
            break;
        }
        sign(&f, &p, sig[c], sizeof sig[c]);
        CU_ASSERT(strlen(sig[c]) == 32);
    }
    for (int a = 0; a < N_CASES; a++)
        for (int b = a + 1; b < N_CASES; b++)
            CU_ASSERT(strcmp(sig[a], sig[b]) != 0);
    ApprofStageProgram p;
    char again[sizeof sig[0]];
    program_make(&p);
    p.colls[1][1].kind = APPROF_COLL_ALL_GATHER;
    p.colls[1][1].axes = 2;
    p.colls[1][1].group_size = 2;
    sign(&f, &p, again, sizeof again);
    CU_ASSERT_STRING_EQUAL(again, sig[0]);
}

/* The signature's text as snprintf writes it ("%016llx%016llx" of the
 * digest of the header shard_sign_program hashes), for bodies whose
 * digests have every hex digit, leading zeros and all-ones words. */
static void test_signature_text(void)
{
    const uint64_t bodies[4][2] = {{0, 0},
                                   {0x0123456789abcdefull, 0xfedcba9876543210ull},
                                   {~0ull, 1},
                                   {0xf0f0f0f0f0f0f0f0ull, 0x00000000000000a5ull}};
    for (int c = 0; c < 4; c++) {
        ApprofStageProgram p;
        memset(&p, 0, sizeof p);
        memset(p.signature, 'x', sizeof p.signature);
        p.mesh_hosts = 1;
        p.mesh_gpus = 8 - c;
        p.logical_a = 2;
        p.logical_b = 4;
        p.force_batch_dim = c - 1;
        p.dtype = APPROF_BF16;
        p.ilp_objective = 1.5 + c;
        p.signature_body[0] = bodies[c][0];
        p.signature_body[1] = bodies[c][1];
        shard_sign_program(&p);
        ApprofHash128 h;
        approf_hash128_init(&h, 0x5167);
        int64_t hdr[9] = {p.mesh_hosts, p.mesh_gpus, p.logical_a, p.logical_b,
                          p.force_batch_dim, (int)p.dtype, 0, (int64_t)p.signature_body[0],
                          (int64_t)p.signature_body[1]};
        memcpy(&hdr[6], &p.ilp_objective, sizeof(double));
        approf_hash128_update(&h, hdr, sizeof(hdr));
        char want[sizeof p.signature];
        memset(want, 'x', sizeof want);
        snprintf(want, sizeof want, "%016llx%016llx", (unsigned long long)h.a,
                 (unsigned long long)h.b);
        CU_ASSERT(memcmp(p.signature, want, sizeof want) == 0);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"accumulation adds written in place", test_adds_written_in_place},
        {"ZeRO-3 module collectives written in place", test_module_colls_written_in_place},
        {"signature tells collectives apart", test_signature_tells_collectives_apart},
        {"signature text as snprintf writes it", test_signature_text},
    };
    return cunit_run("sharding_lvlends2", tests, sizeof tests / sizeof tests[0]);
}
