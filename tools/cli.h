/* cli.h: the subcommands of the cltensor tool that live in their own files. */
#ifndef CLT_CLI_H
#define CLT_CLI_H

/* cltensor warmup [--blas] [KIND]: builds every kernel program for a device
 * ahead of time (tools/warmup.c). */
int cltensor_warmup(int argc, char **argv);

/* cltensor bench [--json] [--quick] [--device KIND] [CASE...]: benchmarks
 * with same-run baselines (bench/bench.c). */
int cltensor_bench(int argc, char **argv);

/* cltensor launch --nproc N [--master-port PORT] [--] PROGRAM [ARGS...]:
 * N processes of PROGRAM with torchrun's variables (tools/launch.c). */
int cltensor_launch(int argc, char **argv);

#endif
