// SPDX-License-Identifier: GPL-2.0
/*
 * 60-stress-flip: policy flips while running.
 *
 * 4 x nCPU threads (max 16) for ~4 s: each flips itself SCHED_HPC <->
 * SCHED_OTHER (sched_setscheduler and sched_setattr), flips a random other
 * thread, computes a little, sometimes sleeps (closing iterations),
 * sometimes moves itself to another CPU; a knob thread meanwhile toggles
 * queue, heuristic, min_prio, timeslice_us and emul_period_us. Then the same
 * storm in a child process that is SIGKILLed in the middle.
 * Asserts: no call fails, every thread finishes (bounded loops), every
 * thread ends in the policy it last set, the killed process is reaped, the
 * knobs are restored.
 */
/* guest-timeout: 90 */
#include "hpctest.h"

#define MAXT 16

static int nt, ncpu;
static pid_t tids[MAXT];
static volatile int stop;
static pthread_barrier_t start_bar, end_bar;

struct tstat {
	long ops, errs, last_err, sleeps;
	int final_policy;
};
static struct tstat ts[MAXT];

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void count(struct tstat *t, int r)
{
	t->ops++;
	if (r) {
		t->errs++;
		t->last_err = r;
	}
}

static void *flipper(void *arg)
{
	int me = (int)(long)arg, r, pol;
	struct tstat *t = &ts[me];
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(me + 1);
	uint64_t end;

	tids[me] = gettid_();
	pthread_barrier_wait(&start_bar);
	end = now_ns() + 4000000000ULL;
	while (!stop && now_ns() < end) {
		uint64_t x = rnd(&seed);

		/* self, alternating interfaces */
		if (x & 1) {
			count(t, -set_hpc(0));
		} else {
			struct hpc_sched_attr a = { .size = sizeof(a), .sched_policy = SCHED_HPC };

			count(t, sys_sched_setattr(0, &a, 0) ? errno : 0);
		}
		work_units(20 + (x >> 8) % 50);
		if ((x >> 16) % 4 == 0) {
			sleep_ns(200000 + (x >> 20) % 800000);
			t->sleeps++;
		}
		/* another thread (all stay alive until end_bar) */
		pol = (x >> 24) & 1 ? SCHED_HPC : SCHED_OTHER;
		r = set_policy(tids[(x >> 32) % (uint64_t)nt], pol, 0);
		count(t, r == -ESRCH ? 0 : -r);
		if ((x >> 40) % 8 == 0 && ncpu > 1)
			count(t, -pin_cpu(0, (int)((x >> 44) % (uint64_t)ncpu)));
		work_units(10);
		count(t, -set_other(0));
		if ((x >> 48) % 16 == 0)
			count(t, -unpin(0));
		sched_yield();
	}
	/* End in a known policy: odd threads HPC, even threads other. */
	t->final_policy = me & 1 ? SCHED_HPC : SCHED_OTHER;
	pthread_barrier_wait(&end_bar);		/* nobody flips others any more */
	count(t, -set_policy(0, t->final_policy, 0));
	pthread_barrier_wait(&end_bar);		/* main checks the policies */
	pthread_barrier_wait(&end_bar);		/* ... while we are alive */
	return NULL;
}

static void *knobber(void *arg)
{
	uint64_t end = now_ns() + 4000000000ULL;
	int i = 0;

	(void)arg;
	while (!stop && now_ns() < end) {
		knob_write("queue", i & 1 ? "fifo\n" : "rr\n");
		knob_write("heuristic", i & 2 ? "adaptive\n" : "uniform\n");
		knob_set("min_prio", i & 4 ? 5 : 4);
		knob_set("timeslice_us", i & 8 ? 1000 : 100000);
		knob_set("emul_period_us", i & 16 ? 1000 : 10000);
		i++;
		sleep_ms(3);
	}
	knobs_restore();
	return NULL;
}

/* The storm; returns the number of failed calls. */
static long storm(int report)
{
	pthread_t th[MAXT], kt;
	long errs = 0, ops = 0, sleeps = 0;
	int i, wrong = 0;

	memset(ts, 0, sizeof(ts));
	stop = 0;
	pthread_barrier_init(&start_bar, NULL, (unsigned int)nt + 1);
	pthread_barrier_init(&end_bar, NULL, (unsigned int)nt + 1);
	for (i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, flipper, (void *)(long)i);
	pthread_create(&kt, NULL, knobber, NULL);
	pthread_barrier_wait(&start_bar);
	pthread_barrier_wait(&end_bar);
	pthread_barrier_wait(&end_bar);
	for (i = 0; i < nt; i++) {
		int p = sched_getscheduler(tids[i]);

		if (p != ts[i].final_policy) {
			if (report && !wrong)
				tap_diag("thread %d: policy %d, set %d", i, p, ts[i].final_policy);
			wrong++;
		}
	}
	pthread_barrier_wait(&end_bar);
	for (i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		errs += ts[i].errs;
		ops += ts[i].ops;
		sleeps += ts[i].sleeps;
	}
	pthread_join(kt, NULL);
	if (report) {
		tap_diag("%d threads: %ld calls, %ld sleeps, %ld failed", nt, ops, sleeps, errs);
		for (i = 0; i < nt; i++)
			if (ts[i].errs) {
				tap_diag("thread %d: %ld failed, last: %s", i, ts[i].errs,
					 strerror((int)ts[i].last_err));
				break;
			}
		tap_ok(ops > 20 * nt, "flip storm made progress (%ld calls > %d)", ops, 20 * nt);
		tap_ok(errs == 0, "no sched_setscheduler/setattr/affinity call failed (%ld)", errs);
		tap_ok(wrong == 0, "every thread ends in the policy it set last (%d wrong)", wrong);
	}
	return errs + wrong;
}

int main(void)
{
	char which[256];
	int st = 0;
	pid_t pid;

	tap_init("60-stress-flip");
	watchdog(80);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	ncpu = online_cpus();
	nt = 4 * ncpu;
	if (nt > MAXT)
		nt = MAXT;
	storm(1);
	tap_check(knobs_at_defaults(which, sizeof(which)), which, "knobs back at defaults");

	/* The same in a child killed in the middle. */
	pid = fork_kid();
	if (pid == 0) {
		storm(0);
		_exit(0);
	}
	sleep_ms(1500);
	kill(pid, SIGKILL);
	tap_ok(wait_timeout(pid, &st, 10000) == pid && WIFSIGNALED(st),
	       "process SIGKILLed in the middle of a flip storm is reaped");
	tap_ok(knobs_restore() == 0, "knobs restored after the killed storm");
	set_other(0);
	kill_children();
	return tap_done();
}
