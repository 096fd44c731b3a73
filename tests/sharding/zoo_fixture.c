/* SPDX-License-Identifier: Apache-2.0 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "model/zoo.h"
#include "zoo_fixture.h"

ApprofGraph *zoo_fixture_gpt(int layers)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    int rc;
    memset(&o, 0, sizeof o);
    o.num_layers = layers;
    o.hidden = 1024;
    o.heads = 16;
    o.seq_len = 512;
    o.vocab = 1024;
    o.batch = 8;
    o.dtype = "f16";
    rc = approf_zoo_build("gpt", &o, &g, err, sizeof err);
    if (rc)
        fprintf(stderr, "gpt: %s\n", err);
    CU_ASSERT_FATAL(rc == 0);
    return g;
}
