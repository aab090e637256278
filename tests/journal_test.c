/*
 * journal_test.c - the intent journal on real files with real fsync:
 * record codec, crash (SIGKILL of a child process holding the journal)
 * and reconcile states, resolutions across a second crash, lock
 * contention, compaction bound, durability modes, a journal broken by a
 * real file size limit or a failed directory fsync, concurrent
 * appenders, leftover workers killed after a crash.  Reading back (torn
 * and corrupt files) is in jread_test.c, the state directory in
 * jdir_test.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bsd/unistd.h>

#include "wire/wire.h"
#include "os/os.h"
#include "journal/journal.h"
#include "jtest.h"
#include "sysfault.h"
#include "testlib.h"

/* ------------------------------------------------------------- codec */

/* rules: J3 */
static void
test_journal_codec_roundtrip_and_rejects(void)
{
	struct sipc__jrec a, b;
	uint8_t buf[SIPC__JREC_MAX];
	size_t n, used, ext;

	memset(&a, 0, sizeof(a));
	a.type = SIPC__JR_ACCEPTED;
	a.u.acc.id = 0x0102030405060708ull;
	a.u.acc.keylen = 255;
	memset(a.u.acc.key, 'k', 255);
	a.u.acc.digest = 42;
	a.u.acc.len = 7;
	a.u.acc.deadline = -1;
	CU_ASSERT_EQUAL_FATAL(sipc__jrec_encode(&a, buf, sizeof(buf), &n), 0);
	CU_ASSERT_EQUAL(sipc__jrec_decode(buf, n, &b, &used, &ext), 0);
	CU_ASSERT_EQUAL(used, n);
	CU_ASSERT(memcmp(&a.u.acc, &b.u.acc, sizeof(a.u.acc)) == 0);
	/* Every shorter prefix is "need more", never a misread. */
	for (size_t k = 0; k < n; k++)
		CU_ASSERT_EQUAL(sipc__jrec_decode(buf, k, &b, &used, &ext),
		    -EAGAIN);
	/* Any single flipped byte is rejected. */
	for (size_t k = 0; k < n; k++) {
		int r;

		buf[k] ^= 0x20;
		r = sipc__jrec_decode(buf, n, &b, &used, &ext);
		CU_ASSERT(r == -EBADMSG || r == -EAGAIN);
		buf[k] ^= 0x20;
	}
	/* A huge length is rejected before anything else is trusted. */
	buf[4] = buf[5] = buf[6] = buf[7] = 0xff;
	CU_ASSERT_EQUAL(sipc__jrec_decode(buf, n, &b, &used, &ext), -EBADMSG);
	CU_ASSERT_EQUAL(ext, 0);
	a.type = 99;
	CU_ASSERT_EQUAL(sipc__jrec_encode(&a, buf, sizeof(buf), &n), -EINVAL);
}

/*
 * The WORKER record holds the provider's name and its opaque identity;
 * a version 1 record still decodes, as a "local" identity whose bytes
 * are the old record's leading 52 (so the local provider proves it).
 */
static void
test_journal_codec_worker_record_v2_and_v1(void)
{
	struct sipc__jrec a, b;
	struct sipc__ident k;
	uint8_t buf[SIPC__JREC_MAX];
	size_t n, used, ext;

	memset(&a, 0, sizeof(a));
	a.type = SIPC__JR_WORKER;
	strcpy(a.u.worker.provider, "some-provider_2");
	a.u.worker.id.len = SIPC_PROVIDER_ID_MAX;
	for (int i = 0; i < SIPC_PROVIDER_ID_MAX; i++)
		a.u.worker.id.bytes[i] = (uint8_t)(i * 7);
	memset(a.u.worker.instance, 0xab, 16);
	a.u.worker.slot = 3;
	a.u.worker.generation = 0x01020304;
	CU_ASSERT_EQUAL_FATAL(sipc__jrec_encode(&a, buf, sizeof(buf), &n), 0);
	CU_ASSERT_EQUAL_FATAL(sipc__jrec_decode(buf, n, &b, &used, &ext), 0);
	CU_ASSERT_EQUAL(b.type, SIPC__JR_WORKER);
	CU_ASSERT(memcmp(&a.u.worker, &b.u.worker, sizeof(a.u.worker)) == 0);
	/* Names and identities that do not fit are never written. */
	a.u.worker.id.len = SIPC_PROVIDER_ID_MAX + 1;
	CU_ASSERT_EQUAL(sipc__jrec_encode(&a, buf, sizeof(buf), &n), -EINVAL);
	a.u.worker.id.len = 1;
	a.u.worker.provider[0] = '\0';
	CU_ASSERT_EQUAL(sipc__jrec_encode(&a, buf, sizeof(buf), &n), -EINVAL);

	memset(&k, 0, sizeof(k));
	k.pid = k.pgid = 12345;
	k.starttime = 0x1122334455667788ull;
	memcpy(k.boot_id, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", 36);
	for (int i = 0; i < 16; i++)
		k.instance[i] = (uint8_t)(i + 1);
	k.slot = 7;
	k.generation = 9;
	n = jt_v1_worker_record(buf, &k);
	memset(&k, 0, sizeof(k));
	CU_ASSERT_EQUAL_FATAL(sipc__jrec_decode(buf, n, &b, &used, &ext), 0);
	CU_ASSERT_EQUAL(used, n);
	CU_ASSERT_EQUAL(b.type, SIPC__JR_WORKER);
	CU_ASSERT_STRING_EQUAL(b.u.worker.provider, "local");
	CU_ASSERT_EQUAL(b.u.worker.slot, 7);
	CU_ASSERT_EQUAL(b.u.worker.generation, 9);
	CU_ASSERT_EQUAL(b.u.worker.instance[15], 16);
	CU_ASSERT_EQUAL_FATAL(sipc__ident_from_id(&b.u.worker.id, &k), 0);
	CU_ASSERT_EQUAL(k.pid, 12345);
	CU_ASSERT_EQUAL(k.pgid, 12345);
	CU_ASSERT_EQUAL(k.starttime, 0x1122334455667788ull);
	CU_ASSERT_STRING_EQUAL(k.boot_id,
	    "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
	/* ... and is never written again: a v1 type is not encodable. */
	a.type = SIPC__JR_WORKER_V1;
	CU_ASSERT_EQUAL(sipc__jrec_encode(&a, buf, sizeof(buf), &n), -EINVAL);
}

/* ------------------------------------------------ crash and reconcile */

static void
four_requests(struct sipc__journal *j)
{
	(void)sipc__journal_accepted(j, 1, "k1", "one", 3, 1000);
	(void)sipc__journal_accepted(j, 2, "k2", "two", 3, 0);
	(void)sipc__journal_accepted(j, 3, "k3", "three", 5, 0);
	(void)sipc__journal_accepted(j, 4, NULL, "", 0, 0);
	(void)sipc__journal_written(j, 2, 0, 1, 100);
	(void)sipc__journal_written(j, 3, 1, 1, 101);
	(void)sipc__journal_written(j, 4, 1, 1, 101);
	(void)sipc__journal_completed(j, 3, SIPC_OUTCOME_WORKER_ERROR, 7);
	(void)sipc__journal_completed(j, 4, SIPC_OUTCOME_OK, 0);
	sipc__journal_delivered(j, 4);
}

/* rules: J1 */
static void
test_journal_reconcile_states_after_crash(void)
{
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	uint8_t me[16];
	size_t n;

	jt_mkstate();
	jt_crash_child(SIPC_DURABLE_EACH, four_requests);
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	n = jt_list(j, &u);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	sipc__journal_instance(j, me);
	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(u[i].request_id, i + 1);
		CU_ASSERT(memcmp(u[i].instance, me, 16) != 0);
		CU_ASSERT(memcmp(u[i].instance, u[0].instance, 16) == 0);
	}
	CU_ASSERT_EQUAL(u[0].state, SIPC_UNRESOLVED_NEVER_SENT);
	CU_ASSERT_STRING_EQUAL(u[0].key, "k1");
	CU_ASSERT_EQUAL(u[0].payload_digest, sipc__payload_digest("one", 3));
	CU_ASSERT_EQUAL(u[0].payload_len, 3);
	CU_ASSERT_EQUAL(u[1].state, SIPC_UNRESOLVED_MAY_HAVE_RUN);
	CU_ASSERT_EQUAL(u[2].state, SIPC_UNRESOLVED_COMPLETED);
	CU_ASSERT_EQUAL(u[2].outcome, SIPC_OUTCOME_WORKER_ERROR);
	CU_ASSERT_EQUAL(u[2].error, 7);
	/* Request 4 was completed AND delivered (its callback returned):
	 * the caller saw its outcome, so it is not listed again. */
	free(u);
	sipc__journal_close(j);
	jt_rmstate();
}

static void
resolve_two(struct sipc__journal *j)
{
	struct sipc_unresolved *u = NULL;
	size_t n = 0;

	if (sipc__journal_unresolved(j, &u, &n) != 0 || n != 3)
		_exit(3);
	(void)sipc__journal_resolve(j, u[0].instance, u[0].request_id);
	(void)sipc__journal_resolve(j, u[1].instance, u[1].request_id);
	free(u);
}

/* rules: J2 */
static void
test_journal_resolutions_survive_second_crash(void)
{
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	uint8_t inst[16];

	jt_mkstate();
	jt_crash_child(SIPC_DURABLE_GROUP, four_requests);
	jt_crash_child(SIPC_DURABLE_EACH, resolve_two);
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_EQUAL_FATAL(jt_list(j, &u), 1);
	CU_ASSERT_EQUAL(u[0].request_id, 3);
	memcpy(inst, u[0].instance, 16);
	free(u);
	sipc__journal_close(j);
	j = jt_open(SIPC_DURABLE_OFF);     /* still listed after a clean reopen */
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_EQUAL_FATAL(jt_list(j, &u), 1);
	free(u);
	CU_ASSERT_EQUAL(sipc__journal_resolve(j, inst, 3), 0);
	/* Resolving again (a host repeating after a crash) is "not found". */
	CU_ASSERT_EQUAL(sipc__journal_resolve(j, inst, 3), SIPC_E_NOTFOUND);
	CU_ASSERT_EQUAL(sipc__journal_resolve(j, inst, 1), SIPC_E_NOTFOUND);
	sipc__journal_close(j);
	j = jt_open(SIPC_DURABLE_OFF);
	CU_ASSERT_EQUAL(jt_list(j, &u), 0);
	CU_ASSERT_PTR_NULL(u);
	sipc__journal_close(j);
	jt_rmstate();
}

/* ------------------------------------------------------------ locking */

/* rules: J4 */
static void
test_journal_lock_contention_names_holder(void)
{
	struct sipc__journal *j;
	char msg[256] = "";
	int p[2], st;
	ssize_t n;
	pid_t pid;

	jt_mkstate();
	j = jt_open(SIPC_DURABLE_OFF);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_FATAL(pipe(p) == 0);
	if ((pid = fork()) == 0) {
		struct sipc__journal *j2 = NULL;
		char err[256] = "";
		int r = sipc__journal_open(jt_dir, SIPC_DURABLE_OFF, 0, &j2, err,
		    sizeof(err));

		(void)!write(p[1], err, strlen(err) + 1);
		_exit(r == SIPC_E_LOCKED && j2 == NULL ? 0 : 1);
	}
	close(p[1]);
	n = read(p[0], msg, sizeof(msg) - 1);
	close(p[0]);
	CU_ASSERT(n > 0);
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	{
		char want[32];

		snprintf(want, sizeof(want), "pid %d", (int)getpid());
		CU_ASSERT_PTR_NOT_NULL(strstr(msg, want));
	}
	sipc__journal_close(j);
	/* Released on close (and, by the crash tests, on SIGKILL). */
	j = jt_open(SIPC_DURABLE_OFF);
	CU_ASSERT_PTR_NOT_NULL(j);
	sipc__journal_close(j);
	jt_rmstate();
}

/* No journal descriptor may cross exec: a worker holding the lock file
 * would keep the instance lock after the supervisor died. */
/* rules: J4 SC5 */
static void
test_journal_descriptors_cloexec(void)
{
	struct sipc__journal *j;
	struct dirent *e;
	int seen = 0;
	DIR *d;

	jt_mkstate();
	j = jt_open(SIPC_DURABLE_OFF);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	d = opendir("/proc/self/fd");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d)) != NULL) {
		char link[64], target[256];
		ssize_t n;
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		if ((n = readlink(link, target, sizeof(target) - 1)) <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, jt_dir, strlen(jt_dir)) != 0)
			continue;
		seen++;
		CU_ASSERT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	}
	closedir(d);
	CU_ASSERT(seen >= 3);   /* directory, lock file, journal */
	sipc__journal_close(j);
	jt_rmstate();
}

/* --------------------------------------------------------- compaction */

/* rules: J5 */
static void
test_journal_compaction_bounds_size(void)
{
	struct sipc__journal_stats st;
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	const uint64_t limit = 64 * 1024;
	off_t max = 0;
	size_t n, old = 0, pending = 0;

	jt_mkstate();
	jt_crash_child(SIPC_DURABLE_EACH, four_requests);
	j = jt_open(SIPC_DURABLE_OFF);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	sipc__journal_set_compact_threshold(j, limit);
	/* appends only note that a compaction is due; the tick compacts */
	for (uint64_t id = 1; id <= 20000; id++) {
		CU_ASSERT_EQUAL(sipc__journal_accepted(j, id, "some-key", &id,
		    sizeof(id), 0), 0);
		(void)sipc__journal_tick(j, 0);
		CU_ASSERT_EQUAL(sipc__journal_written(j, id, 0, 1, 1), 0);
		(void)sipc__journal_tick(j, 0);
		if (id % 2000 == 0) {   /* left unsettled on purpose */
			pending++;
			continue;
		}
		CU_ASSERT_EQUAL(sipc__journal_completed(j, id, SIPC_OUTCOME_OK,
		    0), 0);
		(void)sipc__journal_tick(j, 0);
		sipc__journal_delivered(j, id);
		(void)sipc__journal_tick(j, 0);
		if (jt_fsize("journal") > max)
			max = jt_fsize("journal");
	}
	sipc__journal_get_stats(j, &st);
	CU_ASSERT(st.compactions >= 10);
	CU_ASSERT(max <= (off_t)(limit + SIPC__JREC_MAX));
	n = jt_list(j, &u);
	CU_ASSERT_EQUAL(n, 3);      /* the previous instance survived them */
	free(u);
	sipc__journal_close(j);
	CU_ASSERT(jt_fsize("journal") < 4096);
	j = jt_open(SIPC_DURABLE_OFF);
	n = jt_list(j, &u);
	for (size_t i = 0; i < n; i++)
		old += u[i].state != SIPC_UNRESOLVED_MAY_HAVE_RUN ||
		    u[i].request_id <= 4;
	CU_ASSERT_EQUAL(n, 3 + pending);
	CU_ASSERT_EQUAL(old, 3);
	free(u);
	sipc__journal_close(j);
	jt_rmstate();
}

/* --------------------------------------------------------- durability */

static void
accept_and_write(struct sipc__journal *j)
{
	(void)sipc__journal_accepted(j, 7, "seven", "x", 1, 0);
	(void)sipc__journal_written(j, 7, 0, 1, 1);
}

/* rules: J10 */
static void
test_journal_durability_modes(void)
{
	static const enum sipc_durability modes[] = { SIPC_DURABLE_OFF,
	    SIPC_DURABLE_GROUP, SIPC_DURABLE_EACH };
	struct sipc__journal_stats a, b;
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;

	for (int m = 0; m < 3; m++) {
		jt_mkstate();
		/* Every mode survives a process crash. */
		jt_crash_child(modes[m], accept_and_write);
		j = jt_open(modes[m]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(j);
		CU_ASSERT_EQUAL_FATAL(jt_list(j, &u), 1);
		CU_ASSERT_EQUAL(u[0].state, SIPC_UNRESOLVED_MAY_HAVE_RUN);
		free(u);
		/* Who syncs when. */
		sipc__journal_get_stats(j, &a);
		CU_ASSERT_EQUAL(sipc__journal_accepted(j, 1, "", "", 0, 0), 0);
		sipc__journal_get_stats(j, &b);
		if (modes[m] == SIPC_DURABLE_EACH) {
			CU_ASSERT(b.syncs > a.syncs);
		} else {
			CU_ASSERT_EQUAL(b.syncs, a.syncs);
		}
		if (modes[m] == SIPC_DURABLE_GROUP) {
			CU_ASSERT_EQUAL(sipc__journal_tick(j, 1000000), 1);
			CU_ASSERT_EQUAL(sipc__journal_tick(j, 1000001), 0);
			CU_ASSERT_EQUAL(sipc__journal_accepted(j, 2, "", "", 0,
			    0), 0);
			CU_ASSERT_EQUAL(sipc__journal_tick(j, 1000002), 0);
			CU_ASSERT_EQUAL(sipc__journal_tick(j, 1000005), 1);
			CU_ASSERT_EQUAL(sipc__journal_tick(j, 1000100), 0);
		} else {
			CU_ASSERT_EQUAL(sipc__journal_tick(j, 1000000), 0);
		}
		sipc__journal_get_stats(j, &a);
		CU_ASSERT_EQUAL(a.syncs, b.syncs +
		    (modes[m] == SIPC_DURABLE_GROUP ? 2 : 0));
		sipc__journal_close(j);
		jt_rmstate();
	}
}

/* rules: J4 */
static void
test_journal_argument_errors(void)
{
	struct sipc__journal *j;
	char key[300];

	jt_mkstate();
	j = jt_open(SIPC_DURABLE_OFF);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	memset(key, 'x', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	CU_ASSERT_EQUAL(sipc__journal_accepted(j, 1, key, "", 0, 0), -EINVAL);
	key[255] = '\0';
	CU_ASSERT_EQUAL(sipc__journal_accepted(j, 1, key, "", 0, 0), 0);
	CU_ASSERT_EQUAL(sipc__journal_accepted(j, 1, "", "", 0, 0), -EEXIST);
	CU_ASSERT_EQUAL(sipc__journal_written(j, 2, 0, 0, 0), SIPC_E_NOTFOUND);
	CU_ASSERT_EQUAL(sipc__journal_completed(j, 2, 0, 0), SIPC_E_NOTFOUND);
	CU_ASSERT_EQUAL(sipc__journal_worker_gone(j, 0, 0), SIPC_E_NOTFOUND);
	sipc__journal_close(j);
	jt_rmstate();
}

/* ------------------------------------------------------ broken journal */

/* In a child: the journal may grow by `room` more bytes (a real
 * RLIMIT_FSIZE; SIGXFSZ ignored, so write() fails with EFBIG).  Exit
 * status: 0 when every expectation held, else the number of the one that
 * failed. */
static int
fsize_limited(size_t room)
{
	struct sigaction sa = { .sa_handler = SIG_IGN };
	struct sipc__journal *j = NULL;
	struct rlimit rl;
	off_t before;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGXFSZ, &sa, NULL) < 0 ||
	    sipc__journal_open(jt_dir, SIPC_DURABLE_EACH, 0, &j, NULL, 0) != 0 ||
	    sipc__journal_accepted(j, 1, "k1", "a", 1, 0) != 0 ||
	    getrlimit(RLIMIT_FSIZE, &rl) < 0)
		return 1;
	before = jt_fsize("journal");
	rl.rlim_cur = (rlim_t)before + room;
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		return 2;
	/* The record does not fit: refused, cut back to whole records. */
	if (sipc__journal_accepted(j, 2, "k2", "b", 1, 0) != -EFBIG)
		return 3;
	if (jt_fsize("journal") != before)
		return 4;
	if (sipc__journal_broken(j, NULL) != -EFBIG)
		return 5;
	/* Broken for good, even with room again: no later record may
	 * follow one that failed. */
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		return 6;
	if (sipc__journal_accepted(j, 3, "k3", "c", 1, 0) != -EFBIG ||
	    sipc__journal_written(j, 1, 0, 1, 1) != -EFBIG ||
	    sipc__journal_sync(j) != -EFBIG || jt_fsize("journal") != before)
		return 7;
	raise(SIGKILL);
	return 8;
}

/* rules: J8 */
static void
test_journal_failed_append_breaks_it(void)
{
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	pid_t pid;
	int st;

	jt_mkstate();
	/* Half a record of room: part of it reaches the file. */
	if ((pid = fork()) == 0)
		_exit(fsize_limited(jt_rec_size(SIPC__JR_ACCEPTED) / 2));
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &st, 0), pid);
	if (!WIFSIGNALED(st))
		fprintf(stderr, "fsize_limited: step %d\n", WEXITSTATUS(st));
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* The next instance reads exactly the records that were made. */
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_EQUAL_FATAL(jt_list(j, &u), 1);
	CU_ASSERT_EQUAL(u[0].request_id, 1);
	CU_ASSERT_EQUAL(u[0].state, SIPC_UNRESOLVED_NEVER_SENT);
	free(u);
	CU_ASSERT_EQUAL(sipc__journal_broken(j, NULL), 0);
	sipc__journal_close(j);
	jt_rmstate();
}

/* The state directory's descriptor in this process (found by path). */
static int
state_dirfd(void)
{
	struct dirent *e;
	int found = -1;
	DIR *d = opendir("/proc/self/fd");

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char link[64], target[256];
		int fd = atoi(e->d_name);
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		if (e->d_name[0] == '.' || fd == dirfd(d) ||
		    (n = readlink(link, target, sizeof(target) - 1)) <= 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, jt_dir) == 0)
			found = fd;
	}
	closedir(d);
	return found;
}

/* In a child: fsync of the state directory fails (seccomp) after open;
 * compaction renames and then cannot make the rename durable. */
static int
dir_fsync_fails(void)
{
	struct sipc__journal_stats st;
	struct sipc__journal *j = NULL;
	uint64_t id = 1;

	if (sipc__journal_open(jt_dir, SIPC_DURABLE_GROUP, 0, &j, NULL, 0) != 0)
		return 1;
	if (sf_fail_fsync_on(state_dirfd(), EIO) < 0)
		return 2;
	sipc__journal_set_compact_threshold(j, 4096);
	do {
		if (sipc__journal_accepted(j, id, "k", "p", 1, 0) != 0)
			return 3;
		(void)sipc__journal_tick(j, 0);   /* compacts when due */
		sipc__journal_get_stats(j, &st);
	} while (st.compactions == 0 && ++id < 1000);
	if (st.compactions != 1 || st.last_error != -EIO ||
	    sipc__journal_broken(j, NULL) != -EIO)
		return 4;
	if (sipc__journal_accepted(j, id + 1, "k", "p", 1, 0) != -EIO ||
	    sipc__journal_tick(j, 1000000) != -EIO)
		return 5;
	return 0;
}

/* rules: J8 */
static void
test_journal_compaction_dir_fsync_failure_breaks_it(void)
{
	pid_t pid;
	int st;

	if (!sf_supported()) {
		tl_skip("seccomp filters are not available here");
		return;
	}
	jt_mkstate();
	if ((pid = fork()) == 0)
		_exit(dir_fsync_fails());
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
		fprintf(stderr, "dir_fsync_fails: step %d\n", WEXITSTATUS(st));
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	jt_rmstate();
}

/* --------------------------------------------------- concurrent appends */

static void *
appender(void *arg)
{
	struct sipc__journal *j = arg;
	static uint64_t next;
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

	for (int i = 0; i < 100; i++) {
		uint64_t id;

		pthread_mutex_lock(&mu);
		id = ++next;
		pthread_mutex_unlock(&mu);
		if (sipc__journal_accepted(j, id, "c", "p", 1, 0) != 0)
			return (void *)1;
	}
	return NULL;
}

/* rules: J10 */
static void
test_journal_concurrent_each_appenders(void)
{
	struct sipc_unresolved *u = NULL;
	struct sipc__journal *j;
	pthread_t t[4];
	void *res;

	jt_mkstate();
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(pthread_create(&t[i], NULL, appender, j), 0);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(pthread_join(t[i], &res), 0);
		CU_ASSERT_PTR_NULL(res);
	}
	sipc__journal_close(j);
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_EQUAL(jt_list(j, &u), 400);
	for (size_t i = 0; u != NULL && i < 400; i++)
		CU_ASSERT_EQUAL(u[i].request_id, i + 1);
	free(u);
	sipc__journal_close(j);
	jt_rmstate();
}

/* ------------------------------------------------- leftover workers */

static pid_t leftover_pid;

/* In the crashing instance: spawn a worker that outlives us (own group)
 * and record it; record a second worker and its end. */
static void
record_workers(struct sipc__journal *j)
{
	struct sipc__jowner w;
	struct sipc__ident k;
	char c;
	int p[2];
	pid_t pid;

	if (pipe(p) < 0)
		_exit(5);
	if ((pid = fork()) == 0) {
		/* Like a spawned worker: nothing inherited (else it would
		 * keep the instance lock and our stdout alive). */
		closefrom(0);
		setpgid(0, 0);
		for (;;)
			pause();
	}
	setpgid(pid, pid);
	/* EOF once the worker closed its copy: the lock is ours alone. */
	close(p[1]);
	if (read(p[0], &c, 1) != 0)
		_exit(6);
	if (sipc__ident_of(pid, &k) != 0)
		_exit(4);
	memset(&w, 0, sizeof(w));
	strcpy(w.provider, "local");
	sipc__ident_to_id(&k, &w.id);
	w.slot = 0;
	w.generation = 3;
	(void)sipc__journal_worker(j, &w);
	w.slot = 1;
	(void)sipc__journal_worker(j, &w);
	(void)sipc__journal_worker_gone(j, 1, 3);
}

static bool
leftover_gone(void *arg)
{
	return !tl_pid_alive(leftover_pid);
}

/* rules: J6 */
static void
test_journal_leftover_worker_killed_after_crash(void)
{
	struct sipc__jowner *w = NULL;
	struct sipc__journal *j;
	struct sipc__ident k;
	size_t n = 0;

	jt_mkstate();
	jt_crash_child(SIPC_DURABLE_EACH, record_workers);
	j = jt_open(SIPC_DURABLE_EACH);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	CU_ASSERT_EQUAL(sipc__journal_leftover_workers(j, &w, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_STRING_EQUAL(w[0].provider, "local");
	CU_ASSERT_EQUAL_FATAL(sipc__ident_from_id(&w[0].id, &k), 0);
	leftover_pid = k.pid;
	CU_ASSERT_EQUAL(w[0].slot, 0);
	CU_ASSERT_EQUAL(w[0].generation, 3);
	CU_ASSERT(tl_pid_alive(k.pid));
	CU_ASSERT_EQUAL(sipc__ident_terminate(&k, 2000), 1);
	CU_ASSERT(tl_wait_until(leftover_gone, NULL, 10000));
	CU_ASSERT_EQUAL(sipc__journal_leftover_gone(j, &w[0]), 0);
	CU_ASSERT_EQUAL(sipc__journal_leftover_gone(j, &w[0]), SIPC_E_NOTFOUND);
	free(w);
	sipc__journal_close(j);
	j = jt_open(SIPC_DURABLE_EACH);
	w = NULL;
	CU_ASSERT_EQUAL(sipc__journal_leftover_workers(j, &w, &n), 0);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_PTR_NULL(w);
	sipc__journal_close(j);
	jt_rmstate();
}

int
main(void)
{
	tl_suite("journal", (tl_test[]){
	    { "test_journal_codec_roundtrip_and_rejects", test_journal_codec_roundtrip_and_rejects },
	    { "test_journal_codec_worker_record_v2_and_v1", test_journal_codec_worker_record_v2_and_v1 },
	    { "test_journal_reconcile_states_after_crash", test_journal_reconcile_states_after_crash },
	    { "test_journal_resolutions_survive_second_crash", test_journal_resolutions_survive_second_crash },
	    { "test_journal_failed_append_breaks_it", test_journal_failed_append_breaks_it },
	    { "test_journal_compaction_dir_fsync_failure_breaks_it", test_journal_compaction_dir_fsync_failure_breaks_it },
	    { "test_journal_lock_contention_names_holder", test_journal_lock_contention_names_holder },
	    { "test_journal_descriptors_cloexec", test_journal_descriptors_cloexec },
	    { "test_journal_compaction_bounds_size", test_journal_compaction_bounds_size },
	    { "test_journal_durability_modes", test_journal_durability_modes },
	    { "test_journal_argument_errors", test_journal_argument_errors },
	    { "test_journal_concurrent_each_appenders", test_journal_concurrent_each_appenders },
	    { "test_journal_leftover_worker_killed_after_crash", test_journal_leftover_worker_killed_after_crash },
	    { NULL, NULL } });
	return tl_run();
}
