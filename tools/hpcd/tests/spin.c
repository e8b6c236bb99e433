/* Test load for hpcd: burn CPU, optionally in iterations that compute for
 * RUN ms and sleep WAIT ms.  usage: hpcd-spin [SECONDS [RUN_MS WAIT_MS [LOGFILE]]]
 * Prints its own CPU time (ms) on exit.
 * With LOGFILE, it also keeps CLOCK_MONOTONIC times (ns) of each sleep in
 * memory (the last LOG_MAX sleeps) and writes them to LOGFILE at exit,
 * oldest first, one a line: "sleep NS" just before the sleep, "due NS" when
 * it was to end (the sleep is clock_nanosleep() to that time, with a timer
 * slack of 1 ns: the task is runnable again then), "wake NS" just after it
 * returned (the task ran again: later than due where it waited for a CPU).
 * With LOGFILE, SIGTERM and SIGINT end the loop (a sleep they cut short ends
 * there), the log is written, and the signal then kills it as before;
 * without LOGFILE, they kill it at once. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define LOG_MAX (1u << 18) /* sleeps kept (24 bytes each, touched as used) */

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct stamp {
	uint64_t sleep, due, wake;
};

/* The last `n` sleeps of the ring `log` (LOG_MAX entries), oldest first. */
static int write_log(const char *path, const struct stamp *log, uint64_t n)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	uint64_t first = n > LOG_MAX ? n - LOG_MAX : 0;
	for (uint64_t i = first; i < n; i++) {
		const struct stamp *s = &log[i % LOG_MAX];
		fprintf(f, "sleep %llu\ndue %llu\nwake %llu\n", (unsigned long long)s->sleep,
			(unsigned long long)s->due, (unsigned long long)s->wake);
	}
	if (fclose(f) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1e9;
	double run = argc > 3 ? atof(argv[2]) / 1e3 : 0, wait = argc > 3 ? atof(argv[3]) / 1e3 : 0;
	const char *logfile = argc > 4 ? argv[4] : NULL;
	struct stamp *log = NULL;
	uint64_t nlog = 0;
	if (logfile) {
		log = calloc(LOG_MAX, sizeof(*log));
		if (!log) {
			fprintf(stderr, "hpcd-spin: no memory for the log\n");
			return 1;
		}
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal; /* no SA_RESTART: a sleep returns */
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		/* the timer fires at "due", not up to 50 us later */
		prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	}
	double start = now(CLOCK_MONOTONIC), seg = now(CLOCK_THREAD_CPUTIME_ID);
	volatile unsigned long x = 0;
	while (!stop_sig && now(CLOCK_MONOTONIC) - start < secs) {
		for (int i = 0; i < 100000; i++)
			x += i;
		if (run > 0 && now(CLOCK_THREAD_CPUTIME_ID) - seg >= run) {
			if (log) {
				struct stamp *s = &log[nlog++ % LOG_MAX];
				s->sleep = mono_ns();
				s->due = s->sleep + (uint64_t)(wait * 1e9);
				struct timespec due = {(time_t)(s->due / 1000000000u),
						       (long)(s->due % 1000000000u)};
				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
				s->wake = mono_ns();
			} else {
				struct timespec w = {(time_t)wait,
						     (long)((wait - (time_t)wait) * 1e9)};
				nanosleep(&w, NULL);
			}
			seg = now(CLOCK_THREAD_CPUTIME_ID);
		}
	}
	int rc = 0;
	if (logfile && write_log(logfile, log, nlog) != 0)
		rc = 1;
	printf("%.0f\n", now(CLOCK_PROCESS_CPUTIME_ID) * 1e3);
	if (stop_sig) {
		fflush(stdout);
		signal(stop_sig, SIG_DFL);
		raise(stop_sig);
	}
	return rc;
}
