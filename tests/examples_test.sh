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

run example_hello_host "$ex/hello-host" "$worker"
run example_submit_host "$ex/submit-host" "$worker"
run example_reconcile_host "$ex/reconcile-host"

# The worker links the worker archive alone: nothing of the supervisor.
if nm "$worker" 2>/dev/null | grep -q ' T sipc_create$'; then
	t_fail example_worker_links_worker_runtime_only \
		"hello-worker contains sipc_create"
else
	t_ok example_worker_links_worker_runtime_only
fi
t_done
