# hpcsched top-level Makefile.
#
#   make run      the main job (installs what it needs, builds, runs)
#   make check    every test; ends with "N passed, N failed"
#   make bench    benchmarks (ratios measured side by side)
#   make kernel   the patched Linux 6.12 test kernel
#   make install  hpcctl, hpcd, libhpcmon and their man pages (PREFIX, DESTDIR)
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
CHECK_SUITES := deps

.PHONY: all deps build run check check-deps bench clean distclean help install

PREFIX  ?= /usr/local
DESTDIR ?=

all: build

help:
	@sed -n '3,9p' Makefile

# The Debian packages (tools/build/deps.txt): 'make deps' installs every group;
# each target installs the groups it needs (deps-userspace, deps-bpf,
# deps-kernel, deps-ppc, deps-mpich; tools/build/deps.sh --groups).
DEPS_GROUPS := userspace bpf kernel ppc mpich slurm deb
DEPS_TARGETS := $(addprefix deps-,$(DEPS_GROUPS))
.PHONY: $(DEPS_TARGETS)

deps:
	@tools/build/deps.sh

$(DEPS_TARGETS): deps-%:
	@tools/build/deps.sh $*

$(BUILD)/CMakeCache.txt: CMakeLists.txt | deps-userspace
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_TYPE) -DHPCSCHED_WERROR=$(WERROR) -DHPCD_BPF=ON \
		-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache

build: deps-userspace $(BUILD)/CMakeCache.txt
	@grep -qx 'HPCSCHED_WERROR:BOOL=$(WERROR)' $(BUILD)/CMakeCache.txt || \
		cmake -DHPCSCHED_WERROR=$(WERROR) $(BUILD) > /dev/null
	cmake --build $(BUILD) -j $(JOBS)

include tools/build/userspace.mk
-include tools/hpcd/hpcd.mk
-include tools/build/kbuild/kernel.mk
-include sched_ext/scx.mk
-include bench/metbench/metbench.mk
-include tools/build/mpich.mk
-include bench/bench.mk
-include tools/build/kbuild/ppc.mk
-include tools/hpclb/hpclb.mk
-include bench/repro/repro.mk
-include tools/slurm/slurm.mk
-include tools/packaging/deb.mk
-include tests/tests.mk

CHECK_RUN = $(or $(CHECK_ONLY),$(CHECK_SUITES))

check: deps
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory -k $(addprefix check-,$(CHECK_RUN)) || true
	@echo; echo "===== summary ====="
	@tests/summary $(CHECK_RUN)

# hpcctl and hpcmon-lib in PREFIX/bin, hpcd in PREFIX/sbin (hpcctl starts it
# from there), libhpcmon.so and, once 'make mpich' built it,
# libhpcmon-mpich.so in PREFIX/lib/hpcsched (hpcmon-lib prints them), the
# plot script of 'hpcctl report --plot' in PREFIX/share/hpcsched, hpcctl(1)
# and hpcd(8). DESTDIR is prepended to every path (staging).
install: hpcd
	cmake --build $(BUILD) -j $(JOBS) --target hpcmon
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX) --component hpcd
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX) --component hpcmon
	if [ -e $(BUILD)/mpich/tools/hpcmon/libhpcmon-mpich.so ]; then \
		DESTDIR=$(DESTDIR) cmake --install $(BUILD)/mpich --prefix $(PREFIX) --component hpcmon; fi

# The package groups and which target installs which (make -n only).
check-deps:
	@tests/run-suite deps -- tools/build/deps-test.sh

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf build-kernel
