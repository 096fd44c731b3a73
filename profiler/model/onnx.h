/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ONNX graphs as models: a serialised onnx.ModelProto, read with protobuf-c
 * and the onnx.proto that Debian's ONNX package ships, mapped onto the
 * operator IR (the mapping is in schemas/model-format.md, section ONNX).
 * approf_model_load calls it when a file's bytes are not JSON. Without
 * protobuf-c at build time every call fails with APPROF_EUNSUPPORTED.
 */
#ifndef APPROF_ONNX_H
#define APPROF_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* 1 when this build reads ONNX files, else 0. */
int approf_onnx_available(void);

/* Parses len bytes of a serialised ModelProto; origin (a file name, may be
 * NULL) prefixes error messages. A symbolic batch dimension (the first dim
 * of the first graph input) becomes batch samples (batch < 1: 1). On
 * success the caller owns *out. Errors: APPROF_EPARSE (not a ModelProto,
 * missing or ill-typed field, unsupported operator: "origin: node 'NAME'
 * (OpType): ..."), APPROF_EINVAL (shapes), APPROF_EUNSUPPORTED (no ONNX
 * support in this build), APPROF_ENOMEM; the message is in err. */
int approf_onnx_parse(const void *data, size_t len, const char *origin, int64_t batch,
                      ApprofGraph **out, char *err, size_t errlen);

#endif
