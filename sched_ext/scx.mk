# scx_hpc: the SCHED_HPC policy as a sched_ext scheduler (included by the
# top-level Makefile). See sched_ext/README.md.
#
#   make scx              libbpf + bpftool (from the kernel tree's tools/),
#                         vmlinux.h, the BPF object, its skeleton, the static
#                         loader, scx_simple and the test programs -> build/scx/
#   make scx-guest-run    boot the test kernel once with only the scx cases
#   make scx-bench        scx_hpc's per-event cost beside scx_simple's (guest)
# Suites: scx-host (BPF object, skeleton, loader knob checks, hpcctl's scx
# backend: no sched_ext needed on the host), scx-guest
# (sched_ext/tests/guest-cases in QEMU, with hpcctl).
# Options: SCX_KSRC (kernel tree for tools/, default build-kernel/src or
# $(KSRC)), SCX_VMLINUX (vmlinux with BTF, default build-kernel/vmlinux).

SCX_DIR     := sched_ext
SCX_OUT     := $(BUILD)/scx
SCX_KSRC    ?= $(if $(KSRC),$(KSRC),$(TOP)/build-kernel/src)
SCX_VMLINUX ?= $(TOP)/build-kernel/vmlinux
SCX_CLANG   ?= clang-16
SCX_STRIP   ?= llvm-strip-16
SCX_TREE    := $(SCX_OUT)/tree
SCX_LIBBPF  := $(SCX_TREE)/build/obj/libbpf/libbpf.a
SCX_BPFTOOL := $(SCX_TREE)/build/sbin/bpftool
SCX_INC     := $(SCX_OUT)/include
SCX_CORE    := $(TOP)/kernel/hpc-core
SCX_ROOT    := $(SCX_OUT)/guest-root
SCX_BIN     := $(SCX_ROOT)/usr/local/bin
SCX_SCXINC  := $(SCX_KSRC)/tools/sched_ext/include
SCX_TOOLS_MAKE = $(MAKE) --no-print-directory -C $(SCX_KSRC)/tools/sched_ext \
	O=$(SCX_TREE) CLANG=$(SCX_CLANG) LLVM_STRIP=$(SCX_STRIP) VMLINUX_BTF=$(SCX_VMLINUX)

SCX_BPF_CFLAGS = -g -O2 -target bpf -mcpu=v3 -mlittle-endian -D__TARGET_ARCH_x86 \
	-Wall -Wno-compare-distinct-pointer-types \
	-I$(SCX_INC) -I$(SCX_SCXINC) -I$(SCX_SCXINC)/bpf-compat -I$(SCX_TREE)/build/include \
	-I$(SCX_KSRC)/tools/include/uapi -I$(SCX_CORE) -I$(TOP)/$(SCX_DIR) \
	$(shell $(SCX_CLANG) -v -E - </dev/null 2>&1 | \
		sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')

SCX_CXXFLAGS = -std=c++20 -O2 -g -Wall -Wextra $(WERROR_FLAG) -I$(SCX_INC) -I$(SCX_TREE)/build/include \
	-I$(SCX_CORE) -I$(TOP)/$(SCX_DIR) -I$(TOP)/tools/common
SCX_LDLIBS  = $(SCX_LIBBPF) -lelf -lz -pthread

SCX_TARGETS := $(SCX_BIN)/scx_hpc $(SCX_BIN)/scx_simple $(SCX_BIN)/scx_metbench \
	$(SCX_BIN)/scx_stress $(SCX_BIN)/scx_follow $(SCX_BIN)/scx_wakemix \
	$(SCX_ROOT)/usr/local/share/scx_hpc/lib.sh

CHECK_SUITES += scx-host scx-guest scx-guest-smp4

.PHONY: scx scx-tools scx-hpcctl scx-guest-initrd scx-bench scx-guest-run check-scx-host check-scx-guest check-scx-guest-smp4

scx: deps-userspace deps-bpf $(SCX_TARGETS)

# libbpf + bpftool, built by the kernel tree's own sched_ext Makefile (its
# rules for them do not need vmlinux). One recipe makes both: a grouped
# target, so that make -j runs it once.
$(SCX_LIBBPF) $(SCX_BPFTOOL) &: | deps-userspace deps-bpf deps-kernel
	@mkdir -p $(SCX_TREE)
	@test -d $(SCX_KSRC)/tools/sched_ext || \
		{ echo "scx: no kernel tree at $(SCX_KSRC) (make kernel, or SCX_KSRC=)"; exit 1; }
	$(SCX_TOOLS_MAKE) $(SCX_LIBBPF) $(SCX_BPFTOOL)

scx-tools: $(SCX_LIBBPF) $(SCX_BPFTOOL)

$(SCX_VMLINUX):
	@echo "scx: $@ not found (make kernel, or SCX_VMLINUX=)"; exit 1

$(SCX_INC)/vmlinux.h: $(SCX_VMLINUX) | $(SCX_BPFTOOL)
	@mkdir -p $(SCX_INC)
	@test -r $(SCX_VMLINUX) || { echo "scx: $(SCX_VMLINUX) not found (make kernel)"; exit 1; }
	$(SCX_BPFTOOL) btf dump file $(SCX_VMLINUX) format c > $@.tmp
	@# A kernel with the SCHED_HPC class carries the policy core's types in its
	@# BTF; scx_hpc compiles the core itself, so the kernel's copies are renamed.
	@sed -i -E 's/\b(hpc_(heuristic|params|prio_range|param_err|param_id|class|task|smt_knot))\b/__kernel_\1/g; s/\b(HPC_(HEUR|PARAM|P|CLASS)_[A-Z0-9_]+)\b/__KERNEL_\1/g' $@.tmp
	@grep -q 'struct sched_ext_ops {' $@.tmp || \
		{ echo "scx: $(SCX_VMLINUX) has no sched_ext (CONFIG_SCHED_CLASS_EXT)"; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@

$(SCX_OUT)/scx_hpc.bpf.o: $(SCX_DIR)/scx_hpc.bpf.c $(SCX_DIR)/scx_hpc.h $(SCX_INC)/vmlinux.h \
		$(SCX_CORE)/hpc_policy.c $(SCX_CORE)/hpc_policy.h $(SCX_CORE)/hpc_smt.c \
		$(SCX_CORE)/hpc_smt.h $(SCX_CORE)/hpc_types.h $(SCX_CORE)/hpc_queue.h | $(SCX_LIBBPF)
	$(SCX_CLANG) $(SCX_BPF_CFLAGS) -c $< -o $@

# Skeleton straight from the compiled object (DWARF stripped, BTF kept). Not
# through 'bpftool gen object': the policy core's name tables
# (hpc_param_names, hpc_heuristic_names) are pointer arrays in .rodata, which
# libbpf's static linker refuses ("relocation against STT_SECTION in non-exec
# section"); libbpf's loader ignores those relocations, and BPF code never
# reads the tables.
$(SCX_INC)/scx_hpc.bpf.skel.h: $(SCX_OUT)/scx_hpc.bpf.o | $(SCX_BPFTOOL)
	$(SCX_STRIP) -g -o $(SCX_OUT)/scx_hpc.stripped.o $<
	$(SCX_BPFTOOL) gen skeleton $(SCX_OUT)/scx_hpc.stripped.o name scx_hpc > $@.tmp
	@mv $@.tmp $@

$(SCX_OUT)/obj/%.o: $(SCX_CORE)/%.c $(SCX_CORE)/*.h
	@mkdir -p $(dir $@)
	gcc -O2 -g -Wall -Wextra $(WERROR_FLAG) -I$(SCX_CORE) -c $< -o $@

$(SCX_OUT)/obj/params_text.o: tools/common/params_text.cpp tools/common/params_text.hpp \
		$(SCX_CORE)/hpc_policy.h
	@mkdir -p $(dir $@)
	g++ $(SCX_CXXFLAGS) -c $< -o $@

# The loader (scx_hpc.cpp), its following of trees and cgroups
# (scx_hpc_follow.cpp) and the maps' user-space view it shares with hpcctl
# (scx_hpc_user.cpp, in hpcctl's CMake build too).
SCX_LOADER_HDRS := $(SCX_DIR)/scx_hpc.h $(SCX_DIR)/scx_hpc_user.hpp $(SCX_DIR)/scx_hpc_follow.hpp \
	tools/common/params_text.hpp $(SCX_CORE)/hpc_policy.h $(SCX_CORE)/hpc_smt.h

$(SCX_OUT)/obj/scx_hpc.o: $(SCX_DIR)/scx_hpc.cpp $(SCX_LOADER_HDRS) $(SCX_INC)/scx_hpc.bpf.skel.h
	@mkdir -p $(dir $@)
	g++ $(SCX_CXXFLAGS) -c $< -o $@

$(SCX_OUT)/obj/scx_hpc_%.o: $(SCX_DIR)/scx_hpc_%.cpp $(SCX_LOADER_HDRS) | $(SCX_LIBBPF)
	@mkdir -p $(dir $@)
	g++ $(SCX_CXXFLAGS) -c $< -o $@

# Static: the busybox guest has no shared libraries.
$(SCX_BIN)/scx_hpc: $(SCX_OUT)/obj/scx_hpc.o $(SCX_OUT)/obj/scx_hpc_user.o \
		$(SCX_OUT)/obj/scx_hpc_follow.o $(SCX_OUT)/obj/params_text.o \
		$(SCX_OUT)/obj/hpc_policy.o $(SCX_OUT)/obj/hpc_smt.o $(SCX_LIBBPF)
	@mkdir -p $(dir $@)
	g++ -static -o $@ $(filter %.o,$^) $(SCX_LDLIBS)

# The kernel's own example, relinked statically from its object.
$(SCX_BIN)/scx_simple: $(SCX_INC)/vmlinux.h | $(SCX_LIBBPF) $(SCX_BPFTOOL)
	@mkdir -p $(dir $@)
	$(SCX_TOOLS_MAKE) scx_simple
	gcc -static -o $@ $(SCX_TREE)/build/obj/sched_ext/scx_simple.o $(SCX_LDLIBS)

$(SCX_BIN)/scx_wakemix: tests/guest/cases/wakemix.h

$(SCX_BIN)/%: $(SCX_DIR)/tests/%.c
	@mkdir -p $(dir $@)
	gcc -static -O2 -Wall -Wextra $(WERROR_FLAG) -pthread -o $@ $<

$(SCX_ROOT)/usr/local/share/scx_hpc/lib.sh: $(SCX_DIR)/tests/lib.sh
	@mkdir -p $(dir $@)
	cp $< $@

# The guest image with the scx binaries (its own initrd: build-kernel/initrd.gz
# is left as the other suites build it).
# hpcctl (for `hpcctl --backend scx`, which inspects and changes the running
# scx_hpc) goes in with the shared libraries it needs (the guest has none of
# its own).
SCX_HPCCTL_ROOT := $(SCX_OUT)/hpcctl-root

scx-hpcctl: hpcd
	@rm -rf $(SCX_HPCCTL_ROOT); mkdir -p $(SCX_HPCCTL_ROOT)/usr/local/bin
	cp $(BUILD)/tools/hpcd/hpcctl $(SCX_HPCCTL_ROOT)/usr/local/bin/
	@for lib in $$(ldd $(BUILD)/tools/hpcd/hpcctl | awk '$$2 == "=>" && $$3 ~ /^\// { print $$3 } $$1 ~ /^\/.*ld-linux/ { print $$1 }'); do \
		mkdir -p $(SCX_HPCCTL_ROOT)$$(dirname $$lib); cp -L $$lib $(SCX_HPCCTL_ROOT)$$lib; done

scx-guest-initrd: scx scx-hpcctl
	@GUEST_EXTRA=$(SCX_ROOT):$(SCX_HPCCTL_ROOT) GUEST_CASES=$(TOP)/sched_ext/tests/guest-cases \
		tests/guest/mkinitramfs -o $(SCX_OUT)/initrd.gz

# The benchmark: scx_hpc's per-event cost beside scx_simple's (bpf_stats),
# then wake-up latency, hackbench and shares as normal, SCHED_HPC and
# SCHED_EXT tasks (91-scx-wakemix.sh), in one boot; prints the tables,
# asserts nothing about the numbers.
scx-bench: kernel scx scx-hpcctl
	@GUEST_EXTRA=$(SCX_ROOT):$(SCX_HPCCTL_ROOT) GUEST_CASES=$(TOP)/sched_ext/tests/bench-cases \
		tests/guest/mkinitramfs -o $(SCX_OUT)/initrd-bench.gz
	@RESULTS=$(SCX_OUT)/bench-results tests/guest/run-qemu --name scx-bench --smp 2 \
		--initrd $(SCX_OUT)/initrd-bench.gz --cases '9*-scx-*' \
		--timeout $(or $(GUEST_TIMEOUT),1800)
	@sed -n 's/^# 90-scx-bench.sh: # //p' $(SCX_OUT)/bench-results/guest-scx-bench.log | \
		tee $(SCX_OUT)/bench.txt
	@sed -n 's/^# 91-scx-wakemix.sh: # wakemix: //p' $(SCX_OUT)/bench-results/guest-scx-bench.log | \
		tee $(SCX_OUT)/bench-wakemix.txt

scx-guest-run: kernel scx-guest-initrd
	@tests/guest/run-qemu --name scx-smp2 --smp 2 --initrd $(SCX_OUT)/initrd.gz \
		--cases '[56]*-scx-*' $(if $(APPEND),--append '$(APPEND)') \
		--timeout $(or $(GUEST_TIMEOUT),1080)

# With the loader built: hpcctl --backend scx's checks of the real loader
# too (the hpcd suite skips them when make scx has not run).
# scx is built with -j here (the suites' make runs without it), so that a
# parallel build of libbpf and bpftool stays tested.
check-scx-host: kernel hpcd
	@$(MAKE) --no-print-directory -j$(JOBS) scx
	@tests/run-suite scx-host -- bash -c '$(SCX_DIR)/tests/host-check $(SCX_OUT) && \
		tools/hpcd/tests/hpcctl-scx.sh $(BUILD)/tools/hpcd $(SCX_BIN)/scx_hpc'

# The cases take 440-590 s on a quiet host (61-scx-wakeup-mix alone
# 260-400 s, about 170 s more when its part B is measured twice): the whole
# boot may take 1080 s (GUEST_TIMEOUT overrides).
check-scx-guest: kernel scx-guest-initrd
	@tests/run-suite scx-guest -- tests/guest/run-qemu --name scx-smp2 --smp 2 \
		--initrd $(SCX_OUT)/initrd.gz --cases '[56]*-scx-*' \
		--timeout $(or $(GUEST_TIMEOUT),1080)

# Placement over emulated cores needs two of them: 4 CPUs, the balance case.
check-scx-guest-smp4: kernel scx-guest-initrd
	@tests/run-suite scx-guest-smp4 -- tests/guest/run-qemu --name scx-smp4 --smp 4 \
		--initrd $(SCX_OUT)/initrd.gz --cases '55-scx-balance*'
