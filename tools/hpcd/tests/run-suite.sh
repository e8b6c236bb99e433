#!/usr/bin/env bash
# The hpcd suite: GoogleTest unit tests, then the integration tests on this
# machine's cgroups.  usage: run-suite.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: run-suite.sh BUILD_DIR}/tools/hpcd
status=0
if [ -x "$bin/hpcd-tests" ]; then
	"$bin/hpcd-tests" || status=1
else
	echo "not ok 1 - hpcd-tests: $bin/hpcd-tests not built"; status=1
fi
"$here/integration.sh" "$bin" || status=1
# again with the /proc fallback forced on every hpcd not told otherwise
echo "# integration, HPCD_SOURCE=proc"
HPCD_SOURCE=proc "$here/integration.sh" "$bin" || status=1
# hpcctl with an MPI launcher; no hpcd outlives what started it
"$here/launcher.sh" "$1" || status=1
# hpcctl --backend scx: its refusals and error paths (no sched_ext needed)
"$here/hpcctl-scx.sh" "$bin" "$1/scx/guest-root/usr/local/bin/scx_hpc" || status=1
exit $status
