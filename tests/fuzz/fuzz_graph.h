/* SPDX-License-Identifier: Apache-2.0 */
/* What every harness that reads a model checks of the graph it accepted. */
#ifndef APPROF_FUZZ_GRAPH_H
#define APPROF_FUZZ_GRAPH_H

#include "graph.h"

/* Alpa's automatic layer construction (2 layers, eps 0.5) and the manual
 * one, when they succeed, cover the operators in order with non-empty
 * layers whose statistics are finite and non-negative. */
void fuzz_check_layerings(const ApprofGraph *g);

#endif
