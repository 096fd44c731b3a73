/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cp communication kinds (context_parallel.h): their names, and the
 * groups their all-to-alls may span on the sweep's hardware. Moved out of
 * context_parallel.c unchanged, to keep that file under 800 lines.
 */
#include <stdint.h>
#include <string.h>

#include "collective.h"
#include "context_parallel.h"
#include "costdb.h"

int apsolve_cp_comm_parse(const char *s)
{
    if (!s)
        return -1;
    if (!strcmp(s, "p2p"))
        return APSOLVE_CP_P2P;
    if (!strcmp(s, "a2a"))
        return APSOLVE_CP_A2A;
    if (!strcmp(s, "a2a+p2p"))
        return APSOLVE_CP_A2A_P2P;
    if (!strcmp(s, "all_gather"))
        return APSOLVE_CP_ALL_GATHER;
    return -1;
}

const char *apsolve_cp_comm_name(int comm)
{
    return comm == APSOLVE_CP_A2A          ? "a2a"
           : comm == APSOLVE_CP_A2A_P2P    ? "a2a+p2p"
           : comm == APSOLVE_CP_ALL_GATHER ? "all_gather"
                                           : "p2p";
}

int apsolve_cp_a2a_size(int cp, int tp, int fast_gpus)
{
    int best = 1;
    for (int a = 2; a <= cp; a++)
        if (cp % a == 0 && tp > 0 && (int64_t)tp * a <= fast_gpus && fast_gpus % (tp * a) == 0)
            best = a;
    return best;
}

int apsolve_cp_fast_gpus(struct Costdb *db, int64_t sweep, int gpus_per_host)
{
    CostdbSweep sw;
    CostdbHardware hw;
    CostdbFabric f;
    int node;
    if (!db || costdb_sweep_get(db, sweep, &sw) < 0 || sw.hardware_id <= 0 ||
        costdb_hardware_get(db, sw.hardware_id, &hw) < 0)
        return gpus_per_host;
    costdb_fabric_from_hardware(&hw, &f);
    /* the NCCL node: a scale-up domain of several hosts (GB200 NVL72's 72
     * GPUs), else the host (costdb/collective.c) */
    node = costdb_fabric_node_gpus(&f);
    return f.gpus_per_host == gpus_per_host && node > gpus_per_host ? node : gpus_per_host;
}
