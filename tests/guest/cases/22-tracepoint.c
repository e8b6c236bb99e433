// SPDX-License-Identifier: GPL-2.0
/*
 * 22-tracepoint: events/sched/sched_hpc_iteration.
 *
 * The event has the ABI fields; with it enabled, an HPC task that closes N
 * iterations produces exactly N events with its pid, chained (old_prio of
 * each is new_prio of the one before), and the last one carries the same
 * run/wait/util/prio as /proc/<pid>/sched_hpc reports afterwards.
 */
#include "hpctest.h"


#define TR TRACEFS
#define EV TR "/events/sched/sched_hpc_iteration"

static const char *const fields[] = {
	"pid", "comm", "run_ns", "wait_ns", "util", "heur_util", "old_prio", "new_prio",
};

struct res {
	struct hpc_stat st;
	int rc;
};

/* Value of "key=" in @line (0 if found). */
static int field(const char *line, const char *key, long long *val)
{
	char pat[32];
	const char *p = line;
	size_t l;

	l = (size_t)snprintf(pat, sizeof(pat), "%s=", key);
	while ((p = strstr(p, pat))) {
		if (p == line || p[-1] == ' ' || p[-1] == ':') {
			char *end;

			errno = 0;
			*val = strtoll(p + l, &end, 10);
			return (errno || end == p + l) ? -1 : 0;
		}
		p += l;
	}
	return -1;
}

int main(void)
{
	static char buf[1 << 20];
	struct res *R;
	char fmt[4096], pidpat[32];
	long long v, prev_new = -1, last[8];
	int i, r, n, events = 0, chain_ok = 1, st = 0;
	pid_t pid;
	char *line, *save;

	tap_init("22-tracepoint");
	watchdog(60);
	if (!require_hpc())
		return tap_done();
	knobs_restore();
	tracefs_mount();
	r = read_file(EV "/format", fmt, sizeof(fmt));
	if (!tap_check(r > 0, strerror(r < 0 ? -r : 0), "%s/format exists", EV))
		return tap_done();
	for (i = 0; i < (int)(sizeof(fields) / sizeof(fields[0])); i++) {
		char pat[64], pat2[64];

		snprintf(pat, sizeof(pat), " %s;", fields[i]);
		snprintf(pat2, sizeof(pat2), " %s[", fields[i]);
		tap_ok(strstr(fmt, pat) || strstr(fmt, pat2), "event has field %s", fields[i]);
	}

	R = shared_alloc(sizeof(*R));
	write_file(TR "/trace", "");		/* clear */
	write_file(TR "/tracing_on", "1\n");
	r = write_file(EV "/enable", "1\n");
	if (!tap_check(r == 0, strerror(-r), "enable the event"))
		return tap_done();

	pid = fork_kid();
	if (pid == 0) {
		if (pin_cpu(0, 0) || set_hpc(0))
			_exit(1);
		for (i = 0; i < 4; i++)
			iterate(i & 1 ? 30 : 3, 15);
		R->rc = hpc_stat_read(0, &R->st);
		_exit(0);
	}
	wait_timeout(pid, &st, 10000);
	write_file(EV "/enable", "0\n");
	if (!tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && R->rc == 0,
		    "HPC child ran 4 iterations and read its /proc (status %#x)", st))
		return tap_done();

	n = read_file(TR "/trace", buf, sizeof(buf));
	tap_ok(n > 0, "trace readable (%d bytes)", n);
	snprintf(pidpat, sizeof(pidpat), "pid=%d ", (int)pid);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ev = strstr(line, "sched_hpc_iteration:");

		if (!ev || field(ev, "pid", &v) || v != pid)
			continue;
		events++;
		if (events <= 6)
			tap_diag("%s", ev);
		for (i = 2; i < 8; i++)
			if (field(ev, fields[i], &last[i]))
				last[i] = -1;
		if (prev_new >= 0 && last[6] != prev_new)
			chain_ok = 0;
		prev_new = last[7];
	}
	tap_ok(events == R->st.v[HS_ITERATIONS],
	       "one event per closed iteration: %d events, %lld iterations",
	       events, R->st.v[HS_ITERATIONS]);
	tap_ok(events >= 4, "4 sleeps gave >= 4 events (got %d)", events);
	if (events) {
		tap_ok(chain_ok, "old_prio of each event is new_prio of the previous");
		tap_ok(last[2] == R->st.v[HS_LAST_RUN_NS] && last[3] == R->st.v[HS_LAST_WAIT_NS],
		       "last event run_ns/wait_ns == /proc last_run_ns/last_wait_ns (%lld/%lld vs %lld/%lld)",
		       last[2], last[3], R->st.v[HS_LAST_RUN_NS], R->st.v[HS_LAST_WAIT_NS]);
		tap_ok(last[4] == R->st.v[HS_LAST_UTIL] && last[5] == R->st.v[HS_HEUR_UTIL],
		       "last event util/heur_util == /proc last_util/heur_util (%lld/%lld vs %lld/%lld)",
		       last[4], last[5], R->st.v[HS_LAST_UTIL], R->st.v[HS_HEUR_UTIL]);
		tap_ok(last[7] == R->st.v[HS_PRIO], "last event new_prio == /proc prio (%lld vs %lld)",
		       last[7], R->st.v[HS_PRIO]);
	}
	write_file(TR "/trace", "");
	kill_children();
	return tap_done();
}
