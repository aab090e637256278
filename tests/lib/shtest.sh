# shtest.sh - sourced by the tests/*_test.sh scripts: the same counts
# and JUnit-style XML as a CUnit binary (see tests/run.sh), without
# parsing anything.
#
#   . tests/lib/shtest.sh
#   t_ok NAME | t_fail NAME WHY | t_skip NAME WHY   (one per check)
#   t_done                                          (writes, exits)
#
# A check is one named fact; its output goes to stdout as it runs.
sh_pass=0; sh_fail=0; sh_skip=0; sh_cases=""
sh_nl='
'
sh_case() { # status name why
	sh_cases="$sh_cases$1|$2|$3$sh_nl"
}
t_ok() { echo "  $1 ...passed"; sh_pass=$((sh_pass + 1)); sh_case ok "$1" ""; }
t_fail() {
	echo "  $1 ...FAILED: $2"
	sh_fail=$((sh_fail + 1)); sh_case fail "$1" "$2"
}
t_skip() {
	echo "  $1 ...skipped: $2"
	sh_skip=$((sh_skip + 1)); sh_case skip "$1" "$2"
}
sh_xml_esc() {
	printf '%s' "$1" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/"/\&quot;/g'
}
t_done() {
	n=$((sh_pass + sh_fail + sh_skip))
	name=$(basename "$0" .sh)
	echo "run: $n tests, $sh_pass passed, $sh_fail failed, $sh_skip skipped"
	[ -n "$SIPC_TEST_COUNTS" ] &&
		echo "$n $sh_pass $sh_fail $sh_skip" > "$SIPC_TEST_COUNTS"
	if [ -n "$SIPC_TEST_XML" ]; then
		{
		printf '<?xml version="1.0" encoding="UTF-8"?>\n'
		printf '<testsuites name="%s" tests="%d" failures="%d" skipped="%d">\n' \
			"$name" "$n" "$sh_fail" "$sh_skip"
		printf '  <testsuite name="%s">\n' "$name"
		printf '%s' "$sh_cases" | while IFS='|' read -r st c why; do
			[ -n "$st" ] || continue
			printf '    <testcase classname="%s" name="%s"' "$name" \
				"$(sh_xml_esc "$c")"
			case $st in
			ok) printf '/>\n' ;;
			fail) printf '><failure message="%s"/></testcase>\n' \
				"$(sh_xml_esc "$why")" ;;
			skip) printf '><skipped message="%s"/></testcase>\n' \
				"$(sh_xml_esc "$why")" ;;
			esac
		done
		printf '  </testsuite>\n</testsuites>\n'
		} > "$SIPC_TEST_XML"
	fi
	[ "$sh_fail" -eq 0 ] && [ "$n" -gt 0 ]
	exit $?
}
