// SPDX-License-Identifier: GPL-2.0
/*
 * MetBench-shaped workload for scx_hpc (static, runs in the busybox guest).
 *
 * Two workers pinned to CPUs 0 and 1 (one emulated SMT core), switched to
 * SCHED_EXT (7) with sched_setscheduler(), the heavy one with HEAVY_MS of
 * work per iteration and the light one with LIGHT_MS (4x less by default),
 * synchronised every iteration through process-shared pthread barriers with
 * a master (SCHED_OTHER, unpinned) that starts the next iteration a little
 * after both finished, as MetBench's master does (so that the heavy worker
 * also waits: with a bare two-party barrier the last to arrive never
 * sleeps).
 *
 * usage: scx_metbench [-i ITERS] [-H HEAVY_MS] [-L LIGHT_MS] [-p POLICY]
 * Prints "heavy_pid=N", "light_pid=N" first, then the run time. Exit status:
 * 0 ok, 1 a worker failed, 2 usage / the policy could not be set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SCHED_EXT
#define SCHED_EXT 7
#endif

struct shared {
	pthread_barrier_t start;	/* workers + master: next iteration */
	pthread_barrier_t done;		/* workers + master: compute finished */
	volatile int failed;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static volatile uint64_t sink;

static void work_units(uint64_t n)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

/* Work units per ms of CPU time on this CPU, under the fair class. */
/*
 * Units per ms: the best of 5 rounds of at least 20 ms each, so that a round
 * slowed down by the host (the guest's vCPUs share a few host cores) does
 * not shrink every load of the run.
 */
static double calibrate(void)
{
	uint64_t n = 100000, t0, t;
	double best = 0;
	int rounds = 0;

	while (rounds < 5) {
		t0 = now_ns();
		work_units(n);
		t = now_ns() - t0;
		if (t <= 20000000) {
			n *= 2;
			continue;
		}
		if (n / (t / 1e6) > best)
			best = n / (t / 1e6);
		rounds++;
	}
	return best;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	int iters = 40, heavy_ms = 40, light_ms = 10, policy = SCHED_EXT;
	struct sched_param sp = { 0 };
	pthread_barrierattr_t ba;
	struct shared *sh;
	pid_t kid[2];
	uint64_t units, t0;
	double upm;
	int opt, i, st, rc = 0;

	while ((opt = getopt(argc, argv, "i:H:L:p:")) != -1) {
		switch (opt) {
		case 'i': iters = atoi(optarg); break;
		case 'H': heavy_ms = atoi(optarg); break;
		case 'L': light_ms = atoi(optarg); break;
		case 'p': policy = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-i ITERS] [-H HEAVY_MS] [-L LIGHT_MS] [-p POLICY]\n",
				argv[0]);
			return 2;
		}
	}
	if (iters < 1 || heavy_ms < 1 || light_ms < 1)
		return 2;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 2;
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->start, &ba, 3);
	pthread_barrier_init(&sh->done, &ba, 3);
	pin(0);
	upm = calibrate();
	sched_setaffinity(0, sizeof(cpu_set_t), &(cpu_set_t){ { ~0UL } });
	printf("calibration: %.0f units/ms\n", upm);

	for (i = 0; i < 2; i++) {
		kid[i] = fork();
		if (kid[i] < 0)
			return 2;
		if (kid[i] == 0) {
			int ms = i == 0 ? heavy_ms : light_ms;

			units = (uint64_t)(upm * ms);
			if (pin(i) || sched_setscheduler(0, policy, &sp)) {
				fprintf(stderr, "worker %d: pin/sched_setscheduler(%d): %s\n", i,
					policy, strerror(errno));
				sh->failed = 1;
			}
			for (int k = 0; k < iters; k++) {
				pthread_barrier_wait(&sh->start);
				if (!sh->failed)
					work_units(units);
				pthread_barrier_wait(&sh->done);
			}
			_exit(0);
		}
	}
	printf("heavy_pid=%d\nlight_pid=%d\n", kid[0], kid[1]);
	fflush(stdout);

	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		pthread_barrier_wait(&sh->start);
		pthread_barrier_wait(&sh->done);
		sleep_ms(2);	/* the master's share of the iteration */
	}
	for (i = 0; i < 2; i++) {
		if (waitpid(kid[i], &st, 0) != kid[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;
	}
	printf("iterations=%d elapsed_ms=%.1f\n", iters, (now_ns() - t0) / 1e6);
	if (sh->failed)
		return 2;
	return rc;
}
