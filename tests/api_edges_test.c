/*
 * api_edges_test.c - the edges of the public API as documented (sipc.h,
 * README.md, CONTRACT.md, the manual pages) checked from outside, the way
 * a user of the installed library sees them: only the public headers and
 * the fixture workers, no internal header.  One test per promise that no
 * other test pinned; each names the document that makes it.
 *
 * Threads: the CUnit thread drives everything; completion callbacks run
 * on library threads and touch only the outbox (its mutex).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000          /* generous deadline for any event */

static void
never_done(void *arg, struct sipc_result *res)
{
	(void)arg;
	(void)res;
	CU_FAIL("a callback ran for a submit that returned an error");
}

/* sipc_create(3): "SIPC_E_EXEC (the worker cannot be executed; errbuf
 * names the path)".  A directory passes access(X_OK) but cannot be
 * executed: it must be refused up front, not found out by every start. */
/* rules: D4 */
static void
test_api_edges_create_refuses_directory_as_worker(void)
{
	struct sipc_config c;
	sipc_supervisor *sentinel = (sipc_supervisor *)&sentinel, *s = sentinel;
	char dir[] = "/tmp/sipc-accept-XXXXXX", err[256] = "";
	int children = tl_count_children();

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	st_cfg_init(&c, "echo", NULL, 1);
	c.path = dir;
	TL_EQ(sipc_create(&c, err, sizeof(err), &s), SIPC_E_EXEC);
	CU_ASSERT(s == sentinel);                /* *ret untouched */
	CU_ASSERT(strstr(err, dir) != NULL);     /* names the path ... */
	CU_ASSERT(strstr(err, strerror(EACCES)) != NULL); /* ... and why */
	TL_EQ(tl_count_children(), children);   /* nothing spawned */
	if (s != sentinel)
		sipc_destroy(s);
	rmdir(dir);
}

/* CONTRACT.md D4, sipc.h: `path` is executed as given, with no PATH
 * search: a bare name found only on PATH ("sh", absent from the working
 * directory) is SIPC_E_EXEC at sipc_create(). */
/* rules: D4 */
static void
test_api_edges_path_is_not_searched(void)
{
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[256] = "";

	CU_ASSERT_FATAL(access("sh", F_OK) != 0);     /* not in the cwd */
	st_cfg_init(&c, "echo", NULL, 1);
	c.path = "sh";
	TL_EQ(sipc_create(&c, err, sizeof(err), &s), SIPC_E_EXEC);
	CU_ASSERT(strstr(err, "sh") != NULL);
	if (s != NULL)
		sipc_destroy(s);
}

/* sipc.h, sipc_wait_ready(): more workers than the pool has can never
 * become ready: -EINVAL at once, not a wait for the deadline. */
/* rules: H5 */
static void
test_api_edges_wait_ready_more_than_pool_is_einval(void)
{
	struct sipc_config c;
	sipc_supervisor *s;
	int64_t t0;

	st_cfg_init(&c, "echo", NULL, 2);
	s = st_start(&c, 2, WAIT_MS);
	t0 = tl_now_ms();
	TL_EQ(sipc_wait_ready(s, 3, WAIT_MS), -EINVAL);
	CU_ASSERT(tl_now_ms() - t0 < WAIT_MS / 2);
	TL_EQ(sipc_wait_ready(s, 2, 0), 0);
	TL_EQ(sipc_wait_ready(s, 0, 0), 0);
	TL_EQ(sipc_destroy(s), 0);
}

/* sipc.h sipc_wait_ready(), CONTRACT.md H5 and 12: when a start fails,
 * wait_ready says why with one of SIPC_E_EXEC, SIPC_E_VERSION or
 * SIPC_E_HANDSHAKE, and the slot's last exit has the matching kind.  A
 * launch that fails for another reason than exec (here: an explicit
 * namespace mode whose sipc-init does not exist) is HANDSHAKE; the raw
 * -errno of the launch (-ENOENT) leaked out of wait_ready before. */
/* rules: H5 */
static void
test_api_edges_wait_ready_launch_failure_is_documented_code(void)
{
	struct sipc_config c;
	struct sipc_worker_stats w;
	sipc_supervisor *s;
	int rc;

	st_cfg_init(&c, "echo", NULL, 1);
	c.containment = SIPC_CONTAIN_PID_NAMESPACE;
	c.init_path = "/nonexistent/sipc-init";
	c.restart_base_ms = 50;
	s = st_start(&c, 0, 0);
	rc = sipc_wait_ready(s, 1, WAIT_MS);
	CU_ASSERT(rc == SIPC_E_HANDSHAKE || rc == SIPC_E_EXEC);
	if (rc != SIPC_E_HANDSHAKE && rc != SIPC_E_EXEC)
		fprintf(stderr, "    wait_ready: %d (%s)\n", rc,
		    sipc_strerror(rc));
	w = st_worker_stats(s, 0);
	TL_EQ(w.last_exit.kind, rc == SIPC_E_EXEC ?
	    SIPC_EXIT_EXEC_FAILED : SIPC_EXIT_HANDSHAKE);
	CU_ASSERT(w.state != SIPC_WS_READY);
	TL_EQ(sipc_destroy(s), 0);
}

/* CONTRACT.md R7, sipc_submit(3), sipc_call(3): an idempotency key over
 * 255 bytes is -EINVAL (the callback never runs, *ret and ret_id are
 * untouched); 255 bytes is accepted. */
/* rules: R7 */
static void
test_api_edges_idempotency_key_limit(void)
{
	struct sipc_config c;
	struct sipc_result r;
	char key[257];
	uint64_t id = 77;
	sipc_supervisor *s;
	struct sipc_request q = { .payload = "key", .len = 3,
	    .idempotency_key = key };

	st_cfg_init(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	memset(key, 'k', 255);
	key[255] = '\0';
	TL_EQ_FATAL(sipc_call(s, &q, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	key[255] = 'k';
	key[256] = '\0';
	TL_EQ(sipc_submit(s, &q, never_done, NULL, &id), -EINVAL);
	TL_EQ(id, 77);                 /* ret_id untouched */
	memset(&r, 0x5A, sizeof(r));
	TL_EQ(sipc_call(s, &q, &r), -EINVAL);
	TL_EQ(r.request_id, 0x5A5A5A5A5A5A5A5Aull); /* untouched */
	TL_EQ(sipc_destroy(s), 0);
}

/* sipc.h sipc_submit(), CONTRACT.md 1.4: a payload of exactly
 * max_payload bytes and an empty payload travel and come back intact;
 * max_payload + 1 is SIPC_E_TOOBIG from sipc_call() too (an invalid
 * argument, no result), and ret_id is left untouched by the refusal. */
/* rules: F10 R7 */
static void
test_api_edges_payload_size_edges(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	uint64_t id = 77;
	uint8_t *buf = malloc(4097);
	struct sipc_request q = { .payload = buf };
	size_t i;

	CU_ASSERT_FATAL(buf != NULL);
	for (i = 0; i < 4097; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	st_cfg_init(&c, "echo", NULL, 1);
	c.max_payload = 4096;
	s = st_start(&c, 1, WAIT_MS);
	q.len = 4096;
	TL_EQ_FATAL(sipc_call(s, &q, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(r.reply_len == 4096 && memcmp(r.reply, buf, 4096) == 0);
	sipc_result_release(&r);
	q.len = 0;
	TL_EQ_FATAL(sipc_call(s, &q, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	TL_EQ(r.error, 0);
	TL_EQ(r.reply_len, 0);
	sipc_result_release(&r);
	q.len = 4097;
	memset(&r, 0x5A, sizeof(r));
	TL_EQ(sipc_call(s, &q, &r), SIPC_E_TOOBIG);
	TL_EQ(r.request_id, 0x5A5A5A5A5A5A5A5Aull); /* untouched */
	TL_EQ(sipc_submit(s, &q, never_done, NULL, &id),
	    SIPC_E_TOOBIG);
	TL_EQ(id, 77);
	TL_EQ(sipc_destroy(s), 0);
	free(buf);
}

/* CONTRACT.md 9.1 and 1.3: every max_payload that validation accepts
 * can carry the 16-byte HELLO, so a pool it accepts can start.  15 was
 * accepted and no worker ever got ready (its HELLO broke the limit);
 * 16, the smallest, with the smallest rings and ceiling it allows, starts
 * and serves a request of 16 bytes. */
/* rules: CF1 */
static void
test_api_edges_smallest_max_payload_still_starts(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s = NULL;
	char err[256] = "";
	struct sipc_request q = { .payload = "sixteen bytes...", .len = 16 };

	st_cfg_init(&c, "echo", NULL, 1);
	c.max_payload = 15;
	c.ring_bytes = 15 + 24;
	c.mem_ceiling = 15 + 24;
	TL_EQ(sipc_create(&c, err, sizeof(err), &s), SIPC_E_CONFIG);
	CU_ASSERT(strstr(err, "max_payload") != NULL);
	if (s != NULL) {
		TL_EQ(sipc_wait_ready(s, 1, 3000), 0); /* says why */
		sipc_destroy(s);
	}
	c.max_payload = 16;
	c.ring_bytes = 16 + 24;
	c.mem_ceiling = 16 + 24;
	s = st_start(&c, 1, WAIT_MS);
	TL_EQ_FATAL(sipc_call(s, &q, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(r.reply_len == 16 && memcmp(r.reply, q.payload, 16) == 0);
	sipc_result_release(&r);
	TL_EQ(sipc_destroy(s), 0);
}

/* CONTRACT.md 13: an OK result carries error 0, may_have_run, one
 * attempt and the slot, generation and pid of the worker that ran it. */
static void
test_api_edges_ok_result_names_its_worker(void)
{
	struct sipc_config c;
	struct sipc_worker_stats w;
	struct sipc_result r;
	sipc_supervisor *s;

	st_cfg_init(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	w = st_worker_stats(s, 0);
	st_call_cmd(s, NULL, 0, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	TL_EQ(r.error, 0);
	CU_ASSERT(r.may_have_run);
	TL_EQ(r.attempts, 1);
	TL_EQ(r.worker_id, 0);
	TL_EQ(r.generation, 1);
	CU_ASSERT(r.pid > 0 && r.pid == w.pid);
	CU_ASSERT(r.request_id != 0);
	TL_EQ(r.exit.kind, SIPC_EXIT_NONE);
	sipc_result_release(&r);
	TL_EQ(sipc_destroy(s), 0);
}

/* CONTRACT.md R7 and 13: sipc_call() with SIPC_REQ_NOWAIT on full
 * queues returns 0 with a REJECTED / SIPC_E_FULL result that was never
 * sent: may_have_run false, no attempt, worker 0/0/0. */
/* rules: M2 R7 */
static void
test_api_edges_call_nowait_full_is_rejected_result(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	struct sipc_config c;
	struct sipc_worker_stats w;
	struct sipc_result r;
	struct sipc_request q = { .payload = "no room", .len = 7,
	    .flags = SIPC_REQ_NOWAIT };
	sipc_supervisor *s;
	int64_t end;

	st_cfg_init(&c, "hang", NULL, 1);
	c.max_inflight = 1;
	c.ring_frames = 1;
	c.stall_ms = 600000;           /* the hang is the point, not a stall */
	c.drain_ms = 0;
	c.grace_ms = 300;
	s = st_start(&c, 1, WAIT_MS);
	st_submit_cmd(s, "held", 0, &o[0]);
	st_submit_cmd(s, "held", 0, &o[1]);
	end = tl_now_ms() + WAIT_MS;
	do {
		w = st_worker_stats(s, 0);
	} while ((w.inflight != 1 || w.queued != 1) && tl_now_ms() < end &&
	    usleep(2000) == 0);
	CU_ASSERT_FATAL(w.inflight == 1 && w.queued == 1);
	TL_EQ_FATAL(sipc_call(s, &q, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_REJECTED);
	TL_EQ(r.error, SIPC_E_FULL);
	CU_ASSERT(!r.may_have_run);
	TL_EQ(r.attempts, 0);
	CU_ASSERT(r.worker_id == 0 && r.generation == 0 && r.pid == 0);
	CU_ASSERT(r.reply == NULL && r.reply_len == 0);
	sipc_result_release(&r);
	TL_EQ(sipc_destroy(s), 0);
	CU_ASSERT(st_outbox_wait(&box, 2, WAIT_MS));
	st_outbox_release(&box);
	st_outbox_reset(&box);
}

/* sipc.h struct sipc_stats, sipc_stats_get(3), sipc_reconcile_list(3):
 * without a state_dir journal_error is 0 and the reconcile calls are
 * SIPC_E_CONFIG (outputs untouched); with cgroup off, no cgroup path and
 * "off" as the reason; the ceiling is the configured one and each ready
 * worker names the containment it got; a released snapshot is cleared
 * and releasing it again (or NULL) is harmless. */
static void
test_api_edges_stats_and_reconcile_without_state_dir(void)
{
	struct sipc_config c;
	struct sipc_stats st;
	struct sipc_unresolved *u = (struct sipc_unresolved *)&u, one;
	struct sipc_leftover *l = (struct sipc_leftover *)&l;
	size_t n = 99;
	sipc_supervisor *s;
	unsigned i;

	st_cfg_init(&c, "echo", NULL, 3);
	c.cgroup = SIPC_CGROUP_OFF;
	c.mem_ceiling = 96u << 20;
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	s = st_start(&c, 3, WAIT_MS);
	TL_EQ_FATAL(sipc_stats_get(s, &st), 0);
	TL_EQ(st.nworkers, 3);
	TL_EQ(st.mem_ceiling, (size_t)96 << 20);
	TL_EQ(st.journal_error, 0);
	TL_STREQ(st.cgroup_path, "");
	TL_STREQ(st.cgroup_why, "off");
	for (i = 0; i < st.nworkers; i++) {
		TL_EQ(st.workers[i].worker_id, i);
		TL_EQ(st.workers[i].state, SIPC_WS_READY);
		/* what the worker got: the sandbox always gives a PID
		 * namespace (CONTRACT SB7) */
		TL_EQ(st.workers[i].containment,
		    strcmp(st_provider(), "sandbox") == 0 ?
		    SIPC_CONTAIN_PID_NAMESPACE : SIPC_CONTAIN_PROCESS_GROUP);
		CU_ASSERT(!st.workers[i].cgroup);
		TL_EQ(st.workers[i].limits, 0);
	}
	sipc_stats_release(&st);
	CU_ASSERT(st.workers == NULL && st.nworkers == 0);
	sipc_stats_release(&st);                 /* twice is harmless */
	sipc_stats_release(NULL);
	TL_EQ(sipc_reconcile_list(s, &u, &n), SIPC_E_CONFIG);
	TL_EQ(sipc_reconcile_leftovers(s, &l, &n), SIPC_E_CONFIG);
	CU_ASSERT(u == (struct sipc_unresolved *)&u);  /* outputs untouched */
	CU_ASSERT(l == (struct sipc_leftover *)&l && n == 99);
	memset(&one, 0, sizeof(one));
	TL_EQ(sipc_reconcile_resolve(s, &one), SIPC_E_CONFIG);
	TL_EQ(sipc_destroy(s), 0);
}

/* Write "path = /aaa..." as one line of `len` bytes (newline not
 * counted), with or without the newline, and load it. */
static int
load_long_line(size_t len, bool newline, char *err, size_t errlen)
{
	char name[] = "/tmp/sipc-accept-conf-XXXXXX";
	struct sipc_config c;
	sipc_config_store *st = NULL;
	FILE *f;
	size_t i;
	int fd, rc;

	CU_ASSERT_FATAL((fd = mkstemp(name)) >= 0);
	CU_ASSERT_FATAL((f = fdopen(fd, "w")) != NULL);
	fputs("path = /", f);
	for (i = 8; i < len; i++)
		fputc('a', f);
	if (newline)
		fputc('\n', f);
	CU_ASSERT_FATAL(fclose(f) == 0);
	sipc_config_init(&c);
	rc = sipc_config_load_file(name, &c, &st, err, errlen);
	if (rc == 0)
		CU_ASSERT(c.path != NULL && strlen(c.path) == len - 7);
	sipc_config_store_free(st);
	unlink(name);
	return rc;
}

/* CONTRACT.md CF2, sipc.conf(5): "Lines are at most 64 KiB", whether or
 * not the line ends with a newline; the error says "longer than".  A
 * line of exactly 65536 bytes was refused when a newline followed it,
 * and accepted as the file's last line without one. */
/* rules: CF2 */
static void
test_api_edges_config_line_of_64k(void)
{
	char err[256] = "";

	TL_EQ(load_long_line(65536, false, err, sizeof(err)), 0);
	TL_EQ(load_long_line(65536, true, err, sizeof(err)), 0);
	if (err[0] != '\0')
		fprintf(stderr, "    %s\n", err);
	TL_EQ(load_long_line(65537, true, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT(strstr(err, ":1: ") != NULL && strstr(err, "longer") != NULL);
	TL_EQ(load_long_line(65537, false, err, sizeof(err)),
	    SIPC_E_CONFIG);
}

/* sipc_strerror(3): every code of the SIPC_ERRORS table gets its own
 * message, and no value gets NULL; sipc_exit_format() returns the length
 * snprintf() would have produced, whatever the buffer. */
static void
test_api_edges_strerror_and_exit_format_edges(void)
{
	static const struct { int code; const char *msg; } tab[] = {
#define ROW(name, val, msg) { (val), (msg) },
		SIPC_ERRORS(ROW)
#undef ROW
	};
	static const int odd[] = { INT_MIN, INT_MAX, -1000, -4096, -1024 };
	struct sipc_exit e = { .kind = SIPC_EXIT_SIGNAL, .signo = 11,
	    .core_dumped = true };
	char full[128], small[8];
	size_t i;
	int n;

	CU_ASSERT(sizeof(tab) / sizeof(tab[0]) >= 23);
	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		TL_STREQ(sipc_strerror(tab[i].code), tab[i].msg);
	TL_STREQ(sipc_strerror(SIPC_E_CGROUP),
	    "cgroup or resource limit cannot be enforced here");
	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		CU_ASSERT(sipc_strerror(odd[i]) != NULL &&
		    sipc_strerror(odd[i])[0] != '\0');
	n = sipc_exit_format(&e, full, sizeof(full));
	CU_ASSERT(n > (int)sizeof(small));
	TL_EQ((size_t)n, strlen(full));
	CU_ASSERT(strstr(full, "11") != NULL && strstr(full, "core") != NULL);
	memset(small, 'x', sizeof(small));
	TL_EQ(sipc_exit_format(&e, small, sizeof(small)), n);
	CU_ASSERT(memchr(small, '\0', sizeof(small)) != NULL);
	CU_ASSERT(strncmp(small, full, sizeof(small) - 1) == 0);
	TL_EQ(sipc_exit_format(&e, NULL, 0), n);
}

int
main(void)
{
	st_no_core_files();
	tl_suite("api_edges", (tl_test[]){
	    { "test_api_edges_create_refuses_directory_as_worker",
	      test_api_edges_create_refuses_directory_as_worker },
	    { "test_api_edges_path_is_not_searched",
	      test_api_edges_path_is_not_searched },
	    { "test_api_edges_wait_ready_more_than_pool_is_einval",
	      test_api_edges_wait_ready_more_than_pool_is_einval },
	    { "test_api_edges_wait_ready_launch_failure_is_documented_code",
	      test_api_edges_wait_ready_launch_failure_is_documented_code },
	    { "test_api_edges_idempotency_key_limit",
	      test_api_edges_idempotency_key_limit },
	    { "test_api_edges_payload_size_edges",
	      test_api_edges_payload_size_edges },
	    { "test_api_edges_smallest_max_payload_still_starts",
	      test_api_edges_smallest_max_payload_still_starts },
	    { "test_api_edges_ok_result_names_its_worker",
	      test_api_edges_ok_result_names_its_worker },
	    { "test_api_edges_call_nowait_full_is_rejected_result",
	      test_api_edges_call_nowait_full_is_rejected_result },
	    { "test_api_edges_stats_and_reconcile_without_state_dir",
	      test_api_edges_stats_and_reconcile_without_state_dir },
	    { "test_api_edges_config_line_of_64k",
	      test_api_edges_config_line_of_64k },
	    { "test_api_edges_strerror_and_exit_format_edges",
	      test_api_edges_strerror_and_exit_format_edges },
	    { NULL, NULL } });
	return tl_run();
}
