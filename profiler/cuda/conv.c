/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Convolution kernels of a stage on cuDNN's convolution API: forward,
 * backward-data and backward-filter with descriptors built from the
 * kernel's shape (NCHW for f32, NHWC for f16/bf16 as XLA lays them out for
 * tensor cores; FP32 compute), the algorithm chosen by
 * cudnnFind*AlgorithmEx once per shape, dtype and direction and kept in the
 * context's cache, and the call itself.
 */
#include <stdio.h>
#include <string.h>

#include "module_int.h"

#define MAX_ALGOS 16

static cudnnDataType_t dnn_type(ApprofDtype dt)
{
    switch (dt) {
    case APPROF_F16: return CUDNN_DATA_HALF;
    case APPROF_BF16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
    }
}

static int make_descs(CudaCtx *c, CudaOp *op, const ApprofConvKey *key, ApprofDtype dt,
                      char *err, size_t errlen)
{
    cudnnDataType_t t = dnn_type(dt);
    cudnnTensorFormat_t fmt = dt == APPROF_F32 ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    int on, oc, oh, ow, rc;

    rc = cudnn_ck(cudnnCreateTensorDescriptor(&op->xd), "cudnnCreateTensorDescriptor", err, errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnCreateTensorDescriptor(&op->yd), "cudnnCreateTensorDescriptor", err, errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnCreateFilterDescriptor(&op->wd), "cudnnCreateFilterDescriptor", err, errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnCreateConvolutionDescriptor(&op->cd), "cudnnCreateConvolutionDescriptor",
                      err, errlen);
    if (rc < 0)
        return rc;
    rc = cudnn_ck(cudnnSetTensor4dDescriptor(op->xd, fmt, t, (int)key->n, (int)key->c, (int)key->h,
                                             (int)key->w), "input descriptor", err, errlen);
    if (rc < 0)
        return rc;
    rc = cudnn_ck(cudnnSetFilter4dDescriptor(op->wd, t, fmt, (int)key->k, (int)(key->c / key->groups),
                                             (int)key->r, (int)key->s), "filter descriptor", err, errlen);
    if (rc < 0)
        return rc;
    rc = cudnn_ck(cudnnSetConvolution2dDescriptor(op->cd, key->pad[0], key->pad[1], key->stride[0],
                                                  key->stride[1], 1, 1, CUDNN_CROSS_CORRELATION,
                                                  CUDNN_DATA_FLOAT), "convolution descriptor", err, errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnSetConvolutionGroupCount(op->cd, key->groups), "group count", err, errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnSetConvolutionMathType(op->cd, dt != APPROF_F32 ? CUDNN_TENSOR_OP_MATH
                                                          : c->allow_tf32 ? CUDNN_DEFAULT_MATH
                                                                          : CUDNN_FMA_MATH),
                      "math type", err, errlen);
    if (rc < 0)
        return rc;
    rc = cudnn_ck(cudnnGetConvolution2dForwardOutputDim(op->cd, op->xd, op->wd, &on, &oc, &oh, &ow),
                  "output size", err, errlen);
    if (rc < 0)
        return rc;
    if (on != key->n || oc != key->k || oh != op->b.out_h || ow != op->b.out_w) {
        snprintf(err, errlen, "cuDNN output %dx%dx%dx%d differs from the planned %lldx%lldx%lldx%lld",
                 on, oc, oh, ow, (long long)key->n, (long long)key->k, (long long)op->b.out_h,
                 (long long)op->b.out_w);
        return APPROF_EIO;
    }
    return cudnn_ck(cudnnSetTensor4dDescriptor(op->yd, fmt, t, on, oc, oh, ow), "output descriptor",
                    err, errlen);
}

/* Runs the find call of the key's direction; fills *best with the fastest
 * algorithm that succeeded within ws_size. */
static int find_algo(CudaCtx *c, CudaOp *op, const ApprofConvKey *key, void *ws, size_t ws_size,
                     ApprofConvAlgo *best, char *err, size_t errlen)
{
    int n = 0, rc;
    memset(best, 0, sizeof *best);
    if (key->dir == APPROF_CONV_DIR_FWD) {
        cudnnConvolutionFwdAlgoPerf_t perf[MAX_ALGOS];
        rc = cudnn_ck(cudnnFindConvolutionForwardAlgorithmEx(c->dnn, op->xd, op->buf[0], op->wd,
                                                             op->buf[1], op->cd, op->yd, op->buf[2],
                                                             MAX_ALGOS, &n, perf, ws, ws_size),
                      "cudnnFindConvolutionForwardAlgorithmEx", err, errlen);
        for (int i = 0; rc == 0 && i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws_size) {
                *best = (ApprofConvAlgo){(int)perf[i].algo, (int)perf[i].mathType, perf[i].memory,
                                         perf[i].time};
                return 0;
            }
    } else if (key->dir == APPROF_CONV_DIR_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_ALGOS];
        rc = cudnn_ck(cudnnFindConvolutionBackwardDataAlgorithmEx(c->dnn, op->wd, op->buf[1], op->yd,
                                                                  op->buf[2], op->cd, op->xd,
                                                                  op->buf[0], MAX_ALGOS, &n, perf,
                                                                  ws, ws_size),
                      "cudnnFindConvolutionBackwardDataAlgorithmEx", err, errlen);
        for (int i = 0; rc == 0 && i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws_size) {
                *best = (ApprofConvAlgo){(int)perf[i].algo, (int)perf[i].mathType, perf[i].memory,
                                         perf[i].time};
                return 0;
            }
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[MAX_ALGOS];
        rc = cudnn_ck(cudnnFindConvolutionBackwardFilterAlgorithmEx(c->dnn, op->xd, op->buf[0],
                                                                    op->yd, op->buf[2], op->cd,
                                                                    op->wd, op->buf[1], MAX_ALGOS,
                                                                    &n, perf, ws, ws_size),
                      "cudnnFindConvolutionBackwardFilterAlgorithmEx", err, errlen);
        for (int i = 0; rc == 0 && i < n; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws_size) {
                *best = (ApprofConvAlgo){(int)perf[i].algo, (int)perf[i].mathType, perf[i].memory,
                                         perf[i].time};
                return 0;
            }
    }
    if (rc < 0)
        return rc;
    snprintf(err, errlen, "cuDNN found no convolution algorithm within %zu bytes of workspace",
             ws_size);
    return APPROF_EIO;
}

int cuda_conv_prepare(CudaCtx *c, CudaOp *op, ApprofDtype dt, void *ws, size_t ws_size,
                      char *err, size_t errlen)
{
    ApprofConvKey key;
    ApprofConvAlgo a;
    int rc;

    rc = approf_conv_key_from_kernel(&op->k, dt, &key);
    if (rc < 0 || key.n > INT32_MAX || key.c > INT32_MAX || key.h > INT32_MAX ||
        key.w > INT32_MAX || key.k > INT32_MAX) {
        snprintf(err, errlen, "convolution with an unsupported shape");
        return APPROF_EIO;
    }
    rc = make_descs(c, op, &key, dt, err, errlen);
    if (rc < 0)
        return rc;
    if (!approf_algo_cache_get(c->algos, &key, &a) || a.workspace > ws_size) {
        rc = find_algo(c, op, &key, ws, ws_size, &a, err, errlen);
        if (rc < 0)
            return rc;
        if (approf_algo_cache_put(c->algos, &key, &a) < 0) {
            snprintf(err, errlen, "out of host memory for the algorithm cache");
            return APPROF_ENOMEM;
        }
    }
    op->conv_algo = a.algo;
    op->ws_need = a.workspace;
    return cudnn_ck(cudnnSetConvolutionMathType(op->cd, (cudnnMathType_t)a.math), "math type", err,
                    errlen);
}

int cuda_conv_run(CudaCtx *c, CudaOp *op, void *ws, size_t ws_size, char *err, size_t errlen)
{
    const float one = 1.0f, zero = 0.0f;
    void *w = op->ws_need ? ws : NULL;
    size_t wn = op->ws_need ? ws_size : 0;

    switch (op->k.kind) {
    case APPROF_K_CONV_FWD:
        return cudnn_ck(cudnnConvolutionForward(c->dnn, &one, op->xd, op->buf[0], op->wd, op->buf[1],
                                                op->cd, (cudnnConvolutionFwdAlgo_t)op->conv_algo, w,
                                                wn, &zero, op->yd, op->buf[2]),
                        "cudnnConvolutionForward", err, errlen);
    case APPROF_K_CONV_BWD_DATA:
        return cudnn_ck(cudnnConvolutionBackwardData(c->dnn, &one, op->wd, op->buf[1], op->yd,
                                                     op->buf[2], op->cd,
                                                     (cudnnConvolutionBwdDataAlgo_t)op->conv_algo,
                                                     w, wn, &zero, op->xd, op->buf[0]),
                        "cudnnConvolutionBackwardData", err, errlen);
    default:
        return cudnn_ck(cudnnConvolutionBackwardFilter(c->dnn, &one, op->xd, op->buf[0], op->yd,
                                                       op->buf[2], op->cd,
                                                       (cudnnConvolutionBwdFilterAlgo_t)op->conv_algo,
                                                       w, wn, &zero, op->wd, op->buf[1]),
                        "cudnnConvolutionBackwardFilter", err, errlen);
    }
}

void cuda_conv_release(CudaOp *op)
{
    if (op->xd)
        cudnnDestroyTensorDescriptor(op->xd);
    if (op->yd)
        cudnnDestroyTensorDescriptor(op->yd);
    if (op->wd)
        cudnnDestroyFilterDescriptor(op->wd);
    if (op->cd)
        cudnnDestroyConvolutionDescriptor(op->cd);
    op->xd = op->yd = NULL;
    op->wd = NULL;
    op->cd = NULL;
}
