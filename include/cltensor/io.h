/* cltensor/io.h: tensors, models, optimizers and schedules to and from
 * files: safetensors (the format of the Python safetensors package, and of
 * Hugging Face checkpoints), NumPy's .npy and .npz, and torch.save's
 * state_dicts (.pt, read through a pickle interpreter that runs nothing).
 *
 * Saving reads the tensors back into host memory (it waits for the work
 * queued on them) and writes the file through a temporary file beside it,
 * renamed over it at the end: a save that fails leaves no file, or the one
 * that was there, unchanged.  A `path` that is a symbolic link (or a chain
 * of them) is written where it leads, as np.save and torch.save write it:
 * the link stays, the temporary file is made beside the target and renamed
 * over it, and a dangling link's target is created (CLT_ERR_IO when its
 * directory does not exist, or for a loop of links).  A target that exists
 * and is no regular file (a directory, a device such as /dev/null, a FIFO)
 * is refused with CLT_ERR_IO rather than replaced.  The new file replaces
 * the old one: it keeps the old file's permission bits (a 0600 file stays
 * 0600; a new file gets 0666 less the umask), and its owner and group where
 * the caller may set them (root may; others may keep a group they belong
 * to), else it belongs to the caller.  Unlike np.save and torch.save, which
 * write the file in place, a read-only file the caller may not write is
 * replaced all the same (when its directory is writable), and other hard
 * links to the old file keep the old content.  Loading reads the
 * whole header, checks it against the file (dtypes, shapes, sizes,
 * offsets) before it creates a tensor, and uploads with blocking writes.
 * .npy files also go to and from host memory with no device
 * (clt_load_npy_host, clt_save_npy_host), for the data loader.
 *
 * Errors.  A file that cannot be opened, read or written is CLT_ERR_IO, as
 * is a path that is no regular file (a directory, a device, a FIFO: refused
 * without waiting for a writer); a file whose content is wrong (bad magic,
 * bad JSON, a truncated file, an unsupported dtype, sizes that do not add
 * up) is CLT_ERR_INVALID_ARGUMENT.  The message names the file and what is
 * wrong.  On failure nothing was changed (and the outputs are NULL, as
 * common.h says).
 *
 * The dtypes are cltensor's real ones: safetensors F32, F64, F16, I32,
 * I64, U8, BOOL, BF16, I8, I16; .npy '<f4', '<f8', '<f2', '<i4', '<i8',
 * '|u1', '|b1', '|i1', '<i2' (and complex '<c8', '<c16'); numpy has no bfloat16, so
 * clt_save_npy refuses it (CLT_ERR_DTYPE_UNSUPPORTED, as torch's .numpy()
 * raises): convert to float32 first.
 * Tensors are saved little-endian and row-major (C order) in both
 * formats; .npy files in the other byte order or in Fortran order load
 * too (see clt_load_npy).  A dtype the device cannot hold (float64
 * without cl_khr_fp64, ...) is CLT_ERR_DTYPE_UNSUPPORTED when loading.
 * Names and other text from a file appear in messages with control
 * characters and bytes that are not UTF-8 written as \xNN.
 *
 * Threads: the functions may run on several threads at once on distinct
 * files and tensors.
 */
#ifndef CLTENSOR_IO_H
#define CLTENSOR_IO_H

#include <cltensor/data.h>
#include <cltensor/nn.h>
#include <cltensor/optim.h>
#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- safetensors ----------------------------------------------------------- */

/* Writes the n named tensors to `path` in safetensors format: the 8-byte
 * little-endian length of a JSON header, the header ({"name": {"dtype":
 * "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}, compact,
 * padded with spaces to a multiple of 8 bytes), then the raw data.  The
 * tensors are written in the byte order of their names, both in the header
 * and in the data.  A non-contiguous tensor is saved as its contiguous
 * values.  Errors: CLT_ERR_NULL_ARGUMENT for a NULL path, name or tensor
 * (tensors may be NULL when n is 0); CLT_ERR_INVALID_ARGUMENT for a
 * duplicate name, a name that is not UTF-8, or the reserved name
 * "__metadata__"; CLT_ERR_IO when the file cannot be written.  Nothing is
 * taken: the tensors stay the caller's. */
CLT_API clt_status clt_save_safetensors(const char *path, const clt_named_tensor *tensors,
                                        size_t n);

/* Reads every tensor of the safetensors file `path` into new tensors on
 * dev, in the order of the file's header; "__metadata__" is checked (an
 * object of strings, or null) and ignored, as are fields of an entry
 * other than dtype, shape and data_offsets (as the reference
 * implementation reads them).  A name given twice, a BOOL byte other than
 * 0 or 1, and a name holding U+0000 are refused.  The header is at most 100 MB (10^8
 * bytes, the reference implementation's limit: a longer one is
 * CLT_ERR_INVALID_ARGUMENT) and is parsed one entry at a time, so that
 * checking it takes a few times its size in memory (about 3.3 times for
 * a header of many tiny entries), besides the tensors loaded; an entry of
 * more than 4096 JSON values is refused as it is parsed.  *out receives *n entries in one block
 * that also holds the names.  Ownership: each tensor is a new reference
 * that belongs to no scope, even inside one (release with
 * clt_tensor_free), and the block is released with clt_free;
 * clt_named_tensors_free does both.  *n is 0 for a file without tensors
 * (*out is then an empty block, still released with clt_free). */
CLT_API clt_status clt_load_safetensors(const char *path, clt_device *dev,
                                        clt_named_tensor **out, size_t *n);

/* Releases what clt_load_safetensors hands out: each of the n tensors,
 * then the block.  NULL does nothing. */
CLT_API void clt_named_tensors_free(clt_named_tensor *arr, size_t n);

/* ---- models --------------------------------------------------------------------- */

/* Saves m's state (parameters and buffers under their names, as PyTorch's
 * state_dict: "0.weight", "0.bias", ...) as a safetensors file. */
CLT_API clt_status clt_module_save(const clt_module *m, const char *path);

/* Loads a safetensors file written by clt_module_save (or by PyTorch's
 * safetensors.torch.save_file(model.state_dict(), path)) into m, strictly,
 * as load_state_dict(strict=True): every name of m's state must be in the
 * file with the same shape, and the file must hold nothing else.
 * Otherwise CLT_ERR_INVALID_ARGUMENT, naming the first mismatch ("missing
 * key(s) in state: 2.bias", "unexpected key(s) in state: 3.weight", "size
 * mismatch for 0.weight: copying a param with shape [10, 64] from
 * checkpoint, the shape in current model is [128, 64]"), and m is left as
 * it was: the whole file is checked and uploaded before any tensor of m is
 * written.  The values are copied into m's existing tensors on their
 * device (handles kept, so optimizers made before still hold them;
 * parameters keep requires_grad; gradients are left alone), converted to
 * each tensor's dtype as torch's param.copy_ converts: a float32
 * checkpoint loads into a model made float64 by clt_module_to_dtype, and
 * back (a value the file holds in a dtype the device cannot hold, float64
 * on a device without it, is refused).  Lazy layers of m that have not run
 * take their sizes from the file first (torch's _lazy_load_hook; see the
 * lazy layers in nn.h), and are left lazy when the load fails. */
CLT_API clt_status clt_module_load(clt_module *m, const char *path);

/* ---- optimizers ------------------------------------------------------------------ */

/* Saves opt's state, as torch.save(optimizer.state_dict()), as a
 * safetensors file: each parameter's state under PyTorch's names,
 * "state.<i>.momentum_buffer" (SGD with momentum, once the buffer has
 * started: before its first use, where torch's is None, the file has none,
 * and loading a file without it starts it at the next gradient, as torch
 * does), "state.<i>.exp_avg",
 * "state.<i>.exp_avg_sq" and, with amsgrad, "state.<i>.max_exp_avg_sq"
 * (Adam, AdamW), "state.<i>.square_avg" and, with momentum and centered,
 * "state.<i>.momentum_buffer" and "state.<i>.grad_avg" (RMSprop),
 * "state.<i>.sum" (Adagrad), "state.<i>.exp_avg" and "state.<i>.exp_inf"
 * (Adamax), "state.<i>.exp_avg", "state.<i>.exp_avg_sq" (NAdam, RAdam),
 * "state.<i>.square_avg" and "state.<i>.acc_delta" (Adadelta),
 * "state.<i>.prev" and "state.<i>.step_size" (Rprop), "state.<i>.ax",
 * "state.<i>.eta" and "state.<i>.mu" (ASGD: eta and mu 0-d float32, as
 * torch holds them), LBFGS's on parameter 0 as torch keeps it (its keys and
 * dtypes: clt_lbfgs in optim.h) and
 * "state.<i>.mu_product" (NAdam: 0-d float32, as torch holds it), i the
 * parameter's position in the list the optimizer was
 * made with; "step", int64 [n], the updates of each parameter
 * (state[p]['step']); "steps", int64, clt_optimizer_steps; and "lr_bits",
 * the learning rate's IEEE-754 binary64 bits as an int64, so that it
 * comes back exact (NumPy: np.int64(v).view(np.float64)).
 *
 * The header's __metadata__ holds the kind, "optimizer": "SGD", "Adam",
 * "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "Rprop",
 * "ASGD" or "LBFGS" (torch's
 * class name), and the settings
 * under the keys of torch's
 * param_groups[0], each as Python's repr writes the value, so that
 * ast.literal_eval gives it back exactly (numbers in the fewest digits
 * that read back to the same double, in the C locale): SGD "lr",
 * "momentum", "dampening", "weight_decay", "nesterov" ("True"/"False");
 * Adam and AdamW "lr", "betas" ("(0.9, 0.999)"), "eps", "weight_decay",
 * "amsgrad"; RMSprop "lr", "alpha", "eps", "weight_decay", "momentum",
 * "centered"; Adagrad "lr", "lr_decay", "weight_decay",
 * "initial_accumulator_value", "eps"; Adamax and RAdam "lr", "betas",
 * "eps", "weight_decay"; NAdam those and "momentum_decay"; Adadelta "lr",
 * "rho", "eps", "weight_decay"; Rprop "lr", "etas", "step_sizes" (pairs);
 * ASGD "lr", "lambd", "alpha", "t0", "weight_decay"; LBFGS "lr",
 * "max_iter", "max_eval", "tolerance_grad", "tolerance_change",
 * "history_size" (integers), "line_search_fn" ("None" or
 * "'strong_wolfe'"); all but NAdam, RAdam and LBFGS (whose groups have none in torch 1.13; a file of theirs may
 * hold it, "False") "maximize" ("False").  "lr" is the rate now (a
 * schedule's), as in torch, and equals lr_bits.  What schedules add to
 * torch's param_groups[0] is there too, where a schedule put it:
 * "initial_lr" (the base rate of every schedule made on opt: optim.h),
 * OneCycleLR's "max_lr" and "min_lr", and with its momentum cycling
 * "max_momentum" and "base_momentum"; clt_optimizer_load takes them (a
 * file without them leaves opt without them, as torch's load_state_dict
 * takes the saved group whole), so that torch's optimizer loads the file
 * with the keys its schedules read, and ours loads torch's.  Save the model with
 * clt_module_save and a schedule with clt_lr_scheduler_save beside it.
 *
 * Parameter groups (clt_optimizer_add_param_group).  The keys above are
 * group 0's (torch's param_groups[0], as they always were); each group
 * also has "params", the numbers of its parameters as torch's state_dict
 * numbers them, across the groups in order ("[0, 1]", then "[2]"), which
 * are also the i of "state.<i>.*" and the positions in "step"; groups 1,
 * 2, ... have the same keys (settings, "maximize", what schedules add,
 * "params") under "param_groups.G." ("param_groups.1.lr": 0.01), so that
 * torch's param_groups is group 0's keys then each group's.  lr_bits is
 * group 0's rate.  The settings of about 17 groups fit in a file (the
 * reader's limit of 256 __metadata__ entries), and the numbers of about
 * 350 parameters in one group: more is CLT_ERR_INVALID_ARGUMENT, nothing
 * written.  An optimizer whose last step the driver stopped part-way
 * (optim.h) is refused (CLT_ERR_INVALID_ARGUMENT) until a
 * clt_optimizer_step finishes that step. */
CLT_API clt_status clt_optimizer_save(const clt_optimizer *opt, const char *path);

/* Loads a file written by clt_optimizer_save into opt, an optimizer of the
 * same kind over parameters of the same shapes in the same order (their
 * dtypes may differ from the file's: see below), a fresh one or one that
 * has stepped (its state is replaced), as torch's load_state_dict: opt
 * takes the file's settings (learning rate, momentum, betas, ... from
 * __metadata__; its later steps use them) and
 * its state, and the counts, so that the steps after it give the bits an
 * uninterrupted run gives.  The state expected is the one the file's
 * settings make (momentum buffers where its momentum is not 0, amsgrad's
 * maxima, RMSprop's grad_avg when centered), and it is checked strictly,
 * as clt_module_load checks, and more: a name missing or unexpected, a
 * shape that differs, a state tensor that is not floating, counts ("step",
 * "steps", "lr_bits") that are not int64, a negative count, an invalid
 * learning rate is CLT_ERR_INVALID_ARGUMENT naming it.  Floating state in
 * another dtype than its parameter's is converted to the parameter's, as
 * torch's load_state_dict casts it, and as clt_module_load converts (a
 * float64 file into a float32 model rounds to nearest, a float32 one into
 * float64 is exact; a dtype the device cannot hold is refused).  So are
 * a file of another kind, naming both ("holds the state of 'Adam', and the
 * optimizer is AdamW": torch accepts Adam's state into AdamW silently, but
 * the two read weight_decay differently, L2 in the gradient against
 * decoupled decay, so the run would not be the one saved), settings the
 * constructors refuse (a negative or NaN rate, a beta outside [0, 1),
 * nesterov with dampening, ... with the constructors' message), a setting
 * missing or unreadable, "maximize" True, "lr" not equal to lr_bits,
 * and a __metadata__ with a key twice or more than 256 entries (other keys
 * are ignored).  With parameter groups, each group takes its own settings
 * from the file; a file of another number of groups ("loaded state dict
 * has a different number of parameter groups", torch's ValueError), a
 * group of another number of parameters ("loaded state dict contains a
 * parameter group that doesn't match the size of optimizer's group"), or
 * "params" not numbered across the groups in order is refused, naming the
 * counts.  A file without "params" (written before groups were saved)
 * loads into an optimizer of one group.
 * opt is left as it was on any failure: the file is loaded into a new
 * optimizer (state made anew: for a moment opt's state twice over, besides
 * the uploads), which then takes opt's place within the same handle.
 * A file without "optimizer" in its metadata (written before the settings
 * were saved) loads as before: opt keeps its own settings, and Adam's and
 * AdamW's such files load into one another.  A schedule keeps its own
 * state: clt_lr_scheduler_load.  NAdam's mu_product, which its steps
 * read on the host, is read back from the device once loaded: loading
 * NAdam's file waits for the device. */
CLT_API clt_status clt_optimizer_load(clt_optimizer *opt, const char *path);

/* ---- schedules ------------------------------------------------------------------- */

/* Saves a schedule's state, as torch.save(scheduler.state_dict()), in a
 * file of its own beside the optimizer's (a torch user's checkpoint
 * {"model", "optimizer", "scheduler"} is three files: clt_module_save,
 * clt_optimizer_save, this): a safetensors file with no tensors, whose
 * __metadata__ holds "scheduler" (torch's class: "StepLR",
 * "CosineAnnealingLR", "ExponentialLR", "MultiStepLR" or "LinearLR"), its
 * settings under torch's keys ("step_size" and "gamma"; "T_max" and
 * "eta_min"; "gamma"; "milestones" and "gamma"; "start_factor",
 * "end_factor" and "total_iters"), "milestones" as torch's Counter prints
 * ("Counter({30: 1, 80: 2})": counts descending, then in the order first
 * given; more milestones than fit in 2047 bytes are
 * CLT_ERR_INVALID_ARGUMENT), "base_lrs" ("[0.02]"; one rate per parameter
 * group the optimizer had when the schedule was made, "[0.02, 0.001]")
 * and "last_epoch" (clt_lr_scheduler_epoch), and the rest of torch 1.13's
 * state_dict: "_step_count" (last_epoch + 1), "_last_lr" (the rate the
 * schedule gives at last_epoch, in closed form; the rate it set, for one
 * of several on one optimizer: optim.h), "verbose" and
 * "_get_lr_called_within_step" ("False"), under torch's names and as
 * Python's repr writes them (safetensors' safe_open(...).metadata() reads
 * them).  Over parameter groups, "_last_lr" holds one rate per group of
 * the optimizer at the last step (a group added after the schedule was
 * made included, as torch's), and the lists torch keeps per group but
 * cltensor's schedules once ("min_lrs", "max_lrs", "base_momentums",
 * "max_momentums", LambdaLR's "[None, None]") repeat it for each group
 * the schedule was made over.  OneCycleLR's file holds "total_steps", "_schedule_phases" (the
 * list of phase dicts torch's repr writes), "cycle_momentum" ("True" or
 * "False": clt_one_cycle_lr_momentum) and, when True, "use_beta1" (Adam's
 * and AdamW's betas[0] are cycled),
 * and besides torch's keys "max_lr", "min_lr" (torch keeps them in the
 * optimizer's param_groups) and "anneal_strategy" ("'cos'" or
 * "'linear'": torch's anneal_func is a bound method), then base_lrs
 * (initial_lr) and the rest as above.  ReduceLROnPlateau's holds torch's
 * state_dict only: "factor", "min_lrs", "patience", "verbose",
 * "cooldown", "cooldown_counter", "mode" ("'min'"), "threshold",
 * "threshold_mode" ("'rel'"), "best" ("inf" before any metric),
 * "num_bad_epochs", "mode_worse", "eps", "last_epoch" and "_last_lr" (the
 * optimizer's rate).  ConstantLR's holds "factor" and "total_iters",
 * PolynomialLR's "total_iters" and "power", CosineAnnealingWarmRestarts'
 * "T_0", "T_i", "T_mult", "eta_min" and "T_cur" (an int, or a float after
 * a fractional epoch) and "_step_count" 0 (torch's step() of its own
 * counts none), LambdaLR's and MultiplicativeLR's "lr_lambdas" "[None]"
 * (torch saves no function or lambda, only a callable object's
 * attributes; a C callback has none), each with base_lrs and the rest as
 * above.  CyclicLR's holds torch's "max_lrs" ("[0.1]"), "total_size",
 * "step_ratio", "mode" ("'triangular'", "'triangular2'" or
 * "'exp_range'"; a schedule with a scale_fn writes "'triangular'"),
 * "gamma", "_scale_fn_custom" ("None": torch saves no function),
 * "scale_mode" ("'cycle'" or "'iterations'"), "cycle_momentum" and, when
 * "True", "base_momentums" and "max_momentums", then base_lrs and the rest
 * as above (not torch's "_scale_fn_ref", a weak reference torch 1.13's
 * torch.save cannot write either).  SWALR's holds torch's "anneal_func"
 * ("SWALR._cosine_anneal" or "SWALR._linear_anneal": the staticmethod
 * torch pickles as getattr(SWALR, name)) and "anneal_epochs", then
 * base_lrs and the rest as above; its swa_lr is in the optimizer's file
 * ("swa_lr", as torch's param_groups keep it, which the schedule then
 * reads as torch's get_lr does).  A SequentialLR's file holds "_milestones" ("[4]"), "last_epoch"
 * and "_last_lr", a ChainedScheduler's "_last_lr", and each of their
 * schedules' keys (as its own file would hold them, "scheduler" too)
 * under "_schedulers.I." ("_schedulers.0.start_factor"), where torch's
 * state_dict nests them in a list under "_schedulers" (a SequentialLR's
 * schedule but its first has "_step_count" last_epoch + 2, 1 at -1, as
 * torch counts its step(0)).  The optimizer it drives is not saved with
 * it. */
CLT_API clt_status clt_lr_scheduler_save(const clt_lr_scheduler *s, const char *path);

/* Loads a file written by clt_lr_scheduler_save into s, a schedule of the
 * same kind (made over the optimizer it is to drive), as torch's
 * load_state_dict: s takes the file's settings (step_size and gamma,
 * T_max and eta_min, ...; "milestones" read as a Counter, "Counter()" or
 * a dict "{30: 1}", epochs >= 0, counts >= 1, at most 4096 in all),
 * base_lrs and last_epoch (_step_count and _last_lr follow from
 * them: where the file has them they must read, and _step_count must be
 * last_epoch + 1, or what save writes for the kinds above that count
 * otherwise; a file without them, from before they were saved,
 * loads); OneCycleLR's phases (the last ending at total_steps - 1, at
 * most total_steps steps taken), and torch's own file too: "anneal_func"
 * read for the strategy, and without "max_lr" and "min_lr" the schedule
 * keeps its own (make it with the run's settings, as torch's user does);
 * "cycle_momentum" (a file without it cycles none), True taking the
 * momenta to cycle between from the optimizer's file, as torch's from its
 * param_groups (a step before the optimizer has them is refused; an
 * Adagrad, which has no momentum, refuses the file); SWALR's
 * anneal_epochs and strategy (anneal_func, which must be one of the two
 * names); ReduceLROnPlateau's
 * settings and
 * counters (mode_worse and _last_lr not taken); the optimizer's rate is
 * not touched
 * (clt_optimizer_load restores it).  With the model and the optimizer
 * loaded too, the run continues with the bits of an uninterrupted one.  A
 * file of another kind, with tensors, without a key, with a value that
 * does not read or that the kind's constructor refuses, a negative
 * last_epoch, base_lrs not one rate per group the schedule was made over,
 * _last_lr of fewer rates or more than the optimizer has groups, or a
 * per-group list whose rates differ (min_lrs, max_lrs, momenta: one each
 * here) is CLT_ERR_INVALID_ARGUMENT naming it, and s is left as it
 * was.  A LambdaLR or MultiplicativeLR keeps its
 * callback (make it with the run's, as torch's user does) and refuses a
 * file whose "lr_lambdas" is not "[None]".  A CyclicLR takes the file's
 * rates, sizes, mode and momenta (one made with a scale_fn keeps it,
 * taking the file's scale_mode); "_scale_fn_custom" must be "None", and a
 * file whose "cycle_momentum" is not the schedule's is refused (make it
 * as the saved one was).  A SequentialLR or
 * ChainedScheduler takes a file of its kind whose schedules are of the
 * kinds of its own, in order and as many: each is read and checked as its
 * own file would be, all before any is set (a SequentialLR's schedule not
 * yet started has last_epoch -1), then the container's own keys
 * (SequentialLR's milestones must be as many as its schedules less one;
 * ChainedScheduler's epoch becomes its first schedule's). */
CLT_API clt_status clt_lr_scheduler_load(clt_lr_scheduler *s, const char *path);

/* ---- GradScaler --------------------------------------------------------------- */

/* Saves a GradScaler's state, as torch.save(scaler.state_dict()), in a
 * file of its own beside the optimizer's (as a schedule's: a safetensors
 * file with no tensors): __metadata__ holds "scaler" ("GradScaler") and
 * torch 1.13's keys as Python's repr writes the values, "scale" (a
 * float), "growth_factor", "backoff_factor" (floats), "growth_interval"
 * and "_growth_tracker" (ints); so `{k: ast.literal_eval(v)}` of them is
 * torch's state_dict, which GradScaler.load_state_dict takes.  A disabled
 * scaler writes "scaler" alone, as torch's state_dict of one is empty.
 * Errors as clt_lr_scheduler_save. */
CLT_API clt_status clt_grad_scaler_save(const clt_grad_scaler *s, const char *path);

/* Loads a file written by clt_grad_scaler_save into s, as torch's
 * load_state_dict: the scale (rounded to float32, as torch fills its
 * _scale), the factors, the interval and the growth tracker.  A disabled
 * s loads nothing (as torch's returns at once).  A file of a disabled
 * scaler ("The source state dict is empty, possibly because it was saved
 * from a disabled instance of GradScaler.", torch's message), a file with
 * tensors, a key missing or unreadable, or a value the constructor
 * refuses (and a negative growth tracker) is CLT_ERR_INVALID_ARGUMENT
 * naming it, s unchanged. */
CLT_API clt_status clt_grad_scaler_load(clt_grad_scaler *s, const char *path);

/* AveragedModel.load_state_dict(torch.load(path)) (strict): a file
 * torch.save wrote of torch's AveragedModel.state_dict(), or clt_save_torch
 * of clt_averaged_model_state, read as clt_module_load_torch reads one
 * (its refusals and messages; every key of the state, "n_averaged" and
 * "module.*", and nothing else), each value converted into a's tensor of
 * that name.  n_averaged is then read back (a wait) as the count the next
 * clt_averaged_model_update goes on from, so that a resumed run averages
 * as an uninterrupted one.  Errors as clt_module_load_torch's; a is left
 * as it was on any failure found before the first tensor is written. */
CLT_API clt_status clt_averaged_model_load_torch(clt_averaged_model *a, const char *path);

/* ---- NumPy .npy ----------------------------------------------------------------- */

/* Writes t to `path` as a NumPy .npy file (format 1.0, C order, the
 * header numpy.save writes), as np.save(path, t.numpy()) would.  A 0-d
 * tensor has shape ().  Errors: CLT_ERR_NULL_ARGUMENT, CLT_ERR_IO,
 * CLT_ERR_DTYPE_UNSUPPORTED for bfloat16 (no .npy form). */
CLT_API clt_status clt_save_npy(const char *path, const clt_tensor *t);

/* Reads the .npy file `path` (format 1.0, 2.0 or 3.0) into a new tensor on
 * dev, with the values numpy.load gives: big-endian data ('>f8') is
 * byte-swapped and fortran_order True (numpy.save's form of a transposed
 * array) reordered into row-major order.  The dtype may be spelled as
 * numpy.dtype reads it: '<f4', '>f4', '=f4', '|f4', 'f4', 'f', 'float32',
 * and so on for the seven dtypes.  Refused with CLT_ERR_INVALID_ARGUMENT
 * (where numpy.load may differ): other dtypes, object or structured
 * arrays, headers numpy.save does not write (a key twice, escapes in
 * strings, Python syntax beyond a dict of strings, booleans and a tuple of
 * decimal integers), bool bytes other than 0 and 1, truncated files, and
 * bytes after the array's data (numpy.load ignores them; they are what a
 * header length off by one leaves).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_load_npy(const char *path, clt_device *dev, clt_tensor **out);

/* Reads the .npy file `path` into host memory, with no device: the file is
 * parsed, checked and converted as clt_load_npy does it (the same dtypes,
 * byte orders, Fortran order, 0-d and empty arrays, and the same refusals,
 * naming clt_load_npy_host; clt_load_npy is this read, then an upload),
 * float16 and float64 whatever the devices hold.  *out is one block that
 * holds the description, its shape and the values (C order, this
 * machine's byte order, at a 64-byte boundary); it can be passed to
 * clt_dataloader_arrays as it is, which borrows it with no copy:
 *
 *   clt_array_spec *x, *y;
 *   clt_load_npy_host("X.npy", &x);        // np.save("X.npy", X)
 *   clt_load_npy_host("y.npy", &y);
 *   clt_dataloader_arrays(dev, x, y, &opts, &loader);
 *   ...
 *   clt_dataloader_free(loader);           // then the arrays it borrowed
 *   clt_free(x);
 *   clt_free(y);
 *
 * (*out)->data is never NULL, even for an empty array; ndim is 0 for a 0-d
 * one.  Ownership: the block is the caller's, released with one clt_free,
 * after any loader that borrows it; the values may be changed in place
 * through a cast of data. */
CLT_API clt_status clt_load_npy_host(const char *path, clt_array_spec **out);

/* Writes the host array a (data in C order, as clt_array_spec describes
 * it) to `path` as clt_save_npy writes a tensor of that dtype and shape:
 * np.save for an array that never was on a device, or one
 * clt_load_npy_host gave.  Errors: CLT_ERR_NULL_ARGUMENT (path, a, its
 * shape, or data NULL for a non-empty array), CLT_ERR_INVALID_ARGUMENT (an
 * invalid dtype, a negative dimension), CLT_ERR_TOO_MANY_DIMS, CLT_ERR_IO;
 * a refused array writes no file.  Nothing is taken. */
CLT_API clt_status clt_save_npy_host(const char *path, const clt_array_spec *a);

/* ---- PyTorch's torch.save files, NumPy's .npz archives ---------------------------- */

/* Reads a state_dict that torch.save wrote (torch.save(model.state_dict(),
 * "m.pt"): the zip format of torch 1.6 and later, an OrderedDict or dict
 * of str -> Tensor) into new tensors on dev, in the file's order.  The
 * pickle inside is read by a small interpreter of its own that runs
 * nothing from the file: it takes the opcodes torch writes for a
 * state_dict (pickle protocol 2, and protocols up to 5's framing and short
 * strings) and the globals collections.OrderedDict,
 * torch._utils._rebuild_tensor_v2 and _rebuild_parameter, and torch's
 * storage types of the twelve dtypes (torch.FloatStorage, DoubleStorage,
 * HalfStorage, IntStorage, LongStorage, ByteStorage, BoolStorage,
 * ComplexFloatStorage, ComplexDoubleStorage, BFloat16Storage,
 * CharStorage, ShortStorage).  Any other global (os.system, ...) is
 * refused naming it, as are other dtypes (the quantized storages, ...), a value that is no tensor (a nested dict:
 * save the state_dict itself), a key given twice, and files older than
 * torch 1.6 (a bare pickle).  Tensors may be views of a storage shared
 * with others (offsets, strides, non-contiguous, expanded): each loads
 * as its own contiguous tensor with the values torch.load gives; a view
 * that reaches past its storage, a storage whose member's size is not
 * its elements', and a bool byte other than 0 or 1 are refused.
 * requires_grad, which a state_dict's tensors do not have, and backward
 * hooks are ignored; a state_dict's _metadata is read and dropped.  A
 * file is read as hostile: every length, memo index and stack depth is
 * checked (data.pkl at most 256 MiB, 4M objects), each member's CRC too.
 * Each storage is held in host memory from its first tensor to the end.
 * Errors: CLT_ERR_INVALID_ARGUMENT naming the file, and the byte of
 * data.pkl or the tensor, for what is wrong; CLT_ERR_IO; as
 * clt_load_safetensors otherwise.  Ownership as clt_load_safetensors:
 * release *out with clt_named_tensors_free(*out, *n). */
CLT_API clt_status clt_load_torch(const char *path, clt_device *dev, clt_named_tensor **out,
                                  size_t *n);

/* Writes the n named tensors as torch.save(OrderedDict(...)) of torch 1.13
 * writes them: a zip archive of archive/data.pkl (pickle protocol 2),
 * archive/data/0, ... (one storage per tensor, its values contiguous, the
 * members stored uncompressed) and archive/version, in the order given,
 * each member's data at a multiple of 64 bytes in the file as torch's
 * writer places it (padded with an extra field "FB" in its local header),
 * so that torch 2's torch.load(path, mmap=True) maps the storages in place.
 * torch.load(path) gives an OrderedDict of tensors with the same names,
 * values, dtypes and shapes (requires_grad False).  The whole archive is
 * made in host memory before it is written.  Errors as
 * clt_save_safetensors (a NULL name or tensor, a name twice or not UTF-8).
 * Nothing is taken. */
CLT_API clt_status clt_save_torch(const char *path, const clt_named_tensor *tensors, size_t n);

/* Saves m's state as torch.save(model.state_dict(), path) of torch 1.13
 * writes it: clt_save_torch of the names and tensors clt_module_state
 * gives (parameters then buffers, in PyTorch's state_dict order and names:
 * "0.weight", "1.running_mean", "1.num_batches_tracked", ...; each in its
 * own dtype, num_batches_tracked int64), and the state_dict's _metadata
 * versions where torch's loading reads them (the observers' 3: without it
 * torch looks for a per-channel observer's min_vals and resets eps), so
 * that model.load_state_dict(torch.load(path), strict=True) loads it into
 * the same torch model.  Waits for the work queued on the tensors.  Errors as
 * clt_save_torch; CLT_ERR_NULL_ARGUMENT for a NULL m or path.  Nothing is
 * taken. */
CLT_API clt_status clt_module_save_torch(const clt_module *m, const char *path);

/* model.load_state_dict(torch.load(path), strict) in one call: reads a
 * file torch.save wrote (as clt_load_torch reads it, with its refusals)
 * and copies each value into m's tensor of the same name, as
 * clt_module_load does for safetensors (dtype converted as param.copy_
 * converts, each tensor kept on its device with its handle,
 * requires_grad and gradient).  strict nonzero: every name of m's state
 * must be in the file and the file must hold nothing else, else
 * CLT_ERR_INVALID_ARGUMENT listing them all ("missing key(s) in state:
 * 1.bias; unexpected key(s) in state: 2.weight"); strict 0 loads the
 * names both hold and leaves the others, as torch's strict=False (which
 * returns the lists; here they are not reported).  Strict or not, a shape
 * that differs is CLT_ERR_INVALID_ARGUMENT naming the key and both shapes
 * ("size mismatch for 0.weight: copying a param with shape [3, 4] from
 * checkpoint, the shape in current model is [2, 4]").  On any failure m
 * is left as it was: the whole file is checked and every value uploaded
 * before the first tensor of m is written.  Lazy layers that have not run
 * take their sizes from the file, as clt_module_load's. */
CLT_API clt_status clt_module_load_torch(clt_module *m, const char *path, int strict);

/* ---- general checkpoints (torch.save of a dict) ------------------------------- */

/* PyTorch's "general checkpoint": one torch.save file of a dict holding a
 * model's state_dict, an optimizer's state_dict and plain values,
 *
 *   torch.save({'epoch': epoch, 'model_state_dict': model.state_dict(),
 *               'optimizer_state_dict': optimizer.state_dict(),
 *               'loss': loss}, PATH)
 *
 * written and read here as torch 1.13 writes and reads it:
 *
 *   clt_checkpoint_dict *ck;
 *   clt_checkpoint_dict_new(&ck);
 *   clt_checkpoint_dict_set_int(ck, "epoch", epoch);
 *   clt_checkpoint_dict_add_module(ck, "model_state_dict", model);
 *   clt_checkpoint_dict_add_optimizer(ck, "optimizer_state_dict", opt);
 *   clt_checkpoint_dict_add_scheduler(ck, "scheduler_state_dict", sched);
 *   clt_checkpoint_dict_set_double(ck, "loss", loss);
 *   clt_checkpoint_dict_save_torch(ck, "ck.pt");
 *   clt_checkpoint_dict_free(ck);
 *   ...
 *   clt_checkpoint_dict_load_torch("ck.pt", &ck);       // torch.load(PATH)
 *   clt_checkpoint_dict_load_module(ck, "model_state_dict", model, 1);
 *   clt_checkpoint_dict_load_optimizer(ck, "optimizer_state_dict", opt);
 *   clt_checkpoint_dict_load_scheduler(ck, "scheduler_state_dict", sched);
 *   clt_checkpoint_dict_get_int(ck, "epoch", &epoch);
 *   clt_checkpoint_dict_get_double(ck, "loss", &loss);
 *   clt_checkpoint_dict_free(ck);
 *
 * so that torch's checkpoint = torch.load(PATH);
 * model.load_state_dict(checkpoint['model_state_dict']);
 * optimizer.load_state_dict(checkpoint['optimizer_state_dict']) loads
 * ours, and ours loads torch's.  A checkpoint is either one being built
 * (clt_checkpoint_dict_new) or one read (clt_checkpoint_dict_load_torch): the add
 * and set calls take the first, the load and get calls the second
 * (CLT_ERR_INVALID_ARGUMENT otherwise).  Keys are UTF-8 strings; setting
 * a key again replaces its value in its place, as a Python dict does.
 *
 * The file: a dict (in the order of the keys' first setting) whose module
 * values are what clt_module_save_torch writes (an OrderedDict of tensors
 * with its _metadata), whose optimizer values are torch 1.13's
 * optimizer.state_dict(): {'state': {0: {'step': tensor(3.), 'exp_avg':
 * ..., 'exp_avg_sq': ...}, 1: ...}, 'param_groups': [{'lr': 0.001,
 * 'betas': (0.9, 0.999), 'eps': 1e-08, 'weight_decay': 0.0, 'amsgrad':
 * False, 'maximize': False, 'foreach': None, 'capturable': False,
 * 'differentiable': False, 'fused': False, 'params': [0, 1]}]}, each
 * kind's group keys in torch 1.13's order with its fixed ones ('foreach':
 * None, 'capturable', 'differentiable', 'fused': False, where torch 1.13's
 * group has them), the settings as floats (torch keeps the int 0 a user
 * passed: the same value), what schedules add ('initial_lr', ...) before
 * 'params'; the state of a parameter once it has been updated, under the
 * names clt_optimizer_save uses, with 'step' as torch 1.13 keeps it (a
 * 0-d float32 tensor for Adam, AdamW, Adagrad, Adamax, NAdam, RAdam and
 * ASGD, an int for RMSprop, Adadelta and Rprop, none for SGD, whose
 * 'momentum_buffer' is None without momentum); and plain values as
 * Python's int, float, str.  The kinds: SGD, Adam, AdamW, RMSprop,
 * Adagrad, Adamax, NAdam, RAdam, Adadelta, Rprop, ASGD, SparseAdam
 * ('step' an int, 'exp_avg', 'exp_avg_sq') and LBFGS, whose state torch
 * keeps on parameter 0 as {'func_evals': int, 'n_iter': int, 'd': tensor,
 * 't': float, 'old_dirs': [tensor, ...], 'old_stps': [...], 'ro': [0-d
 * tensor, ...], 'H_diag': 0-d tensor (the int 1 before any pair of
 * history), 'prev_flat_grad': tensor, 'prev_loss': float} in the
 * parameters' dtype (ro and H_diag rounded to it, which the steps use
 * them as: nothing lost), without torch's 'al' (scratch its step makes
 * again when the state lacks it).
 *
 * Threads: one checkpoint on one thread at a time. */
typedef struct clt_checkpoint_dict clt_checkpoint_dict;

/* A new, empty checkpoint to build.  Ownership: release with
 * clt_checkpoint_dict_free. */
CLT_API clt_status clt_checkpoint_dict_new(clt_checkpoint_dict **out);

/* Puts model.state_dict() of m under key: m is borrowed, not copied, and
 * its state is read when the checkpoint is saved (keep m until then).
 * Errors: CLT_ERR_NULL_ARGUMENT; CLT_ERR_INVALID_ARGUMENT for a key that
 * is not UTF-8 or a checkpoint that was read. */
CLT_API clt_status clt_checkpoint_dict_add_module(clt_checkpoint_dict *ck, const char *key,
                                             const clt_module *m);

/* Puts optimizer.state_dict() of opt under key (borrowed as
 * clt_checkpoint_dict_add_module borrows m; read when saved).  Errors as
 * clt_checkpoint_dict_add_module. */
CLT_API clt_status clt_checkpoint_dict_add_optimizer(clt_checkpoint_dict *ck, const char *key,
                                                const clt_optimizer *opt);

/* Puts scheduler.state_dict() of s under key ('scheduler_state_dict'
 * beside the optimizer's), borrowed as clt_checkpoint_dict_add_module
 * borrows m and read when saved: torch 1.13's keys in its order (the
 * kind's own, then 'base_lrs', 'last_epoch', 'verbose', '_step_count',
 * '_get_lr_called_within_step', '_last_lr'; LambdaLR's and
 * MultiplicativeLR's 'lr_lambdas' [None] last), the values of
 * clt_lr_scheduler_save's file as Python values (ints, floats, bools,
 * str, lists, MultiStepLR's 'milestones' a collections.Counter,
 * OneCycleLR's '_schedule_phases' a list of dicts), a SequentialLR's or
 * ChainedScheduler's schedules' state_dicts in a list under
 * '_schedulers'; torch's load_state_dict takes it.  Where it differs from
 * torch's: ReduceLROnPlateau's 'min_lrs' are floats (torch keeps the int
 * 0 a user passed: the same value); CyclicLR's has no '_scale_fn_ref' (a
 * weakref.WeakMethod, which torch 1.13's torch.save cannot write: torch
 * 1.13 fails to save its own CyclicLR's state_dict); OneCycleLR's has
 * 'anneal_strategy' ('cos' or 'linear') where torch's has 'anneal_func',
 * a bound method (pickling it pickles the whole schedule and its
 * optimizer); its 'max_lr' and 'min_lr' are in the optimizer's
 * param_groups, as torch keeps them.  SWALR's has 'anneal_func' as
 * torch pickles it, getattr(torch.optim.swa_utils.SWALR, '_cosine_anneal'
 * or '_linear_anneal'), its swa_lr in the optimizer's param_groups.
 * Errors as
 * clt_checkpoint_dict_add_module, and a schedule whose milestones or
 * rates do not fit (clt_lr_scheduler_save) is refused when saved. */
CLT_API clt_status clt_checkpoint_dict_add_scheduler(clt_checkpoint_dict *ck, const char *key,
                                                const clt_lr_scheduler *s);

/* Put a Python int, float (any double: Python's float holds nan and inf)
 * or str (UTF-8, copied) under key.  Errors as clt_checkpoint_dict_add_module
 * (a value that is not UTF-8 too). */
CLT_API clt_status clt_checkpoint_dict_set_int(clt_checkpoint_dict *ck, const char *key, int64_t v);
CLT_API clt_status clt_checkpoint_dict_set_double(clt_checkpoint_dict *ck, const char *key, double v);
CLT_API clt_status clt_checkpoint_dict_set_str(clt_checkpoint_dict *ck, const char *key, const char *v);

/* torch.save(dict, path) of ck's entries, as the section above says, the
 * modules' and optimizers' tensors read back then (a wait).  The archive
 * is made in host memory and written as clt_save_torch writes (nothing
 * written on failure).  Errors: CLT_ERR_NULL_ARGUMENT;
 * CLT_ERR_INVALID_ARGUMENT for a checkpoint that was read, or an
 * optimizer whose last step the driver stopped part-way (as
 * clt_optimizer_save); CLT_ERR_IO. */
CLT_API clt_status clt_checkpoint_dict_save_torch(const clt_checkpoint_dict *ck, const char *path);

/* torch.load(path) of a general checkpoint (ours, or torch 1.13's): the
 * file is read as clt_load_torch reads one (the same interpreter, limits
 * and refusals: globals but the allowed ones, opcodes torch does not
 * write, more than 4M objects, ...), and more: the pickle may hold dicts
 * (str or int keys), lists, tuples, ints, floats, bools, None and
 * strings, nested at most 64 deep (16M items in all), and SWALR's
 * anneal_func, getattr(torch.optim.swa_utils.SWALR, '_cosine_anneal' or
 * '_linear_anneal') (the only getattr taken; nothing is looked up or
 * called, a value standing for the name is made); the top is a dict
 * of str keys, none twice.  Every tensor of the file is checked against
 * its storage before anything is handed out; the values are read by the
 * calls below, which check what each key holds.  Ownership: *out is the
 * caller's, released with clt_checkpoint_dict_free (it holds the archive open
 * until then).  Errors: CLT_ERR_INVALID_ARGUMENT naming the file and what
 * is wrong (the byte of data.pkl for the pickle); CLT_ERR_IO. */
CLT_API clt_status clt_checkpoint_dict_load_torch(const char *path, clt_checkpoint_dict **out);

/* model.load_state_dict(checkpoint[key], strict): the value under key
 * must be a state_dict (a dict of str -> tensor) and is loaded into m as
 * clt_module_load_torch loads a file (strict or not, its checks and
 * messages, m left as it was on failure).  Errors: CLT_ERR_NULL_ARGUMENT;
 * CLT_ERR_INVALID_ARGUMENT for a key the checkpoint lacks, a value of
 * another type, and as clt_module_load_torch. */
CLT_API clt_status clt_checkpoint_dict_load_module(const clt_checkpoint_dict *ck, const char *key,
                                              clt_module *m, int strict);

/* optimizer.load_state_dict(checkpoint[key]) for opt, an optimizer of the
 * kind whose state_dict it is over parameters of the same shapes in the
 * same groups: the value must be a dict of 'state' (a dict of int -> a
 * dict of str -> tensor, None or, for 'step', an int or a one-element
 * tensor holding a count) and 'param_groups' (a list of dicts of str ->
 * int, float, bool, None, str, or tuples and lists of numbers; each dict
 * at most 256 keys, none twice), and is
 * read, checked and loaded as clt_optimizer_load reads its file (the
 * settings under torch's keys, each group's 'params', the state tensors
 * strictly by name and shape, their dtypes converted; the messages say
 * "__metadata__" for the group's keys): opt is left as it was on any
 * failure.  A parameter that the state leaves out (one torch never
 * updated) starts afresh, as torch's would.  The file does not say the
 * kind: Adam's state loads into an AdamW, as torch's does (the two read
 * weight_decay differently).  The counts: each parameter's 'step' (SGD,
 * which has none: 1 for a started momentum buffer; LBFGS, whose torch
 * state counts no steps: 1 once it has func_evals), clt_optimizer_steps
 * their largest.  LBFGS's state (on parameter 0, as the section above
 * says, 'al' ignored; t, H_diag and prev_loss ints, floats or one-element
 * tensors, ro's items too; old_dirs and old_stps vectors of d's dtype and
 * length, at most history_size of them) is checked and loaded as
 * clt_optimizer_load's file, so that the run goes on as torch's.  Errors: CLT_ERR_NULL_ARGUMENT; CLT_ERR_INVALID_ARGUMENT
 * (a key missing, a value of another type under a key, naming it as
 * "state[0]['exp_avg']", and clt_optimizer_load's refusals). */
CLT_API clt_status clt_checkpoint_dict_load_optimizer(const clt_checkpoint_dict *ck, const char *key,
                                                 clt_optimizer *opt);

/* scheduler.load_state_dict(checkpoint[key]) for s, a schedule of the
 * kind whose state_dict it is (made over the optimizer it drives, with
 * the run's callbacks): the value must be a dict of str keys, none twice,
 * whose values are None, bools, ints, floats, names (str), and lists,
 * tuples and dicts of them (a Counter too), a container's '_schedulers' a
 * list of such dicts; it is read, checked and loaded as
 * clt_lr_scheduler_load reads a file (the same keys, refusals and
 * messages, which say "__metadata__" for the dict; other keys are
 * ignored, as torch's 1.13's __dict__.update keeps them unread), s left as
 * it was on any failure.  The state_dict does not name its kind: one of
 * another kind is refused for a key it lacks.  SWALR's anneal_func is
 * read as the file's pickle gives it: getattr(torch.optim.swa_utils.SWALR,
 * '_cosine_anneal' or '_linear_anneal'), nothing looked up or called (any
 * other getattr refuses the file; a plain string there is refused here).
 * torch 1.13's own OneCycleLR checkpoint holds its anneal_func, a bound
 * method pickled as the whole schedule and optimizer objects (NEWOBJ of
 * their classes, BUILD, a defaultdict, the parameters):
 * clt_checkpoint_dict_load_torch refuses the file (the global
 * 'torch.optim.lr_scheduler.OneCycleLR').  A value that is not such a
 * dict (a tensor in it, ...) is CLT_ERR_INVALID_ARGUMENT naming it;
 * CLT_ERR_NULL_ARGUMENT. */
CLT_API clt_status clt_checkpoint_dict_load_scheduler(const clt_checkpoint_dict *ck,
                                                 const char *key, clt_lr_scheduler *s);

/* checkpoint[key] as a C value: get_int an int (not a bool), get_double a
 * float or an int (as Python's float() takes it) or a tensor of one
 * floating or integer element (a loss saved as a tensor: its value, read
 * from the file), get_str a str (*v borrowed from ck, NUL-terminated,
 * valid until clt_checkpoint_dict_free; a str holding U+0000 is refused).
 * Errors: CLT_ERR_NULL_ARGUMENT; CLT_ERR_INVALID_ARGUMENT for a key the
 * checkpoint lacks, a value of another type (naming both), an int beyond
 * int64 (refused when read), a checkpoint that was built, not read. */
CLT_API clt_status clt_checkpoint_dict_get_int(const clt_checkpoint_dict *ck, const char *key, int64_t *v);
CLT_API clt_status clt_checkpoint_dict_get_double(const clt_checkpoint_dict *ck, const char *key,
                                             double *v);
CLT_API clt_status clt_checkpoint_dict_get_str(const clt_checkpoint_dict *ck, const char *key,
                                          const char **v);

/* Whether the checkpoint (built or read) holds key (1) or not (0); 0 for
 * a NULL ck or key.  For optional entries ('scheduler', ...) before a get
 * or load. */
CLT_API int clt_checkpoint_dict_has(const clt_checkpoint_dict *ck, const char *key);

/* Releases ck (and, for one read, its archive); the modules and
 * optimizers it borrowed are left alone.  NULL does nothing. */
CLT_API void clt_checkpoint_dict_free(clt_checkpoint_dict *ck);

/* Reads a NumPy .npz archive (numpy.savez or numpy.savez_compressed:
 * members NAME.npy, stored or deflated) into new tensors on dev named NAME,
 * in the archive's order, each member read as clt_load_npy reads a file
 * (the same dtypes, byte orders, Fortran order and refusals; messages name
 * the member).  A member that is not NAME.npy (numpy.load hands such
 * members out as bytes) or appears twice is refused, as is a member whose
 * CRC does not match.  Ownership as clt_load_safetensors: release with
 * clt_named_tensors_free. */
CLT_API clt_status clt_load_npz(const char *path, clt_device *dev, clt_named_tensor **out,
                                size_t *n);

/* Writes the n named tensors as numpy.savez(path, **{name: t}) (compressed
 * 0) or numpy.savez_compressed (nonzero: deflated) writes them: members
 * NAME.npy in the order given, each as clt_save_npy writes it; numpy.load
 * reads them back.  n 0 writes an empty archive, as numpy.savez does.
 * The whole archive is made in host memory before it is written.  Errors
 * as clt_save_torch.  Nothing is taken. */
CLT_API clt_status clt_save_npz(const char *path, const clt_named_tensor *tensors, size_t n,
                                int compressed);

#ifdef __cplusplus
}
#endif

#endif
