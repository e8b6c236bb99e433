/* Test load for hpcd: burn CPU, optionally in iterations that compute for
 * RUN ms and sleep WAIT ms.  usage: hpcd-spin [SECONDS [RUN_MS WAIT_MS]]
 * Prints its own CPU time (ms) on exit. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1e9;
	double run = argc > 3 ? atof(argv[2]) / 1e3 : 0, wait = argc > 3 ? atof(argv[3]) / 1e3 : 0;
	double start = now(CLOCK_MONOTONIC), seg = now(CLOCK_THREAD_CPUTIME_ID);
	volatile unsigned long x = 0;
	while (now(CLOCK_MONOTONIC) - start < secs) {
		for (int i = 0; i < 100000; i++)
			x += i;
		if (run > 0 && now(CLOCK_THREAD_CPUTIME_ID) - seg >= run) {
			struct timespec w = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
			nanosleep(&w, NULL);
			seg = now(CLOCK_THREAD_CPUTIME_ID);
		}
	}
	printf("%.0f\n", now(CLOCK_PROCESS_CPUTIME_ID) * 1e3);
	return 0;
}
