#!/usr/bin/env bash
# Install, idempotently, every Debian package listed in tools/deps.txt.
set -eu
list=$(dirname "$0")/deps.txt
pkgs=$(sed -e 's/#.*//' "$list" | awk 'NF { print $1 }')
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
