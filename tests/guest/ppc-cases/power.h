/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the ppc64le guest cases (not a test case): the
 * hardware thread priority a task runs at, and how the kernel sets it.
 */
#ifndef HPCSCHED_POWER_H
#define HPCSCHED_POWER_H

#include "hpctest.h"

#include <string.h>

/* This thread's priority now, from the PPR (SPR 896, priority << 50). */
static inline unsigned int ppr_prio(void)
{
	unsigned long v;

	asm volatile("mfspr %0,896" : "=r"(v));
	return (v >> 50) & 7;
}

/* Booted with sched_hpc_power=ornop: priorities by or-nop, PPR unused. */
static inline int booted_ornop(void)
{
	char buf[1024];

	return read_file("/proc/cmdline", buf, sizeof(buf)) > 0 &&
	       strstr(buf, "sched_hpc_power=ornop") != NULL;
}

/* "@what: PPR priority 1..7: n1 ... n7" for a histogram of samples. */
static inline void ppr_hist_diag(const char *what, const long long *n)
{
	tap_diag("%s: PPR priority 1..7: %lld %lld %lld %lld %lld %lld %lld", what, n[1], n[2],
		 n[3], n[4], n[5], n[6], n[7]);
}

#endif /* HPCSCHED_POWER_H */
