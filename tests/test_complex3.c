/* test_complex3.c: prod, cumsum, cumprod, var, std (and their _dim,
 * var_mean and std_mean forms), tril, triu, where and masked_fill of
 * complex tensors: values against complex double arithmetic done here,
 * gradients (float64 leaves viewed as complex128) against central
 * differences with gradcheck, and their own gradients with
 * gradgradcheck. */
#include <complex.h>
#include <math.h>

#include "gradcheck.h"

static double *random_data(size_t n, unsigned seed, double lo)
{
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = lo + (double)((seed >> 8) % 2001) / 1000.0;
    }
    return v;
}

/* A complex tensor of dtype dt (complex64 or complex128) from n complex
 * doubles. */
static clt_tensor *ctensor(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                           const double complex *v, size_t n)
{
    clt_tensor *t = NULL;
    if (dt == CLT_COMPLEX128) {
        CHECK(clt_tensor_from_host(dev, dt, nd, shape, v, &t));
        return t;
    }
    float complex *f = malloc((n ? n : 1) * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float complex)v[i];
    CHECK(clt_tensor_from_host(dev, dt, nd, shape, f, &t));
    free(f);
    return t;
}

/* t (complex of either dtype, or real float32/float64) read back as complex
 * doubles. */
static double complex *read_c(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    double complex *out = malloc((n ? n : 1) * sizeof *out);
    clt_dtype dt = clt_tensor_dtype(t);
    if (dt == CLT_COMPLEX128) {
        CHECK(clt_tensor_read(t, out, n * sizeof *out));
    } else if (dt == CLT_COMPLEX64) {
        float complex *f = malloc((n ? n : 1) * sizeof *f);
        CHECK(clt_tensor_read(t, f, n * sizeof *f));
        for (size_t i = 0; i < n; i++)
            out[i] = f[i];
        free(f);
    } else {
        double *d = read_as_f64(t);
        for (size_t i = 0; i < n; i++)
            out[i] = d[i];
        free(d);
    }
    return out;
}

static void assert_close_c(const clt_tensor *t, clt_dtype want_dt, int nd, const int64_t *shape,
                           const double complex *want, double tol, const char *what)
{
    cr_assert_eq(clt_tensor_dtype(t), want_dt, "%s: dtype %d, want %d", what,
                 clt_tensor_dtype(t), want_dt);
    assert_shape(t, nd, shape);
    size_t n = (size_t)host_numel(nd, shape);
    double complex *got = read_c(t);
    for (size_t i = 0; i < n; i++) {
        bool both_nan = isnan(creal(want[i])) && isnan(creal(got[i]));
        /* an infinite or NaN part (1 / 0, inf squared) only has to be so */
        bool nonfinite = !isfinite(creal(want[i])) || !isfinite(cimag(want[i]));
        if (nonfinite && !both_nan) {
            cr_assert(!isfinite(creal(got[i])) || !isfinite(cimag(got[i])),
                      "%s [%zu]: %g%+gi, want a non-finite part", what, i, creal(got[i]),
                      cimag(got[i]));
            continue;
        }
        cr_assert(both_nan || cabs(got[i] - want[i]) <= tol * (1.0 + cabs(want[i])),
                  "%s [%zu]: %g%+gi, want %g%+gi", what, i, creal(got[i]), cimag(got[i]),
                  creal(want[i]), cimag(want[i]));
    }
    free(got);
}

/* [3, 5] complex data with zeros: one in row 1, two in row 2. */
static double complex *sample(void)
{
    double *re = random_data(15, 11, -1.2), *im = random_data(15, 12, -1.2);
    double complex *v = malloc(15 * sizeof *v);
    for (int i = 0; i < 15; i++)
        v[i] = re[i] + I * im[i];
    v[7] = 0;
    v[10] = 0;
    v[13] = 0;
    free(re);
    free(im);
    return v;
}

Test(complex3, prod_cumsum_cumprod_values)
{
    clt_device *dev = get_device("cpu");
    double complex *v = sample();
    int64_t shape[2] = {3, 5}, rows[1] = {3}, kept[2] = {3, 1}, cols[1] = {5};
    double complex prow[3], pall = 1, pcol[5], cp[15], cs[15];
    for (int r = 0; r < 3; r++) {
        prow[r] = 1;
        for (int c = 0; c < 5; c++) {
            prow[r] *= v[r * 5 + c];
            cp[r * 5 + c] = prow[r];
            pall *= v[r * 5 + c];
        }
    }
    for (int c = 0; c < 5; c++) {
        pcol[c] = 1;
        double complex s = 0;
        for (int r = 0; r < 3; r++) {
            pcol[c] *= v[r * 5 + c];
            s += v[r * 5 + c];
            cs[r * 5 + c] = s;
        }
    }
    const clt_dtype dts[2] = {CLT_COMPLEX64, CLT_COMPLEX128};
    for (int k = 0; k < 2; k++) {
        double tol = k ? 1e-12 : 2e-6;
        clt_tensor *z = ctensor(dev, dts[k], 2, shape, v, 15), *a = NULL, *b = NULL, *c = NULL,
                   *d = NULL, *e = NULL, *f = NULL;
        CHECK(clt_prod(z, &a));
        assert_close_c(a, dts[k], 0, NULL, &pall, tol, "prod");
        CHECK(clt_prod_dim(z, 1, 0, &b));
        assert_close_c(b, dts[k], 1, rows, prow, tol, "prod_dim 1");
        CHECK(clt_prod_dim(z, -1, 1, &c));
        assert_close_c(c, dts[k], 2, kept, prow, tol, "prod_dim -1 keepdim");
        CHECK(clt_prod_dim(z, 0, 0, &d));
        assert_close_c(d, dts[k], 1, cols, pcol, tol, "prod_dim 0");
        CHECK(clt_cumprod(z, 1, &e));
        assert_close_c(e, dts[k], 2, shape, cp, tol, "cumprod 1");
        CHECK(clt_cumsum(z, 0, &f));
        assert_close_c(f, dts[k], 2, shape, cs, tol, "cumsum 0");
        clt_tensor *bad = (clt_tensor *)&bad;
        cr_assert_neq(clt_prod_dim(z, 2, 0, &bad), CLT_OK);
        cr_assert_null(bad);
        bad = (clt_tensor *)&bad;
        cr_assert_neq(clt_cumprod(z, -3, &bad), CLT_OK);
        cr_assert_null(bad);
        clt_tensor *ts[] = {z, a, b, c, d, e, f};
        for (size_t i = 0; i < 7; i++)
            clt_tensor_free(ts[i]);
    }
    /* the product of no elements is 1 */
    int64_t empty[2] = {0, 2}, two[1] = {2};
    clt_tensor *z0 = NULL, *p0 = NULL;
    CHECK(clt_zeros(dev, CLT_COMPLEX128, 2, empty, &z0));
    CHECK(clt_prod_dim(z0, 0, 0, &p0));
    double complex ones[2] = {1, 1};
    assert_close_c(p0, CLT_COMPLEX128, 1, two, ones, 0, "prod of no elements");
    clt_tensor_free(z0);
    clt_tensor_free(p0);
    free(v);
}

Test(complex3, var_std_and_their_means_values)
{
    clt_device *dev = get_device("cpu");
    double complex *v = sample();
    int64_t shape[2] = {3, 5}, rows[1] = {3}, kept[2] = {3, 1};
    double complex vrow[3], srow[3], mrow[3], vall, mall = 0;
    for (int r = 0; r < 3; r++) {
        double complex m = 0;
        for (int c = 0; c < 5; c++)
            m += v[r * 5 + c] / 5.0;
        double s = 0;
        for (int c = 0; c < 5; c++)
            s += creal((v[r * 5 + c] - m) * conj(v[r * 5 + c] - m));
        mrow[r] = m;
        vrow[r] = s / (5 - 1);
        srow[r] = sqrt(s / (5 - 1));
    }
    for (int i = 0; i < 15; i++)
        mall += v[i] / 15.0;
    double s = 0;
    for (int i = 0; i < 15; i++)
        s += cabs(v[i] - mall) * cabs(v[i] - mall);
    vall = s / (15 - 2); /* correction 2 */
    double complex sall = csqrt(vall);
    const clt_dtype dts[2] = {CLT_COMPLEX64, CLT_COMPLEX128},
                    parts[2] = {CLT_FLOAT32, CLT_FLOAT64};
    for (int k = 0; k < 2; k++) {
        double tol = k ? 1e-12 : 2e-6;
        clt_tensor *z = ctensor(dev, dts[k], 2, shape, v, 15), *a = NULL, *b = NULL, *c = NULL,
                   *d = NULL, *e = NULL, *m1 = NULL, *m2 = NULL;
        CHECK(clt_var(z, 2.0, &a));
        assert_close_c(a, parts[k], 0, NULL, &vall, tol, "var correction 2");
        CHECK(clt_std(z, 2.0, &b));
        assert_close_c(b, parts[k], 0, NULL, &sall, tol, "std correction 2");
        CHECK(clt_var_dim(z, 1, 1.0, 1, &c));
        assert_close_c(c, parts[k], 2, kept, vrow, tol, "var_dim keepdim");
        CHECK(clt_std_mean_dim(z, -1, 1.0, 0, &d, &m1));
        assert_close_c(d, parts[k], 1, rows, srow, tol, "std_mean_dim's std");
        assert_close_c(m1, dts[k], 1, rows, mrow, tol, "std_mean_dim's mean");
        CHECK(clt_var_mean(z, 2.0, &e, &m2));
        assert_close_c(e, parts[k], 0, NULL, &vall, tol, "var_mean's var");
        assert_close_c(m2, dts[k], 0, NULL, &mall, tol, "var_mean's mean");
        clt_tensor *ts[] = {z, a, b, c, d, e, m1, m2};
        for (size_t i = 0; i < 8; i++)
            clt_tensor_free(ts[i]);
    }
    /* one element with correction 1: 0 / 0 */
    int64_t one[1] = {1};
    double complex x1 = 1 + 2 * I, nanv = NAN;
    clt_tensor *t1 = ctensor(dev, CLT_COMPLEX128, 1, one, &x1, 1), *v1 = NULL;
    CHECK(clt_var(t1, 1.0, &v1));
    assert_close_c(v1, CLT_FLOAT64, 0, NULL, &nanv, 0, "var of one element");
    clt_tensor_free(t1);
    clt_tensor_free(v1);
    free(v);
}

Test(complex3, tril_triu_where_masked_fill_values)
{
    clt_device *dev = get_device("cpu");
    double complex *v = sample(), *w = sample(), want[15];
    for (int i = 0; i < 15; i++)
        w[i] = conj(w[i]) * (1 + I);
    int64_t shape[2] = {3, 5}, row[1] = {5};
    unsigned char mask[15], mrow[5] = {1, 0, 0, 1, 0};
    for (int i = 0; i < 15; i++)
        mask[i] = (i * 7 + 2) % 3 == 0;
    double re[5] = {0.5, -1.5, 2.0, 3.0, -0.25};
    const clt_dtype dts[2] = {CLT_COMPLEX64, CLT_COMPLEX128};
    for (int k = 0; k < 2; k++) {
        double tol = k ? 0 : 1e-7;
        clt_tensor *z = ctensor(dev, dts[k], 2, shape, v, 15),
                   *y = ctensor(dev, dts[k], 2, shape, w, 15), *m = NULL, *mr = NULL, *r = NULL,
                   *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *f = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_BOOL, 2, shape, mask, &m));
        CHECK(clt_tensor_from_host(dev, CLT_BOOL, 1, row, mrow, &mr));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, row, re, &r));
        CHECK(clt_tril(z, -1, &a));
        for (int i = 0; i < 15; i++)
            want[i] = (i % 5) - (i / 5) <= -1 ? v[i] : 0;
        assert_close_c(a, dts[k], 2, shape, want, tol, "tril -1");
        CHECK(clt_triu(z, 1, &b));
        for (int i = 0; i < 15; i++)
            want[i] = (i % 5) - (i / 5) >= 1 ? v[i] : 0;
        assert_close_c(b, dts[k], 2, shape, want, tol, "triu 1");
        CHECK(clt_where(m, z, y, &c));
        for (int i = 0; i < 15; i++)
            want[i] = mask[i] ? v[i] : w[i];
        assert_close_c(c, dts[k], 2, shape, want, tol, "where");
        /* a float64 row against complex64 promotes to complex128, as torch */
        CHECK(clt_where(m, r, z, &d));
        for (int i = 0; i < 15; i++)
            want[i] = mask[i] ? re[i % 5] : v[i];
        assert_close_c(d, CLT_COMPLEX128, 2, shape, want, k ? 0 : 1e-7, "where real and complex");
        CHECK(clt_masked_fill(z, m, 2.5, &e));
        for (int i = 0; i < 15; i++)
            want[i] = mask[i] ? 2.5 : v[i];
        assert_close_c(e, dts[k], 2, shape, want, tol, "masked_fill 2.5");
        CHECK(clt_masked_fill(z, mr, 0.0, &f));
        for (int i = 0; i < 15; i++)
            want[i] = mrow[i % 5] ? 0 : v[i];
        assert_close_c(f, dts[k], 2, shape, want, tol, "masked_fill 0, broadcast mask");
        clt_tensor *ts[] = {z, y, m, mr, r, a, b, c, d, e, f};
        for (size_t i = 0; i < 11; i++)
            clt_tensor_free(ts[i]);
    }
    free(v);
    free(w);
}

Test(complex3, neg_scalars_comparisons_rot90_values)
{
    clt_device *dev = get_device("cpu");
    double complex *v = sample(), want[15];
    v[1] = NAN + 1.0 * I;
    v[2] = 1.0 + INFINITY * I;
    int64_t shape[2] = {3, 5}, rshape[2] = {5, 3};
    const clt_dtype dts[2] = {CLT_COMPLEX64, CLT_COMPLEX128};
    for (int k = 0; k < 2; k++) {
        double tol = k ? 1e-15 : 1e-6;
        clt_tensor *z = ctensor(dev, dts[k], 2, shape, v, 15), *r[12] = {0};
        CHECK(clt_neg(z, &r[0]));
        for (int i = 0; i < 15; i++)
            want[i] = -v[i];
        assert_close_c(r[0], dts[k], 2, shape, want, tol, "neg");
        CHECK(clt_add_scalar(z, 1.5, &r[1]));
        for (int i = 0; i < 15; i++)
            want[i] = v[i] + 1.5;
        assert_close_c(r[1], dts[k], 2, shape, want, tol, "add_scalar");
        CHECK(clt_rsub_scalar(z, 2.0, &r[2]));
        for (int i = 0; i < 15; i++)
            want[i] = 2.0 - v[i];
        assert_close_c(r[2], dts[k], 2, shape, want, tol, "rsub_scalar");
        CHECK(clt_mul_scalar(z, -3.0, &r[3]));
        for (int i = 0; i < 15; i++)
            want[i] = v[i] * -3.0;
        assert_close_c(r[3], dts[k], 2, shape, want, tol, "mul_scalar");
        CHECK(clt_div_scalar(z, 4.0, &r[4]));
        for (int i = 0; i < 15; i++)
            want[i] = v[i] / 4.0;
        assert_close_c(r[4], dts[k], 2, shape, want, tol, "div_scalar");
        CHECK(clt_isnan(z, &r[5]));
        CHECK(clt_isinf(z, &r[6]));
        CHECK(clt_isfinite(z, &r[7]));
        CHECK(clt_eq(z, z, &r[8]));
        CHECK(clt_ne_scalar(z, 0.0, &r[9]));
        double *nan_ = read_as_f64(r[5]), *inf_ = read_as_f64(r[6]), *fin = read_as_f64(r[7]),
               *eq = read_as_f64(r[8]), *ne0 = read_as_f64(r[9]);
        for (int i = 0; i < 15; i++) {
            bool n = isnan(creal(v[i])) || isnan(cimag(v[i]));
            bool in = isinf(creal(v[i])) || isinf(cimag(v[i]));
            cr_assert_eq(nan_[i], n, "isnan [%d]", i);
            cr_assert_eq(inf_[i], in, "isinf [%d]", i);
            cr_assert_eq(fin[i], !n && !in, "isfinite [%d]", i);
            cr_assert_eq(eq[i], !n, "eq of itself [%d] (NaN is unequal)", i);
            cr_assert_eq(ne0[i], v[i] != 0, "ne_scalar 0 [%d]", i);
        }
        free(nan_);
        free(inf_);
        free(fin);
        free(eq);
        free(ne0);
        CHECK(clt_square(z, &r[11]));
        for (int i = 0; i < 15; i++)
            want[i] = v[i] * v[i];
        assert_close_c(r[11], dts[k], 2, shape, want, tol, "square");
        CHECK(clt_rot90(z, 1, 0, 1, &r[10]));
        for (int i = 0; i < 5; i++) /* rot90(z)[i][j] = z[j][4 - i] */
            for (int j = 0; j < 3; j++)
                want[i * 3 + j] = v[j * 5 + 4 - i];
        assert_close_c(r[10], dts[k], 2, rshape, want, k ? 0 : 1e-7, "rot90");
        clt_tensor *o = (clt_tensor *)&o;
        cr_assert_neq(clt_lt(z, z, &o), CLT_OK); /* torch has no order on complex numbers */
        cr_assert_null(o);
        clt_tensor_free(z);
        for (int i = 0; i < 12; i++)
            clt_tensor_free(r[i]);
    }
    free(v);
}

Test(complex3, masked_select_nonzero_index_add_scatter_values)
{
    clt_device *dev = get_device("cpu");
    double complex *v = sample(), *w = sample(), want[15];
    for (int i = 0; i < 15; i++)
        w[i] = w[i] * I - 0.5;
    int64_t shape[2] = {3, 5}, sshape[2] = {3, 2}, two = 2;
    unsigned char mask[15];
    int64_t nsel = 0;
    for (int i = 0; i < 15; i++) {
        mask[i] = (i * 5 + 1) % 4 < 2;
        if (mask[i])
            want[nsel++] = v[i];
    }
    const int64_t iv[2] = {4, 1}, sv[6] = {0, 4, 4, 4, 2, 0};
    const clt_dtype dts[2] = {CLT_COMPLEX64, CLT_COMPLEX128};
    for (int k = 0; k < 2; k++) {
        double tol = k ? 1e-15 : 1e-6;
        double complex *src = malloc(6 * sizeof *src);
        for (int i = 0; i < 6; i++)
            src[i] = w[i];
        clt_tensor *z = ctensor(dev, dts[k], 2, shape, v, 15),
                   *s2 = ctensor(dev, dts[k], 2, sshape, src, 6), *m = NULL, *ix = NULL,
                   *sx = NULL, *r[4] = {0};
        CHECK(clt_tensor_from_host(dev, CLT_BOOL, 2, shape, mask, &m));
        CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &two, iv, &ix));
        CHECK(clt_tensor_from_host(dev, CLT_INT64, 2, sshape, sv, &sx));
        CHECK(clt_masked_select(z, m, &r[0]));
        assert_close_c(r[0], dts[k], 1, &nsel, want, tol, "masked_select");
        CHECK(clt_index_add(z, 1, ix, s2, 2.0, &r[1]));
        double complex ia[15];
        for (int i = 0; i < 15; i++)
            ia[i] = v[i];
        for (int row = 0; row < 3; row++)
            for (int j = 0; j < 2; j++)
                ia[row * 5 + iv[j]] += 2.0 * src[row * 2 + j];
        assert_close_c(r[1], dts[k], 2, shape, ia, tol, "index_add");
        CHECK(clt_scatter_add(z, 1, sx, s2, &r[2]));
        for (int i = 0; i < 15; i++)
            ia[i] = v[i];
        for (int row = 0; row < 3; row++)
            for (int j = 0; j < 2; j++)
                ia[row * 5 + sv[row * 2 + j]] += src[row * 2 + j];
        assert_close_c(r[2], dts[k], 2, shape, ia, tol, "scatter_add");
        CHECK(clt_nonzero(z, &r[3]));
        int64_t nz = 0;
        for (int i = 0; i < 15; i++)
            nz += v[i] != 0;
        cr_assert_eq(clt_tensor_shape(r[3])[0], nz, "nonzero: %lld rows, want %lld",
                     (long long)clt_tensor_shape(r[3])[0], (long long)nz);
        clt_tensor *ts[] = {z, s2, m, ix, sx, r[0], r[1], r[2], r[3]};
        for (size_t i = 0; i < 9; i++)
            clt_tensor_free(ts[i]);
        free(src);
    }
    free(v);
    free(w);
}

Test(complex3, reciprocal_sgn_norms_values)
{
    clt_device *dev = get_device("cpu");
    double complex *v = sample(), want[15], rows[3] = {0, 0, 0};
    int64_t shape[2] = {3, 5}, three = 3;
    double all = 0;
    for (int i = 0; i < 15; i++) {
        rows[i / 5] += cabs(v[i]) * cabs(v[i]);
        all += cabs(v[i]);
    }
    for (int r = 0; r < 3; r++)
        rows[r] = sqrt(creal(rows[r]));
    const clt_dtype dts[2] = {CLT_COMPLEX64, CLT_COMPLEX128},
                    parts[2] = {CLT_FLOAT32, CLT_FLOAT64};
    for (int k = 0; k < 2; k++) {
        double tol = k ? 1e-14 : 1e-6;
        clt_tensor *z = ctensor(dev, dts[k], 2, shape, v, 15), *a = NULL, *b = NULL, *c = NULL,
                   *d = NULL;
        CHECK(clt_sgn(z, &a));
        for (int i = 0; i < 15; i++)
            want[i] = v[i] == 0 ? 0 : v[i] / cabs(v[i]);
        assert_close_c(a, dts[k], 2, shape, want, tol, "sgn");
        CHECK(clt_narrow(z, 1, 0, 2, &d)); /* one zero there: v[10] */
        CHECK(clt_reciprocal(d, &b));
        double complex rw[6];
        for (int r = 0; r < 3; r++)
            for (int j = 0; j < 2; j++)
                rw[r * 2 + j] = 1.0 / v[r * 5 + j];
        assert_close_c(b, dts[k], 2, (int64_t[]){3, 2}, rw, tol, "reciprocal");
        clt_tensor_free(b);
        CHECK(clt_vector_norm_dim(z, 2.0, 1, 0, &b));
        assert_close_c(b, parts[k], 1, &three, rows, tol, "vector_norm_dim 2");
        double complex one_norm = all;
        CHECK(clt_vector_norm(z, 1.0, &c));
        assert_close_c(c, parts[k], 0, NULL, &one_norm, tol, "vector_norm 1");
        clt_tensor *ts[] = {z, a, b, c, d};
        for (size_t i = 0; i < 5; i++)
            clt_tensor_free(ts[i]);
    }
    free(v);
}

/* in[0] a float64 [3, 4, 2] viewed as complex z, in[1] a float64 [3, 4]
 * x; kind 0 prod(z), 1 prod_dim(z, 1), 2 cumprod(z, 1), 3 cumsum(z, 0),
 * 4 var_dim(z, 1, correction 1, keepdim), 5 std(z, 0), 6 var_mean_dim(z,
 * 0) (two outputs), 7 tril(z), 8 triu(z, 1), 9 where(x > 0, z, x),
 * 10 masked_fill(z * x, x < 0, 2), 11 std_mean(z) (two outputs), 12 the
 * scalar ops (2 - z, z + 1, z - 1, z * -2, z / 4, 3 / z, -z), 13 rot90(z),
 * 14 masked_select(z, x > 0), and with u = z[:, 1:3]: 15 index_add(z, 1,
 * [1, 0], u, 0.5), 16 scatter_add(z, 1, [[3, 0], [3, 1], [0, 2]], u),
 * 17 index_copy(z, 1, [1, 0], u), 18 reciprocal(square(z) + 3), and of
 * z + 0.3: 19 sgn, 20 vector_norm_dim(2, 1), 21 vector_norm(3); complex
 * results through their real views. */
static clt_status c3_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out, size_t *m)
{
    (void)n;
    int kind = *(const int *)user;
    clt_tensor *z = NULL, *r[2] = {NULL, NULL}, *t = NULL, *u = NULL;
    clt_status st = CLT_OK;
    size_t nr = 1;
#define C3(call)                     \
    do {                             \
        if ((st = (call)) != CLT_OK) \
            goto done;               \
    } while (0)
    C3(clt_view_as_complex(in[0], &z));
    switch (kind) {
    case 0: C3(clt_prod(z, &r[0])); break;
    case 1: C3(clt_prod_dim(z, 1, 0, &r[0])); break;
    case 2: C3(clt_cumprod(z, 1, &r[0])); break;
    case 3: C3(clt_cumsum(z, 0, &r[0])); break;
    case 4: C3(clt_var_dim(z, 1, 1.0, 1, &r[0])); break;
    case 5: C3(clt_std(z, 0.0, &r[0])); break;
    case 6: C3(clt_var_mean_dim(z, 0, 1.0, 0, &r[0], &r[1])); nr = 2; break;
    case 7: C3(clt_tril(z, 0, &r[0])); break;
    case 8: C3(clt_triu(z, 1, &r[0])); break;
    case 9:
        C3(clt_gt_scalar(in[1], 0.0, &t));
        C3(clt_where(t, z, in[1], &r[0]));
        break;
    case 10:
        C3(clt_lt_scalar(in[1], 0.0, &t));
        C3(clt_mul(z, in[1], &u));
        C3(clt_masked_fill(u, t, 2.0, &r[0]));
        break;
    case 11: C3(clt_std_mean(z, 1.0, &r[0], &r[1])); nr = 2; break;
    case 12: {
        clt_tensor *p[6] = {NULL};
        st = clt_rsub_scalar(z, 2.0, &p[0]);
        if (st == CLT_OK)
            st = clt_add_scalar(p[0], 1.0, &p[1]);
        if (st == CLT_OK)
            st = clt_sub_scalar(p[1], 1.0, &p[2]);
        if (st == CLT_OK)
            st = clt_mul_scalar(p[2], -2.0, &p[3]);
        if (st == CLT_OK)
            st = clt_div_scalar(p[3], 4.0, &p[4]);
        if (st == CLT_OK)
            st = clt_rdiv_scalar(p[4], 3.0, &p[5]);
        if (st == CLT_OK)
            st = clt_neg(p[5], &r[0]);
        for (int k = 0; k < 6; k++)
            clt_tensor_free(p[k]);
        C3(st);
        break;
    }
    case 13: C3(clt_rot90(z, 1, 1, 0, &r[0])); break;
    case 14:
        C3(clt_gt_scalar(in[1], 0.0, &t));
        C3(clt_masked_select(z, t, &r[0]));
        break;
    case 18:
        C3(clt_square(z, &u));
        C3(clt_add_scalar(u, 3.0, &t));
        C3(clt_reciprocal(t, &r[0]));
        break;
    case 19:
    case 20:
    case 21: /* away from 0, where sgn and abs are not differentiable */
        C3(clt_add_scalar(z, 0.3, &t));
        C3(kind == 19   ? clt_sgn(t, &r[0])
           : kind == 20 ? clt_vector_norm_dim(t, 2.0, 1, 0, &r[0])
                        : clt_vector_norm(t, 3.0, &r[0]));
        break;
    default: {
        int64_t iv[6] = {3, 0, 3, 1, 0, 2}, vec[2] = {1, 0}, two = 2, ishape[2] = {3, 2};
        bool scatter = kind == 16;
        C3(clt_tensor_from_host(clt_tensor_device(in[0]), CLT_INT64, scatter ? 2 : 1,
                                scatter ? ishape : &two, scatter ? iv : vec, &t));
        C3(clt_narrow(z, 1, 1, 2, &u));
        if (kind == 15)
            C3(clt_index_add(z, 1, t, u, 0.5, &r[0]));
        else if (kind == 16)
            C3(clt_scatter_add(z, 1, t, u, &r[0]));
        else
            C3(clt_index_copy(z, 1, t, u, &r[0]));
        break;
    }
    }
    for (size_t k = 0; k < nr; k++) {
        if (clt_is_complex(r[k]))
            C3(clt_view_as_real(r[k], &out[k]));
        else
            C3(clt_clone(r[k], &out[k]));
    }
    *m = nr;
done:
#undef C3
    clt_tensor_free(z);
    clt_tensor_free(r[0]);
    clt_tensor_free(r[1]);
    clt_tensor_free(t);
    clt_tensor_free(u);
    return st;
}

Test(complex3, gradcheck_and_gradgradcheck)
{
    clt_device *dev = get_device("cpu");
    int64_t sz[3] = {3, 4, 2}, sx[2] = {3, 4};
    double *zv = random_data(24, 7, -1.0), *xv = random_data(12, 8, -1.0);
    /* zeros among the factors: one in row 0, two in row 2 */
    zv[2] = zv[3] = 0;
    zv[16] = zv[17] = 0;
    zv[20] = zv[21] = 0;
    for (int kind = 0; kind < 22; kind++) {
        clt_tensor *in[2] = {NULL, NULL};
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 3, sz, zv, &in[0]));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, sx, xv, &in[1]));
        CHECK(clt_set_requires_grad(in[0], 1));
        CHECK(clt_set_requires_grad(in[1], 1));
        clt_status st = clt_gradcheck(c3_fn, &kind, in, 2, NULL);
        cr_assert_eq(st, CLT_OK, "kind %d: %s", kind, clt_last_error());
        /* the (real) formulas of index_copy and of vector_norm with an ord
         * other than 2 do not record under create_graph */
        st = kind == 17 || kind == 21 ? CLT_OK
                                      : clt_gradgradcheck(c3_fn, &kind, in, 2, NULL, 0, NULL);
        cr_assert_eq(st, CLT_OK, "kind %d: %s", kind, clt_last_error());
        clt_tensor_free(in[0]);
        clt_tensor_free(in[1]);
    }
    free(zv);
    free(xv);
}

/* A complex leaf's gradient is dL/dz* (torch's convention: dL/dx + i dL/dy
 * for a real loss): L = sum |cumprod(z)|^2 + std(z) checked against
 * central differences of the parts. */
static double c3_leaf_loss(clt_device *dev, const double complex *v, int64_t n, bool grad,
                           double complex *g)
{
    clt_tensor *z = ctensor(dev, CLT_COMPLEX128, 1, &n, v, (size_t)n), *c = NULL, *a = NULL,
               *a2 = NULL, *s = NULL, *sd = NULL, *l = NULL;
    if (grad)
        CHECK(clt_set_requires_grad(z, 1));
    CHECK(clt_cumprod(z, 0, &c));
    CHECK(clt_abs(c, &a));
    CHECK(clt_mul(a, a, &a2));
    CHECK(clt_sum(a2, &s));
    CHECK(clt_std(z, 1.0, &sd));
    CHECK(clt_add(s, sd, &l));
    double val = 0;
    CHECK(clt_tensor_item(l, &val));
    if (grad) {
        CHECK(clt_backward(l, NULL, 0));
        clt_tensor *gz = NULL;
        CHECK(clt_grad(z, &gz));
        cr_assert_eq(clt_tensor_dtype(gz), CLT_COMPLEX128);
        CHECK(clt_tensor_read(gz, g, (size_t)n * sizeof *g));
        clt_tensor_free(gz);
    }
    clt_tensor *ts[] = {z, c, a, a2, s, sd, l};
    for (size_t i = 0; i < 7; i++)
        clt_tensor_free(ts[i]);
    return val;
}

Test(complex3, complex_leaf_gradient_is_the_conjugate_wirtinger_one)
{
    clt_device *dev = get_device("cpu");
    double complex v[5] = {0.3 + 0.4 * I, -0.7 + 0.1 * I, 0.9 - 0.5 * I, 0, 0.2 + 0.8 * I};
    double complex g[5];
    c3_leaf_loss(dev, v, 5, true, g);
    const double h = 1e-6;
    for (int k = 0; k < 5; k++) {
        double complex want = 0;
        for (int part = 0; part < 2; part++) {
            double complex p[5], q[5], step = part ? h * I : h;
            for (int j = 0; j < 5; j++)
                p[j] = q[j] = v[j];
            p[k] += step;
            q[k] -= step;
            double d = (c3_leaf_loss(dev, p, 5, false, NULL) -
                        c3_leaf_loss(dev, q, 5, false, NULL)) / (2 * h);
            want += part ? I * d : d;
        }
        cr_assert(cabs(g[k] - want) < 1e-6, "z[%d]: %g%+gi, want %g%+gi", k, creal(g[k]),
                  cimag(g[k]), creal(want), cimag(want));
    }
}

/* Real tril, rot90 and cumsum are differentiable twice now (their formulas
 * record under create_graph). */
static clt_status real_tri_cumsum(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                                  size_t *m)
{
    (void)n;
    (void)user;
    clt_tensor *a = NULL, *b = NULL, *c = NULL;
    clt_tensor *t = NULL;
    clt_status st = clt_tril(in[0], 0, &t);
    if (st == CLT_OK)
        st = clt_rot90(t, 1, 0, 1, &a);
    clt_tensor_free(t);
    if (st == CLT_OK)
        st = clt_cumsum(a, 1, &b);
    if (st == CLT_OK)
        st = clt_mul(b, b, &c);
    if (st == CLT_OK)
        st = clt_triu(c, -1, &out[0]);
    *m = st == CLT_OK;
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    return st;
}

Test(complex3, real_tril_rot90_and_cumsum_gradgradcheck)
{
    clt_device *dev = get_device("cpu");
    int64_t sz[2] = {4, 3};
    double *xv = random_data(12, 9, -1.0);
    clt_tensor *x = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, sz, xv, &x));
    CHECK(clt_set_requires_grad(x, 1));
    cr_assert_eq(clt_gradcheck(real_tri_cumsum, NULL, &x, 1, NULL), CLT_OK, "%s",
                 clt_last_error());
    cr_assert_eq(clt_gradgradcheck(real_tri_cumsum, NULL, &x, 1, NULL, 0, NULL), CLT_OK, "%s",
                 clt_last_error());
    clt_tensor_free(x);
    free(xv);
}

/* max, min and their arg forms refuse complex input (torch: "does not
 * support complex input"), also where the dim has nothing to reduce. */
Test(complex3, selections_refuse_complex_even_empty)
{
    clt_device *dev = get_device("cpu");
    const int64_t shapes[2][2] = {{2, 3}, {0, 3}};
    for (int s = 0; s < 2; s++) {
        clt_tensor *z = NULL, *o = NULL, *i = NULL;
        CHECK(clt_zeros(dev, CLT_COMPLEX64, 2, shapes[s], &z));
        cr_expect_eq(clt_argmin_dim(z, 1, 0, &o), CLT_ERR_DTYPE_UNSUPPORTED, "argmin_dim %d", s);
        cr_expect_null(o);
        cr_expect(strstr(clt_last_error(), "complex") != NULL, "%s", clt_last_error());
        cr_expect_eq(clt_argmax_dim(z, 1, 1, &o), CLT_ERR_DTYPE_UNSUPPORTED, "argmax_dim %d", s);
        cr_expect_eq(clt_max_dim(z, 1, 0, &o, &i), CLT_ERR_DTYPE_UNSUPPORTED, "max_dim %d", s);
        cr_expect_null(o);
        cr_expect_null(i);
        clt_tensor_free(z);
    }
}

/* The library's test hook (src/core/alloc.c). */
long clt__host_refuse_after(long pass);

/* Out of host memory at any point, the complex paths fail with their
 * outputs NULL (the fuzz target found neg's and roll's outputs left set). */
Test(complex3, out_of_host_memory_clears_outputs)
{
    clt_device *dev = get_device("cpu");
    const int64_t s[1] = {4};
    const double complex v[4] = {1 + 2 * I, -3 + 0.5 * I, 0, 2 - I};
    for (int grad = 0; grad < 2; grad++) {
        clt_tensor *z = ctensor(dev, CLT_COMPLEX64, 1, s, v, 4);
        if (grad)
            CHECK(clt_set_requires_grad(z, 1));
        for (long pass = 0; pass < 60; pass++) {
            clt_tensor *sentinel = (clt_tensor *)&pass,
                       *o[5] = {sentinel, sentinel, sentinel, sentinel, sentinel};
            clt_status st[5];
            clt__host_refuse_after(pass);
            st[0] = clt_neg(z, &o[0]);
            clt__host_refuse_after(pass);
            st[1] = clt_isnan(z, &o[1]);
            clt__host_refuse_after(pass);
            st[2] = clt_eq(z, z, &o[2]);
            clt__host_refuse_after(pass);
            st[3] = clt_prod(z, &o[3]);
            clt__host_refuse_after(pass);
            const int64_t shift[1] = {1};
            st[4] = clt_roll(z, shift, NULL, 0, &o[4]); /* over the flattened tensor */
            clt__host_refuse_after(-1);
            for (int k = 0; k < 5; k++) {
                if (st[k] == CLT_OK)
                    cr_expect(o[k] != NULL && o[k] != sentinel, "op %d: CLT_OK without a result", k);
                else
                    cr_expect_null(o[k], "op %d failed (%d) after %ld allocations, grad %d, but "
                                         "*out is set", k, st[k], pass, grad);
                if (o[k] != sentinel)
                    clt_tensor_free(o[k]);
            }
        }
        clt_tensor_free(z);
    }
}
