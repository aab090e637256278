/*
 * hello-worker.c - the smallest sipc worker: replies to every request
 * with its own bytes.  Links against libsipc-worker.a only:
 *
 *   cc hello-worker.c $(pkg-config --cflags --libs sipc-worker)
 *
 * The supervisor starts it with the protocol channel on descriptor 3;
 * stdout and stderr are diagnostics, never protocol.
 */
#include <sipc_worker.h>

static void
handle(sipc_worker *w, uint64_t id, const uint8_t *payload, size_t len,
       void *arg)
{
	(void)arg;
	sipc_worker_reply(w, id, payload, len);
}

int
main(void)
{
	sipc_worker *w;
	int rc;

	if (sipc_worker_open(&w) != 0)
		return 1;
	rc = sipc_worker_run(w, handle, NULL);
	sipc_worker_close(w);
	return rc == 0 ? 0 : 1;
}
