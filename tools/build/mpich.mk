# MPICH beside Open MPI: MetBench and libhpcmon built a second time, from the
# same sources, against MPICH (mpicc.mpich / mpicxx.mpich) in build/mpich.
# Included from the top-level Makefile.
#
#   make mpich                 build/mpich: metbench, libhpcmon-mpich.so, their test
#                              programs, tiny_mpi built by mpicc.mpich and mpicc.openmpi
#   make hpcmon-overhead-mpich per-call cost of libhpcmon-mpich.so (with vs without)
#   make bench-mpich           Open MPI and MPICH side by side: MetBench's wall and
#                              execution time, libhpcmon's cost per call (ratios, one run)
#   make check-mpich           the mpich suite
#
# The Open MPI build (build/) names mpicc.openmpi and the tests mpirun.openmpi,
# so neither depends on Debian's 'mpi'/'mpirun' alternatives.

MPICH_BUILD   := $(BUILD)/mpich
MPICH_TINY    := $(MPICH_BUILD)/tiny-mpi-mpich $(MPICH_BUILD)/tiny-mpi-openmpi
MPICH_HPCMON  := $(MPICH_BUILD)/tools/hpcmon
MPIEXEC_MPICH := mpiexec.mpich -launcher fork

CHECK_SUITES += mpich

.PHONY: mpich hpcmon-overhead-mpich bench-mpich check-mpich

$(MPICH_BUILD)/CMakeCache.txt: CMakeLists.txt | deps-userspace deps-mpich
	cmake -S . -B $(MPICH_BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_TYPE) -DHPCSCHED_MPI=mpich \
		-DHPCSCHED_WERROR=$(WERROR) \
		-DHPCSCHED_UNIT_TESTS=OFF \
		-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache

# A plain MPI program, built by each implementation's own compiler wrapper.
$(MPICH_BUILD)/tiny-mpi-%: tools/hpcmon/tests/tiny_mpi.c | $(MPICH_BUILD)/CMakeCache.txt
	mpicc.$* -O2 -Wall -Wextra $(WERROR_FLAG) -o $@ $<

mpich: deps-userspace deps-mpich $(MPICH_BUILD)/CMakeCache.txt
	cmake --build $(MPICH_BUILD) -j $(JOBS) --target metbench hpcmon hpcmon-mpi-calls \
		hpcmon-overhead hpcmon-fortran-tests
	@$(MAKE) --no-print-directory $(MPICH_TINY)

hpcmon-overhead-mpich: mpich
	@echo "== MPICH, without the monitor"
	@$(MPIEXEC_MPICH) -n 1 $(MPICH_HPCMON)/hpcmon-overhead 1000000
	@echo "== MPICH, with LD_PRELOAD=libhpcmon-mpich.so (publishing off: the per-call cost)"
	@HPCD_SOCKET= HPCMON_QUIET=1 $(MPIEXEC_MPICH) -n 1 \
		-genv LD_PRELOAD $(MPICH_HPCMON)/libhpcmon-mpich.so $(MPICH_HPCMON)/hpcmon-overhead 1000000

bench-mpich: mpich metbench hpcmon
	@PYTHONDONTWRITEBYTECODE=1 tools/hpcmon/bench-mpich.py $(BUILD)

# The MPICH build's MetBench and monitor checks (the Open MPI suites' own
# scripts, HPCSCHED_MPI=mpich), then the two MPIs side by side (which needs
# the Open MPI build too) and hpcd managing MetBench under MPICH.
check-mpich: mpich metbench hpcmon hpcd
	@tests/run-suite mpich -- tools/hpcmon/tests/run-mpich $(BUILD)

# Fortran programs of each binding under both MPIs, launched with the README's
# hpcctl trace -- mpirun/mpiexec line and read back with hpcctl report.
CHECK_SUITES += fortran-trace
.PHONY: check-fortran-trace
check-fortran-trace: mpich hpcmon hpcd
	@tests/run-suite fortran-trace -- tools/hpcd/tests/fortran-trace.sh $(BUILD)
