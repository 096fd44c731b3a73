/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stage variant and the variant space (variant.h, docs/variants.md):
 * the names of the recomputation modes as stored, their order by what
 * they keep, the validity of a variant and the defaults of a space.
 */
#include <string.h>

#include "variant.h"

static const char *const recompute_names[COSTDB_RECOMPUTE_COUNT] = {
    "none", "selective", "full", "op",
};

const char *costdb_recompute_name(int r)
{
    return r >= 0 && r < COSTDB_RECOMPUTE_COUNT ? recompute_names[r] : NULL;
}

int costdb_recompute_parse(const char *name)
{
    for (int i = 0; name && i < COSTDB_RECOMPUTE_COUNT; i++)
        if (!strcmp(name, recompute_names[i]))
            return i;
    return -1;
}

int costdb_recompute_max(int a, int b)
{
    /* rank by what each keeps: selective drops the attention core, op
     * every op but every other matmul and attention, full all but the
     * blocks' inputs */
    static const int rank[COSTDB_RECOMPUTE_COUNT] = {0, 1, 3, 2};
    int ra = a >= 0 && a < COSTDB_RECOMPUTE_COUNT ? rank[a] : -1;
    int rb = b >= 0 && b < COSTDB_RECOMPUTE_COUNT ? rank[b] : -1;
    return ra >= rb ? a : b;
}

CostdbVariant costdb_variant_max(CostdbVariant a, CostdbVariant b)
{
    return (CostdbVariant){a.memory_level > b.memory_level ? a.memory_level : b.memory_level,
                           costdb_recompute_max(a.recompute, b.recompute),
                           a.zero > b.zero ? a.zero : b.zero};
}

int costdb_variant_valid(CostdbVariant v)
{
    return v.memory_level >= 0 && costdb_recompute_name(v.recompute) && v.zero >= 0 &&
           v.zero <= COSTDB_ZERO_MAX;
}

CostdbVariantSpace costdb_variant_space_resolve(CostdbVariantSpace s)
{
    if (s.memory_levels <= 0)
        s.memory_levels = 1;
    if (!s.recompute_mask)
        s.recompute_mask = 1u;
    if (!s.zero_mask)
        s.zero_mask = 1u;
    return s;
}

int costdb_variant_space_is_plain(CostdbVariantSpace s)
{
    s = costdb_variant_space_resolve(s);
    return s.memory_levels == 1 && s.recompute_mask == 1u && s.zero_mask == 1u;
}
