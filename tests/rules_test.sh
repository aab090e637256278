# rules_test.sh - the rule-to-test map (mk/rulemap.py) holds:
#   - every rule of CONTRACT.md and PRODUCTION_BOUNDARY.md has exactly one
#     RFC 2119 keyword and an id of its own (PB ids in PRODUCTION_BOUNDARY.md
#     only);
#   - every rule is named by a `rules:` tag of a test under tests/, or by a
#     `rules-skip:` tag giving why no test here can run it;
#   - every tag names a rule that exists, and tags a test that runs;
#   - docs/RULES-TO-TESTS.md is what mk/rulemap.py --write makes now.
# Each failure names the rule, the tag or the file (run
# `python3 mk/rulemap.py --write` after changing a rule or a tag).
. tests/lib/shtest.sh
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

check() { # name grep-pattern (problems of that kind)
	if grep -E "$2" "$tmp" > "$tmp.k"; then
		t_fail "$1" "$(tr '\n' ';' < "$tmp.k")"
	else
		t_ok "$1"
	fi
	rm -f "$tmp.k"
}

if ! command -v python3 > /dev/null; then
	t_skip rules_map "python3 is not installed"
	t_done
fi
python3 mk/rulemap.py --check > "$tmp" 2>&1
rc=$?
check rules_have_one_keyword_and_own_id 'keywords|given twice|starts with PB|does not start with PB'
check rules_each_have_a_test 'has no test'
check rules_tags_name_existing_rules 'which is no rule|not just above'
check rules_tagged_tests_are_registered 'never registered'
check rules_map_is_current 'is stale'
# anything else mk/rulemap.py reported (or a crash) fails too
if [ "$rc" -ne 0 ] && ! grep -Eq 'keywords|given twice|PB|has no test|no rule|not just above|never registered|stale' "$tmp"; then
	t_fail rules_map_script_ran "$(tr '\n' ';' < "$tmp")"
else
	t_ok rules_map_script_ran
fi
# no line of the two boundary documents runs over 400 characters: a
# reviewer reads them in an editor and a diff, where a longer line hides
long=$(awk 'length > 400 { print FILENAME ":" FNR }' CONTRACT.md)
if [ -z "$long" ]; then t_ok contract_lines_short; else t_fail contract_lines_short "$long"; fi
long=$(awk 'length > 400 { print FILENAME ":" FNR }' PRODUCTION_BOUNDARY.md)
if [ -z "$long" ]; then t_ok boundary_lines_short; else t_fail boundary_lines_short "$long"; fi
# the word budgets (issue of the audit in one sitting): CONTRACT.md at
# most 5,000 words, PRODUCTION_BOUNDARY.md 1,800, together 6,500; a new
# rule is paid for by a cut, not by a longer read
c=$(wc -w < CONTRACT.md); p=$(wc -w < PRODUCTION_BOUNDARY.md)
if [ "$c" -le 5000 ] && [ "$p" -le 1800 ] && [ $((c + p)) -le 6500 ]; then
	t_ok boundary_word_budget
else
	t_fail boundary_word_budget "CONTRACT.md $c (5000), PRODUCTION_BOUNDARY.md $p (1800), together $((c + p)) (6500)"
fi
t_done
