# Kernel build and QEMU guest tests (included by the top-level Makefile).
# See tools/build/kbuild/README.md.
#
#   make kernel          pristine 6.12 + patches/*.patch -> build-kernel/bzImage
#   make kernel-dev      rebuild build-kernel/src as it is (no patch sync)
#   make patches-check   kernel/ <-> patched tree byte-identical (TAP)
#   make patches         regenerate patches/ (and kernel/) from build-kernel/src
#   make kernel-import   copy repo kernel/ files into build-kernel/src
#   make guest-initrd    build-kernel/initrd.gz from tests/guest/cases
#   make guest-run       boot once: SMP=2 CASES='glob' APPEND='...'
#   make guest-shell     interactive guest (Ctrl-A X quits)
#   make guest-selftest  boot the harness self-test cases (tests/guest/testdata)
# Options: KSRC=/path/to/linux-6.12.y (your own tree), GUEST_TIMEOUT=secs.

KBUILD_DIR := tools/build/kbuild
GUEST_DIR  := tests/guest
SMP        ?= 2
CASES      ?=
APPEND     ?=

CHECK_SUITES += patches-sync guest-logcheck guest-harness guest-x86-smp2 guest-x86-smp4 \
	guest-x86-smt4

.PHONY: kernel kernel-dev patches-check patches kernel-import guest-initrd \
	guest-run guest-shell guest-selftest check-patches-sync check-guest-logcheck \
	check-guest-harness \
	check-guest-x86-smp2 check-guest-x86-smp4 check-guest-x86-smt4

kernel: deps-kernel
	@$(KBUILD_DIR)/kbuild build

kernel-dev: deps-kernel
	@$(KBUILD_DIR)/kbuild dev-build

patches-check: deps-kernel
	@$(KBUILD_DIR)/kbuild prepare && $(KBUILD_DIR)/kbuild sync

patches:
	@$(KBUILD_DIR)/mkpatches

kernel-import:
	@$(KBUILD_DIR)/mkpatches --import

# Always re-run: cheap (only stale C cases are recompiled).
guest-initrd: deps-kernel
	@$(GUEST_DIR)/mkinitramfs

guest-run: kernel guest-initrd
	@$(GUEST_DIR)/run-qemu --smp $(SMP) $(if $(CASES),--cases '$(CASES)') \
		$(if $(APPEND),--append '$(APPEND)')

guest-shell: kernel guest-initrd
	@$(GUEST_DIR)/run-qemu --shell --smp $(SMP) $(if $(APPEND),--append '$(APPEND)')

guest-selftest: kernel
	@$(GUEST_DIR)/selftest

# --- suites for 'make check' (both guest suites share one kernel build:
# 'kernel' is a phony prerequisite, made once per make invocation).
# Console logs: $(RESULTS)/guest-smp2.log, guest-smp4.log, guest-selftest.log
# (the suite logs guest-x86-smp2.log etc. hold run-qemu's TAP output).
check-patches-sync: deps-kernel
	@tests/run-suite patches-sync -- $(KBUILD_DIR)/kbuild sync-suite

check-guest-logcheck:
	@tests/run-suite guest-logcheck -- $(GUEST_DIR)/check-log --self-test

check-guest-harness: kernel
	@tests/run-suite guest-harness -- $(GUEST_DIR)/selftest

check-guest-x86-smp2: kernel guest-initrd
	@tests/run-suite guest-x86-smp2 -- $(GUEST_DIR)/run-qemu --name smp2 --smp 2

# 4 vCPUs on a 2-CPU host take about 1.5 times as long for the timed cases:
# the whole boot may take 900 s (GUEST_TIMEOUT overrides).
check-guest-x86-smp4: kernel guest-initrd
	@tests/run-suite guest-x86-smp4 -- $(GUEST_DIR)/run-qemu --name smp4 --smp 4 \
		--timeout $(or $(GUEST_TIMEOUT),900)

# SMT4 (8 vCPUs: 2 cores of 4 threads): the SMT pairs against the topology,
# after hotplug and SMT off/on, and the emulation on those pairs; only the
# SMT cases (45-smt-emul, 64-smt-pairs), about 90 s.
check-guest-x86-smt4: kernel guest-initrd
	@tests/run-suite guest-x86-smt4 -- $(GUEST_DIR)/run-qemu --name smt4 \
		--smp 8,sockets=1,cores=2,threads=4 --cases '*-smt-*' \
		--timeout $(or $(GUEST_TIMEOUT),600)
