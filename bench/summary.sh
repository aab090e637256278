#!/bin/sh
# bench/summary.sh - the targets of one `make bench` run as a Markdown
# table: each "ratio NAME VALUE (target OP X)" line of the run's file,
# met or missed, the "note targets" line, and the targets of
# bench/run.sh the run has no figure for.
#
#   bench/summary.sh [RESULTS]            print the table
#   bench/summary.sh --readme [RESULTS]   put it into README.md between
#                                         its "bench-targets" markers
#
# RESULTS defaults to bench/results/latest.txt (what `make bench` leaves).
# The table is generated, never retyped: rerun this after a run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mode=print
if [ "${1:-}" = "--readme" ]; then mode=readme; shift; fi
res=${1:-$here/results/latest.txt}
[ -r "$res" ] || { echo "summary.sh: cannot read $res" >&2; exit 2; }

table() {
	awk '
	$1 == "note" && $2 == "run" { run = $3; quick = $4; commit = $7 }
	$1 == "note" && $2 == "targets:" { sub(/^note targets: /, ""); tally = $0 }
	$1 == "ratio" && $4 == "(target" {
		op = $5; t = $6; sub(/\)$/, "", t); v = $3 + 0
		ok = (op == "<=") ? (v <= t + 0) : (v >= t + 0)
		row[++n] = sprintf("| `%s` | %s | %s %s | %s |", $2, $3, op, t,
		    ok ? "met" : "**missed**")
	}
	END {
		if (n == 0) { print "summary.sh: no target in the file" > "/dev/stderr"; exit 1 }
		printf "Run `%s` (%s, %s), made by `make bench`; method and every figure: [`bench/README.md`](bench/README.md).\n\n", run, quick, commit
		print "| target | value | goal | result |"
		print "|---|---|---|---|"
		for (i = 1; i <= n; i++) print row[i]
		if (tally != "") printf "\n%s.\n", tally
		if (absent != "") printf "Not in this run: %s.\n", absent
	}' absent="$(absent)" "$res"
}

# Targets bench/run.sh knows that the run's file has no figure for (a
# section added after the run, or a partial run).
absent() {
	grep '^ratio [a-z]' "$here/run.sh" | while read -r _ name _; do
		grep -q "^ratio $name " "$res" || printf '`%s` ' "$name"
	done | sed 's/ $//; s/` `/`, `/g'
}

if [ "$mode" = print ]; then table; exit 0; fi

readme=$here/../README.md
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.t"' EXIT
table > "$tmp.t"
grep -q '^<!-- bench-targets: begin' "$readme" &&
    grep -q '^<!-- bench-targets: end' "$readme" ||
    { echo "summary.sh: no bench-targets markers in $readme" >&2; exit 2; }
awk -v t="$tmp.t" '
	/^<!-- bench-targets: begin/ { print; while ((getline l < t) > 0) print l; skip = 1; next }
	/^<!-- bench-targets: end/ { skip = 0 }
	!skip' "$readme" > "$tmp"
cat "$tmp" > "$readme"
