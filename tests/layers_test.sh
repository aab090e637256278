# layers_test.sh - the modules of src/ keep to their layers (mk/layers.txt):
#   - every folder of src/ (the programs init/, probe/, exec/ apart) has
#     exactly one line there, every line a folder, at most 10 lines, and
#     no source sits at the top of src/;
#   - every call between modules (from the built objects: each undefined
#     symbol names the module that defines it) goes to the caller's own
#     layer or a lower one; the worker runtime calls only the wire layer,
#     and nothing calls it; the wire layer calls only itself;
#   - no modules call each other in a circle, within a layer either
#     (tsort over the same calls);
#   - libsipc-worker.a is exactly the wire and worker layers;
#   - outside src/os/ and the worker runtime, no source calls a process
#     API (comments stripped by the preprocessor, string literals kept).
# A call that goes up a layer fails here with the caller, the callee and
# their layers named.
. tests/lib/shtest.sh
obj=${SIPC_BUILD:-build}/obj
list=mk/layers.txt
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "<rank> <layer> <module>", rank = order of the folder's line; every
# source src/<folder>/<name>.c is the module <folder>/<name>
awk '!/^#/ && NF { print n++, $1 }' "$list" | while read -r r d; do
	for f in src/"$d"/*.c; do
		[ -f "$f" ] || continue
		m=${f#src/}; echo "$r $d ${m%.c}"
	done
done > "$tmp/layers"

# ---------------------------------------------------------- the list
# every folder of src/ with sources is a line (the programs apart), and
# every line a folder with sources; no source at the top of src/
bad=""
for d in $(cd src && ls -d */ | tr -d /); do
	case $d in init|probe|exec) continue ;; esac
	c=$(awk -v d="$d" '!/^#/ && $1 == d' "$list" | wc -l)
	[ "$c" -eq 1 ] || bad="$bad $d($c lines)"
done
for d in $(awk '!/^#/ && NF { print $1 }' "$list"); do
	ls src/"$d"/*.c > /dev/null 2>&1 || bad="$bad $d(no src/$d/*.c)"
	[ -f "src/$d/$d.h" ] || [ "$d" = api ] || bad="$bad $d(no src/$d/$d.h)"
done
for f in src/*.c src/*.h; do
	[ -e "$f" ] && bad="$bad $f(at the top of src/)"
done
awk '!/^#/ && NF && NF < 2 { print "line " NR }' "$list" > "$tmp/short"
[ -s "$tmp/short" ] && bad="$bad $(tr '\n' ' ' < "$tmp/short")(no role)"
n=$(awk '!/^#/ && NF' "$list" | wc -l)
[ "$n" -le 10 ] || bad="$bad ($n layers, at most 10)"
if [ -z "$bad" ]; then
	t_ok layers_list_names_every_folder_once
else
	t_fail layers_list_names_every_folder_once "$list:$bad"
fi

# ---------------------------------------------------------- the calls
# Only objects of sources that exist: a module renamed or removed leaves
# its old object behind in a build tree that was not cleaned.
objs=$(find "$obj" -name "*.o" | sort | while read -r o; do
	m=${o#"$obj"/}; [ -f "src/${m%.o}.c" ] && echo "$o"; done)
if [ -z "$objs" ]; then
	t_fail layers_calls_go_down "no objects in $obj"
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
	# "<caller> <callee> <symbol>"
	join "$tmp/uses" "$tmp/defs" |
		awk '$2 != $3 { print $2, $3, $1 }' | sort -u > "$tmp/edges"
	awk 'NR == FNR { rank[$3] = $1; layer[$3] = $2; next }
	     !($1 in rank) || !($2 in rank) {
		printf "    %s -> %s (%s): module not in the list\n", $1, $2, $3
		next }
	     { from = layer[$1]; to = layer[$2] }
	     rank[$1] < rank[$2] ||
	     (from == "worker") != (to == "worker") && to != "wire" ||
	     from == "wire" && to != "wire" {
		printf "    %s (%s) -> %s (%s): %s\n", $1, from, $2, to, $3 }' \
		"$tmp/layers" "$tmp/edges" > "$tmp/up"
	n=$(awk '{ print $1, $2 }' "$tmp/edges" | sort -u | wc -l)
	if [ "$n" -eq 0 ]; then
		t_fail layers_calls_go_down "no call between modules found"
	elif [ -s "$tmp/up" ]; then
		cat "$tmp/up"
		t_fail layers_calls_go_down "the calls above go up a layer"
	else
		echo "    $n calls between modules, each to its own layer or lower"
		t_ok layers_calls_go_down
	fi
	awk '{ print $1, $2 }' "$tmp/edges" | sort -u > "$tmp/pairs"
	if [ "$n" -gt 0 ] && tsort "$tmp/pairs" > /dev/null 2> "$tmp/loop"; then
		t_ok modules_call_one_way
	else
		sed 's/^/    /' "$tmp/loop"
		t_fail modules_call_one_way "the modules above call each other in a circle"
	fi
fi

# ---------------------------------------------------------- the archives
want=$(awk '$2 == "wire" || $2 == "worker" { print $3 }' "$tmp/layers" |
	sort | tr '\n' ' ')
have=$(sed -n 's/^WLIB_OBJ *:= *$(patsubst [^,]*,[^,]*,\(.*\))$/\1/p' \
	GNUmakefile | tr ' ' '\n' | sort | tr '\n' ' ')
if [ -n "$have" ] && [ "$want" = "$have" ]; then
	t_ok worker_archive_is_wire_and_worker
else
	t_fail worker_archive_is_wire_and_worker \
		"libsipc-worker.a holds '$have', the list says '$want'"
fi

# ---------------------------------------------------------- docs
# README.md's and docs/IMPLEMENTATION.md's layer tables are this list:
# the lines between their markers are what mk/layer-table.sh makes of it.
sh mk/layer-table.sh "$list" > "$tmp/table.want"
for doc in README.md docs/IMPLEMENTATION.md; do
	sed -n '/^<!-- layers: begin/,/^<!-- layers: end/p' "$doc" |
		sed '1d;$d' > "$tmp/table.have"
	name=$(basename "$doc" .md | tr 'A-Z' 'a-z')
	if [ -s "$tmp/table.want" ] && cmp -s "$tmp/table.want" "$tmp/table.have"
	then
		t_ok "${name}_lists_the_layers"
	else
		diff "$tmp/table.want" "$tmp/table.have" | sed 's/^/    /' | head -20
		t_fail "${name}_lists_the_layers" \
			"$doc's layer table differs from $list (< list, > it; make layer-tables)"
	fi
done

# ---------------------------------------------------------- process APIs
# calls, looked for with string literals emptied (a message may name one)
api='(^|[^A-Za-z0-9_.>])(kill|killpg|tgkill|tkill|waitid|waitpid|wait|wait3|wait4|fork|vfork|clone|clone3|setpgid|getpgid|setpgrp|getpgrp|setsid|signalfd|prctl|ptrace|pidfd_[a-z_]+|posix_spawnp?|exec[lv]p?e?)[[:space:]]*\(|SYS_(clone|pidfd)'
# and paths, in the literals
path='"/proc'
: > "$tmp/calls"
for f in $(cd src && ls */*.c */*.h); do
	case $f in
	os/*|worker/*|init/*|probe/*|exec/*) continue ;;
	provider/local.c|provider/sandbox.c|provider/sandbox_argv.c) continue ;;
	esac
	if ! "$cc" -fpreprocessed -dD -E -P "src/$f" > "$tmp/stripped" \
	    2> "$tmp/err"; then
		echo "    src/$f: $(head -1 "$tmp/err")" >> "$tmp/calls"
		continue
	fi
	{ sed 's/"\([^"\\]\|\\.\)*"/""/g' "$tmp/stripped" | grep -E "$api"
	  grep -F "$path" "$tmp/stripped"; } |
		sed "s|^[[:space:]]*|    src/$f: |" >> "$tmp/calls"
done
if [ -s "$tmp/calls" ]; then
	cat "$tmp/calls"
	t_fail no_process_api_outside_platform \
		"the lines above belong in src/os/"
else
	t_ok no_process_api_outside_platform
fi
t_done
