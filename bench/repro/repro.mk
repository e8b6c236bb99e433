# Reproduction of the paper's four programs: the BT-MZ and SIESTA proxies,
# their tests and the report. Included from the top-level Makefile.
#
#   make reproduce     MetBench, MetBenchVar, BT-MZ (class A) and SIESTA
#                      proxies: baseline, static priorities, Uniform,
#                      Adaptive, Phase under hpcd, the simulator's view, and a report
#                      (Markdown + PNG) in $(REPRO_DIR); as root, ~13 min here;
#                      MetBench and MetBenchVar also on the SCHED_HPC kernel
#                      and under scx_hpc in QEMU (one boot each, ~2.5-3 min)
#                      where build-kernel/bzImage and build/scx are built
#     REPRO_GUEST=auto  (default) guest backends where built, else say why not
#     REPRO_GUEST=build build the kernel, then scx_hpc, first (make kernel scx)
#     REPRO_REPEAT=N    every way N times; the report shows medians and spread
#     REPRO_GUEST=no    hpcd and the simulator only
#     GUEST_KERNEL=     another bzImage for the guest backends
#   make check-repro   the proxies' structure: zone sizes, mapping,
#                      verification value, message pattern (no timing)

REPRO_DIR ?= $(BUILD)/reproduce

CHECK_SUITES += repro

.PHONY: reproduce repro-build check-repro

repro-build: deps-userspace $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target btmz btmz-tests siesta-proxy siesta-noise \
		siesta-tests hpcd hpcctl hpcmon hpcsim

REPRO_GUEST ?= auto
ifeq ($(REPRO_GUEST),build)
REPRO_GUEST_DEPS := repro-guest-build
endif

# The kernel first, then scx_hpc against its vmlinux (also under make -j).
.PHONY: repro-guest-build
repro-guest-build:
	$(MAKE) kernel
	$(MAKE) scx

# scx-hpcctl: hpcctl and its shared libraries for the guest image (cheap).
reproduce: build scx-hpcctl $(REPRO_GUEST_DEPS)
	@REPRO_GUEST=$(if $(filter build,$(REPRO_GUEST)),auto,$(REPRO_GUEST)) \
		bench/repro/reproduce.sh $(BUILD) $(REPRO_DIR)

check-repro: repro-build
	@tests/run-suite repro -- bench/repro/tests/run $(BUILD)
