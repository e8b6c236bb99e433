# libhpclb (cross-node rebalancing): build targets, test suites and its part
# of 'make bench'. Included from the top-level Makefile.
#
#   make hpclb          the library, its tests and the decision-time benchmark
#   make check-hpclb    unit tests: formulas, parsers, plans, C API (GoogleTest);
#                       Stencil2D under mpirun with 2-4 ranks (TAP)
#   make check-hpclb-cluster  the namespace test cluster (root; fails with the
#                       reason when namespaces, veth or cgroups cannot be made)
#   make bench-hpclb    decision time for 1e5 work units on 1e3 simulated ranks;
#                       Stencil2D on the namespace cluster, no LB vs each method

HPCLB_DIR := $(BUILD)/tools/hpclb

CHECK_SUITES += hpclb hpclb-cluster

.PHONY: hpclb check-hpclb check-hpclb-cluster bench-hpclb

hpclb: deps-userspace $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target hpclb hpclb-tests hpclb-decide hpclb-stencil2d hpclb-example hpclb-montecarlo

check-hpclb: hpclb
	@tests/run-suite hpclb -- bash -c '$(HPCLB_DIR)/hpclb-tests; a=$$?; \
		tools/hpclb/tests/mpi-tests.sh $(BUILD); b=$$?; exit $$((a | b))'

check-hpclb-cluster: hpclb
	@tests/run-suite hpclb-cluster -- tools/hpclb/tests/cluster-tests.sh $(BUILD)

bench-hpclb: hpclb
	@tools/hpclb/bench/bench.sh $(BUILD) $(BENCH_DIR)/hpclb
