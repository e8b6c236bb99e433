# Benchmarks: ratios measured side by side in one run. Included from the
# top-level Makefile.
#
#   make bench    MetBench and MetBenchVar (k = 15): baseline vs hpcd Uniform vs
#                 hpcd Adaptive, gains vs the simulator's; hpcd's CPU cost per
#                 task; libhpcmon's cost per MPI call; weight mode on a balanced
#                 MetBench vs no hpcd (bench/bench.sh; as root, ~6 min on 2 CPUs);
#                 then libhpclb's methods (bench-hpclb, tools/hpclb/hpclb.mk)

BENCH_DIR ?= $(BUILD)/bench-results

.PHONY: bench

bench: build
	@bench/bench.sh $(BUILD) $(BENCH_DIR)
	@$(MAKE) --no-print-directory bench-hpclb
