/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Integer types and 64-bit division for the SCHED_HPC policy core.
 *
 * The policy core (hpc_policy.c, hpc_smt.c) is compiled unchanged in three
 * places: the kernel, BPF programs (clang -target bpf, with vmlinux.h) and
 * user space. This header is the only place that tells them apart.
 */
#ifndef _KERNEL_SCHED_HPC_TYPES_H
#define _KERNEL_SCHED_HPC_TYPES_H

#if defined(__KERNEL__)
#include <linux/types.h>
#include <linux/math64.h>
#define hpc_div64(a, b)		div64_u64((a), (b))
#elif defined(__bpf__)
/* BPF programs include vmlinux.h first: it provides u8..u64, s32, s64, bool. */
#define hpc_div64(a, b)		((a) / (b))
#else
#include <stdint.h>
#include <stdbool.h>
typedef uint8_t u8;
typedef uint32_t u32;
typedef int32_t s32;
typedef uint64_t u64;
typedef int64_t s64;
#define hpc_div64(a, b)		((a) / (b))
#endif

#ifndef NULL
#define NULL ((void *)0)
#endif

#endif /* _KERNEL_SCHED_HPC_TYPES_H */
