/* p2p.c: send and recv between two ranks over their direct connection: a
 * header each way (so that a mismatch fails both sides), then the data. */
#include <stdlib.h>

#include "dist/dist.h"

/* Whether a (this rank's call) and b (the peer's) make a pair. */
static bool matches(const clt__dist_hdr *a, const clt__dist_hdr *b)
{
    return a->kind != b->kind && a->dtype == b->dtype && a->ndim == b->ndim &&
           a->arg2 == b->arg2 &&
           memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)CLT_MAX_DIMS) == 0;
}

/* Sends t, or receives into `into` (t == into). */
static clt_status p2p(clt_process_group *pg, const clt_tensor *t, clt_tensor *into,
                      bool sending, int peer, int tag, const char *fn)
{
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    if (peer < 0 || peer >= pg->size || peer == pg->rank)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: invalid %s rank %d: it must be in [0, %d) and not this "
                          "process's rank (%d)",
                          fn, sending ? "destination" : "source", peer, pg->size, pg->rank);
    clt__dist_hdr mine = {sending ? CLT__DIST_SEND : CLT__DIST_RECV, 0, 0, peer, 0, {0}, tag};
    clt__dist_hdr theirs;
    unsigned char *buf = NULL;
    int fd = -1;
    double deadline = clt__dist_now() + pg->timeout_s;
    clt_status local = clt__dist_stage_in(t, !sending, 1, sending ? 0 : -1, 0, &mine, &buf, fn);
    mine.failed = local != CLT_OK;
    CLT__TRY(clt__dist_direct(pg, peer, deadline, &fd, fn));
    CLT__TRY(clt__dist_xfer(pg, fd, true, &mine, sizeof mine, deadline, peer, fn, "the header"));
    CLT__TRY(clt__dist_xfer(pg, fd, false, &theirs, sizeof theirs, deadline, peer, fn,
                            "the header"));
    if (local != CLT_OK) {
        st = local; /* its own message stays */
        goto done;
    }
    if (theirs.failed) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: rank %d failed its part before the exchange (its own message says "
                        "why)",
                        fn, peer);
        goto done;
    }
    if (!matches(&mine, &theirs)) {
        clt__strbuf a = {0}, b = {0};
        clt__dist_describe(&a, &mine);
        clt__dist_describe(&b, &theirs);
        char *sa = clt__sb_take(&a), *sb = clt__sb_take(&b);
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: the ranks' calls do not match: rank %d made %s, rank %d %s", fn,
                        pg->rank, sa ? sa : "?", peer, sb ? sb : "?");
        free(sa);
        free(sb);
        goto done;
    }
    size_t nb = clt_tensor_nbytes(t);
    CLT__TRY(clt__dist_xfer(pg, fd, sending, buf, nb, deadline, peer, fn, "the data"));
    if (!sending)
        CLT__TRY(clt__dist_stage_out(into, buf, nb, fn));
    st = clt__ok();
done:
    free(buf);
    return st;
}

clt_status clt_send(clt_process_group *pg, const clt_tensor *t, int dst, int tag)
{
    return p2p(pg, t, NULL, true, dst, tag, "clt_send");
}

clt_status clt_recv(clt_process_group *pg, clt_tensor *t, int src, int tag)
{
    return p2p(pg, t, t, false, src, tag, "clt_recv");
}
