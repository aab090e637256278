# init_test.sh - sipc-init uses kill(-1) and waitpid(-1), which are safe
# only as PID 1 of a PID namespace of its own.  Started anywhere else it
# must refuse at once, before it starts a worker or passes on a signal.
. tests/lib/shtest.sh
init=${SIPC_INIT:-${SIPC_BUILD:-build}/libexec/sipc-init}
marker=$(mktemp)
rm -f "$marker"

if [ ! -x "$init" ]; then
	t_fail init_refuses_outside_pid_namespace "no sipc-init at $init"
else
	# Arguments as the library passes them would start `touch MARKER`.
	out=$("$init" /usr/bin/touch touch "$marker" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/    /'
	if [ $rc -eq 127 ] && [ ! -e "$marker" ] &&
	    printf '%s' "$out" | grep -q 'not PID 1'; then
		t_ok init_refuses_outside_pid_namespace
	else
		t_fail init_refuses_outside_pid_namespace \
			"exit status $rc, worker started: $([ -e "$marker" ] && echo yes || echo no)"
	fi
fi
rm -f "$marker"
t_done
