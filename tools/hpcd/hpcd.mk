# hpcd (user-space controller) and hpcctl: build targets and the test suite.
# Included from the top-level Makefile.
#
#   make hpcd            hpcd, hpcctl, their unit tests and the test load (and
#                        hpcctl-scx-maps: stand-in scx_hpc maps)
#   make check-hpcd      unit tests + integration on this machine's cgroups (root)
#   make check-install   make install into a DESTDIR, then the installed tools
#   make hpcd-metbench   MetBench under hpcd three ways: baseline, Uniform, Adaptive

HPCD_DIR := $(BUILD)/tools/hpcd

CHECK_SUITES += hpcd install

.PHONY: hpcd check-hpcd check-install hpcd-metbench

hpcd: deps-userspace $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target hpcd hpcctl hpcd-tests hpcd-spin hpcd-threads \
		hpcctl-scx-maps

# libhpcmon and MetBench: the launcher tests and metbench-3ways.sh run them.
check-hpcd: hpcd
	cmake --build $(BUILD) -j $(JOBS) --target hpcmon metbench
	@tests/run-suite hpcd -- tools/hpcd/tests/run-suite.sh $(BUILD)

# make install into a DESTDIR; the installed tools; README.md's hpcd commands.
# mpich: the MPICH build's library is installed beside Open MPI's and checked.
check-install: hpcd metbench mpich
	@tests/run-suite install -- tools/hpcd/tests/install.sh $(TOP) $(BUILD)

hpcd-metbench: hpcd
	cmake --build $(BUILD) -j $(JOBS) --target metbench hpcmon
	@tools/hpcd/metbench-3ways.sh $(BUILD)
