/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The answer a report opens with (docs/reports.md "The headline"): the
 * iteration time and where it comes from, throughput per GPU, model FLOP
 * utilisation, the layout in the frameworks' words and, per stage, what
 * its memory holds. One derivation; report.html and report.json print it.
 */
#ifndef REPORTS_HEADLINE_H
#define REPORTS_HEADLINE_H

#include <stddef.h>

struct ApreportReport;

/* What one stage's memory need (apsolve's figure) is made of. Under the
 * exact rule: parameters (the stage's placements, per device), optimizer
 * state (the entry's initial size), activations (every micro-batch in
 * flight x intermediate) and the rest of the profiled peak (gradients,
 * the forward's outputs, temporaries); under Alpa's rule the parts are
 * not separable and exact is 0. */
typedef struct RepStageMemory {
    int exact;
    double params, optimizer, activations, rest, total; /* bytes per device */
    double available;                                   /* 0 unknown */
    double reserve;   /* the headroom for fragmentation the plan was made with (apsolve
                       * --memory-headroom; 0 unknown or none) */
} RepStageMemory;

typedef struct RepHeadline {
    double iteration;                 /* seconds per iteration */
    const char *source;               /* where iteration comes from */
    int gpus;
    double samples_per_gpu;           /* samples/s per GPU; 0 unknown */
    int seq;                          /* tokens per sample; 0 unknown or not a sequence model */
    double tokens_per_gpu;            /* tokens/s per GPU; 0 unknown */
    double mfu;                       /* model FLOPs / (time x GPUs x peak); 0 unknown */
    double peak_flops;                /* per GPU, in the model's dtype; 0 unknown */
    char layout[640];                 /* "dp 2 x tp 4 x pp 2, ..." */
    RepStageMemory *mem;              /* [n_stages] (owned) */
    size_t n_stages;
} RepHeadline;

/* Fills h from r (apreport_load does, once, into r->headline). 0, or
 * APREPORT_ENOMEM; release with rep_headline_free. */
int rep_headline(const struct ApreportReport *r, RepHeadline *h);
void rep_headline_free(RepHeadline *h);

#endif
