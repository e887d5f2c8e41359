/* matmul.c: matrix products with torch.matmul semantics, served by CLBlast's
 * GEMM or, for float32 and float64 on CPU devices, by the CPU-tuned kernel
 * (gemm_cpu.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#include <clblast_c.h>

/* CLBlast keeps its compiled kernels in a process-wide cache that retains
 * each device's context; dev->blas marks the devices that put something
 * there, so that clt__blas_release knows to clear it. */
static char blas_used;

/* clt__blas_release is handed to the device layer once, on first use, so
 * that clt_shutdown clears CLBlast's cache without calling up into ops. */
static pthread_once_t release_once = PTHREAD_ONCE_INIT;

static void register_release(void)
{
    clt__device_release_hook(clt__blas_release);
}

/* One operand as GEMM sees it: a buffer with an offset, a leading dimension,
 * a batch stride (0 repeats one matrix) and a transpose flag, all in
 * elements.  `t` is the handle that keeps the storage alive. */
typedef struct operand {
    clt_tensor *t;
    size_t off, ld, stride;
    bool trans;
} operand;

/* The matrix [r, c] with strides sr, sc as a row-major (ld) or transposed
 * (column-major, ld) operand; false when neither fits. */
static bool matrix_layout(int64_t r, int64_t c, int64_t sr, int64_t sc, bool *trans, int64_t *ld)
{
    int64_t rr = r > 1 ? r : 1, cc = c > 1 ? c : 1;
    if ((c <= 1 || sc == 1) && (r <= 1 || sr >= cc)) {
        *trans = false;
        *ld = r <= 1 ? cc : sr;
        return true;
    }
    if ((r <= 1 || sr == 1) && (c <= 1 || sc >= rr)) {
        *trans = true;
        *ld = c <= 1 ? rr : sc;
        return true;
    }
    return false;
}

/* Batch strides bs over the batch shape that collapse into one stride over
 * the flattened batch index. */
static bool uniform_batch(int nb, const int64_t *bshape, const int64_t *bs, int64_t *stride)
{
    int64_t s = -1, p = 1;
    for (int d = nb - 1; d >= 0; d--) {
        if (bshape[d] > 1) {
            if (s < 0) {
                s = bs[d];
                if (s < 0)
                    return false;
            } else if (bs[d] != s * p) {
                return false;
            }
        }
        p *= bshape[d];
    }
    *stride = s < 0 ? 0 : s;
    return true;
}

/* Geometry of x as a batch (broadcast to bshape) of [r, c] matrices.  A 1-D
 * x is a row ([1, k], is_a) or a column ([k, 1]). */
static void geometry(const clt_tensor *x, bool is_a, int nb, const int64_t *bshape, int64_t *bs,
                     int64_t *sr, int64_t *sc)
{
    if (x->ndim == 1) {
        *sr = is_a ? 0 : x->strides[0];
        *sc = is_a ? x->strides[0] : 0;
        for (int d = 0; d < nb; d++)
            bs[d] = 0;
        return;
    }
    *sr = x->strides[x->ndim - 2];
    *sc = x->strides[x->ndim - 1];
    int own = x->ndim - 2;
    for (int d = 0; d < nb; d++) {
        int ix = own - nb + d;
        bs[d] = (ix >= 0 && x->shape[ix] == bshape[d] && bshape[d] != 1) ? x->strides[ix] : 0;
    }
}

/* Builds the operand of x, copying it only when no layout fits.  On the CPU
 * kernel (`cpu`), a single row of A or column of B may also repeat one
 * element along K (stride 0, as clt_expand makes), and a 2-D matrix may
 * repeat one row (a [1, c] row expanded to [r, c]): leading dimension 0,
 * read in place.  Both keep the orientation and batch stride a copy would
 * have, so the product takes the same kernel and gives the same bits.  With
 * `cols` (see cols_in_place), a 2-D B that repeats one column (strides
 * [1, 0], a [K, 1] column expanded to [K, N]) is read in place too, as a
 * transposed operand with leading dimension 0, which the CPU kernels take
 * the way they take its copy. */
static clt_status prepare(const clt_tensor *x, bool is_a, int nb, const int64_t *bshape,
                          int64_t r, int64_t c, bool cpu, bool cols, operand *op,
                          const char *fn)
{
    int64_t bs[CLT_MAX_DIMS], sr, sc, ld, stride;
    bool trans;
    clt_tensor *own = NULL;
    clt_status st = CLT_OK;

    geometry(x, is_a, nb, bshape, bs, &sr, &sc);
    if (cpu && is_a && r == 1 && sc == 0) {
        trans = true;
        ld = 0;
    } else if (cpu && !is_a && c == 1 && sr == 0) {
        trans = false;
        ld = 0;
    } else if (cpu && x->ndim == 2 && r > 1 && c > 1 && sr == 0 && sc == 1) {
        trans = false;
        ld = 0;
    } else if (cpu && cols && !is_a && x->ndim == 2 && r > 1 && c > 1 && sr == 1 && sc == 0) {
        trans = true;
        ld = 0;
    } else if (!matrix_layout(r, c, sr, sc, &trans, &ld)) {
        CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &own));
        x = own;
        geometry(x, is_a, nb, bshape, bs, &sr, &sc);
        matrix_layout(r, c, sr, sc, &trans, &ld);
    }
    if (uniform_batch(nb, bshape, bs, &stride)) {
        CLT__TRY(clt__tensor_view(x, x->ndim, x->shape, x->strides, x->offset, &op->t));
    } else {
        /* A batch that no single stride walks: materialise the broadcast. */
        int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
        memcpy(shape, bshape, sizeof(int64_t) * (size_t)nb);
        memcpy(strides, bs, sizeof(int64_t) * (size_t)nb);
        shape[nb] = r;
        shape[nb + 1] = c;
        strides[nb] = sr;
        strides[nb + 1] = sc;
        clt_tensor *v = NULL;
        CLT__TRY(clt__tensor_view(x, nb + 2, shape, strides, x->offset, &v));
        st = clt__contiguous_as(fn, v, x->dtype, &op->t);
        clt_tensor_free(v);
        if (st != CLT_OK)
            goto done;
        trans = false;
        ld = c > 1 ? c : 1;
        stride = r * c;
    }
    op->off = (size_t)op->t->offset;
    op->ld = (size_t)ld;
    op->stride = (size_t)stride;
    op->trans = trans;
done:
    clt_tensor_free(own);
    return st;
}

/* Whether a B that repeats one column may be read in place by the CPU
 * kernels (clt__gemm_cpu takes it as its row-major copy), for a product
 * of M rows (after folding) and dtype: not when mm_small, which reads B by
 * rows only, would take the copy. */
static bool cols_in_place(const clt_device *dev, clt_dtype dtype, size_t M, size_t N, size_t K)
{
    return !(dtype == CLT_FLOAT32 && clt__mm_small_fits(dev, false, M, N, K));
}

static CLBlastTranspose tr(bool t)
{
    return t ? CLBlastTransposeYes : CLBlastTransposeNo;
}

/* Enqueues C = A * B through CLBlast, batched when batch > 1. */
static clt_status clblast_gemm(clt_device *dev, clt_dtype dtype, size_t M, size_t N, size_t K,
                               const operand *A, const operand *B, cl_mem C, size_t batch,
                               const char *fn)
{
    const char *name = NULL;
    CLBlastStatusCode e = CLBlastSuccess;
    cl_mem ma = clt__mem(A->t), mb = clt__mem(B->t);
    CLBlastLayout rm = CLBlastLayoutRowMajor;
    cl_event ev = NULL;
    cl_event *evp = clt__profiling() ? &ev : NULL;

    if (dtype != CLT_FLOAT32 && dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s: CLBlast serves float32 and float64, not %s",
                          fn, clt_dtype_name(dtype));
    pthread_once(&release_once, register_release);
    pthread_mutex_lock(&dev->lock);
    dev->blas = &blas_used;
    cl_command_queue q = dev->queue;
    if (batch == 1) {
        switch (dtype) {
        case CLT_FLOAT32:
            name = "CLBlastSgemm";
            e = CLBlastSgemm(rm, tr(A->trans), tr(B->trans), M, N, K, 1.0f, ma, A->off, A->ld,
                             mb, B->off, B->ld, 0.0f, C, 0, N, &q, evp);
            break;
        case CLT_FLOAT64:
            name = "CLBlastDgemm";
            e = CLBlastDgemm(rm, tr(A->trans), tr(B->trans), M, N, K, 1.0, ma, A->off, A->ld, mb,
                             B->off, B->ld, 0.0, C, 0, N, &q, evp);
            break;
        default: /* float16 went through half_product */
            break;
        }
    } else {
        switch (dtype) {
        case CLT_FLOAT32:
            name = "CLBlastSgemmStridedBatched";
            e = CLBlastSgemmStridedBatched(rm, tr(A->trans), tr(B->trans), M, N, K, 1.0f, ma,
                                           A->off, A->ld, A->stride, mb, B->off, B->ld,
                                           B->stride, 0.0f, C, 0, N, M * N, batch, &q, evp);
            break;
        case CLT_FLOAT64:
            name = "CLBlastDgemmStridedBatched";
            e = CLBlastDgemmStridedBatched(rm, tr(A->trans), tr(B->trans), M, N, K, 1.0, ma,
                                           A->off, A->ld, A->stride, mb, B->off, B->ld,
                                           B->stride, 0.0, C, 0, N, M * N, batch, &q, evp);
            break;
        default: /* float16 went through half_product */
            break;
        }
    }
    if (e == CLBlastSuccess) {
        clt__count_launch();
        /* Each CLBlast routine's first run is waited for once, as
         * clt__launch does for kernels (see clt__after_first_run). */
        static pthread_mutex_t ran_lock = PTHREAD_MUTEX_INITIALIZER;
        static const char *ran[16];
        static size_t nran;
        bool seen = false;
        pthread_mutex_lock(&ran_lock);
        for (size_t i = 0; i < nran; i++)
            seen = seen || ran[i] == name;
        if (!seen && nran < sizeof ran / sizeof ran[0])
            ran[nran++] = name;
        pthread_mutex_unlock(&ran_lock);
        if (!seen)
            clt__after_first_run(dev);
    }
    pthread_mutex_unlock(&dev->lock);
    if (e != CLBlastSuccess) {
        if (ev)
            clReleaseEvent(ev);
        return clt__clblast_error((int)e, "%s: %s (%zux%zu @ %zux%zu, batch %zu, %s) on %s (%s)",
                                  fn, name, M, K, K, N, batch, clt_dtype_name(dtype), dev->label,
                                  dev->info.name);
    }
    if (ev)
        clt__profile_event(name, ev);
    return CLT_OK;
}

static clt_status check_operands(const clt_tensor *a, const clt_tensor *b, const char *fn)
{
    clt_status st = clt__same_device(a, b, fn);
    if (st != CLT_OK)
        return st;
    if (a->ndim == 0 || b->ndim == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: both arguments to matmul need to be at least 1D, but they are %dD "
                          "and %dD",
                          fn, a->ndim, b->ndim);
    if (a->dtype != b->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected m1 and m2 to have the same dtype, but got: %s != %s", fn,
                          clt_dtype_name(a->dtype), clt_dtype_name(b->dtype));
    if (!clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: matmul supports float32, float64 and float16, not %s; convert "
                          "with clt_to_dtype first",
                          fn, clt_dtype_name(a->dtype));
    st = clt__check_dtype(a->dev, a->dtype, fn);
    if (st != CLT_OK)
        return st;
    int64_t ka = a->shape[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    if (ka != kb) {
        char s1[160], s2[160];
        int64_t ra = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
        int64_t cb = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and "
                          "%lldx%lld): tensors of shapes %s and %s",
                          fn, (long long)ra, (long long)ka, (long long)kb, (long long)cb,
                          clt__shape_str(s1, sizeof s1, a->ndim, a->shape),
                          clt__shape_str(s2, sizeof s2, b->ndim, b->shape));
    }
    return CLT_OK;
}

/* float16 products accumulate in float32, as torch's on GPUs (cuBLAS with
 * a float32 compute type): the operands widened, one float32 GEMM, its
 * result rounded to half once.  CLBlast's Hgemm would sum in half (4096
 * ones make 2048) and needs cl_khr_fp16. */
static clt_status half_product(const clt_tensor *a, const clt_tensor *b, int backend,
                               clt_tensor **out, const char *fn)
{
    clt_tensor *a32 = NULL, *b32 = NULL, *r32 = NULL;
    clt_status st = clt__to_dtype(a, CLT_FLOAT32, &a32, fn);
    if (st == CLT_OK)
        st = clt__to_dtype(b, CLT_FLOAT32, &b32, fn);
    if (st == CLT_OK)
        st = clt__matmul_backend(a32, b32, backend, &r32, fn);
    if (st == CLT_OK)
        st = clt__to_dtype(r32, a->dtype, out, fn);
    clt_tensor_free(a32);
    clt_tensor_free(b32);
    clt_tensor_free(r32);
    return st;
}

clt_status clt__matmul_backend(const clt_tensor *a, const clt_tensor *b, int backend,
                               clt_tensor **out, const char *fn)
{
    if (out)
        *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    CLT__REQUIRE_ARG(out, fn);
    clt_status st = check_operands(a, b, fn);
    if (st != CLT_OK)
        return st;
    if (clt__dtype_is_half(a->dtype))
        return half_product(a, b, backend, out, fn);

    int na = a->ndim, nb = b->ndim;
    int64_t M = na == 1 ? 1 : a->shape[na - 2];
    int64_t K = a->shape[na - 1];
    int64_t N = nb == 1 ? 1 : b->shape[nb - 1];
    int nbatch = 0;
    int64_t bshape[CLT_MAX_DIMS];
    int nba = na > 2 ? na - 2 : 0, nbb = nb > 2 ? nb - 2 : 0;
    st = clt__broadcast_shapes(nba, a->shape, nbb, b->shape, &nbatch, bshape, fn);
    if (st != CLT_OK) {
        char s1[160], s2[160], msg[400];
        snprintf(msg, sizeof msg, " (the batch dimensions of matmul operands %s and %s)",
                 clt__shape_str(s1, sizeof s1, na, a->shape),
                 clt__shape_str(s2, sizeof s2, nb, b->shape));
        clt__error_append(msg);
        return st;
    }

    int nr = nbatch;
    int64_t rshape[CLT_MAX_DIMS];
    memcpy(rshape, bshape, sizeof(int64_t) * (size_t)nbatch);
    if (na > 1)
        rshape[nr++] = M;
    if (nb > 1)
        rshape[nr++] = N;

    bool cpu = false;
    if (backend == CLT__GEMM_CPU)
        cpu = true;
    else if (backend == CLT__GEMM_AUTO)
        cpu = clt__gemm_cpu_suitable(a->dev, a->dtype);
    if (cpu && a->dtype != CLT_FLOAT32 && a->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: the CPU GEMM kernel serves float32 and float64, not %s", fn,
                          clt_dtype_name(a->dtype));

    clt_tensor *r = NULL;
    operand A = {0}, B = {0};
    bool empty = M == 0 || N == 0;
    for (int d = 0; d < nbatch; d++)
        empty |= bshape[d] == 0;
    if (K == 0 && !empty) {
        CLT__TRY(clt__error_in(clt__full(a->dev, a->dtype, nr, rshape, 0.0, &r), fn));
        goto finish;
    }
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, nr, rshape, &r));
    if (r->numel == 0)
        goto finish;
    CLT__TRY(prepare(a, true, nbatch, bshape, M, K, cpu, false, &A, fn));

    int64_t batch = 1; /* r has batch * M * N elements: no overflow */
    for (int d = 0; d < nbatch; d++)
        batch *= bshape[d];
    size_t Mg = (size_t)M, bg = (size_t)batch;
    /* One matrix repeated on the right and row-major batches on the left
     * make a single taller product, as torch folds them (not a repeated
     * row, ld 0, which the copy it stands for would not fold).  A 2-D B,
     * the only one that may repeat a column in place, has batch stride 0. */
    bool fold = bg > 1 && !A.trans && A.ld > 0 && A.stride == Mg * A.ld;
    bool cols = cpu && b->ndim == 2 &&
                cols_in_place(a->dev, a->dtype, fold ? Mg * bg : Mg, (size_t)N, (size_t)K);
    CLT__TRY(prepare(b, false, nbatch, bshape, K, N, cpu, cols, &B, fn));
    if (fold && B.stride == 0) {
        Mg *= bg;
        bg = 1;
    }
    if (cpu)
        CLT__TRY(clt__error_in(
            clt__gemm_cpu_auto(a->dev, a->dtype, A.trans, B.trans, Mg, (size_t)N, (size_t)K,
                               clt__mem(A.t), A.off, A.ld, A.stride, clt__mem(B.t), B.off, B.ld,
                               B.stride, clt__mem(r), 0, (size_t)N, Mg * (size_t)N, bg),
            fn));
    else
        CLT__TRY(clblast_gemm(a->dev, a->dtype, Mg, (size_t)N, (size_t)K, &A, &B, clt__mem(r),
                              bg, fn));
finish:
    *out = r;
    r = NULL;
done:
    clt_tensor_free(A.t);
    clt_tensor_free(B.t);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__gemm_cpu_auto(clt_device *dev, clt_dtype dtype, bool trans_a, bool trans_b,
                              size_t M, size_t N, size_t K, cl_mem A, size_t a_off, size_t lda,
                              size_t stride_a, cl_mem B, size_t b_off, size_t ldb,
                              size_t stride_b, cl_mem C, size_t c_off, size_t ldc,
                              size_t stride_c, size_t batch)
{
    if (dtype == CLT_FLOAT32 && clt__mm_small_fits(dev, trans_b, M, N, K))
        return clt__mm_small_f32(dev, trans_a, M, N, K, A, a_off, lda, stride_a, B, b_off, ldb,
                                 stride_b, C, c_off, ldc, stride_c, batch, NULL, 0);
    return clt__gemm_cpu(dev, dtype, trans_a, trans_b, M, N, K, A, a_off, lda, stride_a, B,
                         b_off, ldb, stride_b, C, c_off, ldc, stride_c, batch);
}

clt_status clt__matmul(const clt_tensor *a, const clt_tensor *b, clt_tensor **out, const char *fn)
{
    return clt__matmul_backend(a, b, CLT__GEMM_AUTO, out, fn);
}

clt_status clt__blas_warmup(clt_device *dev)
{
    CLBlastStatusCode bs = CLBlastFillCache(dev->id);
    if (bs != CLBlastSuccess)
        return clt__clblast_error(bs, "clt_warmup: CLBlastFillCache on %s (%s)", dev->label,
                                  dev->info.name);
    pthread_once(&release_once, register_release);
    dev->blas = &blas_used;
    return CLT_OK;
}

void clt__blas_release(clt_device *dev)
{
    if (dev == NULL || dev->blas == NULL)
        return;
    /* CLBlast's cache is process-wide: clearing it once for any device that
     * used it drops every program it holds. */
    CLBlastClearCache();
    dev->blas = NULL;
}
