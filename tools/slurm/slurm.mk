# The Slurm SPANK plugin (tools/slurm): its build target and test suite.
# Included from the top-level Makefile.
#
#   make slurm-plugin   build/tools/slurm/hpcsched.so (libslurm-dev's spank.h)
#   make check-slurm    the slurm suite: a one-node Slurm of its own (munged,
#                       slurmctld, slurmd; root), MetBench under srun --hpcsched

SLURM_DIR := $(BUILD)/tools/slurm

CHECK_SUITES += slurm

.PHONY: slurm-plugin check-slurm

# A build tree configured before libslurm-dev was installed looks for
# spank.h again.
slurm-plugin: deps-userspace deps-slurm $(BUILD)/CMakeCache.txt
	@grep -q '^SLURM_SPANK_INCLUDE_DIR:PATH=/' $(BUILD)/CMakeCache.txt || \
		cmake -USLURM_SPANK_INCLUDE_DIR $(BUILD) > /dev/null
	cmake --build $(BUILD) -j $(JOBS) --target hpcsched_spank

check-slurm: slurm-plugin
	cmake --build $(BUILD) -j $(JOBS) --target hpcd hpcctl hpcd-spin hpcmon metbench
	@tests/run-suite slurm -- tools/slurm/tests/slurm-tests.sh $(BUILD)
