/* cltensor/device.h: finding OpenCL devices and picking one with PyTorch's
 * kind strings.
 *
 * Kinds: "cuda" (NVIDIA GPU), "rocm" or "hip" (AMD GPU), "mps" (Apple GPU),
 * "xpu" (Intel GPU), "gpu" (any GPU), "cpu" (a CPU OpenCL device, PoCL
 * preferred) and "auto" (the best GPU, else the cpu device).  Each may carry
 * an index ("cuda:1") and is matched case-insensitively; as with
 * torch.device, white space is refused (" cpu" is no kind).  The environment
 * variable CLTENSOR_DEVICE, when set and not blank, replaces what "auto"
 * picks; its value alone is read with surrounding white space dropped.
 *
 * Devices belong to the library: clt_device pointers are borrowed, never
 * released by the caller, and stay valid until clt_shutdown().
 */
#ifndef CLTENSOR_DEVICE_H
#define CLTENSOR_DEVICE_H

#include <cltensor/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_device clt_device;

typedef enum clt_device_type {
    CLT_DEVICE_TYPE_CPU,
    CLT_DEVICE_TYPE_GPU,
    CLT_DEVICE_TYPE_ACCELERATOR,
    CLT_DEVICE_TYPE_OTHER
} clt_device_type;

/* A plain description of one OpenCL device.  The picker works on arrays of
 * these alone, so it can be run on simulated machines (clt_pick).  The
 * strings are the driver's, with control characters, DEL and bytes that
 * are not UTF-8 written as \xNN and a string longer than its array cut
 * with "...", so that they print safely and messages can show them. */
typedef struct clt_device_info {
    char name[128];
    char vendor[128];
    char platform_name[128];
    char platform_vendor[128];
    char device_version[128]; /* "OpenCL 3.0 CUDA" */
    char driver_version[128];
    unsigned vendor_id;       /* PCI vendor id: 0x10de NVIDIA, 0x1002 AMD,
                                 0x8086 Intel, 0x106b Apple */
    clt_device_type type;
    int host_unified_memory;  /* non-zero on integrated GPUs and CPUs */
    int fp64;                 /* cl_khr_fp64 */
    int fp16;                 /* cl_khr_fp16 */
    int cl_major, cl_minor;   /* from device_version */
    unsigned compute_units;
    unsigned max_clock_mhz;
    uint64_t global_mem_bytes;
    uint64_t max_alloc_bytes;
    size_t max_work_group_size;
    int platform_index;
    int device_index;         /* within its platform */
} clt_device_info;

/* Number of OpenCL devices on all platforms.  CLT_ERR_NO_PLATFORM when the
 * OpenCL loader finds no platform at all. */
CLT_API clt_status clt_device_count(size_t *count);

/* The n-th device in enumeration order (platform by platform).  Borrowed. */
CLT_API clt_status clt_device_at(size_t n, clt_device **out);

/* Resolves a kind string ("cuda", "cpu:1", "auto") to a device.  Borrowed.
 * CLT_ERR_UNKNOWN_KIND for a string that is no kind, CLT_ERR_DEVICE_NOT_FOUND
 * when no device of that kind (or index) exists; both messages list what is
 * available. */
CLT_API clt_status clt_device_get(const char *kind, clt_device **out);

/* Like torch.cuda.is_available(): 1 when clt_device_get(kind) would succeed,
 * 0 otherwise (also for unknown kinds and when OpenCL has no platform). */
CLT_API int clt_is_available(const char *kind);

/* Number of devices that answer to a kind without index ("cuda" -> how many
 * NVIDIA GPUs); 0 for an unknown kind. */
CLT_API size_t clt_device_count_kind(const char *kind);

/* Explains how a kind string resolves here: one line per device saying why
 * it was picked or passed over.  New string: release with clt_free.  A kind
 * that resolves to no device fails as clt_device_get does, and the
 * explanation follows the error's first line in the message. */
CLT_API clt_status clt_device_explain(const char *kind, char **report);

/* Description of a device.  Copied into *info. */
CLT_API clt_status clt_device_get_info(const clt_device *dev, clt_device_info *info);

/* The device's kind as PyTorch would name its type: "cuda", "rocm", "mps",
 * "xpu", "gpu", "cpu" or "accelerator".  Static storage; NULL for NULL. */
CLT_API const char *clt_device_kind(const clt_device *dev);

/* The device's label, kind and index: "cpu:0", "cuda:1".  Owned by the
 * device; NULL for NULL. */
CLT_API const char *clt_device_label(const clt_device *dev);

/* The device's OpenCL name ("pthread-skylake-avx512-AMD EPYC ...").  Owned by
 * the device; NULL for NULL. */
CLT_API const char *clt_device_name(const clt_device *dev);

/* 1 when the device can hold tensors of this dtype (float64 needs
 * cl_khr_fp64), 0 otherwise.  float16 is a storage format on every device:
 * kernels load it with vload_half, compute in float32 and store with
 * vstore_half_rte (round to nearest even), which OpenCL has without
 * cl_khr_fp16 (DeviceInfo's fp16 says whether the device has the
 * extension; no kernel computes in half).  bfloat16 too: kernels shift its
 * 16 bits into a float32 and round back with integer operations. */
CLT_API int clt_device_supports_dtype(const clt_device *dev, clt_dtype dtype);

/* Waits until every operation queued on the device has completed.
 * CLT_ERR_INDEX_OUT_OF_RANGE when an index op (cltensor/index.h) that the
 * calling thread ran on this device met an index out of range since the
 * thread's last synchronisation there, CLT_ERR_ZERO_DIVISION when an integer
 * clt_remainder, clt_fmod or clt_floor_divide met a zero divisor; other
 * threads' are not reported. */
CLT_API clt_status clt_device_synchronize(clt_device *dev);

/* ---- The pure picker, for tools and tests ------------------------------ */

/* Classifies a description into a kind name as clt_device_kind() does. */
CLT_API const char *clt_classify(const clt_device_info *info);

/* Resolves `kind` over the n described devices without touching OpenCL.
 * `env_override` plays the part of CLTENSOR_DEVICE for "auto" (NULL or ""
 * for none).  On success *picked is an index into infos.  When `report` is
 * not NULL it receives the explanation, a new string to release with
 * clt_free, on success and on failure alike (the exception to common.h's
 * rule for outputs). */
CLT_API clt_status clt_pick(const clt_device_info *infos, size_t n, const char *kind,
                            const char *env_override, size_t *picked, char **report);

/* Label ("cuda:0") that the picker gives infos[i] among the n devices.  New
 * string: release with clt_free. */
CLT_API clt_status clt_pick_label(const clt_device_info *infos, size_t n, size_t i,
                                  char **label);

#ifdef __cplusplus
}
#endif

#endif
