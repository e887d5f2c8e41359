/* program.c: builds cl/<family>.cl for a device with dtype options, keeps
 * the programs and kernels per device, and enqueues kernel launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const clt__cl_source *clt__cl_source_find(const char *name)
{
    for (const clt__cl_source *s = clt__cl_sources; s->name; s++)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

/* Appends the build log of a failed build to the current message. */
static void append_build_log(cl_program prog, cl_device_id dev)
{
    size_t len = 0;
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) != CL_SUCCESS ||
        len == 0)
        return;
    char *log = malloc(len + 1);
    if (log == NULL)
        return;
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) == CL_SUCCESS) {
        log[len] = '\0';
        clt__error_append("\nbuild log:\n");
        clt__error_append(log);
    }
    free(log);
}

/* Called with dev->lock held. */
static clt_status build_locked(clt_device *dev, const char *family, const char *options,
                               const char *key, clt__program_entry **out)
{
    clt_status st = CLT_OK;
    cl_program prog = NULL;
    clt__program_entry *e = NULL;
    const clt__cl_source *prelude = clt__cl_source_find("prelude");
    const clt__cl_source *src = clt__cl_source_find(family);
    if (prelude == NULL || src == NULL)
        return clt__error(CLT_ERR_INTERNAL, "no embedded kernel source cl/%s.cl", family);

    const char *texts[2] = {prelude->text, src->text};
    size_t lens[2] = {prelude->size, src->size};
    cl_int err = CL_SUCCESS;
    prog = clCreateProgramWithSource(dev->context, 2, texts, lens, &err);
    CLT__CL_CHECK(err, "clCreateProgramWithSource for cl/%s.cl on %s", family, dev->label);
    err = clBuildProgram(prog, 1, &dev->id, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS)
            st = clt__error(CLT_ERR_BUILD_FAILED,
                            "building cl/%s.cl for %s (%s) with options '%s': %s (%d)", family,
                            dev->label, dev->info.name, options, clt_cl_error_name(err), err);
        else
            st = clt__cl_error(err, "building cl/%s.cl for %s (%s) with options '%s'", family,
                               dev->label, dev->info.name, options);
        append_build_log(prog, dev->id);
        goto done;
    }
    e = calloc(1, sizeof *e);
    if (e == NULL || (e->key = strdup(key)) == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "program cache: out of host memory");
        goto done;
    }
    e->program = prog;
    prog = NULL;
    e->next = dev->programs;
    dev->programs = e;
    *out = e;
    e = NULL;
done:
    if (e) {
        free(e->key);
        free(e);
    }
    if (prog)
        clReleaseProgram(prog);
    return st;
}

static clt_status program_locked(clt_device *dev, const char *family, const char *options,
                                 clt__program_entry **out)
{
    size_t klen = strlen(family) + strlen(options) + 2;
    char stack[512];
    char *key = klen <= sizeof stack ? stack : malloc(klen);
    if (key == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "program cache: out of host memory");
    snprintf(key, klen, "%s\n%s", family, options);
    clt_status st = CLT_OK;
    clt__program_entry *e = dev->programs;
    while (e && strcmp(e->key, key) != 0)
        e = e->next;
    if (e == NULL)
        st = build_locked(dev, family, options, key, &e);
    if (key != stack)
        free(key);
    if (st == CLT_OK)
        *out = e;
    return st;
}

clt_status clt__program_get(clt_device *dev, const char *family, const char *options,
                            cl_program *out)
{
    clt_status st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    pthread_mutex_lock(&dev->lock);
    clt__program_entry *e = NULL;
    st = program_locked(dev, family, options, &e);
    if (st == CLT_OK)
        *out = e->program;
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static clt_status kernel_locked(clt_device *dev, clt__program_entry *p, const char *name,
                                cl_kernel *out)
{
    clt__kernel_entry *k = p->kernels;
    while (k && strcmp(k->name, name) != 0)
        k = k->next;
    if (k) {
        *out = k->kernel;
        return CLT_OK;
    }
    if (strlen(name) >= sizeof k->name)
        return clt__error(CLT_ERR_INTERNAL, "kernel name too long: %s", name);
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(p->program, name, &err);
    if (err != CL_SUCCESS)
        return clt__cl_error(err, "clCreateKernel '%s' on %s", name, dev->label);
    k = calloc(1, sizeof *k);
    if (k == NULL) {
        clReleaseKernel(kernel);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "kernel cache: out of host memory");
    }
    strcpy(k->name, name);
    k->kernel = kernel;
    k->next = p->kernels;
    p->kernels = k;
    *out = kernel;
    return CLT_OK;
}

clt_status clt__launch(clt_device *dev, const char *family, const char *options,
                       const char *kernel, cl_uint work_dim, const size_t *gws,
                       const size_t *lws, size_t nargs, const clt__arg *args)
{
    clt_status st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    for (cl_uint d = 0; d < work_dim; d++)
        if (gws[d] == 0)
            return CLT_OK; /* nothing to do; OpenCL rejects empty ranges */
    pthread_mutex_lock(&dev->lock);
    clt__program_entry *p = NULL;
    cl_kernel k = NULL;
    CLT__TRY(program_locked(dev, family, options, &p));
    CLT__TRY(kernel_locked(dev, p, kernel, &k));
    for (size_t i = 0; i < nargs; i++)
        CLT__CL_CHECK(clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].ptr),
                      "clSetKernelArg %zu of kernel '%s' (cl/%s.cl) on %s", i, kernel, family,
                      dev->label);
    cl_event ev = NULL;
    CLT__CL_CHECK(clEnqueueNDRangeKernel(dev->queue, k, work_dim, NULL, gws, lws, 0, NULL,
                                         clt__profiling() ? &ev : NULL),
                  "clEnqueueNDRangeKernel '%s' (cl/%s.cl) on %s, global size %zu", kernel, family,
                  dev->label, gws[0]);
    clt__count_launch();
    clt__after_first_launch(dev);
    if (ev)
        clt__profile_event(kernel, ev);
done:
    pthread_mutex_unlock(&dev->lock);
    return st;
}

void clt__programs_release(clt_device *dev)
{
    clt__program_entry *p = dev->programs;
    while (p) {
        clt__program_entry *next = p->next;
        clt__kernel_entry *k = p->kernels;
        while (k) {
            clt__kernel_entry *kn = k->next;
            clReleaseKernel(k->kernel);
            free(k);
            k = kn;
        }
        clReleaseProgram(p->program);
        free(p->key);
        free(p);
        p = next;
    }
    dev->programs = NULL;
}

/* ---- dtypes --------------------------------------------------------------- */

bool clt__dtype_valid(clt_dtype dt)
{
    return (int)dt >= 0 && dt < CLT_DTYPE_COUNT;
}

bool clt__dtype_is_float(clt_dtype dt)
{
    return dt == CLT_FLOAT32 || dt == CLT_FLOAT64 || dt == CLT_FLOAT16;
}

void clt__dtype_defs(clt__strbuf *sb, const char *p, clt_dtype dt)
{
    static const struct {
        const char *storage, *compute, *load, *store;
        int is_float, is_int, is_bool, is_unsigned;
    } cl[CLT_DTYPE_COUNT] = {
        [CLT_FLOAT32] = {"float", "float", "LOAD_PLAIN", "STORE_PLAIN", 1, 0, 0, 0},
        [CLT_FLOAT64] = {"double", "double", "LOAD_PLAIN", "STORE_PLAIN", 1, 0, 0, 0},
        [CLT_FLOAT16] = {"half", "float", "LOAD_HALF", "STORE_HALF", 1, 0, 0, 0},
        [CLT_INT32] = {"int", "int", "LOAD_PLAIN", "STORE_PLAIN", 0, 1, 0, 0},
        [CLT_INT64] = {"long", "long", "LOAD_PLAIN", "STORE_PLAIN", 0, 1, 0, 0},
        [CLT_UINT8] = {"uchar", "uint", "LOAD_PLAIN", "STORE_PLAIN", 0, 1, 0, 1},
        [CLT_BOOL] = {"uchar", "uint", "LOAD_PLAIN", "STORE_BOOL", 0, 0, 1, 1},
    };
    if (!clt__dtype_valid(dt))
        return;
    clt__sb_printf(sb,
                   " -D%s=%s -D%s_C=%s -D%s_LOAD=%s -D%s_STORE=%s -D%s_IS_FLOAT=%d"
                   " -D%s_IS_INT=%d -D%s_IS_BOOL=%d -D%s_IS_UNSIGNED=%d -D%s_ID=%d",
                   p, cl[dt].storage, p, cl[dt].compute, p, cl[dt].load, p, cl[dt].store, p,
                   cl[dt].is_float, p, cl[dt].is_int, p, cl[dt].is_bool, p, cl[dt].is_unsigned, p,
                   (int)dt);
    if (dt == CLT_FLOAT64 && !(sb->data && strstr(sb->data, "-DCLT_FP64")))
        clt__sb_printf(sb, " -DCLT_FP64");
    if (dt == CLT_FLOAT16 && !(sb->data && strstr(sb->data, "-DCLT_FP16")))
        clt__sb_printf(sb, " -DCLT_FP16");
}

size_t clt__scalar_arg(clt_dtype dtype, double v, void *buf)
{
    switch (dtype) {
    case CLT_FLOAT64: {
        cl_double x = v;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_FLOAT32:
    case CLT_FLOAT16: {
        cl_float x = (cl_float)v;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_INT32: {
        cl_int x = (cl_int)v;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_INT64: {
        cl_long x = (cl_long)v;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_UINT8: {
        cl_uint x = (cl_uint)(cl_uchar)(cl_int)v;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_BOOL: {
        cl_uint x = v != 0;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_DTYPE_COUNT:
        break;
    }
    return 0;
}
