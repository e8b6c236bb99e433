// The C API: thin wrappers that turn hpclb::Error into -1 + hpclb_last_error().
#include "hpclb/hpclb.h"
#include "hpclb/hpclb.hpp"

#include <cmath>
#include <cstring>

struct hpclb_tree {
	hpclb::MachineTree t;
};
struct hpclb_ruper {
	hpclb::RuperTask t;
};
struct hpclb_damper {
	hpclb::Damper d;
};

namespace
{
thread_local std::string last_error;
}

namespace hpclb
{
void set_last_error(const std::string &what)
{
	last_error = what;
}

DampingParams damping_from_c(const hpclb_damping *d)
{
	if (!d)
		throw Error("damping: no parameters");
	DampingParams p;
	p.persistence = d->persistence;
	p.threshold = d->threshold;
	p.min_gain = d->min_gain;
	p.max_move_fraction = d->max_move_fraction;
	p.max_moves = d->max_moves;
	p.move_rate = d->move_rate;
	p.horizon = d->horizon;
	p.max_backoff = d->max_backoff;
	validate(p);
	return p;
}

void damping_to_c(const DampingParams &p, hpclb_damping *d)
{
	*d = {p.persistence, p.threshold, p.min_gain, p.max_move_fraction,
	      p.max_moves,   p.move_rate, p.horizon,  p.max_backoff};
}
} // namespace hpclb

namespace
{

template <typename F> int guard(F &&f)
{
	try {
		f();
		return 0;
	} catch (const std::exception &e) {
		last_error = e.what();
		return -1;
	}
}
} // namespace

extern "C" {

const char *hpclb_last_error(void)
{
	return last_error.c_str();
}

hpclb_tree *hpclb_tree_parse_xml(const char *xml)
{
	hpclb_tree *t = nullptr;
	guard([&] {
		if (!xml)
			throw hpclb::Error("no XML text");
		t = new hpclb_tree{hpclb::MachineTree::parse_xml(xml)};
	});
	return t;
}

hpclb_tree *hpclb_tree_load_xml(const char *path)
{
	hpclb_tree *t = nullptr;
	guard([&] { t = new hpclb_tree{hpclb::MachineTree::load_xml(path ? path : "")}; });
	return t;
}

hpclb_tree *hpclb_tree_flat(const char *const *hosts, size_t n)
{
	hpclb_tree *t = nullptr;
	guard([&] {
		std::vector<std::string> h;
		for (size_t i = 0; i < n; i++)
			h.push_back(hosts[i] ? hosts[i] : "");
		t = new hpclb_tree{hpclb::MachineTree::flat(h)};
	});
	return t;
}

void hpclb_tree_free(hpclb_tree *t)
{
	delete t;
}

int hpclb_tree_set_cpu(hpclb_tree *t, int id, double mflops, double util, double idle)
{
	return guard([&] {
		if (!(mflops >= 0) || !(util >= 0) || !(idle >= 0))
			throw hpclb::Error("node " + std::to_string(id) + ": negative capacity");
		auto &n = t->t.node(id);
		if (n.type != hpclb::NodeType::Computing)
			throw hpclb::Error("node " + std::to_string(id) +
					   " is not a computing node");
		n.mflops = mflops;
		n.cpu_util = util;
		n.cpu_idle = idle;
	});
}

int hpclb_tree_add_interface(hpclb_tree *t, int id, double speed, double caf)
{
	return guard([&] {
		if (!(speed > 0) || !(caf >= 0))
			throw hpclb::Error("interface speed must be > 0 and CAF >= 0");
		auto &n = t->t.node(id);
		n.interfaces.push_back({"if" + std::to_string(n.interfaces.size()), speed, caf});
	});
}

int hpclb_tree_compute(hpclb_tree *t, double w_dynamic)
{
	return guard([&] { t->t.compute({w_dynamic}); });
}

size_t hpclb_tree_leaves(const hpclb_tree *t, int *ids, double *shares, size_t cap)
{
	auto l = t->t.leaves();
	for (size_t i = 0; i < l.size() && i < cap; i++) {
		if (ids)
			ids[i] = l[i];
		if (shares)
			shares[i] = t->t.node(l[i]).share;
	}
	return l.size();
}

double hpclb_h_cpu(const double *speeds, size_t n)
{
	double h = -1;
	guard([&] { h = hpclb::h_cpu(std::vector<double>(speeds, speeds + n)); });
	return h;
}

int hpclb_refine_peers(const hpclb_vcpu *vcpus, size_t nv, const hpclb_task *tasks, size_t nt,
		       double eps, const size_t *peer_start, const int64_t *peers, int *new_proc,
		       double *before, double *after)
{
	return guard([&] {
		std::vector<hpclb::Vcpu> v(nv);
		for (size_t i = 0; i < nv; i++)
			v[i] = {vcpus[i].freq, vcpus[i].background};
		std::vector<hpclb::Task> t(nt);
		for (size_t i = 0; i < nt; i++)
			t[i] = {tasks[i].id, tasks[i].cpu_time, tasks[i].proc, tasks[i].bytes};
		hpclb::Peers graph;
		if (peer_start) {
			for (size_t i = 0; i < nt; i++) {
				if (peer_start[i + 1] < peer_start[i] ||
				    (peer_start[i + 1] && !peers))
					throw hpclb::Error(
						"refine: peer_start must not decrease, and "
						"peers must be given");
				graph[t[i].id].assign(peers + peer_start[i],
						      peers + peer_start[i + 1]);
			}
		}
		auto r = hpclb::refine(v, t, eps, peer_start ? &graph : nullptr);
		std::copy(r.proc.begin(), r.proc.end(), new_proc);
		if (before)
			*before = r.imbalance_before;
		if (after)
			*after = r.imbalance_after;
	});
}

int hpclb_refine(const hpclb_vcpu *vcpus, size_t nv, const hpclb_task *tasks, size_t nt, double eps,
		 int *new_proc, double *before, double *after)
{
	return hpclb_refine_peers(vcpus, nv, tasks, nt, eps, nullptr, nullptr, new_proc, before,
				  after);
}

double hpclb_background_load(double t_lb, double task_time, double t_idle)
{
	double o = -1;
	guard([&] { o = hpclb::background_load(t_lb, task_time, t_idle); });
	return o;
}

int hpclb_migration_plan(const hpclb_host *hosts, size_t nh, const hpclb_container *c, size_t nc,
			 double dump_rate, hpclb_move *moves, size_t cap, size_t *nmoves)
{
	return guard([&] {
		std::vector<hpclb::Host> h(nh);
		for (size_t i = 0; i < nh; i++)
			h[i] = {hosts[i].ecu, hosts[i].interval, hosts[i].psi};
		std::vector<hpclb::Container> k(nc);
		for (size_t i = 0; i < nc; i++)
			k[i] = {c[i].id, c[i].host, c[i].exe_t, c[i].bytes};
		auto p = hpclb::migration_plan(h, k, {dump_rate});
		for (size_t i = 0; i < p.moves.size() && i < cap; i++)
			moves[i] = {p.moves[i].id, p.moves[i].from, p.moves[i].to};
		*nmoves = p.moves.size();
	});
}

void hpclb_damping_defaults(hpclb_damping *d)
{
	if (d)
		hpclb::damping_to_c({}, d);
}

hpclb_damper *hpclb_damper_new(const hpclb_damping *d)
{
	hpclb_damper *r = nullptr;
	guard([&] { r = new hpclb_damper{hpclb::Damper(hpclb::damping_from_c(d))}; });
	return r;
}

void hpclb_damper_free(hpclb_damper *d)
{
	delete d;
}

int hpclb_damper_set(hpclb_damper *d, const hpclb_damping *p)
{
	return guard([&] { d->d.set_params(hpclb::damping_from_c(p)); });
}

int hpclb_damper_observe(hpclb_damper *d, const hpclb_task *tasks, size_t ntask,
			 const double *speeds, size_t nrank, int *plan)
{
	return guard([&] {
		std::vector<hpclb::Task> t(ntask);
		for (size_t i = 0; i < ntask; i++)
			t[i] = {tasks[i].id, tasks[i].cpu_time, tasks[i].proc, tasks[i].bytes};
		const bool go = d->d.observe(t, std::vector<double>(speeds, speeds + nrank));
		if (plan)
			*plan = go;
	});
}

int hpclb_damper_smoothed(const hpclb_damper *d, hpclb_task *out, size_t cap, size_t *n)
{
	return guard([&] {
		auto t = d->d.smoothed();
		for (size_t i = 0; i < t.size() && i < cap; i++)
			out[i] = {t[i].id, t[i].cpu_time, t[i].proc, t[i].bytes};
		*n = t.size();
	});
}

int hpclb_damper_admit(hpclb_damper *d, hpclb_move *moves, size_t *n)
{
	return guard([&] {
		std::vector<hpclb::Move> plan(*n);
		for (size_t i = 0; i < *n; i++)
			plan[i] = {moves[i].id, moves[i].from, moves[i].to};
		auto kept = d->d.admit(plan);
		for (size_t i = 0; i < kept.size(); i++)
			moves[i] = {kept[i].id, kept[i].from, kept[i].to};
		*n = kept.size();
	});
}

void hpclb_ruper_defaults(hpclb_ruper_params *p)
{
	hpclb::RuperParams d;
	*p = {d.checkpoint_interval, d.threshold, d.max_deviation, d.min_report, d.max_report};
}

hpclb_ruper *hpclb_ruper_new(uint64_t iterations, size_t workers, const hpclb_ruper_params *p,
			     double now)
{
	hpclb_ruper *r = nullptr;
	guard([&] {
		hpclb::RuperParams q;
		if (p)
			q = {p->checkpoint_interval, p->threshold, p->max_deviation, p->min_report,
			     p->max_report};
		r = new hpclb_ruper{hpclb::RuperTask(iterations, workers, q, now)};
	});
	return r;
}

void hpclb_ruper_free(hpclb_ruper *r)
{
	delete r;
}

int hpclb_ruper_start(hpclb_ruper *r, size_t w, double now, uint64_t *assigned)
{
	return guard([&] { *assigned = r->t.start(w, now); });
}

int hpclb_ruper_report(hpclb_ruper *r, size_t w, uint64_t done, double now, double *next)
{
	return guard([&] { *next = r->t.report(w, done, now); });
}

int hpclb_ruper_request_finish(hpclb_ruper *r, size_t w, double now, int *answer)
{
	return guard([&] { *answer = static_cast<int>(r->t.request_finish(w, now)); });
}

uint64_t hpclb_ruper_assigned(const hpclb_ruper *r, size_t w)
{
	return w < r->t.workers().size() ? r->t.assigned(w) : 0;
}

int hpclb_ruper_finished(const hpclb_ruper *r)
{
	return r->t.finished();
}
}
