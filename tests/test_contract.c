/* test_contract.c: the error contract of common.h kept by every public
 * function that hands something out through a pointer: on failure it
 * returns a status other than CLT_OK, leaves a message, sets each of its
 * out-pointers to NULL (and a count out to 0), and touches no other.
 *
 * One row per function (tests/check-out-contract.sh checks that every such
 * function of the headers has one).  Each row's call fails for a reason of
 * its own (a bad dtype, a device mismatch, a shape, a value) and runs twice:
 * once with real operands, once with every handle of the fixture NULL, so
 * that both the first argument checks and the later ones are crossed with
 * the out-pointers already holding a sentinel.  The few functions that can
 * fail only when memory runs out are listed but not called (NEVER_FAILS),
 * and clt_pick, whose report is handed out on failure too, is checked for
 * that (REPORT). */
#include "helpers.h"

#include <cltensor/dlpack.h>
#include <cltensor/opencl.h>
#include <cltensor/quant.h>

/* Everything a row's call may use.  In the NULL pass the handles are NULL;
 * the plain arrays stay. */
typedef struct fx {
    clt_device *dev, *dev2;
    clt_tensor *f;   /* float32 [2, 3] on dev */
    clt_tensor *f2;  /* float32 [2, 3] on dev2 */
    clt_tensor *i32; /* int32 [2, 3] on dev */
    clt_tensor *e;   /* float32 [0] on dev */
    clt_tensor *bl;  /* bool [2, 3] on dev */
    clt_module *lin; /* Linear(5, 4) on dev */
    clt_optimizer *opt;
    clt_generator *gen;
    clt_tensor *pair[2]; /* f and f2 */
    clt_module *mods[1];
    const clt_tensor *cpair[2];
    clt_distribution *dist; /* Normal(f, f) on dev */
    clt_sparse *sp;         /* f as a sparse [2, 3] on dev */
    clt_transform *tf;      /* StickBreakingTransform */
} fx;

/* The out slots a row's call may write.  A row names the ones it uses. */
typedef struct outs {
    clt_tensor *t, *t2, *t3, **list;
    clt_module *m;
    clt_optimizer *opt;
    clt_lr_scheduler *sched;
    clt_dataloader *dl;
    clt_device *d;
    clt_event *ev;
    clt_named_tensor *named;
    DLManagedTensor *dlp;
    char *s;
    cl_mem mem;
    clt_array_spec *arr;
    clt_process_group *pg;
    size_t n;
    /* hooks */
    clt_hook *hook;
    clt_ddp *ddp;
    int64_t *ids;
    clt_distribution *dist;
    clt_grad_scaler *gs;
    clt_averaged_model *am;
    clt_tensor **list2;
    clt_tensor *t4;
    clt_sparse *sp;
    clt_transform *tf;
    clt_checkpoint_dict *ck;
    const char *cs;
} outs;

enum {
    T = 1 << 0, T2 = 1 << 1, LIST = 1 << 2, M = 1 << 3, OPT = 1 << 4, SCHED = 1 << 5,
    DL = 1 << 6, D = 1 << 7, EV = 1 << 8, NAMED = 1 << 9, DLP = 1 << 10, S = 1 << 11,
    MEM = 1 << 12, N = 1 << 13,
    NEVER_FAILS = 1 << 14, /* fails only when memory runs out: not called */
    REPORT = 1 << 15, /* the documented exception: the string is handed out on failure too */
    ARR = 1 << 16, PG = 1 << 17, T3 = 1 << 18,
    HOOK = 1 << 19, DDP = 1 << 20, IDS = 1 << 21, DIST = 1 << 22,
    GS = 1 << 23, AVG = 1 << 24, LIST2 = 1 << 25, T4 = 1 << 26,
    SP = 1 << 27, TF = 1 << 28, CK = 1 << 29, CS = 1 << 30
};

static const int64_t sh23[2] = {2, 3}, sh5[1] = {5}, sh53[2] = {5, 3}, k22[2] = {2, 2};
static const int64_t k303[3] = {3, 0, 3}; /* a 3-D kernel with an empty side */
static const int64_t k222[3] = {2, 2, 2}, k022[3] = {0, 2, 2}, k2m2[3] = {2, -1, 2};
static const int perm00[2] = {0, 0};
static const int64_t neg1[1] = {-1}; /* shape ops */
static const int dim7[1] = {7};
static const float host6[6] = {1, 2, 3, 4, 5, 6};
static char small_buf[1];
static const double big = 1e30;
static const clt_sgd_opts bad_sgd = {-1.0, 0, 0, 0, 0};
static const clt_adam_opts bad_adam = {-1.0, 0.9, 0.999, 1e-8, 0, 0};
static const clt_multihead_attention_opts bad_mha = {0.0, 1, 1, 1, -1, 0, 0}; /* kdim < 0 */
static const clt_rmsprop_opts bad_rmsprop = {0.01, -0.5, 1e-8, 0, 0, 0};
static const clt_adagrad_opts bad_adagrad = {0.01, -1.0, 0, 0, 1e-10};
static const clt_sparse_adam_opts bad_sparse_adam = {1e-3, 1.0, 0.999, 1e-8};
static const clt_adamax_opts bad_adamax = {2e-3, 1.0, 0.999, 1e-8, 0};
static const clt_nadam_opts bad_nadam = {2e-3, 0.9, 0.999, 1e-8, 0, -4e-3};
static const clt_radam_opts bad_radam = {1e-3, 0.9, 0.999, -1e-8, 0};
static const clt_adadelta_opts bad_adadelta = {1.0, 1.5, 1e-6, 0};
static const clt_rprop_opts bad_rprop = {0.01, 1.5, 1.2, 1e-6, 50};
static const clt_asgd_opts bad_asgd = {0.01, 1e-4, 0.75, 1e6, -1.0};
static const clt_lbfgs_opts bad_lbfgs = {1, 20, -1, 1e-7, 1e-9, 0, NULL};
static const int64_t bad_milestones[] = {-1};
static const clt_cross_entropy_opts ce_opts = CLT_CROSS_ENTROPY_DEFAULTS;
static const double split_3_3[2] = {3, 3}; /* not 10 */
static int64_t split_got[2];
static int sign_got;
static const clt_loader_opts bad_loader = {0, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
static const clt_dist_opts bad_dist = {0, -1, "127.0.0.1", 1, 0};
static const clt_rnn_opts bad_rnn = CLT_RNN_DEFAULTS(3, 0);
static const clt_array_spec spec_x = {host6, CLT_FLOAT32, 2, sh23};
static const clt_device_info infos[1];
static const clt_grad_scaler_opts bad_scaler = {65536.0, 1.0, 0.5, 2000, 1};
static const double swa_rate[1] = {0.05};
static const clt_observer_opts bad_observer =
    CLT_OBSERVER_DEFAULTS(CLT_PER_CHANNEL_MIN_MAX_OBSERVER); /* num_channels 0 */

static clt_status no_fill(void *user, const int64_t *indices, int64_t count, void *x, void *y)
{
    return CLT_OK;
}

/* X(function, slots, call): the call fails; o's slots hold the sentinel. */
#define ROWS(X)                                                                              \
    /* tensor.h */                                                                           \
    X(clt_tensor_from_host, T, clt_tensor_from_host(f->dev, CLT_DTYPE_COUNT, 2, sh23, host6, &o->t)) \
    X(clt_empty, T, clt_empty(f->dev, CLT_DTYPE_COUNT, 2, sh23, &o->t))                      \
    X(clt_zeros, T, clt_zeros(f->dev, CLT_FLOAT32, -1, sh23, &o->t))                         \
    X(clt_ones, T, clt_ones(f->dev, CLT_FLOAT32, CLT_MAX_DIMS + 1, sh23, &o->t))             \
    X(clt_full, T, clt_full(f->dev, CLT_INT32, 2, sh23, big, &o->t))                         \
    X(clt_empty_like, T, clt_empty_like(NULL, &o->t))                                        \
    X(clt_zeros_like, T, clt_zeros_like(NULL, &o->t))                                        \
    X(clt_ones_like, T, clt_ones_like(NULL, &o->t))                                          \
    X(clt_full_like, T, clt_full_like(f->i32, big, &o->t))                                   \
    X(clt_arange, T, clt_arange(f->dev, CLT_FLOAT32, 0, 10, 0, &o->t))                       \
    X(clt_to, T, clt_to(f->f, NULL, &o->t))                                                  \
    X(clt_to_dtype, T, clt_to_dtype(f->f, CLT_DTYPE_COUNT, &o->t))                           \
    X(clt_clone, T, clt_clone(NULL, &o->t))                                                  \
    X(clt_tensor_read_async, EV, clt_tensor_read_async(f->f, small_buf, 1, &o->ev))          \
    X(clt_tensor_write_async, EV, clt_tensor_write_async(f->f, small_buf, 1, &o->ev))        \
    X(clt_tensor_format, S, clt_tensor_format(NULL, &o->s))                                  \
    X(clt_tensor_repr, S, clt_tensor_repr(NULL, &o->s))                                      \
    /* fft.h */                                                                              \
    X(clt_view_as_real, T, clt_view_as_real(f->f, &o->t))                                    \
    X(clt_view_as_complex, T, clt_view_as_complex(f->f, &o->t))                              \
    X(clt_real, T, clt_real(NULL, &o->t))                                                    \
    X(clt_imag, T, clt_imag(f->f, &o->t))                                                    \
    X(clt_conj, T, clt_conj(NULL, &o->t))                                                    \
    X(clt_angle, T, clt_angle(NULL, &o->t))                                                  \
    X(clt_polar, T, clt_polar(f->f, f->i32, &o->t))                                          \
    X(clt_complex, T, clt_complex(f->f, f->f2, &o->t))                                       \
    X(clt_fft_fft, T, clt_fft_fft(f->f, 0, -1, NULL, &o->t))                                 \
    X(clt_fft_ifft, T, clt_fft_ifft(f->f, -1, 5, NULL, &o->t))                               \
    X(clt_fft_rfft, T, clt_fft_rfft(f->f, -1, -1, "none", &o->t))                            \
    X(clt_fft_irfft, T, clt_fft_irfft(f->f, -5, -1, NULL, &o->t))                            \
    X(clt_fft_hfft, T, clt_fft_hfft(f->f, -1, 2, NULL, &o->t))                               \
    X(clt_fft_ihfft, T, clt_fft_ihfft(f->f, 0, 0, NULL, &o->t))                              \
    X(clt_fft_fftn, T, clt_fft_fftn(f->f, 1, NULL, dim7, NULL, &o->t))                       \
    X(clt_fft_ifftn, T, clt_fft_ifftn(f->f, 2, NULL, perm00, NULL, &o->t))                   \
    X(clt_fft_rfftn, T, clt_fft_rfftn(f->f, 3, NULL, NULL, "x", &o->t))                      \
    X(clt_fft_irfftn, T, clt_fft_irfftn(f->f, 1, NULL, dim7, NULL, &o->t))                   \
    X(clt_fft_fft2, T, clt_fft_fft2(f->f, NULL, perm00, NULL, &o->t))                        \
    X(clt_fft_ifft2, T, clt_fft_ifft2(f->f, NULL, perm00, NULL, &o->t))                      \
    X(clt_fft_rfft2, T, clt_fft_rfft2(f->f, NULL, perm00, NULL, &o->t))                      \
    X(clt_fft_irfft2, T, clt_fft_irfft2(f->f, NULL, perm00, NULL, &o->t))                    \
    X(clt_fft_hfftn, T, clt_fft_hfftn(f->f, 1, NULL, dim7, NULL, &o->t))                     \
    X(clt_fft_ihfftn, T, clt_fft_ihfftn(f->f, 1, NULL, dim7, NULL, &o->t))                   \
    X(clt_fft_hfft2, T, clt_fft_hfft2(f->f, NULL, perm00, NULL, &o->t))                      \
    X(clt_fft_ihfft2, T, clt_fft_ihfft2(f->f, NULL, perm00, NULL, &o->t))                    \
    X(clt_fft_fftfreq, T, clt_fft_fftfreq(f->dev, -1, 1.0, CLT_FLOAT32, &o->t))              \
    X(clt_fft_rfftfreq, T, clt_fft_rfftfreq(f->dev, 4, 1.0, CLT_INT32, &o->t))               \
    X(clt_fft_fftshift, T, clt_fft_fftshift(f->f, 1, dim7, &o->t))                           \
    X(clt_fft_ifftshift, T, clt_fft_ifftshift(f->f, 1, dim7, &o->t))                         \
    X(clt_stft, T, clt_stft(f->f, 8, NULL, &o->t))                                            \
    X(clt_istft, T, clt_istft(f->f, 8, NULL, &o->t))                                          \
    /* view.h */                                                                             \
    X(clt_view, T, clt_view(f->f, 1, sh5, &o->t))                                            \
    X(clt_reshape, T, clt_reshape(f->f, 1, sh5, &o->t))                                      \
    X(clt_flatten, T, clt_flatten(f->f, 0, 5, &o->t))                                        \
    X(clt_transpose, T, clt_transpose(f->f, 0, 5, &o->t))                                    \
    X(clt_permute, T, clt_permute(f->f, 2, perm00, &o->t))                                   \
    X(clt_narrow, T, clt_narrow(f->f, 0, 0, 9, &o->t))                                       \
    X(clt_select, T, clt_select(f->f, 0, 2, &o->t))                                          \
    X(clt_slice, T, clt_slice(f->f, 0, 0, 2, 0, &o->t))                                      \
    X(clt_squeeze, T, clt_squeeze(f->f, 7, &o->t))                                           \
    X(clt_squeeze_all, T, clt_squeeze_all(NULL, &o->t))                                      \
    X(clt_unsqueeze, T, clt_unsqueeze(f->f, 9, &o->t))                                       \
    X(clt_expand, T, clt_expand(f->f, 2, sh53, &o->t))                                       \
    X(clt_contiguous, T, clt_contiguous(NULL, &o->t))                                        \
    X(clt_cat, T, clt_cat(f->cpair, 2, 0, &o->t))                                            \
    X(clt_stack, T, clt_stack(f->cpair, 2, 0, &o->t))                                        \
    /* ops.h */                                                                              \
    X(clt_add, T, clt_add(f->f, f->f2, &o->t))                                               \
    X(clt_sub, T, clt_sub(f->bl, f->bl, &o->t))                                              \
    X(clt_mul, T, clt_mul(f->f, f->f2, &o->t))                                               \
    X(clt_div, T, clt_div(f->f, f->f2, &o->t))                                               \
    X(clt_pow, T, clt_pow(f->bl, f->bl, &o->t))                                              \
    X(clt_maximum, T, clt_maximum(f->f, f->f2, &o->t))                                       \
    X(clt_minimum, T, clt_minimum(f->f, f->f2, &o->t))                                       \
    X(clt_remainder, T, clt_remainder(f->bl, f->bl, &o->t))                                  \
    X(clt_fmod, T, clt_fmod(f->f, NULL, &o->t))                                              \
    X(clt_floor_divide, T, clt_floor_divide(f->bl, f->bl, &o->t))                            \
    X(clt_div_rounding, T, clt_div_rounding(f->bl, f->bl, CLT_ROUNDING_TRUNC, &o->t))        \
    X(clt_eq, T, clt_eq(f->f, f->f2, &o->t))                                                 \
    X(clt_ne, T, clt_ne(f->f, f->f2, &o->t))                                                 \
    X(clt_lt, T, clt_lt(f->f, f->f2, &o->t))                                                 \
    X(clt_le, T, clt_le(f->f, f->f2, &o->t))                                                 \
    X(clt_gt, T, clt_gt(f->f, f->f2, &o->t))                                                 \
    X(clt_ge, T, clt_ge(f->f, f->f2, &o->t))                                                 \
    X(clt_eq_scalar, T, clt_eq_scalar(f->i32, big, &o->t))                                   \
    X(clt_ne_scalar, T, clt_ne_scalar(f->i32, big, &o->t))                                   \
    X(clt_lt_scalar, T, clt_lt_scalar(f->i32, big, &o->t))                                   \
    X(clt_le_scalar, T, clt_le_scalar(f->i32, big, &o->t))                                   \
    X(clt_gt_scalar, T, clt_gt_scalar(f->i32, big, &o->t))                                   \
    X(clt_ge_scalar, T, clt_ge_scalar(f->i32, big, &o->t))                                   \
    X(clt_where, T, clt_where(f->f, f->f, f->f, &o->t))                                      \
    X(clt_clamp, T, clt_clamp(f->f, NULL, NULL, &o->t))                                      \
    X(clt_add_scalar, T, clt_add_scalar(f->i32, big, &o->t))                                 \
    X(clt_sub_scalar, T, clt_sub_scalar(f->bl, 1, &o->t))                                    \
    X(clt_rsub_scalar, T, clt_rsub_scalar(f->bl, 1, &o->t))                                  \
    X(clt_mul_scalar, T, clt_mul_scalar(f->i32, big, &o->t))                                 \
    X(clt_div_scalar, T, clt_div_scalar(NULL, 2, &o->t))                                     \
    X(clt_rdiv_scalar, T, clt_rdiv_scalar(NULL, 2, &o->t))                                   \
    X(clt_pow_scalar, T, clt_pow_scalar(f->i32, -1, &o->t))                                  \
    X(clt_pow_scalar_complex, T, clt_pow_scalar_complex(NULL, 0.5, 1, &o->t))                 \
    X(clt_rpow_scalar, T, clt_rpow_scalar(f->i32, big, &o->t))                               \
    X(clt_remainder_scalar, T, clt_remainder_scalar(f->i32, 0, &o->t))                       \
    X(clt_fmod_scalar, T, clt_fmod_scalar(NULL, 2, &o->t))                                   \
    X(clt_floor_divide_scalar, T, clt_floor_divide_scalar(f->i32, 4294967296.0, &o->t))      \
    X(clt_div_scalar_rounding, T,                                                            \
      clt_div_scalar_rounding(f->i32, 0, CLT_ROUNDING_TRUNC, &o->t))                         \
    X(clt_neg, T, clt_neg(f->bl, &o->t))                                                     \
    X(clt_abs, T, clt_abs(NULL, &o->t))                                                      \
    X(clt_relu, T, clt_relu(NULL, &o->t))                                                    \
    X(clt_exp, T, clt_exp(NULL, &o->t))                                                      \
    X(clt_log, T, clt_log(NULL, &o->t))                                                      \
    X(clt_sqrt, T, clt_sqrt(NULL, &o->t))                                                    \
    X(clt_rsqrt, T, clt_rsqrt(NULL, &o->t))                                                  \
    X(clt_sin, T, clt_sin(NULL, &o->t))                                                      \
    X(clt_cos, T, clt_cos(NULL, &o->t))                                                      \
    X(clt_tanh, T, clt_tanh(NULL, &o->t))                                                    \
    X(clt_sigmoid, T, clt_sigmoid(NULL, &o->t))                                              \
    X(clt_gelu, T, clt_gelu(NULL, &o->t))                                                    \
    X(clt_log1p, T, clt_log1p(NULL, &o->t))                                                  \
    X(clt_expm1, T, clt_expm1(NULL, &o->t))                                                  \
    X(clt_tan, T, clt_tan(NULL, &o->t))                                                      \
    X(clt_sign, T, clt_sign(NULL, &o->t))                                                    \
    X(clt_floor, T, clt_floor(NULL, &o->t))                                                  \
    X(clt_ceil, T, clt_ceil(f->bl, &o->t))                                                   \
    X(clt_round, T, clt_round(NULL, &o->t))                                                  \
    X(clt_round_decimals, T, clt_round_decimals(f->i32, 2, &o->t))                           \
    X(clt_trunc, T, clt_trunc(NULL, &o->t))                                                  \
    X(clt_frac, T, clt_frac(f->i32, &o->t))                                                  \
    X(clt_reciprocal, T, clt_reciprocal(NULL, &o->t))                                        \
    X(clt_isnan, T, clt_isnan(NULL, &o->t))                                                  \
    X(clt_isin, T, clt_isin(f->f, f->f2, 0, 0, &o->t))                                       \
    X(clt_isinf, T, clt_isinf(NULL, &o->t))                                                  \
    X(clt_isfinite, T, clt_isfinite(NULL, &o->t))                                            \
    X(clt_logical_and, T, clt_logical_and(NULL, f->f, &o->t))                                \
    X(clt_logical_or, T, clt_logical_or(f->f, NULL, &o->t))                                  \
    X(clt_logical_xor, T, clt_logical_xor(NULL, NULL, &o->t))                                \
    X(clt_silu, T, clt_silu(f->bl, &o->t))                                                   \
    X(clt_softplus, T, clt_softplus(f->i32, 1, 20, &o->t))                                   \
    X(clt_leaky_relu, T, clt_leaky_relu(f->i32, 0.01, &o->t))                                \
    X(clt_elu, T, clt_elu(f->bl, 1.0, &o->t))                                                \
    X(clt_logical_not, T, clt_logical_not(NULL, &o->t))                                      \
    /* ops.h: math functions */                                                              \
    X(clt_asin, T, clt_asin(NULL, &o->t))                                                    \
    X(clt_acos, T, clt_acos(NULL, &o->t))                                                    \
    X(clt_atan, T, clt_atan(NULL, &o->t))                                                    \
    X(clt_sinh, T, clt_sinh(NULL, &o->t))                                                    \
    X(clt_cosh, T, clt_cosh(NULL, &o->t))                                                    \
    X(clt_asinh, T, clt_asinh(NULL, &o->t))                                                  \
    X(clt_acosh, T, clt_acosh(NULL, &o->t))                                                  \
    X(clt_atanh, T, clt_atanh(NULL, &o->t))                                                  \
    X(clt_erf, T, clt_erf(NULL, &o->t))                                                      \
    X(clt_erfc, T, clt_erfc(NULL, &o->t))                                                    \
    X(clt_erfinv, T, clt_erfinv(NULL, &o->t))                                                \
    X(clt_log2, T, clt_log2(NULL, &o->t))                                                    \
    X(clt_log10, T, clt_log10(NULL, &o->t))                                                  \
    X(clt_exp2, T, clt_exp2(NULL, &o->t))                                                    \
    X(clt_square, T, clt_square(NULL, &o->t))                                                \
    X(clt_logit, T, clt_logit(NULL, NULL, &o->t))                                            \
    X(clt_nan_to_num, T, clt_nan_to_num(NULL, 0, NULL, NULL, &o->t))                         \
    X(clt_atan2, T, clt_atan2(f->f, f->e, &o->t))                                            \
    X(clt_hypot, T, clt_hypot(f->i32, f->i32, &o->t))                                        \
    X(clt_copysign, T, clt_copysign(NULL, f->f, &o->t))                                      \
    X(clt_xlogy, T, clt_xlogy(f->f, f->f2, &o->t))                                           \
    X(clt_lerp, T, clt_lerp(f->f, f->f, f->i32, &o->t))                                      \
    X(clt_lerp_scalar, T, clt_lerp_scalar(f->f, f->f, 1e300, &o->t))                         \
    X(clt_addcmul, T, clt_addcmul(f->bl, f->bl, f->bl, 1, &o->t))                            \
    X(clt_addcdiv, T, clt_addcdiv(f->f, f->i32, f->i32, 1, &o->t))                           \
    /* reduce.h */                                                                           \
    X(clt_sum, T, clt_sum(NULL, &o->t))                                                      \
    X(clt_sum_dim, T, clt_sum_dim(f->f, 5, 0, &o->t))                                        \
    X(clt_sum_to_size, T, clt_sum_to_size(f->f, 1, (const int64_t[]){4}, &o->t))             \
    X(clt_mean, T, clt_mean(f->i32, &o->t))                                                  \
    X(clt_mean_dim, T, clt_mean_dim(f->f, -5, 0, &o->t))                                     \
    X(clt_prod, T, clt_prod(NULL, &o->t))                                                    \
    X(clt_prod_dim, T, clt_prod_dim(f->f, 5, 1, &o->t))                                      \
    X(clt_max, T, clt_max(f->e, &o->t))                                                      \
    X(clt_max_dim, T | T2, clt_max_dim(f->f, 5, 0, &o->t, &o->t2))                           \
    X(clt_min, T, clt_min(f->e, &o->t))                                                      \
    X(clt_min_dim, T | T2, clt_min_dim(f->e, 0, 0, &o->t, &o->t2))                           \
    X(clt_argmax, T, clt_argmax(f->e, &o->t))                                                \
    X(clt_argmax_dim, T, clt_argmax_dim(f->f, 5, 0, &o->t))                                  \
    X(clt_argmin, T, clt_argmin(f->e, &o->t))                                                \
    X(clt_argmin_dim, T, clt_argmin_dim(f->f, 5, 0, &o->t))                                  \
    X(clt_var, T, clt_var(f->i32, 1, &o->t))                                                 \
    X(clt_var_dim, T, clt_var_dim(f->f, 5, 1, 0, &o->t))                                     \
    X(clt_std, T, clt_std(f->i32, 1, &o->t))                                                 \
    X(clt_std_dim, T, clt_std_dim(f->f, 5, 1, 0, &o->t))                                     \
    X(clt_logsumexp, T, clt_logsumexp(f->f, 5, 0, &o->t))                                    \
    X(clt_logsumexp_all, T, clt_logsumexp_all(NULL, &o->t))                                  \
    X(clt_cumsum, T, clt_cumsum(f->bl, -3, &o->t))                                           \
    X(clt_sort, T | T2, clt_sort(f->f, 2, 0, &o->t, &o->t2))                                 \
    X(clt_argsort, T, clt_argsort(NULL, 0, 1, &o->t))                                        \
    X(clt_msort, T, clt_msort(NULL, &o->t))                                                  \
    X(clt_topk, T | T2, clt_topk(f->f, 4, 1, 1, 1, &o->t, &o->t2))                           \
    X(clt_any, T, clt_any(NULL, &o->t))                                                      \
    X(clt_all, T, clt_all(NULL, &o->t))                                                      \
    X(clt_any_dim, T, clt_any_dim(f->i32, 2, 1, &o->t))                                      \
    X(clt_all_dim, T, clt_all_dim(f->e, -2, 0, &o->t))                                       \
    X(clt_vector_norm, T, clt_vector_norm(f->i32, 2, &o->t))                                 \
    X(clt_vector_norm_dim, T, clt_vector_norm_dim(f->e, -INFINITY, 0, 1, &o->t))             \
    X(clt_normalize, T, clt_normalize(f->f, 2, 5, 1e-12, &o->t))                             \
    X(clt_cosine_similarity, T, clt_cosine_similarity(f->f, f->e, 1, 1e-8, &o->t))           \
    X(clt_dist, T, clt_dist(f->i32, f->i32, 2, &o->t))                                       \
    /* linalg.h */                                                                           \
    X(clt_matmul, T, clt_matmul(f->f, f->f, &o->t))                                          \
    X(clt_softmax, T, clt_softmax(f->f, 5, &o->t))                                           \
    X(clt_log_softmax, T, clt_log_softmax(f->i32, 1, &o->t))                                 \
    /* index.h */                                                                            \
    X(clt_index_select, T, clt_index_select(f->f, 0, f->f, &o->t))                           \
    X(clt_gather, T, clt_gather(f->f, 0, f->f, &o->t))                                       \
    X(clt_scatter, T, clt_scatter(f->f, 0, f->f, f->f, &o->t))                               \
    X(clt_scatter_add, T, clt_scatter_add(f->f, 0, f->f, f->f, &o->t))                       \
    X(clt_index_add, T, clt_index_add(f->f, 0, f->f, f->f, 1, &o->t))                        \
    X(clt_masked_fill, T, clt_masked_fill(f->f, f->f, 0, &o->t))                             \
    X(clt_one_hot, T, clt_one_hot(f->f, 3, &o->t))                                           \
    X(clt_embedding, T, clt_embedding(f->f, f->f, &o->t))                                    \
    X(clt_embedding_ex, T, clt_embedding_ex(f->f, f->f, NULL, &o->t))                        \
    X(clt_embedding_with_opts, T, clt_embedding_with_opts(f->f, f->f, NULL, &o->t))          \
    /* loss.h */                                                                             \
    X(clt_cross_entropy, T, clt_cross_entropy(f->f, f->f2, &ce_opts, &o->t))                 \
    X(clt_nll_loss, T, clt_nll_loss(f->f, f->f2, &ce_opts, &o->t))                           \
    X(clt_mse_loss, T, clt_mse_loss(f->f, f->f2, CLT_REDUCTION_MEAN, &o->t))                 \
    X(clt_l1_loss, T, clt_l1_loss(f->f, f->f2, CLT_REDUCTION_SUM, &o->t))                    \
    X(clt_binary_cross_entropy_with_logits, T,                                               \
      clt_binary_cross_entropy_with_logits(f->f, f->f2, NULL, CLT_REDUCTION_MEAN, &o->t))    \
    X(clt_smooth_l1_loss, T, clt_smooth_l1_loss(f->f, f->f2, CLT_REDUCTION_MEAN, -1, &o->t)) \
    X(clt_huber_loss, T, clt_huber_loss(f->f, f->f2, CLT_REDUCTION_SUM, 0, &o->t))           \
    X(clt_binary_cross_entropy, T,                                                           \
      clt_binary_cross_entropy(f->f, f->f2, NULL, CLT_REDUCTION_BATCHMEAN, &o->t))           \
    X(clt_kl_div, T, clt_kl_div(f->i32, f->f, CLT_REDUCTION_MEAN, 0, &o->t))                 \
    /* conv.h */                                                                             \
    X(clt_conv2d, T, clt_conv2d(f->f, f->f, NULL, NULL, &o->t))                              \
    X(clt_max_pool2d, T, clt_max_pool2d(f->f, k22, NULL, NULL, NULL, 0, &o->t))              \
    X(clt_avg_pool2d, T, clt_avg_pool2d(f->f, k22, NULL, NULL, 0, 1, &o->t))                 \
    X(clt_adaptive_avg_pool2d, T, clt_adaptive_avg_pool2d(f->f, k22, &o->t))                 \
    X(clt_conv1d, T, clt_conv1d(f->f, f->f, NULL, NULL, &o->t))                              \
    X(clt_conv_transpose2d, T, clt_conv_transpose2d(f->f, f->f, NULL, NULL, &o->t))          \
    X(clt_conv3d, T, clt_conv3d(f->f, f->f, NULL, NULL, &o->t))                              \
    X(clt_conv_transpose1d, T, clt_conv_transpose1d(f->f, f->f, NULL, NULL, &o->t))          \
    X(clt_conv_transpose3d, T, clt_conv_transpose3d(f->f, f->f, NULL, NULL, &o->t))          \
    X(clt_interpolate, T, clt_interpolate(f->f, k22, NULL, CLT_INTERP_NEAREST, 0, &o->t))    \
    X(clt_max_pool1d, T, clt_max_pool1d(f->f, 0, 0, 0, 1, 0, &o->t))                         \
    X(clt_avg_pool1d, T, clt_avg_pool1d(f->f, 2, 0, 2, 0, 1, &o->t))                         \
    /* autograd.h */                                                                         \
    X(clt_grad, T, clt_grad(NULL, &o->t))                                                    \
    X(clt_detach, T, clt_detach(NULL, &o->t))                                                \
    /* random.h */                                                                           \
    X(clt_generator_new, NEVER_FAILS, CLT_OK)                                                \
    X(clt_rand, T, clt_rand(f->gen, f->dev, CLT_INT32, 2, sh23, &o->t))                      \
    X(clt_randn, T, clt_randn(f->gen, f->dev, CLT_INT64, 2, sh23, &o->t))                    \
    X(clt_randint, T, clt_randint(f->gen, f->dev, 5, 1, CLT_INT64, 2, sh23, &o->t))          \
    X(clt_rand_like, T, clt_rand_like(f->gen, f->i32, &o->t))                                \
    X(clt_randn_like, T, clt_randn_like(f->gen, f->i32, &o->t))                              \
    X(clt_randperm, T, clt_randperm(f->gen, f->dev, -1, CLT_INT64, &o->t))                   \
    /* nn.h */                                                                               \
    X(clt_module_forward, T, clt_module_forward(f->lin, f->f, &o->t))                        \
    X(clt_module_parameters, LIST | N, clt_module_parameters(NULL, &o->list, &o->n))         \
    X(clt_module_named_parameters, NAMED | N,                                                \
      clt_module_named_parameters(NULL, &o->named, &o->n))                                   \
    X(clt_module_named_buffers, NAMED | N, clt_module_named_buffers(NULL, &o->named, &o->n)) \
    X(clt_module_state, NAMED | N, clt_module_state(NULL, &o->named, &o->n))                 \
    X(clt_module_clone, M, clt_module_clone(NULL, f->dev, &o->m))                            \
    X(clt_sequential, M, clt_sequential(f->mods, 1, &o->m))                                  \
    X(clt_module_custom, M, clt_module_custom("", NULL, NULL, NULL, &o->m))                  \
    X(clt_module_custom_multi, M,                                                            \
      clt_module_custom_multi("", NULL, 2, 1, NULL, NULL, &o->m))                            \
    X(clt_module_forward_multi, T, clt_module_forward_multi(f->lin, f->cpair, 1, &o->t, 1))  \
    X(clt_module_list, M, clt_module_list(f->mods, 1, &o->m))                                \
    X(clt_module_dict, M, clt_module_dict(NULL, f->mods, 1, &o->m))                          \
    X(clt_parameter_list, M, clt_parameter_list(f->pair, 2, &o->m))                          \
    X(clt_parameter_dict, M, clt_parameter_dict(NULL, f->pair, 2, &o->m))                    \
    X(clt_linear, M, clt_linear(f->dev, -1, 4, 1, f->gen, &o->m))                            \
    X(clt_conv2d_layer, M, clt_conv2d_layer(f->dev, 1, 1, 0, 3, NULL, 1, f->gen, &o->m))     \
    X(clt_max_pool2d_layer, M, clt_max_pool2d_layer(0, 2, NULL, &o->m))                      \
    X(clt_avg_pool2d_layer, M, clt_avg_pool2d_layer(2, -1, NULL, &o->m))                     \
    X(clt_adaptive_avg_pool2d_layer, M, clt_adaptive_avg_pool2d_layer(-1, 2, &o->m))         \
    X(clt_conv1d_layer, M, clt_conv1d_layer(f->dev, 1, 1, 0, NULL, 1, f->gen, &o->m))        \
    X(clt_conv_transpose2d_layer, M,                                                         \
      clt_conv_transpose2d_layer(f->dev, 2, 0, 3, 3, NULL, 1, f->gen, &o->m))                \
    X(clt_conv3d_layer, M, clt_conv3d_layer(f->dev, 1, 1, k303, NULL, 1, f->gen, &o->m))     \
    X(clt_conv_transpose1d_layer, M,                                                         \
      clt_conv_transpose1d_layer(f->dev, 2, 0, 3, NULL, 1, f->gen, &o->m))                   \
    X(clt_conv_transpose3d_layer, M,                                                         \
      clt_conv_transpose3d_layer(f->dev, 2, 0, k303, NULL, 1, f->gen, &o->m))                \
    X(clt_upsample_layer, M, clt_upsample_layer(NULL, NULL, CLT_INTERP_NEAREST, 0, &o->m))   \
    X(clt_max_pool1d_layer, M, clt_max_pool1d_layer(0, NULL, &o->m))                         \
    X(clt_avg_pool1d_layer, M, clt_avg_pool1d_layer(-2, NULL, &o->m))                        \
    X(clt_identity_layer, NEVER_FAILS, CLT_OK)                                               \
    X(clt_flatten_layer, NEVER_FAILS, CLT_OK) /* dims are checked at forward, as torch's */  \
    X(clt_layer_norm_layer, M, clt_layer_norm_layer(f->dev, 0, sh5, 1e-5, 1, &o->m))         \
    X(clt_layer_norm, T, clt_layer_norm(f->i32, 1, sh5, NULL, NULL, 1e-5, &o->t))            \
    X(clt_group_norm, T, clt_group_norm(f->i32, 3, NULL, NULL, 1e-5, &o->t))                 \
    X(clt_group_norm_layer, M, clt_group_norm_layer(f->dev, 4, 6, 1e-5, 1, &o->m))           \
    X(clt_batch_norm1d_layer, M, clt_batch_norm1d_layer(f->dev, 0, 1e-5, 0.1, 1, 1, &o->m))  \
    X(clt_batch_norm2d_layer, M, clt_batch_norm2d_layer(f->dev, -3, 1e-5, 0.1, 1, 1, &o->m)) \
    X(clt_dropout_layer, M, clt_dropout_layer(1.5, f->gen, &o->m))                           \
    X(clt_embedding_layer, M, clt_embedding_layer(f->dev, -1, 3, f->gen, &o->m))             \
    X(clt_embedding_layer_ex, M, clt_embedding_layer_ex(f->dev, -1, 3, NULL, f->gen, &o->m)) \
    X(clt_embedding_layer_with_opts, M,                                                      \
      clt_embedding_layer_with_opts(f->dev, -1, 3, NULL, f->gen, &o->m))                     \
    X(clt_embedding_layer_from_pretrained, M,                                                \
      clt_embedding_layer_from_pretrained(f->i32, 1, NULL, &o->m))                           \
    X(clt_embedding_bag_layer_from_pretrained, M,                                            \
      clt_embedding_bag_layer_from_pretrained(f->i32, 1, NULL, &o->m))                       \
    X(clt_rnn_layer, M, clt_rnn_layer(f->dev, &bad_rnn, f->gen, &o->m))                      \
    X(clt_lstm_layer, M, clt_lstm_layer(f->dev, &bad_rnn, f->gen, &o->m))                    \
    X(clt_gru_layer, M, clt_gru_layer(f->dev, &bad_rnn, f->gen, &o->m))                      \
    /* a Linear is no LSTM */                                                                \
    X(clt_lstm_forward, T | T2 | T3,                                                         \
      clt_lstm_forward(f->lin, f->f, NULL, NULL, &o->t, &o->t2, &o->t3))                     \
    X(clt_rnn_forward, T | T2, clt_rnn_forward(f->lin, f->f, NULL, &o->t, &o->t2))           \
    X(clt_gru_forward, T | T2, clt_gru_forward(f->lin, f->f, NULL, &o->t, &o->t2))           \
    X(clt_unflatten_layer, M, clt_unflatten_layer(1, NULL, 0, &o->m))                       \
    X(clt_softmax2d_layer, NEVER_FAILS, CLT_OK)                                              \
    X(clt_cosine_similarity_layer, NEVER_FAILS, CLT_OK) /* settings checked at forward */    \
    X(clt_pairwise_distance_layer, NEVER_FAILS, CLT_OK)                                      \
    X(clt_cosine_similarity_forward, T, clt_cosine_similarity_forward(f->lin, f->f, f->f, &o->t)) \
    X(clt_pairwise_distance_forward, T, clt_pairwise_distance_forward(f->lin, f->f, f->f, &o->t)) \
    X(clt_triplet_margin_with_distance_loss, T,                                              \
      clt_triplet_margin_with_distance_loss(NULL, f->f, f->f, NULL, NULL, 1.0, 0,             \
                                            CLT_REDUCTION_MEAN, &o->t))                      \
    X(clt_gumbel_softmax, T, clt_gumbel_softmax(f->i32, 1.0, 0, 0, f->gen, &o->t))           \
    X(clt_pack_padded_sequence, T | T2 | T3 | T4,                                            \
      clt_pack_padded_sequence(f->f, NULL, 0, 0, 0, &o->t, &o->t2, &o->t3, &o->t4))          \
    X(clt_pack_sequence, T | T2 | T3 | T4,                                                   \
      clt_pack_sequence(f->cpair, 0, 0, &o->t, &o->t2, &o->t3, &o->t4))                      \
    /* float batch_sizes */                                                                  \
    X(clt_pad_packed_sequence, T | T2,                                                       \
      clt_pad_packed_sequence(f->f, f->f, NULL, NULL, 0, 0.0, -1, &o->t, &o->t2))            \
    X(clt_lstm_forward_packed, T | T2 | T3,                                                  \
      clt_lstm_forward_packed(f->lin, f->f, f->f, NULL, NULL, NULL, NULL, &o->t, &o->t2,     \
                              &o->t3))                                                       \
    X(clt_rnn_forward_packed, T | T2,                                                        \
      clt_rnn_forward_packed(f->lin, f->f, f->f, NULL, NULL, NULL, &o->t, &o->t2))           \
    X(clt_gru_forward_packed, T | T2,                                                        \
      clt_gru_forward_packed(f->lin, f->f, f->f, NULL, NULL, NULL, &o->t, &o->t2))           \
    X(clt_rrelu, T, clt_rrelu(f->i32, 0.1, 0.3, 1, f->gen, &o->t))                         \
    X(clt_rrelu_layer, M, clt_rrelu_layer(0.5, 0.1, f->gen, &o->m))                          \
    X(clt_rnn_cell, T,                                                                       \
      clt_rnn_cell(f->f, NULL, f->f, f->f, NULL, NULL, CLT_RNN_TANH, &o->t))                 \
    X(clt_lstm_cell, T | T2,                                                                 \
      clt_lstm_cell(f->f, NULL, NULL, f->f, f->f, NULL, NULL, &o->t, &o->t2))                \
    X(clt_gru_cell, T, clt_gru_cell(f->f, NULL, f->f, f->f, NULL, NULL, &o->t))               \
    X(clt_rnn_cell_layer, M,                                                                 \
      clt_rnn_cell_layer(f->dev, 0, 3, 1, CLT_RNN_TANH, f->gen, &o->m))                      \
    X(clt_lstm_cell_layer, M, clt_lstm_cell_layer(f->dev, 3, 0, 1, f->gen, &o->m))           \
    X(clt_gru_cell_layer, M, clt_gru_cell_layer(f->dev, -3, 3, 1, f->gen, &o->m))            \
    X(clt_rnn_cell_forward, T, clt_rnn_cell_forward(f->lin, f->f, NULL, &o->t))              \
    X(clt_gru_cell_forward, T, clt_gru_cell_forward(f->lin, f->f, NULL, &o->t))              \
    X(clt_lstm_cell_forward, T | T2,                                                         \
      clt_lstm_cell_forward(f->lin, f->f, NULL, NULL, &o->t, &o->t2))                        \
    X(clt_relu_layer, NEVER_FAILS, CLT_OK)                                                   \
    X(clt_gelu_layer, NEVER_FAILS, CLT_OK)                                                   \
    X(clt_tanh_layer, NEVER_FAILS, CLT_OK)                                                   \
    X(clt_sigmoid_layer, NEVER_FAILS, CLT_OK)                                                \
    X(clt_silu_layer, NEVER_FAILS, CLT_OK)                                                   \
    X(clt_softplus_layer, NEVER_FAILS, CLT_OK)                                               \
    X(clt_leaky_relu_layer, NEVER_FAILS, CLT_OK)                                             \
    X(clt_elu_layer, NEVER_FAILS, CLT_OK)                                                    \
    X(clt_multihead_attention_layer, M,                                                      \
      clt_multihead_attention_layer(f->dev, 6, 4, 0.0, 1, 0, f->gen, &o->m))                 \
    X(clt_multihead_attention_layer_with_opts, M,                                            \
      clt_multihead_attention_layer_with_opts(f->dev, 6, 2, &bad_mha, f->gen, &o->m))        \
    X(clt_multihead_attention, T | T2,                                                       \
      clt_multihead_attention(f->lin, f->f, f->f, f->f, NULL, NULL, 1, 1, &o->t, &o->t2))    \
    X(clt_transformer_encoder_layer, M,                                                      \
      clt_transformer_encoder_layer(f->dev, 8, 2, 16, 0.1, "tanh", 1e-5, 0, 0, f->gen, &o->m)) \
    X(clt_transformer_encoder, M, clt_transformer_encoder(f->mods, 1, NULL, &o->m))          \
    X(clt_transformer_encoder_forward, T,                                                    \
      clt_transformer_encoder_forward(f->lin, f->f, NULL, NULL, &o->t))                      \
    /* optim.h */                                                                            \
    X(clt_sgd, OPT, clt_sgd(f->pair, 1, &bad_sgd, &o->opt))                                  \
    X(clt_adam, OPT, clt_adam(f->pair, 1, &bad_adam, &o->opt))                               \
    X(clt_adamw, OPT, clt_adamw(f->pair, 1, &bad_adam, &o->opt))                             \
    X(clt_rmsprop, OPT, clt_rmsprop(f->pair, 1, &bad_rmsprop, &o->opt))                      \
    X(clt_adagrad, OPT, clt_adagrad(f->pair, 1, &bad_adagrad, &o->opt))                      \
    X(clt_sparse_adam, OPT, clt_sparse_adam(f->pair, 1, &bad_sparse_adam, &o->opt))          \
    X(clt_adamax, OPT, clt_adamax(f->pair, 1, &bad_adamax, &o->opt))                         \
    X(clt_nadam, OPT, clt_nadam(f->pair, 1, &bad_nadam, &o->opt))                            \
    X(clt_radam, OPT, clt_radam(f->pair, 1, &bad_radam, &o->opt))                            \
    X(clt_clip_grad_norm, T, clt_clip_grad_norm(f->pair, 2, -1.0, 2.0, &o->t))               \
    X(clt_step_lr, SCHED, clt_step_lr(f->opt, 0, 0.5, &o->sched))                            \
    X(clt_cosine_lr, SCHED, clt_cosine_lr(f->opt, -1, 0, &o->sched))                         \
    X(clt_exponential_lr, SCHED, clt_exponential_lr(f->opt, -0.5, &o->sched))                \
    X(clt_multistep_lr, SCHED, clt_multistep_lr(f->opt, bad_milestones, 1, 0.1, &o->sched))  \
    X(clt_linear_lr, SCHED, clt_linear_lr(f->opt, 0.0, 1.0, 5, &o->sched))                   \
    X(clt_one_cycle_lr, SCHED, clt_one_cycle_lr(f->opt, 0.1, 10, 1.5, NULL, 25, 1e4, 0, &o->sched)) \
    X(clt_one_cycle_lr_momentum, SCHED,                                                      \
      clt_one_cycle_lr_momentum(f->opt, 0.1, 10, 0.3, NULL, 25, 1e4, 0, 1, -1, 0.9, &o->sched)) \
    X(clt_reduce_lr_on_plateau, SCHED,                                                       \
      clt_reduce_lr_on_plateau(f->opt, "mid", 0.1, 10, 1e-4, NULL, 0, 0, 1e-8, &o->sched))   \
    X(clt_lambda_lr, SCHED, clt_lambda_lr(f->opt, NULL, NULL, &o->sched))                    \
    X(clt_multiplicative_lr, SCHED, clt_multiplicative_lr(f->opt, NULL, NULL, &o->sched))    \
    X(clt_constant_lr, SCHED, clt_constant_lr(f->opt, 1.5, 5, &o->sched))                    \
    X(clt_polynomial_lr, SCHED, clt_polynomial_lr(f->opt, 0, 1.0, &o->sched))                \
    X(clt_cosine_warm_restarts, SCHED, clt_cosine_warm_restarts(f->opt, 10, 0, 0, &o->sched)) \
    X(clt_sequential_lr, SCHED, clt_sequential_lr(f->opt, NULL, 2, NULL, &o->sched))         \
    X(clt_chained_scheduler, SCHED, clt_chained_scheduler(NULL, 0, &o->sched))               \
    /* data.h */                                                                             \
    X(clt_dataloader_arrays, DL, clt_dataloader_arrays(f->dev, &spec_x, NULL, &bad_loader, &o->dl)) \
    X(clt_dataloader_callback, DL,                                                           \
      clt_dataloader_callback(f->dev, -1, &spec_x, NULL, no_fill, NULL, NULL, &o->dl))       \
    X(clt_dataloader_next, T | T2, clt_dataloader_next(NULL, &o->t, &o->t2, small_int))      \
    X(clt_random_split, IDS, clt_random_split(10, split_3_3, 2, 0, split_got, &o->ids))      \
    /* io.h */                                                                               \
    X(clt_load_safetensors, NAMED | N,                                                       \
      clt_load_safetensors("/nonexistent/cltensor.safetensors", f->dev, &o->named, &o->n))   \
    X(clt_load_npy, T, clt_load_npy("/nonexistent/cltensor.npy", f->dev, &o->t))             \
    X(clt_load_npy_host, ARR, clt_load_npy_host("/nonexistent/cltensor.npy", &o->arr))       \
    X(clt_load_idx, ARR, clt_load_idx("/nonexistent/cltensor.idx", &o->arr))                \
    X(clt_dataloader_concat, DL, clt_dataloader_concat(f->dev, &spec_x, NULL, 0, NULL, &o->dl)) \
    X(clt_tf_normalize, T, clt_tf_normalize(f->f, swa_rate, swa_rate, 1, &o->t))             \
    X(clt_tf_hflip, T, clt_tf_hflip(NULL, &o->t))                                            \
    X(clt_tf_vflip, T, clt_tf_vflip(NULL, &o->t))                                            \
    X(clt_tf_crop, T, clt_tf_crop(f->f, 0, 0, 0, 1, &o->t))                                  \
    X(clt_tf_center_crop, T, clt_tf_center_crop(f->f, 0, 1, &o->t))                          \
    X(clt_tf_pad, T, clt_tf_pad(f->f, sh23, 3, CLT_PAD_CONSTANT, 0, &o->t))                  \
    X(clt_tf_resize, T, clt_tf_resize(f->f, sh23, 2, CLT_INTERP_BILINEAR, &o->t))            \
    X(clt_tf_convert_image_dtype, T, clt_tf_convert_image_dtype(f->f, CLT_INT64, &o->t))     \
    X(clt_tf_to_tensor, T, clt_tf_to_tensor(f->f, &o->t))                                    \
    X(clt_tf_random_horizontal_flip, T, clt_tf_random_horizontal_flip(NULL, f->f, 0.5, &o->t)) \
    X(clt_tf_random_crop, T,                                                                 \
      clt_tf_random_crop(NULL, f->f, 1, 1, NULL, 0, 0, 0, CLT_PAD_CONSTANT, &o->t))          \
    X(clt_tf_random_resized_crop, T,                                                         \
      clt_tf_random_resized_crop(NULL, f->f, 1, 1, NULL, NULL, CLT_INTERP_BILINEAR, &o->t))  \
    X(clt_tf_random_erasing, T, clt_tf_random_erasing(NULL, f->f, 0.5, NULL, NULL, 0, &o->t)) \
    /* io.h: torch.save's format and .npz */                                                 \
    X(clt_load_torch, NAMED | N, clt_load_torch("/nonexistent/cltensor.pt", f->dev, &o->named, &o->n)) \
    X(clt_load_npz, NAMED | N, clt_load_npz("/nonexistent/cltensor.npz", f->dev, &o->named, &o->n)) \
    X(clt_checkpoint_dict_new, CK | NEVER_FAILS, clt_checkpoint_dict_new(&o->ck))               \
    X(clt_checkpoint_dict_load_torch, CK,                                                    \
      clt_checkpoint_dict_load_torch("/nonexistent/cltensor.pt", &o->ck))                    \
    X(clt_checkpoint_dict_get_str, CS, clt_checkpoint_dict_get_str(NULL, "epoch", &o->cs))  \
    /* dist.h */                                                                             \
    X(clt_process_group_init, PG, clt_process_group_init(&bad_dist, &o->pg))                 \
    X(clt_all_gather, T, clt_all_gather(NULL, f->f, &o->t))                                  \
    /* dlpack.h */                                                                           \
    X(clt_to_dlpack, DLP, clt_to_dlpack(NULL, &o->dlp))                                      \
    X(clt_from_dlpack, T, clt_from_dlpack(f->dev, NULL, &o->t))                              \
    /* device.h */                                                                           \
    X(clt_device_at, D, clt_device_at(1000, &o->d))                                          \
    X(clt_device_get, D, clt_device_get("no-such-kind", &o->d))                              \
    X(clt_device_explain, S, clt_device_explain(NULL, &o->s))                                \
    X(clt_pick_label, S, clt_pick_label(infos, 1, 5, &o->s))                                 \
    X(clt_pick, REPORT, clt_pick(infos, 1, "no-such-kind", NULL, &o->n, &o->s))              \
    /* opencl.h */                                                                           \
    X(clt_tensor_cl_buffer, MEM | N, clt_tensor_cl_buffer(NULL, &o->mem, &o->n))             \
    X(clt_tensor_from_cl_buffer, T,                                                          \
      clt_tensor_from_cl_buffer(f->dev, NULL, 0, CLT_FLOAT32, 2, sh23, &o->t))               \
    /* linalg.h: torch.linalg */                                                             \
    X(clt_linalg_inv, T, clt_linalg_inv(f->f, &o->t))                                        \
    X(clt_linalg_solve, T, clt_linalg_solve(f->f, f->f, &o->t))                              \
    X(clt_linalg_det, T, clt_linalg_det(f->i32, &o->t))                                      \
    X(clt_linalg_slogdet, T | T2, clt_linalg_slogdet(f->f, &o->t, &o->t2))                   \
    X(clt_linalg_cholesky, T, clt_linalg_cholesky(NULL, 0, &o->t))                           \
    /* shape ops (view.h, tensor.h, reduce.h) */                                             \
    X(clt_split, LIST | N, clt_split(f->f, -1, 0, &o->list, &o->n))                          \
    X(clt_split_sizes, LIST | N, clt_split_sizes(f->f, sh5, 1, 0, &o->list, &o->n))          \
    X(clt_chunk, LIST | N, clt_chunk(f->f, 0, 0, &o->list, &o->n))                           \
    X(clt_unbind, LIST | N, clt_unbind(f->f, 5, &o->list, &o->n))                            \
    X(clt_meshgrid, LIST | N, clt_meshgrid(f->cpair, 2, CLT_MESHGRID_IJ, &o->list, &o->n))   \
    X(clt_diagonal, T, clt_diagonal(f->f, 0, 0, 0, &o->t))                                   \
    X(clt_flip, T, clt_flip(f->f, perm00, 2, &o->t))                                         \
    X(clt_roll, T, clt_roll(f->f, neg1, dim7, 1, &o->t))                                     \
    X(clt_repeat, T, clt_repeat(f->f, sh5, 1, &o->t))                                        \
    X(clt_tile, T, clt_tile(f->f, neg1, 1, &o->t))                                           \
    X(clt_repeat_interleave, T, clt_repeat_interleave(f->f, -1, NULL, &o->t))                \
    X(clt_repeat_interleave_tensor, T, clt_repeat_interleave_tensor(f->f, f->f, NULL, &o->t)) \
    X(clt_tril, T, clt_tril(f->e, 0, &o->t))                                                 \
    X(clt_triu, T, clt_triu(f->e, 0, &o->t))                                                 \
    X(clt_diag, T, clt_diag(f->e, INT64_MIN, &o->t))                                         \
    X(clt_trace, T, clt_trace(f->e, &o->t))                                                  \
    X(clt_pad, T, clt_pad(f->f, sh23, 1, CLT_PAD_CONSTANT, 0, &o->t))                        \
    X(clt_linspace, T, clt_linspace(f->dev, CLT_FLOAT32, 0, 1, -1, &o->t))                   \
    X(clt_logspace, T, clt_logspace(f->dev, CLT_FLOAT32, 0, 1, -1, 10, &o->t))               \
    X(clt_eye, T, clt_eye(f->dev, CLT_FLOAT32, -1, 2, &o->t))                                \
    X(clt_tril_indices, T, clt_tril_indices(f->dev, -1, 2, 0, &o->t))                        \
    X(clt_triu_indices, T, clt_triu_indices(f->dev, -1, 2, 0, &o->t))                        \
    /* nn.h: scaled dot-product attention */                                                 \
    X(clt_scaled_dot_product_attention, T,                                                   \
      clt_scaled_dot_product_attention(f->f, f->f, f->i32, NULL, 0.0, 0, NULL, NULL, &o->t)) \
    /* autograd.h: autograd.grad, hooks, checkpoint */                                       \
    X(clt_autograd_grad, T, clt_autograd_grad(&f->f, 1, NULL, &f->f, 1, 0, 0, &o->t))        \
    X(clt_tensor_register_hook, HOOK,                                                        \
      clt_tensor_register_hook(f->f, contract_hook, NULL, &o->hook))                         \
    X(clt_tensor_register_post_accumulate_grad_hook, HOOK,                                   \
      clt_tensor_register_post_accumulate_grad_hook(f->f, contract_post_hook, NULL,          \
                                                    &o->hook))                               \
    X(clt_checkpoint, LIST | N, clt_checkpoint(contract_ckpt, NULL, f->pair, 1, &o->list, &o->n)) \
    /* optim.h: CyclicLR */                                                                  \
    X(clt_cyclic_lr, SCHED,                                                                  \
      clt_cyclic_lr(f->opt, 0.01, 0.1, 0, 2, NULL, 1.0, NULL, NULL, NULL, 0, 0.8, 0.9, &o->sched)) \
    /* optim.h: Adadelta */                                                                  \
    X(clt_adadelta, OPT, clt_adadelta(f->pair, 1, &bad_adadelta, &o->opt))                   \
    /* nn.h: the transformer's decoder */                                                    \
    X(clt_transformer_decoder_layer, M,                                                      \
      clt_transformer_decoder_layer(f->dev, 8, 2, 16, 0.1, "tanh", 1e-5, 0, 0, f->gen, &o->m)) \
    X(clt_transformer_decoder, M, clt_transformer_decoder(f->mods, 1, NULL, &o->m))          \
    X(clt_transformer_decoder_forward, T,                                                    \
      clt_transformer_decoder_forward(f->lin, f->f, f->f, NULL, NULL, NULL, NULL, &o->t))    \
    X(clt_transformer, M,                                                                    \
      clt_transformer(f->dev, 8, 3, 1, 1, 16, 0.1, "relu", 1e-5, 0, 0, f->gen, &o->m))       \
    X(clt_transformer_forward, T,                                                            \
      clt_transformer_forward(f->lin, f->f, f->f, NULL, NULL, NULL, NULL, NULL, NULL, &o->t)) \
    X(clt_generate_square_subsequent_mask, T,                                                \
      clt_generate_square_subsequent_mask(f->dev, CLT_INT32, 3, &o->t))                      \
    /* dist.h: DistributedDataParallel */                                                    \
    X(clt_ddp_new, DDP, clt_ddp_new(NULL, NULL, NULL, &o->ddp))                              \
    /* reduce.h: the other scans */                                                          \
    X(clt_cumprod, T, clt_cumprod(f->f, 2, &o->t))                                           \
    X(clt_cummax, T | T2, clt_cummax(f->f, -3, &o->t, &o->t2))                               \
    X(clt_cummin, T | T2, clt_cummin(f->f, 2, &o->t, &o->t2))                                \
    X(clt_logcumsumexp, T, clt_logcumsumexp(f->i32, 1, &o->t))                               \
    /* index.h: more indexing */                                                             \
    X(clt_take, T, clt_take(f->f, f->f, &o->t))                                              \
    X(clt_index_fill, T, clt_index_fill(f->f, 0, f->f, 0, &o->t))                            \
    X(clt_index_copy, T, clt_index_copy(f->f, 0, f->f, f->f, &o->t))                         \
    X(clt_index_put, T, clt_index_put(f->f, f->cpair, 2, f->f2, 0, &o->t))                   \
    X(clt_put, T, clt_put(f->f, f->f, f->f, 0, &o->t))                                       \
    X(clt_scatter_reduce, T, clt_scatter_reduce(f->f, 0, f->f, f->f, "sum", 1, &o->t))       \
    X(clt_masked_select, T, clt_masked_select(f->f, f->f, &o->t))                            \
    X(clt_masked_scatter, T, clt_masked_scatter(f->f, f->bl, f->i32, &o->t))                 \
    X(clt_nonzero, T, clt_nonzero(NULL, &o->t))                                              \
    X(clt_argwhere, T, clt_argwhere(NULL, &o->t))                                            \
    X(clt_searchsorted, T, clt_searchsorted(f->f, f->f2, 0, &o->t))                          \
    X(clt_bucketize, T, clt_bucketize(f->f, f->f, 0, &o->t))                                 \
    X(clt_bincount, T, clt_bincount(f->f, NULL, 0, &o->t))                                   \
    X(clt_unique, T | T2 | T3, clt_unique(NULL, &o->t, &o->t2, &o->t3))                      \
    X(clt_unique_consecutive, T | T2 | T3, clt_unique_consecutive(NULL, &o->t, &o->t2, &o->t3)) \
    X(clt_searchsorted_ex, T, clt_searchsorted_ex(f->f, f->f2, 0, 0, "middle", NULL, &o->t)) \
    X(clt_unique_dim, T | T2 | T3, clt_unique_dim(NULL, 0, 1, &o->t, &o->t2, &o->t3))       \
    /* ops.h, linalg.h and nn.h: the activations */                                          \
    X(clt_hardtanh, T, clt_hardtanh(f->bl, -1, 1, &o->t))                                    \
    X(clt_relu6, T, clt_relu6(f->bl, &o->t))                                                 \
    X(clt_threshold, T, clt_threshold(f->bl, 0, 0, &o->t))                                   \
    X(clt_hardsigmoid, T, clt_hardsigmoid(f->i32, &o->t))                                    \
    X(clt_hardswish, T, clt_hardswish(f->i32, &o->t))                                        \
    X(clt_mish, T, clt_mish(f->i32, &o->t))                                                  \
    X(clt_selu, T, clt_selu(f->i32, &o->t))                                                  \
    X(clt_celu, T, clt_celu(f->f, 0.0, &o->t))                                               \
    X(clt_softsign, T, clt_softsign(f->bl, &o->t))                                           \
    X(clt_tanhshrink, T, clt_tanhshrink(f->bl, &o->t))                                       \
    X(clt_hardshrink, T, clt_hardshrink(f->i32, 0.5, &o->t))                                 \
    X(clt_softshrink, T, clt_softshrink(f->f, -1.0, &o->t))                                  \
    X(clt_logsigmoid, T, clt_logsigmoid(NULL, &o->t))                                        \
    X(clt_glu, T, clt_glu(f->f, 7, &o->t))                                                   \
    X(clt_prelu, T, clt_prelu(f->f, f->i32, &o->t))                                          \
    X(clt_softmin, T, clt_softmin(f->f, 7, &o->t))                                           \
    X(clt_hardtanh_layer, M, clt_hardtanh_layer(1, -1, &o->m))                               \
    X(clt_prelu_layer, M, clt_prelu_layer(f->dev, -1, 0.25, &o->m))                          \
    X(clt_relu6_layer, NEVER_FAILS, CLT_OK)                                                  \
    X(clt_hardsigmoid_layer, NEVER_FAILS, CLT_OK)                                            \
    X(clt_hardswish_layer, NEVER_FAILS, CLT_OK)                                              \
    X(clt_mish_layer, NEVER_FAILS, CLT_OK)                                                   \
    X(clt_selu_layer, NEVER_FAILS, CLT_OK)                                                   \
    X(clt_celu_layer, NEVER_FAILS, CLT_OK)                                                   \
    X(clt_softsign_layer, NEVER_FAILS, CLT_OK)                                               \
    X(clt_tanhshrink_layer, NEVER_FAILS, CLT_OK)                                             \
    X(clt_hardshrink_layer, NEVER_FAILS, CLT_OK)                                             \
    X(clt_softshrink_layer, NEVER_FAILS, CLT_OK)                                             \
    X(clt_logsigmoid_layer, NEVER_FAILS, CLT_OK)                                             \
    X(clt_threshold_layer, NEVER_FAILS, CLT_OK)                                              \
    X(clt_glu_layer, NEVER_FAILS, CLT_OK)                                                    \
    X(clt_softmax_layer, NEVER_FAILS, CLT_OK)                                                \
    X(clt_log_softmax_layer, NEVER_FAILS, CLT_OK)                                            \
    X(clt_softmin_layer, NEVER_FAILS, CLT_OK)                                                \
    /* random.h: the other distributions */                                                  \
    X(clt_bernoulli, T, clt_bernoulli(f->gen, f->i32, &o->t))                                \
    X(clt_poisson, T, clt_poisson(f->gen, f->i32, &o->t))                                    \
    X(clt_binomial, T, clt_binomial(f->gen, f->i32, f->f, &o->t))                            \
    X(clt_multinomial, T, clt_multinomial(f->gen, f->f, 0, 1, &o->t))                        \
    X(clt_normal_tensor, T, clt_normal_tensor(f->gen, f->f, f->f2, &o->t))                   \
    X(clt_randint_like, T, clt_randint_like(f->gen, f->i32, 5, 1, &o->t))                    \
    /* reduce.h: more reductions */                                                          \
    X(clt_amax, T, clt_amax(f->f, dim7, 1, 0, &o->t))                                        \
    X(clt_amin, T, clt_amin(f->e, NULL, 0, 0, &o->t))                                        \
    X(clt_aminmax, T | T2, clt_aminmax(f->e, &o->t, &o->t2))                                 \
    X(clt_aminmax_dim, T | T2, clt_aminmax_dim(f->f, 5, 0, &o->t, &o->t2))                   \
    X(clt_nansum, T, clt_nansum(NULL, &o->t))                                                \
    X(clt_nansum_dim, T, clt_nansum_dim(f->f, 5, 0, &o->t))                                  \
    X(clt_nanmean, T, clt_nanmean(f->i32, &o->t))                                            \
    X(clt_nanmean_dim, T, clt_nanmean_dim(f->f, 5, 0, &o->t))                                \
    X(clt_count_nonzero, T, clt_count_nonzero(f->f, perm00, 2, &o->t))                       \
    X(clt_var_mean, T | T2, clt_var_mean(f->i32, 1, &o->t, &o->t2))                          \
    X(clt_var_mean_dim, T | T2, clt_var_mean_dim(f->f, 5, 1, 0, &o->t, &o->t2))              \
    X(clt_std_mean, T | T2, clt_std_mean(f->bl, 1, &o->t, &o->t2))                           \
    X(clt_std_mean_dim, T | T2, clt_std_mean_dim(f->f, 5, 1, 0, &o->t, &o->t2))              \
    X(clt_median, T, clt_median(f->bl, &o->t))                                               \
    X(clt_median_dim, T | T2, clt_median_dim(f->e, 0, 0, &o->t, &o->t2))                     \
    X(clt_nanmedian, T, clt_nanmedian(f->bl, &o->t))                                         \
    X(clt_nanmedian_dim, T | T2, clt_nanmedian_dim(f->f, 5, 0, &o->t, &o->t2))               \
    X(clt_kthvalue, T | T2, clt_kthvalue(f->f, 9, 1, 0, &o->t, &o->t2))                      \
    X(clt_mode, T | T2, clt_mode(f->e, 0, 0, &o->t, &o->t2))                                 \
    X(clt_quantile, T, clt_quantile(f->i32, NULL, 0.5, NULL, 0, CLT_QUANTILE_LINEAR, &o->t)) \
    X(clt_nanquantile, T, clt_nanquantile(f->f, NULL, 2.0, NULL, 0, CLT_QUANTILE_LINEAR, &o->t)) \
    /* loss.h: the rest of torch.nn's losses */                                              \
    X(clt_margin_ranking_loss, T,                                                            \
      clt_margin_ranking_loss(f->f, f->f2, f->f, 0, CLT_REDUCTION_MEAN, &o->t))              \
    X(clt_hinge_embedding_loss, T,                                                           \
      clt_hinge_embedding_loss(f->f, f->f2, 1, CLT_REDUCTION_MEAN, &o->t))                   \
    X(clt_soft_margin_loss, T, clt_soft_margin_loss(f->f, f->f2, CLT_REDUCTION_MEAN, &o->t)) \
    X(clt_multilabel_soft_margin_loss, T,                                                    \
      clt_multilabel_soft_margin_loss(f->f, f->e, NULL, CLT_REDUCTION_MEAN, &o->t))          \
    X(clt_multilabel_margin_loss, T,                                                         \
      clt_multilabel_margin_loss(f->f, f->f, CLT_REDUCTION_MEAN, &o->t))                     \
    X(clt_multi_margin_loss, T,                                                              \
      clt_multi_margin_loss(f->f, f->i32, 1, 1, NULL, CLT_REDUCTION_MEAN, &o->t))            \
    X(clt_cosine_embedding_loss, T,                                                          \
      clt_cosine_embedding_loss(f->f, f->f, f->f, 0, CLT_REDUCTION_MEAN, &o->t))             \
    X(clt_pairwise_distance, T, clt_pairwise_distance(f->f, f->f2, 2, 1e-6, 0, &o->t))       \
    X(clt_triplet_margin_loss, T,                                                            \
      clt_triplet_margin_loss(f->f, f->f, f->e, 1, -1, 1e-6, 0, CLT_REDUCTION_MEAN, &o->t))  \
    X(clt_poisson_nll_loss, T,                                                               \
      clt_poisson_nll_loss(f->f, f->f, 1, 0, 1e-8, CLT_REDUCTION_BATCHMEAN, &o->t))          \
    X(clt_gaussian_nll_loss, T,                                                              \
      clt_gaussian_nll_loss(f->f, f->f, f->e, 0, 1e-6, CLT_REDUCTION_MEAN, &o->t))           \
    X(clt_cdist, T, clt_cdist(f->f, f->f2, 2, &o->t))                                        \
    X(clt_ctc_loss, T, clt_ctc_loss(f->f, f->f, f->f, f->f, 0, CLT_REDUCTION_MEAN, 0, &o->t)) \
    /* optim.h: Rprop, ASGD */                                                               \
    X(clt_rprop, OPT, clt_rprop(f->pair, 1, &bad_rprop, &o->opt))                            \
    X(clt_asgd, OPT, clt_asgd(f->pair, 1, &bad_asgd, &o->opt))                               \
    X(clt_mm, T, clt_mm(f->f, f->f, &o->t))                                                  \
    X(clt_bmm, T, clt_bmm(f->f, f->f, &o->t))                                                \
    X(clt_mv, T, clt_mv(f->f, f->f, &o->t))                                                  \
    X(clt_dot, T, clt_dot(f->f, f->f, &o->t))                                                \
    X(clt_vdot, T, clt_vdot(f->f, f->e, &o->t))                                              \
    X(clt_addmm, T, clt_addmm(f->f, f->f, f->f, 1, 1, &o->t))                                \
    X(clt_addmv, T, clt_addmv(f->f, f->f, f->f, 1, 1, &o->t))                                \
    X(clt_baddbmm, T, clt_baddbmm(f->f, f->f, f->f, 1, 1, &o->t))                            \
    X(clt_addbmm, T, clt_addbmm(f->f, f->f, f->f, 1, 1, &o->t))                              \
    X(clt_outer, T, clt_outer(f->f, f->e, &o->t))                                            \
    X(clt_kron, T, clt_kron(f->f, f->f2, &o->t))                                             \
    X(clt_linalg_cross, T, clt_linalg_cross(f->f, f->f, 0, &o->t))                           \
    X(clt_cross, T, clt_cross(f->f, f->i32, 0, &o->t))                                       \
    X(clt_tensordot, T, clt_tensordot(f->f, f->f, 1, NULL, NULL, &o->t))                     \
    X(clt_einsum, T, clt_einsum("ij,jk", f->cpair, 2, &o->t))                                \
    /* optim.h: LBFGS */                                                                     \
    X(clt_lbfgs, OPT, clt_lbfgs(f->pair, 1, &bad_lbfgs, &o->opt))                            \
    X(clt_max_pool2d_with_indices, T | T2,                                                   \
      clt_max_pool2d_with_indices(f->f, k22, NULL, NULL, NULL, 0, &o->t, &o->t2))            \
    X(clt_max_pool1d_with_indices, T | T2,                                                   \
      clt_max_pool1d_with_indices(f->i32, 2, 0, 0, 1, 0, &o->t, &o->t2))                     \
    X(clt_adaptive_max_pool2d, T | T2, clt_adaptive_max_pool2d(f->f, k22, &o->t, &o->t2))    \
    X(clt_adaptive_max_pool1d, T | T2, clt_adaptive_max_pool1d(f->i32, 2, &o->t, &o->t2))    \
    X(clt_max_unpool2d, T, clt_max_unpool2d(f->f, f->i32, k22, NULL, NULL, NULL, &o->t))     \
    X(clt_max_unpool1d, T, clt_max_unpool1d(f->f, f->i32, 2, 0, 0, NULL, &o->t))             \
    X(clt_lp_pool2d, T, clt_lp_pool2d(f->f, 2.0, k22, NULL, 0, &o->t))                       \
    X(clt_lp_pool1d, T, clt_lp_pool1d(f->e, 2.0, 2, 0, 0, &o->t))                            \
    X(clt_local_response_norm, T, clt_local_response_norm(f->f, 2, 1e-4, 0.75, 1.0, &o->t))  \
    X(clt_instance_norm, T,                                                                  \
      clt_instance_norm(f->f, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, &o->t))                  \
    X(clt_instance_norm1d_layer, M,                                                          \
      clt_instance_norm1d_layer(f->dev, 0, 1e-5, 0.1, 0, 0, &o->m))                          \
    X(clt_instance_norm2d_layer, M,                                                          \
      clt_instance_norm2d_layer(f->dev, 3, -1.0, 0.1, 1, 1, &o->m))                          \
    X(clt_local_response_norm_layer, M,                                                      \
      clt_local_response_norm_layer(0, 1e-4, 0.75, 1.0, &o->m))                              \
    X(clt_cross_map_lrn2d, T, clt_cross_map_lrn2d(f->f, 3, 1e-4, 0.75, 1.0, &o->t))          \
    X(clt_cross_map_lrn2d_layer, M, clt_cross_map_lrn2d_layer(0, 1e-4, 0.75, 1.0, &o->m))    \
    X(clt_adaptive_log_softmax_with_loss, M,                                                 \
      clt_adaptive_log_softmax_with_loss(f->dev, 5, 4, sh5, 1, 4.0, 0, f->gen, &o->m))       \
    X(clt_adaptive_log_softmax_forward, T | T2,                                              \
      clt_adaptive_log_softmax_forward(f->lin, f->f, f->i32, &o->t, &o->t2))                 \
    X(clt_adaptive_log_softmax_log_prob, T,                                                  \
      clt_adaptive_log_softmax_log_prob(f->lin, f->f, &o->t))                                \
    X(clt_adaptive_log_softmax_predict, T,                                                   \
      clt_adaptive_log_softmax_predict(f->lin, f->f, &o->t))                                 \
    X(clt_lazy_linear, M, clt_lazy_linear(f->dev, 0, 1, f->gen, &o->m))                      \
    X(clt_lazy_conv1d, M, clt_lazy_conv1d(f->dev, 1, 0, NULL, 1, f->gen, &o->m))             \
    X(clt_lazy_conv2d, M, clt_lazy_conv2d(f->dev, -1, 2, 2, NULL, 1, f->gen, &o->m))         \
    X(clt_lazy_conv3d, M, clt_lazy_conv3d(f->dev, 2, k022, NULL, 1, f->gen, &o->m))          \
    X(clt_lazy_conv_transpose1d, M,                                                          \
      clt_lazy_conv_transpose1d(f->dev, 0, 2, NULL, 1, f->gen, &o->m))                       \
    X(clt_lazy_conv_transpose2d, M,                                                          \
      clt_lazy_conv_transpose2d(f->dev, 2, 0, 2, NULL, 1, f->gen, &o->m))                    \
    X(clt_lazy_conv_transpose3d, M,                                                          \
      clt_lazy_conv_transpose3d(f->dev, 2, k2m2, NULL, 1, f->gen, &o->m))                    \
    X(clt_lazy_batch_norm1d, M, clt_lazy_batch_norm1d(f->dev, -1.0, 0.1, 1, 1, &o->m))       \
    X(clt_lazy_batch_norm2d, M, clt_lazy_batch_norm2d(f->dev, 1e-5, 2.0, 1, 1, &o->m))       \
    X(clt_lazy_batch_norm3d, M, clt_lazy_batch_norm3d(f->dev, 1e-5, -0.5, 1, 1, &o->m))      \
    X(clt_lazy_instance_norm1d, M, clt_lazy_instance_norm1d(f->dev, -1.0, 0.1, 0, 0, &o->m)) \
    X(clt_lazy_instance_norm2d, M, clt_lazy_instance_norm2d(f->dev, 1e-5, 3.0, 1, 1, &o->m)) \
    X(clt_lazy_instance_norm3d, M, clt_lazy_instance_norm3d(f->dev, -2.0, 0.1, 1, 0, &o->m)) \
    X(clt_lp_pool1d_layer, M, clt_lp_pool1d_layer(2.0, 0, 0, 0, &o->m))                      \
    X(clt_lp_pool2d_layer, M, clt_lp_pool2d_layer(2.0, 2, -1, NULL, 0, &o->m))               \
    X(clt_adaptive_max_pool1d_layer, M, clt_adaptive_max_pool1d_layer(-1, &o->m))            \
    X(clt_adaptive_max_pool2d_layer, M, clt_adaptive_max_pool2d_layer(2, -1, &o->m))         \
    X(clt_max_unpool1d_layer, M, clt_max_unpool1d_layer(0, 0, 0, &o->m))                     \
    X(clt_max_unpool2d_layer, M, clt_max_unpool2d_layer(2, 0, NULL, NULL, &o->m))            \
    X(clt_max_unpool_forward, T, clt_max_unpool_forward(f->lin, f->f, f->f, NULL, &o->t))    \
    X(clt_max_pool3d, T, clt_max_pool3d(f->f, k222, NULL, NULL, NULL, 0, &o->t))             \
    X(clt_max_pool3d_with_indices, T | T2,                                                   \
      clt_max_pool3d_with_indices(f->f, k222, NULL, NULL, NULL, 0, &o->t, &o->t2))           \
    X(clt_avg_pool3d, T, clt_avg_pool3d(f->f, k222, NULL, NULL, 0, 1, &o->t))                \
    X(clt_adaptive_avg_pool1d, T, clt_adaptive_avg_pool1d(f->i32, 2, &o->t))                 \
    X(clt_adaptive_avg_pool3d, T, clt_adaptive_avg_pool3d(f->f, k222, &o->t))                \
    X(clt_adaptive_max_pool3d, T | T2, clt_adaptive_max_pool3d(f->f, k222, &o->t, &o->t2))   \
    X(clt_max_unpool3d, T, clt_max_unpool3d(f->f, f->i32, k222, NULL, NULL, NULL, &o->t))    \
    X(clt_max_pool3d_layer, M, clt_max_pool3d_layer(k022, NULL, &o->m))                      \
    X(clt_avg_pool3d_layer, M, clt_avg_pool3d_layer(k022, NULL, &o->m))                      \
    X(clt_adaptive_avg_pool1d_layer, M, clt_adaptive_avg_pool1d_layer(-1, &o->m))            \
    X(clt_adaptive_avg_pool3d_layer, M, clt_adaptive_avg_pool3d_layer(k2m2, &o->m))          \
    X(clt_adaptive_max_pool3d_layer, M, clt_adaptive_max_pool3d_layer(k2m2, &o->m))          \
    X(clt_max_unpool3d_layer, M, clt_max_unpool3d_layer(k022, NULL, NULL, &o->m))            \
    X(clt_fractional_max_pool2d, T | T2,                                                     \
      clt_fractional_max_pool2d(f->f, k022, k222, NULL, NULL, f->gen, &o->t, &o->t2))        \
    X(clt_fractional_max_pool3d, T | T2,                                                     \
      clt_fractional_max_pool3d(f->f, k022, k222, NULL, NULL, f->gen, &o->t, &o->t2))        \
    X(clt_fractional_max_pool2d_layer, M,                                                    \
      clt_fractional_max_pool2d_layer(k222, NULL, NULL, f->gen, &o->m))                      \
    X(clt_fractional_max_pool3d_layer, M,                                                    \
      clt_fractional_max_pool3d_layer(k022, k222, NULL, f->gen, &o->m))                      \
    X(clt_batch_norm3d_layer, M, clt_batch_norm3d_layer(f->dev, -3, 1e-5, 0.1, 1, 1, &o->m)) \
    X(clt_instance_norm3d_layer, M,                                                          \
      clt_instance_norm3d_layer(f->dev, 0, 1e-5, 0.1, 0, 0, &o->m))                          \
    X(clt_constant_pad1d_layer, M, clt_constant_pad1d_layer(NULL, 0.0, &o->m))               \
    X(clt_constant_pad2d_layer, M, clt_constant_pad2d_layer(NULL, 0.0, &o->m))               \
    X(clt_constant_pad3d_layer, M, clt_constant_pad3d_layer(NULL, 0.0, &o->m))               \
    X(clt_zero_pad2d_layer, M, clt_zero_pad2d_layer(NULL, &o->m))                            \
    X(clt_reflection_pad1d_layer, M, clt_reflection_pad1d_layer(NULL, &o->m))                \
    X(clt_reflection_pad2d_layer, M, clt_reflection_pad2d_layer(NULL, &o->m))                \
    X(clt_reflection_pad3d_layer, M, clt_reflection_pad3d_layer(NULL, &o->m))                \
    X(clt_replication_pad1d_layer, M, clt_replication_pad1d_layer(NULL, &o->m))              \
    X(clt_replication_pad2d_layer, M, clt_replication_pad2d_layer(NULL, &o->m))              \
    X(clt_replication_pad3d_layer, M, clt_replication_pad3d_layer(NULL, &o->m))              \
    X(clt_dropout, T, clt_dropout(f->f, 1.5, 1, f->gen, &o->t))                              \
    X(clt_dropout1d, T, clt_dropout1d(f->f, 1.5, 1, f->gen, &o->t))                          \
    X(clt_dropout2d, T, clt_dropout2d(f->f, -0.5, 1, f->gen, &o->t))                         \
    X(clt_dropout3d, T, clt_dropout3d(f->f, 2.0, 0, f->gen, &o->t))                          \
    X(clt_alpha_dropout, T, clt_alpha_dropout(f->bl, 0.5, 1, f->gen, &o->t))                 \
    X(clt_feature_alpha_dropout, T, clt_feature_alpha_dropout(f->f, -1.0, 1, f->gen, &o->t)) \
    X(clt_dropout1d_layer, M, clt_dropout1d_layer(1.5, f->gen, &o->m))                       \
    X(clt_dropout2d_layer, M, clt_dropout2d_layer(-1.0, f->gen, &o->m))                      \
    X(clt_dropout3d_layer, M, clt_dropout3d_layer(1.5, f->gen, &o->m))                       \
    X(clt_alpha_dropout_layer, M, clt_alpha_dropout_layer(1.5, f->gen, &o->m))               \
    X(clt_feature_alpha_dropout_layer, M,                                                    \
      clt_feature_alpha_dropout_layer(1.5, f->gen, &o->m))                                   \
    X(clt_linalg_eigh, T | T2, clt_linalg_eigh(f->f, NULL, &o->t, &o->t2))                   \
    X(clt_linalg_eigvalsh, T, clt_linalg_eigvalsh(f->i32, "L", &o->t))                        \
    X(clt_linalg_eig, T | T2, clt_linalg_eig(f->f, &o->t, &o->t2))                           \
    X(clt_linalg_eigvals, T, clt_linalg_eigvals(f->i32, &o->t))                              \
    X(clt_lu_unpack, T | T2 | T3, clt_lu_unpack(f->f, f->f, 1, 1, &o->t, &o->t2, &o->t3))    \
    X(clt_svd_lowrank, T | T2 | T3, clt_svd_lowrank(f->i32, 2, 1, NULL, NULL, &o->t, &o->t2, &o->t3))\
    X(clt_pca_lowrank, T | T2 | T3, clt_pca_lowrank(f->f, 9, 1, 1, NULL, &o->t, &o->t2, &o->t3))\
    X(clt_lobpcg, T | T2,                                                                    \
      clt_lobpcg(f->i32, 1, NULL, NULL, 0, NULL, 10, NULL, 1, NULL, NULL, NULL, &o->t, &o->t2))\
    X(clt_lobpcg_sparse, T | T2,                                                             \
      clt_lobpcg_sparse(NULL, 1, NULL, NULL, 0, NULL, 10, NULL, 1, NULL, NULL, NULL, &o->t, &o->t2))\
    X(clt_linalg_svd, T | T2 | T3, clt_linalg_svd(f->i32, 0, &o->t, &o->t2, &o->t3))          \
    X(clt_linalg_svdvals, T, clt_linalg_svdvals(f->e, &o->t))                                 \
    X(clt_svd, T | T2 | T3, clt_svd(f->bl, 1, 1, &o->t, &o->t2, &o->t3))                      \
    X(clt_linalg_pinv, T, clt_linalg_pinv(f->f, NULL, NULL, 1, &o->t))                        \
    X(clt_linalg_matrix_rank, T, clt_linalg_matrix_rank(f->i32, NULL, NULL, 0, &o->t))        \
    X(clt_linalg_cond, T, clt_linalg_cond(f->f, 1, &o->t))                                   \
    X(clt_linalg_qr, T | T2, clt_linalg_qr(f->i32, NULL, &o->t, &o->t2))                     \
    X(clt_linalg_lstsq, T, clt_linalg_lstsq(f->f, f->i32, &o->t))                            \
    X(clt_linalg_vector_norm, T, clt_linalg_vector_norm(f->i32, 2, NULL, 0, 0, &o->t))       \
    X(clt_linalg_matrix_norm, T, clt_linalg_matrix_norm(f->f, "3", NULL, 0, &o->t))          \
    X(clt_linalg_norm, T, clt_linalg_norm(f->f, "3", NULL, 0, 0, &o->t))                     \
    X(clt_linalg_matrix_power, T, clt_linalg_matrix_power(f->f, 2, &o->t))                   \
    X(clt_linalg_multi_dot, T, clt_linalg_multi_dot(f->cpair, 2, &o->t))                     \
    X(clt_linalg_vecdot, T, clt_linalg_vecdot(f->f, f->i32, -1, &o->t))                      \
    X(clt_diag_embed, T, clt_diag_embed(f->f, 0, 1, 1, &o->t))                               \
    X(clt_block_diag, T, clt_block_diag(f->cpair, 0, &o->t))                                 \
    X(clt_linalg_householder_product, T, clt_linalg_householder_product(f->f, f->f, &o->t))  \
    /* conv.h, index.h and nn.h: the rearranging and bag ops and layers */                   \
    X(clt_pixel_shuffle, T, clt_pixel_shuffle(f->f, 2, &o->t))                               \
    X(clt_pixel_unshuffle, T, clt_pixel_unshuffle(f->f, 2, &o->t))                           \
    X(clt_channel_shuffle, T, clt_channel_shuffle(f->f, 2, &o->t))                           \
    X(clt_unfold, T, clt_unfold(f->f, k22, NULL, &o->t))                                     \
    X(clt_fold, T, clt_fold(f->i32, k22, k22, NULL, &o->t))                                  \
    X(clt_bilinear, T, clt_bilinear(f->f, f->f2, f->f, NULL, &o->t))                         \
    X(clt_pad_sequence, T, clt_pad_sequence(f->cpair, 0, 0, 0.0, &o->t))                     \
    X(clt_embedding_bag, T,                                                                  \
      clt_embedding_bag(f->f, f->f, NULL, CLT_BAG_SUM, NULL, NULL, 0, &o->t))                \
    X(clt_embedding_bag_with_opts, T,                                                        \
      clt_embedding_bag_with_opts(f->f, f->f, NULL, NULL, NULL, &o->t))                      \
    X(clt_pixel_shuffle_layer, M, clt_pixel_shuffle_layer(0, &o->m))                         \
    X(clt_pixel_unshuffle_layer, M, clt_pixel_unshuffle_layer(-1, &o->m))                    \
    X(clt_channel_shuffle_layer, M, clt_channel_shuffle_layer(0, &o->m))                     \
    X(clt_unfold_layer, M, clt_unfold_layer(NULL, NULL, &o->m))                              \
    X(clt_fold_layer, M, clt_fold_layer(NULL, k22, NULL, &o->m))                             \
    X(clt_bilinear_layer, M, clt_bilinear_layer(f->dev, 0, 3, 4, 1, NULL, &o->m))            \
    X(clt_bilinear_forward, T, clt_bilinear_forward(f->lin, f->f, f->f, &o->t))              \
    X(clt_embedding_bag_layer, M,                                                            \
      clt_embedding_bag_layer(f->dev, 0, 3, CLT_BAG_MEAN, NULL, 0, NULL, &o->m))             \
    X(clt_embedding_bag_layer_with_opts, M,                                                  \
      clt_embedding_bag_layer_with_opts(f->dev, 0, 3, NULL, NULL, &o->m))                    \
    X(clt_embedding_bag_forward, T, clt_embedding_bag_forward(f->lin, f->i32, NULL, NULL, &o->t)) \
    /* autograd.h: create_graph */                                                           \
    X(clt_autograd_grad_ex, T, clt_autograd_grad_ex(&f->f, 1, NULL, &f->f, 1, NULL, &o->t))  \
    /* ops.h: special functions and more pointwise math */                                   \
    X(clt_lgamma, T, clt_lgamma(NULL, &o->t))                                                \
    X(clt_digamma, T, clt_digamma(NULL, &o->t))                                              \
    X(clt_polygamma, T, clt_polygamma(-1, f->f, &o->t))                                      \
    X(clt_mvlgamma, T, clt_mvlgamma(f->bl, 2, &o->t))                                        \
    X(clt_special_i0, T, clt_special_i0(NULL, &o->t))                                        \
    X(clt_special_i0e, T, clt_special_i0e(NULL, &o->t))                                      \
    X(clt_special_i1, T, clt_special_i1(NULL, &o->t))                                        \
    X(clt_special_i1e, T, clt_special_i1e(NULL, &o->t))                                      \
    X(clt_special_ndtr, T, clt_special_ndtr(NULL, &o->t))                                    \
    X(clt_special_ndtri, T, clt_special_ndtri(NULL, &o->t))                                  \
    X(clt_special_log_ndtr, T, clt_special_log_ndtr(NULL, &o->t))                            \
    X(clt_special_entr, T, clt_special_entr(NULL, &o->t))                                    \
    X(clt_sinc, T, clt_sinc(NULL, &o->t))                                                    \
    X(clt_special_xlog1py, T, clt_special_xlog1py(f->f, f->f2, &o->t))                       \
    /* quant.h */                                                                             \
    X(clt_fake_quantize_per_tensor_affine, T,                                                 \
      clt_fake_quantize_per_tensor_affine(f->i32, 0.5, 0, 0, 255, &o->t))                     \
    X(clt_fake_quantize_per_tensor_affine_t, T,                                               \
      clt_fake_quantize_per_tensor_affine_t(f->f, f->f, f->f, 0, 255, &o->t))                 \
    X(clt_fake_quantize_per_channel_affine, T,                                                \
      clt_fake_quantize_per_channel_affine(f->f, f->f, f->i32, 5, 0, 255, &o->t))             \
    X(clt_fake_quantize_learnable_per_tensor_affine, T,                                       \
      clt_fake_quantize_learnable_per_tensor_affine(f->f, f->f, f->f, 0, 255, 1.0, &o->t))    \
    X(clt_fake_quantize_learnable_per_channel_affine, T,                                      \
      clt_fake_quantize_learnable_per_channel_affine(f->f, f->f, f->f, 7, 0, 255, 1.0, &o->t)) \
    X(clt_quantize_per_tensor, T, clt_quantize_per_tensor(f->f, 0.5, 300, CLT_QINT8, &o->t))  \
    X(clt_dequantize, T, clt_dequantize(f->f, 0.5, 0, &o->t))                                 \
    X(clt_quantize_per_channel, T,                                                            \
      clt_quantize_per_channel(f->f, f->f, f->i32, 5, CLT_QINT8, &o->t))                      \
    X(clt_dequantize_per_channel, T, clt_dequantize_per_channel(f->f, f->f, f->i32, 0, &o->t)) \
    X(clt_observer, M, clt_observer(f->dev, &bad_observer, &o->m))                            \
    X(clt_fake_quantize_layer, M, clt_fake_quantize_layer(f->dev, &bad_observer, &o->m))      \
    X(clt_observer_calculate_qparams, T | T2,                                                 \
      clt_observer_calculate_qparams(f->lin, &o->t, &o->t2))                                  \
    /* special.h */                                                                           \
    X(clt_special_gammainc, T, clt_special_gammainc(f->i32, f->i32, &o->t))                   \
    X(clt_special_gammaincc, T, clt_special_gammaincc(f->f, NULL, &o->t))                     \
    X(clt_special_erfcx, T, clt_special_erfcx(NULL, &o->t))                                   \
    X(clt_special_zeta, T, clt_special_zeta(NULL, f->f, &o->t))                               \
    X(clt_special_bessel_j0, T, clt_special_bessel_j0(NULL, &o->t))                           \
    X(clt_special_bessel_j1, T, clt_special_bessel_j1(NULL, &o->t))                           \
    X(clt_special_bessel_y0, T, clt_special_bessel_y0(NULL, &o->t))                           \
    X(clt_special_bessel_y1, T, clt_special_bessel_y1(NULL, &o->t))                           \
    X(clt_special_modified_bessel_i0, T, clt_special_modified_bessel_i0(NULL, &o->t))         \
    X(clt_special_modified_bessel_i1, T, clt_special_modified_bessel_i1(NULL, &o->t))         \
    X(clt_special_modified_bessel_k0, T, clt_special_modified_bessel_k0(NULL, &o->t))         \
    X(clt_special_modified_bessel_k1, T, clt_special_modified_bessel_k1(NULL, &o->t))         \
    X(clt_special_scaled_modified_bessel_k0, T, clt_special_scaled_modified_bessel_k0(NULL, &o->t)) \
    X(clt_special_scaled_modified_bessel_k1, T, clt_special_scaled_modified_bessel_k1(NULL, &o->t)) \
    X(clt_special_spherical_bessel_j0, T, clt_special_spherical_bessel_j0(NULL, &o->t))       \
    X(clt_special_airy_ai, T, clt_special_airy_ai(NULL, &o->t))                               \
    X(clt_special_chebyshev_polynomial_t, T, clt_special_chebyshev_polynomial_t(f->f, NULL, &o->t)) \
    X(clt_special_chebyshev_polynomial_t_scalar, T, clt_special_chebyshev_polynomial_t_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_chebyshev_polynomial_u, T, clt_special_chebyshev_polynomial_u(f->f, NULL, &o->t)) \
    X(clt_special_chebyshev_polynomial_u_scalar, T, clt_special_chebyshev_polynomial_u_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_chebyshev_polynomial_v, T, clt_special_chebyshev_polynomial_v(f->f, NULL, &o->t)) \
    X(clt_special_chebyshev_polynomial_v_scalar, T, clt_special_chebyshev_polynomial_v_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_chebyshev_polynomial_w, T, clt_special_chebyshev_polynomial_w(f->f, NULL, &o->t)) \
    X(clt_special_chebyshev_polynomial_w_scalar, T, clt_special_chebyshev_polynomial_w_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_shifted_chebyshev_polynomial_t, T, clt_special_shifted_chebyshev_polynomial_t(f->f, NULL, &o->t)) \
    X(clt_special_shifted_chebyshev_polynomial_t_scalar, T, clt_special_shifted_chebyshev_polynomial_t_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_shifted_chebyshev_polynomial_u, T, clt_special_shifted_chebyshev_polynomial_u(f->f, NULL, &o->t)) \
    X(clt_special_shifted_chebyshev_polynomial_u_scalar, T, clt_special_shifted_chebyshev_polynomial_u_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_shifted_chebyshev_polynomial_v, T, clt_special_shifted_chebyshev_polynomial_v(f->f, NULL, &o->t)) \
    X(clt_special_shifted_chebyshev_polynomial_v_scalar, T, clt_special_shifted_chebyshev_polynomial_v_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_shifted_chebyshev_polynomial_w, T, clt_special_shifted_chebyshev_polynomial_w(f->f, NULL, &o->t)) \
    X(clt_special_shifted_chebyshev_polynomial_w_scalar, T, clt_special_shifted_chebyshev_polynomial_w_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_hermite_polynomial_h, T, clt_special_hermite_polynomial_h(f->f, NULL, &o->t)) \
    X(clt_special_hermite_polynomial_h_scalar, T, clt_special_hermite_polynomial_h_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_hermite_polynomial_he, T, clt_special_hermite_polynomial_he(f->f, NULL, &o->t)) \
    X(clt_special_hermite_polynomial_he_scalar, T, clt_special_hermite_polynomial_he_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_laguerre_polynomial_l, T, clt_special_laguerre_polynomial_l(f->f, NULL, &o->t)) \
    X(clt_special_laguerre_polynomial_l_scalar, T, clt_special_laguerre_polynomial_l_scalar(NULL, 3.0, &o->t)) \
    X(clt_special_legendre_polynomial_p, T, clt_special_legendre_polynomial_p(f->f, NULL, &o->t)) \
    X(clt_special_legendre_polynomial_p_scalar, T, clt_special_legendre_polynomial_p_scalar(NULL, 3.0, &o->t)) \
    X(clt_logaddexp, T, clt_logaddexp(f->i32, f->i32, &o->t))                                \
    X(clt_logaddexp2, T, clt_logaddexp2(f->f, f->e, &o->t))                                  \
    X(clt_nextafter, T, clt_nextafter(f->bl, f->bl, &o->t))                                  \
    X(clt_ldexp, T, clt_ldexp(f->f, f->e, &o->t))                                            \
    X(clt_frexp, T | T2, clt_frexp(f->i32, &o->t, &o->t2))                                   \
    X(clt_heaviside, T, clt_heaviside(f->f, f->i32, &o->t))                                  \
    X(clt_signbit, T, clt_signbit(NULL, &o->t))                                              \
    X(clt_float_power, T, clt_float_power(f->f, f->f2, &o->t))                               \
    X(clt_gcd, T, clt_gcd(f->f, f->f, &o->t))                                                \
    X(clt_lcm, T, clt_lcm(f->bl, f->bl, &o->t))                                              \
    X(clt_bitwise_and, T, clt_bitwise_and(f->f, f->i32, &o->t))                              \
    X(clt_bitwise_or, T, clt_bitwise_or(f->i32, f->e, &o->t))                                \
    X(clt_bitwise_xor, T, clt_bitwise_xor(NULL, f->i32, &o->t))                              \
    X(clt_bitwise_not, T, clt_bitwise_not(f->f, &o->t))                                      \
    X(clt_bitwise_left_shift, T, clt_bitwise_left_shift(f->bl, f->bl, &o->t))                \
    X(clt_bitwise_right_shift, T, clt_bitwise_right_shift(f->i32, f->f, &o->t))              \
    X(clt_isclose, T, clt_isclose(f->f, f->i32, 1e-5, 1e-8, 0, &o->t))                       \
    /* reduce.h: differences and integrals */                                                \
    X(clt_diff, T, clt_diff(f->f, 1, 5, NULL, NULL, &o->t))                                  \
    X(clt_trapezoid, T, clt_trapezoid(f->bl, NULL, 1.0, 0, &o->t))                           \
    X(clt_cumulative_trapezoid, T, clt_cumulative_trapezoid(f->f, f->f, 1.0, 5, &o->t))      \
    X(clt_cov, T, clt_cov(f->bl, 1, NULL, NULL, &o->t))                                      \
    X(clt_corrcoef, T, clt_corrcoef(NULL, &o->t))                                            \
    X(clt_histc, T, clt_histc(f->i32, 10, 0, 0, &o->t))                                    \
    /* misc2: small torch functions */                                                       \
    X(clt_deg2rad, T, clt_deg2rad(NULL, &o->t))                                              \
    X(clt_rad2deg, T, clt_rad2deg(NULL, &o->t))                                              \
    X(clt_sgn, T, clt_sgn(NULL, &o->t))                                                      \
    X(clt_fix, T, clt_fix(f->bl, &o->t))                                                     \
    X(clt_isposinf, T, clt_isposinf(NULL, &o->t))                                            \
    X(clt_isneginf, T, clt_isneginf(NULL, &o->t))                                            \
    X(clt_isreal, T, clt_isreal(NULL, &o->t))                                                \
    X(clt_fmax, T, clt_fmax(f->f, f->f2, &o->t))                                             \
    X(clt_fmin, T, clt_fmin(f->f, f->e, &o->t))                                              \
    X(clt_clamp_min, T, clt_clamp_min(NULL, 0.0, &o->t))                                     \
    X(clt_clamp_max, T, clt_clamp_max(NULL, 0.0, &o->t))                                     \
    X(clt_clamp_tensor, T, clt_clamp_tensor(f->f, NULL, NULL, &o->t))                        \
    X(clt_clamp_min_tensor, T, clt_clamp_min_tensor(f->f, NULL, &o->t))                      \
    X(clt_clamp_max_tensor, T, clt_clamp_max_tensor(NULL, f->f, &o->t))                      \
    X(clt_segment_reduce, T, clt_segment_reduce(f->f, "sum", NULL, NULL, 0, 0, NULL, &o->t)) \
    X(clt_fliplr, T, clt_fliplr(f->e, &o->t))                                                \
    X(clt_flipud, T, clt_flipud(NULL, &o->t))                                                \
    X(clt_diagflat, T, clt_diagflat(NULL, 0, &o->t))                                         \
    X(clt_broadcast_to, T, clt_broadcast_to(f->f, 1, sh5, &o->t))                            \
    X(clt_broadcast_tensors, LIST | N, clt_broadcast_tensors(f->cpair, 2, &o->list, &o->n))  \
    X(clt_ger, T, clt_ger(f->f, f->f, &o->t))                                                \
    X(clt_inner, T, clt_inner(f->f, f->e, &o->t))                                            \
    X(clt_addr, T, clt_addr(f->f, f->e, f->f, 1.0, 1.0, &o->t))                              \
    X(clt_chain_matmul, T, clt_chain_matmul(f->cpair, 0, &o->t))                             \
    X(clt_matrix_power, T, clt_matrix_power(f->f, 2, &o->t))                                 \
    X(clt_logdet, T, clt_logdet(f->f, &o->t))                                                \
    X(clt_frobenius_norm, T, clt_frobenius_norm(f->i32, NULL, 0, 0, &o->t))                  \
    X(clt_nuclear_norm, T, clt_nuclear_norm(f->e, NULL, 0, &o->t))                           \
    X(clt_vander, T, clt_vander(f->f, NULL, 0, &o->t))                                       \
    X(clt_linalg_vander, T, clt_linalg_vander(f->bl, NULL, &o->t))                           \
    X(clt_renorm, T, clt_renorm(f->e, 2.0, 0, 1.0, &o->t))                                   \
    X(clt_take_along_dim, T, clt_take_along_dim(f->f, f->i32, NULL, &o->t))                  \
    X(clt_index_reduce, T, clt_index_reduce(f->f, 0, f->i32, f->f, "sum", 1, &o->t))         \
    X(clt_gradient, LIST | N, clt_gradient(f->f, NULL, 0, NULL, 0, 3, &o->list, &o->n))      \
    X(clt_gradient_coords, LIST | N, clt_gradient_coords(f->f, f->cpair, 1, NULL, 0, 1, &o->list, &o->n))\
    X(clt_histogram, T | T2, clt_histogram(f->i32, 3, NULL, NULL, NULL, 0, &o->t, &o->t2))   \
    X(clt_histogramdd, T | LIST | N, clt_histogramdd(f->f, NULL, NULL, 3, NULL, NULL, 0, &o->t, &o->list, &o->n))\
    X(clt_scalar_tensor, T, clt_scalar_tensor(f->dev, CLT_DTYPE_COUNT, 1.0, &o->t))          \
    X(clt_empty_strided, T, clt_empty_strided(f->dev, CLT_FLOAT32, 1, sh5, neg1, &o->t))     \
    X(clt_hann_window, T, clt_hann_window(f->dev, CLT_INT32, 5, 1, &o->t))                   \
    X(clt_hamming_window, T, clt_hamming_window(f->dev, CLT_FLOAT32, -1, 1, 0.54, 0.46, &o->t))\
    X(clt_blackman_window, T, clt_blackman_window(f->dev, CLT_BOOL, 5, 0, &o->t))            \
    X(clt_bartlett_window, T, clt_bartlett_window(f->dev, CLT_FLOAT32, -3, 0, &o->t))        \
    X(clt_kaiser_window, T, clt_kaiser_window(f->dev, CLT_INT64, 5, 1, 12.0, &o->t))         \
    /* distributions.h */                                                                    \
    /* transforms.h */                                                                        \
    X(clt_exp_transform, TF | NEVER_FAILS, clt_exp_transform(&o->tf))                        \
    X(clt_sigmoid_transform, TF | NEVER_FAILS, clt_sigmoid_transform(&o->tf))                \
    X(clt_tanh_transform, TF | NEVER_FAILS, clt_tanh_transform(&o->tf))                      \
    X(clt_abs_transform, TF | NEVER_FAILS, clt_abs_transform(&o->tf))                        \
    X(clt_softplus_transform, TF | NEVER_FAILS, clt_softplus_transform(&o->tf))              \
    X(clt_softmax_transform, TF | NEVER_FAILS, clt_softmax_transform(&o->tf))                \
    X(clt_stick_breaking_transform, TF | NEVER_FAILS, clt_stick_breaking_transform(&o->tf))  \
    X(clt_lower_cholesky_transform, TF | NEVER_FAILS, clt_lower_cholesky_transform(&o->tf))  \
    X(clt_corr_cholesky_transform, TF | NEVER_FAILS, clt_corr_cholesky_transform(&o->tf))    \
    X(clt_power_transform, TF, clt_power_transform(f->i32, &o->tf))                          \
    X(clt_affine_transform, TF, clt_affine_transform(f->f, f->f2, 0, &o->tf))                \
    X(clt_compose_transform, TF, clt_compose_transform(NULL, 1, &o->tf))                     \
    X(clt_independent_transform, TF, clt_independent_transform(f->tf, -1, &o->tf))           \
    X(clt_reshape_transform, TF, clt_reshape_transform(1, sh5, 2, sh23, &o->tf))             \
    X(clt_cat_transform, TF, clt_cat_transform(NULL, 0, 0, NULL, &o->tf))                    \
    X(clt_stack_transform, TF, clt_stack_transform(NULL, 0, 0, &o->tf))                      \
    X(clt_cumulative_distribution_transform, TF,                                             \
      clt_cumulative_distribution_transform(NULL, &o->tf))                                   \
    X(clt_transform_inv, TF, clt_transform_inv(NULL, &o->tf))                                \
    X(clt_transform_forward, T, clt_transform_forward(f->tf, f->i32, &o->t))                 \
    X(clt_transform_inverse, T, clt_transform_inverse(f->tf, f->bl, &o->t))                  \
    X(clt_transform_log_abs_det_jacobian, T,                                                 \
      clt_transform_log_abs_det_jacobian(f->tf, f->f, f->f2, &o->t))                         \
    X(clt_transform_sign, T, clt_transform_sign(f->tf, &sign_got, &o->t))                    \
    X(clt_transformed_dist, DIST, clt_transformed_dist(f->dist, NULL, 1, 1, &o->dist))       \
    X(clt_logistic_normal_dist, DIST, clt_logistic_normal_dist(f->f, f->f2, 1, &o->dist))    \
    X(clt_normal_dist, DIST, clt_normal_dist(f->f, f->f2, 1, &o->dist))                      \
    X(clt_uniform_dist, DIST, clt_uniform_dist(f->f, f->f, 1, &o->dist))                     \
    X(clt_bernoulli_dist, DIST, clt_bernoulli_dist(f->f, f->f, 1, &o->dist))                 \
    X(clt_categorical_dist, DIST, clt_categorical_dist(f->i32, NULL, 1, &o->dist))           \
    X(clt_one_hot_categorical_dist, DIST, clt_one_hot_categorical_dist(NULL, NULL, 1, &o->dist)) \
    X(clt_exponential_dist, DIST, clt_exponential_dist(f->bl, 1, &o->dist))                  \
    X(clt_laplace_dist, DIST, clt_laplace_dist(f->f, f->e, 1, &o->dist))                     \
    X(clt_multivariate_normal_dist, DIST,                                                    \
      clt_multivariate_normal_dist(f->f, f->f, NULL, 1, &o->dist))                           \
    X(clt_independent_dist, DIST, clt_independent_dist(f->dist, 3, 1, &o->dist))             \
    X(clt_mixture_same_family_dist, DIST,                                                    \
      clt_mixture_same_family_dist(f->dist, f->dist, 1, &o->dist))                           \
    X(clt_lowrank_multivariate_normal_dist, DIST,                                            \
      clt_lowrank_multivariate_normal_dist(f->f, f->f, f->f, 1, &o->dist))                   \
    X(clt_distribution_covariance_matrix, T, clt_distribution_covariance_matrix(f->dist, &o->t)) \
    X(clt_distribution_precision_matrix, T, clt_distribution_precision_matrix(f->dist, &o->t)) \
    X(clt_distribution_scale_tril, T, clt_distribution_scale_tril(f->dist, &o->t))            \
    X(clt_gamma_dist, DIST, clt_gamma_dist(f->f, f->f2, 1, &o->dist))                            \
    X(clt_chi2_dist, DIST, clt_chi2_dist(f->i32, 1, &o->dist))                                   \
    X(clt_beta_dist, DIST, clt_beta_dist(f->f, f->e, 1, &o->dist))                               \
    X(clt_dirichlet_dist, DIST, clt_dirichlet_dist(f->bl, 1, &o->dist))                          \
    X(clt_student_t_dist, DIST, clt_student_t_dist(f->f, f->f2, NULL, 1, &o->dist))              \
    X(clt_fisher_snedecor_dist, DIST, clt_fisher_snedecor_dist(f->f2, f->f, 1, &o->dist))        \
    X(clt_log_normal_dist, DIST, clt_log_normal_dist(f->f, f->f2, 1, &o->dist))                  \
    X(clt_gumbel_dist, DIST, clt_gumbel_dist(f->f, f->e, 1, &o->dist))                           \
    X(clt_cauchy_dist, DIST, clt_cauchy_dist(f->f, f->bl, 1, &o->dist))                          \
    X(clt_half_normal_dist, DIST, clt_half_normal_dist(f->i32, 1, &o->dist))                     \
    X(clt_half_cauchy_dist, DIST, clt_half_cauchy_dist(f->bl, 1, &o->dist))                      \
    X(clt_pareto_dist, DIST, clt_pareto_dist(f->f2, f->f, 1, &o->dist))                          \
    X(clt_weibull_dist, DIST, clt_weibull_dist(f->e, f->f, 1, &o->dist))                         \
    X(clt_poisson_dist, DIST, clt_poisson_dist(f->i32, 1, &o->dist))                             \
    X(clt_geometric_dist, DIST, clt_geometric_dist(NULL, NULL, 1, &o->dist))                     \
    X(clt_kumaraswamy_dist, DIST, clt_kumaraswamy_dist(f->f2, f->f, 1, &o->dist))                \
    X(clt_negative_binomial_dist, DIST,                                                          \
      clt_negative_binomial_dist(f->f, NULL, NULL, 1, &o->dist))                                 \
    X(clt_relaxed_bernoulli_dist, DIST,                                                          \
      clt_relaxed_bernoulli_dist(f->i32, f->f, NULL, 1, &o->dist))                               \
    X(clt_binomial_dist, DIST, clt_binomial_dist(f->f, NULL, NULL, 1, &o->dist))                 \
    X(clt_multinomial_dist, DIST, clt_multinomial_dist(-1, f->f, NULL, 1, &o->dist))             \
    X(clt_continuous_bernoulli_dist, DIST,                                                       \
      clt_continuous_bernoulli_dist(f->i32, NULL, 1, &o->dist))                                  \
    X(clt_von_mises_dist, DIST, clt_von_mises_dist(f->f, NULL, 1, &o->dist))                     \
    X(clt_relaxed_one_hot_categorical_dist, DIST,                                                \
      clt_relaxed_one_hot_categorical_dist(f->i32, f->f, NULL, 1, &o->dist))                     \
    X(clt_distribution_sample, T, clt_distribution_sample(f->dist, f->gen, -1, sh23, &o->t)) \
    X(clt_distribution_rsample, T,                                                           \
      clt_distribution_rsample(f->dist, f->gen, CLT_MAX_DIMS, sh23, &o->t))                  \
    X(clt_distribution_log_prob, T, clt_distribution_log_prob(f->dist, f->e, &o->t))         \
    X(clt_distribution_cdf, T, clt_distribution_cdf(f->dist, f->f2, &o->t))                  \
    X(clt_distribution_icdf, T, clt_distribution_icdf(f->dist, NULL, &o->t))                 \
    X(clt_distribution_entropy, T, clt_distribution_entropy(NULL, &o->t))                    \
    X(clt_distribution_mean, T, clt_distribution_mean(NULL, &o->t))                          \
    X(clt_distribution_variance, T, clt_distribution_variance(NULL, &o->t))                  \
    X(clt_distribution_stddev, T, clt_distribution_stddev(NULL, &o->t))                      \
    X(clt_kl_divergence, T, clt_kl_divergence(f->dist, NULL, &o->t))                         \
    /* sparse.h */                                                                           \
    X(clt_sparse_coo_tensor, SP, clt_sparse_coo_tensor(f->f, f->f, sh23, 2, 1, &o->sp))      \
    X(clt_sparse_indices, T, clt_sparse_indices(NULL, &o->t))                                \
    X(clt_sparse_values, T, clt_sparse_values(NULL, &o->t))                                  \
    X(clt_sparse_coalesce, SP, clt_sparse_coalesce(NULL, &o->sp))                            \
    /* f has no gradient */                                                                  \
    X(clt_grad_sparse, SP, clt_grad_sparse(f->f, &o->sp))                                    \
    X(clt_sparse_to_dense, T, clt_sparse_to_dense(NULL, &o->t))                              \
    X(clt_tensor_to_sparse, SP, clt_tensor_to_sparse(f->f, 5, &o->sp))                       \
    X(clt_sparse_to, SP, clt_sparse_to(f->sp, NULL, &o->sp))                                 \
    X(clt_sparse_mm, T, clt_sparse_mm(f->sp, f->f, &o->t))                                   \
    X(clt_sparse_addmm, T, clt_sparse_addmm(f->f, f->sp, f->f2, 1, 1, &o->t))                \
    X(clt_sparse_sum, T, clt_sparse_sum(NULL, &o->t))                                        \
    X(clt_sparse_sum_dims, T | SP, clt_sparse_sum_dims(f->sp, dim7, 1, &o->t, &o->sp))       \
    X(clt_sparse_add, SP, clt_sparse_add(f->sp, NULL, &o->sp))                               \
    X(clt_sparse_add_dense, T, clt_sparse_add_dense(f->e, f->sp, &o->t))                     \
    X(clt_sparse_mul_scalar, SP, clt_sparse_mul_scalar(NULL, 2, &o->sp))                     \
    X(clt_sparse_transpose, SP, clt_sparse_transpose(f->sp, 0, 5, &o->sp))                   \
    X(clt_sparse_softmax, SP, clt_sparse_softmax(f->sp, -1, &o->sp))                         \
    X(clt_sparse_log_softmax, SP, clt_sparse_log_softmax(NULL, 0, &o->sp))                   \
    X(clt_sparse_csr_tensor, SP, clt_sparse_csr_tensor(f->f, f->f, f->f, NULL, 1, &o->sp))   \
    X(clt_sparse_csc_tensor, SP, clt_sparse_csc_tensor(f->i32, f->i32, f->f, NULL, 1, &o->sp)) \
    X(clt_sparse_crow_indices, T, clt_sparse_crow_indices(f->sp, &o->t))                     \
    X(clt_sparse_col_indices, T, clt_sparse_col_indices(f->sp, &o->t))                       \
    X(clt_sparse_ccol_indices, T, clt_sparse_ccol_indices(f->sp, &o->t))                     \
    X(clt_sparse_row_indices, T, clt_sparse_row_indices(f->sp, &o->t))                       \
    X(clt_tensor_to_sparse_csr, SP, clt_tensor_to_sparse_csr(f->e, &o->sp))                  \
    X(clt_tensor_to_sparse_csc, SP, clt_tensor_to_sparse_csc(f->e, &o->sp))                  \
    X(clt_sparse_bsr_tensor, SP, clt_sparse_bsr_tensor(f->f, f->f, f->f, NULL, 1, &o->sp))   \
    X(clt_sparse_bsc_tensor, SP, clt_sparse_bsc_tensor(f->i32, f->i32, f->f, NULL, 1, &o->sp)) \
    X(clt_tensor_to_sparse_bsr, SP, clt_tensor_to_sparse_bsr(f->e, (int64_t[]){1, 1}, &o->sp)) \
    X(clt_tensor_to_sparse_bsc, SP, clt_tensor_to_sparse_bsc(f->e, NULL, &o->sp))             \
    X(clt_sparse_to_sparse_csr, SP, clt_sparse_to_sparse_csr(NULL, &o->sp))                  \
    X(clt_sparse_to_sparse_csc, SP, clt_sparse_to_sparse_csc(NULL, &o->sp))                  \
    X(clt_sparse_to_sparse_coo, SP, clt_sparse_to_sparse_coo(NULL, &o->sp))                  \
    X(clt_sparse_mv, T, clt_sparse_mv(f->sp, f->f, &o->t))                                   \
    X(clt_sparse_sampled_addmm, SP, clt_sparse_sampled_addmm(f->sp, f->f, f->f, 1, 1, &o->sp)) \
    X(clt_tensor_sparse_mask, SP, clt_tensor_sparse_mask(f->f2, f->sp, &o->sp))              \
    X(clt_sparse_hspmm, SP, clt_sparse_hspmm(f->sp, f->e, &o->sp))                           \
    X(clt_multivariate_normal_precision_dist, DIST,                                          \
      clt_multivariate_normal_precision_dist(f->f, f->f, 1, &o->dist))                       \
    X(clt_one_hot_categorical_straight_through_dist, DIST,                                   \
      clt_one_hot_categorical_straight_through_dist(NULL, NULL, 1, &o->dist))                \
    X(clt_wishart_dist, DIST, clt_wishart_dist(f->f, NULL, NULL, NULL, 1, &o->dist))          \
    X(clt_lkj_cholesky_dist, DIST, clt_lkj_cholesky_dist(1, f->f, 1, &o->dist))              \
    X(clt_distribution_mode, T, clt_distribution_mode(NULL, &o->t))                          \
    X(clt_distribution_perplexity, T, clt_distribution_perplexity(NULL, &o->t))              \
    X(clt_distribution_enumerate_support, T,                                                 \
      clt_distribution_enumerate_support(NULL, 1, &o->t))                                    \
    X(clt_distribution_expand, DIST, clt_distribution_expand(f->dist, NULL, 1, &o->dist))    \
    /* optim.h: GradScaler and swa_utils */                                                  \
    X(clt_grad_scaler_new, GS, clt_grad_scaler_new(&bad_scaler, &o->gs))                     \
    X(clt_grad_scaler_scale, T, clt_grad_scaler_scale(NULL, f->f, &o->t))                    \
    X(clt_swa_lr, SCHED, clt_swa_lr(f->opt, swa_rate, 1, -1, NULL, &o->sched))               \
    X(clt_averaged_model_new, AVG, clt_averaged_model_new(NULL, NULL, NULL, NULL, 0, &o->am)) \
    X(clt_averaged_model_ema, AVG, clt_averaged_model_ema(f->lin, NULL, 2.0, 0, &o->am))     \
    X(clt_averaged_model_state, NAMED | N, clt_averaged_model_state(NULL, &o->named, &o->n)) \
    X(clt_interpolate_nd, T,                                                                 \
      clt_interpolate_nd(f->f, k22, NULL, CLT_INTERP_BICUBIC, 0, 0, &o->t))                  \
    X(clt_grid_sample, T, clt_grid_sample(f->f, f->f, CLT_GRID_BILINEAR, 0, 0, &o->t))       \
    X(clt_affine_grid, T, clt_affine_grid(f->f, 3, sh5, 0, &o->t))                           \
    X(clt_upsample_nd_layer, M,                                                              \
      clt_upsample_nd_layer(4, NULL, NULL, CLT_INTERP_NEAREST, 0, 0, &o->m))                 \
    X(clt_upsampling_nearest2d_layer, M, clt_upsampling_nearest2d_layer(NULL, NULL, &o->m))  \
    X(clt_upsampling_bilinear2d_layer, M, clt_upsampling_bilinear2d_layer(NULL, NULL, &o->m)) \
    /* autograd.h: custom functions, autograd.functional */                                  \
    X(clt_function_apply, LIST | N, clt_function_apply(&contract_fn, NULL, f->pair, 1, &o->list, &o->n)) \
    X(clt_function_saved_tensor, T, clt_function_saved_tensor(NULL, 0, (const clt_tensor **)&o->t)) \
    X(clt_jacobian, LIST | N, clt_jacobian(contract_ckpt, NULL, f->pair, 1, NULL, &o->list, &o->n)) \
    X(clt_hessian, LIST, clt_hessian(contract_ckpt, NULL, f->pair, 1, NULL, &o->list))        \
    X(clt_vjp, LIST | N | LIST2,                                                             \
      clt_vjp(contract_ckpt, NULL, f->pair, 1, NULL, 0, NULL, &o->list, &o->n, &o->list2))   \
    X(clt_jvp, LIST | N | LIST2,                                                             \
      clt_jvp(contract_ckpt, NULL, f->pair, 1, NULL, NULL, &o->list, &o->n, &o->list2))      \
    X(clt_vhp, T | LIST, clt_vhp(contract_ckpt, NULL, f->pair, 1, NULL, NULL, &o->t, &o->list)) \
    X(clt_hvp, T | LIST, clt_hvp(contract_ckpt, NULL, f->pair, 1, NULL, NULL, &o->t, &o->list)) \
    X(clt_unflatten, T, clt_unflatten(f->f, 1, sh5, 1, &o->t))                               \
    X(clt_movedim, T, clt_movedim(f->f, perm00, perm00, 2, &o->t))                           \
    X(clt_swapaxes, T, clt_swapaxes(f->f, 0, 5, &o->t))                                      \
    X(clt_ravel, T, clt_ravel(NULL, &o->t))                                                  \
    X(clt_view_as, T, clt_view_as(f->f, f->e, &o->t))                                        \
    X(clt_reshape_as, T, clt_reshape_as(f->f, f->e, &o->t))                                  \
    X(clt_expand_as, T, clt_expand_as(f->f, f->e, &o->t))                                    \
    X(clt_as_strided, T, clt_as_strided(f->f, 2, sh53, sh53, NULL, &o->t))                   \
    X(clt_atleast_1d, T, clt_atleast_1d(NULL, &o->t))                                        \
    X(clt_atleast_2d, T, clt_atleast_2d(NULL, &o->t))                                        \
    X(clt_atleast_3d, T, clt_atleast_3d(NULL, &o->t))                                        \
    X(clt_tensor_split, LIST | N, clt_tensor_split(f->f, 0, 0, &o->list, &o->n))             \
    X(clt_tensor_split_indices, LIST | N, clt_tensor_split_indices(f->f, sh5, 1, 5, &o->list, &o->n)) \
    X(clt_hsplit, LIST | N, clt_hsplit(f->f, 2, &o->list, &o->n))                            \
    X(clt_vsplit, LIST | N, clt_vsplit(f->f, 3, &o->list, &o->n))                            \
    X(clt_dsplit, LIST | N, clt_dsplit(f->f, 1, &o->list, &o->n))                            \
    X(clt_hsplit_indices, LIST | N, clt_hsplit_indices(f->f, NULL, 1, &o->list, &o->n))      \
    X(clt_vsplit_indices, LIST | N, clt_vsplit_indices(f->e, sh5, 1, &o->list, &o->n))       \
    X(clt_dsplit_indices, LIST | N, clt_dsplit_indices(f->f, sh5, 1, &o->list, &o->n))       \
    X(clt_hstack, T, clt_hstack(f->cpair, 2, &o->t))                                         \
    X(clt_vstack, T, clt_vstack(f->cpair, 0, &o->t))                                         \
    X(clt_row_stack, T, clt_row_stack(f->cpair, 0, &o->t))                                   \
    X(clt_dstack, T, clt_dstack(f->cpair, 2, &o->t))                                         \
    X(clt_column_stack, T, clt_column_stack(f->cpair, 2, &o->t))                             \
    X(clt_rot90, T, clt_rot90(f->f, 1, 0, 0, &o->t))                                         \
    X(clt_cartesian_prod, T, clt_cartesian_prod(f->cpair, 2, &o->t))                         \
    X(clt_combinations, T, clt_combinations(f->e, -1, 0, &o->t))                             \
    X(clt_pdist, T, clt_pdist(f->i32, 2.0, &o->t))                                           \
    X(clt_narrow_copy, T, clt_narrow_copy(f->f, 0, 0, 9, &o->t))                             \
    X(clt_select_scatter, T, clt_select_scatter(f->f, f->e, 0, 0, &o->t))                    \
    X(clt_slice_scatter, T, clt_slice_scatter(f->f, f->f, 0, 0, 2, 0, &o->t))                \
    X(clt_diagonal_scatter, T, clt_diagonal_scatter(f->f, f->f2, 0, 0, 1, &o->t))         \
    X(clt_linalg_solve_triangular, T, clt_linalg_solve_triangular(f->f, f->f, 0, 1, 0, &o->t)) \
    X(clt_linalg_lu_factor, T | T2, clt_linalg_lu_factor(f->i32, &o->t, &o->t2))             \
    X(clt_linalg_lu_factor_ex, T | T2 | T3,                                                  \
      clt_linalg_lu_factor_ex(f->e, &o->t, &o->t2, &o->t3))                                  \
    X(clt_linalg_lu, T | T2 | T3, clt_linalg_lu(f->bl, &o->t, &o->t2, &o->t3))               \
    X(clt_linalg_ldl_factor, T | T2, clt_linalg_ldl_factor(f->i32, 0, &o->t, &o->t2))         \
    X(clt_linalg_ldl_factor_ex, T | T2 | T3,                                                 \
      clt_linalg_ldl_factor_ex(f->e, 0, &o->t, &o->t2, &o->t3))                              \
    X(clt_linalg_ldl_solve, T, clt_linalg_ldl_solve(f->f, f->i32, f->f, 0, &o->t))           \
    X(clt_geqrf, T | T2, clt_geqrf(f->e, &o->t, &o->t2))                                     \
    X(clt_orgqr, T, clt_orgqr(f->f, f->f, &o->t))                                            \
    X(clt_ormqr, T, clt_ormqr(f->f, f->f, f->f, 1, 0, &o->t))                                \
    X(clt_linalg_lu_solve, T, clt_linalg_lu_solve(f->f, f->i32, f->f, 1, 0, &o->t))          \
    X(clt_linalg_cholesky_ex, T | T2, clt_linalg_cholesky_ex(f->f, 0, &o->t, &o->t2))        \
    X(clt_linalg_inv_ex, T | T2, clt_linalg_inv_ex(f->i32, &o->t, &o->t2))                   \
    X(clt_linalg_solve_ex, T | T2, clt_linalg_solve_ex(f->f, f->f2, &o->t, &o->t2))          \
    X(clt_cholesky_solve, T, clt_cholesky_solve(f->f, f->f, 0, &o->t))                       \
    X(clt_cholesky_inverse, T, clt_cholesky_inverse(f->e, 0, &o->t))                         \
    X(clt_linalg_matrix_exp, T, clt_linalg_matrix_exp(f->f, &o->t))                          \
    X(clt_linalg_tensorinv, T, clt_linalg_tensorinv(f->f, 1, &o->t))                         \
    X(clt_linalg_tensorsolve, T, clt_linalg_tensorsolve(f->f, f->f, dim7, 1, &o->t))         \
    X(clt_linalg_cond_ord, T, clt_linalg_cond_ord(f->f, "fro", &o->t))                       \
    X(clt_linalg_lstsq_ex, T | T2 | T3 | T4,                                                 \
      clt_linalg_lstsq_ex(f->f, f->f2, NULL, NULL, &o->t, &o->t2, &o->t3, &o->t4)) \
    /* nn.h: module hooks and nn.utils */                                                    \
    X(clt_module_register_forward_pre_hook, HOOK,                                            \
      clt_module_register_forward_pre_hook(f->lin, NULL, NULL, &o->hook))                    \
    X(clt_module_register_forward_hook, HOOK,                                                \
      clt_module_register_forward_hook(f->lin, NULL, NULL, &o->hook))                        \
    X(clt_module_register_full_backward_hook, HOOK,                                          \
      clt_module_register_full_backward_hook(NULL, NULL, NULL, &o->hook))                    \
    X(clt_parameters_to_vector, T, clt_parameters_to_vector(f->pair, 0, &o->t))             \
    X(clt_clip_grad_norm_ex, T, clt_clip_grad_norm_ex(f->pair, 2, -1.0, 2.0, 1, 0, &o->t))    \
    X(clt_register_module_forward_pre_hook, HOOK,                                            \
      clt_register_module_forward_pre_hook(NULL, NULL, &o->hook))                            \
    X(clt_register_module_forward_hook, HOOK,                                                \
      clt_register_module_forward_hook(NULL, NULL, &o->hook))                                \
    X(clt_register_module_full_backward_hook, HOOK,                                          \
      clt_register_module_full_backward_hook(NULL, NULL, &o->hook))

static int small_int[1];

/* hooks: a hook, a post-accumulate hook and a checkpointed function that
 * fails (the rows' calls fail before them). */
static clt_status contract_hook(void *user, const clt_tensor *g, clt_tensor **r)
{
    (void)user;
    (void)g;
    (void)r;
    return CLT_OK;
}
static clt_status contract_post_hook(void *user, clt_tensor *t)
{
    (void)user;
    (void)t;
    return CLT_OK;
}
static clt_status contract_ckpt(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                                size_t *m)
{
    (void)user;
    (void)n;
    *m = 1;
    return clt_reshape(in[0], 1, sh5, &out[0]);
}

/* A custom function without callbacks: clt_function_apply refuses it. */
static const clt_function contract_fn = {"Contract", NULL, NULL, NULL, 0};

#define DEFINE_CASE(fn, slots, call)                                                         \
    static clt_status case_##fn(const fx *f, outs *o)                                        \
    {                                                                                        \
        (void)f;                                                                             \
        (void)o;                                                                             \
        return call;                                                                         \
    }
ROWS(DEFINE_CASE)

typedef struct row {
    const char *name;
    int slots;
    clt_status (*call)(const fx *f, outs *o);
} row;

#define ROW_ENTRY(fn, slots, call) {#fn, slots, case_##fn},
static const row rows[] = {ROWS(ROW_ENTRY)};

/* A valid address that no function hands out. */
static char sentinel_byte;
#define SENTINEL ((void *)&sentinel_byte)
#define SENTINEL_N ((size_t)0x5eed)

static void fill_sentinels(outs *o)
{
    o->t = o->t2 = o->t3 = SENTINEL;
    o->t4 = SENTINEL;
    o->list = SENTINEL;
    o->m = SENTINEL;
    o->opt = SENTINEL;
    o->sched = SENTINEL;
    o->dl = SENTINEL;
    o->d = SENTINEL;
    o->ev = SENTINEL;
    o->named = SENTINEL;
    o->dlp = SENTINEL;
    o->s = SENTINEL;
    o->mem = SENTINEL;
    o->arr = SENTINEL;
    o->pg = SENTINEL;
    o->n = SENTINEL_N;
    o->hook = SENTINEL;
    o->ddp = SENTINEL;
    o->ids = SENTINEL;
    o->dist = SENTINEL;
    o->gs = SENTINEL;
    o->am = SENTINEL;
    o->list2 = SENTINEL;
    o->sp = SENTINEL;
    o->tf = SENTINEL;
    o->ck = SENTINEL;
    o->cs = SENTINEL;
}

/* Each slot the row names must be NULL (0 for a count), each other one
 * untouched. */
static void check_slots(const row *r, outs *o, const char *pass)
{
    if (r->slots & REPORT) {
        cr_expect(o->s != NULL && o->s != SENTINEL && o->s[0] != '\0',
                  "%s (%s): no report after the failure", r->name, pass);
        if (o->s != SENTINEL)
            clt_free(o->s);
        o->s = SENTINEL;
    }
    const struct {
        int bit;
        const void *p;
        const char *name;
    } slots[] = {{T, o->t, "out"},          {T2, o->t2, "second out"}, {T3, o->t3, "third out"}, {LIST, o->list, "list"},
                 {M, o->m, "module"},        {OPT, o->opt, "optimizer"}, {SCHED, o->sched, "scheduler"},
                 {DL, o->dl, "loader"},      {D, o->d, "device"},       {EV, o->ev, "event"},
                 {NAMED, o->named, "named"}, {DLP, o->dlp, "dlpack"},   {S, o->s, "string"},
                 {MEM, o->mem, "cl_mem"},     {ARR, o->arr, "host array"},
                 {PG, o->pg, "process group"},
                 {HOOK, o->hook, "hook"},
                 {DDP, o->ddp, "ddp"},
                 {IDS, o->ids, "index array"},
                 {DIST, o->dist, "distribution"},
                 {GS, o->gs, "grad scaler"},
                 {AVG, o->am, "averaged model"},
                 {LIST2, o->list2, "second list"},
                 {T4, o->t4, "fourth out"},
                 {SP, o->sp, "sparse tensor"},
                 {TF, o->tf, "transform"},
                 {CK, o->ck, "checkpoint"},
                 {CS, o->cs, "borrowed string"}};
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        const void *want = (r->slots & slots[i].bit) ? NULL : SENTINEL;
        cr_expect_eq(slots[i].p, want, "%s (%s): %s is %p after the failure, want %p", r->name,
                     pass, slots[i].name, slots[i].p, want);
    }
    size_t want_n = (r->slots & N) ? 0 : SENTINEL_N;
    cr_expect_eq(o->n, want_n, "%s (%s): count is %zu, want %zu", r->name, pass, o->n, want_n);
}

static void run_row(const row *r, const fx *f, const char *pass)
{
    outs o;
    fill_sentinels(&o);
    clt_status st = r->call(f, &o);
    cr_expect_neq(st, CLT_OK, "%s (%s) succeeded where it must fail", r->name, pass);
    if (st == CLT_OK)
        return; /* the slots hold results now: leaked rather than misread */
    cr_expect(clt_last_error()[0] != '\0', "%s (%s): %s without a message", r->name, pass,
              clt_status_name(st));
    check_slots(r, &o, pass);
}

Test(contract, failures_set_every_out_to_null)
{
    fx f = {0};
    f.dev = get_device("cpu:0");
    f.dev2 = second_device(f.dev);
    CHECK(clt_tensor_from_host(f.dev, CLT_FLOAT32, 2, sh23, host6, &f.f));
    CHECK(clt_tensor_from_host(f.dev2, CLT_FLOAT32, 2, sh23, host6, &f.f2));
    CHECK(clt_ones(f.dev, CLT_INT32, 2, sh23, &f.i32));
    CHECK(clt_empty(f.dev, CLT_FLOAT32, 1, (int64_t[]){0}, &f.e));
    CHECK(clt_ones(f.dev, CLT_BOOL, 2, sh23, &f.bl));
    CHECK(clt_generator_new(1, &f.gen));
    CHECK(clt_linear(f.dev, 5, 4, 1, f.gen, &f.lin));
    clt_tensor *w = NULL;
    CHECK(clt_ones(f.dev, CLT_FLOAT32, 1, (int64_t[]){3}, &w));
    CHECK(clt_set_requires_grad(w, 1));
    clt_sgd_opts sgd = {0.1, 0, 0, 0, 0};
    CHECK(clt_sgd(&w, 1, &sgd, &f.opt));
    f.pair[0] = f.f;
    f.pair[1] = f.f2;
    f.cpair[0] = f.f;
    f.cpair[1] = f.f2;
    f.mods[0] = NULL;
    CHECK(clt_normal_dist(f.f, f.f, 1, &f.dist));
    CHECK(clt_tensor_to_sparse(f.f, 2, &f.sp));
    CHECK(clt_stick_breaking_transform(&f.tf));

    /* With NULL handles; the arrays and values stay. */
    fx z = {0};
    z.mods[0] = NULL;

    size_t called = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].slots & NEVER_FAILS)
            continue;
        run_row(&rows[i], &f, "operands");
        run_row(&rows[i], &z, "NULL handles");
        called++;
    }
    cr_assert_gt(called, 150, "only %zu rows ran", called);

    clt_optimizer_free(f.opt);
    clt_tensor_free(w);
    clt_module_free(f.lin);
    clt_generator_free(f.gen);
    clt_tensor_free(f.f);
    clt_tensor_free(f.f2);
    clt_tensor_free(f.i32);
    clt_tensor_free(f.e);
    clt_tensor_free(f.bl);
    clt_distribution_free(f.dist);
    clt_sparse_free(f.sp);
    clt_transform_free(f.tf);
}
