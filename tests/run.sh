#!/bin/sh
# Run each test binary under a timeout so a hang fails instead of blocking.
# Prints per binary its CUnit report, then two closing lines: the binaries
# and the CUnit tests, each as "N passed, N failed"; the tests' line adds
# ", N skipped" (tests that called tl_skip(): they cannot run here).
# Exit status is
# non-zero when any binary fails, times out, or runs no test.
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
pass=0; fail=0; failed=""
tpass=0; tfail=0; tskip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "$@"; do
	[ -x "$t" ] || continue
	echo "=== $t"
	timeout -k 10 "$TEST_TIMEOUT" "$t" >"$log" 2>&1
	rc=$?
	cat "$log"
	# CUnit's summary row: "tests  Total  Ran  Passed  Failed  Inactive"
	counts=$(awk '$1 == "tests" && NF >= 5 { r = $3; p = $4; f = $5 }
	    END { print r + 0, p + 0, f + 0 }' "$log")
	read -r ran p f <<-EOT
	$counts
	EOT
	s=$(awk '$1 == "skipped:" { s = $2 } END { print s + 0 }' "$log")
	[ "$s" -gt 0 ] && echo "*** $t: $s skipped"
	tpass=$((tpass + p - s)); tfail=$((tfail + f)); tskip=$((tskip + s))
	if [ $rc -eq 0 ] && [ "$ran" -gt 0 ]; then
		pass=$((pass + 1))
	else
		[ $rc -eq 124 ] && echo "*** $t: timed out after ${TEST_TIMEOUT}s"
		[ "$ran" -eq 0 ] && echo "*** $t: ran no test"
		echo "*** $t: exit status $rc"
		fail=$((fail + 1)); failed="$failed $(basename "$t")"
	fi
done
[ -n "$failed" ] && echo "failed:$failed"
echo "binaries: $pass passed, $fail failed"
echo "tests: $tpass passed, $tfail failed, $tskip skipped"
[ $fail -eq 0 ]
