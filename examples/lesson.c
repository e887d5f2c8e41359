/* lesson.c: the device-independent PyTorch lesson in C.
 *
 *   cihaz = "cuda" if torch.cuda.is_available() else "cpu"
 *   x = torch.ones(2, 3).to(cihaz)
 *   sonuc = (x * 3).cpu()
 *   print(sonuc.tolist())
 *   print(sonuc.device.type == "cpu")
 *
 * Build against an installed cltensor with
 *   cc lesson.c $(pkg-config --cflags --libs cltensor)
 */
#include <stdio.h>
#include <string.h>

#include <cltensor.h>

int main(void)
{
    clt_device *cihaz = NULL, *cpu = NULL;
    clt_tensor *ones = NULL, *x = NULL, *y = NULL, *sonuc = NULL;
    char *text = NULL;
    int rc = 1;

    /* The tensor starts on the cpu device, like torch.ones(2, 3). */
    const char *kind = clt_is_available("cuda") ? "cuda" : "cpu";
    if (clt_device_get(kind, &cihaz) != CLT_OK || clt_device_get("cpu", &cpu) != CLT_OK)
        goto fail;

    int64_t shape[2] = {2, 3};
    if (clt_ones(cpu, CLT_FLOAT32, 2, shape, &ones) != CLT_OK ||
        clt_to(ones, cihaz, &x) != CLT_OK ||          /* .to(cihaz) */
        clt_mul_scalar(x, 3.0, &y) != CLT_OK ||       /* x * 3 */
        clt_to(y, cpu, &sonuc) != CLT_OK ||           /* .cpu() */
        clt_tensor_format(sonuc, &text) != CLT_OK)    /* .tolist() */
        goto fail;

    printf("%s\n", text);
    printf("%s\n", strcmp(clt_device_kind(clt_tensor_device(sonuc)), "cpu") == 0 ? "True"
                                                                               : "False");
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "lesson: %s\n", clt_last_error());
done:
    clt_free(text);
    clt_tensor_free(sonuc);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_tensor_free(ones);
    clt_shutdown();
    return rc;
}
