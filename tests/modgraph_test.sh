# modgraph_test.sh - the modules of src/ call each other one way only:
# from the library's objects, every undefined symbol names the module
# that defines it, and the graph of those calls has no cycle (tsort).
# A module that calls back up into its caller fails here, with the
# modules of the loop listed.
. tests/lib/shtest.sh
obj=${SIPC_BUILD:-build}/obj
tmp=$(mktemp -d)

objs=$(find "$obj" -name "*.o" | sort)
if [ -z "$objs" ]; then
	t_fail modules_call_one_way "no objects in $obj"
else
	for o in $objs; do
		m=${o#"$obj"/}; m=${m%.o}
		nm --defined-only "$o" |
			awk -v m="$m" '$2 ~ /^[TDBRCV]$/ { print $3, m }'
	done | sort -k1,1 > "$tmp/defs"
	for o in $objs; do
		m=${o#"$obj"/}; m=${m%.o}
		nm -u "$o" | awk -v m="$m" '{ print $NF, m }'
	done | sort -k1,1 > "$tmp/uses"
	join "$tmp/uses" "$tmp/defs" |
		awk '$2 != $3 { print $2, $3 }' | sort -u > "$tmp/edges"
	n=$(wc -l < "$tmp/edges")
	if [ "$n" -eq 0 ]; then
		t_fail modules_call_one_way "no call between modules found"
	elif tsort "$tmp/edges" > /dev/null 2> "$tmp/loop"; then
		echo "    $n calls between modules, no cycle"
		t_ok modules_call_one_way
	else
		sed 's/^/    /' "$tmp/loop"
		t_fail modules_call_one_way "the modules above call each other in a circle"
	fi
fi
rm -rf "$tmp"
t_done
