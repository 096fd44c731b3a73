/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ZeRO-3 overlapped with compute as the frameworks schedule it
 * (docs/variants.md, "ZeRO-3 overlap"): a replay of one phase of a stage
 * program on two streams. The compute stream runs the units' kernels in
 * the phase's order (forward: unit 1 .. n; backward: n .. 1, each after
 * the kernels of operators before the first unit, which the backward runs
 * last); the communication stream runs the collectives the stage program
 * marked (ApprofCollective.zero3_unit) one at a time in the order they are
 * issued (FSDP2's all-gather and reduce-scatter streams are two CUDA
 * streams, but both move bytes over the same links, so one runs at the
 * other's expense; they are priced as one queue). A unit's compute starts
 * when the unit before it ended and its all-gathers are done; under FSDP2
 * a block's backward also waits for the reduce-scatter issued two blocks
 * before (FSDPParamGroup.post_backward makes the compute stream wait for
 * the previous reduce-scatter before it issues its own). The phase ends
 * when both streams are idle: the first gather of the forward and the last
 * reduce-scatter of the backward are exposed, and so is the part of any
 * gather longer than the compute it runs under. Compute beside a
 * collective runs slower by approf_overlap_slowdown (the spec's measured
 * overlap_gemm_slowdown, else the SMs of NCCL's channels;
 * approf_overlap_stretch; 0 leaves it as before). Under the
 * spec's zero3_fetch_sync (DeepSpeed v0.3.13 to v0.5.10) every fetch
 * drains the device: a unit that gathers parameters in the phase starts
 * only when the communication stream is idle (fetch_sub_module ->
 * _synchronize_communication -> torch.cuda.synchronize(),
 * deepspeed/runtime/zero/stage3.py at v0.3.13, lines 402-406 and
 * 483-491), so a reduce-scatter or a gather cannot run on past the unit
 * it was issued in; and each parameter's gather starts after a
 * torch.cuda.synchronize() of its own (_allgather_param,
 * deepspeed/runtime/zero/partition_parameters.py at v0.3.13, line 611),
 * so of the prefetches a unit issues before its compute is launched
 * (pre_sub_module_forward_function: fetch, then prefetch, then the
 * module runs) all but the last are done before its compute starts.
 * The framework's own copies around the collectives (the spec's
 * zero3_gather_copy and zero3_grad_copy; FSDP2's copy-out after each
 * all-gather and copy-in before each reduce-scatter, FSDP1's flat
 * gradient) run on the compute stream as part of their unit: a copy-out
 * before the unit computes, a gradient copy as its backward ends, before
 * its reduce-scatter is issued; FSDP1's cast to the reduce dtype runs on
 * the reduce-scatter's stream, before it. The phase's price beyond its
 * kernels is then the exposed collectives and these copies.
 * What the replay leaves out: the collectives' own slowdown beside compute,
 * DeepSpeed's stage3_max_live_parameters cap (1e9 elements) on
 * prefetching, and the CPU running behind the device.
 */
#include <stdlib.h>
#include <string.h>

#include "hardware.h"
#include "stage.h"

static const char *const schedule_names[] = {"serial", "fsdp2", "deepspeed"};

const char *approf_zero3_schedule_name(int schedule)
{
    if (schedule < 0 || schedule > APPROF_ZERO3_DEEPSPEED)
        return NULL;
    return schedule_names[schedule];
}

int approf_zero3_schedule_parse(const char *s)
{
    for (int i = 0; s && i <= APPROF_ZERO3_DEEPSPEED; i++)
        if (!strcmp(s, schedule_names[i]))
            return i;
    return -1;
}

/* The unit (0: before the first) of operator op; first[1..n] ascending. */
static int unit_of(const int *first, int n, int op)
{
    int lo = 0, hi = n; /* the largest u with first[u] <= op, 0 if none */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (first[mid] <= op)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Seconds of one copy kernel that reads and writes `bytes` in all (the
 * spec's memory bandwidth and launch, as every copy kernel). */
static double copy_seconds(const ApprofHardwareSpec *hw, int op, double bytes)
{
    ApprofKernel k;
    if (!(bytes > 0))
        return 0.0;
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_COPY;
    k.op = op;
    k.dtype = APPROF_F32;
    k.bytes = bytes;
    return approf_kernel_seconds(hw, &k);
}

/* The framework's copies of unit u's collectives (zero3_gather_copy,
 * zero3_grad_copy; hardware.h): adds the compute stream's to copies[u]
 * and FSDP1's cast to the reduce dtype to its reduce-scatter's dur[]. */
static void framework_copies(const ApprofHardwareSpec *hw, const ApprofCollective *cl, size_t nc,
                             int nu, double *dur, double *copies)
{
    if (!hw->zero3_gather_copy && !hw->zero3_grad_copy)
        return;
    for (size_t i = 0; i < nc; i++) {
        int u = cl[i].zero3_unit;
        if (u <= 0 || u >= nu)
            continue;
        if (cl[i].kind == APPROF_COLL_ALL_GATHER) {
            if (hw->zero3_gather_copy) /* read and written once */
                copies[u] += copy_seconds(hw, cl[i].op, 2.0 * cl[i].bytes);
            continue;
        }
        if (!hw->zero3_grad_copy)
            continue;
        double written = cl[i].bytes, read = 0.0; /* the reduce dtype's; the parameters' */
        for (size_t j = 0; j < nc; j++)
            if (cl[j].zero3_unit == u && cl[j].kind == APPROF_COLL_ALL_GATHER)
                read += cl[j].bytes;
        if (!(read > 0))
            read = written;
        if (hw->zero3_grad_copy == 1) { /* FSDP2: copy-in, cast on the way */
            copies[u] += copy_seconds(hw, cl[i].op, read + written);
        } else { /* FSDP1: the flat gradient, then the cast on the comm stream */
            copies[u] += copy_seconds(hw, cl[i].op, 2.0 * read);
            if (written != read)
                dur[i] += copy_seconds(hw, cl[i].op, read + written);
        }
    }
}

/* Places a collective of dur seconds, issued at time t, on the
 * communication stream; *end gets when it is done. */
static void issue(double t, double dur, double *comm_free, double *end)
{
    double start = t > *comm_free ? t : *comm_free;
    *comm_free = start + dur;
    *end = *comm_free;
}

double approf_zero3_exposed(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph,
                            double *marked)
{
    const ApprofCollective *cl;
    size_t nc;
    int n = 0, fsdp2, sync;
    double sum_marked = 0.0, exposed = 0.0;

    if (marked)
        *marked = 0.0;
    if (!hw || !p || ph < 0 || ph > 1 || hw->zero3_schedule <= APPROF_ZERO3_SERIAL)
        return 0.0;
    cl = p->colls[ph];
    nc = p->n_colls[ph];
    for (size_t i = 0; i < nc; i++)
        if (cl[i].zero3_unit > n)
            n = cl[i].zero3_unit;
    if (n == 0)
        return 0.0;
    fsdp2 = hw->zero3_schedule == APPROF_ZERO3_FSDP2;
    sync = hw->zero3_fetch_sync != 0;

    /* per unit (0..n): first operator, compute seconds, start, end, the end
     * of its gathers and of its reduce-scatter; per collective: seconds */
    size_t nu = (size_t)n + 1;
    int *first = malloc(nu * sizeof *first);
    double *buf = calloc(7 * nu + nc, sizeof *buf);
    if (!first || !buf) { /* no room to replay: priced serially */
        free(first);
        free(buf);
        for (size_t i = 0; i < nc; i++)
            if (cl[i].zero3_unit > 0)
                sum_marked += approf_collective_cost(hw, &cl[i]);
        if (marked)
            *marked = sum_marked;
        return sum_marked;
    }
    double *C = buf, *S = C + nu, *E = S + nu, *ready = E + nu, *rs_end = ready + nu;
    double *gathers = rs_end + nu; /* per unit: all-gathers in the phase */
    double *copies = gathers + nu; /* per unit: the framework's copies */
    double *dur = copies + nu;
    for (size_t u = 0; u < nu; u++)
        first[u] = -1;
    first[0] = p->op_begin;
    for (size_t i = 0; i < nc; i++) {
        if (cl[i].zero3_unit <= 0)
            continue;
        first[cl[i].zero3_unit] = cl[i].op;
        if (cl[i].kind == APPROF_COLL_ALL_GATHER)
            gathers[cl[i].zero3_unit] += 1.0;
        dur[i] = approf_collective_cost(hw, &cl[i]);
        sum_marked += dur[i];
    }
    for (int u = 1; u <= n; u++) /* a unit without a collective here is empty */
        if (first[u] < first[u - 1])
            first[u] = first[u - 1];
    for (size_t i = 0, nk = approf_phase_kernel_count(p, ph); i < nk; i++)
        C[unit_of(first, n, approf_phase_kernel(p, ph, i)->op)] +=
            approf_kernel_seconds(hw, approf_phase_kernel(p, ph, i));
    /* total: the kernels alone; the copies join their unit's compute */
    double t = 0.0, comm = 0.0, total = 0.0;
    for (int u = 0; u <= n; u++)
        total += C[u];
    framework_copies(hw, cl, nc, (int)nu, dur, copies);
    for (int u = 0; u <= n; u++)
        C[u] += copies[u];

    /* the replay: execution order of units (0 first in the forward, last
     * in the backward); a collective is issued at an event of the unit
     * its zero3_issue names (see stage.h) */
    for (size_t i = 0; i < nc; i++) /* issued at the start of the phase */
        if (cl[i].zero3_unit > 0 && cl[i].kind == APPROF_COLL_ALL_GATHER && cl[i].zero3_issue == 0)
            issue(0.0, dur[i], &comm, &ready[cl[i].zero3_unit]);
    /* compute beside the collectives queued up to now runs slower
     * (approf_overlap_slowdown; approf_overlap_stretch): the stream is busy
     * from t to comm, everything in it having been issued by t */
    if (ph == 0)
        t += C[0] + approf_overlap_stretch(hw, C[0], comm > t ? comm - t : 0.0);
    for (int r = 1; r <= n; r++) {
        int u = ph == 0 ? r : n + 1 - r;
        int prev2 = ph == 0 ? u - 2 : u + 2; /* the unit run two before */
        double s = t;
        /* on-demand gathers: issued as the unit before ends */
        for (size_t i = 0; i < nc; i++)
            if (cl[i].zero3_unit == u && cl[i].kind == APPROF_COLL_ALL_GATHER &&
                cl[i].zero3_issue == u)
                issue(t, dur[i], &comm, &ready[u]);
        if (ready[u] > s)
            s = ready[u];
        if (fsdp2 && ph == 1 && prev2 >= 1 && prev2 <= n && rs_end[prev2] > s)
            s = rs_end[prev2];
        if (sync && gathers[u] > 0.0 && comm > s) /* the fetch drains the device */
            s = comm;
        /* prefetches issued as the unit's compute starts; under
         * zero3_fetch_sync the compute waits for all but the last */
        double before_last = s;
        for (size_t i = 0; i < nc; i++)
            if (cl[i].zero3_unit > 0 && cl[i].kind == APPROF_COLL_ALL_GATHER &&
                cl[i].zero3_issue == u && cl[i].zero3_unit != u) {
                before_last = comm > s ? comm : s;
                issue(s, dur[i], &comm, &ready[cl[i].zero3_unit]);
            }
        if (sync && before_last > s)
            s = before_last;
        S[u] = s;
        E[u] = t = s + C[u] + approf_overlap_stretch(hw, C[u], comm > s ? comm - s : 0.0);
        /* reduce-scatters issued as the unit's backward ends */
        for (size_t i = 0; i < nc; i++)
            if (cl[i].zero3_unit > 0 && cl[i].kind != APPROF_COLL_ALL_GATHER &&
                cl[i].zero3_issue == u)
                issue(t, dur[i], &comm, &rs_end[cl[i].zero3_unit]);
    }
    if (ph == 1)
        t += C[0] + approf_overlap_stretch(hw, C[0], comm > t ? comm - t : 0.0);
    for (size_t i = 0; i < nc; i++) /* issued as the backward's compute ends */
        if (cl[i].zero3_unit > 0 && cl[i].kind != APPROF_COLL_ALL_GATHER && cl[i].zero3_issue == 0)
            issue(t, dur[i], &comm, &rs_end[cl[i].zero3_unit]);
    exposed = (comm > t ? comm : t) - total;
    if (exposed < 0.0)
        exposed = 0.0;
    if (marked)
        *marked = sum_marked;
    free(first);
    free(buf);
    return exposed;
}
