// SPDX-License-Identifier: GPL-2.0
/*
 * 71-power-fast-return (ppc64le pseries guest): a SCHED_HPC task keeps its
 * hardware thread priority across the fast return to user space, the exit
 * that runs no C code (FP, VMX or VSX unavailable; an SLB miss on hash).
 *
 * Interrupt entry sets the thread to medium (4, HMT_MEDIUM). With a PPR the
 * fast return restores the user PPR it saved; without one (POWER5/6, or
 * this guest booted with sched_hpc_power=ornop) only the or-nop of the exit
 * assembly gives the task its priority back.
 *
 * The kernel gives a task its FP/vector state back eagerly on 255 of 256
 * returns after a context switch; on the 256th the task's next
 * floating-point instruction traps, and that trap returns by the fast path.
 * Two SCHED_HPC tasks with priority 6 fixed share CPU 0 and yield to each
 * other YIELDS times each, reading their priority after every yield and
 * again after one floating-point instruction: every read must be 6.
 *
 * guest-cflags: -I@TOP@/tests/guest/cases -I@TOP@/tests/guest/ppc-cases
 * guest-timeout: 300
 */
#include "power.h"

#define CASE	"71-power-fast-return"
#define YIELDS	20000
#define PRIO	6

struct side {
	long long after_yield[8];
	long long after_fp[8];
	int ready;
	int err;
};

static struct side *sides;
static volatile int *go;

static void yielder(int w)
{
	struct side *s = &sides[w];
	volatile double x = 1.0;
	int i;

	if (pin_cpu(0, 0) || set_policy(0, SCHED_HPC, PRIO)) {
		s->err = errno ? errno : 1;
		_exit(2);
	}
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	while (!*go)
		sched_yield();
	for (i = 0; i < YIELDS; i++) {
		sched_yield();
		s->after_yield[ppr_prio()]++;
		x = x * 1.0000001;	/* traps when the FP state was not restored */
		s->after_fp[ppr_prio()]++;
	}
	_exit(0);
}

int main(void)
{
	pid_t kid[2];
	int w, st;

	tap_init(CASE);
	watchdog(240);
	if (!require_hpc())
		return tap_done();
	tap_diag("thread priorities by %s", booted_ornop() ? "or-nop (sched_hpc_power=ornop)" : "the PPR");
	sides = shared_alloc(2 * sizeof(*sides));
	go = shared_alloc(sizeof(*go));
	for (w = 0; w < 2; w++) {
		kid[w] = fork_kid();
		if (kid[w] == 0)
			yielder(w);
	}
	for (w = 0; w < 2; w++)
		while (!__atomic_load_n(&sides[w].ready, __ATOMIC_ACQUIRE) && !sides[w].err)
			sleep_ms(10);
	*go = 1;
	for (w = 0; w < 2; w++) {
		tap_ok(wait_timeout(kid[w], &st, 200000) == kid[w] && WIFEXITED(st) &&
		       WEXITSTATUS(st) == 0,
		       "task %d: SCHED_HPC at fixed priority %d, %d yields on CPU 0 (err %d)", w,
		       PRIO, YIELDS, sides[w].err);
		tap_diag("task %d:", w);
		ppr_hist_diag("after a yield", sides[w].after_yield);
		ppr_hist_diag("after an FP instruction", sides[w].after_fp);
		tap_ok(sides[w].after_yield[PRIO] == YIELDS,
		       "task %d: priority %d after every system call (%lld of %d)", w, PRIO,
		       sides[w].after_yield[PRIO], YIELDS);
		tap_ok(sides[w].after_fp[PRIO] == YIELDS,
		       "task %d: priority %d after every FP instruction, trapped or not (%lld of %d)",
		       w, PRIO, sides[w].after_fp[PRIO], YIELDS);
	}
	return tap_done();
}
