/*
 * hello-host.c - the smallest sipc host: one worker, one synchronous
 * call, the outcome checked.
 *
 *   cc hello-host.c $(pkg-config --cflags --libs sipc)
 *   ./hello-host ./hello-worker
 *
 * Exits 0 when the worker echoed the request, 1 otherwise.
 */
#include <stdio.h>
#include <string.h>

#include <sipc.h>

int
main(int argc, char **argv)
{
	const char *msg = "hello, worker";
	struct sipc_config cfg;
	struct sipc_request req = { 0 };
	struct sipc_result res;
	sipc_config_store *store = NULL;
	sipc_supervisor *s;
	char err[256];
	int rc, ok;

	if (argc != 2) {
		fprintf(stderr, "usage: %s WORKER\n", argv[0]);
		return 2;
	}
	if (sipc_version() != SIPC_VERSION_HEX)
		fprintf(stderr, "note: headers %s, library %s\n",
		    SIPC_VERSION_STRING, sipc_version_string());

	sipc_config_init(&cfg);                  /* defaults + ABI stamp */
	cfg.environment = SIPC_ENV_DEVELOPMENT;  /* unset would be refused */
	cfg.path = argv[1];
	cfg.workers = 1;
	/* Deployment settings from SIPC_* variables (SIPC_WORKERS,
	 * SIPC_INIT_PATH, ...) override the code's; they may only tighten
	 * the environment.  sipc_create() copies what the store holds. */
	if ((rc = sipc_config_load_env(NULL, &cfg, &store, err,
	    sizeof(err))) != 0) {
		fprintf(stderr, "sipc_config_load_env: %s\n", err);
		return 1;
	}
	rc = sipc_create(&cfg, err, sizeof(err), &s);
	sipc_config_store_free(store);
	if (rc != 0) {
		fprintf(stderr, "sipc_create: %s: %s\n", sipc_strerror(rc), err);
		return 1;
	}
	if ((rc = sipc_wait_ready(s, cfg.workers, 5000)) != 0) {
		fprintf(stderr, "sipc_wait_ready: %s\n", sipc_strerror(rc));
		sipc_destroy(s);
		return 1;
	}

	req.payload = msg;
	req.len = strlen(msg);
	req.timeout_ms = 5000;
	if ((rc = sipc_call(s, &req, &res)) != 0) {
		fprintf(stderr, "sipc_call: %s\n", sipc_strerror(rc));
		sipc_destroy(s);
		return 1;
	}
	ok = res.outcome == SIPC_OUTCOME_OK && res.reply_len == req.len &&
	    memcmp(res.reply, msg, req.len) == 0;
	printf("sipc %s: outcome %s, reply \"%.*s\" from pid %d\n",
	    sipc_version_string(), sipc_outcome_name(res.outcome),
	    (int)res.reply_len, res.reply ? (const char *)res.reply : "",
	    (int)res.pid);
	sipc_result_release(&res);
	sipc_destroy(s);                         /* drain, stop, reap, join */
	return ok ? 0 : 1;
}
