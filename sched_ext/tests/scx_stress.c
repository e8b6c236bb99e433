// SPDX-License-Identifier: GPL-2.0
/*
 * Stress mix for scx_hpc (static, runs in the busybox guest): NTASKS
 * SCHED_EXT (7) processes, unpinned, alternate random bursts of work and
 * sleep; each also forks short-lived children (they inherit SCHED_EXT and
 * exit at once: a fork/exit storm). Runs SECS seconds.
 *
 * With -s, the tasks only spin (no sleep, no fork): a balance test.
 *
 * usage: scx_stress [-s] [-t SECS] [-n NTASKS] [-p POLICY]
 * Prints "forks=N" and "cpus_used=X.XX" (children's CPU time / wall time)
 * at the end. Exit status 0 unless a task failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SCHED_EXT
#define SCHED_EXT 7
#endif

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

int main(int argc, char **argv)
{
	int secs = 10, ntasks = 16, policy = SCHED_EXT, opt, i, st, rc = 0, spin = 0;
	struct rusage ru;
	uint64_t t0 = now_ns();
	struct sched_param sp = { 0 };
	volatile uint64_t *forks;
	uint64_t end;

	while ((opt = getopt(argc, argv, "st:n:p:")) != -1) {
		switch (opt) {
		case 's': spin = 1; break;
		case 't': secs = atoi(optarg); break;
		case 'n': ntasks = atoi(optarg); break;
		case 'p': policy = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-s] [-t SECS] [-n NTASKS] [-p POLICY]\n", argv[0]);
			return 2;
		}
	}
	forks = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (forks == MAP_FAILED)
		return 2;
	if (sched_setscheduler(0, policy, &sp)) {
		fprintf(stderr, "sched_setscheduler(%d): %s\n", policy, strerror(errno));
		return 2;
	}
	end = now_ns() + (uint64_t)secs * 1000000000ULL;
	for (i = 0; i < ntasks; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			rc = 1;
			break;
		}
		if (pid == 0) {
			unsigned int seed = getpid();

			if (spin) {
				spin_ns(end - now_ns());
				_exit(0);
			}
			while (now_ns() < end) {
				spin_ns((rand_r(&seed) % 2000) * 1000ULL);
				usleep(rand_r(&seed) % 1000);
				if (rand_r(&seed) % 4 == 0) {
					pid_t c = fork();

					if (c == 0) {
						spin_ns((rand_r(&seed) % 200) * 1000ULL);
						_exit(0);
					}
					if (c > 0) {
						__sync_fetch_and_add(forks, 1);
						waitpid(c, NULL, 0);
					}
				}
			}
			_exit(0);
		}
	}
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("forks=%llu\n", (unsigned long long)*forks);
	printf("cpus_used=%.2f\n",
	       (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6) / ((now_ns() - t0) / 1e9));
	return rc;
}
