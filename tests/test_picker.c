/* test_picker.c: the pure device picker (clt_pick, clt_pick_label,
 * clt_classify) on simulated machines; no OpenCL needed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltensor.h"

#define MAX_DEVS 16

static clt_device_info base(clt_device_type type, const char *name, const char *vendor,
                            unsigned vendor_id, const char *platform, const char *platform_vendor)
{
    clt_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    snprintf(d.vendor, sizeof d.vendor, "%s", vendor);
    snprintf(d.platform_name, sizeof d.platform_name, "%s", platform);
    snprintf(d.platform_vendor, sizeof d.platform_vendor, "%s", platform_vendor);
    snprintf(d.device_version, sizeof d.device_version, "OpenCL 3.0");
    snprintf(d.driver_version, sizeof d.driver_version, "1.0");
    d.vendor_id = vendor_id;
    d.type = type;
    d.fp64 = 1;
    d.fp16 = 1;
    d.cl_major = 3;
    d.cl_minor = 0;
    d.compute_units = 8;
    d.max_clock_mhz = 1000;
    d.global_mem_bytes = (uint64_t)8 << 30;
    d.max_alloc_bytes = (uint64_t)2 << 30;
    d.max_work_group_size = 1024;
    return d;
}

static clt_device_info nvidia(const char *name, unsigned cu, unsigned mhz, unsigned gib)
{
    clt_device_info d = base(CLT_DEVICE_TYPE_GPU, name, "NVIDIA Corporation", 0x10de,
                             "NVIDIA CUDA", "NVIDIA Corporation");
    d.compute_units = cu;
    d.max_clock_mhz = mhz;
    d.global_mem_bytes = (uint64_t)gib << 30;
    return d;
}

static clt_device_info amd_discrete(void)
{
    clt_device_info d = base(CLT_DEVICE_TYPE_GPU, "gfx1100", "Advanced Micro Devices, Inc.",
                             0x1002, "AMD Accelerated Parallel Processing",
                             "Advanced Micro Devices, Inc.");
    d.compute_units = 48;
    d.max_clock_mhz = 2500;
    d.global_mem_bytes = (uint64_t)24 << 30;
    return d;
}

/* An APU with more compute than the discrete card above, so only the
 * discrete rule can put it second. */
static clt_device_info amd_apu(void)
{
    clt_device_info d = base(CLT_DEVICE_TYPE_GPU, "gfx1103", "Advanced Micro Devices, Inc.",
                             0x1002, "AMD Accelerated Parallel Processing",
                             "Advanced Micro Devices, Inc.");
    d.host_unified_memory = 1;
    d.compute_units = 96;
    d.max_clock_mhz = 2700;
    d.global_mem_bytes = (uint64_t)32 << 30;
    return d;
}

static clt_device_info apple_gpu(void)
{
    /* Apple reports a vendor id of its own (0x1027f00), not its PCI id. */
    clt_device_info d = base(CLT_DEVICE_TYPE_GPU, "Apple M2 Max", "Apple", 0x1027f00, "Apple",
                             "Apple");
    d.host_unified_memory = 1;
    d.fp64 = 0;
    d.cl_major = 1;
    d.cl_minor = 2;
    d.compute_units = 38;
    return d;
}

static clt_device_info intel_igpu(void)
{
    clt_device_info d = base(CLT_DEVICE_TYPE_GPU, "Intel(R) UHD Graphics 770", "Intel(R) Corporation",
                             0x8086, "Intel(R) OpenCL Graphics", "Intel(R) Corporation");
    d.host_unified_memory = 1;
    d.fp64 = 0;
    d.compute_units = 32;
    d.max_clock_mhz = 1450;
    return d;
}

static clt_device_info intel_cpu(void)
{
    clt_device_info d = base(CLT_DEVICE_TYPE_CPU, "13th Gen Intel(R) Core(TM) i9-13900K",
                             "Intel(R) Corporation", 0x8086, "Intel(R) OpenCL",
                             "Intel(R) Corporation");
    d.host_unified_memory = 1;
    d.compute_units = 64; /* more than PoCL's, so only the PoCL rule can rank it last */
    return d;
}

static clt_device_info pocl(const char *driver)
{
    char name[128];
    snprintf(name, sizeof name, "%s-skylake-avx512-AMD EPYC 7B13", driver);
    clt_device_info d = base(CLT_DEVICE_TYPE_CPU, name, "AuthenticAMD", 0x1022,
                             "Portable Computing Language", "The pocl project");
    d.host_unified_memory = 1;
    d.compute_units = 16;
    return d;
}

static clt_device_info old_gpu(void)
{
    clt_device_info d = nvidia("GeForce 9400M", 2, 1100, 1);
    snprintf(d.device_version, sizeof d.device_version, "OpenCL 1.1 CUDA");
    d.cl_major = 1;
    d.cl_minor = 1;
    d.fp64 = 0;
    return d;
}

static clt_device_info accelerator(void)
{
    return base(CLT_DEVICE_TYPE_ACCELERATOR, "xilinx_u250", "Xilinx", 0x10ee, "Xilinx",
                "Xilinx");
}

static clt_device_info other_gpu(void)
{
    return base(CLT_DEVICE_TYPE_GPU, "PowerVR B-Series", "Imagination Technologies", 0x1010,
                "PowerVR", "Imagination Technologies");
}

/* Places a device on the machine with its enumeration position. */
static void put(clt_device_info *m, size_t *n, clt_device_info d, int platform, int device)
{
    cr_assert_lt(*n, MAX_DEVS);
    d.platform_index = platform;
    d.device_index = device;
    m[(*n)++] = d;
}

static size_t pick_ok(const clt_device_info *m, size_t n, const char *kind, const char *env)
{
    size_t picked = 999;
    clt_status st = clt_pick(m, n, kind, env, &picked, NULL);
    cr_assert_eq(st, CLT_OK, "'%s' (env %s): %s", kind, env ? env : "none", clt_last_error());
    cr_assert_lt(picked, n);
    cr_assert_str_eq(clt_last_error(), "");
    return picked;
}

static clt_status pick_fail(const clt_device_info *m, size_t n, const char *kind,
                            const char *env)
{
    size_t picked = 999;
    clt_status st = clt_pick(m, n, kind, env, &picked, NULL);
    cr_assert_neq(st, CLT_OK, "'%s' should fail, picked %zu", kind, picked);
    cr_assert_eq(picked, 999, "picked must stay untouched on failure");
    cr_assert_eq(clt_last_status(), st);
    cr_assert(strncmp(clt_last_error(), "clt_pick: ", 10) == 0, "%s", clt_last_error());
    return st;
}

static void expect_label(const clt_device_info *m, size_t n, size_t i, const char *want)
{
    char *label = NULL;
    cr_assert_eq(clt_pick_label(m, n, i, &label), CLT_OK, "%s", clt_last_error());
    cr_assert_str_eq(label, want, "device %zu (%s)", i, m[i].name);
    clt_free(label);
}

static size_t count(const char *hay, const char *needle)
{
    size_t c = 0;
    for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle))
        c++;
    return c;
}

static void expect_in_error(const char *needle)
{
    cr_assert(strstr(clt_last_error(), needle) != NULL, "'%s' not in message: %s", needle,
              clt_last_error());
}

/* The line of the report that describes a device (the first line is the
 * request's), copied into buf. */
static const char *line_of(const char *report, const char *device_name, char *buf, size_t size)
{
    const char *first_end = strchr(report, '\n');
    cr_assert_not_null(first_end, "%s", report);
    const char *s = strstr(first_end, device_name);
    cr_assert_not_null(s, "no line for %s in:\n%s", device_name, report);
    while (s > report && s[-1] != '\n')
        s--;
    size_t len = strcspn(s, "\n");
    cr_assert_lt(len, size);
    memcpy(buf, s, len);
    buf[len] = '\0';
    return buf;
}

/* PoCL's basic driver enumerated before its pthread driver. */
static size_t pocl_machine(clt_device_info *m)
{
    size_t n = 0;
    put(m, &n, pocl("basic"), 0, 0);
    put(m, &n, pocl("pthread"), 0, 1);
    return n;
}

Test(picker, classify)
{
    clt_device_info d;
    cr_assert_str_eq(clt_classify(&(clt_device_info){0}), "cpu");
    d = nvidia("NVIDIA A100", 108, 1410, 40);
    cr_assert_str_eq(clt_classify(&d), "cuda");
    d = amd_discrete();
    cr_assert_str_eq(clt_classify(&d), "rocm");
    d = amd_apu();
    cr_assert_str_eq(clt_classify(&d), "rocm");
    d = apple_gpu();
    cr_assert_str_eq(clt_classify(&d), "mps");
    d = intel_igpu();
    cr_assert_str_eq(clt_classify(&d), "xpu");
    d = intel_cpu();
    cr_assert_str_eq(clt_classify(&d), "cpu");
    d = pocl("pthread");
    cr_assert_str_eq(clt_classify(&d), "cpu");
    d = accelerator();
    cr_assert_str_eq(clt_classify(&d), "accelerator");
    d.type = CLT_DEVICE_TYPE_OTHER;
    cr_assert_str_eq(clt_classify(&d), "accelerator");
    d = other_gpu();
    cr_assert_str_eq(clt_classify(&d), "gpu");
    cr_assert_null(clt_classify(NULL));
}

Test(picker, classify_by_vendor_strings)
{
    /* PCI ids missing: the vendor strings decide. */
    clt_device_info d = base(CLT_DEVICE_TYPE_GPU, "GeForce", "NVIDIA Corporation", 0, "x", "x");
    cr_assert_str_eq(clt_classify(&d), "cuda");
    d = base(CLT_DEVICE_TYPE_GPU, "Radeon", "AMD", 0, "rusticl", "Mesa/X.org");
    cr_assert_str_eq(clt_classify(&d), "rocm");
    d = base(CLT_DEVICE_TYPE_GPU, "gfx90a", "unknown", 0, "AMD APP", "Advanced Micro Devices, Inc.");
    cr_assert_str_eq(clt_classify(&d), "rocm");
    d = base(CLT_DEVICE_TYPE_GPU, "Arc A770", "Intel(R) Corporation", 0, "x", "x");
    cr_assert_str_eq(clt_classify(&d), "xpu");
    d = base(CLT_DEVICE_TYPE_GPU, "M1", "Apple", 0, "Apple", "Apple");
    cr_assert_str_eq(clt_classify(&d), "mps");
    d = base(CLT_DEVICE_TYPE_GPU, "M1", "x", 0x106b, "x", "x");
    cr_assert_str_eq(clt_classify(&d), "mps");
    /* An NVIDIA GPU driven by PoCL's CUDA driver is still cuda. */
    d = base(CLT_DEVICE_TYPE_GPU, "NVIDIA GeForce RTX 3060", "NVIDIA Corporation", 0,
             "Portable Computing Language", "The pocl project");
    cr_assert_str_eq(clt_classify(&d), "cuda");
}

Test(picker, two_nvidia_bigger_first)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, nvidia("NVIDIA GeForce RTX 3060", 28, 1777, 12), 0, 0);
    put(m, &n, nvidia("NVIDIA A100-SXM4-80GB", 108, 1410, 80), 0, 1);
    put(m, &n, pocl("pthread"), 1, 0);

    cr_assert_eq(pick_ok(m, n, "cuda", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "cuda:0", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "cuda:1", NULL), 0);
    cr_assert_eq(pick_ok(m, n, "gpu", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "gpu:1", NULL), 0);
    cr_assert_eq(pick_ok(m, n, "auto", NULL), 1);
    expect_label(m, n, 0, "cuda:1");
    expect_label(m, n, 1, "cuda:0");
    expect_label(m, n, 2, "cpu:0");
}

Test(picker, equal_gpus_follow_enumeration_order)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    /* Listed out of order: (platform, device) decides, not the array. */
    put(m, &n, nvidia("NVIDIA L4 (second)", 58, 2040, 24), 1, 0);
    put(m, &n, nvidia("NVIDIA L4 (first)", 58, 2040, 24), 0, 1);
    put(m, &n, nvidia("NVIDIA L4 (zeroth)", 58, 2040, 24), 0, 0);
    cr_assert_eq(pick_ok(m, n, "cuda:0", NULL), 2);
    cr_assert_eq(pick_ok(m, n, "cuda:1", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "cuda:2", NULL), 0);
}

Test(picker, memory_breaks_throughput_ties)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, nvidia("NVIDIA small", 58, 2040, 16), 0, 0);
    put(m, &n, nvidia("NVIDIA big", 58, 2040, 48), 0, 1);
    cr_assert_eq(pick_ok(m, n, "cuda", NULL), 1);
}

Test(picker, fp64_before_throughput)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    clt_device_info fast = nvidia("NVIDIA no-fp64", 200, 2000, 16);
    fast.fp64 = 0;
    put(m, &n, fast, 0, 0);
    put(m, &n, nvidia("NVIDIA fp64", 10, 1000, 16), 0, 1);
    cr_assert_eq(pick_ok(m, n, "cuda", NULL), 1);

    char *report = NULL;
    size_t picked;
    cr_assert_eq(clt_pick(m, n, "cuda", NULL, &picked, &report), CLT_OK);
    char line[512];
    line_of(report, "NVIDIA no-fp64", line, sizeof line);
    cr_assert(strstr(line, "ranked below cuda:0 (no fp64; fp64 preferred)"), "%s", line);
    cr_assert(strstr(line, "no cl_khr_fp64 (float64 unavailable)"), "%s", line);
    clt_free(report);
}

Test(picker, rocm_and_hip_are_one)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, amd_apu(), 0, 0);
    put(m, &n, amd_discrete(), 0, 1);
    cr_assert_eq(pick_ok(m, n, "rocm", NULL), 1, "discrete first despite the bigger APU");
    cr_assert_eq(pick_ok(m, n, "hip", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "rocm:1", NULL), 0);
    cr_assert_eq(pick_ok(m, n, "hip:1", NULL), 0);
    cr_assert_eq(pick_ok(m, n, "HIP:0", NULL), 1);
    expect_label(m, n, 0, "rocm:1");
    expect_label(m, n, 1, "rocm:0");
}

Test(picker, case_and_spaces)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, pocl("pthread"), 0, 0);
    put(m, &n, nvidia("NVIDIA A", 10, 1000, 8), 1, 0);
    put(m, &n, nvidia("NVIDIA B", 20, 1000, 8), 1, 1);
    cr_assert_eq(pick_ok(m, n, "CUDA:0", NULL), 2);
    cr_assert_eq(pick_ok(m, n, "CuDa:1", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "Cpu", NULL), 0);
    cr_assert_eq(pick_ok(m, n, "AUTO", NULL), 2);
    /* As torch.device: white space around a request is refused, quoted. */
    cr_assert_eq(pick_fail(m, n, " cpu", NULL), CLT_ERR_UNKNOWN_KIND);
    expect_in_error("unknown device kind ' cpu'");
    cr_assert_eq(pick_fail(m, n, "cpu ", NULL), CLT_ERR_UNKNOWN_KIND);
    expect_in_error("unknown device kind 'cpu '");
    cr_assert_eq(pick_fail(m, n, "  CUDA:0 ", NULL), CLT_ERR_UNKNOWN_KIND);
    cr_assert_eq(pick_fail(m, n, "\tcuda", NULL), CLT_ERR_UNKNOWN_KIND);
    cr_assert_eq(pick_fail(m, n, " AUTO ", NULL), CLT_ERR_UNKNOWN_KIND);
    cr_assert_eq(pick_fail(m, n, "cuda:1\n", NULL), CLT_ERR_INVALID_ARGUMENT);
    /* CLTENSOR_DEVICE's value alone is trimmed. */
    cr_assert_eq(pick_ok(m, n, "auto", " cuda:1\n"), 1);
    cr_assert_eq(pick_ok(m, n, "auto", "\tCPU "), 0);
    cr_assert_eq(pick_fail(m, n, "cu da", NULL), CLT_ERR_UNKNOWN_KIND);
    cr_assert_eq(pick_fail(m, n, "cuda :0", NULL), CLT_ERR_UNKNOWN_KIND);
    cr_assert_eq(pick_fail(m, n, "cuda: 0", NULL), CLT_ERR_INVALID_ARGUMENT);
}

Test(picker, auto_discrete_over_integrated)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, intel_cpu(), 0, 0);
    put(m, &n, intel_igpu(), 0, 1);
    put(m, &n, amd_apu(), 1, 0);
    put(m, &n, amd_discrete(), 1, 1);
    cr_assert_eq(pick_ok(m, n, "auto", NULL), 3);
    cr_assert_eq(pick_ok(m, n, "gpu", NULL), 3);
    /* Both integrated: the APU has fp64, the Intel GPU not. */
    cr_assert_eq(pick_ok(m, n, "gpu:1", NULL), 2);
    cr_assert_eq(pick_ok(m, n, "gpu:2", NULL), 1);
    cr_assert_eq(pick_fail(m, n, "gpu:3", NULL), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("only 3 GPUs (rocm:0, rocm:1, xpu:0)");
    cr_assert_eq(pick_ok(m, n, "xpu", NULL), 1);

    char *report = NULL;
    size_t picked;
    cr_assert_eq(clt_pick(m, n, "auto", "", &picked, &report), CLT_OK);
    cr_assert_eq(picked, 3);
    cr_assert(strncmp(report, "request 'auto' -> rocm:0 (gfx1100)\n", 35) == 0, "%s", report);
    char line[512];
    line_of(report, "gfx1103", line, sizeof line);
    cr_assert(strstr(line, "rocm:1 gfx1103") && strstr(line, "passed over: ranked below rocm:0 "
                                                             "(integrated GPU; discrete preferred)"),
              "%s", line);
    line_of(report, "i9-13900K", line, sizeof line);
    cr_assert(strstr(line, "passed over: auto prefers a GPU (it is cpu)"), "%s", line);
    clt_free(report);
}

Test(picker, auto_gpu_over_cpu)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, pocl("pthread"), 0, 0);
    put(m, &n, intel_igpu(), 1, 0);
    cr_assert_eq(pick_ok(m, n, "auto", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "auto", "   "), 1, "a blank override is no override");
}

Test(picker, auto_cpu_without_gpu)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, accelerator(), 0, 0);
    put(m, &n, pocl("basic"), 1, 0);
    put(m, &n, pocl("pthread"), 1, 1);
    put(m, &n, old_gpu(), 2, 0);
    cr_assert_eq(pick_ok(m, n, "auto", NULL), 2);
    cr_assert_eq(pick_fail(m, n, "gpu", NULL), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("no device for 'gpu': no GPU here (1 passed over: OpenCL below 1.2)");

    char *report = NULL;
    size_t picked;
    cr_assert_eq(clt_pick(m, n, "auto", NULL, &picked, &report), CLT_OK);
    char line[512];
    line_of(report, "xilinx_u250", line, sizeof line);
    cr_assert(strstr(line, "accelerator:0 xilinx_u250 (Xilinx, Xilinx): passed over: auto takes "
                           "a GPU, else a cpu device (it is accelerator)"),
              "%s", line);
    line_of(report, "GeForce 9400M", line, sizeof line);
    cr_assert(strstr(line, "passed over: OpenCL 1.1 is below the required 1.2"), "%s", line);
    clt_free(report);
}

Test(picker, auto_nothing_usable)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, accelerator(), 0, 0);
    cr_assert_eq(pick_fail(m, n, "auto", NULL), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("no device for 'auto'");
    expect_in_error("available here: accelerator:0 (xilinx_u250)");
}

Test(picker, auto_env_override)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, nvidia("NVIDIA big", 100, 2000, 80), 0, 0);
    put(m, &n, nvidia("NVIDIA small", 10, 1000, 8), 0, 1);
    put(m, &n, pocl("pthread"), 1, 0);

    cr_assert_eq(pick_ok(m, n, "auto", "cpu"), 2);
    cr_assert_eq(pick_ok(m, n, "auto", "cuda:1"), 1);
    cr_assert_eq(pick_ok(m, n, "auto", " CUDA:1 "), 1);
    cr_assert_eq(pick_ok(m, n, "auto", NULL), 0);
    /* Only auto listens to the override. */
    cr_assert_eq(pick_ok(m, n, "cuda:1", "cpu"), 1);
    cr_assert_eq(pick_ok(m, n, "cpu", "cuda"), 2);

    char *report = NULL;
    size_t picked = 999;
    cr_assert_eq(clt_pick(m, n, "auto", "cuda:1", &picked, &report), CLT_OK);
    cr_assert_eq(picked, 1);
    cr_assert(strstr(report, "request 'auto' -> cuda:1 (NVIDIA small); CLTENSOR_DEVICE=cuda:1 "
                             "overrides auto\n"),
              "%s", report);
    char line[512];
    line_of(report, "NVIDIA big", line, sizeof line);
    cr_assert(strstr(line, "passed over: index 1 asked, this is cuda:0"), "%s", line);
    line_of(report, "pthread-", line, sizeof line);
    cr_assert(strstr(line, "passed over: not a cuda device (it is cpu)"), "%s", line);
    clt_free(report);
}

Test(picker, auto_bad_env_override)
{
    clt_device_info m[MAX_DEVS];
    size_t n = pocl_machine(m);

    cr_assert_eq(pick_fail(m, n, "auto", "cudaa"), CLT_ERR_UNKNOWN_KIND);
    expect_in_error("CLTENSOR_DEVICE=cudaa could not be resolved: unknown device kind 'cudaa'");
    expect_in_error("cpu:0 (pthread-");

    cr_assert_eq(pick_fail(m, n, "auto", "cuda"), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("CLTENSOR_DEVICE=cuda could not be resolved: no device for 'cuda'");

    cr_assert_eq(pick_fail(m, n, "auto", "cpu:7"), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("CLTENSOR_DEVICE=cpu:7 could not be resolved");
    expect_in_error("only 2 cpu devices (cpu:0, cpu:1)");

    cr_assert_eq(pick_fail(m, n, "auto", "cpu:x"), CLT_ERR_INVALID_ARGUMENT);
    expect_in_error("CLTENSOR_DEVICE=cpu:x could not be resolved: malformed device index");

    cr_assert_eq(pick_fail(m, n, "auto", "auto"), CLT_ERR_INVALID_ARGUMENT);
    expect_in_error("CLTENSOR_DEVICE=auto could not be resolved");

    char *report = NULL;
    size_t picked = 999;
    cr_assert_eq(clt_pick(m, n, "auto", "rocm", &picked, &report), CLT_ERR_DEVICE_NOT_FOUND);
    cr_assert_eq(picked, 999);
    cr_assert_not_null(report);
    cr_assert(strncmp(report, "request 'auto' -> none; CLTENSOR_DEVICE=rocm overrides auto\n",
                      60) == 0,
              "%s", report);
    cr_assert_eq(count(report, "passed over: not a rocm device (it is cpu)"), 2, "%s", report);
    clt_free(report);
}

Test(picker, cpu_prefers_pocl_threaded)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, intel_cpu(), 0, 0);
    put(m, &n, pocl("basic"), 1, 0);
    put(m, &n, pocl("pthread"), 1, 1);

    cr_assert_eq(pick_ok(m, n, "cpu", NULL), 2);
    cr_assert_eq(pick_ok(m, n, "cpu:0", NULL), 2);
    cr_assert_eq(pick_ok(m, n, "cpu:1", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "cpu:2", NULL), 0);
    cr_assert_eq(pick_ok(m, n, "auto", NULL), 2);
    expect_label(m, n, 0, "cpu:2");
    expect_label(m, n, 1, "cpu:1");
    expect_label(m, n, 2, "cpu:0");

    char *report = NULL;
    size_t picked;
    cr_assert_eq(clt_pick(m, n, "cpu", NULL, &picked, &report), CLT_OK);
    char line[512];
    line_of(report, "basic-", line, sizeof line);
    cr_assert(strstr(line, "[p1.d0] cpu:1 basic-skylake-avx512-AMD EPYC 7B13 (AuthenticAMD, "
                           "Portable Computing Language): passed over: ranked below cpu:0 (PoCL "
                           "basic driver is single-threaded; pthread preferred)"),
              "%s", line);
    line_of(report, "i9-13900K", line, sizeof line);
    cr_assert(strstr(line, "ranked below cpu:0 (not PoCL; PoCL preferred)"), "%s", line);
    line_of(report, "pthread-", line, sizeof line);
    cr_assert(strstr(line, "[p1.d1] cpu:0 pthread-") && strstr(line, ": picked"), "%s", line);
    clt_free(report);
}

Test(picker, cpu_without_pocl_ranks_by_compute_units)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    clt_device_info small = intel_cpu();
    small.compute_units = 4;
    put(m, &n, small, 0, 0);
    put(m, &n, intel_cpu(), 1, 0);
    cr_assert_eq(pick_ok(m, n, "cpu", NULL), 1);
    expect_label(m, n, 0, "cpu:1");
}

Test(picker, labels_pocl)
{
    clt_device_info m[MAX_DEVS];
    size_t n = pocl_machine(m);
    expect_label(m, n, 0, "cpu:1");
    expect_label(m, n, 1, "cpu:0");
    cr_assert_eq(pick_ok(m, n, "cpu", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "cpu:1", NULL), 0);
}

Test(picker, labels_many_platforms)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, old_gpu(), 0, 0);
    put(m, &n, nvidia("NVIDIA GeForce RTX 4090", 128, 2520, 24), 0, 1);
    put(m, &n, amd_apu(), 1, 0);
    put(m, &n, amd_discrete(), 1, 1);
    put(m, &n, intel_igpu(), 2, 0);
    put(m, &n, intel_cpu(), 2, 1);
    put(m, &n, pocl("basic"), 3, 0);
    put(m, &n, pocl("pthread"), 3, 1);
    put(m, &n, accelerator(), 4, 0);
    put(m, &n, other_gpu(), 5, 0);
    put(m, &n, apple_gpu(), 6, 0);

    const char *want[] = {"cuda:1", "cuda:0", "rocm:1", "rocm:0", "xpu:0", "cpu:2",
                          "cpu:1",  "cpu:0",  "accelerator:0", "gpu:0", "mps:0"};
    for (size_t i = 0; i < n; i++)
        expect_label(m, n, i, want[i]);

    /* 4090: 128 * 2520 beats 48 * 2500 of the AMD card. */
    cr_assert_eq(pick_ok(m, n, "auto", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "gpu:0", NULL), 1);
    cr_assert_eq(pick_ok(m, n, "gpu:1", NULL), 3);
    cr_assert_eq(pick_ok(m, n, "gpu:2", NULL), 9, "the other discrete GPU");
    cr_assert_eq(pick_ok(m, n, "rocm", NULL), 3);
    cr_assert_eq(pick_ok(m, n, "mps", NULL), 10);
    cr_assert_eq(pick_ok(m, n, "xpu", NULL), 4);
    cr_assert_eq(pick_ok(m, n, "cpu", NULL), 7);
    cr_assert_eq(pick_fail(m, n, "cuda:1", NULL), CLT_ERR_DEVICE_NOT_FOUND,
                 "the old GPU is cuda:1 but cannot be picked");
    expect_in_error("no device for 'cuda:1': only 1 cuda device (cuda:0)");
    expect_in_error("cuda:1 (GeForce 9400M; OpenCL 1.1, too old)");

    char *report = NULL;
    size_t picked;
    cr_assert_eq(clt_pick(m, n, "gpu", NULL, &picked, &report), CLT_OK);
    cr_assert_eq(count(report, "\n  [p"), n, "%s", report);
    cr_assert_eq(count(report, ": picked"), 1, "%s", report);
    cr_assert_eq(count(report, ": passed over: "), n - 1, "%s", report);
    cr_assert(strstr(report, "[p6.d0] mps:0 Apple M2 Max (Apple, Apple): passed over: ranked "
                             "below cuda:0 (integrated GPU; discrete preferred); no cl_khr_fp64 "
                             "(float64 unavailable)\n"),
              "%s", report);
    cr_assert(strstr(report, "[p4.d0] accelerator:0 xilinx_u250 (Xilinx, Xilinx): passed over: "
                             "not a GPU (it is accelerator)\n"),
              "%s", report);
    clt_free(report);
}

Test(picker, old_gpu_never_picked)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, old_gpu(), 0, 0);
    put(m, &n, pocl("pthread"), 1, 0);
    expect_label(m, n, 0, "cuda:0");
    cr_assert_eq(pick_fail(m, n, "cuda", NULL), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("no device for 'cuda': no cuda device here (1 passed over: OpenCL below 1.2)");
    cr_assert_eq(pick_fail(m, n, "cuda:0", NULL), CLT_ERR_DEVICE_NOT_FOUND);
    cr_assert_eq(pick_ok(m, n, "auto", NULL), 1);
}

Test(picker, unknown_kind)
{
    clt_device_info m[MAX_DEVS];
    size_t n = pocl_machine(m);
    const char *bad[] = {"cudaa", "", "   ", "opencl", "cuda0", "accelerator", "gpus:1", ":0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(pick_fail(m, n, bad[i], NULL), CLT_ERR_UNKNOWN_KIND, "'%s'", bad[i]);
        expect_in_error("unknown device kind '");
        expect_in_error("expected one of cuda, rocm (hip), mps, xpu, gpu, cpu, auto");
        expect_in_error("available here: cpu:0 (pthread-skylake-avx512-AMD EPYC 7B13), cpu:1 "
                        "(basic-skylake-avx512-AMD EPYC 7B13)");
    }
    pick_fail(m, n, "cudaa", NULL);
    expect_in_error("unknown device kind 'cudaa':");
}

Test(picker, malformed_index)
{
    clt_device_info m[MAX_DEVS];
    size_t n = pocl_machine(m);
    const char *bad[] = {"cpu:x", "cpu:", "cpu:-1", "cpu:1x", "cpu:+1", "cpu:01",
                         "cpu:0:0", "cpu:99999999999999999999999", "auto:0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(pick_fail(m, n, bad[i], NULL), CLT_ERR_INVALID_ARGUMENT, "'%s'", bad[i]);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
        expect_in_error(quoted);
    }
    cr_assert_eq(pick_ok(m, n, "cpu:0", NULL), 1);
}

Test(picker, index_too_large)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, nvidia("NVIDIA T4", 40, 1590, 16), 0, 0);
    put(m, &n, pocl("pthread"), 1, 0);
    cr_assert_eq(pick_fail(m, n, "cuda:3", NULL), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("no device for 'cuda:3': only 1 cuda device (cuda:0)");
    expect_in_error("available here: cuda:0 (NVIDIA T4), cpu:0 (pthread-");
    cr_assert_eq(pick_fail(m, n, "cpu:1", NULL), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("only 1 cpu device (cpu:0)");

    char *report = NULL;
    size_t picked;
    cr_assert_eq(clt_pick(m, n, "cuda:3", NULL, &picked, &report), CLT_ERR_DEVICE_NOT_FOUND);
    cr_assert(strstr(report, "request 'cuda:3' -> none\n"), "%s", report);
    cr_assert(strstr(report, "cuda:0 NVIDIA T4 (NVIDIA Corporation, NVIDIA CUDA): passed over: "
                             "index 3 asked, this is cuda:0\n"),
              "%s", report);
    cr_assert_eq(count(report, ": picked"), 0);
    clt_free(report);
}

Test(picker, no_device_of_kind)
{
    clt_device_info m[MAX_DEVS];
    size_t n = pocl_machine(m);
    const char *kinds[] = {"cuda", "rocm", "hip", "mps", "xpu", "gpu", "cuda:0"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        cr_assert_eq(pick_fail(m, n, kinds[i], NULL), CLT_ERR_DEVICE_NOT_FOUND, "%s", kinds[i]);
        char want[64];
        snprintf(want, sizeof want, "no device for '%s'", kinds[i]);
        expect_in_error(want);
        expect_in_error("available here: cpu:0 (pthread-skylake-avx512-AMD EPYC 7B13), cpu:1 "
                        "(basic-skylake-avx512-AMD EPYC 7B13)");
    }
}

Test(picker, report_lines)
{
    clt_device_info m[MAX_DEVS];
    size_t n = 0;
    put(m, &n, nvidia("NVIDIA H100", 132, 1980, 80), 0, 0);
    put(m, &n, intel_igpu(), 1, 0);
    put(m, &n, pocl("basic"), 2, 0);
    put(m, &n, pocl("pthread"), 2, 1);

    char *report = NULL;
    size_t picked;
    cr_assert_eq(clt_pick(m, n, "cuda", NULL, &picked, &report), CLT_OK);
    cr_assert_eq(picked, 0);
    cr_assert_eq(count(report, "\n"), n + 1, "%s", report);
    cr_assert(strncmp(report, "request 'cuda' -> cuda:0 (NVIDIA H100)\n", 39) == 0, "%s", report);
    cr_assert(strstr(report, "  [p0.d0] cuda:0 NVIDIA H100 (NVIDIA Corporation, NVIDIA CUDA): "
                             "picked\n"),
              "%s", report);
    cr_assert(strstr(report, "  [p1.d0] xpu:0 Intel(R) UHD Graphics 770 (Intel(R) Corporation, "
                             "Intel(R) OpenCL Graphics): passed over: not a cuda device (it is "
                             "xpu); no cl_khr_fp64 (float64 unavailable)\n"),
              "%s", report);
    cr_assert_eq(count(report, "passed over: not a cuda device (it is cpu)"), 2, "%s", report);
    clt_free(report);

    report = NULL;
    cr_assert_eq(clt_pick(m, n, "cudaa", NULL, &picked, &report), CLT_ERR_UNKNOWN_KIND);
    cr_assert(strncmp(report, "request 'cudaa' -> none\n", 24) == 0, "%s", report);
    cr_assert_eq(count(report, "passed over: 'cudaa' is no device kind"), n, "%s", report);
    clt_free(report);

    /* A report without a request for one is fine too. */
    cr_assert_eq(clt_pick(m, n, "cpu", NULL, &picked, NULL), CLT_OK);
    cr_assert_eq(picked, 3);
}

Test(picker, null_arguments)
{
    clt_device_info m[MAX_DEVS];
    size_t n = pocl_machine(m);
    size_t picked = 999;
    char *report = (char *)"untouched";

    cr_assert_eq(clt_pick(m, n, NULL, NULL, &picked, &report), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(report);
    cr_assert_eq(clt_last_status(), CLT_ERR_NULL_ARGUMENT);
    cr_assert_neq(clt_last_error()[0], '\0');
    cr_assert_eq(clt_pick(m, n, "cpu", NULL, NULL, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_pick(NULL, n, "cpu", NULL, &picked, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(picked, 999);

    char *label = (char *)"untouched";
    cr_assert_eq(clt_pick_label(m, n, 0, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_pick_label(NULL, n, 0, &label), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(label);
    cr_assert_eq(clt_pick_label(m, n, n, &label), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(label);
}

Test(picker, no_devices)
{
    size_t picked = 999;
    char *report = NULL;
    cr_assert_eq(clt_pick(NULL, 0, "auto", NULL, &picked, &report), CLT_ERR_DEVICE_NOT_FOUND);
    cr_assert_eq(picked, 999);
    expect_in_error("no OpenCL device found");
    expect_in_error("'auto'");
    cr_assert_str_eq(report, "request 'auto' -> none\n");
    clt_free(report);

    clt_device_info one = pocl("pthread");
    cr_assert_eq(clt_pick(&one, 0, "cpu", NULL, &picked, NULL), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("no OpenCL device found");
    cr_assert_eq(clt_pick(NULL, 0, "cudaa", NULL, &picked, NULL), CLT_ERR_UNKNOWN_KIND);
    expect_in_error("available here: none");
    cr_assert_eq(clt_pick(NULL, 0, "auto", "cpu", &picked, NULL), CLT_ERR_DEVICE_NOT_FOUND);
    expect_in_error("CLTENSOR_DEVICE=cpu could not be resolved: no device for 'cpu': no OpenCL "
                    "device found");
}

Test(picker, success_clears_error)
{
    clt_device_info m[MAX_DEVS];
    size_t n = pocl_machine(m);
    pick_fail(m, n, "cudaa", NULL);
    cr_assert_neq(clt_last_error()[0], '\0');
    pick_ok(m, n, "cpu", NULL);
}

/* clt_device_explain follows common.h's rule for outputs (only clt_pick
 * hands out its report on failure): a kind that resolves to nothing gives
 * no report to leak, and its explanation goes into the message. */
Test(picker, explain_failure_hands_out_nothing)
{
    clt_device *dev = NULL;
    if (clt_device_get("cpu", &dev) != CLT_OK)
        cr_skip_test("no OpenCL cpu device: %s", clt_last_error());
    char *report = (char *)&report;
    cr_assert_eq(clt_device_explain("cpu:4096", &report), CLT_ERR_DEVICE_NOT_FOUND);
    cr_assert_null(report);
    expect_in_error("no device for 'cpu:4096'");
    expect_in_error("request 'cpu:4096' -> none");
    expect_in_error("passed over: index 4096 asked");
    report = (char *)&report;
    cr_assert_eq(clt_device_explain("cudaa", &report), CLT_ERR_UNKNOWN_KIND);
    cr_assert_null(report);
    expect_in_error("'cudaa' is no device kind");

    report = NULL;
    cr_assert_eq(clt_device_explain("cpu", &report), CLT_OK, "%s", clt_last_error());
    cr_assert(report && strstr(report, "request 'cpu' -> "), "%s", report ? report : "(null)");
    clt_free(report);
}
