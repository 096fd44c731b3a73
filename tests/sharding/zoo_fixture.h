/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the sharding tests share: the zoo's GPT at round sizes (hidden
 * 1024, 16 heads, sequence 512, vocabulary 1024, batch 8, f16).
 */
#ifndef SHARDING_ZOO_FIXTURE_H
#define SHARDING_ZOO_FIXTURE_H

#include "graph.h"

/* That GPT with the given number of layers; a CUnit fatal assertion when
 * the zoo refuses it. */
ApprofGraph *zoo_fixture_gpt(int layers);

#endif
