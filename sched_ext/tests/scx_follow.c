// SPDX-License-Identifier: GPL-2.0
/*
 * scx_follow PIDFILE SECONDS: leave SCHED_EXT for the fair class, then fork a
 * child that sleeps SECONDS; write the child's pid to PIDFILE and wait for
 * it. The child starts in the fair class (it does not inherit SCHED_EXT):
 * scx_hpc, following this process's tree or cgroup, must switch it.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sched_param sp = { 0 };
	FILE *f;
	pid_t kid;

	if (argc != 3) {
		fprintf(stderr, "usage: scx_follow PIDFILE SECONDS\n");
		return 2;
	}
	if (sched_setscheduler(0, SCHED_OTHER, &sp)) {
		perror("scx_follow: sched_setscheduler(SCHED_OTHER)");
		return 1;
	}
	kid = fork();
	if (kid < 0) {
		perror("scx_follow: fork");
		return 1;
	}
	if (kid == 0) {
		sleep((unsigned)atoi(argv[2]));
		_exit(0);
	}
	f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fprintf(f, "%d\n", (int)kid);
	fclose(f);
	waitpid(kid, NULL, 0);
	return 0;
}
