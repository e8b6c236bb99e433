#!/usr/bin/env bash
# Install, idempotently, the Debian packages tools/build/deps.txt lists for base
# and the GROUPs given (none: every group).
#
# usage: deps.sh [GROUP...]          install what is missing (root)
#        deps.sh --list [GROUP...]   print the packages, one a line
#        deps.sh --groups            print the groups and what they are for
set -eu
list=$(dirname "$0")/deps.txt
groups() { sed -n 's/^\[\([a-z0-9-]*\)\].*/\1/p' "$list"; }
# The packages of base and of the groups named.
packages() {
	awk -v want=" base $* " -v all="$#" '
		/^\[/ { g = substr($1, 2, length($1) - 2); next }
		{ sub(/#.*/, "") }
		NF && g == "" { print "deps.txt: " $1 " is in no group" > "/dev/stderr"; exit 1 }
		NF && (all == 0 || index(want, " " g " ")) { print $1 }' "$list"
}
list_only=0
case ${1:-} in
--groups)
	sed -n 's/^\[\([a-z0-9-]*\)\] */\1: /p' "$list"
	exit 0
	;;
--list) list_only=1; shift ;;
esac
for g in "$@"; do
	if ! groups | grep -qx -- "$g"; then
		echo "deps: unknown group '$g' (groups: $(groups | tr '\n' ' '))" >&2
		exit 2
	fi
done
pkgs=$(packages "$@")
if [ "$list_only" -eq 1 ]; then
	printf '%s\n' $pkgs
	exit 0
fi
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages:$missing" >&2
	echo "deps: run 'make deps' as root (or: sudo apt-get install$missing)" >&2
	exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
