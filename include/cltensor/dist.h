/* cltensor/dist.h: several processes training one model, like
 * torch.distributed with the gloo backend and DistributedDataParallel, over
 * TCP sockets (POSIX; loopback works without a network).
 *
 * A process group joins world_size processes, one per rank.  Rank 0 listens
 * on the master address and port; the others connect to it (retrying until
 * the timeout, as torch's TCPStore clients do), and the group then wires
 * itself into a ring: each rank holds one connection to the next rank and
 * one from the previous.  Collectives run on that ring.
 *
 * Tensors may live on any device: a collective reads its tensor into host
 * memory (clt_tensor_read), communicates, and writes the result back
 * (clt_tensor_write), so it waits for the device.  Before the data, every
 * collective exchanges a small header (which collective, dtype, shape,
 * reduce op or source rank) among all ranks: a rank whose call differs
 * makes the call fail on every rank, with a message naming the ranks and
 * what differs, and nothing is written.  A rank that fails locally before
 * the data (a NULL tensor, say) still takes part in the header exchange,
 * so the other ranks fail too instead of waiting.
 *
 * Failures.  Every wait has the group's timeout.  A peer that closes its
 * connection (its process died or freed the group) or stays silent past
 * the timeout makes the call fail with CLT_ERR_IO naming the peer's rank
 * and the call; no call hangs, raises SIGPIPE, prints or aborts.  After
 * such a failure the group is broken: every later call on it fails at
 * once (as torch's process group after a timeout); free it.
 *
 * Threads.  A group is used by one thread at a time; every rank must make
 * the same collectives in the same order, as in torch.distributed.
 */
#ifndef CLTENSOR_DIST_H
#define CLTENSOR_DIST_H

#include <cltensor/nn.h>
#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_process_group clt_process_group;

/* What clt_process_group_init needs.  A field left unset is read from the
 * environment, as torch's init_method "env://" does: rank < 0 from RANK,
 * world_size 0 from WORLD_SIZE, master_addr NULL from MASTER_ADDR,
 * master_port 0 from MASTER_PORT.  timeout_s 0 means 1800 s (torch's
 * default of 30 minutes). */
typedef struct clt_dist_opts {
    int rank;                /* 0 .. world_size - 1; < 0: $RANK */
    int world_size;          /* >= 1; 0: $WORLD_SIZE */
    const char *master_addr; /* host name or address of rank 0; NULL: $MASTER_ADDR */
    int master_port;         /* 1 .. 65535; 0: $MASTER_PORT */
    double timeout_s;        /* every wait; 0: 1800 */
} clt_dist_opts;
/* Everything from the environment (torchrun's variables). */
#define CLT_DIST_OPTS_DEFAULTS {-1, 0, NULL, 0, 0.0}

/* Joins the group (torch.distributed.init_process_group).  opts NULL reads
 * everything from the environment.  A missing or malformed variable is
 * CLT_ERR_INVALID_ARGUMENT naming it and its value.  Rank 0 binds
 * master_addr:master_port and waits for the others; a rank that cannot
 * reach it, or a rank 0 that some rank never joins, fails with CLT_ERR_IO
 * after the timeout naming the rank(s) missing.  Ranks that disagree on
 * world_size, or two ranks with the same rank, fail.  A world of 1 opens
 * no socket.  New group: release with clt_process_group_free. */
CLT_API clt_status clt_process_group_init(const clt_dist_opts *opts,
                                          clt_process_group **out);

/* Closes the group's connections (destroy_process_group).  NULL does
 * nothing. */
CLT_API void clt_process_group_free(clt_process_group *pg);

/* This process's rank and the world size; -1 and 0 for NULL. */
CLT_API int clt_process_group_rank(const clt_process_group *pg);
CLT_API int clt_process_group_size(const clt_process_group *pg);

/* torch.distributed.ReduceOp. */
typedef enum clt_reduce_op {
    CLT_REDUCE_SUM,
    CLT_REDUCE_AVG,
    CLT_REDUCE_PRODUCT,
    CLT_REDUCE_MIN,
    CLT_REDUCE_MAX
} clt_reduce_op;

/* all_reduce(t, op), in place, on every rank.  Ring reduce-scatter then
 * all-gather: each part of the result is computed on one rank and copied
 * to the others, so every rank gets the same bits.  Every dtype: integers
 * wrap as in C's unsigned arithmetic (torch's), bool takes SUM and MAX as
 * "or", PRODUCT and MIN as "and".  AVG (SUM, then divided by world_size
 * on the rank that owns each part) takes floating dtypes only, as NCCL's
 * (gloo refuses AVG).  MIN and MAX propagate NaN, as torch.minimum and
 * torch.maximum do; gloo does not do so reliably (torch 1.13: MIN over
 * [NaN, 1] on rank 0 and [1, NaN] on rank 1 gives [NaN, 1]).  t keeps its
 * shape and dtype; a leaf that requires grad is written as torch's
 * collectives write it, outside autograd. */
CLT_API clt_status clt_all_reduce(clt_process_group *pg, clt_tensor *t, clt_reduce_op op);

/* broadcast(t, src): t on every rank gets src's values. */
CLT_API clt_status clt_broadcast(clt_process_group *pg, clt_tensor *t, int src);

/* all_gather: *out is a new tensor [world_size, ...t's shape] on t's device,
 * row k holding rank k's t (torch.stack of all_gather's list).  Every rank
 * must give the same shape and dtype.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_all_gather(clt_process_group *pg, const clt_tensor *t, clt_tensor **out);

/* barrier(): returns once every rank has called it. */
CLT_API clt_status clt_barrier(clt_process_group *pg);

/* ---- the other collectives ------------------------------------------------ */

/* Lists.  A call that takes a list of tensors takes n, the list's length,
 * which must be the world size; the list's tensors must have the shape and
 * dtype the call says (else CLT_ERR_SHAPE_MISMATCH or
 * CLT_ERR_DTYPE_MISMATCH on that rank, and the others fail as after any
 * rank's local failure), and may live on any devices.  Tensors written in
 * place must not be expanded or computed by autograd, as for
 * clt_all_reduce.  The header exchange covers every rank's tensor shape and
 * dtype, rank and op arguments. */

/* reduce(t, dst, op): t on rank dst gets the reduction of every rank's t
 * (the bits clt_all_reduce would give); t on the other ranks is left as it
 * was.  Dtypes and ops as clt_all_reduce. */
CLT_API clt_status clt_reduce(clt_process_group *pg, clt_tensor *t, int dst, clt_reduce_op op);

/* gather(t, gather_list, dst), named apart from the tensor op clt_gather: on rank dst, gather_list[k] (n = world
 * size tensors of t's shape and dtype) gets rank k's t.  The other ranks
 * pass NULL and 0 (torch: "gather_list must NOT be specified on
 * non-destination ranks"). */
CLT_API clt_status clt_dist_gather(clt_process_group *pg, const clt_tensor *t, int dst,
                                   clt_tensor *const *gather_list, size_t n);

/* scatter(out, scatter_list, src) (beside the tensor op clt_scatter): out on rank k gets scatter_list[k] of
 * rank src (n = world size tensors of out's shape and dtype).  The other
 * ranks pass NULL and 0. */
CLT_API clt_status clt_dist_scatter(clt_process_group *pg, clt_tensor *out,
                                    const clt_tensor *const *scatter_list, size_t n, int src);

/* reduce_scatter(out, input_list, op): out on rank k gets the reduction
 * over the ranks of their input_list[k] (n = world size tensors of out's
 * shape and dtype).  Dtypes and ops as clt_all_reduce. */
CLT_API clt_status clt_reduce_scatter(clt_process_group *pg, clt_tensor *out,
                                      const clt_tensor *const *input_list, size_t n,
                                      clt_reduce_op op);

/* reduce_scatter_tensor(out, input, op): as clt_reduce_scatter with input
 * cut into world-size chunks along dim 0: input is out's shape with dim 0
 * times the world size (concatenated), or [world_size, ...out's shape]
 * (stacked); else CLT_ERR_SHAPE_MISMATCH. */
CLT_API clt_status clt_reduce_scatter_tensor(clt_process_group *pg, clt_tensor *out,
                                             const clt_tensor *input, clt_reduce_op op);

/* all_gather_into_tensor(out, t): out on every rank gets every rank's t in
 * rank order along dim 0: out is t's shape with dim 0 times the world size
 * (concatenated) or [world_size, ...t's shape] (stacked), of t's dtype;
 * else CLT_ERR_SHAPE_MISMATCH or CLT_ERR_DTYPE_MISMATCH.  (clt_all_gather
 * hands out a new stacked tensor instead.) */
CLT_API clt_status clt_all_gather_into_tensor(clt_process_group *pg, clt_tensor *out,
                                              const clt_tensor *t);

/* all_to_all(output_list, input_list): output_list[k] on rank j gets
 * input_list[j] of rank k (n_out = n_in = world size; every tensor of one
 * dtype, on every rank).  The shapes may differ from pair to pair: rank
 * k's input_list[j] must have the shape of rank j's output_list[k], else
 * every rank fails naming both.  (Gloo in torch 1.13 offers only
 * all_to_all_single; NCCL's all_to_all does this.)  Every rank's inputs
 * travel around the ring, so each rank receives them all. */
CLT_API clt_status clt_all_to_all(clt_process_group *pg, clt_tensor *const *output_list,
                                  size_t n_out, const clt_tensor *const *input_list,
                                  size_t n_in);

/* all_to_all_single(out, in, output_split_sizes, input_split_sizes): in is
 * cut along dim 0 into world-size chunks of input_split_sizes[j] rows
 * (NULL: equal chunks, dim 0 divisible by the world size), chunk j going
 * to rank j; out is filled along dim 0 with the chunks from rank 0, 1, ...
 * of output_split_sizes[k] rows (NULL: equal).  Split sizes are >= 0 and
 * sum to dim 0; in and out have the same dtype and the same dims after
 * the first, on every rank; rank k's input_split_sizes[j] must equal rank
 * j's output_split_sizes[k], else every rank fails naming both.  in and
 * out have at least one dimension. */
CLT_API clt_status clt_all_to_all_single(clt_process_group *pg, clt_tensor *out,
                                         const clt_tensor *in,
                                         const int64_t *output_split_sizes,
                                         const int64_t *input_split_sizes);

/* ---- point-to-point ------------------------------------------------------ */

/* send(t, dst, tag) and recv(t, src, tag): t's values from this rank to
 * rank dst, which must make the matching clt_recv(t', this rank, tag)
 * into a tensor t' of the same shape and dtype.  Both block until the
 * transfer is done (within the group's timeout), whichever of the pair
 * comes first; only the two ranks take part (see the direct connections
 * above).  Before the data the two exchange headers: a different shape,
 * dtype or tag, or two sends (or two receives) facing each other, fails
 * both calls naming both ranks' calls, and nothing is written (torch would
 * wait for a matching tag instead; here the messages between two ranks
 * are taken in order).  dst or src equal to this rank, or outside
 * [0, world size), is CLT_ERR_INVALID_ARGUMENT on the calling rank only
 * (torch: "Invalid destination rank").  A peer that dies or stays silent
 * fails the call naming it, and the group is broken, as for the
 * collectives.  recv writes t outside autograd. */
CLT_API clt_status clt_send(clt_process_group *pg, const clt_tensor *t, int dst, int tag);
CLT_API clt_status clt_recv(clt_process_group *pg, clt_tensor *t, int src, int tag);

/* ---- SyncBatchNorm -------------------------------------------------------- */

/* torch.nn.SyncBatchNorm.convert_sync_batchnorm(m, pg), in place: every
 * BatchNorm1d, BatchNorm2d and BatchNorm3d in m (m itself or a descendant)
 * becomes a "SyncBatchNorm" layer with the same parameters, buffers,
 * settings and state_dict names.  In train mode in a world of more than 1
 * its forward takes the batch statistics over every rank's batch (the
 * counts may differ): the element count, the sum and the sum of squared
 * deviations from the global mean, all-reduced; the running statistics
 * are updated with the global mean and unbiased variance, as torch's.  The
 * two sums' all-reduce is recorded by autograd: its backward all-reduces
 * their gradients, so that each rank's input gradient is that of the whole
 * batch's loss (the sum of the ranks' losses), as torch's SyncBatchNorm
 * function computes it; the gradients of weight and bias stay each rank's
 * own (DDP averages them).  Otherwise (eval mode with running statistics,
 * or a world of 1) it is BatchNorm's forward, as torch's.  Input of 2 to 5
 * dimensions in either path, any of 2 and more in train mode with sync.
 *
 * Every rank must run the same forwards and backwards in the same order
 * (each forward makes three calls on pg, each backward two); a rank that
 * fails before them leaves the others waiting for the group's timeout.  pg
 * is borrowed and must outlive m (and its clones).  Do not use it on the
 * group of a clt_ddp, whose thread takes the group during backward: give
 * SyncBatchNorm a group of its own (another clt_process_group_init).  Layers
 * converted already keep their group.
 *
 * A LazyBatchNorm1d/2d/3d that has not run yet is converted too: it is
 * named "SyncBatchNorm" at once and still has no tensors (the listings
 * refuse it as any lazy layer that has not run); its first forward (or a
 * load that sizes it) makes it the BatchNorm of that size, which is then
 * the SyncBatchNorm above, before it runs.  (Deliberate difference: torch
 * 1.13 makes it a SyncBatchNorm of num_features 0 that keeps the
 * UninitializedParameter and UninitializedBuffer objects, which no
 * forward, state_dict or load can use, unless it has neither affine nor
 * track_running_stats; here it learns its size as the lazy layer would.)
 * A failure on that first forward leaves it lazy and waiting.  Errors:
 * NULL arguments, out of host memory (m unchanged). */
CLT_API clt_status clt_convert_sync_batchnorm(clt_module *m, clt_process_group *pg);

/* ---- DistributedDataParallel's two duties -------------------------------- */

/* The parameters and buffers of m (its state, in state_dict order) from
 * rank src to every rank, as DDP does at construction.  Every rank's model
 * must have the same names, shapes and dtypes. */
CLT_API clt_status clt_dist_broadcast_module(clt_process_group *pg, clt_module *m, int src);

/* After backward: every gradient of m's parameters replaced by its mean
 * over the ranks, as DDP's reducer does (each gradient multiplied by
 * 1 / world_size, then summed over the ranks by one flat all-reduce per
 * bucket, in DDP's buckets of 25 MiB: see clt_ddp_new; clt_ddp does the
 * same during backward).  Parameters
 * that do not require grad are skipped, as DDP skips them.  A parameter
 * that requires grad but has none on some rank (it took no part in the
 * loss) fails on every rank naming it and the ranks, as DDP without
 * find_unused_parameters does (at its next iteration), and no gradient
 * changes. */
CLT_API clt_status clt_dist_average_gradients(clt_process_group *pg, clt_module *m);

/* ---- DistributedDataParallel: reduction overlapped with backward -------- */

/* DDP over a model: torch.nn.parallel.DistributedDataParallel(m) without
 * its forward (call clt_module_forward on m itself).  Its reducer splits
 * the parameters that require grad into buckets as DDP does (reverse
 * parameter order, one dtype per bucket, the first of each dtype closed at
 * 1 MiB, the later ones at bucket_cap_mb) and hooks every parameter
 * (clt_tensor_register_post_accumulate_grad_hook): during clt_backward,
 * when the last gradient of a bucket has been accumulated, the bucket is
 * handed to the handle's communication thread, which reads it, multiplies
 * it by 1 / world_size and all-reduces it (sum) over the ranks while
 * backward goes on computing the earlier layers' gradients.  Buckets are
 * reduced in order, the same on every rank.  The hook that completes the
 * last bucket waits for the reductions, so clt_backward returns with every
 * gradient averaged: the same bits as clt_dist_average_gradients after a
 * plain backward (both sum in the same buckets; with another bucket_cap_mb,
 * still the same bits in a world of 2).
 *
 * Unused parameters (find_unused_parameters=False, DDP's default and the
 * only mode here): a parameter that requires grad but gets no gradient in
 * a backward pass leaves its bucket unfinished, and clt_backward returns
 * on that rank without waiting.  clt_ddp_wait then fails on every rank,
 * naming the parameter and the ranks that lack it (the other ranks' next
 * call that waits fails: their clt_backward, or their clt_ddp_wait); so
 * does the next backward pass on that rank if clt_ddp_wait was not called
 * (torch: "Expected to have finished reduction in the prior iteration").
 * The buckets before it are averaged, it and those after it are not.
 *
 * Failures on other ranks (one that dies, times out, fails to read its
 * gradients, or holds another model) fail the waiting call on every rank,
 * naming the rank, as the collectives do; the group is then broken as
 * they say.  While a reduction is pending (between clt_backward and
 * clt_ddp_wait), make no other call on the group.
 *
 * Threads.  The handle's thread takes the group while it reduces; the
 * handle and m are used by one thread at a time besides it. */
typedef struct clt_ddp clt_ddp;

typedef struct clt_ddp_opts {
    double bucket_cap_mb; /* > 0; 0: 25 (DDP's default) */
} clt_ddp_opts;
#define CLT_DDP_OPTS_DEFAULTS {0.0}

/* Like DDP(m): broadcasts m's parameters and buffers from rank 0
 * (clt_dist_broadcast_module, which fails on every rank for models that
 * differ), checks that every rank plans the same buckets (a different
 * bucket_cap_mb fails every rank, naming it), hooks the parameters and
 * starts the communication thread.  opts NULL: the defaults.  m and pg are
 * borrowed and must outlive the handle; at most one handle per model.  New
 * handle: release with clt_ddp_free. */
CLT_API clt_status clt_ddp_new(clt_process_group *pg, clt_module *m, const clt_ddp_opts *opts,
                               clt_ddp **out);

/* Finishes a pending reduction as clt_ddp_wait does (so the other ranks
 * are not left waiting), removes the hooks and stops the thread; m's
 * gradients are kept.  NULL does nothing. */
CLT_API void clt_ddp_free(clt_ddp *ddp);

/* After clt_backward, before the optimizer step: returns at once when the
 * backward pass finished the reduction (every parameter got its gradient)
 * or none is pending; else finishes it, failing on every rank for a
 * parameter without gradient (see above).  The status of a reduction that
 * failed inside clt_backward is not repeated here. */
CLT_API clt_status clt_ddp_wait(clt_ddp *ddp);

/* Like entering (0) or leaving (1) DDP's no_sync(): with sync 0, backward
 * passes only accumulate gradients locally; the first backward after
 * sync 1 averages the accumulated gradients.  Refused while a reduction is
 * pending (CLT_ERR_INVALID_ARGUMENT: call clt_ddp_wait first). */
CLT_API clt_status clt_ddp_set_sync(clt_ddp *ddp, int sync);

#ifdef __cplusplus
}
#endif

#endif
