# User-space parts: the policy core library, its unit tests and the simulator.

HPCSIM := $(BUILD)/tools/sim/hpcsim

CHECK_SUITES += unit sim

.PHONY: check-unit check-sim run sim-table

check-unit: build deps-bpf
	@tests/run-suite unit -- tests/unit/run $(BUILD)

check-sim: build
	@tests/run-suite sim -- $(BUILD)/tools/sim/hpcsim-tests

RUN_DIR ?= $(BUILD)/run

# The main job: MetBench with 4 workers on this machine's emulated SMT cores,
# four ways (baseline, hpcd Uniform, Adaptive and Phase), the Table III shape
# and a timeline plot; then the simulator's view of MetBench, MetBenchVar,
# BT-MZ and SIESTA.
run: build
	@echo "== MetBench on this machine under hpcd (cgroup SMT emulation) =="
	@rm -rf $(RUN_DIR); mkdir -p $(RUN_DIR)
	@LOADS=$${LOADS:-500,2000,500,2000} ITERATIONS=$${ITERATIONS:-20} \
		WAYS=$${WAYS:-baseline uniform adaptive phase} \
		tools/hpcd/metbench-3ways.sh $(BUILD) $(RUN_DIR) > $(RUN_DIR)/summary.txt
	@grep -E "^(waits|  hpcd):" $(RUN_DIR)/summary.txt | sort -u || true
	@/usr/bin/python3 bench/metbench/report.py $(RUN_DIR) --png $(RUN_DIR)/timeline.png \
		--title "MetBench on $$(nproc) CPUs, hpcd cgroup SMT emulation"
	@echo; echo "== The same policy in the simulator (paper's machine model) =="
	@$(HPCSIM) table --workload metbench
	@$(HPCSIM) table --workload metbenchvar
	@$(HPCSIM) table --workload bt_mz
	@$(HPCSIM) table --workload siesta
