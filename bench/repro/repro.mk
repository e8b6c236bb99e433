# Reproduction of the paper's four programs: the BT-MZ and SIESTA proxies,
# their tests and the report. Included from the top-level Makefile.
#
#   make reproduce     MetBench, MetBenchVar, BT-MZ (class A) and SIESTA
#                      proxies: baseline, static priorities, Uniform, Adaptive
#                      under hpcd, the simulator's view, and a report
#                      (Markdown + PNG) in $(REPRO_DIR); as root, ~7 min here
#   make check-repro   the proxies' structure: zone sizes, mapping,
#                      verification value, message pattern (no timing)

REPRO_DIR ?= $(BUILD)/reproduce

CHECK_SUITES += repro

.PHONY: reproduce repro-build check-repro

repro-build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target btmz btmz-tests siesta-proxy siesta-noise \
		siesta-tests hpcd hpcctl hpcmon hpcsim

reproduce: build
	@bench/repro/reproduce.sh $(BUILD) $(REPRO_DIR)

check-repro: repro-build
	@tests/run-suite repro -- bench/repro/tests/run $(BUILD)
