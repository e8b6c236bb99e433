# Benchmarks: ratios measured side by side in one run. Included from the
# top-level Makefile.
#
#   make bench    MetBench and MetBenchVar (k = 15): baseline vs hpcd Uniform vs
#                 hpcd Adaptive, gains vs the simulator's; hpcd's CPU cost per
#                 task; libhpcmon's cost per MPI call; weight mode on a balanced
#                 MetBench vs no hpcd; every mode against plain mpirun on
#                 balanced and imbalanced programs (bench/bench.sh; as root,
#                 ~15 min on 2 CPUs);
#                 then hpcd's own CPU time managing 16, 64 and 256 iterating
#                 tasks, in weight and smt-emul mode, with its BPF and its /proc
#                 event source, and how close the sleeps and wake-ups it found
#                 are to the tasks' own (bench-hpcd-scale, bench/hpcd-scale.sh;
#                 ~4 min);
#                 then libhpclb's methods (bench-hpclb, tools/hpclb/hpclb.mk);
#                 then Open MPI beside MPICH (bench-mpich, tools/build/mpich.mk);
#                 then scx_hpc beside scx_simple in the QEMU guest, and wake-up
#                 latency, hackbench and shares of normal, SCHED_HPC and
#                 SCHED_EXT tasks (bench-scx:
#                 make scx-bench, sched_ext/scx.mk) when the guest kernel image
#                 is there, its ratios appended to the summary; skipped (and
#                 said why) without it

BENCH_DIR ?= $(BUILD)/bench-results

#   make bench-balanced   the balanced application alone (bench.sh's
#                 BENCH_ONLY=balanced-app; a few minutes): baseline, Uniform,
#                 Adaptive, each heuristic's ratio to the baseline (<= 1.02)

SCX_BENCH_IMAGE ?= $(TOP)/build-kernel/bzImage

.PHONY: bench bench-scx bench-balanced bench-hpcd-scale

bench-balanced: build
	@BENCH_ONLY=balanced-app bench/bench.sh $(BUILD) $(BUILD)/bench-balanced

bench: build
	@bench/bench.sh $(BUILD) $(BENCH_DIR)
	@$(MAKE) --no-print-directory bench-hpcd-scale
	@cat $(BENCH_DIR)/hpcd-scale/summary.txt >> $(BENCH_DIR)/summary.txt
	@$(MAKE) --no-print-directory bench-hpclb
	@$(MAKE) --no-print-directory bench-mpich
	@$(MAKE) --no-print-directory bench-scx

#   make bench-hpcd-scale   hpcd's CPU time at node scale alone (SCALE_TASKS,
#                 SCALE_MODES, SCALE_SOURCES, SCALE_SECS, SCALE_SHORT_WAIT_MS:
#                 bench/hpcd-scale.sh)
bench-hpcd-scale: build
	@bench/hpcd-scale.sh $(BUILD) $(BENCH_DIR)/hpcd-scale

bench-scx:
	@mkdir -p $(BENCH_DIR)
	@if [ ! -e $(SCX_BENCH_IMAGE) ]; then \
		echo "== scx_hpc vs scx_simple: skipped: no guest kernel image $(SCX_BENCH_IMAGE) (make kernel builds it)" | \
			tee -a $(BENCH_DIR)/summary.txt; \
	else \
		echo "== scx_hpc vs scx_simple (make scx-bench; log in $(BENCH_DIR)/scx-bench.log)"; \
		rm -f $(SCX_OUT)/bench.txt $(SCX_OUT)/bench-wakemix.txt; \
		$(MAKE) --no-print-directory scx-bench >$(BENCH_DIR)/scx-bench.log 2>&1 || \
			{ tail -n 20 $(BENCH_DIR)/scx-bench.log >&2; echo "bench: make scx-bench failed" >&2; exit 1; }; \
		/usr/bin/python3 bench/summary.py --scx $(SCX_OUT)/bench.txt | tee -a $(BENCH_DIR)/summary.txt; \
		{ echo "wake-up latency, hackbench and shares: normal, SCHED_HPC, SCHED_EXT (91-scx-wakemix.sh):"; \
		  grep -A6 '^medians' $(SCX_OUT)/bench-wakemix.txt; } | tee -a $(BENCH_DIR)/summary.txt; \
	fi
