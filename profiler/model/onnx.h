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

/* Values for an ONNX graph's symbolic input dimensions (dim_param). The
 * batch symbol (the first dim of the first input when symbolic, and the
 * names batch, batch_size, batchsize anywhere) is batch samples (< 1: 1);
 * a sequence name (seq, seq_len, seqlen, seq_length, sequence,
 * sequence_len, sequence_length, decoder_sequence_length,
 * encoder_sequence_length; any case) is seq_len when it is > 0; names[i]
 * is values[i] (an exact name, taking precedence over the sequence names;
 * the batch's name is refused: give the batch). Any other symbolic
 * dimension is refused naming the input, the dim index and the name, and
 * so is a name bound here that no input has. */
#define APPROF_ONNX_MAX_BINDINGS 16
#define APPROF_ONNX_DIM_NAME_MAX 64
typedef struct ApprofOnnxDims {
    int64_t batch;
    int64_t seq_len;
    int n;
    char names[APPROF_ONNX_MAX_BINDINGS][APPROF_ONNX_DIM_NAME_MAX];
    int64_t values[APPROF_ONNX_MAX_BINDINGS];
} ApprofOnnxDims;

/* Parses len bytes of a serialised ModelProto; origin (a file name, may be
 * NULL) prefixes error messages; dims (NULL: none bound, batch 1) binds the
 * symbolic dimensions. On success the caller owns *out. Errors:
 * APPROF_EPARSE (not a ModelProto, missing or ill-typed field, unbound
 * symbolic dimension, unsupported operator: "origin: node 'NAME'
 * (OpType): ..."), APPROF_EINVAL (shapes), APPROF_EUNSUPPORTED (no ONNX
 * support in this build), APPROF_ENOMEM; the message is in err. */
int approf_onnx_parse_dims(const void *data, size_t len, const char *origin,
                           const ApprofOnnxDims *dims, ApprofGraph **out, char *err,
                           size_t errlen);
/* approf_onnx_parse_dims with the process-wide bindings (below) and batch:
 * what approf_model_load_batch calls. */
int approf_onnx_parse(const void *data, size_t len, const char *origin, int64_t batch,
                      ApprofGraph **out, char *err, size_t errlen);

/* The process-wide bindings the model commands set from --seq-len and
 * --dim NAME=N before they load a model file (approf_model_load carries no
 * options). approf_onnx_bind takes "NAME=N" (N in 1..2^24, NAME 1..63
 * bytes, a later NAME replacing an earlier one): 0, or APPROF_EINVAL with
 * the reason in err. approf_onnx_bound: how many names are bound. */
int approf_onnx_bind(const char *spec, char *err, size_t errlen);
void approf_onnx_set_seq_len(int64_t seq_len);
int approf_onnx_bound(void);

/* What the last parse of this process has to warn about, one line ("" when
 * nothing):
 * initializers whose external data file (external_data.location) is not
 * beside the model, shorter than offset + length, or whose length is not
 * the tensor's size. Only shapes and dtypes are read, so none of these
 * stops the load; the commands print it. */
const char *approf_onnx_notice(void);

#endif
