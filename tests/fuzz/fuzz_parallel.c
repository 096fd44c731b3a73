/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for apsolve's --parallel text (solver/parallel.c). Input:
 * the text. Properties: a refusal explains itself (a non-empty message);
 * an accepted text has dp, tp and pp, every knob in its documented range,
 * and parses to the same degrees once more (no hidden state).
 */
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "fuzz.h"
#include "recompute_layers.h"
#include "session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ApsolveParallel p, q;
    char *text, err[256] = "";
    if (size > 1 << 12)
        return 0;
    text = malloc(size + 1);
    FUZZ_CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    if (apsolve_parallel_parse(text, &p, err, sizeof err) != 0) {
        FUZZ_CHECK(err[0] != '\0');
    } else {
        FUZZ_CHECK(p.dp >= 1 && p.dp <= 65536 && p.tp >= 1 && p.tp <= 65536 && p.pp >= 1 &&
                   p.pp <= 65536);
        FUZZ_CHECK((int64_t)p.dp * p.tp * p.pp <= COSTDB_MAX_DEVICES); /* int products */
        FUZZ_CHECK(p.sp == 0 || p.sp == 1);
        FUZZ_CHECK(p.zero >= 0 && p.zero <= 3);
        FUZZ_CHECK(p.recompute >= 0 && p.recompute < COSTDB_RECOMPUTE_COUNT);
        FUZZ_CHECK(p.vpp >= 0 && p.vpp <= 1024 && p.mbs >= 0 && p.mbs <= 1 << 24);
        /* recompute_layers: K or auto, only with recompute full */
        FUZZ_CHECK(p.recompute_layers == 0 ||
                   (p.recompute == COSTDB_RECOMPUTE_FULL &&
                    (p.recompute_layers == APSOLVE_RECOMPUTE_LAYERS_AUTO ||
                     (p.recompute_layers >= 1 && p.recompute_layers <= APSOLVE_MAX_LAYERS))));
        FUZZ_CHECK(apsolve_parallel_parse(text, &q, err, sizeof err) == 0);
        FUZZ_CHECK(!memcmp(&p, &q, sizeof p));
    }
    free(text);
    return 0;
}
