/*
 * submit-host.c - asynchronous requests: sipc_submit() with a completion
 * callback, a few workers, every outcome counted.
 *
 *   cc submit-host.c $(pkg-config --cflags --libs sipc)
 *   ./submit-host ./hello-worker
 *
 * The callback runs on a library thread with no library lock held, once
 * per accepted request; it owns the result and releases it.  The main
 * thread waits on a condition variable until every request is done.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <sipc.h>

#define NREQ 1000

struct tally {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned done, ok, mismatch, other;
	char sent[NREQ][32];
};

/* Runs on a worker's reader thread (or the submitting thread for an
 * immediate rejection).  The request's index travels as the payload. */
static void
on_done(void *arg, struct sipc_result *res)
{
	struct tally *t = arg;
	char reply[32];
	unsigned i;
	bool ok = false;

	pthread_mutex_lock(&t->mu);
	if (res->outcome == SIPC_OUTCOME_OK &&
	    res->reply_len < sizeof(reply)) {
		/* The reply is bytes, not a string: terminate a copy. */
		memcpy(reply, res->reply, res->reply_len);
		reply[res->reply_len] = '\0';
		ok = sscanf(reply, "req %u", &i) == 1 && i < NREQ &&
		    strcmp(t->sent[i], reply) == 0;
	}
	if (res->outcome == SIPC_OUTCOME_OK) {
		if (ok)
			t->ok++;
		else
			t->mismatch++;
	} else {
		t->other++;
	}
	t->done++;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	sipc_result_release(res);
}

int
main(int argc, char **argv)
{
	static struct tally t = { PTHREAD_MUTEX_INITIALIZER,
	    PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, { { 0 } } };
	struct sipc_config cfg;
	sipc_config_store *store = NULL;
	sipc_supervisor *s;
	unsigned i, accepted = 0;
	char err[256];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s WORKER\n", argv[0]);
		return 2;
	}
	sipc_config_init(&cfg);
	cfg.environment = SIPC_ENV_DEVELOPMENT;
	cfg.path = argv[1];
	cfg.workers = 3;
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
	sipc_wait_ready(s, cfg.workers, 5000);

	for (i = 0; i < NREQ; i++) {
		struct sipc_request req = { 0 };

		snprintf(t.sent[i], sizeof(t.sent[i]), "req %u", i);
		req.payload = t.sent[i];
		req.len = strlen(t.sent[i]);
		req.timeout_ms = 10000;
		/* Blocks while the queues are full (backpressure). */
		rc = sipc_submit(s, &req, on_done, &t, NULL);
		if (rc == 0)
			accepted++;
		else
			fprintf(stderr, "sipc_submit: %s\n", sipc_strerror(rc));
	}

	pthread_mutex_lock(&t.mu);
	while (t.done < accepted)
		pthread_cond_wait(&t.cv, &t.mu);
	pthread_mutex_unlock(&t.mu);
	sipc_destroy(s);

	printf("submitted %u, accepted %u: ok %u, mismatched %u, "
	    "other outcomes %u\n", NREQ, accepted, t.ok, t.mismatch, t.other);
	return t.ok == NREQ ? 0 : 1;
}
