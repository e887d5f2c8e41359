/* grad_attention.c: the fused scaled dot-product attention recorded as one
 * node (torch 2.1's name for its flash kernel's,
 * ScaledDotProductFlashAttentionBackward0), whose backward recomputes the
 * attention probabilities from the saved row logsumexps. */
#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* Node: saved q, k, v, out, lse and the mask (when given); i[0] the mask
 * kind, i[1] causal; s[0] the scale. */
static clt_status bw_sdpa(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *dq = NULL, *dk = NULL, *dv = NULL;
    clt_status st = clt__sdpa_backward(g, S(0), S(1), S(2), S(3), S(4),
                                       n->nsaved > 5 ? S(5) : NULL, (int)n->i[0], n->i[1] != 0,
                                       n->s[0], &dq, &dk, &dv, "clt_backward");
    if (st == CLT_OK) {
        clt_tensor **r[3] = {&dq, &dk, &dv};
        for (int j = 0; j < 3; j++)
            if (CLT__NEED(n, j)) {
                gin[j] = *r[j];
                *r[j] = NULL;
            }
    }
    clt_tensor_free(dq);
    clt_tensor_free(dk);
    clt_tensor_free(dv);
    return st;
}

clt_status clt__sdpa_rec(const char *fn, const clt_tensor *q, const clt_tensor *k,
                         const clt_tensor *v, const clt_tensor *mask, int mask_kind, bool causal,
                         double scale, clt_tensor **out)
{
    clt_tensor *lse = NULL;
    clt_status st = clt__sdpa_forward(q, k, v, mask, mask_kind, causal, scale, out, &lse, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[3] = {q, k, v}, *sv[6] = {q, k, v, *out, lse, mask};
    clt__node *nd = NULL;
    st = clt__record(st, out, "ScaledDotProductFlashAttentionBackward0", bw_sdpa, 3, in,
                     mask ? 6 : 5, sv, &nd);
    if (nd) {
        nd->i[0] = mask_kind;
        nd->i[1] = causal;
        nd->s[0] = scale;
    }
    clt_tensor_free(lse);
    return st;
}
