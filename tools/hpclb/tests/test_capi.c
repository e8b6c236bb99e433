/* The C API from C: the same cases as the C++ tests, through hpclb.h. Each
 * function returns 0, or 1 with what went wrong in msg. */
#include "hpclb/hpclb.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			snprintf(msg, len, "%s:%d: %s (last error: %s)", __FILE__, __LINE__,       \
				 #cond, hpclb_last_error());                                       \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

int capi_tree(char *msg, size_t len)
{
	const char *xml =
		"<machinemodel numnode=\"3\">"
		"<node type=\"NETWORK_NODE\" name=\"0\" childrenNum=\"2\" children=\"1;2;\"/>"
		"<node type=\"COMPUTING_NODE\" name=\"1\" children=\";\" mflops=\"100\"/>"
		"<node type=\"COMPUTING_NODE\" name=\"2\" children=\";\" mflops=\"300\"/>"
		"</machinemodel>";
	hpclb_tree *t = hpclb_tree_parse_xml(xml);
	CHECK(t);
	CHECK(hpclb_tree_compute(t, 0) == 0);
	int ids[4];
	double sh[4];
	CHECK(hpclb_tree_leaves(t, ids, sh, 4) == 2);
	CHECK(ids[0] == 1 && fabs(sh[0] - 0.25) < 1e-12 && fabs(sh[1] - 0.75) < 1e-12);
	CHECK(hpclb_tree_set_cpu(t, 1, -1, 0, 0) == -1);
	CHECK(strstr(hpclb_last_error(), "negative"));
	CHECK(hpclb_tree_set_cpu(t, 0, 1, 0, 0) == -1); /* a network node */
	CHECK(hpclb_tree_set_cpu(t, 9, 1, 0, 0) == -1);
	CHECK(strstr(hpclb_last_error(), "unknown node id 9"));
	CHECK(hpclb_tree_add_interface(t, 1, 0, 1) == -1);
	CHECK(hpclb_tree_compute(t, 2) == -1);
	hpclb_tree_free(t);
	CHECK(!hpclb_tree_parse_xml("<machinemodel><node"));
	CHECK(strstr(hpclb_last_error(), "malformed XML"));
	CHECK(!hpclb_tree_parse_xml(NULL));
	double sp[3] = {1, 2, 4};
	CHECK(fabs(hpclb_h_cpu(sp, 3) - sqrt((1.0 / 9 + 1.0 / 144 + 25.0 / 144) / 3)) < 1e-12);
	CHECK(hpclb_h_cpu(sp, 0) < 0);
	return 0;
}

int capi_refine(char *msg, size_t len)
{
	hpclb_vcpu v[2] = {{1, 0}, {1, 0}};
	hpclb_task t[4] = {{1, 4, 0, 0}, {2, 3, 0, 0}, {3, 2, 0, 0}, {4, 1, 0, 0}};
	int p[4];
	double b, a;
	CHECK(hpclb_refine(v, 2, t, 4, 0.5, p, &b, &a) == 0);
	CHECK(p[0] == 1 && p[1] == 0 && p[2] == 0 && p[3] == 1);
	CHECK(b == 2 && a == 1);
	t[0].proc = 5;
	p[0] = -7;
	CHECK(hpclb_refine(v, 2, t, 4, 0.5, p, NULL, NULL) == -1);
	CHECK(p[0] == -7); /* nothing written */
	CHECK(hpclb_background_load(10, 6, 1) == 3);

	/* A line 1-2-3-4-5-6, tasks 1-2 on VCPU 0 and 3-6 on VCPU 1: one task
	 * goes over. Without the graph the highest id (6, at the far end); with
	 * it task 3, next to task 2. */
	hpclb_task line[6] = {{1, 1, 0, 0}, {2, 1, 0, 0}, {3, 1, 1, 0},
			      {4, 1, 1, 0}, {5, 1, 1, 0}, {6, 1, 1, 0}};
	size_t start[7] = {0, 1, 3, 5, 7, 9, 10};
	int64_t peers[10] = {2, 1, 3, 2, 4, 3, 5, 4, 6, 5};
	int q[6];
	CHECK(hpclb_refine(v, 2, line, 6, 0.5, q, NULL, NULL) == 0);
	CHECK(q[5] == 0 && q[2] == 1);
	CHECK(hpclb_refine_peers(v, 2, line, 6, 0.5, start, peers, q, NULL, &a) == 0);
	CHECK(q[2] == 0 && q[5] == 1 && q[3] == 1 && a == 1);
	/* A peer that is no task, or a decreasing peer_start: -1, nothing written. */
	peers[9] = 77;
	q[0] = -7;
	CHECK(hpclb_refine_peers(v, 2, line, 6, 0.5, start, peers, q, NULL, NULL) == -1);
	CHECK(strstr(hpclb_last_error(), "peer 77"));
	peers[9] = 5;
	start[3] = 2;
	CHECK(hpclb_refine_peers(v, 2, line, 6, 0.5, start, peers, q, NULL, NULL) == -1);
	CHECK(q[0] == -7);
	return 0;
}

int capi_plan(char *msg, size_t len)
{
	hpclb_host h[3] = {{1, 4, 1}, {1, 1, 1}, {1, 0, 1}};
	hpclb_container c[5] = {
		{10, 0, 1, 0}, {11, 0, 1, 0}, {12, 0, 1, 0}, {13, 0, 1, 0}, {20, 1, 1, 0}};
	hpclb_move m[8];
	size_t n = 0;
	CHECK(hpclb_migration_plan(h, 3, c, 5, 10e6, m, 8, &n) == 0);
	CHECK(n == 1 && m[0].id == 10 && m[0].from == 0 && m[0].to == 2);
	c[0].host = 3;
	CHECK(hpclb_migration_plan(h, 3, c, 5, 10e6, m, 8, &n) == -1);
	CHECK(strstr(hpclb_last_error(), "unknown host 3"));
	return 0;
}

int capi_ruper(char *msg, size_t len)
{
	hpclb_ruper_params p;
	hpclb_ruper_defaults(&p);
	p.checkpoint_interval = 1;
	p.threshold = 0;
	hpclb_ruper *r = hpclb_ruper_new(100, 2, &p, 0);
	CHECK(r);
	uint64_t a;
	double next;
	int ans;
	CHECK(hpclb_ruper_start(r, 0, 0, &a) == 0 && a == 50);
	CHECK(hpclb_ruper_start(r, 1, 0, &a) == 0 && a == 50);
	CHECK(hpclb_ruper_report(r, 0, 40, 1, &next) == 0);
	CHECK(hpclb_ruper_report(r, 1, 10, 1.5, &next) == 0);
	CHECK(hpclb_ruper_report(r, 1, 5, 2, &next) == -1); /* fewer done */
	CHECK(hpclb_ruper_request_finish(r, 1, 2, &ans) == 0 && ans == 1);
	CHECK(hpclb_ruper_assigned(r, 0) + hpclb_ruper_assigned(r, 1) == 100);
	CHECK(!hpclb_ruper_finished(r));
	hpclb_ruper_free(r);
	p.checkpoint_interval = 0;
	CHECK(!hpclb_ruper_new(100, 2, &p, 0));
	return 0;
}

int capi_damping(char *msg, size_t len)
{
	hpclb_damping p;
	hpclb_damping_defaults(&p);
	CHECK(p.persistence == 3 && p.max_move_fraction == 0.25 && p.max_moves == INT64_MAX);
	p.persistence = -1;
	CHECK(!hpclb_damper_new(&p));
	CHECK(strstr(hpclb_last_error(), "persistence must be >= 1"));
	p.persistence = 2;
	p.max_moves = 0;
	CHECK(!hpclb_damper_new(&p));
	CHECK(strstr(hpclb_last_error(), "move budget must be >= 1"));
	p.max_moves = 1;
	hpclb_damper *d = hpclb_damper_new(&p);
	CHECK(d);
	/* Rank 1 at half speed: its two units take 2 s each. */
	hpclb_task t[4] = {{1, 1, 0, 0}, {2, 1, 0, 0}, {3, 2, 1, 0}, {4, 2, 1, 0}};
	double speeds[2] = {1, 0.5};
	int plan = -1;
	CHECK(hpclb_damper_observe(d, t, 4, speeds, 2, &plan) == 0 && plan == 0);
	t[2].proc = 7;
	CHECK(hpclb_damper_observe(d, t, 4, speeds, 2, &plan) == -1);
	CHECK(strstr(hpclb_last_error(), "unit 3 is on rank 7"));
	t[2].proc = 1;
	CHECK(hpclb_damper_observe(d, t, 4, speeds, 2, &plan) == 0 && plan == 1);
	hpclb_task s[4];
	size_t n = 0;
	CHECK(hpclb_damper_smoothed(d, s, 4, &n) == 0 && n == 4 && s[3].cpu_time == 2);
	/* Two moves proposed, a budget of one. */
	hpclb_move m[2] = {{3, 1, 0}, {4, 1, 0}};
	n = 2;
	CHECK(hpclb_damper_admit(d, m, &n) == 0 && n == 1 && m[0].id == 3 && m[0].to == 0);
	p.max_move_fraction = 0;
	CHECK(hpclb_damper_set(d, &p) == -1);
	hpclb_damper_free(d);
	return 0;
}
