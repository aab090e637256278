#!/bin/sh
# Run each test (a CUnit binary, or a tests/*_test.sh script) under a
# timeout so a hang fails instead of blocking.  Each test writes its own
# counts, "ran passed failed skipped", to the file named by
# SIPC_TEST_COUNTS (testlib's tl_run(), or tests/lib/shtest.sh), and its
# JUnit-style XML to SIPC_TEST_XML (under SIPC_XML_DIR when set); no
# output is parsed.  Prints each test's own output, then one line per
# test with its counts, then two closing lines: the binaries and the
# tests, each as "N passed, N failed"; the tests' line adds
# ", N skipped" (tests that called tl_skip(): they cannot run here).
# Exit status is non-zero when any test fails, times out, runs no test,
# or leaves no counts.
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
pass=0; fail=0; failed=""
tpass=0; tfail=0; tskip=0
log=$(mktemp); counts=$(mktemp)
trap 'rm -f "$log" "$counts"' EXIT
[ -n "$SIPC_XML_DIR" ] && mkdir -p "$SIPC_XML_DIR"

# A test that never wrote its XML (timed out, crashed before tl_run())
# still gets one, so CI's artifact names every failure.
xml_fallback() { # name path why
	printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="%s" tests="1" failures="1">\n  <testsuite name="%s">\n    <testcase classname="%s" name="(binary)"><failure message="%s"/></testcase>\n  </testsuite>\n</testsuites>\n' \
		"$1" "$1" "$1" "$3" > "$2"
}

for t in "$@"; do
	case $t in
	*.sh) [ -f "$t" ] || continue; run="sh $t" ;;
	*) [ -x "$t" ] || continue; run=$t ;;
	esac
	name=$(basename "$t" .sh)
	xml=${SIPC_XML_DIR:+$SIPC_XML_DIR/$name.xml}
	[ -n "$xml" ] && rm -f "$xml"
	echo "=== $t"
	: > "$counts"
	SIPC_TEST_COUNTS=$counts SIPC_TEST_XML=$xml \
		timeout -k 10 "$TEST_TIMEOUT" $run >"$log" 2>&1
	rc=$?
	cat "$log"
	ran=0; p=0; f=0; s=0
	read -r ran p f s < "$counts" 2>/dev/null
	: "${ran:=0}" "${p:=0}" "${f:=0}" "${s:=0}"
	echo "--- $name: $p passed, $f failed, $s skipped"
	tpass=$((tpass + p)); tfail=$((tfail + f)); tskip=$((tskip + s))
	if [ $rc -eq 0 ] && [ "$ran" -gt 0 ] && [ "$f" -eq 0 ]; then
		pass=$((pass + 1))
	else
		why="exit status $rc"
		[ $rc -eq 124 ] && why="timed out after ${TEST_TIMEOUT}s"
		[ "$ran" -eq 0 ] && why="$why, ran no test"
		echo "*** $t: $why"
		[ -n "$xml" ] && [ ! -s "$xml" ] && xml_fallback "$name" "$xml" "$why"
		fail=$((fail + 1)); failed="$failed $name"
	fi
done
[ -n "$failed" ] && echo "failed:$failed"
[ -n "$SIPC_XML_DIR" ] && echo "JUnit XML: $SIPC_XML_DIR"
echo "binaries: $pass passed, $fail failed"
echo "tests: $tpass passed, $tfail failed, $tskip skipped"
[ $fail -eq 0 ]
