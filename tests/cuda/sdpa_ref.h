/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU references for the fused attention (profiler/cuda/sdpa.h), in
 * double: the attention itself written out directly (forward: O and the
 * log-sum-exp statistics; backward: dQ, dK, dV), and an interpreter of the
 * operation graph approf_sdpa_graph describes, which evaluates each
 * operation as cuDNN's backend API documents it. test_sdpa_host.c checks
 * the graph against the direct form without a GPU; test_sdpa.c checks
 * cuDNN's output against the direct form on one.
 */
#ifndef APPROF_TEST_SDPA_REF_H
#define APPROF_TEST_SDPA_REF_H

#include <stdint.h>

#include "cuda/sdpa.h"

/* Dense BHSD arrays, as sdpa.h lays them out: q, o, dO, dq [b, hq, sq, d];
 * k, v, dk, dv [b, hkv, skv, d]; lse [b, hq, sq]. */
void sdpa_ref_forward(const ApprofSdpaShape *s, const double *q, const double *k, const double *v,
                      double *o, double *lse);
void sdpa_ref_backward(const ApprofSdpaShape *s, const double *q, const double *k,
                       const double *v, const double *o, const double *dO, const double *lse,
                       double *dq, double *dk, double *dv);

/* Evaluates graph g: arr[buf][i] holds array i of buffer buf (elements in
 * the order of the array's dense layout, as doubles); inputs are read from
 * it, outputs (and the aux arrays) written. 0, or -1 for an operation it
 * cannot evaluate (its message in err). */
int sdpa_ref_eval(const ApprofSdpaGraph *g, double *const *const arr[3], char *err,
                  size_t errlen);

/* IEEE half and bfloat16 from and to float (round to nearest even). */
uint16_t sdpa_ref_to_half(float f);
float sdpa_ref_from_half(uint16_t h);
uint16_t sdpa_ref_to_bf16(float f);
float sdpa_ref_from_bf16(uint16_t h);

#endif
