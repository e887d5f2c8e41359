/* test_sparse_grad.c: Embedding and EmbeddingBag with sparse=True (the
 * weight's sparse COO gradient, its accumulation and zeroing),
 * EmbeddingBag.from_pretrained, and the optimizers with sparse gradients
 * (SGD, Adagrad, SparseAdam, the refusals), against references computed
 * here on the host. */
#include "helpers.h"
#include "scratch.h"

#define ROWS 5
#define DIM 3

static const float W0[ROWS * DIM] = {0.5f, -1.0f, 2.0f,  1.5f, 0.25f, -0.75f, -2.0f, 1.0f,
                                     0.125f, 3.0f, -0.5f, 1.25f, 0.75f, -1.5f, 2.5f};

static clt_tensor *f32(clt_device *dev, int ndim, const int64_t *shape, const float *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, ndim, shape, v, &t));
    return t;
}

static clt_tensor *i64(clt_device *dev, int ndim, const int64_t *shape, const int64_t *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, ndim, shape, v, &t));
    return t;
}

/* An Embedding over a copy of W0 that requires grad, with sparse and
 * padding_idx pad (< 0: none). */
static clt_module *sparse_embedding(clt_device *dev, int64_t pad, int freq)
{
    int64_t ws[2] = {ROWS, DIM};
    clt_tensor *w = f32(dev, 2, ws, W0);
    clt_embedding_opts o = CLT_EMBEDDING_DEFAULTS;
    o.sparse = 1;
    o.scale_grad_by_freq = freq;
    if (pad >= 0)
        o.padding_idx = &pad;
    clt_module *m = NULL;
    CHECK(clt_embedding_layer_from_pretrained(w, 0, &o, &m));
    clt_tensor_free(w);
    return m;
}

/* Runs m on idx (n int64 indices, 1-D) and backward with the output
 * gradient gout [n, DIM]. */
static void run_backward(clt_module *m, clt_device *dev, const int64_t *idx, int64_t n,
                         const float *gout)
{
    int64_t gs[2] = {n, DIM};
    clt_tensor *x = i64(dev, 1, &n, idx), *y = NULL, *g = f32(dev, 2, gs, gout);
    CHECK(clt_module_forward(m, x, &y));
    CHECK(clt_backward(y, g, 0));
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(g);
}

/* Checks that w's gradient is sparse with the entries rows[nnz] and
 * values vals[nnz * DIM], its coalesced flag, and that its dense forms
 * (clt_sparse_to_dense, clt_grad) hold their sums. */
static void expect_sparse(const clt_tensor *w, const int64_t *rows, const float *vals,
                          int64_t nnz)
{
    cr_assert(clt_grad_is_sparse(w));
    clt_sparse *s = NULL;
    CHECK(clt_grad_sparse(w, &s));
    cr_assert_eq(clt_sparse_nnz(s), nnz);
    cr_assert_eq(clt_sparse_sparse_dim(s), 1);
    cr_assert_eq(clt_sparse_dense_dim(s), 1);
    cr_assert_eq(clt_sparse_shape(s)[0], ROWS);
    cr_assert_eq(clt_sparse_shape(s)[1], DIM);
    cr_assert_eq(clt_sparse_is_coalesced(s), nnz <= 1, "torch's is_coalesced()");
    clt_tensor *ti = NULL, *tv = NULL, *dense = NULL, *g = NULL;
    CHECK(clt_sparse_indices(s, &ti));
    CHECK(clt_sparse_values(s, &tv));
    cr_assert_eq(clt_tensor_ndim(ti), 2);
    cr_assert_eq(clt_tensor_shape(ti)[0], 1);
    cr_assert_eq(clt_tensor_shape(ti)[1], nnz);
    cr_assert_eq(clt_tensor_shape(tv)[0], nnz);
    cr_assert_eq(clt_tensor_shape(tv)[1], DIM);
    int64_t hi[16] = {0};
    float hv[16 * DIM] = {0};
    if (nnz > 0) {
        CHECK(clt_tensor_read(ti, hi, (size_t)nnz * sizeof *hi));
        CHECK(clt_tensor_read(tv, hv, (size_t)(nnz * DIM) * sizeof *hv));
    }
    double ref[ROWS * DIM] = {0};
    for (int64_t k = 0; k < nnz; k++) {
        cr_assert_eq(hi[k], rows[k], "entry %lld: row %lld, want %lld", (long long)k,
                     (long long)hi[k], (long long)rows[k]);
        for (int d = 0; d < DIM; d++) {
            cr_assert_eq(hv[k * DIM + d], vals[k * DIM + d]);
            ref[rows[k] * DIM + d] += vals[k * DIM + d];
        }
    }
    CHECK(clt_sparse_to_dense(s, &dense));
    CHECK(clt_grad(w, &g));
    float *hd = read_f32(dense), *hg = read_f32(g);
    for (int k = 0; k < ROWS * DIM; k++) {
        cr_assert_float_eq(hd[k], ref[k], 1e-6);
        cr_assert_float_eq(hg[k], ref[k], 1e-6);
    }
    free(hd);
    free(hg);
    clt_tensor_free(ti);
    clt_tensor_free(tv);
    clt_tensor_free(dense);
    clt_tensor_free(g);
    clt_sparse_free(s);
}

/* Checks that w's gradient is the one torch's zero_() leaves: sparse with
 * no entries and every dimension sparse (indices [2, 0], values [0]),
 * coalesced, its dense form zeros. */
static void expect_zeroed(const clt_tensor *w)
{
    cr_assert(clt_grad_is_sparse(w));
    clt_sparse *s = NULL;
    clt_tensor *ti = NULL, *tv = NULL, *g = NULL;
    CHECK(clt_grad_sparse(w, &s));
    cr_assert_eq(clt_sparse_nnz(s), 0);
    cr_assert_eq(clt_sparse_sparse_dim(s), 2, "torch: sparse_dim() 2 after zero_()");
    cr_assert_eq(clt_sparse_dense_dim(s), 0);
    cr_assert(clt_sparse_is_coalesced(s));
    CHECK(clt_sparse_indices(s, &ti));
    CHECK(clt_sparse_values(s, &tv));
    cr_assert_eq(clt_tensor_ndim(ti), 2);
    cr_assert_eq(clt_tensor_shape(ti)[0], 2);
    cr_assert_eq(clt_tensor_shape(ti)[1], 0);
    cr_assert_eq(clt_tensor_ndim(tv), 1);
    cr_assert_eq(clt_tensor_shape(tv)[0], 0);
    CHECK(clt_grad(w, &g));
    float *hg = read_f32(g);
    for (int k = 0; k < ROWS * DIM; k++)
        cr_assert_eq(hg[k], 0.0f);
    free(hg);
    clt_tensor_free(ti);
    clt_tensor_free(tv);
    clt_tensor_free(g);
    clt_sparse_free(s);
}

Test(sparse_grad, embedding_layout_accumulation_and_zeroing)
{
    clt_device *dev = get_device("auto");
    clt_module *m = sparse_embedding(dev, -1, 0);
    clt_tensor *w = clt_module_param(m, "weight");
    const int64_t idx1[4] = {1, 2, 1, 4};
    const float g1[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    run_backward(m, dev, idx1, 4, g1);
    /* torch: _indices() [[1, 2, 1, 4]], _values() the rows of g, in order */
    expect_sparse(w, idx1, g1, 4);
    /* a second pass appends its entries, not coalesced, as torch's += */
    const int64_t idx2[1] = {3};
    const float g2[3] = {-1, -2, -3};
    run_backward(m, dev, idx2, 1, g2);
    const int64_t rows12[5] = {1, 2, 1, 4, 3};
    float vals12[15];
    memcpy(vals12, g1, sizeof g1);
    memcpy(vals12 + 12, g2, sizeof g2);
    expect_sparse(w, rows12, vals12, 5);
    /* zero_grad(set_to_none=False): sparse with no entries, torch's layout */
    CHECK(clt_zero_grad(w, 0));
    expect_zeroed(w);
    const int64_t idx3[2] = {0, 2};
    const float g3[6] = {0.5f, 1, 1.5f, 2, 2.5f, 3};
    run_backward(m, dev, idx3, 2, g3);
    expect_sparse(w, idx3, g3, 2);
    /* set_to_none drops it; one lookup gives a coalesced gradient */
    CHECK(clt_zero_grad(w, 1));
    cr_assert(!clt_grad_is_sparse(w));
    clt_sparse *none = (clt_sparse *)1;
    cr_assert_eq(clt_grad_sparse(w, &none), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(none);
    run_backward(m, dev, idx2, 1, g2);
    expect_sparse(w, idx2, g2, 1);
    clt_module_free(m);
}

Test(sparse_grad, padding_and_scale_grad_by_freq)
{
    clt_device *dev = get_device("auto");
    clt_module *m = sparse_embedding(dev, 2, 0);
    clt_tensor *w = clt_module_param(m, "weight");
    const int64_t idx[4] = {2, 0, 2, 3};
    const float g[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    run_backward(m, dev, idx, 4, g);
    /* torch leaves the padding entries out */
    const int64_t rows[2] = {0, 3};
    const float vals[6] = {4, 5, 6, 10, 11, 12};
    expect_sparse(w, rows, vals, 2);
    clt_module_free(m);
    /* only padding: no entries */
    m = sparse_embedding(dev, 2, 0);
    w = clt_module_param(m, "weight");
    run_backward(m, dev, idx, 1, g);
    expect_sparse(w, NULL, NULL, 0);
    clt_module_free(m);
    /* torch refuses scale_grad_by_freq in the backward; no gradient */
    m = sparse_embedding(dev, -1, 1);
    w = clt_module_param(m, "weight");
    int64_t n = 2, gs[2] = {2, DIM};
    clt_tensor *x = i64(dev, 1, &n, idx), *y = NULL, *gt = f32(dev, 2, gs, g);
    CHECK(clt_module_forward(m, x, &y));
    cr_assert_eq(clt_backward(y, gt, 0), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "scale_grad_by_freq not supported with sparse"),
              "%s", clt_last_error());
    clt_tensor *none = NULL;
    CHECK(clt_grad(w, &none));
    cr_assert_null(none);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(gt);
    clt_module_free(m);
}

Test(sparse_grad, dense_and_sparse_mix_to_dense)
{
    clt_device *dev = get_device("auto");
    clt_module *m = sparse_embedding(dev, -1, 0);
    clt_tensor *w = clt_module_param(m, "weight");
    const int64_t idx[2] = {1, 1};
    const float g[6] = {1, 2, 3, 4, 5, 6};
    run_backward(m, dev, idx, 2, g);
    cr_assert(clt_grad_is_sparse(w));
    /* a dense pass after a sparse one: dense, the sum (torch's grad + new) */
    clt_tensor *y = NULL;
    CHECK(clt_mul(w, w, &y));
    clt_tensor *s = NULL;
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    cr_assert(!clt_grad_is_sparse(w));
    float *hg = read_grad_f32(w);
    for (int r = 0; r < ROWS; r++)
        for (int d = 0; d < DIM; d++) {
            double want = 2.0 * W0[r * DIM + d] + (r == 1 ? g[d] + g[DIM + d] : 0.0);
            cr_assert_float_eq(hg[r * DIM + d], want, 1e-5, "[%d, %d]", r, d);
        }
    free(hg);
    /* a sparse pass after a dense one adds into the dense gradient */
    run_backward(m, dev, idx, 1, g);
    cr_assert(!clt_grad_is_sparse(w));
    hg = read_grad_f32(w);
    for (int d = 0; d < DIM; d++)
        cr_assert_float_eq(hg[DIM + d], 2.0 * W0[DIM + d] + 2 * g[d] + g[DIM + d], 1e-5);
    free(hg);
    clt_tensor_free(y);
    clt_tensor_free(s);
    clt_module_free(m);
}

Test(sparse_grad, embedding_bag_sparse_mean_with_padding)
{
    clt_device *dev = get_device("auto");
    int64_t ws[2] = {ROWS, DIM};
    clt_tensor *w0 = f32(dev, 2, ws, W0);
    clt_embedding_bag_opts o = CLT_EMBEDDING_BAG_DEFAULTS;
    int64_t pad = 1;
    o.padding_idx = &pad;
    o.sparse = 1;
    clt_module *m = NULL;
    CHECK(clt_embedding_bag_layer_from_pretrained(w0, 0, &o, &m));
    clt_tensor *w = clt_module_param(m, "weight");
    int64_t n = 4, nb = 2;
    const int64_t in[4] = {1, 2, 3, 3}, off[2] = {0, 2};
    clt_tensor *x = i64(dev, 1, &n, in), *of = i64(dev, 1, &nb, off), *y = NULL, *s = NULL;
    CHECK(clt_embedding_bag_forward(m, x, of, NULL, &y));
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    /* torch: indices [[2, 3, 3]], values [1, 1, 1], [.5 ...], [.5 ...]
     * (bag 0's size counts its padding entry out: one entry) */
    const int64_t rows[3] = {2, 3, 3};
    const float vals[9] = {1, 1, 1, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    expect_sparse(w, rows, vals, 3);
    /* max mode refuses sparse, as torch */
    o.mode = CLT_BAG_MAX;
    clt_module *bad = (clt_module *)1;
    cr_assert_eq(clt_embedding_bag_layer_from_pretrained(w0, 0, &o, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    cr_assert(strstr(clt_last_error(), "max mode does not support sparse weights"));
    clt_tensor_free(x);
    clt_tensor_free(of);
    clt_tensor_free(y);
    clt_tensor_free(s);
    clt_tensor_free(w0);
    clt_module_free(m);
}

Test(sparse_grad, embedding_bag_from_pretrained)
{
    clt_device *dev = get_device("auto");
    int64_t ws[2] = {ROWS, DIM};
    clt_tensor *w0 = f32(dev, 2, ws, W0);
    clt_module *m = NULL;
    /* defaults: mode mean, frozen */
    CHECK(clt_embedding_bag_layer_from_pretrained(w0, 1, NULL, &m));
    clt_tensor *w = clt_module_param(m, "weight");
    cr_assert_not_null(w);
    cr_assert(!clt_requires_grad(w), "freeze");
    cr_assert_str_eq(clt_module_name(m), "EmbeddingBag");
    int64_t xs[2] = {2, 2};
    const int64_t in[4] = {0, 3, 4, 4};
    clt_tensor *x = i64(dev, 2, xs, in), *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    float *hy = read_f32(y);
    for (int b = 0; b < 2; b++)
        for (int d = 0; d < DIM; d++)
            cr_assert_float_eq(hy[b * DIM + d],
                               (W0[in[2 * b] * DIM + d] + W0[in[2 * b + 1] * DIM + d]) / 2.0,
                               1e-6);
    free(hy);
    /* the weight shares embeddings' storage, as torch's Parameter */
    const float nine[DIM] = {9, 9, 9};
    int64_t one = DIM;
    clt_tensor *src = f32(dev, 1, &one, nine), *row = NULL;
    CHECK(clt_select(w0, 0, 0, &row));
    CHECK(clt_copy_(row, src));
    float *hw = read_f32(w);
    cr_assert_float_eq(hw[0], 9.0, 0);
    free(hw);
    /* padding row kept as it is; sum mode; not frozen */
    clt_embedding_bag_opts o = CLT_EMBEDDING_BAG_DEFAULTS;
    int64_t pad = -1;
    o.mode = CLT_BAG_SUM;
    o.padding_idx = &pad;
    clt_module *m2 = NULL;
    CHECK(clt_embedding_bag_layer_from_pretrained(w0, 0, &o, &m2));
    cr_assert(clt_requires_grad(clt_module_param(m2, "weight")));
    int has = 0;
    int64_t p = 0;
    CHECK(clt_embedding_layer_padding_idx(m2, &has, &p));
    cr_assert(has && p == ROWS - 1);
    hw = read_f32(clt_module_param(m2, "weight"));
    cr_assert_float_eq(hw[(ROWS - 1) * DIM], W0[(ROWS - 1) * DIM], 0, "padding row kept");
    free(hw);
    /* errors */
    clt_module *bad = (clt_module *)1;
    int64_t n1 = 3;
    clt_tensor *v1 = f32(dev, 1, &n1, nine), *iv = i64(dev, 2, xs, in);
    cr_assert_eq(clt_embedding_bag_layer_from_pretrained(v1, 1, NULL, &bad),
                 CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(bad);
    cr_assert(strstr(clt_last_error(), "Embeddings parameter is expected to be 2-dimensional"));
    bad = (clt_module *)1;
    cr_assert_eq(clt_embedding_bag_layer_from_pretrained(iv, 1, NULL, &bad),
                 CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(bad);
    pad = ROWS;
    bad = (clt_module *)1;
    cr_assert_eq(clt_embedding_bag_layer_from_pretrained(w0, 1, &o, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    clt_tensor_free(v1);
    clt_tensor_free(iv);
    clt_tensor_free(src);
    clt_tensor_free(row);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(w0);
    clt_module_free(m);
    clt_module_free(m2);
}

/* Two steps of opt over an Embedding(sparse) with the lookups below, each
 * step's weights into out[2][ROWS * DIM]. */
static const int64_t STEP_IDX[2][3] = {{1, 3, 1}, {3, 0, 3}};
static const float STEP_G[2][9] = {{1, -2, 0.5f, 0.25f, 1, -1, 2, 0.5f, -0.5f},
                                   {-1, 1, 2, 0.5f, 0.5f, 0.5f, 3, -2, 1}};

static void two_steps(clt_module *m, clt_optimizer *opt, clt_device *dev, float out[2][15])
{
    clt_tensor *w = clt_module_param(m, "weight");
    for (int s = 0; s < 2; s++) {
        CHECK(clt_optimizer_zero_grad(opt, 1));
        run_backward(m, dev, STEP_IDX[s], 3, STEP_G[s]);
        cr_assert(clt_grad_is_sparse(w));
        CHECK(clt_optimizer_step(opt));
        float *hw = read_f32(w);
        memcpy(out[s], hw, sizeof out[s]);
        free(hw);
    }
}

/* The dense gradient of step s. */
static void dense_grad(int s, double *g)
{
    memset(g, 0, ROWS * DIM * sizeof *g);
    for (int k = 0; k < 3; k++)
        for (int d = 0; d < DIM; d++)
            g[STEP_IDX[s][k] * DIM + d] += STEP_G[s][k * DIM + d];
}

/* SparseAdam's state (step, exp_avg, exp_avg_sq: torch's, Adam's) in a
 * general checkpoint after step 1, loaded with the model into ones made
 * with the defaults, gives step 2 of the uninterrupted run bit for bit
 * (row 0, first looked up at step 2, starts its moments afresh in both);
 * a SparseAdam made anew gives other values. */
Test(sparse_grad, sparse_adam_general_checkpoint, .init = scratch_make, .fini = scratch_remove)
{
    clt_device *dev = get_device("auto");
    clt_sparse_adam_opts so = {0.1, 0.8, 0.9, 1e-3};
    clt_module *ms[3];
    clt_optimizer *os[3];
    for (int k = 0; k < 3; k++) {
        ms[k] = sparse_embedding(dev, -1, 0);
        clt_tensor *w = clt_module_param(ms[k], "weight");
        clt_sparse_adam_opts d = CLT_SPARSE_ADAM_DEFAULTS;
        CHECK(clt_sparse_adam(&w, 1, k == 0 ? &so : &d, &os[k]));
    }
    CHECK(clt_optimizer_zero_grad(os[0], 1));
    run_backward(ms[0], dev, STEP_IDX[0], 3, STEP_G[0]);
    CHECK(clt_optimizer_step(os[0]));
    clt_checkpoint_dict *ck = NULL;
    CHECK(clt_checkpoint_dict_new(&ck));
    CHECK(clt_checkpoint_dict_add_module(ck, "model", ms[0]));
    CHECK(clt_checkpoint_dict_add_optimizer(ck, "optimizer", os[0]));
    CHECK(clt_checkpoint_dict_save_torch(ck, tpath("sa.pt")));
    clt_checkpoint_dict_free(ck);
    CHECK(clt_checkpoint_dict_load_torch(tpath("sa.pt"), &ck));
    for (int k = 1; k < 3; k++)
        CHECK(clt_checkpoint_dict_load_module(ck, "model", ms[k], 1));
    CHECK(clt_checkpoint_dict_load_optimizer(ck, "optimizer", os[1]));
    clt_checkpoint_dict_free(ck);
    cr_assert_eq(clt_optimizer_steps(os[1]), 1);
    cr_assert_eq(clt_optimizer_lr(os[1]), 0.1);
    CHECK(clt_optimizer_set_lr(os[2], 0.1));
    float *got[3];
    for (int k = 0; k < 3; k++) {
        CHECK(clt_optimizer_zero_grad(os[k], 1));
        run_backward(ms[k], dev, STEP_IDX[1], 3, STEP_G[1]);
        CHECK(clt_optimizer_step(os[k]));
        got[k] = read_f32(clt_module_param(ms[k], "weight"));
    }
    cr_assert(memcmp(got[0], got[1], sizeof(float) * ROWS * DIM) == 0,
              "the resumed run differs from the uninterrupted one");
    cr_assert(memcmp(got[0], got[2], sizeof(float) * ROWS * DIM) != 0,
              "the state made no difference");
    for (int k = 0; k < 3; k++) {
        free(got[k]);
        clt_optimizer_free(os[k]);
        clt_module_free(ms[k]);
    }
}

Test(sparse_grad, sgd_and_adagrad)
{
    clt_device *dev = get_device("auto");
    float got[2][15];
    /* SGD with momentum (torch takes sparse gradients with momentum) */
    clt_module *m = sparse_embedding(dev, -1, 0);
    clt_tensor *w = clt_module_param(m, "weight");
    clt_sgd_opts so = {0.1, 0.9, 0.0, 0.0, 0};
    clt_optimizer *opt = NULL;
    CHECK(clt_sgd(&w, 1, &so, &opt));
    two_steps(m, opt, dev, got);
    double p[15], buf[15], g[15];
    for (int k = 0; k < 15; k++)
        p[k] = W0[k];
    for (int s = 0; s < 2; s++) {
        dense_grad(s, g);
        for (int k = 0; k < 15; k++) {
            buf[k] = s == 0 ? g[k] : 0.9 * buf[k] + g[k];
            p[k] -= 0.1 * buf[k];
            cr_assert_float_eq(got[s][k], p[k], 1e-5, "SGD step %d [%d]", s, k);
        }
    }
    clt_optimizer_free(opt);
    clt_module_free(m);
    /* Adagrad: rows without entries unchanged */
    m = sparse_embedding(dev, -1, 0);
    w = clt_module_param(m, "weight");
    clt_adagrad_opts ao = {0.5, 0.1, 0.0, 0.0, 1e-10};
    CHECK(clt_adagrad(&w, 1, &ao, &opt));
    two_steps(m, opt, dev, got);
    double sum[15] = {0};
    for (int k = 0; k < 15; k++)
        p[k] = W0[k];
    for (int s = 0; s < 2; s++) {
        dense_grad(s, g);
        double clr = 0.5 / (1 + s * 0.1);
        for (int k = 0; k < 15; k++) {
            sum[k] += g[k] * g[k];
            if (g[k] != 0.0)
                p[k] -= clr * g[k] / (sqrt(sum[k]) + 1e-10);
            cr_assert_float_eq(got[s][k], p[k], 1e-5, "Adagrad step %d [%d]", s, k);
        }
    }
    cr_assert_eq(got[1][2 * DIM], W0[2 * DIM], "row 2 never looked up");
    clt_optimizer_free(opt);
    clt_module_free(m);
}

Test(sparse_grad, sparse_adam_lazy_rows)
{
    clt_device *dev = get_device("auto");
    clt_module *m = sparse_embedding(dev, -1, 0);
    clt_tensor *w = clt_module_param(m, "weight");
    clt_sparse_adam_opts so = {0.1, 0.8, 0.9, 1e-3};
    clt_optimizer *opt = NULL;
    CHECK(clt_sparse_adam(&w, 1, &so, &opt));
    float got[2][15];
    two_steps(m, opt, dev, got);
    /* torch's lazy update: only the rows a step's gradient names change,
     * and only theirs decay (row 1's moments are left alone at step 2) */
    double p[15], ma[15] = {0}, va[15] = {0}, g[15];
    for (int k = 0; k < 15; k++)
        p[k] = W0[k];
    for (int s = 0; s < 2; s++) {
        dense_grad(s, g);
        double t = s + 1, bc1 = 1 - pow(0.8, t), bc2 = 1 - pow(0.9, t);
        double step = 0.1 * sqrt(bc2) / bc1;
        for (int r = 0; r < ROWS; r++) {
            bool touched = false;
            for (int k = 0; k < 3; k++)
                touched = touched || STEP_IDX[s][k] == r;
            for (int d = 0; d < DIM && touched; d++) {
                int k = r * DIM + d;
                ma[k] += (g[k] - ma[k]) * (1 - 0.8);
                va[k] += (g[k] * g[k] - va[k]) * (1 - 0.9);
                p[k] -= step * ma[k] / (sqrt(va[k]) + 1e-3);
            }
        }
        for (int k = 0; k < 15; k++)
            cr_assert_float_eq(got[s][k], p[k], 1e-5, "SparseAdam step %d [%d]: %g, want %g",
                               s, k, got[s][k], p[k]);
    }
    cr_assert_eq(got[1][DIM], got[0][DIM], "row 1 not looked up at step 2: unchanged");
    cr_assert_eq(clt_optimizer_steps(opt), 2);
    /* a zeroed gradient (torch's zero_() layout) counts a step, changes
     * nothing */
    CHECK(clt_optimizer_zero_grad(opt, 0));
    CHECK(clt_optimizer_step(opt));
    cr_assert_eq(clt_optimizer_steps(opt), 3);
    float *hz = read_f32(w);
    cr_assert_eq(memcmp(hz, got[1], sizeof got[1]), 0);
    free(hz);
    /* a dense gradient is refused before anything changes */
    clt_tensor *y = NULL, *s = NULL;
    CHECK(clt_optimizer_zero_grad(opt, 1));
    CHECK(clt_mul(w, w, &y));
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    cr_assert_eq(clt_optimizer_step(opt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "SparseAdam does not support dense gradients"), "%s",
              clt_last_error());
    float *hw = read_f32(w);
    cr_assert_eq(memcmp(hw, got[1], sizeof got[1]), 0);
    free(hw);
    clt_tensor_free(y);
    clt_tensor_free(s);
    clt_optimizer_free(opt);
    /* settings: torch's checks */
    clt_sparse_adam_opts bad = CLT_SPARSE_ADAM_DEFAULTS;
    bad.beta2 = 1.0;
    opt = (clt_optimizer *)1;
    cr_assert_eq(clt_sparse_adam(&w, 1, &bad, &opt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(opt);
    cr_assert(strstr(clt_last_error(), "beta parameter at index 1"));
    clt_module_free(m);
}

Test(sparse_grad, refusals)
{
    clt_device *dev = get_device("auto");
    clt_module *m = sparse_embedding(dev, -1, 0);
    clt_tensor *w = clt_module_param(m, "weight");
    run_backward(m, dev, STEP_IDX[0], 3, STEP_G[0]);
    clt_optimizer *opt = NULL;
    CHECK(clt_adam(&w, 1, NULL, &opt));
    cr_assert_eq(clt_optimizer_step(opt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(),
                     "Adam does not support sparse gradients, please consider SparseAdam"),
              "%s", clt_last_error());
    clt_optimizer_free(opt);
    CHECK(clt_rmsprop(&w, 1, NULL, &opt));
    cr_assert_eq(clt_optimizer_step(opt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "RMSprop does not support sparse gradients"));
    clt_optimizer_free(opt);
    clt_sgd_opts so = {0.1, 0.0, 0.0, 0.01, 0};
    CHECK(clt_sgd(&w, 1, &so, &opt));
    cr_assert_eq(clt_optimizer_step(opt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "add(sparse, dense) is not supported"));
    clt_optimizer_free(opt);
    clt_adagrad_opts ao = {0.1, 0.0, 0.01, 0.0, 1e-10};
    CHECK(clt_adagrad(&w, 1, &ao, &opt));
    cr_assert_eq(clt_optimizer_step(opt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(),
                     "weight_decay option is not compatible with sparse gradients"));
    cr_assert_eq(clt_optimizer_steps(opt), 0);
    clt_optimizer_free(opt);
    /* clip_grad_value_ refuses it, as torch's (clt_clip_grad_norm takes
     * it: clip_grad_norm_takes_sparse_gradients) */
    cr_assert_eq(clt_clip_grad_value(&w, 1, 0.1), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(clt_grad_is_sparse(w));
    float *hw = read_f32(w);
    for (int k = 0; k < 15; k++)
        cr_assert_eq(hw[k], W0[k], "refused steps change nothing");
    free(hw);
    clt_module_free(m);
}

/* Lookups with rows looked up twice and the padding row 2, and their
 * output gradients (not dyadic: the roundings show), for the steps
 * below. */
#define NSTEP 4
#define NLOOK 6
static const int64_t MANY_IDX[NSTEP][NLOOK] = {
    {1, 3, 1, 2, 4, 1}, {0, 0, 2, 3, 3, 3}, {4, 1, 2, 4, 0, 1}, {3, 3, 3, 3, 1, 2}};

static float many_g(int s, int k, int d)
{
    return 0.1f * (float)((s * 7 + k * 3 + d * 5) % 11 - 5) + 0.03f * (float)(d - s);
}

/* NSTEP steps of opt over m (padding_idx 2) with the lookups above, each
 * step's weights into out; zero_grad with set_to_none before each. */
static void many_steps(clt_module *m, clt_optimizer *opt, clt_device *dev, int set_to_none,
                       float out[NSTEP][ROWS * DIM])
{
    clt_tensor *w = clt_module_param(m, "weight");
    for (int s = 0; s < NSTEP; s++) {
        float g[NLOOK * DIM];
        for (int k = 0; k < NLOOK; k++)
            for (int d = 0; d < DIM; d++)
                g[k * DIM + d] = many_g(s, k, d);
        CHECK(clt_optimizer_zero_grad(opt, set_to_none));
        run_backward(m, dev, MANY_IDX[s], NLOOK, g);
        cr_assert(clt_grad_is_sparse(w));
        CHECK(clt_optimizer_step(opt));
        float *hw = read_f32(w);
        memcpy(out[s], hw, sizeof out[s]);
        free(hw);
    }
}

/* The dense gradient of step s of many_steps (padding row 2 left out). */
static void many_dense_grad(int s, double *g)
{
    memset(g, 0, ROWS * DIM * sizeof *g);
    for (int k = 0; k < NLOOK; k++)
        for (int d = 0; d < DIM && MANY_IDX[s][k] != 2; d++)
            g[MANY_IDX[s][k] * DIM + d] += many_g(s, k, d);
}

Test(sparse_grad, sgd_without_momentum_adds_each_entry_as_torch)
{
    /* torch 1.13's param.add_(grad, alpha=-lr) with grad sparse: each entry
     * in turn, w = fma(v, -lr, w) (ATen's AVX2 add kernel), so a row looked
     * up twice is rounded twice: the same bits here */
    clt_device *dev = get_device("auto");
    clt_module *m = sparse_embedding(dev, 2, 0);
    clt_tensor *w = clt_module_param(m, "weight");
    clt_sgd_opts so = {0.1, 0.0, 0.0, 0.0, 0};
    clt_optimizer *opt = NULL;
    CHECK(clt_sgd(&w, 1, &so, &opt));
    float got[NSTEP][ROWS * DIM];
    many_steps(m, opt, dev, 0, got);
    float ref[ROWS * DIM], summed[ROWS * DIM];
    double sum64[ROWS * DIM];
    memcpy(ref, W0, sizeof ref);
    memcpy(summed, W0, sizeof summed);
    memcpy(sum64, (double[ROWS * DIM]){0}, sizeof sum64);
    for (int k = 0; k < ROWS * DIM; k++)
        sum64[k] = W0[k];
    int apart = 0;
    for (int s = 0; s < NSTEP; s++) {
        float dense[ROWS * DIM] = {0};
        double g64[ROWS * DIM];
        many_dense_grad(s, g64);
        for (int k = 0; k < NLOOK; k++) {
            int64_t r = MANY_IDX[s][k];
            for (int d = 0; d < DIM && r != 2; d++) {
                ref[r * DIM + d] = fmaf(many_g(s, k, d), -0.1f, ref[r * DIM + d]);
                dense[r * DIM + d] += many_g(s, k, d);
            }
        }
        for (int k = 0; k < ROWS * DIM; k++) {
            summed[k] = summed[k] - 0.1f * dense[k]; /* the rows summed first */
            sum64[k] -= 0.1 * g64[k];
            cr_assert_eq(got[s][k], ref[k], "step %d [%d]: %.9g, torch's %.9g", s, k,
                         got[s][k], ref[k]);
            cr_assert_float_eq(got[s][k], sum64[k], 1e-5, "step %d [%d] (float64)", s, k);
            apart += got[s][k] != summed[k];
        }
    }
    cr_assert_gt(apart, 0, "the data tell the two orders apart");
    for (int d = 0; d < DIM; d++)
        cr_assert_eq(got[NSTEP - 1][2 * DIM + d], W0[2 * DIM + d], "padding row unchanged");
    cr_assert_eq(clt_optimizer_steps(opt), NSTEP);
    /* a zeroed gradient: a step that changes nothing */
    CHECK(clt_optimizer_zero_grad(opt, 0));
    CHECK(clt_optimizer_step(opt));
    float *hz = read_f32(w);
    cr_assert_eq(memcmp(hz, got[NSTEP - 1], sizeof got[NSTEP - 1]), 0);
    free(hz);
    clt_optimizer_free(opt);
    clt_module_free(m);
}

Test(sparse_grad, sgd_momentum_dampening_nesterov_several_steps)
{
    clt_device *dev = get_device("auto");
    const clt_sgd_opts cases[3] = {
        {0.1, 0.9, 0.3, 0.0, 0}, {0.05, 0.9, 0.0, 0.0, 1}, {0.2, 0.5, 0.0, 0.0, 0}};
    for (int c = 0; c < 3; c++) {
        clt_module *m = sparse_embedding(dev, 2, 0);
        clt_tensor *w = clt_module_param(m, "weight");
        clt_optimizer *opt = NULL;
        CHECK(clt_sgd(&w, 1, &cases[c], &opt));
        float got[NSTEP][ROWS * DIM];
        many_steps(m, opt, dev, c != 1, got);
        const clt_sgd_opts *o = &cases[c];
        double p[ROWS * DIM], buf[ROWS * DIM], g[ROWS * DIM];
        for (int k = 0; k < ROWS * DIM; k++)
            p[k] = W0[k];
        for (int s = 0; s < NSTEP; s++) {
            many_dense_grad(s, g);
            for (int k = 0; k < ROWS * DIM; k++) {
                /* torch: buf = clone(grad), then buf * m + (1 - dampening)
                 * grad; rows without entries decay and keep moving */
                buf[k] = s == 0 ? g[k] : o->momentum * buf[k] + (1 - o->dampening) * g[k];
                double d = o->nesterov ? g[k] + o->momentum * buf[k] : buf[k];
                p[k] -= o->lr * d;
                cr_assert_float_eq(got[s][k], p[k], 1e-5, "case %d step %d [%d]: %g, want %g",
                                   c, s, k, got[s][k], p[k]);
            }
        }
        clt_optimizer_free(opt);
        clt_module_free(m);
    }
}

/* Sparse gradient of w (idx {1, 3, 1, 4}: row 1's two entries of opposite
 * signs, so that the coalesced values' norms differ from the entries') and
 * a dense one of q (3 elements), into hv (the entries) and hq. */
static const int64_t CLIP_IDX[4] = {1, 3, 1, 4};
static const float CLIP_G[12] = {2, -1, 0.5f, 0.25f, 1, -3, -1.5f, 2, 1, 0.5f, 0.5f, -2};
static const float CLIP_Q[3] = {1.5f, -0.5f, 2};

static void clip_grads(clt_module *m, clt_device *dev, clt_tensor *q)
{
    CHECK(clt_zero_grad(clt_module_param(m, "weight"), 1));
    CHECK(clt_zero_grad(q, 1));
    run_backward(m, dev, CLIP_IDX, 4, CLIP_G);
    int64_t three = 3;
    clt_tensor *c = f32(dev, 1, &three, CLIP_Q), *y = NULL, *s = NULL;
    CHECK(clt_mul(q, c, &y));
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    clt_tensor_free(c);
    clt_tensor_free(y);
    clt_tensor_free(s);
}

/* The entries of w's sparse gradient (rows and values) into rows and vals. */
static int64_t read_entries(const clt_tensor *w, int64_t *rows, float *vals)
{
    clt_sparse *sp = NULL;
    clt_tensor *ti = NULL, *tv = NULL;
    CHECK(clt_grad_sparse(w, &sp));
    int64_t nnz = clt_sparse_nnz(sp);
    CHECK(clt_sparse_indices(sp, &ti));
    CHECK(clt_sparse_values(sp, &tv));
    CHECK(clt_tensor_read(ti, rows, (size_t)nnz * sizeof *rows));
    CHECK(clt_tensor_read(tv, vals, (size_t)(nnz * DIM) * sizeof *vals));
    clt_tensor_free(ti);
    clt_tensor_free(tv);
    clt_sparse_free(sp);
    return nnz;
}

Test(sparse_grad, clip_grad_norm_takes_sparse_gradients)
{
    /* torch 1.13's clip_grad_norm_: torch.norm(g, p) of a sparse g is its
     * coalesced values' norm, which counts in the total; its
     * g.detach().mul_(coef) scales a copy of a sparse g's values (detach
     * does not share them), so the sparse gradient stays as it was and
     * only the dense ones are scaled */
    clt_device *dev = get_device("auto");
    clt_module *m = sparse_embedding(dev, -1, 0);
    clt_tensor *w = clt_module_param(m, "weight"), *q = NULL;
    int64_t three = 3;
    const float q0[3] = {0.5f, 1, -1};
    q = f32(dev, 1, &three, q0);
    CHECK(clt_set_requires_grad(q, 1));
    clt_tensor *params[2] = {w, q};
    const double types[3] = {2.0, 1.0, 3.0};
    for (int t = 0; t < 3; t++) {
        double p = types[t];
        clip_grads(m, dev, q);
        double rowsum[ROWS * DIM] = {0}, acc = 0;
        for (int k = 0; k < 4; k++)
            for (int d = 0; d < DIM; d++)
                rowsum[CLIP_IDX[k] * DIM + d] += CLIP_G[k * DIM + d];
        for (int k = 0; k < ROWS * DIM; k++)
            acc += pow(fabs(rowsum[k]), p);
        double nw = pow(acc, 1 / p), nq = 0;
        for (int k = 0; k < 3; k++)
            nq += pow(fabs(CLIP_Q[k]), p);
        nq = pow(nq, 1 / p);
        double total = pow(pow(nw, p) + pow(nq, p), 1 / p);
        double coef = fmin(1.0, 1.0 / (total + 1e-6));
        clt_tensor *norm = NULL;
        CHECK(clt_clip_grad_norm(params, 2, 1.0, p, &norm));
        float hn;
        CHECK(clt_tensor_read(norm, &hn, sizeof hn));
        cr_assert_float_eq(hn, total, 1e-5 * total, "norm_type %g: %g, want %g", p, hn, total);
        clt_tensor_free(norm);
        int64_t rows[8];
        float vals[8 * DIM];
        cr_assert(clt_grad_is_sparse(w));
        cr_assert_eq(read_entries(w, rows, vals), 4, "the entries stay as they were");
        cr_assert_lt(coef, 0.5, "the data clip");
        for (int k = 0; k < 4; k++) {
            cr_assert_eq(rows[k], CLIP_IDX[k]);
            for (int d = 0; d < DIM; d++)
                cr_assert_eq(vals[k * DIM + d], CLIP_G[k * DIM + d],
                             "norm_type %g entry %d [%d]: torch leaves it", p, k, d);
        }
        clt_tensor *gq = NULL;
        CHECK(clt_grad(q, &gq));
        float *hq = read_f32(gq);
        for (int k = 0; k < 3; k++)
            cr_assert_float_eq(hq[k], CLIP_Q[k] * coef, 1e-6);
        free(hq);
        clt_tensor_free(gq);
    }
    /* the inf-norm and clip_grad_value_ refuse it, as torch's, changing
     * nothing */
    clip_grads(m, dev, q);
    clt_tensor *norm = (clt_tensor *)1;
    cr_assert_eq(clt_clip_grad_norm(params, 2, 1.0, INFINITY, &norm), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(norm);
    cr_assert(strstr(clt_last_error(), "aten::max"), "%s", clt_last_error());
    cr_assert_eq(clt_clip_grad_value(params, 2, 0.1), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "aten::clamp_"), "%s", clt_last_error());
    int64_t rows[8];
    float vals[8 * DIM];
    cr_assert_eq(read_entries(w, rows, vals), 4);
    cr_assert_eq(memcmp(vals, CLIP_G, sizeof CLIP_G), 0);
    /* a zeroed sparse gradient has norm 0 */
    CHECK(clt_zero_grad(w, 0));
    CHECK(clt_zero_grad(q, 0));
    CHECK(clt_clip_grad_norm(params, 2, 1.0, 2.0, &norm));
    float hn = -1;
    CHECK(clt_tensor_read(norm, &hn, sizeof hn));
    cr_assert_eq(hn, 0.0f);
    clt_tensor_free(norm);
    expect_zeroed(w);
    clt_tensor_free(q);
    clt_module_free(m);
}

Test(sparse_grad, grad_scaler_unscales_sparse_values)
{
    /* torch's unscale_ divides grad._values() of a sparse gradient (after
     * coalesce for float16 only) and finds an inf among them */
    clt_device *dev = get_device("auto");
    clt_module *m = sparse_embedding(dev, -1, 0);
    clt_tensor *w = clt_module_param(m, "weight");
    clt_sgd_opts so = {0.5, 0.0, 0.0, 0.0, 0};
    clt_optimizer *opt = NULL;
    CHECK(clt_sgd(&w, 1, &so, &opt));
    const clt_grad_scaler_opts o = {1024.0, 2.0, 0.5, 100, 1};
    clt_grad_scaler *s = NULL;
    CHECK(clt_grad_scaler_new(&o, &s));
    float g[12];
    for (int k = 0; k < 12; k++)
        g[k] = CLIP_G[k] * 1024.0f;
    run_backward(m, dev, CLIP_IDX, 4, g);
    CHECK(clt_grad_scaler_unscale_(s, opt));
    int64_t rows[8];
    float vals[8 * DIM];
    cr_assert_eq(read_entries(w, rows, vals), 4);
    for (int k = 0; k < 12; k++)
        cr_assert_eq(vals[k], CLIP_G[k], "entry value %d unscaled", k);
    int stepped = 0;
    CHECK(clt_grad_scaler_step(s, opt, &stepped));
    cr_assert_eq(stepped, 1);
    CHECK(clt_grad_scaler_update(s, NULL));
    float *hw = read_f32(w), want[ROWS * DIM];
    memcpy(want, W0, sizeof want);
    for (int k = 0; k < 4; k++)
        for (int d = 0; d < DIM; d++)
            want[CLIP_IDX[k] * DIM + d] =
                fmaf(CLIP_G[k * DIM + d], -0.5f, want[CLIP_IDX[k] * DIM + d]);
    cr_assert_eq(memcmp(hw, want, sizeof want), 0);
    free(hw);
    /* an inf among the entries: the step is skipped, the scale backs off */
    g[4] = INFINITY;
    CHECK(clt_optimizer_zero_grad(opt, 0));
    run_backward(m, dev, CLIP_IDX, 4, g);
    CHECK(clt_grad_scaler_step(s, opt, &stepped));
    cr_assert_eq(stepped, 0);
    CHECK(clt_grad_scaler_update(s, NULL));
    cr_assert_eq(clt_grad_scaler_get_scale(s), 512.0);
    hw = read_f32(w);
    cr_assert_eq(memcmp(hw, want, sizeof want), 0);
    free(hw);
    clt_grad_scaler_free(s);
    clt_optimizer_free(opt);
    clt_module_free(m);
}
