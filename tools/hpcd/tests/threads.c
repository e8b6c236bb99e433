/* Test load for hpcd's BPF source: a process whose iterations run in a
 * worker thread (compute RUN_MS of its CPU time, sleep WAIT_MS) while the
 * main thread only waits for it; for the first STORM_S seconds the main
 * thread also starts and joins, over and over, STORM threads that each spin
 * and sleep a little and exit (a thread storm inside a rank).
 * usage: hpcd-threads SECONDS RUN_MS WAIT_MS [STORM_S [STORM]]
 * Prints the threads it started on exit. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double secs, run, wait_s;

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pause_for(double s)
{
	struct timespec w = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	nanosleep(&w, NULL);
}

static void *worker(void *arg)
{
	double start = now(CLOCK_MONOTONIC), seg = now(CLOCK_THREAD_CPUTIME_ID);
	volatile unsigned long x = 0;
	(void)arg;
	while (now(CLOCK_MONOTONIC) - start < secs) {
		for (int i = 0; i < 10000; i++)
			x = x + i;
		if (now(CLOCK_THREAD_CPUTIME_ID) - seg >= run) {
			pause_for(wait_s);
			seg = now(CLOCK_THREAD_CPUTIME_ID);
		}
	}
	return NULL;
}

static void *storm_thread(void *arg)
{
	volatile unsigned long x = 0;
	(void)arg;
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < 20000; i++)
			x = x + i;
		pause_for(0.0001);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: hpcd-threads SECONDS RUN_MS WAIT_MS [STORM_S [STORM]]\n");
		return 64;
	}
	secs = atof(argv[1]);
	run = atof(argv[2]) / 1e3;
	wait_s = atof(argv[3]) / 1e3;
	double storm_s = argc > 4 ? atof(argv[4]) : 0;
	int storm = argc > 5 ? atoi(argv[5]) : 64;
	if (storm < 1 || storm > 4096) {
		fprintf(stderr, "hpcd-threads: STORM is 1..4096\n");
		return 64;
	}
	pthread_t w, *t = calloc((size_t)storm, sizeof(*t));
	long started = 0;
	if (!t || pthread_create(&w, NULL, worker, NULL))
		return 1;
	double start = now(CLOCK_MONOTONIC);
	while (now(CLOCK_MONOTONIC) - start < storm_s) {
		int n = 0;
		for (; n < storm && !pthread_create(&t[n], NULL, storm_thread, NULL); n++)
			started++;
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
	}
	pthread_join(w, NULL);
	printf("%ld\n", started);
	free(t);
	return 0;
}
