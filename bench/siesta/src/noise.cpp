// SPDX-License-Identifier: GPL-2.0
// siesta-noise: ordinary (SCHED_OTHER) background processes, each busy for
// --busy-us then asleep for --sleep-us, over and over, until --seconds have
// passed or it is sent SIGTERM/SIGINT. They make a woken task wait for a
// CPU under CFS, as the daemons and other users of a real node do.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace
{

volatile sig_atomic_t stop = 0;
void on_signal(int)
{
	stop = 1;
}

double now_s()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

[[noreturn]] void child(long busy_us, long sleep_us, double until)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	volatile double x = 1;
	while (!stop && now_s() < until) {
		double end = now_s() + busy_us / 1e6;
		while (now_s() < end)
			x = x * 1.0000001 + 1e-9;
		timespec ts{sleep_us / 1000000, (sleep_us % 1000000) * 1000};
		nanosleep(&ts, nullptr);
	}
	_exit(0);
}

} // namespace

int main(int argc, char **argv)
{
	int procs = 2;
	long busy = 3000, sleep = 3000;
	double seconds = 3600;
	CLI::App app{"siesta-noise: SCHED_OTHER background load (busy/sleep cycles)"};
	app.add_option("--procs", procs, "background processes")->check(CLI::Range(1, 256));
	app.add_option("--busy-us", busy, "busy time per cycle")->check(CLI::Range(1L, 10000000L));
	app.add_option("--sleep-us", sleep, "sleep time per cycle")
		->check(CLI::Range(0L, 10000000L));
	app.add_option("--seconds", seconds, "stop after this long")->check(CLI::Range(0.1, 1e6));
	CLI11_PARSE(app, argc, argv);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	double until = now_s() + seconds;
	std::vector<pid_t> kids;
	for (int i = 0; i < procs; i++) {
		pid_t p = fork();
		if (p == 0)
			child(busy, sleep, until);
		if (p < 0) {
			perror("siesta-noise: fork");
			break;
		}
		kids.push_back(p);
	}
	printf("siesta-noise: %zu processes, %ld us busy / %ld us asleep\n", kids.size(), busy,
	       sleep);
	fflush(stdout);
	while (!stop && now_s() < until)
		usleep(20000);
	for (pid_t p : kids)
		kill(p, SIGTERM);
	for (pid_t p : kids)
		waitpid(p, nullptr, 0);
	return 0;
}
