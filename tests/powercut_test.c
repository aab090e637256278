/*
 * powercut_test.c - the journal across a power cut: nothing that was
 * sent comes back NEVER_SENT (CONTRACT J7), in every durability mode.
 *
 * A supervisor runs requests against the echo fixture with a state
 * directory.  The journal's writes and syncs go through the seam of
 * src/journal/journal.h (sipc__jio_hook); the hook here keeps, for the journal file
 * only, the end of each record written and, at the start of each sync,
 * the file's size then and the set of requests already answered (a
 * request whose reply came back was certainly sent; one sent but not yet
 * answered is simply not counted, so the set errs on the safe side).
 *
 * A power cut just before sync e completes leaves on disk what the
 * earlier syncs made durable, plus any prefix of what was written after
 * them (the page cache writes back in any order; the journal's reader
 * keeps the whole records of a prefix and cuts the rest), and the
 * requests answered before e started were sent.  So for every sync e,
 * every record boundary P between the size the previous sync covered and
 * the size at e's start, and P with half of the next record (a torn last
 * write), the harness rebuilds a state directory holding the journal's
 * first P bytes, as read after a reboot (the INSTANCE records get
 * another boot id: a power cut is a reboot), opens it as the next
 * instance does and lists what is unresolved.  A request answered before
 * e must not be listed NEVER_SENT.  The end of the run counts as one
 * more cut, with every answered request sent.
 *
 * Threads: the hook runs on library threads (writers, readers, the
 * reaper, the submitting thread) under the journal's lock; it only
 * copies into the arrays below under `rec_mu`, a leaf.  Everything else
 * runs on the CUnit thread.
 */
/* rules-skip: J10: no real power cut is run; the test replays a cut at every sync of the journal */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/syscall.h>

#include "journal/journal.h"
#include "sipc.h"
#include "sipctest.h"
#include "sysfault.h"
#include "testlib.h"

#define NREQ 64                   /* requests per run */
#define WINDOW 8                  /* outstanding at a time */
#define MAX_BOUNDS 4096
#define MAX_CUTS 2048
#define WAIT_MS 30000

/* One sync of the journal file, as its hook saw it. */
struct cut {
	uint64_t size;                /* file size when the sync began */
	uint8_t sent[NREQ];           /* answered before it began */
};

static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static char rec_path[512];        /* the journal file of the run */
static uint64_t bounds[MAX_BOUNDS];   /* record ends, in file order */
static size_t nbounds;
static struct cut cuts[MAX_CUTS];
static size_t ncuts;
static bool overflow;
static bool recording;            /* the hook records (rec_mu) */

/* Answered requests, by submit index; ids map to indexes. */
static _Atomic uint8_t answered[NREQ];
static uint64_t ids[NREQ];
static atomic_uint outstanding;
static unsigned shown;            /* failures printed in this case */
static unsigned never_seen;       /* NEVER_SENT entries of unsent
                                   * requests: the check can see them */

/* The size of fd's file when it is the journal file of the run (not
 * journal.tmp, a copy, the directory or sipc.pid), else -1. */
static int64_t
journal_size(int fd)
{
	struct stat fs, ps;

	if (fstat(fd, &fs) < 0 || !S_ISREG(fs.st_mode) ||
	    stat(rec_path, &ps) < 0 || ps.st_ino != fs.st_ino ||
	    ps.st_dev != fs.st_dev)
		return -1;
	return (int64_t)fs.st_size;
}

static void
hook_wrote(int fd, const void *buf, size_t len)
{
	int64_t size = journal_size(fd);

	(void)buf;
	(void)len;
	if (size < 0)
		return;
	pthread_mutex_lock(&rec_mu);
	if (!recording)
		;
	else if (nbounds < MAX_BOUNDS)
		bounds[nbounds++] = (uint64_t)size;
	else
		overflow = true;
	pthread_mutex_unlock(&rec_mu);
}

static void
hook_syncing(int fd, bool data_only)
{
	int64_t size = journal_size(fd);

	(void)data_only;
	if (size < 0)
		return;
	pthread_mutex_lock(&rec_mu);
	if (!recording) {
		;
	} else if (ncuts < MAX_CUTS) {
		cuts[ncuts].size = (uint64_t)size;
		for (size_t i = 0; i < NREQ; i++)
			cuts[ncuts].sent[i] = atomic_load(&answered[i]);
		ncuts++;
	} else {
		overflow = true;
	}
	pthread_mutex_unlock(&rec_mu);
}

static const struct sipc__jio_hook hook = { hook_wrote, hook_syncing };

static void
done_cb(void *arg, struct sipc_result *res)
{
	size_t i = (size_t)(uintptr_t)arg;

	if (res->outcome == SIPC_OUTCOME_OK)
		atomic_store(&answered[i], 1);
	sipc_result_release(res);
	atomic_fetch_sub(&outstanding, 1);
}

static bool
drained(void *arg)
{
	unsigned below = (unsigned)(uintptr_t)arg;

	return atomic_load(&outstanding) <= below;
}

/* Read the whole file at path into a malloc'd buffer. */
static uint8_t *
slurp(const char *path, size_t *ret_len)
{
	struct stat st;
	uint8_t *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0 ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL ||
	    pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		buf = NULL;
	} else {
		*ret_len = (size_t)st.st_size;
	}
	if (fd >= 0)
		close(fd);
	return buf;
}

/* The journal's first `len` bytes as read after a reboot: every whole
 * INSTANCE record gets another boot id (same length, checksum redone). */
static void
reboot_image(uint8_t *img, size_t len)
{
	size_t off = 0, used, extent;
	struct sipc__jrec rec;
	uint8_t buf[SIPC__JREC_MAX];
	size_t n;

	while (off < len && sipc__jrec_decode(img + off, len - off, &rec,
	    &used, &extent) == 0) {
		if (rec.type == SIPC__JR_INSTANCE) {
			memcpy(rec.u.inst.boot_id,
			    "00000000-0000-4000-8000-00000000dead",
			    SIPC__BOOT_ID_LEN);
			CU_ASSERT_FATAL(sipc__jrec_encode(&rec, buf,
			    sizeof(buf), &n) == 0 && n == used);
			memcpy(img + off, buf, n);
		}
		off += used;
	}
}

static void
rm_dir(const char *dir)
{
	char path[600];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static const char *
scratch_base(void)
{
	struct stat st;

	/* many small synced directories: memory is faster than a disk */
	return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
	    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

/* Index of request id `id`, or -1. */
static int
index_of(uint64_t id)
{
	for (int i = 0; i < NREQ; i++)
		if (ids[i] == id)
			return i;
	return -1;
}

/*
 * Rebuild a state directory from img[0, len) (as after a reboot when
 * `reboot`), open it as the next instance, and count the entries listed
 * NEVER_SENT whose request is in `sent`.  The first few are printed;
 * NEVER_SENT entries of requests not in `sent` are counted in
 * never_seen.
 */
static unsigned
cut_check(const uint8_t *img, size_t len, const uint8_t *sent,
    enum sipc_durability mode, bool reboot, const char *what)
{
	char dir[256], path[300], err[256];
	struct sipc__journal *j = NULL;
	struct sipc_unresolved *u = NULL;
	size_t n = 0;
	unsigned bad = 0;
	uint8_t *copy;
	int fd, rc;

	snprintf(dir, sizeof(dir), "%s/sipc-powercut-XXXXXX", scratch_base());
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/journal", dir);
	CU_ASSERT_FATAL((copy = malloc(len + 1)) != NULL);
	memcpy(copy, img, len);
	if (reboot)
		reboot_image(copy, len);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(sipc__jdir_write_all(fd, copy, len) == 0);
	close(fd);
	free(copy);
	rc = sipc__journal_open(dir, mode, 0, &j, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "%s: open: %s: %s\n", what, sipc_strerror(rc),
		    err);
	CU_ASSERT_FATAL(rc == 0);
	CU_ASSERT_FATAL(sipc__journal_unresolved(j, &u, &n) == 0);
	for (size_t k = 0; k < n; k++) {
		int i = index_of(u[k].request_id);

		if (u[k].state != SIPC_UNRESOLVED_NEVER_SENT || i < 0)
			continue;
		if (!sent[i]) {
			never_seen++;
			continue;
		}
		bad++;
		if (shown++ < 3)
			fprintf(stderr, "%s, %zu bytes: request %llu was sent "
			    "and is listed NEVER_SENT\n", what, len,
			    (unsigned long long)u[k].request_id);
	}
	free(u);
	sipc__journal_close(j);
	rm_dir(dir);
	return bad;
}

/* Run NREQ requests with the hook recording; leaves the journal's bytes
 * (as of the last record) in *ret_img. */
static void
record_run(enum sipc_durability mode, uint8_t **ret_img, size_t *ret_len)
{
	char dir[] = "/tmp/sipc-powercut-run-XXXXXX";
	uint8_t payload[256];
	struct sipc_request req = { .payload = payload,
	    .len = sizeof(payload), .timeout_ms = WAIT_MS };
	struct sipc_config c;
	sipc_supervisor *s;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(rec_path, sizeof(rec_path), "%s/journal", dir);
	nbounds = ncuts = 0;
	overflow = false;
	recording = true;
	memset(ids, 0, sizeof(ids));
	for (size_t i = 0; i < NREQ; i++)
		atomic_store(&answered[i], 0);
	memset(payload, 'p', sizeof(payload));
	st_cfg_base(&c, "echo", NULL, 2);
	c.state_dir = dir;
	c.durability = mode;
	c.group_commit_ms = 2;
	sipc__jio_hook = &hook;
	s = st_start(&c, 2, WAIT_MS);
	for (size_t i = 0; i < NREQ; i++) {
		CU_ASSERT_FATAL(tl_wait_until(drained,
		    (void *)(uintptr_t)(WINDOW - 1), WAIT_MS));
		atomic_fetch_add(&outstanding, 1);
		CU_ASSERT_FATAL(sipc_submit(s, &req, done_cb,
		    (void *)(uintptr_t)i, &ids[i]) == 0);
	}
	CU_ASSERT_FATAL(tl_wait_until(drained, (void *)(uintptr_t)0,
	    WAIT_MS));
	/* The end of the run is one more cut: every answer is in.  No
	 * more recording from here (the hook stays set while the journal
	 * is open: destroy compacts and renames). */
	pthread_mutex_lock(&rec_mu);
	recording = false;
	if (!overflow && ncuts < MAX_CUTS) {
		cuts[ncuts].size = nbounds > 0 ? bounds[nbounds - 1] : 0;
		for (size_t i = 0; i < NREQ; i++)
			cuts[ncuts].sent[i] = atomic_load(&answered[i]);
		ncuts++;
	} else {
		overflow = true;
	}
	pthread_mutex_unlock(&rec_mu);
	CU_ASSERT_FATAL(!overflow);
	*ret_img = slurp(rec_path, ret_len);
	CU_ASSERT_FATAL(*ret_img != NULL);
	sipc_destroy(s);
	sipc__jio_hook = NULL;
	for (size_t i = 0; i < NREQ; i++)
		CU_ASSERT(atomic_load(&answered[i]));
	rm_dir(dir);
}

static void
powercut_case(enum sipc_durability mode, const char *name)
{
	uint8_t *img = NULL;
	size_t len = 0, k = 0, checked = 0;
	uint64_t from = 0;
	unsigned bad = 0;
	char what[96];

	shown = never_seen = 0;
	record_run(mode, &img, &len);
	CU_ASSERT_FATAL(nbounds > 3 * NREQ && bounds[nbounds - 1] <= len);
	for (size_t e = 0; e < ncuts; e++) {
		/* every record end in [from, cuts[e].size] */
		while (k < nbounds && bounds[k] < from)
			k++;
		for (size_t b = k; b < nbounds && bounds[b] <= cuts[e].size;
		    b++) {
			uint64_t p = bounds[b];

			snprintf(what, sizeof(what), "%s, cut %zu", name, e);
			bad += cut_check(img, (size_t)p, cuts[e].sent, mode,
			    true, what);
			/* torn: half of the next record made it */
			if (b + 1 < nbounds) {
				uint64_t torn = p + (bounds[b + 1] - p) / 2;

				snprintf(what, sizeof(what), "%s, cut %zu, "
				    "torn", name, e);
				bad += cut_check(img, (size_t)torn,
				    cuts[e].sent, mode, true, what);
			}
			checked++;
		}
		if (cuts[e].size > from)
			from = cuts[e].size;
	}
	fprintf(stderr, "%s: %zu syncs, %zu records, %zu cut points "
	    "checked, %u sent requests listed NEVER_SENT\n", name, ncuts - 1,
	    nbounds, checked, bad);
	CU_ASSERT(checked >= (size_t)NREQ);
	CU_ASSERT_EQUAL(bad, 0);
	if (mode != SIPC_DURABLE_OFF) {
		/* what was accepted and not yet sent is still NEVER_SENT */
		CU_ASSERT(never_seen > 0);
	} else {
		/* off promises nothing across a power cut: after a reboot
		 * nothing is NEVER_SENT; after a crash of the process (the
		 * same boot, every record the kernel got is there) a request
		 * accepted and not written still is */
		CU_ASSERT_EQUAL(never_seen, 0);
		for (size_t b = 0; b < nbounds; b++)
			(void)cut_check(img, (size_t)bounds[b], cuts[0].sent,
			    mode, false, "off, same boot");
		CU_ASSERT(never_seen > 0);
	}
	free(img);
}

/* rules: J9 PV7 */
static void
test_powercut_group_never_sent_is_true(void)
{
	powercut_case(SIPC_DURABLE_GROUP, "group");
}

/* rules: J9 PV7 */
static void
test_powercut_each_never_sent_is_true(void)
{
	powercut_case(SIPC_DURABLE_EACH, "each");
}

/* rules: J9 */
static void
test_powercut_off_never_sent_is_true(void)
{
	powercut_case(SIPC_DURABLE_OFF, "off");
}

/* ------------------------------------------- the sync before a send */

struct sync_seen {
	int journal_syncs;            /* fdatasync() calls on the journal */
	int failed;                   /* of them, failed */
};

/* Is thread `tid` the reaper (no name of its own, not the process's
 * main thread)?  Its group-commit tick may sync; the syncs of the
 * threads that send are the ones to fail. */
static bool
is_reaper(pid_t tid)
{
	char path[64], line[128];
	long tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)tid);
	if (tgid == tid || (f = fopen(path, "re")) == NULL)
		return false;
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	fclose(f);
	return strncmp(line, "sipc-", 5) != 0;
}

/* The INSTANCE record's sync at open passes, and so does the reaper's
 * tick; every later fdatasync of the journal on a thread that sends
 * (the caller of sipc_call(), a writer, a reader) fails with EIO. */
static int
judge_fdatasync(pid_t pid, const uint64_t args[6], void *arg)
{
	struct sync_seen *ss = arg;
	char path[PATH_MAX];
	size_t n;

	if (sf_fd_path(pid, args[0], path, sizeof(path)) < 0 ||
	    (n = strlen(path)) < 8 || strcmp(path + n - 8, "/journal") != 0)
		return 0;
	if (ss->journal_syncs++ == 0 || is_reaper(pid))
		return 0;
	ss->failed++;
	return -EIO;
}

/* In the filtered child: one call in group mode.  Exit status: 1 when
 * it ended REJECTED / SIPC_E_JOURNAL, plus 2 when no frame went to the
 * worker. */
static int
sync_fail_body(void *arg)
{
	const char *dir = arg;
	struct sipc_request req = { .payload = "x", .len = 1,
	    .timeout_ms = WAIT_MS };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s = NULL;
	int ret = 0;

	st_cfg_base(&c, "echo", NULL, 1);
	c.state_dir = dir;
	c.durability = SIPC_DURABLE_GROUP;
	c.group_commit_ms = 60000;
	if (sipc_create(&c, NULL, 0, &s) < 0 ||
	    sipc_wait_ready(s, 1, WAIT_MS) < 0 || sipc_call(s, &req, &r) < 0)
		return 100;
	if (r.outcome == SIPC_OUTCOME_REJECTED && r.error == SIPC_E_JOURNAL)
		ret |= 1;
	sipc_result_release(&r);
	if (st_worker_stats(s, 0).frames_out == 0)
		ret |= 2;
	sipc_destroy(s);
	return ret;
}

/* durability = group: the sync a frame waits for fails (EIO).  The frame
 * does not go out: the request ends REJECTED / SIPC_E_JOURNAL (it never
 * ran), and the journal is broken as after any failed sync.  Before,
 * the frame went out at once and the request ran. */
/* rules: J9 */
static void
test_powercut_group_sync_failed_not_sent(void)
{
	char dir[] = "/tmp/sipc-powercut-sync-XXXXXX";
	struct sync_seen ss = { 0 };
	int rc;

	if (!sf_supported()) {
		tl_skip("seccomp user notification is not available here");
		return;
	}
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	rc = sf_broker(__NR_fdatasync, judge_fdatasync, &ss, sizeof(ss),
	    sync_fail_body, dir);
	if (rc != 3)
		fprintf(stderr, "group sync failed: body status %d, %d journal "
		    "syncs, %d failed\n", rc, ss.journal_syncs, ss.failed);
	CU_ASSERT_EQUAL(rc, 3);
	CU_ASSERT(ss.failed >= 1);
	rm_dir(dir);
}

int
main(void)
{
	tl_suite("powercut", (tl_test[]){
	    { "test_powercut_group_never_sent_is_true",
	      test_powercut_group_never_sent_is_true },
	    { "test_powercut_each_never_sent_is_true",
	      test_powercut_each_never_sent_is_true },
	    { "test_powercut_off_never_sent_is_true",
	      test_powercut_off_never_sent_is_true },
	    { "test_powercut_group_sync_failed_not_sent",
	      test_powercut_group_sync_failed_not_sent },
	    { NULL, NULL } });
	return tl_run();
}
