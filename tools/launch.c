/* launch.c: cltensor launch, torchrun's job for cltensor programs: starts
 * N processes of one program with the variables clt_process_group_init
 * reads, and waits for them. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static void launch_usage(FILE *f)
{
    fprintf(f, "usage: cltensor launch --nproc N [--master-port PORT] [--] PROGRAM [ARGS...]\n"
               "  runs N processes of PROGRAM on this machine, like torchrun\n"
               "  --nproc_per_node: each gets RANK and LOCAL_RANK (0..N-1), WORLD_SIZE\n"
               "  and LOCAL_WORLD_SIZE (N), MASTER_ADDR (127.0.0.1) and MASTER_PORT (a\n"
               "  free port unless given).  When one exits with a failure the others are\n"
               "  stopped (SIGTERM); SIGINT, SIGTERM and SIGHUP sent to the launcher are\n"
               "  passed on to them.  Exit status: the worst of the processes that were\n"
               "  not stopped (128 + the signal for one killed by a signal).\n");
}

static int launch_bad(const char *what, const char *arg)
{
    if (arg)
        fprintf(stderr, "cltensor launch: %s '%s'\n", what, arg);
    else
        fprintf(stderr, "cltensor launch: %s\n", what);
    launch_usage(stderr);
    return 2;
}

/* A port nobody listens on now (the kernel's pick), or 0. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* A SIGINT, SIGTERM or SIGHUP that reached the launcher, passed on to the
 * processes as torchrun does. */
static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
    caught = sig;
}

static long parse_int(const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return s[0] && *end == '\0' && errno == 0 && v >= lo && v <= hi ? v : -1;
}

int cltensor_launch(int argc, char **argv)
{
    long nproc = -1, port = 0;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            launch_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--nproc") == 0) {
            if (i + 1 >= argc || (nproc = parse_int(argv[++i], 1, 4096)) < 0)
                return launch_bad("--nproc needs a count in [1, 4096], not", i < argc ? argv[i] : "");
        } else if (strcmp(argv[i], "--master-port") == 0) {
            if (i + 1 >= argc || (port = parse_int(argv[++i], 1, 65535)) < 0)
                return launch_bad("--master-port needs a port in [1, 65535], not",
                                  i < argc ? argv[i] : "");
        } else if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (argv[i][0] == '-') {
            return launch_bad("unknown option", argv[i]);
        } else {
            break;
        }
    }
    if (nproc < 0)
        return launch_bad("--nproc N is required", NULL);
    if (i >= argc)
        return launch_bad("no PROGRAM to run", NULL);
    if (port == 0 && (port = free_port()) == 0) {
        fprintf(stderr, "cltensor launch: no free port on 127.0.0.1: %s\n", strerror(errno));
        return 1;
    }
    pid_t *pids = calloc((size_t)nproc, sizeof *pids);
    int *stopped = calloc((size_t)nproc, sizeof *stopped);
    if (pids == NULL || stopped == NULL) {
        fprintf(stderr, "cltensor launch: out of memory\n");
        free(pids);
        free(stopped);
        return 1;
    }
    char v[32];
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    snprintf(v, sizeof v, "%ld", port);
    setenv("MASTER_PORT", v, 1);
    snprintf(v, sizeof v, "%ld", nproc);
    setenv("WORLD_SIZE", v, 1);
    setenv("LOCAL_WORLD_SIZE", v, 1);
    fflush(NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: wait() returns to pass it on */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    long started = 0;
    for (; started < nproc; started++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "cltensor launch: fork: %s\n", strerror(errno));
            break;
        }
        if (pid == 0) {
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            signal(SIGHUP, SIG_DFL);
            snprintf(v, sizeof v, "%ld", started);
            setenv("RANK", v, 1);
            setenv("LOCAL_RANK", v, 1);
            execvp(argv[i], argv + i);
            fprintf(stderr, "cltensor launch: cannot run '%s': %s\n", argv[i], strerror(errno));
            _exit(127);
        }
        pids[started] = pid;
    }
    int worst = started < nproc ? 1 : 0, failed = started < nproc;
    for (long left = started; left > 0;) {
        int status;
        pid_t pid = wait(&status);
        if (pid < 0 && errno == EINTR && caught) {
            for (long k = 0; k < started; k++)
                if (pids[k] > 0)
                    kill(pids[k], caught);
            if (worst < 128 + caught)
                worst = 128 + caught;
            caught = 0;
            continue;
        }
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        long r = 0;
        while (r < started && pids[r] != pid)
            r++;
        if (r == started)
            continue;
        pids[r] = 0;
        left--;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (!stopped[r] && code > worst)
            worst = code;
        if (code != 0 && !failed) {
            failed = 1;
            for (long k = 0; k < started; k++)
                if (pids[k] > 0) {
                    stopped[k] = 1;
                    kill(pids[k], SIGTERM);
                }
        }
    }
    if (failed) /* the others were stopped: their own statuses do not count */
        for (long k = 0; k < started; k++)
            if (pids[k] > 0)
                kill(pids[k], SIGTERM);
    free(pids);
    free(stopped);
    return worst;
}
