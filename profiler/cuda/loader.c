/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA backend's loader, part of the core: opens the approf-cuda module
 * with dlopen (the core never links CUDA), checks its ABI through
 * "approf_backend_module_init", and wraps the module's backend so that the
 * collectives of a phase, which one GPU cannot execute, are costed on the
 * host (the spec's alpha-beta model, or a hook such as measured curves).
 * Also runs the module's hardware probe. Every failure to get a device is
 * APPROF_ENODEV with a one-line reason.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "probe.h"

#define MODULE_FILE "approf-cuda.so"

typedef struct CudaWrap {
    void *dl;
    ApprofBackend inner;
    ApprofCollCostFn coll_cost;
    void *coll_user;
} CudaWrap;

void approf_cuda_module_path(char *out, size_t len)
{
    const char *env = getenv("APPROF_MODULE_DIR");
    char build[4096];

    if (env && *env) {
        snprintf(out, len, "%s/%s", env, MODULE_FILE);
        return;
    }
    snprintf(build, sizeof build, "%s/%s", APPROF_BUILD_MODULE_DIR, MODULE_FILE);
    if (access(build, R_OK) == 0)
        snprintf(out, len, "%s", build);
    else
        snprintf(out, len, "%s/%s", APPROF_MODULE_DIR, MODULE_FILE);
}

/* Messages reach users as one line. */
static void one_line(char *s)
{
    for (; s && *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

static void *open_module(char *err, size_t errlen)
{
    char path[4096];
    void *dl;
    const char *why;

    approf_cuda_module_path(path, sizeof path);
    if (access(path, F_OK) != 0) {
        if (!HAVE_CUDA && !getenv("APPROF_MODULE_DIR"))
            snprintf(err, errlen, "no CUDA backend: approf was built without the CUDA toolkit");
        else
            snprintf(err, errlen, "no CUDA backend: module %s not found", path);
        return NULL;
    }
    /* NODELETE: CUDA libraries register exit handlers; never unmap them. */
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!dl) {
        why = dlerror();
        snprintf(err, errlen, "no CUDA backend: cannot load %s: %s", path, why ? why : "dlopen failed");
        one_line(err);
    }
    return dl;
}

static int wrap_measure(void *ctx, const ApprofStageProgram *p, int phase,
                        const ApprofHardwareSpec *hw, ApprofMeasurement *out)
{
    CudaWrap *w = ctx;
    double comm = 0.0;
    int rc;

    if (!w || !p || !hw || !out || phase < 0 || phase > 1)
        return APPROF_EINVAL;
    rc = w->inner.measure(w->inner.ctx, p, phase, hw, out);
    if (rc < 0 || out->status != 0)
        return rc;
    for (size_t i = 0; i < p->n_colls[phase]; i++) {
        const ApprofCollective *c = &p->colls[phase][i];
        comm += w->coll_cost ? w->coll_cost(w->coll_user, c, hw)
                             : approf_collective_cost(hw, c);
    }
    out->compute_cost += comm;
    return rc;
}

static int wrap_join(void *ctx, const ApprofProcessGroup *pg, char *err, size_t errlen)
{
    CudaWrap *w = ctx;
    if (!w || !w->inner.join)
        return 0;
    return w->inner.join(w->inner.ctx, pg, err, errlen);
}

static void wrap_destroy(void *ctx)
{
    CudaWrap *w = ctx;
    if (!w)
        return;
    if (w->inner.destroy)
        w->inner.destroy(w->inner.ctx);
    if (w->dl)
        dlclose(w->dl);
    free(w);
}

int approf_backend_cuda(ApprofBackend *out, char *err, size_t errlen)
{
    return approf_backend_cuda_on(-1, out, err, errlen);
}

int approf_backend_cuda_on(int device, ApprofBackend *out, char *err, size_t errlen)
{
    char buf[512] = "";
    CudaWrap *w = NULL;
    ApprofBackendModuleInit init;
    void *sym;
    int rc, inited = 0;

    if (!out)
        return APPROF_EINVAL;
    if (!err || errlen == 0) {
        err = buf;
        errlen = sizeof buf;
    }
    err[0] = '\0';
    memset(out, 0, sizeof *out);
    w = calloc(1, sizeof *w);
    if (!w)
        return APPROF_ENOMEM;
    w->dl = open_module(err, errlen);
    if (!w->dl) {
        rc = APPROF_ENODEV;
        goto cleanup;
    }
    sym = dlsym(w->dl, device >= 0 ? "approf_backend_module_init_on"
                                   : "approf_backend_module_init");
    if (!sym) {
        snprintf(err, errlen, "no CUDA backend: the module has no %s",
                 device >= 0 ? "approf_backend_module_init_on" : "approf_backend_module_init");
        rc = APPROF_ENODEV;
        goto cleanup;
    }
    if (device >= 0) {
        ApprofBackendModuleInitOn init_on;
        memcpy(&init_on, &sym, sizeof init_on);
        rc = init_on(APPROF_BACKEND_ABI, device, &w->inner, err, errlen);
    } else {
        memcpy(&init, &sym, sizeof init);
        rc = init(APPROF_BACKEND_ABI, &w->inner, err, errlen);
    }
    one_line(err);
    if (rc < 0) {
        if (!err[0])
            snprintf(err, errlen, "no CUDA backend: %s", approf_strerror(rc));
        goto cleanup;
    }
    inited = 1;
    if (!w->inner.measure) {
        snprintf(err, errlen, "no CUDA backend: the module returned no measure function");
        rc = APPROF_ENODEV;
        goto cleanup;
    }
    out->name = "cuda";
    out->ctx = w;
    out->measure = wrap_measure;
    out->destroy = wrap_destroy;
    out->join = w->inner.join ? wrap_join : NULL;
    return APPROF_OK;

cleanup:
    if (inited && w->inner.destroy)
        w->inner.destroy(w->inner.ctx);
    if (w->dl)
        dlclose(w->dl);
    free(w);
    return rc;
}

int approf_backend_cuda_set_coll_cost(ApprofBackend *b, ApprofCollCostFn fn, void *user)
{
    CudaWrap *w;
    if (!b || b->measure != wrap_measure || !b->ctx)
        return APPROF_EINVAL;
    w = b->ctx;
    w->coll_cost = fn;
    w->coll_user = user;
    return APPROF_OK;
}

int approf_cuda_probe(const ApprofProbeRequest *req, ApprofProbeInfo *info, char *err,
                      size_t errlen)
{
    char buf[512] = "";
    ApprofProbeModuleRun run;
    void *dl, *sym;
    int rc;

    if (!req || !info)
        return APPROF_EINVAL;
    if (!err || errlen == 0) {
        err = buf;
        errlen = sizeof buf;
    }
    err[0] = '\0';
    memset(info, 0, sizeof *info);
    dl = open_module(err, errlen);
    if (!dl)
        return APPROF_ENODEV;
    sym = dlsym(dl, "approf_probe_module_run");
    if (!sym) {
        snprintf(err, errlen, "no CUDA backend: the module has no approf_probe_module_run");
        dlclose(dl);
        return APPROF_ENODEV;
    }
    memcpy(&run, &sym, sizeof run);
    rc = run(APPROF_PROBE_ABI, req, info, err, errlen);
    one_line(err);
    dlclose(dl);
    return rc;
}

static int stop_at_info(void *user, const ApprofProbeInfo *info)
{
    (void)user, (void)info;
    return 1;
}

int approf_cuda_device_info(ApprofProbeInfo *info, char *err, size_t errlen)
{
    ApprofProbeRequest req;
    int rc;
    memset(&req, 0, sizeof req);
    req.on_info = stop_at_info;
    rc = approf_cuda_probe(&req, info, err, errlen);
    if (rc == 1)
        return 0;
    return rc < 0 ? rc : APPROF_EIO;
}
