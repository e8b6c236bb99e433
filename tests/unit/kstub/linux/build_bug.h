/* SPDX-License-Identifier: GPL-2.0 */
/* Stand-in for the kernel's <linux/build_bug.h>: what the core needs. */
#ifndef _KSTUB_LINUX_BUILD_BUG_H
#define _KSTUB_LINUX_BUILD_BUG_H
#define BUILD_BUG_ON_ZERO(e) ((int)(sizeof(struct { int : (-!!(e)); })))
#endif
