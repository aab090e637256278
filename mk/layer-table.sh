#!/bin/sh
# mk/layer-table.sh - the layer table of README.md and
# docs/IMPLEMENTATION.md, made from mk/layers.txt and the sources there:
# one row per folder, bottom first.  tests/layers_test.sh checks that the
# two documents hold exactly this between their "layers:" markers;
# `make layer-tables` writes it there.
list=${1:-mk/layers.txt}
echo "| layer | sources | role |"
echo "|---|---|---|"
awk '!/^#/ && NF { print $1 }' "$list" | while read -r d; do
	files=$(cd src/"$d" && ls *.c | sed 's/\.c$//' | tr '\n' ' ' |
		sed 's/ $//; s/ /, /g')
	role=$(awk -v d="$d" '$1 == d { $1 = ""; sub(/^ /, ""); print }' "$list")
	printf '| `src/%s/` | %s | %s |\n' "$d" "$files" "$role"
done
