/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stored plan options (plan_options.h): one writer and one reader of
 * the JSON object in plan.options. The reader is a small recursive-descent
 * parser of the JSON subset the writer produces (objects, strings, integers,
 * numbers, booleans, null), strict about syntax, tolerant of keys it does
 * not know, and bounded: the text comes from a database someone else may
 * have written.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "json_read.h"
#include "json_write.h"
#include "plan_options.h"

const char *const costdb_framework_keys[COSTDB_FW_COUNT] = {"megatron", "deepspeed",
                                                             "torchtitan"};

static const char *objective_name(CostdbObjective o)
{
    return o == COSTDB_OBJECTIVE_FULL ? "full" : "alpa";
}

static void put_raw(char *out, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    int w;
    if (*at >= len)
        return;
    va_start(ap, fmt);
    w = vsnprintf(out + *at, len - *at, fmt, ap);
    va_end(ap);
    *at += w > 0 ? (size_t)w : 0;
}

/* Appends s to out as a JSON string literal (costdb_json_escape's rule);
 * *at counts what did not fit too, as put_raw's does. */
static void put_string(char *out, size_t len, size_t *at, const char *s)
{
    put_raw(out, len, at, "\"");
    if (*at < len)
        *at += costdb_json_escape(out + *at, len - *at, s);
    put_raw(out, len, at, "\"");
}

int costdb_plan_options_format(const CostdbPlanOptions *o, char *out, size_t len)
{
    size_t at = 0;
    if (!o || !out || len < 2)
        return COSTDB_EINVAL;
    out[0] = '\0';
    put_raw(out, len, &at, "{\"tool\": ");
    put_string(out, len, &at, o->tool);
    put_raw(out, len, &at, ", \"stage_option\": ");
    put_string(out, len, &at, o->stage_option);
    put_raw(out, len, &at,
            ", \"micro_batches\": %d, \"global_batch\": %lld, \"micro_batch_size\": %lld, "
            "\"memory_budget\": %lld, \"max_stages\": %d, \"inference\": %s, "
            "\"objective\": \"%s\", \"schedule\": ",
            o->micro_batches, (long long)o->global_batch, (long long)o->micro_batch_size,
            (long long)o->memory_budget, o->max_stages, o->inference ? "true" : "false",
            objective_name(o->objective));
    put_string(out, len, &at, o->schedule[0] ? o->schedule : "1f1b");
    put_raw(out, len, &at, ", \"virtual_stages\": %d",
            o->virtual_stages > 1 ? o->virtual_stages : 1);
    if (o->has_layout) {
        const CostdbPlanLayout *l = &o->layout;
        put_raw(out, len, &at,
                ", \"parallel\": {\"dp\": %d, \"tp\": %d, \"pp\": %d, \"sp\": %d, "
                "\"zero\": %d, \"recompute\": ",
                l->dp, l->tp, l->pp, l->sp, l->zero);
        put_string(out, len, &at, l->recompute[0] ? l->recompute : "none");
        put_raw(out, len, &at, ", \"vpp\": %d, \"mbs\": %d", l->vpp > 0 ? l->vpp : 1, l->mbs);
        /* context parallelism only when used: plans without it keep their text */
        if (l->cp > 1) {
            put_raw(out, len, &at, ", \"cp\": %d, \"cp_comm\": ", l->cp);
            put_string(out, len, &at, l->cp_comm[0] ? l->cp_comm : "p2p");
            if (l->cp_a2a > 1)
                put_raw(out, len, &at, ", \"cp_a2a\": %d", l->cp_a2a);
        }
        /* expert parallelism only when given: plans without it keep their text */
        if (l->ep > 0 && l->etp > 0)
            put_raw(out, len, &at, ", \"ep\": %d, \"etp\": %d", l->ep, l->etp);
        /* HSDP and FSDP2's reshard_after_forward only when given */
        if (l->dp_shard > 0)
            put_raw(out, len, &at, ", \"dp_shard\": %d, \"dp_replicate\": %d", l->dp_shard,
                    l->dp / l->dp_shard > 0 ? l->dp / l->dp_shard : 1);
        if (l->dp_shard > 0 || l->raf_off)
            put_raw(out, len, &at, ", \"raf\": %d", !l->raf_off);
        if (l->recompute_layers > 0) /* only when given: other plans keep their text */
            put_raw(out, len, &at, ", \"recompute_layers\": %d", l->recompute_layers);
        if (l->offload > 0) /* activation offload only when given */
            put_raw(out, len, &at, ", \"offload\": %d", l->offload);
        if (l->moe_a2a_overlap) /* only when given: other plans keep their text */
            put_raw(out, len, &at, ", \"moe_a2a_overlap\": 1");
        put_raw(out, len, &at, "}");
    }
    /* the headroom and the verdict only when set: other plans keep their text */
    if (o->headroom_bytes > 0)
        put_raw(out, len, &at, ", \"memory_headroom\": \"%lld\"", (long long)o->headroom_bytes);
    else if (o->headroom_percent > 0)
        put_raw(out, len, &at, ", \"memory_headroom\": \"%.17g%%\"", o->headroom_percent);
    if (o->headroom_kept) /* written when true only: the text has a 512-byte column */
        put_raw(out, len, &at, ", \"headroom_kept\": true");
    if (o->has_frameworks) {
        int n = 0;
        put_raw(out, len, &at, ", \"frameworks\": \"");
        for (int f = 0; f < COSTDB_FW_COUNT; f++)
            if (o->frameworks & (1u << f))
                put_raw(out, len, &at, "%s%s", n++ ? "," : "", costdb_framework_keys[f]);
        put_raw(out, len, &at, "\"");
    }
    put_raw(out, len, &at, "}");
    return at < len ? 0 : COSTDB_EINVAL;
}

#define INT_MEMBER(name, lo, hi, field)                                                        \
    if (!strcmp(key, name)) {                                                                  \
        long long v_;                                                                          \
        if (cjr_int(ps, lo, hi, &v_))                                                         \
            return COSTDB_EPARSE;                                                              \
        field = v_;                                                                            \
        return 0;                                                                              \
    }

static int layout_member(CjrParser *ps, const char *key, void *ctx, int depth)
{
    CostdbPlanLayout *l = ctx;
    INT_MEMBER("dp", 1, 1 << 24, l->dp)
    INT_MEMBER("tp", 1, 1 << 24, l->tp)
    INT_MEMBER("pp", 1, 1 << 24, l->pp)
    INT_MEMBER("sp", 0, 1, l->sp)
    INT_MEMBER("zero", 0, 3, l->zero)
    INT_MEMBER("vpp", 1, 1024, l->vpp)
    INT_MEMBER("mbs", 0, 1 << 24, l->mbs)
    INT_MEMBER("cp", 1, 1 << 16, l->cp)
    INT_MEMBER("cp_a2a", 1, 1 << 16, l->cp_a2a)
    INT_MEMBER("ep", 1, 1 << 16, l->ep)
    INT_MEMBER("etp", 1, 1 << 16, l->etp)
    INT_MEMBER("dp_shard", 1, 1 << 16, l->dp_shard)
    INT_MEMBER("recompute_layers", 1, 1 << 16, l->recompute_layers)
    INT_MEMBER("offload", 1, 4096, l->offload)
    INT_MEMBER("moe_a2a_overlap", 0, 1, l->moe_a2a_overlap)
    if (!strcmp(key, "raf")) {
        long long v_;
        if (cjr_int(ps, 0, 1, &v_))
            return COSTDB_EPARSE;
        l->raf_off = !v_;
        return 0;
    }
    if (!strcmp(key, "cp_comm")) {
        if (cjr_string(ps, l->cp_comm, sizeof l->cp_comm))
            return COSTDB_EPARSE;
        if (strcmp(l->cp_comm, "p2p") && strcmp(l->cp_comm, "a2a") &&
            strcmp(l->cp_comm, "a2a+p2p") && strcmp(l->cp_comm, "all_gather"))
            return cjr_fail(ps, "cp_comm \"%s\" is not p2p, a2a, a2a+p2p or all_gather",
                            l->cp_comm);
        return 0;
    }
    if (!strcmp(key, "recompute")) {
        if (cjr_string(ps, l->recompute, sizeof l->recompute))
            return COSTDB_EPARSE;
        if (costdb_recompute_parse(l->recompute) < 0)
            return cjr_fail(ps, "recompute \"%s\" is not none, selective, full or op",
                            l->recompute);
        return 0;
    }
    return cjr_skip_value(ps, depth + 1);
}

static int options_member(CjrParser *ps, const char *key, void *ctx, int depth)
{
    CostdbPlanOptions *o = ctx;
    if (!strcmp(key, "tool"))
        return cjr_string(ps, o->tool, sizeof o->tool);
    if (!strcmp(key, "stage_option"))
        return cjr_string(ps, o->stage_option, sizeof o->stage_option);
    INT_MEMBER("micro_batches", 0, 1 << 24, o->micro_batches)
    INT_MEMBER("global_batch", 0, (long long)1 << 40, o->global_batch)
    INT_MEMBER("micro_batch_size", 0, (long long)1 << 40, o->micro_batch_size)
    INT_MEMBER("memory_budget", 0, INT64_MAX, o->memory_budget)
    INT_MEMBER("max_stages", 0, 1 << 24, o->max_stages)
    INT_MEMBER("virtual_stages", 1, 1024, o->virtual_stages)
    if (!strcmp(key, "inference"))
        return cjr_bool(ps, &o->inference);
    if (!strcmp(key, "objective")) {
        char v[16];
        if (cjr_string(ps, v, sizeof v))
            return COSTDB_EPARSE;
        if (!strcmp(v, "full"))
            o->objective = COSTDB_OBJECTIVE_FULL;
        else if (!strcmp(v, "alpa"))
            o->objective = COSTDB_OBJECTIVE_ALPA;
        else
            return cjr_fail(ps, "objective \"%s\" is not full or alpa", v);
        return 0;
    }
    if (!strcmp(key, "schedule")) {
        if (cjr_string(ps, o->schedule, sizeof o->schedule))
            return COSTDB_EPARSE;
        /* solver/schedule.h's names (costdb does not link the solver) */
        if (strcmp(o->schedule, "1f1b") && strcmp(o->schedule, "gpipe") &&
            strcmp(o->schedule, "interleaved") && strcmp(o->schedule, "zb-h1") &&
            strcmp(o->schedule, "interleaved-zb") && strcmp(o->schedule, "zbv"))
            return cjr_fail(ps, "schedule \"%s\" is not 1f1b, gpipe, interleaved, zb-h1, "
                            "interleaved-zb or zbv", o->schedule);
        return 0;
    }
    if (!strcmp(key, "memory_headroom")) {
        char v[40], *end;
        size_t n;
        if (cjr_string(ps, v, sizeof v))
            return COSTDB_EPARSE;
        n = strlen(v);
        errno = 0;
        if (n > 1 && v[n - 1] == '%') {
            o->headroom_percent = strtod(v, &end);
            if (end != v + n - 1 || errno || !(o->headroom_percent >= 0) ||
                o->headroom_percent > 100)
                return cjr_fail(ps, "memory_headroom \"%s\" is not a percentage", v);
        } else {
            long long b = strtoll(v, &end, 10);
            if (!n || *end || errno || b < 0)
                return cjr_fail(ps, "memory_headroom \"%s\" is not a byte count", v);
            o->headroom_bytes = b;
        }
        return 0;
    }
    if (!strcmp(key, "headroom_kept"))
        return cjr_bool(ps, &o->headroom_kept);
    if (!strcmp(key, "frameworks")) {
        char v[96], *tok, *save = NULL;
        if (cjr_string(ps, v, sizeof v))
            return COSTDB_EPARSE;
        o->has_frameworks = 1;
        o->frameworks = 0;
        for (tok = strtok_r(v, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int f = 0;
            while (f < COSTDB_FW_COUNT && strcmp(tok, costdb_framework_keys[f]))
                f++;
            if (f == COSTDB_FW_COUNT)
                return cjr_fail(ps, "frameworks: \"%s\" is not megatron, deepspeed or "
                                "torchtitan", tok);
            o->frameworks |= 1u << f;
        }
        return 0;
    }
    if (!strcmp(key, "parallel")) {
        o->has_layout = 1;
        o->layout = (CostdbPlanLayout){1, 1, 1, 0, 0, 1, 0, "none", 1, "p2p", 0};
        return cjr_object(ps, layout_member, &o->layout, depth + 1);
    }
    return cjr_skip_value(ps, depth + 1);
}

int costdb_plan_options_parse(const char *text, CostdbPlanOptions *o, char *err, size_t errlen)
{
    CjrParser ps = {text, text, "options", err, errlen, 0};
    if (!o)
        return COSTDB_EINVAL;
    memset(o, 0, sizeof *o);
    o->virtual_stages = 1;
    if (err && errlen)
        err[0] = '\0';
    if (!text)
        return 0;
    cjr_skip_ws(&ps);
    if (*ps.p == '\0')
        return 0;
    if (cjr_object(&ps, options_member, o, 0))
        return COSTDB_EPARSE;
    cjr_skip_ws(&ps);
    if (*ps.p)
        return cjr_fail(&ps, "text after the object");
    return 0;
}
