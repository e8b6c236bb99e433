# User-space parts: the policy core library, its unit tests and the simulator.

HPCSIM := $(BUILD)/tools/sim/hpcsim

CHECK_SUITES += unit sim

.PHONY: check-unit check-sim run sim-table

check-unit: build
	@tests/run-suite unit -- tests/unit/run $(BUILD)

check-sim: build
	@tests/run-suite sim -- $(BUILD)/tools/sim/hpcsim-tests

# The main job. Until the user-space controller drives real processes, it is
# the simulator's reproduction of the paper's Tables III and IV.
run: build
	@$(HPCSIM) table --workload metbench
	@$(HPCSIM) table --workload metbenchvar
