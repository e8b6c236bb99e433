# hpcsched top-level Makefile.
#
#   make run      the main job (installs what it needs, builds, runs)
#   make check    every test; ends with "N passed, N failed"
#   make bench    benchmarks (ratios measured side by side)
#   make kernel   the patched Linux 6.12 test kernel
#
# Each part adds its own targets and test suites from a fragment in its
# directory; CHECK_SUITES collects the suites that 'make check' runs.

SHELL      := /bin/bash
TOP        := $(CURDIR)
BUILD      ?= $(TOP)/build
RESULTS    ?= $(BUILD)/results
JOBS       ?= $(shell nproc)
CMAKE_TYPE ?= RelWithDebInfo
# Warnings stop the build only in the developers' and CI's build: WERROR=ON
# (CI=true implies it). Every other build shows them and goes on.
WERROR     ?= $(if $(filter true 1 yes,$(CI)),ON,OFF)
WERROR_FLAG := $(if $(filter ON,$(WERROR)),-Werror)
export RESULTS WERROR WERROR_FLAG

# CHECK_SUITES given in the environment or on the command line picks the
# suites 'make check' runs (e.g. CHECK_SUITES=hpcd make check); the
# fragments below add every suite to the full list.
CHECK_ONLY   := $(CHECK_SUITES)
CHECK_SUITES :=

.PHONY: all deps build run check bench clean distclean help

all: build

help:
	@sed -n '3,8p' Makefile

deps:
	@tools/deps.sh

$(BUILD)/CMakeCache.txt: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_TYPE) -DHPCSCHED_WERROR=$(WERROR) \
		-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache

build: deps $(BUILD)/CMakeCache.txt
	@grep -qx 'HPCSCHED_WERROR:BOOL=$(WERROR)' $(BUILD)/CMakeCache.txt || \
		cmake -DHPCSCHED_WERROR=$(WERROR) $(BUILD) > /dev/null
	cmake --build $(BUILD) -j $(JOBS)

include tools/userspace.mk
-include tools/hpcd/hpcd.mk
-include tools/kbuild/kernel.mk
-include sched_ext/scx.mk
-include bench/metbench/metbench.mk
-include tools/mpich.mk
-include bench/bench.mk
-include tools/kbuild/ppc.mk
-include tools/hpclb/hpclb.mk
-include bench/repro/repro.mk
-include tests/tests.mk

CHECK_RUN = $(or $(CHECK_ONLY),$(CHECK_SUITES))

check: deps
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory -k $(addprefix check-,$(CHECK_RUN)) || true
	@echo; echo "===== summary ====="
	@tests/summary $(CHECK_RUN)

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf build-kernel
