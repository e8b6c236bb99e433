/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stand-in for the kernel's <linux/types.h> (with <linux/stddef.h>), so that
 * test_build can compile the policy core's __KERNEL__ branch without a
 * kernel tree: -nostdinc, no libc, only what the kernel provides.
 */
#ifndef _LINUX_TYPES_H
#define _LINUX_TYPES_H
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char s8;
typedef short s16;
typedef int s32;
typedef long long s64;
typedef _Bool bool;
enum {
	false	= 0,
	true	= 1
};
#undef NULL
#define NULL ((void *)0)
#endif
