/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few vmlinux.h types the policy core uses, for compiling it with
 * clang -target bpf where no vmlinux.h has been generated yet.
 */
#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
typedef _Bool bool;
enum { false = 0, true = 1 };
#endif
