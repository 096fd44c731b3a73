/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Model files: any graph of the operator IR as JSON (format in
 * schemas/model-format.md). Loading re-runs shape inference on every
 * operator and validates the graph, so a loaded file and the zoo model it
 * was exported from have the same approf_graph_hash.
 */
#ifndef APPROF_MODELFILE_H
#define APPROF_MODELFILE_H

#include <stddef.h>

#include <stdint.h>

#include "graph.h"

/* Parses a model from a NUL-terminated JSON text; origin (a file name, may
 * be NULL) prefixes error messages. On success the caller owns *out. Errors:
 * APPROF_EPARSE (malformed JSON, wrong types, unknown keys or ops) or
 * APPROF_EINVAL (shapes, references, sizes), with "origin: op 'name':
 * field F: ..." in err; APPROF_EUNSUPPORTED without jansson. */
int approf_model_parse(const char *text, const char *origin, ApprofGraph **out,
                       char *err, size_t errlen);
/* Reads and parses the file at path (see approf_model_parse): JSON, or an
 * ONNX ModelProto when the bytes are not JSON (onnx.h). */
int approf_model_load(const char *path, ApprofGraph **out, char *err, size_t errlen);
/* The same, an ONNX graph with a symbolic batch dimension built for batch
 * samples (batch < 1: 1); a JSON model file has its own batch. */
int approf_model_load_batch(const char *path, int64_t batch, ApprofGraph **out, char *err,
                            size_t errlen);
/* Serialises g; the caller frees *out with free(). */
int approf_model_to_json(const ApprofGraph *g, char **out);

#endif
