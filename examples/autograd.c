/* autograd.c: torch.autograd's first example in C.
 *
 *   x = torch.tensor([1., 2., 3.], requires_grad=True)
 *   y = (x * x + 3 * x).sum()
 *   y.backward()
 *   print(x.grad.tolist())        # [5.0, 7.0, 9.0]
 *
 * Every tensor made between clt_scope_begin and clt_scope_end is released
 * there: no list of temporaries. */
#include <cltensor.h>
#include <stdio.h>

int main(void)
{
    clt_device *dev;
    clt_tensor *x, *xx, *x3, *s, *y, *grad;
    char *text;
    const float values[3] = {1, 2, 3};
    if (clt_device_get("auto", &dev) != CLT_OK) {
        fprintf(stderr, "autograd: %s\n", clt_last_error());
        return 1;
    }
    clt_scope_begin();
    if (clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){3}, values, &x) != CLT_OK ||
        clt_set_requires_grad(x, 1) != CLT_OK || clt_mul(x, x, &xx) != CLT_OK ||
        clt_mul_scalar(x, 3, &x3) != CLT_OK || clt_add(xx, x3, &s) != CLT_OK ||
        clt_sum(s, &y) != CLT_OK || clt_backward(y, NULL, 0) != CLT_OK ||
        clt_grad(x, &grad) != CLT_OK || clt_tensor_format(grad, &text) != CLT_OK) {
        fprintf(stderr, "autograd: %s\n", clt_last_error());
        clt_scope_end();
        return 1;
    }
    puts(text); /* [5.0, 7.0, 9.0] */
    clt_free(text);
    clt_scope_end();
    clt_shutdown();
    return 0;
}
