/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the NeMo comment line of the Megatron-LM launch file
 * (reports/export_nemo.c, docs/export-megatron.md). Not installed.
 */
#ifndef APREPORT_EXPORT_NEMO_H
#define APREPORT_EXPORT_NEMO_H

#include <stdio.h>

#include "launch.h"

/* "# NeMo: ..." with NeMo 1's overrides of the plan (fp8: rep_fp8_of), and
 * a second comment line where NeMo 1 cannot express the plan's ZeRO. */
void rep_nemo_comment(const RepLaunch *L, int fp8, FILE *f);

#endif
