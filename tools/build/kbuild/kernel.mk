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
#   make kernel-rt       the PREEMPT_RT, 16-CPU, cpufreq test kernel -> build-kernel/rt/bzImage
#   make guest-run-rt    boot it once (SMP=, CASES=, APPEND=)
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

# The cases take 420-440 s on a quiet host; a shared one can stretch the
# timed cases by half: the whole boot may take 900 s (GUEST_TIMEOUT
# overrides).
check-guest-x86-smp2: kernel guest-initrd
	@tests/run-suite guest-x86-smp2 -- $(GUEST_DIR)/run-qemu --name smp2 --smp 2 \
		--timeout $(or $(GUEST_TIMEOUT),900)

# 4 vCPUs on a 2-CPU host take about 1.5 times as long for the timed cases
# (510-690 s seen): the whole boot may take 1200 s (GUEST_TIMEOUT overrides).
check-guest-x86-smp4: kernel guest-initrd
	@tests/run-suite guest-x86-smp4 -- $(GUEST_DIR)/run-qemu --name smp4 --smp 4 \
		--timeout $(or $(GUEST_TIMEOUT),1200)

# SMT4 (8 vCPUs: 2 cores of 4 threads): the SMT pairs against the topology,
# after hotplug and SMT off/on, and the emulation on those pairs; only the
# SMT cases (45-smt-emul, 64-smt-pairs), about 90 s.
check-guest-x86-smt4: kernel guest-initrd
	@tests/run-suite guest-x86-smt4 -- $(GUEST_DIR)/run-qemu --name smt4 \
		--smp 8,sockets=1,cores=2,threads=4 --cases '*-smt-*' \
		--timeout $(or $(GUEST_TIMEOUT),600)

# The PREEMPT_RT test kernel (tests/guest/configs/x86_64-rt.config on top of
# x86_64.config: PREEMPT_RT, 16 CPUs, cpufreq with schedutil), in a tree of
# its own (build-kernel/rt/src, build-kernel/rt/bzImage). Its suites: the
# cases on 2 vCPUs (lockdep sees the locking of the threaded interrupt and
# irq_work handlers), and the SMT cases and 40-balance on 16 vCPUs as two
# SMT8 cores (more CPUs than the class's bounded scans read at once).
# Not run on it: 32-wakeup-mix, whose hackbench runs do not fit its
# watchdog there under TCG, and 64-smt-pairs, which runs in the 16-CPU
# boot: in this one it met a warning of Linux's own at CPU offline
# (tools/build/kbuild/README.md says what they measured and met).
RT_CASES := 0*,1*,2*,30-*,31-*,35-*,36-*,4*,5*,60-*,61-*,62-*,63-*,9*
RT_BK  := $(CURDIR)/build-kernel/rt
RT_ENV := BK=$(RT_BK) \
	KCONFIG_FRAGMENT="$(CURDIR)/$(GUEST_DIR)/configs/x86_64.config $(CURDIR)/$(GUEST_DIR)/configs/x86_64-rt.config"

CHECK_SUITES += guest-x86-rt guest-x86-rt-smt8

.PHONY: kernel-rt guest-run-rt check-guest-x86-rt check-guest-x86-rt-smt8

kernel-rt: deps-kernel
	@$(RT_ENV) $(KBUILD_DIR)/kbuild build

guest-run-rt: kernel-rt guest-initrd
	@$(GUEST_DIR)/run-qemu --name rt --kernel $(RT_BK)/bzImage --smp $(SMP) \
		$(if $(CASES),--cases '$(CASES)') $(if $(APPEND),--append '$(APPEND)')

check-guest-x86-rt: kernel-rt guest-initrd
	@tests/run-suite guest-x86-rt -- $(GUEST_DIR)/run-qemu --name rt --smp 2 \
		--kernel $(RT_BK)/bzImage --cases '$(RT_CASES)' --timeout $(or $(GUEST_TIMEOUT),900)

check-guest-x86-rt-smt8: kernel-rt guest-initrd
	@tests/run-suite guest-x86-rt-smt8 -- $(GUEST_DIR)/run-qemu --name rt-smt8 \
		--kernel $(RT_BK)/bzImage --smp 16,sockets=1,cores=2,threads=8 --cases '*-smt-*,40-*' \
		--timeout $(or $(GUEST_TIMEOUT),900)
