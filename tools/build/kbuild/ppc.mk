# The POWER backend's test kernel and guest (included by the top-level
# Makefile): the same series cross-built for ppc64le (pseries, POWER9) and
# booted under qemu-system-ppc64 (TCG). See tools/build/kbuild/README.md.
#
#   make kernel-ppc        build-kernel/ppc64le/vmlinux.ppc64le
#   make guest-initrd-ppc  build-kernel/ppc64le/initrd.gz from tests/guest/ppc-cases
#   make guest-run-ppc     boot once (CASES='glob' APPEND='...')
#   make guest-shell-ppc   interactive ppc64le guest (Ctrl-A X quits)

PPC_BK  := $(CURDIR)/build-kernel/ppc64le
PPC_ENV := BK=$(PPC_BK) GUEST_CASES=$(CURDIR)/tests/guest/ppc-cases \
	GUEST_CC=powerpc64le-linux-gnu-gcc BUSYBOX_RUN=qemu-ppc64le-static

CHECK_SUITES += guest-ppc64le guest-ppc64le-ornop

.PHONY: kernel-ppc guest-initrd-ppc guest-run-ppc guest-shell-ppc check-guest-ppc64le \
	check-guest-ppc64le-ornop

kernel-ppc: deps-kernel deps-ppc
	@KARCH=ppc64le $(KBUILD_DIR)/kbuild build

guest-initrd-ppc: deps-kernel deps-ppc
	@$(PPC_ENV) BUSYBOX=$$($(KBUILD_DIR)/ppc-busybox) $(GUEST_DIR)/mkinitramfs

guest-run-ppc: kernel-ppc guest-initrd-ppc
	@$(GUEST_DIR)/run-qemu --arch ppc64le --smp $(SMP) $(if $(CASES),--cases '$(CASES)') \
		$(if $(APPEND),--append '$(APPEND)')

guest-shell-ppc: kernel-ppc guest-initrd-ppc
	@$(GUEST_DIR)/run-qemu --arch ppc64le --shell --smp $(SMP) \
		$(if $(APPEND),--append '$(APPEND)')

# Logs: $(RESULTS)/guest-ppc64le.log (console), guest-ppc64le.tap.
check-guest-ppc64le: kernel-ppc guest-initrd-ppc
	@tests/run-suite guest-ppc64le -- $(GUEST_DIR)/run-qemu --arch ppc64le --name ppc64le --smp 2

# The same cases on the POWER5/6 path: sched_hpc_power=ornop makes the
# kernel set thread priorities by or-nop and leave the PPR alone.
check-guest-ppc64le-ornop: kernel-ppc guest-initrd-ppc
	@tests/run-suite guest-ppc64le-ornop -- $(GUEST_DIR)/run-qemu --arch ppc64le \
		--name ppc64le-ornop --smp 2 --append sched_hpc_power=ornop
