#!/bin/sh
# Run each test binary under a timeout so a hang fails instead of blocking.
# Prints a closing line "N passed, N failed" (binaries), non-zero on failure.
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
pass=0; fail=0; failed=""
for t in "$@"; do
	[ -x "$t" ] || continue
	echo "=== $t"
	timeout -k 10 "$TEST_TIMEOUT" "$t"
	rc=$?
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
	else
		[ $rc -eq 124 ] && echo "*** $t: timed out after ${TEST_TIMEOUT}s"
		echo "*** $t: exit status $rc"
		fail=$((fail + 1)); failed="$failed $(basename "$t")"
	fi
done
[ -n "$failed" ] && echo "failed:$failed"
echo "test binaries: $pass passed, $fail failed"
[ $fail -eq 0 ]
