/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What hpcd's BPF event source (sched_events.bpf.c) and hpcd (bpfsource.cpp)
 * share: a managed process's entry in the `procs` map, and one event of the
 * ring buffer. A process computes while at least one of its threads is
 * runnable; it sleeps when the last one blocks. One event is sent per such
 * transition, stamped with the kernel's CLOCK_MONOTONIC.
 */
#ifndef HPCD_SCHED_EVENTS_H
#define HPCD_SCHED_EVENTS_H

enum hpcd_ev_kind {
	HPCD_EV_SLEEP = 0, /* the last runnable thread blocked */
	HPCD_EV_WAKE = 1,  /* a thread became runnable, none was */
};

/* procs map value, keyed by the process id (tgid, init pid namespace). */
struct hpcd_proc {
	unsigned int gen; /* set by hpcd at each add: older thread marks are stale */
	int nr_runnable;  /* threads marked runnable (atomic) */
};

struct hpcd_event {
	unsigned long long ts; /* ns, CLOCK_MONOTONIC */
	unsigned int tgid;
	unsigned int tid;  /* the thread whose change it was */
	unsigned int kind; /* enum hpcd_ev_kind */
	unsigned int cpu;
};

#endif
