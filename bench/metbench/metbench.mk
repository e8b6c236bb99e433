# MetBench / MetBenchVar and the MPI monitor libhpcmon: build targets and test
# suites. Included from the top-level Makefile.
#
#   make metbench          metbench (MPI), metbench-shm, metbench-shm-static, unit tests
#   make metbench-static   only the static, MPI-free metbench-shm-static (busybox initramfs)
#   make hpcmon            libhpcmon.so, its test program and overhead micro-benchmark
#   make hpcmon-overhead   per-call cost of the monitor (with vs without LD_PRELOAD)
#   make check-metbench check-hpcmon
#
# Built and run with Open MPI by name (mpicc.openmpi, mpirun.openmpi), whatever
# Debian's mpi alternatives say; the MPICH build is tools/build/mpich.mk.

METBENCH_DIR   := $(BUILD)/bench/metbench
HPCMON_DIR     := $(BUILD)/tools/hpcmon
METBENCH_STATIC := $(METBENCH_DIR)/metbench-shm-static
HPCMON_LIB     := $(HPCMON_DIR)/libhpcmon.so
MPIRUN_FLAGS   := --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root)

CHECK_SUITES += metbench hpcmon

.PHONY: metbench metbench-static hpcmon hpcmon-overhead check-metbench check-hpcmon

metbench: deps-userspace $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target metbench metbench-shm metbench-shm-static \
		metbench-tests

metbench-static: deps-userspace $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target metbench-shm-static
	@echo "static MetBench (no MPI): $(METBENCH_STATIC)"

hpcmon: deps-userspace $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target hpcmon hpcmon-mpi-calls hpcmon-overhead \
		hpcmon-fortran-tests

hpcmon-overhead: hpcmon
	@echo "== without the monitor"
	@mpirun.openmpi $(MPIRUN_FLAGS) -np 1 $(HPCMON_DIR)/hpcmon-overhead 1000000
	@echo "== with LD_PRELOAD=libhpcmon.so (publishing off: the per-call cost)"
	@HPCD_SOCKET= HPCMON_QUIET=1 mpirun.openmpi $(MPIRUN_FLAGS) -np 1 -x HPCD_SOCKET -x HPCMON_QUIET \
		-x LD_PRELOAD=$(HPCMON_LIB) $(HPCMON_DIR)/hpcmon-overhead 1000000

check-metbench: metbench
	@tests/run-suite metbench -- bench/metbench/tests/run $(BUILD)

check-hpcmon: metbench hpcmon
	@tests/run-suite hpcmon -- tools/hpcmon/tests/run $(BUILD)
