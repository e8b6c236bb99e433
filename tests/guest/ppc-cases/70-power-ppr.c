// SPDX-License-Identifier: GPL-2.0
/*
 * 70-power-ppr (ppc64le pseries guest): the POWER backend of SCHED_HPC puts
 * the class's priorities into the hardware thread priority of user space.
 *
 * Every task reads its own priority from user space with mfspr 896 (the
 * PPR; QEMU stores it, it does not model SMT speed). Outside the class a
 * task runs at medium-low (3) after any system call; a SCHED_HPC task runs
 * at its class priority (4 = normal, 5/6 raised), after system calls,
 * interrupts and context switches alike.
 *
 * Booted with sched_hpc_power=ornop the kernel takes the POWER5/6 path
 * (no PPR; QEMU's or-nops set the PPR user space reads): there a task
 * outside the class runs at medium (4), which every interrupt entry sets,
 * and the class's priorities are the same.
 *
 * guest-cflags: -I@TOP@/tests/guest/cases -I@TOP@/tests/guest/ppc-cases
 * guest-timeout: 300
 */
#include "power.h"

#include <pthread.h>
#include <sys/syscall.h>

#define CASE	"70-power-ppr"
#define ITERS	30
#define CHUNKS	40

/* A task outside the class: medium-low (3) with a PPR, medium (4) without. */
static unsigned int other_prio = 3;

/* A real system call (getppid is never cached by the C library). */
static inline void a_syscall(void)
{
	syscall(SYS_getppid);
}

struct hist {
	long long n[8];
};

static long long hist_total(const struct hist *h)
{
	long long t = 0;
	int i;

	for (i = 0; i < 8; i++)
		t += h->n[i];
	return t;
}

/* Samples other than @a and @b. */
static long long hist_other(const struct hist *h, unsigned int a, unsigned int b)
{
	long long t = 0;
	int i;

	for (i = 0; i < 8; i++)
		if (i != (int)a && i != (int)b)
			t += h->n[i];
	return t;
}

/* ---------------------------------------------------------------- shared */

struct phase {
	long long prio_start, prio_end;	/* /proc/self/sched_hpc around it */
	struct hist run, after_sc;	/* samples while computing, after a syscall */
};

struct shared {
	pthread_barrier_t bar;
	double units_per_ms;
	volatile int stop;
	/* metbench workers 0 (heavy) and 1 (light) */
	struct phase ph[2][ITERS];
	struct hpc_stat st[2];
	/* SCHED_OTHER spinners on CPU 0 and 1 */
	struct hist spin[2];
	/* single-purpose children */
	volatile unsigned int cur;	/* last sample of a spinning child */
	volatile long long samples;
	struct hist fork_child[2];	/* [0] inherits SCHED_HPC, [1] reset on fork */
	int fork_policy[2];
};

static struct shared *sh;

static long long proc_prio(void)
{
	struct hpc_stat st;

	if (hpc_stat_read(getpid(), &st) || !st.hpc)
		return -1;
	return st.v[HS_PRIO];
}

/* ---------------------------------------------------------- the backend */

static void t_backend(void)
{
	char buf[64];

	knob_read("backend", buf, sizeof(buf));
	tap_ok(!strcmp(buf, "power-smt"), "backend is power-smt (%s)", buf);
	knob_read("prio_range", buf, sizeof(buf));
	tap_ok(!strcmp(buf, "1 6"), "prio_range is the kernel's 1..6 (%s)", buf);
	tap_ok(knob_write("max_prio", "7") != 0 && knob_get("max_prio") == 6,
	       "max_prio 7 (very high, supervisor only) rejected, 6 kept");
	tap_ok(knob_write("min_prio", "0") != 0 && knob_get("min_prio") == 4,
	       "min_prio 0 rejected, 4 kept");
	tap_ok(knob_write("min_prio", "1") == 0 && knob_get("min_prio") == 1,
	       "min_prio 1 (very low) accepted");
	knobs_restore();
}

/* ------------------------------------------------- enter and leave, self */

static void t_self(void)
{
	struct hist in = { 0 }, out = { 0 }, before = { 0 };
	int i;

	for (i = 0; i < 1000; i++) {
		a_syscall();
		before.n[ppr_prio()]++;
	}
	tap_ok(before.n[other_prio] == 1000, "SCHED_OTHER: %u after every system call",
	       other_prio);
	if (!tap_ok(set_hpc(0) == 0, "sched_setscheduler(SCHED_HPC)"))
		return;
	for (i = 0; i < 1000; i++) {
		in.n[ppr_prio()]++;
		a_syscall();
	}
	tap_ok(in.n[4] == 1000, "SCHED_HPC: its priority 4 after every system call");
	if (in.n[4] != 1000)
		ppr_hist_diag("in the class", in.n);
	set_other(0);
	for (i = 0; i < 1000; i++) {
		out.n[ppr_prio()]++;
		a_syscall();
	}
	tap_ok(out.n[other_prio] == 1000, "back to SCHED_OTHER: %u again", other_prio);
	if (out.n[other_prio] != 1000)
		ppr_hist_diag("after leaving", out.n);
}

/* ------------------------------ set by another process while in user mode */

static void spin_child(void)
{
	pin_cpu(0, 1);
	while (!sh->stop) {
		sh->cur = ppr_prio();
		sh->samples++;
	}
	_exit(0);
}

/* Wait up to 3 s for the spinning child to read @want. */
static int child_reads(unsigned int want)
{
	int i;

	for (i = 0; i < 300; i++) {
		long long s = sh->samples;

		sleep_ms(10);
		if (sh->samples > s && sh->cur == want)
			return 1;
	}
	return 0;
}

static void t_remote(void)
{
	pid_t kid;
	int st;

	sh->stop = 0;
	sh->samples = 0;
	kid = fork_kid();
	if (kid == 0)
		spin_child();
	tap_ok(child_reads(other_prio), "a spinning SCHED_OTHER task reads %u (read %u)",
	       other_prio, sh->cur);
	tap_ok(set_hpc(kid) == 0 && child_reads(4),
	       "switched to SCHED_HPC while computing in user mode: it reads 4 (read %u)",
	       sh->cur);
	tap_ok(set_other(kid) == 0 && child_reads(other_prio),
	       "switched back to SCHED_OTHER in user mode: it reads %u again (read %u)",
	       other_prio, sh->cur);
	sh->stop = 1;
	wait_timeout(kid, &st, 10000);
}

/* ------------------------------------------------------------------ fork */

static void fork_one(int idx, int reset)
{
	pid_t kid;
	int st, i;

	kid = fork_kid();
	if (kid == 0) {
		if (set_policy(0, SCHED_HPC | (reset ? SCHED_RESET_ON_FORK : 0), 0))
			_exit(2);
		kid = fork();
		if (kid == 0) {
			/* First user instruction after ret_from_fork. */
			sh->fork_child[idx].n[ppr_prio()]++;
			for (i = 0; i < 99; i++) {
				a_syscall();
				sh->fork_child[idx].n[ppr_prio()]++;
			}
			sh->fork_policy[idx] = sched_getscheduler(0);
			_exit(0);
		}
		waitpid(kid, &st, 0);
		_exit(0);
	}
	wait_timeout(kid, &st, 10000);
}

static void t_fork(void)
{
	fork_one(0, 0);
	fork_one(1, 1);
	tap_ok(sh->fork_policy[0] == SCHED_HPC && sh->fork_child[0].n[4] == 100,
	       "child of a SCHED_HPC task (inherits it): 4 from its first instruction");
	tap_ok(sh->fork_policy[1] == SCHED_OTHER && sh->fork_child[1].n[other_prio] == 100,
	       "child with SCHED_RESET_ON_FORK: %u from its first instruction", other_prio);
	ppr_hist_diag("inheriting child", sh->fork_child[0].n);
	ppr_hist_diag("reset-on-fork child", sh->fork_child[1].n);
}

/* ------------------------------------------------------------- metbench */

static void mb_worker(int w, unsigned int load_ms)
{
	uint64_t n = (uint64_t)(sh->units_per_ms * load_ms) / CHUNKS;
	int k, c;

	for (k = 0; k < ITERS; k++) {
		struct phase *ph = &sh->ph[w][k];

		ph->prio_start = proc_prio();
		for (c = 0; c < CHUNKS; c++) {
			work_units(n);
			ph->run.n[ppr_prio()]++;
			if (c % 4 == 3) {
				a_syscall();
				ph->after_sc.n[ppr_prio()]++;
			}
		}
		ph->prio_end = proc_prio();
		pthread_barrier_wait(&sh->bar);
	}
	hpc_stat_read(getpid(), &sh->st[w]);
	_exit(0);
}

static void mb_spinner(int cpu)
{
	pin_cpu(0, cpu);
	while (!sh->stop) {
		work_units(1000);
		sh->spin[cpu].n[ppr_prio()]++;
		a_syscall();
		sh->spin[cpu].n[ppr_prio()]++;
	}
	_exit(0);
}

static void t_metbench(void)
{
	static const char *const name[2] = { "heavy", "light" };
	pthread_barrierattr_t ba;
	pid_t kid[2], spin[2];
	int w, k, st;

	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->bar, &ba, 2);
	sh->stop = 0;
	for (w = 0; w < 2; w++) {
		spin[w] = fork_kid();
		if (spin[w] == 0)
			mb_spinner(w);
	}
	for (w = 0; w < 2; w++) {
		kid[w] = fork_kid();
		if (kid[w] == 0) {
			if (pin_cpu(0, w) || set_hpc(0))
				_exit(2);
			mb_worker(w, w == 0 ? 40 : 10);
		}
	}
	for (w = 0; w < 2; w++)
		wait_timeout(kid[w], &st, 120000);
	sh->stop = 1;
	for (w = 0; w < 2; w++)
		wait_timeout(spin[w], &st, 10000);

	for (w = 0; w < 2; w++) {
		struct hist all = { 0 }, sc = { 0 };
		long long stray = 0, stray_sc = 0, prio = sh->st[w].v[HS_PRIO];
		const struct phase *last = &sh->ph[w][ITERS - 1];

		for (k = 0; k < ITERS; k++) {
			const struct phase *ph = &sh->ph[w][k];
			int i;

			for (i = 0; i < 8; i++) {
				all.n[i] += ph->run.n[i];
				sc.n[i] += ph->after_sc.n[i];
			}
			stray += hist_other(&ph->run, ph->prio_start, ph->prio_end);
			stray_sc += hist_other(&ph->after_sc, ph->prio_start, ph->prio_end);
		}
		tap_diag("%s: iterations %lld judgements %lld heur_util %lld prio %lld",
			 name[w], sh->st[w].v[HS_ITERATIONS], sh->st[w].v[HS_JUDGEMENTS],
			 sh->st[w].v[HS_HEUR_UTIL], prio);
		ppr_hist_diag(name[w], all.n);
		tap_ok(sh->st[w].hpc && hist_total(&all) == ITERS * CHUNKS,
		       "%s ran all %d iterations in SCHED_HPC", name[w], ITERS);
		tap_ok(stray == 0,
		       "%s: while computing, the PPR is the class's priority of that phase (%lld stray samples)",
		       name[w], stray);
		tap_ok(stray_sc == 0,
		       "%s: after system calls too (%lld stray samples)", name[w], stray_sc);
		tap_ok(prio >= 0 && prio < 8 && last->run.n[prio] == CHUNKS,
		       "%s: the last phase ran at the decided priority %lld", name[w], prio);
	}
	tap_ok(sh->st[0].v[HS_PRIO] >= 5 && sh->st[0].v[HS_PRIO] <= 6,
	       "heavy raised to 5..6 (prio %lld)", sh->st[0].v[HS_PRIO]);
	tap_ok(sh->st[1].v[HS_PRIO] == 4, "light kept at 4 (prio %lld)", sh->st[1].v[HS_PRIO]);
	for (w = 0; w < 2; w++) {
		ppr_hist_diag(w ? "SCHED_OTHER spinner on CPU 1" : "SCHED_OTHER spinner on CPU 0",
			      sh->spin[w].n);
		tap_ok(hist_other(&sh->spin[w], other_prio, other_prio) == 0,
		       "SCHED_OTHER task sharing CPU %d with a SCHED_HPC one: always %u", w,
		       other_prio);
	}
	tap_ok(hist_total(&sh->spin[1]) > 0,
	       "the SCHED_OTHER task ran while the light worker waited (%lld samples)",
	       hist_total(&sh->spin[1]));
}

int main(void)
{
	tap_init(CASE);
	watchdog(240);
	if (!require_hpc())
		return tap_done();
	if (online_cpus() < 2) {
		tap_fail("2 CPUs", "the guest has %d", online_cpus());
		return tap_done();
	}
	if (booted_ornop())
		other_prio = 4;
	tap_diag("thread priorities by %s", other_prio == 4 ? "or-nop (sched_hpc_power=ornop)" :
							     "the PPR");
	sh = shared_alloc(sizeof(*sh));
	pin_cpu(0, 0);
	sh->units_per_ms = calibrate_units_per_ms(50);
	unpin(0);
	tap_diag("%.1f work units per ms", sh->units_per_ms);

	t_backend();
	t_self();
	t_remote();
	t_fork();
	t_metbench();
	knobs_restore();
	return tap_done();
}
