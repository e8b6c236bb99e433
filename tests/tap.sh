# TAP helpers for the shell suites: source it, call check/ok/nok, end with
# tap_end (prints the plan; its status is 0 if nothing failed).
#   check NAME CMD...          ok if CMD succeeds, else "not ok" with the command
#   wait_for SECONDS 'CODE'    evaluate CODE until it succeeds or time runs out
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
# A check that cannot run here: counted as skipped, never as passed.
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
nok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	for l in "$@"; do printf '%s\n' "$l" | sed 's/^/#   /'; done
}
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else nok "$name" "failed: $*"; fi
}
wait_for() {
	local end=$(($(date +%s%N) + $1 * 1000000000))
	while :; do
		eval "$2" && return 0
		[ "$(date +%s%N)" -lt $end ] || return 1
		sleep 0.05
	done
}
# The processes a suite started (add them to pids) and its $work directory
# go when it exits: trap tap_cleanup EXIT.
pids=()
tap_cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$work"
}
tap_end() {
	echo "1..$n"
	[ "$failed" -eq 0 ]
}
