/* SPDX-License-Identifier: GPL-2.0 */
/* Stand-in for the kernel's <linux/array_size.h> (see types.h here). */
#ifndef _LINUX_ARRAY_SIZE_H
#define _LINUX_ARRAY_SIZE_H
#define ARRAY_SIZE(arr)	(sizeof(arr) / sizeof((arr)[0]))
#endif
