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
#include <linux/build_bug.h>
#include <linux/array_size.h>
#include <linux/math64.h>
#define hpc_div64(a, b)		div64_u64((a), (b))
#elif defined(__bpf__)
/* BPF programs include vmlinux.h first: it provides u8..u64, s32, s64, bool. */
#define hpc_div64(a, b)		((a) / (b))
#else
/* User space: the kernel's UAPI types (linux-libc-dev), no libc. */
#include <linux/types.h>
#include <stdbool.h>
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;
typedef __s64 s64;
#define hpc_div64(a, b)		((a) / (b))
#endif

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#endif

#ifndef NULL
#define NULL ((void *)0)
#endif

/*
 * HPC_API marks the functions the core's headers declare. A BPF program
 * includes the core's .c files: there the functions get internal linkage
 * (C11 6.2.2: a definition keeps the linkage of a static declaration before
 * it), so that the verifier checks them inline with their callers rather
 * than as global functions whose pointer arguments may be NULL, and unused
 * ones are dropped. Everywhere else they are ordinary external functions.
 */
#ifndef HPC_API
#if defined(__bpf__)
#define HPC_API			static
#else
#define HPC_API
#endif
#endif

#endif /* _KERNEL_SCHED_HPC_TYPES_H */
