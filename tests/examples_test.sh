# examples_test.sh - the programs in examples/ build (make all) and do
# what their comments say: the smallest host and worker pair, a host
# using sipc_submit() with callbacks, a host that reconciles after its
# first supervisor process was killed with SIGKILL.
. tests/lib/shtest.sh
ex=${SIPC_BUILD:-build}/examples
worker=$ex/hello-worker

run() { # name command...
	name=$1; shift
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/    /'
	if [ $rc -eq 0 ]; then t_ok "$name"
	else t_fail "$name" "exit status $rc"; fi
}

# The hosts read SIPC_* variables (sipc_config_load_env()).  From the
# build tree they get its sipc-init, and the strongest containment this
# machine allows is asked for by name: a worker that cannot get it does
# not start, so the example fails instead of falling back unnoticed.
mode=
if [ -n "$SIPC_INIT" ]; then
	export SIPC_INIT_PATH="$SIPC_INIT"
	if unshare --pid --fork true 2>/dev/null; then
		mode=pid_namespace
	elif unshare --user --pid --fork true 2>/dev/null; then
		mode=user_namespace
	fi
	[ -n "$mode" ] && export SIPC_CONTAINMENT=$mode
fi

run example_hello_host "$ex/hello-host" "$worker"
run example_submit_host "$ex/submit-host" "$worker"
run example_reconcile_host "$ex/reconcile-host"

# The variables are really read: asked for a namespace under an init
# that does not exist, the smallest host does not get its worker.
if [ -z "$mode" ]; then
	t_skip example_reads_sipc_init_path "no PID namespace here (or no SIPC_INIT)"
elif SIPC_INIT_PATH=/nonexistent/sipc-init "$ex/hello-host" "$worker" \
	>/dev/null 2>&1; then
	t_fail example_reads_sipc_init_path \
		"hello-host ran with SIPC_INIT_PATH=/nonexistent/sipc-init"
else
	t_ok example_reads_sipc_init_path
fi

# The worker links the worker archive alone: nothing of the supervisor.
if nm "$worker" 2>/dev/null | grep -q ' T sipc_create$'; then
	t_fail example_worker_links_worker_runtime_only \
		"hello-worker contains sipc_create"
else
	t_ok example_worker_links_worker_runtime_only
fi
t_done
