/* test_reduce_stats.c: amax/amin, aminmax, nansum, nanmean, count_nonzero,
 * var_mean, std_mean, median, nanmedian, kthvalue, mode and quantile
 * against host references in double (ties, NaN, empty, keepdim, negative
 * dims, strided views), errors, and gradients by finite differences. */
#include "gradcheck.h"
#include "helpers.h"

/* x of shape (nd, shape) seen as [outer, R, inner] around d. */
static void around(int nd, const int64_t *shape, int d, int64_t *outer, int64_t *R,
                   int64_t *inner)
{
    *outer = *R = *inner = 1;
    for (int k = 0; k < nd; k++) {
        if (k < d)
            *outer *= shape[k];
        else if (k == d)
            *R = shape[k];
        else
            *inner *= shape[k];
    }
}

static clt_tensor *make(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                        const double *x)
{
    return tensor_of(dev, dt, nd, shape, x);
}

static int64_t *read_i64(const clt_tensor *t)
{
    cr_assert_eq(clt_tensor_dtype(t), CLT_INT64);
    size_t n = (size_t)clt_tensor_numel(t);
    int64_t *h = malloc((n ? n : 1) * sizeof *h);
    CHECK(clt_tensor_read(t, h, n * sizeof *h));
    return h;
}

/* Values with ties and (when nans) some NaNs, small integers otherwise. */
static double *tied(size_t n, int nans, unsigned seed)
{
    double *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t k = 0; k < n; k++) {
        unsigned h = (unsigned)(k * 2654435761u + seed * 40503u);
        x[k] = (double)((h >> 7) % 5);
        if (nans && (h >> 3) % 9 == 0)
            x[k] = NAN;
    }
    return x;
}

/* ---- the references ------------------------------------------------------------- */

/* The n values of a slice in ascending order, NaN last, ties by index:
 * pos[j] the index of the j-th (insertion sort: written apart from the
 * library's merge sort). */
static void order(const double *v, int64_t n, int64_t *pos)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t i = j;
        while (i > 0) {
            double a = v[pos[i - 1]], b = v[j];
            bool after = isnan(a) ? !isnan(b) : (!isnan(b) && a > b);
            if (!after)
                break;
            pos[i] = pos[i - 1];
            i--;
        }
        pos[i] = j;
    }
}

enum { R_KTH, R_MEDIAN, R_NANMEDIAN, R_MODE };

/* The reference pick of one slice v (n > 0): value and index. */
static void ref_pick(int what, const double *v, int64_t n, int64_t k, double *val, int64_t *idx)
{
    int64_t *pos = malloc((size_t)n * sizeof *pos), nums = 0;
    order(v, n, pos);
    for (int64_t j = 0; j < n; j++)
        nums += !isnan(v[j]);
    int64_t p = k - 1;
    if (what == R_MEDIAN)
        p = nums < n ? nums : (n - 1) / 2;
    if (what == R_NANMEDIAN)
        p = nums > 0 ? (nums - 1) / 2 : 0;
    if (what == R_MODE) {
        /* the most frequent (NaN equals nothing), smallest, last index */
        int64_t best = -1, bestc = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t c = 0;
            for (int64_t j = 0; j < n; j++)
                c += v[j] == v[i];
            if (isnan(v[i]))
                c = 1;
            bool better = c > bestc ||
                          (c == bestc && (v[i] < v[best] || (isnan(v[best]) && !isnan(v[i])) ||
                                          (v[i] == v[best] && i > best)));
            if (best < 0 || better) {
                best = i;
                bestc = c;
            }
        }
        /* among NaNs of equal count the sort puts the first NaN first */
        if (isnan(v[best]))
            for (int64_t i = 0; i < n; i++)
                if (isnan(v[i])) {
                    best = i;
                    break;
                }
        *val = v[best];
        *idx = best;
        free(pos);
        return;
    }
    *val = v[pos[p]];
    *idx = pos[p];
    free(pos);
}

/* torch 1.13's quantile steps in double for one slice. */
static double ref_quantile(const double *v, int64_t n, double q, int interp, int ignore_nan,
                           int64_t *ilo, int64_t *ihi, double *wout)
{
    int64_t *pos = malloc((size_t)n * sizeof *pos), nums = 0;
    order(v, n, pos);
    for (int64_t j = 0; j < n; j++)
        nums += !isnan(v[j]);
    double rank = ignore_nan ? (nums > 0 ? q * (double)(nums - 1) : 0)
                             : (nums < n ? (double)(n - 1) : q * (double)(n - 1));
    if (interp == 1)
        rank = floor(rank);
    if (interp == 2)
        rank = ceil(rank);
    if (interp == 4)
        rank = nearbyint(rank);
    int64_t lo = (int64_t)rank, hi = (int64_t)ceil(rank);
    double w = interp == 3 ? 0.5 : rank - (double)lo, a = v[pos[lo]], b = v[pos[hi]], r = a;
    if (interp == 0 || interp == 3)
        r = w < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w);
    *ilo = pos[lo];
    *ihi = pos[hi];
    *wout = w;
    free(pos);
    return r;
}

static void assert_same(double got, double want, const char *what, int64_t at)
{
    cr_assert(close_enough(got, want, 1e-6, 1e-9), "%s at %lld: got %.17g, want %.17g", what,
              (long long)at, got, want);
}

/* Checks values (and indices) of an order statistic of t (host copy x)
 * along d against ref_pick. */
static void check_pick(int what, const clt_tensor *t, const double *x, int d, int64_t k,
                       int keepdim)
{
    clt_tensor *v = NULL, *ix = NULL;
    clt_status st = what == R_KTH         ? clt_kthvalue(t, k, d, keepdim, &v, &ix)
                    : what == R_MEDIAN    ? clt_median_dim(t, d, keepdim, &v, &ix)
                    : what == R_NANMEDIAN ? clt_nanmedian_dim(t, d, keepdim, &v, &ix)
                                          : clt_mode(t, d, keepdim, &v, &ix);
    CHECK(st);
    int nd = clt_tensor_ndim(t), dd = d < 0 ? d + nd : d;
    int64_t outer, R, inner;
    around(nd, clt_tensor_shape(t), dd, &outer, &R, &inner);
    cr_assert_eq(clt_tensor_ndim(v), keepdim || nd == 0 ? nd : nd - 1);
    cr_assert_eq(clt_tensor_dtype(v), clt_tensor_dtype(t));
    double *hv = read_as_f64(v), *slice = malloc((size_t)R * sizeof *slice);
    int64_t *hi = read_i64(ix);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t j = 0; j < R; j++)
                slice[j] = x[(o * R + j) * inner + i];
            double want;
            int64_t wi;
            ref_pick(what, slice, R, k, &want, &wi);
            assert_same(hv[o * inner + i], want, "value", o * inner + i);
            cr_assert_eq(hi[o * inner + i], wi, "what %d dim %d slice %lld: index %lld, want %lld",
                         what, d, (long long)(o * inner + i), (long long)hi[o * inner + i],
                         (long long)wi);
        }
    free(hv);
    free(hi);
    free(slice);
    clt_tensor_free(v);
    clt_tensor_free(ix);
}

Test(reduce_stats, torch_examples)
{
    /* torch 1.13's results (printed by torch) for these slices. */
    clt_device *dev = get_device("cpu");
    double a[] = {3, 1, 2, 1, 3, 2}, b[] = {1, NAN, 0, NAN, 2}, c[] = {1, 2, 1, 2, 3};
    int64_t na = 6, nb = 5;
    clt_tensor *ta = make(dev, CLT_FLOAT32, 1, &na, a), *tb = make(dev, CLT_FLOAT32, 1, &nb, b),
               *tc = make(dev, CLT_FLOAT32, 1, &nb, c), *v = NULL, *ix = NULL;
    struct {
        clt_tensor *t;
        int what;
        int64_t k;
        double v;
        int64_t i;
    } cases[] = {{ta, R_MEDIAN, 0, 2, 2},   {ta, R_KTH, 1, 1, 1},        {ta, R_KTH, 2, 1, 3},
                 {tb, R_MEDIAN, 0, NAN, 1}, {tb, R_NANMEDIAN, 0, 1, 0}, {tb, R_KTH, 4, NAN, 1},
                 {tb, R_KTH, 5, NAN, 3},    {tb, R_MODE, 0, 0, 2},      {tc, R_MODE, 0, 1, 2}};
    for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
        int w = cases[q].what;
        CHECK(w == R_KTH      ? clt_kthvalue(cases[q].t, cases[q].k, 0, 0, &v, &ix)
              : w == R_MEDIAN ? clt_median_dim(cases[q].t, 0, 0, &v, &ix)
              : w == R_MODE   ? clt_mode(cases[q].t, 0, 0, &v, &ix)
                              : clt_nanmedian_dim(cases[q].t, 0, 0, &v, &ix));
        double *hv = read_as_f64(v);
        int64_t *hi = read_i64(ix);
        cr_assert(close_enough(hv[0], cases[q].v, 0, 0), "case %zu: %g", q, hv[0]);
        cr_assert_eq(hi[0], cases[q].i, "case %zu: index %lld", q, (long long)hi[0]);
        free(hv);
        free(hi);
        clt_tensor_free(v);
        clt_tensor_free(ix);
    }
    /* torch.quantile(tensor([0., 1, 2, 3]), tensor([0.5, 1/6]), interpolation='nearest') */
    double qx[] = {0, 1, 2, 3}, qq[] = {0.5, 1.0 / 6};
    int64_t n4 = 4, n2 = 2;
    clt_tensor *tq = make(dev, CLT_FLOAT32, 1, &n4, qx), *q = make(dev, CLT_FLOAT32, 1, &n2, qq);
    CHECK(clt_quantile(tq, q, 0, NULL, 0, CLT_QUANTILE_NEAREST, &v));
    assert_shape(v, 1, &n2);
    double *hv = read_as_f64(v);
    cr_assert(hv[0] == 2 && hv[1] == 0, "%g %g", hv[0], hv[1]);
    free(hv);
    clt_tensor_free(v);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(tc);
    clt_tensor_free(tq);
    clt_tensor_free(q);
}

Test(reduce_stats, order_stats_against_reference)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT32, CLT_INT64, CLT_UINT8};
    int64_t shape[3] = {3, 37, 4};
    for (size_t q = 0; q < sizeof dts / sizeof dts[0]; q++) {
        if (!clt_device_supports_dtype(dev, dts[q]))
            continue;
        double *x = tied(3 * 37 * 4, dts[q] <= CLT_FLOAT64, 3 + (unsigned)q);
        clt_tensor *t = make(dev, dts[q], 3, shape, x);
        for (int d = -3; d < 3; d++) {
            int keep = d & 1;
            check_pick(R_MEDIAN, t, x, d, 0, keep);
            check_pick(R_NANMEDIAN, t, x, d, 0, !keep);
            check_pick(R_MODE, t, x, d, 0, keep);
            int dd = d < 0 ? d + 3 : d;
            check_pick(R_KTH, t, x, d, 1, keep);
            check_pick(R_KTH, t, x, d, shape[dd], keep);
            check_pick(R_KTH, t, x, d, (shape[dd] + 1) / 2, !keep);
        }
        free(x);
        clt_tensor_free(t);
    }
}

Test(reduce_stats, views_bool_and_scalars)
{
    clt_device *dev = get_device("cpu");
    /* a transposed view: its values read in the view's order */
    int64_t shape[2] = {6, 5}, tshape[2] = {5, 6};
    double *x = tied(30, 1, 11), xt[30];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 6; j++)
            xt[i * 6 + j] = x[j * 5 + i];
    clt_tensor *t = make(dev, CLT_FLOAT32, 2, shape, x), *tv = NULL;
    CHECK(clt_transpose(t, 0, 1, &tv));
    assert_shape(tv, 2, tshape);
    for (int d = 0; d < 2; d++) {
        check_pick(R_MEDIAN, tv, xt, d, 0, 0);
        check_pick(R_MODE, tv, xt, d, 0, 1);
        check_pick(R_KTH, tv, xt, d, 2, 0);
        check_pick(R_NANMEDIAN, tv, xt, d, 0, 0);
    }
    /* mode of bool */
    double bx[] = {1, 0, 1, 0, 0, 1};
    int64_t n6 = 6;
    clt_tensor *b = make(dev, CLT_BOOL, 1, &n6, bx);
    check_pick(R_MODE, b, bx, 0, 0, 0);
    /* a 0-dim tensor is a slice of one */
    double five = 5;
    clt_tensor *s = make(dev, CLT_FLOAT32, 0, NULL, &five);
    check_pick(R_KTH, s, &five, 0, 1, 0);
    check_pick(R_MEDIAN, s, &five, -1, 0, 1);
    check_pick(R_MODE, s, &five, 0, 0, 0);
    free(x);
    clt_tensor_free(t);
    clt_tensor_free(tv);
    clt_tensor_free(b);
    clt_tensor_free(s);
}

Test(reduce_stats, median_all)
{
    clt_device *dev = get_device("cpu");
    double x[] = {4, 1, 3, 2, 7, 5}, y[] = {4, NAN, 3, 2}, z[] = {NAN, NAN};
    int64_t n6 = 6, n4 = 4, n2 = 2, n0 = 0;
    struct {
        const double *x;
        int64_t n;
        double med, nanmed;
    } cases[] = {{x, 6, 3, 3}, {y, 4, NAN, 3}, {z, 2, NAN, NAN}, {x, 0, NAN, NAN}};
    (void)n6;
    (void)n4;
    (void)n2;
    (void)n0;
    for (size_t q = 0; q < 4; q++) {
        clt_tensor *t = make(dev, CLT_FLOAT64, 1, &cases[q].n, cases[q].x), *m = NULL,
                   *nm = NULL;
        CHECK(clt_median(t, &m));
        CHECK(clt_nanmedian(t, &nm));
        cr_assert_eq(clt_tensor_ndim(m), 0);
        double *hm = read_as_f64(m), *hn = read_as_f64(nm);
        cr_assert(close_enough(hm[0], cases[q].med, 0, 0), "case %zu: %g", q, hm[0]);
        cr_assert(close_enough(hn[0], cases[q].nanmed, 0, 0), "case %zu: %g", q, hn[0]);
        free(hm);
        free(hn);
        clt_tensor_free(t);
        clt_tensor_free(m);
        clt_tensor_free(nm);
    }
}

Test(reduce_stats, quantile_against_reference)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {2, 9, 3}, nq = 4;
    double *x = tied(54, 1, 5), qv[] = {0, 0.3, 0.5, 1};
    for (int k = 0; k < 54; k++)
        x[k] += 0.125 * k; /* distinct numbers, NaNs kept */
    clt_tensor *t = make(dev, CLT_FLOAT64, 3, shape, x), *q = make(dev, CLT_FLOAT64, 1, &nq, qv);
    for (int ign = 0; ign < 2; ign++)
        for (int interp = 0; interp < 5; interp++)
            for (int d = -1; d < 3; d++) {
                clt_tensor *r = NULL;
                CHECK((ign ? clt_nanquantile : clt_quantile)(t, q, 0, &d, d == 1, interp, &r));
                int dd = d < 0 ? d + 3 : d;
                int64_t outer, R, inner;
                around(3, shape, dd, &outer, &R, &inner);
                cr_assert_eq(clt_tensor_ndim(r), d == 1 ? 4 : 3);
                cr_assert_eq(clt_tensor_shape(r)[0], nq);
                double *h = read_as_f64(r), *slice = malloc((size_t)R * sizeof *slice);
                for (int64_t qi = 0; qi < nq; qi++)
                    for (int64_t o = 0; o < outer; o++)
                        for (int64_t i = 0; i < inner; i++) {
                            for (int64_t j = 0; j < R; j++)
                                slice[j] = x[(o * R + j) * inner + i];
                            int64_t lo, hi;
                            double w,
                                want = ref_quantile(slice, R, qv[qi], interp, ign, &lo, &hi, &w);
                            assert_same(h[(qi * outer + o) * inner + i], want, "quantile",
                                        (qi * outer + o) * inner + i);
                        }
                free(h);
                free(slice);
                clt_tensor_free(r);
            }
    /* dim NULL: every element; the scalar q; keepdim keeps every dim */
    clt_tensor *r = NULL;
    CHECK(clt_nanquantile(t, NULL, 0.3, NULL, 1, CLT_QUANTILE_LINEAR, &r));
    int64_t ones[3] = {1, 1, 1};
    assert_shape(r, 3, ones);
    int64_t lo, hi;
    double w, *h = read_as_f64(r), want = ref_quantile(x, 54, 0.3, 0, 1, &lo, &hi, &w);
    assert_same(h[0], want, "nanquantile", 0);
    free(h);
    clt_tensor_free(r);
    free(x);
    clt_tensor_free(t);
    clt_tensor_free(q);
}

/* ---- amax, nansum, nanmean, count_nonzero, var_mean ---------------------------- */

Test(reduce_stats, amax_amin_over_dims)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {3, 4, 5};
    double *x = tied(60, 1, 9);
    clt_tensor *t = make(dev, CLT_FLOAT32, 3, shape, x);
    const int lists[][2] = {{0, 2}, {-1, 1}, {1, 0}};
    for (size_t l = 0; l < 3; l++)
        for (int keep = 0; keep < 2; keep++)
            for (int mx = 0; mx < 2; mx++) {
                clt_tensor *r = NULL;
                CHECK((mx ? clt_amax : clt_amin)(t, lists[l], 2, keep, &r));
                unsigned m = 0;
                for (int k = 0; k < 2; k++)
                    m |= 1u << (lists[l][k] < 0 ? lists[l][k] + 3 : lists[l][k]);
                int kept = 0;
                for (int d = 0; d < 3; d++)
                    kept = (m >> d) & 1 ? kept : d;
                cr_assert_eq(clt_tensor_ndim(r), keep ? 3 : 1);
                double *h = read_as_f64(r);
                for (int64_t o = 0; o < shape[kept]; o++) {
                    double want = mx ? -INFINITY : INFINITY;
                    for (int a = 0; a < 3; a++)
                        for (int b = 0; b < 4; b++)
                            for (int c = 0; c < 5; c++) {
                                int idx[3] = {a, b, c};
                                if (idx[kept] != o)
                                    continue;
                                double v = x[(a * 4 + b) * 5 + c];
                                if (isnan(v) || isnan(want))
                                    want = NAN;
                                else
                                    want = mx ? fmax(want, v) : fmin(want, v);
                            }
                    assert_same(h[o], want, mx ? "amax" : "amin", o);
                }
                free(h);
                clt_tensor_free(r);
            }
    /* every dim, and aminmax */
    clt_tensor *r = NULL, *mn = NULL, *mx = NULL;
    CHECK(clt_amax(t, NULL, 0, 0, &r));
    cr_assert_eq(clt_tensor_ndim(r), 0);
    double *h = read_as_f64(r);
    cr_assert(isnan(h[0]));
    free(h);
    double y[] = {3, -1, 7, 2, 7, 0};
    int64_t ys[2] = {2, 3};
    clt_tensor *ty = make(dev, CLT_INT32, 2, ys, y);
    CHECK(clt_aminmax(ty, &mn, &mx));
    double *hn = read_as_f64(mn), *hx = read_as_f64(mx);
    cr_assert(hn[0] == -1 && hx[0] == 7);
    cr_assert_eq(clt_tensor_dtype(mx), CLT_INT32);
    free(hn);
    free(hx);
    clt_tensor_free(mn);
    clt_tensor_free(mx);
    CHECK(clt_aminmax_dim(ty, -1, 1, &mn, &mx));
    int64_t ks[2] = {2, 1};
    assert_shape(mn, 2, ks);
    hn = read_as_f64(mn);
    hx = read_as_f64(mx);
    cr_assert(hn[0] == -1 && hn[1] == 0 && hx[0] == 7 && hx[1] == 7);
    free(hn);
    free(hx);
    clt_tensor_free(mn);
    clt_tensor_free(mx);
    clt_tensor_free(ty);
    clt_tensor_free(r);
    clt_tensor_free(t);
    free(x);
}

Test(reduce_stats, nansum_nanmean_count_nonzero)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {4, 6};
    double *x = tied(24, 1, 2);
    x[6] = x[7] = x[8] = x[9] = x[10] = x[11] = NAN; /* a row of NaNs */
    clt_tensor *t = make(dev, CLT_FLOAT64, 2, shape, x);
    for (int d = -2; d < 2; d++) {
        int dd = d < 0 ? d + 2 : d;
        clt_tensor *s = NULL, *m = NULL, *c = NULL;
        CHECK(clt_nansum_dim(t, d, 1, &s));
        CHECK(clt_nanmean_dim(t, d, 0, &m));
        CHECK(clt_count_nonzero(t, &d, 1, &c));
        cr_assert_eq(clt_tensor_dtype(c), CLT_INT64);
        double *hs = read_as_f64(s), *hm = read_as_f64(m), *hc = read_as_f64(c);
        for (int64_t o = 0; o < shape[1 - dd]; o++) {
            double sum = 0, cnt = 0, nz = 0;
            for (int64_t j = 0; j < shape[dd]; j++) {
                double v = dd == 0 ? x[j * 6 + o] : x[o * 6 + j];
                nz += v != 0;
                if (!isnan(v)) {
                    sum += v;
                    cnt++;
                }
            }
            assert_same(hs[o], sum, "nansum", o);
            assert_same(hm[o], sum / cnt, "nanmean", o);
            assert_same(hc[o], nz, "count_nonzero", o);
        }
        free(hs);
        free(hm);
        free(hc);
        clt_tensor_free(s);
        clt_tensor_free(m);
        clt_tensor_free(c);
    }
    /* integers: nansum gives int64 */
    clt_tensor *ti = make(dev, CLT_INT32, 2, shape, (double[24]){1, 2, 3}), *s = NULL, *c = NULL;
    CHECK(clt_nansum(ti, &s));
    cr_assert_eq(clt_tensor_dtype(s), CLT_INT64);
    CHECK(clt_count_nonzero(ti, NULL, 0, &c));
    double *hs = read_as_f64(s), *hc = read_as_f64(c);
    cr_assert(hs[0] == 6 && hc[0] == 3);
    free(hs);
    free(hc);
    clt_tensor_free(s);
    clt_tensor_free(c);
    clt_tensor_free(ti);
    clt_tensor_free(t);
    free(x);
}

Test(reduce_stats, var_mean_std_mean)
{
    clt_device *dev = get_device("cpu");
    double x[] = {1, 2, 4, 8, -3, 0.5};
    int64_t shape[2] = {2, 3};
    clt_tensor *t = make(dev, CLT_FLOAT64, 2, shape, x), *v = NULL, *m = NULL;
    for (int sd = 0; sd < 2; sd++)
        for (int corr = 0; corr < 2; corr++) {
            CHECK((sd ? clt_std_mean : clt_var_mean)(t, corr, &v, &m));
            double mean = 0, ss = 0;
            for (int k = 0; k < 6; k++)
                mean += x[k] / 6;
            for (int k = 0; k < 6; k++)
                ss += (x[k] - mean) * (x[k] - mean);
            double var = ss / (6 - corr), *hv = read_as_f64(v), *hm = read_as_f64(m);
            assert_same(hv[0], sd ? sqrt(var) : var, "var", 0);
            assert_same(hm[0], mean, "mean", 0);
            free(hv);
            free(hm);
            clt_tensor_free(v);
            clt_tensor_free(m);
            CHECK((sd ? clt_std_mean_dim : clt_var_mean_dim)(t, -1, corr, 1, &v, &m));
            hv = read_as_f64(v);
            hm = read_as_f64(m);
            for (int r = 0; r < 2; r++) {
                double mu = (x[3 * r] + x[3 * r + 1] + x[3 * r + 2]) / 3, s2 = 0;
                for (int c = 0; c < 3; c++)
                    s2 += (x[3 * r + c] - mu) * (x[3 * r + c] - mu);
                s2 /= 3 - corr;
                assert_same(hv[r], sd ? sqrt(s2) : s2, "var_dim", r);
                assert_same(hm[r], mu, "mean_dim", r);
            }
            free(hv);
            free(hm);
            clt_tensor_free(v);
            clt_tensor_free(m);
        }
    clt_tensor_free(t);
}

Test(reduce_stats, errors)
{
    clt_device *dev = get_device("cpu");
    int64_t e[2] = {0, 3}, s3 = 3;
    double x[] = {1, 2, 3};
    clt_tensor *empty = make(dev, CLT_FLOAT32, 2, e, x), *t = make(dev, CLT_FLOAT32, 1, &s3, x),
               *ti = make(dev, CLT_INT64, 1, &s3, x), *tb = make(dev, CLT_BOOL, 1, &s3, x),
               *v = (clt_tensor *)1, *ix = (clt_tensor *)1, *q = NULL;
    int d0 = 0, dup[2] = {0, -2};
    assert_error(clt_amax(empty, &d0, 1, 0, &v), CLT_ERR_INVALID_ARGUMENT, "non-zero size");
    cr_assert_null(v);
    assert_error(clt_amin(empty, NULL, 0, 0, &v), CLT_ERR_INVALID_ARGUMENT, "numel() == 0");
    names_only("clt_amin");
    assert_error(clt_amax(empty, dup, 2, 0, &v), CLT_ERR_INVALID_ARGUMENT, "multiple times");
    assert_error(clt_amax(t, NULL, 2, 0, &v), CLT_ERR_NULL_ARGUMENT, "list NULL");
    assert_error(clt_count_nonzero(t, dup, -1, &v), CLT_ERR_INVALID_ARGUMENT, "-1 dims");
    assert_error(clt_count_nonzero(empty, dup, 2, &v), CLT_ERR_INVALID_ARGUMENT,
                 "multiple times");
    assert_error(clt_aminmax(empty, &v, &ix), CLT_ERR_INVALID_ARGUMENT, "no identity");
    cr_assert(v == NULL && ix == NULL);
    assert_error(clt_median_dim(empty, 0, 0, &v, &ix), CLT_ERR_INVALID_ARGUMENT,
                 "dim 0 to have non-zero size");
    names_only("clt_median_dim");
    assert_error(clt_mode(empty, 0, 0, &v, &ix), CLT_ERR_INVALID_ARGUMENT, "non-zero size");
    assert_error(clt_kthvalue(t, 4, 0, 0, &v, &ix), CLT_ERR_INVALID_ARGUMENT, "k out of range");
    assert_error(clt_kthvalue(t, 0, 0, 0, &v, &ix), CLT_ERR_INVALID_ARGUMENT, "k out of range");
    assert_error(clt_median_dim(t, 1, 0, &v, &ix), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    assert_error(clt_median(tb, &v), CLT_ERR_DTYPE_MISMATCH, "bool");
    assert_error(clt_nanmean(ti, &v), CLT_ERR_DTYPE_MISMATCH, "floating point");
    assert_error(clt_var_mean(ti, 1, &v, &ix), CLT_ERR_DTYPE_MISMATCH, NULL);
    cr_assert(v == NULL && ix == NULL);
    names_only("clt_var_mean");
    assert_error(clt_quantile(ti, NULL, 0.5, NULL, 0, 0, &v), CLT_ERR_DTYPE_MISMATCH,
                 "float or double");
    assert_error(clt_quantile(empty, NULL, 0.5, NULL, 0, 0, &v), CLT_ERR_INVALID_ARGUMENT,
                 "non-empty");
    assert_error(clt_quantile(t, NULL, 1.5, NULL, 0, 0, &v), CLT_ERR_INVALID_ARGUMENT,
                 "range [0, 1]");
    assert_error(clt_quantile(t, NULL, 0.5, NULL, 0, 5, &v), CLT_ERR_INVALID_ARGUMENT,
                 "interpolation");
    double bad[] = {0.5, 1.25};
    int64_t s2 = 2, s11[2] = {1, 1};
    q = make(dev, CLT_FLOAT32, 1, &s2, bad);
    assert_error(clt_nanquantile(t, q, 0, NULL, 0, 0, &v), CLT_ERR_INVALID_ARGUMENT,
                 "q values must be in the range");
    names_only("clt_nanquantile");
    clt_tensor_free(q);
    q = make(dev, CLT_FLOAT64, 1, &s2, x);
    assert_error(clt_quantile(t, q, 0, NULL, 0, 0, &v), CLT_ERR_DTYPE_MISMATCH, "same dtype");
    clt_tensor_free(q);
    q = make(dev, CLT_FLOAT32, 2, s11, x);
    assert_error(clt_quantile(t, q, 0, NULL, 0, 0, &v), CLT_ERR_INVALID_ARGUMENT, "1D tensor");
    cr_assert_null(v);
    clt_tensor_free(q);
    clt_tensor_free(empty);
    clt_tensor_free(t);
    clt_tensor_free(ti);
    clt_tensor_free(tb);
}

/* ---- gradients ---------------------------------------------------------------- */

typedef struct gcase {
    int op, dim, keep;
    int64_t k;
} gcase;

enum { G_AMAX, G_AMIN, G_NANSUM, G_NANMEAN, G_MEDIAN_DIM, G_KTH, G_MODE, G_NANMEDIAN_DIM,
       G_QUANTILE, G_QUANTILE_T, G_MEDIAN, G_VAR_MEAN, G_STD_MEAN };

static clt_status call_case(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gcase *c = ctx;
    int dims[2] = {c->dim, 0};
    clt_tensor *a = NULL, *b = NULL;
    clt_status st;
    switch (c->op) {
    case G_AMAX:
        return clt_amax(in[0], dims, c->dim == 0 ? 1 : 2, c->keep, out);
    case G_AMIN:
        return clt_amin(in[0], dims, 1, c->keep, out);
    case G_NANSUM:
        return clt_nansum_dim(in[0], c->dim, c->keep, out);
    case G_NANMEAN:
        return clt_nanmean_dim(in[0], c->dim, c->keep, out);
    case G_MEDIAN_DIM:
        return clt_median_dim(in[0], c->dim, c->keep, out, NULL);
    case G_KTH:
        return clt_kthvalue(in[0], c->k, c->dim, c->keep, out, NULL);
    case G_MODE:
        return clt_mode(in[0], c->dim, c->keep, out, NULL);
    case G_NANMEDIAN_DIM:
        return clt_nanmedian_dim(in[0], c->dim, c->keep, out, NULL);
    case G_QUANTILE:
        return clt_quantile(in[0], NULL, 0.3, &c->dim, c->keep, (clt_quantile_interp)c->k, out);
    case G_QUANTILE_T: {
        double qv[] = {0.1, 0.5, 0.85};
        int64_t n = 3;
        CHECK(clt_tensor_from_host(clt_tensor_device(in[0]), CLT_FLOAT64, 1, &n, qv, &a));
        st = clt_quantile(in[0], a, 0, NULL, c->keep, (clt_quantile_interp)c->k, out);
        clt_tensor_free(a);
        return st;
    }
    case G_MEDIAN:
        return c->k ? clt_nanmedian(in[0], out) : clt_median(in[0], out);
    default:
        st = (c->op == G_VAR_MEAN ? clt_var_mean_dim : clt_std_mean_dim)(in[0], c->dim, 1,
                                                                        c->keep, &a, &b);
        if (st == CLT_OK)
            st = clt_add(a, b, out);
        clt_tensor_free(a);
        clt_tensor_free(b);
        return st;
    }
}

Test(gradients, reduce_stats)
{
    clt_device *dev = get_device("cpu");
    double x[60];
    for (int i = 0; i < 60; i++)
        x[i] = sin(1.7 * i + 0.3) * 3; /* no ties */
    gc_in in3 = {3, {3, 4, 5}, x, 1}, in1 = {1, {7}, x, 1};
    const gcase cases[] = {
        {G_AMAX, 2, 0, 0},        {G_AMAX, 0, 1, 0},       {G_AMIN, -1, 1, 0},
        {G_NANSUM, 1, 0, 0},      {G_NANMEAN, -2, 1, 0},   {G_MEDIAN_DIM, 1, 0, 0},
        {G_KTH, 2, 1, 2},         {G_MODE, 0, 0, 0},       {G_NANMEDIAN_DIM, -1, 1, 0},
        {G_QUANTILE, 1, 0, 0},    {G_QUANTILE, 2, 1, 3},   {G_QUANTILE, 0, 0, 1},
        {G_QUANTILE_T, 0, 1, 0},  {G_QUANTILE_T, 0, 0, 4}, {G_MEDIAN, 0, 0, 0},
        {G_MEDIAN, 0, 0, 1},      {G_VAR_MEAN, 1, 0, 0},   {G_STD_MEAN, -1, 1, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gradcheck(dev, call_case, &cases[k], 1, &in3);
        if (cases[k].dim == 0)
            gradcheck(dev, call_case, &cases[k], 1, &in1);
    }
}

Test(gradients, ties_and_nans_as_torch)
{
    /* torch 1.13: amax of a slice with a NaN gives NaN to all of it (g / 0
     * * 0); nansum gives 0 at NaN; median() gives g to the NaN. */
    clt_device *dev = get_device("cpu");
    double x[] = {1, 5, 5, NAN, 2, 5};
    int64_t n = 6;
    clt_tensor *t = NULL, *r = NULL, *s = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, x, &t));
    CHECK(clt_set_requires_grad(t, 1));
    const double want[3][6] = {{NAN, NAN, NAN, NAN, NAN, NAN}, {1, 1, 1, 0, 1, 1}, {0, 0, 0, 1, 0, 0}};
    for (int c = 0; c < 3; c++) {
        CHECK(c == 0 ? clt_amax(t, NULL, 0, 0, &r) : c == 1 ? clt_nansum(t, &r) : clt_median(t, &r));
        CHECK(clt_sum(r, &s));
        CHECK(clt_backward(s, NULL, 0));
        double g[6];
        clt_tensor *gt = NULL;
        CHECK(clt_grad(t, &gt));
        CHECK(clt_tensor_read(gt, g, sizeof g));
        clt_tensor_free(gt);
        for (int k = 0; k < 6; k++)
            cr_assert(close_enough(g[k], want[c][k], 0, 0), "case %d, element %d: %g", c, k,
                      g[k]);
        CHECK(clt_zero_grad(t, 1));
        clt_tensor_free(r);
        clt_tensor_free(s);
    }
    /* without the NaN: amax 1/3 to each of the three 5s */
    x[3] = 0;
    clt_tensor *u = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, x, &u));
    CHECK(clt_set_requires_grad(u, 1));
    CHECK(clt_amax(u, NULL, 0, 0, &r));
    CHECK(clt_backward(r, NULL, 0));
    double g[6];
    clt_tensor *gu = NULL;
    CHECK(clt_grad(u, &gu));
    CHECK(clt_tensor_read(gu, g, sizeof g));
    clt_tensor_free(gu);
    for (int k = 0; k < 6; k++)
        cr_assert(fabs(g[k] - (x[k] == 5 ? 1.0 / 3 : 0)) < 1e-15, "element %d: %g", k, g[k]);
    clt_tensor_free(r);
    clt_tensor_free(u);
    clt_tensor_free(t);
}
