# man_test.sh - every public function has a section 3 page, and every
# name a page documents exists; every page (sections 1, 3, 5, 7)
# formats without a warning.
#
# Public functions: the sipc_* functions (not sipc__*) that the two
# archives define (nm) together with those the installed headers declare
# (the preprocessor's output, so comments do not count; an inline
# wrapper counts).  Documented names: the NAME line of each man/*.3
# page ("name, name \- summary").  To document a new function, add its
# name to the NAME line of the page of its group (install then makes an
# alias page for it) or write a page of its own.  Pages of sections 1, 5
# and 7 are checked by groff only.
. tests/lib/shtest.sh
CC=${CC:-cc}
b=${SIPC_BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -g --defined-only "$b/libsipc.a" "$b/libsipc-worker.a" 2>/dev/null |
	awk '$2 == "T" && $3 ~ /^sipc_[a-z]/ { print $3 }' > "$tmp/nm"
[ -s "$tmp/nm" ] || t_fail archives_have_functions "no sipc_ function in $b"
printf '#include <sipc.h>\n#include <sipc_worker.h>\n' |
	$CC -E -P -D_GNU_SOURCE -Iinclude -x c - 2>"$tmp/cpp.err" |
	grep -o '\bsipc_[a-z0-9_]*[[:space:]]*(' | sed 's/[[:space:]]*($//' \
	> "$tmp/hdr" || true
[ -s "$tmp/hdr" ] || t_fail headers_declare_functions "$(cat "$tmp/cpp.err")"
sort -u "$tmp/nm" "$tmp/hdr" > "$tmp/public"

for p in man/*.3; do
	[ -e "$p" ] || continue
	sed -n '/^\.SH NAME/{n;s/ *\\-.*//;s/,/ /g;p;q;}' "$p" | tr ' ' '\n'
done | sed '/^$/d' | sort > "$tmp/pages.all"
sort -u "$tmp/pages.all" > "$tmp/pages"

while read -r f; do
	if grep -qx "$f" "$tmp/pages"; then t_ok "man_page_$f"
	else t_fail "man_page_$f" "no page documents $f: add it to the NAME line of its group page in man/, or write man/$f.3"; fi
done < "$tmp/public"
while read -r f; do
	grep -qx "$f" "$tmp/public" ||
		t_fail "man_name_exists_$f" "a page names $f: not a public function"
done < "$tmp/pages"
dups=$(uniq -d "$tmp/pages.all")
[ -z "$dups" ] || t_fail man_names_unique "on two pages: $dups"

# Each page formats without a warning.
if command -v groff >/dev/null; then
	for p in man/*.[1357]; do
		w=$(groff -t -man -Tutf8 -ww -z "$p" 2>&1)
		if [ -z "$w" ]; then t_ok "man_formats_$(basename "$p")"
		else t_fail "man_formats_$(basename "$p")" "$w"; fi
	done
fi
t_done
