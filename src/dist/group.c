/* group.c: the process group: torchrun's environment, the TCP rendezvous at
 * rank 0, the ring of connections, and the timed transfers on it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dist/dist.h"

#define MAGIC 0x434c5444u /* "CLTD" */
#define MAGIC_P2P 0x434c5450u /* "CLTP": a direct connection's introduction */
#define PROTOCOL 1u

/* ---- time -------------------------------------------------------------------- */

double clt__dist_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Milliseconds left before deadline, for poll: at least 0, at most 1 s so
 * that the loop re-checks the clock. */
static int ms_left(double deadline)
{
    double left = deadline - clt__dist_now();
    if (left <= 0)
        return 0;
    return left > 1.0 ? 1000 : (int)(left * 1000.0) + 1;
}

static void nap(double deadline, double s)
{
    double left = deadline - clt__dist_now();
    if (left < s)
        s = left > 0 ? left : 0;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ---- the environment ------------------------------------------------------------ */

/* An integer variable of torchrun's, or the field's value when set. */
static clt_status env_int(const char *name, long lo, long hi, long *v, const char *fn)
{
    const char *s = getenv(name);
    char q[CLT__QUOTE_SIZE];
    if (s == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the environment variable %s is not set (as torchrun sets it), "
                          "nor is it given in the options",
                          fn, name);
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (s[0] == '\0' || *end != '\0' || errno != 0 || x < lo || x > hi)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the environment variable %s='%s' is not an integer in [%ld, %ld]",
                          fn, name, CLT__QUOTE(q, s), lo, hi);
    *v = x;
    return CLT_OK;
}

/* ---- sockets ------------------------------------------------------------------------ */

static int set_socket_flags(int fd)
{
    int one = 1;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Sends or receives all of buf on fd before deadline. */
static clt_status xfer_all(int fd, bool sending, void *buf, size_t n, double deadline,
                           int peer, const char *fn, const char *what)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k == 0 || (k < 0 && (errno == ECONNRESET || errno == EPIPE)))
            return clt__error(CLT_ERR_IO, "%s: rank %d closed the connection (%s)", fn, peer,
                              what);
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return clt__error(CLT_ERR_IO, "%s: rank %d: %s (%s)", fn, peer, strerror(errno),
                              what);
        struct pollfd pf = {fd, sending ? POLLOUT : POLLIN, 0};
        if (clt__dist_now() >= deadline)
            return clt__error(CLT_ERR_IO, "%s: timed out waiting for rank %d (%s)", fn, peer,
                              what);
        (void)poll(&pf, 1, ms_left(deadline));
    }
    return CLT_OK;
}

/* A connected socket to addr before deadline, retrying while nobody
 * listens yet (as torch's TCPStore clients do); -1 with the last error in
 * *err at the deadline. */
static int connect_retry(const struct sockaddr *addr, socklen_t len, double deadline, int *err)
{
    *err = ETIMEDOUT;
    do {
        int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            *err = errno;
            return -1;
        }
        if (set_socket_flags(fd) == 0) {
            int rc = connect(fd, addr, len);
            if (rc < 0 && errno == EINPROGRESS) {
                struct pollfd pf = {fd, POLLOUT, 0};
                while ((rc = poll(&pf, 1, ms_left(deadline))) == 0 && clt__dist_now() < deadline)
                    ;
                int e = ETIMEDOUT;
                socklen_t el = sizeof e;
                if (rc > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0)
                    return fd;
                *err = e;
            } else if (rc == 0) {
                return fd;
            } else {
                *err = errno;
            }
        } else {
            *err = errno;
        }
        close(fd);
        nap(deadline, 0.05);
    } while (clt__dist_now() < deadline);
    return -1;
}

/* A listening socket on addr (its port may be 0: any), or -1. */
static int listen_on(struct sockaddr_storage *addr, socklen_t len, int *err)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (set_socket_flags(fd) < 0 || bind(fd, (struct sockaddr *)addr, len) < 0 ||
        listen(fd, 128) < 0 || getsockname(fd, (struct sockaddr *)addr, &len) < 0) {
        *err = errno;
        close(fd);
        return -1;
    }
    return fd;
}

/* The next connection on listener fd before deadline, or -1. */
static int accept_before(int fd, double deadline)
{
    for (;;) {
        int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c >= 0) {
            int one = 1;
            (void)setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return c;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
            errno != ECONNABORTED)
            return -1;
        if (clt__dist_now() >= deadline)
            return -1;
        struct pollfd pf = {fd, POLLIN, 0};
        (void)poll(&pf, 1, ms_left(deadline));
    }
}

static uint16_t port_of(const struct sockaddr_storage *a)
{
    return ntohs(a->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
                                          : ((const struct sockaddr_in *)a)->sin_port);
}

static void set_port(struct sockaddr_storage *a, uint16_t port)
{
    if (a->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)a)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)a)->sin_port = htons(port);
}

static socklen_t addr_len(const struct sockaddr_storage *a)
{
    return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* ---- the rendezvous ------------------------------------------------------------------- */

/* What a rank tells rank 0, and what rank 0 answers (network order). */
typedef struct hello {
    uint32_t magic, protocol, rank, world, ring_port;
} hello;

enum { REPLY_OK = 0, REPLY_WORLD = 1, REPLY_RANK = 2, REPLY_TWICE = 3, REPLY_ABORT = 4 };

/* One ring address: family 0 stands for rank 0's master address. */
typedef struct wire_addr {
    uint32_t family, port;
    unsigned char addr[16];
} wire_addr;

static void to_wire(const struct sockaddr_storage *a, wire_addr *w)
{
    memset(w, 0, sizeof *w);
    w->family = htonl(a->ss_family == AF_INET6 ? 6u : 4u);
    w->port = htonl(port_of(a));
    if (a->ss_family == AF_INET6)
        memcpy(w->addr, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
    else
        memcpy(w->addr, &((const struct sockaddr_in *)a)->sin_addr, 4);
}

static void from_wire(const wire_addr *w, const struct sockaddr_storage *master,
                      struct sockaddr_storage *a)
{
    memset(a, 0, sizeof *a);
    uint32_t fam = ntohl(w->family);
    if (fam == 0) {
        *a = *master;
    } else if (fam == 6) {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)a;
        s->sin6_family = AF_INET6;
        memcpy(&s->sin6_addr, w->addr, 16);
    } else {
        struct sockaddr_in *s = (struct sockaddr_in *)a;
        s->sin_family = AF_INET;
        memcpy(&s->sin_addr, w->addr, 4);
    }
    set_port(a, (uint16_t)ntohl(w->port));
}

typedef struct boot {
    clt_process_group *pg;
    const char *host;
    int port;
    double deadline;
    struct sockaddr_storage master, ring;
    int master_fd, ring_fd;  /* listeners (rank 0 holds master_fd) */
    int *peers;              /* rank 0: each rank's connection; others: [0] to rank 0 */
    wire_addr *table;        /* every rank's ring listener */
} boot;

static clt_status resolve(boot *b, const char *fn)
{
    char q[CLT__QUOTE_SIZE], port[16];
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof port, "%d", b->port);
    int rc = getaddrinfo(b->host, port, &hints, &res);
    if (rc != 0 || res == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: MASTER_ADDR '%s' does not resolve: %s",
                          fn, CLT__QUOTE(q, b->host), gai_strerror(rc));
    /* IPv4 first, as "localhost" should mean 127.0.0.1 where ::1 may be off */
    const struct addrinfo *pick = res;
    for (const struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
    memcpy(&b->master, pick->ai_addr, pick->ai_addrlen);
    freeaddrinfo(res);
    return CLT_OK;
}

/* Rank 0: takes every other rank's hello, then answers each with the
 * table of ring addresses. */
static clt_status gather_ranks(boot *b, const char *fn)
{
    clt_process_group *pg = b->pg;
    int n = pg->size, joined = 1, err = 0;
    char q[CLT__QUOTE_SIZE];
    uint32_t reply = REPLY_OK;
    clt_status st = CLT_OK;
    b->master_fd = listen_on(&b->master, addr_len(&b->master), &err);
    if (b->master_fd < 0)
        return clt__error(CLT_ERR_IO, "%s: rank 0 cannot listen on %s port %d: %s", fn,
                          CLT__QUOTE(q, b->host), b->port, strerror(err));
    to_wire(&b->ring, &b->table[0]);
    b->table[0].family = 0;
    while (joined < n) {
        int c = accept_before(b->master_fd, b->deadline);
        if (c < 0) {
            clt__strbuf sb = {0};
            for (int r = 1; r < n; r++)
                if (b->peers[r] < 0)
                    clt__sb_printf(&sb, "%s%d", sb.len ? ", " : "", r);
            char *missing = clt__sb_take(&sb);
            st = clt__error(CLT_ERR_IO,
                            "%s: rank 0 waited %g s for %d of %d ranks; missing: rank %s", fn,
                            pg->timeout_s, n - joined, n - 1, missing ? missing : "?");
            free(missing);
            goto done;
        }
        hello h;
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        if (xfer_all(c, false, &h, sizeof h, b->deadline, -1, fn, "rendezvous") != CLT_OK ||
            ntohl(h.magic) != MAGIC || ntohl(h.protocol) != PROTOCOL ||
            getpeername(c, (struct sockaddr *)&from, &fl) < 0) {
            close(c); /* not one of ours (a port scanner, an old run): ignored */
            continue;
        }
        uint32_t r = ntohl(h.rank), w = ntohl(h.world);
        if (w != (uint32_t)n || r == 0 || r >= (uint32_t)n || b->peers[r] >= 0) {
            reply = w != (uint32_t)n           ? REPLY_WORLD
                    : r == 0 || r >= (uint32_t)n ? REPLY_RANK
                                                 : REPLY_TWICE;
            uint32_t ans[2] = {htonl(reply), htonl((uint32_t)n)};
            (void)xfer_all(c, true, ans, sizeof ans, b->deadline, (int)r, fn, "rendezvous");
            close(c);
            if (reply == REPLY_WORLD)
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: rank %u says world_size %u, rank 0 has %d", fn, r, w, n);
            else if (reply == REPLY_TWICE)
                st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: two processes say rank %u",
                                fn, r);
            else
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: a process says rank %u, outside [1, %d)", fn, r, n);
            goto done;
        }
        b->peers[r] = c;
        set_port(&from, (uint16_t)ntohl(h.ring_port));
        to_wire(&from, &b->table[r]);
        joined++;
    }
    for (int r = 1; r < n; r++) {
        uint32_t ans[2] = {htonl(REPLY_OK), htonl((uint32_t)n)};
        CLT__TRY(xfer_all(b->peers[r], true, ans, sizeof ans, b->deadline, r, fn,
                          "rendezvous"));
        CLT__TRY(xfer_all(b->peers[r], true, b->table, sizeof(wire_addr) * (size_t)n,
                          b->deadline, r, fn, "rendezvous"));
    }
done:
    if (st != CLT_OK) /* the ranks that joined learn it from their closed connection */
        for (int r = 1; r < n; r++) {
            uint32_t ans[2] = {htonl(REPLY_ABORT), htonl((uint32_t)n)};
            if (b->peers[r] >= 0)
                (void)xfer_all(b->peers[r], true, ans, sizeof ans, clt__dist_now() + 0.1, r, fn, "");
        }
    return st;
}

/* Ranks 1..n-1: hello to rank 0, then its table. */
static clt_status join_rank0(boot *b, const char *fn)
{
    clt_process_group *pg = b->pg;
    char q[CLT__QUOTE_SIZE];
    int err;
    int fd = connect_retry((struct sockaddr *)&b->master, addr_len(&b->master), b->deadline,
                           &err);
    if (fd < 0)
        return clt__error(CLT_ERR_IO, "%s: rank %d could not reach rank 0 at %s port %d within "
                          "%g s: %s",
                          fn, pg->rank, CLT__QUOTE(q, b->host), b->port, pg->timeout_s,
                          strerror(err));
    b->peers[0] = fd;
    /* The ring listener on the address that reaches rank 0. */
    socklen_t len = sizeof b->ring;
    if (getsockname(fd, (struct sockaddr *)&b->ring, &len) < 0)
        return clt__error(CLT_ERR_IO, "%s: getsockname: %s", fn, strerror(errno));
    set_port(&b->ring, 0);
    b->ring_fd = listen_on(&b->ring, addr_len(&b->ring), &err);
    if (b->ring_fd < 0)
        return clt__error(CLT_ERR_IO, "%s: rank %d cannot listen: %s", fn, pg->rank,
                          strerror(err));
    hello h = {htonl(MAGIC), htonl(PROTOCOL), htonl((uint32_t)pg->rank),
               htonl((uint32_t)pg->size), htonl(port_of(&b->ring))};
    clt_status st = xfer_all(fd, true, &h, sizeof h, b->deadline, 0, fn, "rendezvous");
    uint32_t ans[2];
    if (st == CLT_OK)
        st = xfer_all(fd, false, ans, sizeof ans, b->deadline, 0, fn, "rendezvous");
    if (st != CLT_OK)
        return st;
    switch (ntohl(ans[0])) {
    case REPLY_OK:
        return xfer_all(fd, false, b->table, sizeof(wire_addr) * (size_t)pg->size, b->deadline,
                        0, fn, "rendezvous");
    case REPLY_WORLD:
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: world_size %d here, %u on rank 0", fn,
                          pg->size, ntohl(ans[1]));
    case REPLY_TWICE:
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: another process has joined as rank %d already", fn, pg->rank);
    default:
        return clt__error(CLT_ERR_IO, "%s: rank 0 gave up the rendezvous (see its message)",
                          fn);
    }
}

/* Every rank: a connection to the next rank's ring listener, and one from
 * the previous rank, each introduced by its rank. */
static clt_status wire_ring(boot *b, const char *fn)
{
    clt_process_group *pg = b->pg;
    int next = (pg->rank + 1) % pg->size, prev = (pg->rank + pg->size - 1) % pg->size, err;
    struct sockaddr_storage a;
    from_wire(&b->table[next], &b->master, &a);
    pg->next_fd = connect_retry((struct sockaddr *)&a, addr_len(&a), b->deadline, &err);
    if (pg->next_fd < 0)
        return clt__error(CLT_ERR_IO, "%s: rank %d could not connect to rank %d: %s", fn,
                          pg->rank, next, strerror(err));
    uint32_t me[2] = {htonl(MAGIC), htonl((uint32_t)pg->rank)}, them[2] = {0, 0};
    clt_status st = xfer_all(pg->next_fd, true, me, sizeof me, b->deadline, next, fn,
                             "wiring the ring");
    while (st == CLT_OK) {
        int c = accept_before(b->ring_fd, b->deadline);
        if (c < 0)
            return clt__error(CLT_ERR_IO, "%s: rank %d waited %g s for rank %d to connect", fn,
                              pg->rank, pg->timeout_s, prev);
        them[0] = them[1] = 0;
        if (xfer_all(c, false, them, sizeof them, b->deadline, prev, fn, "wiring the ring") ==
                CLT_OK &&
            ntohl(them[0]) == MAGIC && ntohl(them[1]) == (uint32_t)prev) {
            pg->prev_fd = c;
            break;
        }
        /* A rank done with its own wiring may already open a direct
         * connection here: kept for clt__dist_direct. */
        uint32_t from = ntohl(them[1]);
        if (ntohl(them[0]) == MAGIC_P2P && from < (uint32_t)pg->rank && pg->direct[from] < 0) {
            pg->direct[from] = c;
            continue;
        }
        close(c); /* a stranger */
    }
    return st;
}

clt_status clt_process_group_init(const clt_dist_opts *opts, clt_process_group **out)
{
    static const char fn[] = "clt_process_group_init";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    const clt_dist_opts defaults = CLT_DIST_OPTS_DEFAULTS;
    if (opts == NULL)
        opts = &defaults;
    long world = opts->world_size, rank = opts->rank, port = opts->master_port;
    const char *host = opts->master_addr;
    char q[CLT__QUOTE_SIZE];
    clt_status st = CLT_OK;
    if (world < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: world_size %ld", fn, world);
    if (world == 0 && (st = env_int("WORLD_SIZE", 1, INT_MAX, &world, fn)) != CLT_OK)
        return st;
    if (rank < 0 && (st = env_int("RANK", 0, world - 1, &rank, fn)) != CLT_OK)
        return st;
    if (rank >= world)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: rank %ld outside [0, %ld)", fn, rank,
                          world);
    if (!(opts->timeout_s >= 0) || opts->timeout_s > 1e9)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: timeout_s %g", fn, opts->timeout_s);
    if (world > 1) {
        if (host == NULL && (host = getenv("MASTER_ADDR")) == NULL)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the environment variable MASTER_ADDR is not set (as torchrun "
                              "sets it), nor is it given in the options",
                              fn);
        if (host[0] == '\0')
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: MASTER_ADDR is empty", fn);
        if (port < 0 || port > 65535)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: master_port %ld outside [1, 65535]",
                              fn, port);
        if (port == 0 && (st = env_int("MASTER_PORT", 1, 65535, &port, fn)) != CLT_OK)
            return st;
    }
    clt_process_group *pg = clt__calloc(1, sizeof *pg);
    boot b = {0};
    b.master_fd = b.ring_fd = -1;
    if (pg) {
        pg->next_fd = pg->prev_fd = pg->listen_fd = -1;
        b.peers = clt__malloc(sizeof(int) * (size_t)world);
        pg->direct = clt__malloc(sizeof(int) * (size_t)world);
        pg->size = (int)world;
        for (long r = 0; pg->direct && r < world; r++)
            pg->direct[r] = -1;
        pg->addrs = clt__calloc((size_t)world, sizeof *pg->addrs);
    }
    if (pg && b.peers)
        b.table = clt__calloc((size_t)world, sizeof(wire_addr));
    if (pg == NULL || b.peers == NULL || b.table == NULL || pg->direct == NULL ||
        pg->addrs == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    pg->rank = (int)rank;
    pg->size = (int)world;
    pg->timeout_s = opts->timeout_s > 0 ? opts->timeout_s : 1800.0;
    for (long r = 0; r < world; r++)
        b.peers[r] = -1;
    if (world > 1) {
        b.pg = pg;
        b.host = host;
        b.port = (int)port;
        b.deadline = clt__dist_now() + pg->timeout_s;
        CLT__TRY(resolve(&b, fn));
        if (rank == 0) {
            int err;
            b.ring = b.master;
            set_port(&b.ring, 0);
            b.ring_fd = listen_on(&b.ring, addr_len(&b.ring), &err);
            if (b.ring_fd < 0) {
                st = clt__error(CLT_ERR_IO, "%s: rank 0 cannot listen on %s: %s", fn,
                                CLT__QUOTE(q, host), strerror(err));
                goto done;
            }
            CLT__TRY(gather_ranks(&b, fn));
        } else {
            CLT__TRY(join_rank0(&b, fn));
        }
        CLT__TRY(wire_ring(&b, fn));
        for (long r = 0; r < world; r++)
            from_wire(&b.table[r], &b.master, &pg->addrs[r]);
        pg->listen_fd = b.ring_fd; /* kept for direct connections */
        b.ring_fd = -1;
    }
done:
    if (b.peers)
        for (long r = 0; r < world; r++)
            close_fd(&b.peers[r]);
    close_fd(&b.master_fd);
    close_fd(&b.ring_fd);
    free(b.peers);
    free(b.table);
    if (st != CLT_OK) {
        clt_process_group_free(pg);
        return st;
    }
    *out = pg;
    return clt__ok();
}

void clt_process_group_free(clt_process_group *pg)
{
    if (pg == NULL)
        return;
    close_fd(&pg->next_fd);
    close_fd(&pg->prev_fd);
    close_fd(&pg->listen_fd);
    for (int r = 0; pg->direct && r < pg->size; r++)
        close_fd(&pg->direct[r]);
    free(pg->direct);
    free(pg->addrs);
    free(pg);
}

int clt_process_group_rank(const clt_process_group *pg)
{
    return pg ? pg->rank : -1;
}

int clt_process_group_size(const clt_process_group *pg)
{
    return pg ? pg->size : 0;
}

/* ---- transfers on the ring ---------------------------------------------------------------- */

clt_status clt__dist_usable(const clt_process_group *pg, const char *fn)
{
    CLT__REQUIRE_ARG(pg, fn);
    if (pg->broken)
        return clt__error(CLT_ERR_IO,
                          "%s: the process group failed in an earlier call (a peer died or "
                          "timed out): free it and make a new one",
                          fn);
    return CLT_OK;
}

clt_status clt__dist_sendrecv(clt_process_group *pg, const void *s, size_t sn, void *r,
                              size_t rn, const char *fn)
{
    const unsigned char *sp = s;
    unsigned char *rp = r;
    int next = (pg->rank + 1) % pg->size, prev = (pg->rank + pg->size - 1) % pg->size;
    double deadline = clt__dist_now() + pg->timeout_s;
    clt_status st = CLT_OK;
    while (sn > 0 || rn > 0) {
        struct pollfd pf[2] = {{pg->next_fd, sn ? POLLOUT : 0, 0},
                               {pg->prev_fd, rn ? POLLIN : 0, 0}};
        int rc = poll(pf, 2, ms_left(deadline));
        if (rc < 0 && errno != EINTR) {
            st = clt__error(CLT_ERR_IO, "%s: poll: %s", fn, strerror(errno));
            break;
        }
        if (sn && (pf[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t k = send(pg->next_fd, sp, sn, MSG_NOSIGNAL);
            if (k > 0) {
                sp += k;
                sn -= (size_t)k;
            } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                st = clt__error(CLT_ERR_IO, "%s: rank %d is gone (sending to it: %s)", fn, next,
                                strerror(errno));
                break;
            }
        }
        if (rn && (pf[1].revents & (POLLIN | POLLERR | POLLHUP))) {
            ssize_t k = recv(pg->prev_fd, rp, rn, 0);
            if (k > 0) {
                rp += k;
                rn -= (size_t)k;
            } else if (k == 0) {
                st = clt__error(CLT_ERR_IO, "%s: rank %d closed its connection (it exited or "
                                "freed its group)",
                                fn, prev);
                break;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                st = clt__error(CLT_ERR_IO, "%s: rank %d is gone (receiving from it: %s)", fn,
                                prev, strerror(errno));
                break;
            }
        }
        if ((sn > 0 || rn > 0) && clt__dist_now() >= deadline) {
            st = clt__error(CLT_ERR_IO, "%s: timed out after %g s waiting for rank %d", fn,
                            pg->timeout_s, rn ? prev : next);
            break;
        }
    }
    if (st != CLT_OK)
        pg->broken = true;
    return st;
}

void clt__dist_part(const clt_process_group *pg, size_t n, int c, size_t *lo, size_t *hi)
{
    size_t w = (size_t)pg->size, base = n / w, extra = n % w, k = (size_t)c;
    *lo = k * base + (k < extra ? k : extra);
    *hi = *lo + base + (k < extra ? 1 : 0);
}

clt_status clt__dist_ring_gather(clt_process_group *pg, unsigned char *buf, size_t n,
                                 size_t esize, int first, const char *fn)
{
    int w = pg->size;
    for (int s = 0; s < w - 1; s++) {
        int send = ((first - s) % w + w) % w, recv = ((first - s - 1) % w + w) % w;
        size_t slo, shi, rlo, rhi;
        clt__dist_part(pg, n, send, &slo, &shi);
        clt__dist_part(pg, n, recv, &rlo, &rhi);
        clt_status st = clt__dist_sendrecv(pg, buf + slo * esize, (shi - slo) * esize,
                                           buf + rlo * esize, (rhi - rlo) * esize, fn);
        if (st != CLT_OK)
            return st;
    }
    return CLT_OK;
}

clt_status clt__dist_ring_gatherv(clt_process_group *pg, unsigned char *buf, const size_t *off,
                                  int first, const char *fn)
{
    int w = pg->size;
    for (int s = 0; s < w - 1; s++) {
        int send = ((first - s) % w + w) % w, recv = ((first - s - 1) % w + w) % w;
        clt_status st = clt__dist_sendrecv(pg, buf + off[send], off[send + 1] - off[send],
                                           buf + off[recv], off[recv + 1] - off[recv], fn);
        if (st != CLT_OK)
            return st;
    }
    return CLT_OK;
}

/* ---- direct connections (point-to-point) ---------------------------------------------------- */

clt_status clt__dist_xfer(clt_process_group *pg, int fd, bool sending, void *buf, size_t n,
                          double deadline, int peer, const char *fn, const char *what)
{
    clt_status st = xfer_all(fd, sending, buf, n, deadline, peer, fn, what);
    if (st != CLT_OK)
        pg->broken = true;
    return st;
}

clt_status clt__dist_direct(clt_process_group *pg, int peer, double deadline, int *fd,
                            const char *fn)
{
    int err;
    *fd = -1;
    if (pg->direct[peer] < 0 && pg->rank < peer) {
        const struct sockaddr_storage *a = &pg->addrs[peer];
        int c = connect_retry((const struct sockaddr *)a, addr_len(a), deadline, &err);
        if (c < 0) {
            pg->broken = true;
            return clt__error(CLT_ERR_IO, "%s: rank %d could not connect to rank %d within "
                              "%g s: %s",
                              fn, pg->rank, peer, pg->timeout_s, strerror(err));
        }
        uint32_t me[2] = {htonl(MAGIC_P2P), htonl((uint32_t)pg->rank)};
        clt_status st = clt__dist_xfer(pg, c, true, me, sizeof me, deadline, peer, fn,
                                       "opening a direct connection");
        if (st != CLT_OK) {
            close(c);
            return st;
        }
        pg->direct[peer] = c;
    }
    while (pg->direct[peer] < 0) {
        int c = accept_before(pg->listen_fd, deadline);
        if (c < 0) {
            pg->broken = true;
            return clt__error(CLT_ERR_IO, "%s: timed out after %g s waiting for rank %d to "
                              "connect",
                              fn, pg->timeout_s, peer);
        }
        uint32_t them[2];
        uint32_t from = UINT32_MAX;
        if (xfer_all(c, false, them, sizeof them, deadline, -1, fn, "a direct connection") ==
                CLT_OK &&
            ntohl(them[0]) == MAGIC_P2P)
            from = ntohl(them[1]);
        if (from < (uint32_t)pg->rank && pg->direct[from] < 0)
            pg->direct[from] = c; /* the peer's, or another rank's kept for later */
        else
            close(c); /* a stranger */
    }
    *fd = pg->direct[peer];
    return CLT_OK;
}
