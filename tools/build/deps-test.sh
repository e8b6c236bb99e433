#!/usr/bin/env bash
# The package groups of tools/build/deps.txt and which make targets install which
# (make -n: nothing is installed or built). TAP output.
# usage: tools/build/deps-test.sh   (from the top of the tree)
set -u
deps=tools/build/deps.sh
# shellcheck source=../../tests/tap.sh
. tests/tap.sh
work=$(mktemp -d /tmp/deps-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

groups=$("$deps" --groups | cut -d: -f1 | tr '\n' ' ')
check "groups: base userspace bpf kernel ppc mpich slurm deb ($groups)" test "$groups" = "base userspace bpf kernel ppc mpich slurm deb "
all=$("$deps" --list | sort)
dups=$(sort <<<"$all" | uniq -d | tr '\n' ' ')
check "no package in two groups (${dups:-none})" test -z "$dups"
sum=$(for g in userspace bpf kernel ppc mpich slurm deb; do "$deps" --list "$g"; done | sort -u)
check "every group together is every package" test "$sum" = "$all"
us=$("$deps" --list userspace)
for p in qemu-system-x86 linux-source-6.12 gcc-powerpc64le-linux-gnu qemu-system-ppc llvm-16 mpich; do
	check "userspace does not install $p" bash -c "! grep -qx '$p' <<<'$us'"
done
# clang-16, bpftool, libbpf-dev: hpcd's BPF event source is built with it
for p in build-essential cmake libopenmpi-dev libhwloc-dev python3-matplotlib clang-16 bpftool libbpf-dev; do
	check "userspace installs $p" grep -qx "$p" <<<"$us"
done
check "ppc: the cross compiler and qemu-system-ppc, base too" bash -c \
	"\"$deps\" --list ppc | grep -qx gcc-powerpc64le-linux-gnu && \"$deps\" --list ppc | grep -qx qemu-system-ppc && \"$deps\" --list ppc | grep -qx build-essential"
"$deps" wobble >"$work/o" 2>&1; rc=$?
check "an unknown group: exit 2, named, nothing installed" bash -c "[ $rc -eq 2 ] && grep -q \"unknown group 'wobble'\" '$work/o'"
mkdir "$work/t" && cp "$deps" "$work/t/" && { echo stray-pkg; cat tools/build/deps.txt; } >"$work/t/deps.txt"
"$work/t/deps.sh" --list >"$work/o" 2>&1; rc=$?
check "a package before any group: refused, named" bash -c "[ $rc -ne 0 ] && grep -q 'stray-pkg is in no group' '$work/o'"

# Which groups a target installs (make -n prints the commands).
groups_of() { make -n "$1" 2>/dev/null | grep -o 'tools/build/deps.sh[a-z -]*' | sed 's/tools\/build\/deps.sh//; s/^ //' | sort -u | tr '\n' ',' | sed 's/^,/all,/; s/,$//'; }
for t in build run hpcd check-hpcd install metbench hpclb; do
	g=$(groups_of $t)
	check "make $t installs the userspace group only ($g)" test "$g" = userspace
done
g=$(groups_of check-unit)
check "make check-unit: userspace and bpf ($g)" test "$g" = "bpf,userspace"
g=$(groups_of kernel)
check "make kernel: the kernel group only ($g)" test "$g" = kernel
g=$(groups_of check-guest-ppc64le)
check "make check-guest-ppc64le: kernel and ppc ($g)" test "$g" = "kernel,ppc"
g=$(groups_of mpich)
check "make mpich: userspace and mpich ($g)" test "$g" = "mpich,userspace"
g=$(groups_of check-scx-host)
check "make check-scx-host: bpf, kernel and userspace (hpcctl for the loader's checks) ($g)" test "$g" = "bpf,kernel,userspace"
g=$(make -n deps 2>/dev/null | grep -o 'tools/build/deps.sh.*')
check "make deps: every group ($g)" test "$g" = "tools/build/deps.sh"
check "make check: every group first" bash -c "make -n check 2>/dev/null | grep -m1 'tools/build/deps.sh' | grep -qx 'tools/build/deps.sh'"

tap_end
