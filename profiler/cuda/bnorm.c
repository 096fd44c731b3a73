/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Batch norm of a stage through cuDNN, as PyTorch runs it on a GPU
 * (aten/src/ATen/native/cudnn/BatchNorm.cpp: cudnn_batch_norm in training
 * mode for 4-D inputs): cudnnBatchNormalizationForwardTraining and
 * cudnnBatchNormalizationBackward over the operator's arrays
 * (op_shape.h's BATCH_NORM layout: f32 scale, bias, saved mean and inverse
 * deviation, running statistics, parameter gradients). The layout follows
 * the convolutions' (NCHW for f32, NHWC for 16-bit); the mode is
 * PyTorch's choice for training: spatial for NCHW, spatial-persistent for
 * channels-last. cuDNN's own correctness is cuDNN's: the device test checks
 * that the calls succeed, test_cuda_kernels checks the module's own batch
 * norm kernel against a CPU reference.
 */
#include <stdio.h>
#include <string.h>

#include "module_int.h"

#define BN_EPS 1e-5

static cudnnBatchNormMode_t bn_mode(ApprofDtype dt)
{
    return dt == APPROF_F32 ? CUDNN_BATCHNORM_SPATIAL : CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
}

int cuda_bn_prepare(CudaCtx *c, CudaOp *op, ApprofDtype dt, char *err, size_t errlen)
{
    const ApprofOpShape *s = &op->b.op;
    cudnnDataType_t t = dt == APPROF_F16 ? CUDNN_DATA_HALF
                        : dt == APPROF_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    cudnnTensorFormat_t fmt = dt == APPROF_F32 ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    int rc;

    (void)c;
    if (s->n > INT32_MAX || s->c > INT32_MAX || s->h > INT32_MAX || s->w > INT32_MAX) {
        snprintf(err, errlen, "batch norm of %lld x %lld x %lld x %lld: too large for cuDNN",
                 (long long)s->n, (long long)s->c, (long long)s->h, (long long)s->w);
        return APPROF_EIO;
    }
    if (approf_op_layout(s, op->arrays) < 0) {
        snprintf(err, errlen, "batch norm: no layout for its shape");
        return APPROF_EIO;
    }
    rc = cudnn_ck(cudnnCreateTensorDescriptor(&op->bn_x), "cudnnCreateTensorDescriptor", err,
                  errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnCreateTensorDescriptor(&op->bn_p), "cudnnCreateTensorDescriptor", err,
                      errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnSetTensor4dDescriptor(op->bn_x, fmt, t, (int)s->n, (int)s->c, (int)s->h,
                                                 (int)s->w), "batch norm input descriptor", err,
                      errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnDeriveBNTensorDescriptor(op->bn_p, op->bn_x, bn_mode(dt)),
                      "cudnnDeriveBNTensorDescriptor", err, errlen);
    return rc;
}

/* Array i of buffer b (in, out, aux). */
static void *arr(CudaOp *op, int b, int i)
{
    return (char *)op->buf[b] + op->arrays[b].offset[i];
}

int cuda_bn_run(CudaCtx *c, CudaOp *op, ApprofDtype dt, char *err, size_t errlen)
{
    const float one = 1.0f, zero = 0.0f;
    if (!op->b.op.backward)
        return cudnn_ck(cudnnBatchNormalizationForwardTraining(
                            c->dnn, bn_mode(dt), &one, &zero, op->bn_x, arr(op, 0, 0), op->bn_x,
                            arr(op, 1, 0), op->bn_p, arr(op, 2, 0), arr(op, 2, 1), 0.1,
                            arr(op, 2, 4), arr(op, 2, 5), BN_EPS, arr(op, 2, 2), arr(op, 2, 3)),
                        "cudnnBatchNormalizationForwardTraining", err, errlen);
    return cudnn_ck(cudnnBatchNormalizationBackward(
                        c->dnn, bn_mode(dt), &one, &zero, &one, &zero, op->bn_x, arr(op, 0, 0),
                        op->bn_x, arr(op, 0, 1), op->bn_x, arr(op, 1, 0), op->bn_p, arr(op, 2, 0),
                        arr(op, 2, 6), arr(op, 2, 7), BN_EPS, arr(op, 2, 2), arr(op, 2, 3)),
                    "cudnnBatchNormalizationBackward", err, errlen);
}

void cuda_bn_release(CudaOp *op)
{
    if (op->bn_x)
        cudnnDestroyTensorDescriptor(op->bn_x);
    if (op->bn_p)
        cudnnDestroyTensorDescriptor(op->bn_p);
    op->bn_x = op->bn_p = NULL;
}
