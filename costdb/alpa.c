/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Printing stage profiles exactly as Alpa logs them: a
 * "- Profiling for submesh K (n, m):" header per submesh, largest first,
 * then one "result[(i, j, s, c), m] = ModuleProfileResult(...)" line per
 * entry with costs in seconds and sizes in GB (2^30 bytes), three decimals.
 * `approf show` (costdb_print_alpa) follows each line with a comment Alpa
 * does not write, "  # temp_activation_size=X GB" or "=NULL" (schema 17's
 * activation-sized part of temp_buffer_size, NULL when none or unknown);
 * costdb_format_entry, the sweep's own log line, stays Alpa's.
 */
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"

#define GB 1073741824.0

void costdb_format_entry(const CostdbEntry *e, char *buf, size_t len)
{
    if (!buf || !len)
        return;
    if (!e) {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, len,
             "result[(%d, %d, %d, %d), %d] = ModuleProfileResult(compute_cost=%.3f, "
             "peak_memory=%.3f GB, invar_size=%.3f GB, outvar_size=%.3f GB, "
             "temp_buffer_size=%.3f GB, available_memory=%.3f GB)",
             e->start_layer, e->end_layer, e->submesh_index, e->config_index, (int)e->phase,
             e->compute_cost, (double)e->peak_memory / GB, (double)e->invar_size / GB,
             (double)e->outvar_size / GB, (double)e->temp_buffer_size / GB,
             (double)e->available_memory / GB);
}

int costdb_print_alpa(Costdb *db, int64_t sweep_id, FILE *out)
{
    CostdbSubmesh *sm = NULL;
    CostdbEntry *e = NULL;
    size_t n_sm = 0, n_e = 0, next = 0;
    CostdbSweep sweep;
    char line[512];
    int rc;
    if (!db || !out)
        return COSTDB_EINVAL;
    if ((rc = costdb_sweep_get(db, sweep_id, &sweep)) < 0 ||
        (rc = costdb_sweep_submeshes(db, sweep_id, &sm, &n_sm)) < 0 ||
        (rc = costdb_entries_get(db, sweep_id, &e, &n_e)) < 0)
        goto cleanup;
    /* Entries come ordered by submesh descending, like Alpa's profiling loop. */
    for (size_t k = n_sm; k-- > 0;) {
        fprintf(out, "- Profiling for submesh %d (%d, %d):\n", sm[k].index, sm[k].hosts,
                sm[k].gpus_per_host);
        while (next < n_e && e[next].submesh_index > sm[k].index)
            next++; /* entries of a submesh without a row (cannot happen: FK) */
        for (; next < n_e && e[next].submesh_index == sm[k].index; next++) {
            costdb_format_entry(&e[next], line, sizeof line);
            if (e[next].temp_activation_size > 0)
                fprintf(out, "%s  # temp_activation_size=%.3f GB\n", line,
                        (double)e[next].temp_activation_size / GB);
            else
                fprintf(out, "%s  # temp_activation_size=NULL\n", line);
        }
    }
    if (fflush(out) != 0 || ferror(out))
        rc = cdb_err(db, COSTDB_EIO, "cannot write the output");
cleanup:
    free(sm);
    free(e);
    return rc;
}
