/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stand-in for the kernel's <linux/math64.h>: div64_u64() is declared only,
 * so that an object built with -m32 shows whether the core divides 64-bit
 * values by itself (a libgcc __udivdi3 call the kernel does not link).
 */
#ifndef _LINUX_MATH64_H
#define _LINUX_MATH64_H
#include <linux/types.h>
u64 div64_u64(u64 dividend, u64 divisor);
#endif
