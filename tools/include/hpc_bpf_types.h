/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few vmlinux.h types the policy core (kernel/hpc-core/) uses, for a
 * BPF program that includes it without a vmlinux.h: hpcd's event source
 * (tools/hpcd/sched_events.bpf.c) and the unit suite's BPF build checks.
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
