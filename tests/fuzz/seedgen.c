/*
 * seedgen.c - writes the fuzz seed corpora (tests/fuzz/corpus/<target>/)
 * with the library's own encoders, so the seeds are valid inputs of the
 * current formats.  Run by `make fuzz-seeds`; its output is committed.
 *
 * Usage: seedgen CORPUS_DIR
 *
 * Single-threaded; uses a scratch state directory under /tmp for the
 * journal seeds (the journal API writes them; the files are copied out
 * while the journal is still open, as a crash would leave them).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/rmtree.h"
#include "wire/wire.h"
#include "os/os.h"
#include "journal/journal.h"
#include "sipc.h"

static const char *corpus;

static void
put_file(const char *target, const char *name, const void *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", corpus, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", corpus, target, name);
	if ((f = fopen(path, "wbe")) == NULL ||
	    fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* ------------------------------------------------------------ frames */

/* Append a frame to buf at *off. */
static void
frame(uint8_t *buf, size_t *off, uint8_t type, uint64_t id,
    const void *payload, uint32_t len)
{
	struct sipc_frame_hdr h = { .type = type, .id = id, .len = len };

	sipc__frame_encode_hdr(buf + *off, &h);
	memcpy(buf + *off + SIPC_FRAME_HDR_LEN, payload, len);
	*off += SIPC_FRAME_HDR_LEN + len;
}

/* Frame seeds: u32 max_payload selector, u32 split seed, stream. */
static void
frame_seed(const char *name, uint32_t sel, uint32_t seed,
    const uint8_t *stream, size_t len)
{
	uint8_t buf[8192];

	memcpy(buf, &sel, 4);
	memcpy(buf + 4, &seed, 4);
	memcpy(buf + 8, stream, len);
	put_file("fuzz_frame", name, buf, 8 + len);
}

static void
frames(void)
{
	struct sipc_hello hello = { SIPC_PROTOCOL_VERSION, 1234,
	    SIPC_HELLO_F_ACCEPTS, 16 };
	uint8_t s[4096], hb[SIPC_HELLO_LEN], all[256];
	size_t n = 0;

	for (unsigned i = 0; i < sizeof(all); i++)
		all[i] = (uint8_t)i;
	sipc__hello_encode(hb, &hello);
	frame(s, &n, SIPC_FT_HELLO, 0, hb, sizeof(hb));
	frame_seed("hello", 4096, 1, s, n);
	/* A conversation: hello, accept, replies (one with \n and \0). */
	frame(s, &n, SIPC_FT_ACCEPT, 1, NULL, 0);
	frame(s, &n, SIPC_FT_REPLY, 1, "line1\nline2\0tail", 16);
	frame(s, &n, SIPC_FT_ERROR, 2, "\x16\0\0\0unknown command", 19);
	frame(s, &n, SIPC_FT_HEARTBEAT, 0, NULL, 0);
	frame(s, &n, SIPC_FT_REPLY, 3, all, sizeof(all));
	frame_seed("conversation", 4096, 7, s, n);
	n = 0;
	frame(s, &n, SIPC_FT_REQUEST, 9, "payload", 7);
	frame(s, &n, SIPC_FT_CANCEL, 9, NULL, 0);
	frame(s, &n, SIPC_FT_SHUTDOWN, 0, NULL, 0);
	frame_seed("supervisor-side", 64, 3, s, n);
	/* Over the maximum: rejected before allocating. */
	n = 0;
	frame(s, &n, SIPC_FT_REPLY, 4, all, 200);
	frame_seed("toobig", 100, 5, s, n);
	/* Bad checksum: one header bit flipped. */
	s[10] ^= 1;
	frame_seed("badcheck", 4096, 5, s, n);
	/* Truncated: the frame ends early. */
	n = 0;
	frame(s, &n, SIPC_FT_REPLY, 5, all, 100);
	frame_seed("truncated", 4096, 11, s, n - 37);
}

/* ------------------------------------------------------------ config */

static void
configs(void)
{
	static const char full[] =
	    "# a development pool\n"
	    "environment = development\n"
	    "provider = local\n"
	    "path = /usr/libexec/worker\n"
	    "argv = worker --mode fast\n"
	    "env_allow = LANG, TZ\n"
	    "env_set = MODE=soak\n"
	    "env_set = EMPTY=\n"
	    "workers = 4\n"
	    "max_inflight = 16\n"
	    "max_payload = 1048576\n"
	    "ring_frames = 256\n"
	    "ring_bytes = 67108864\n"
	    "mem_ceiling = 268435456\n"
	    "diag_line_max = 1024\n"
	    "diag_tail_bytes = 4096\n"
	    "handshake_ms = 5000\n"
	    "grace_ms = 5000\n"
	    "drain_ms = 5000\n"
	    "stall_ms = 10000\n"
	    "cancel_grace_ms = 2000\n"
	    "idempotent_retries = 2\n"
	    "restart_base_ms = 100\n"
	    "restart_cap_ms = 30000\n"
	    "restart_reset_ms = 10000\n"
	    "restart_intensity = 5\n"
	    "restart_window_ms = 10000\n"
	    "pool_restart_budget = 20\n"
	    "cooldown_ms = 30000\n"
	    "owner = true\n"
	    "worker_nproc_limit = 64\n"
	    "state_dir = /var/lib/sipc\n"
	    "durability = group\n"
	    "group_commit_ms = 10\n";
	static const char prod[] =
	    "environment = production\n"
	    "required_guarantees = pid_namespace, mount_namespace, "
	    "network_isolation\n"
	    "path = ./worker\n";
	static const char bad[] =
	    "environment = test\n"
	    "workers = 0x10\n"
	    "no_such_key = 1\n";
	static const char env[] =
	    "SIPC_ENVIRONMENT=test\n"
	    "SIPC_PATH=./echo\n"
	    "SIPC_WORKERS=3\n"
	    "SIPC_STALL_MS=1000\n"
	    "SIPC_ENV_SET=A=b\n";

	put_file("fuzz_config", "full", full, sizeof(full) - 1);
	put_file("fuzz_config", "production", prod, sizeof(prod) - 1);
	put_file("fuzz_config", "bad", bad, sizeof(bad) - 1);
	put_file("fuzz_config", "env", env, sizeof(env) - 1);
	put_file("fuzz_config", "empty", "", 0);
}

/* ------------------------------------------------------------ journal */

/* Copy from/name to to/name (no shell). */
static void
copy_file(const char *from, const char *to, const char *name)
{
	char src[512], dst[512], buf[1 << 16];
	ssize_t n;
	int in, out;

	snprintf(src, sizeof(src), "%s/%s", from, name);
	snprintf(dst, sizeof(dst), "%s/%s", to, name);
	if ((in = open(src, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) < 0) {
		perror(name);
		exit(1);
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			exit(1);
	close(in);
	close(out);
}

static void
copy_journal(const char *dir, const char *name, size_t cut_tail, long flip)
{
	static uint8_t buf[1 << 16];
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/journal", dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (n = read(fd, buf, sizeof(buf))) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
	if ((size_t)n > cut_tail)
		n -= (ssize_t)cut_tail;
	if (flip >= 0 && flip < n)
		buf[flip] ^= 0x40;
	put_file("fuzz_journal", name, buf, (size_t)n);
}

static void
journal_activity(struct sipc__journal *j, uint64_t base)
{
	struct sipc__ident k = { .pid = 4242, .pgid = 4242, .starttime = 99 };
	struct sipc__jowner w = { .provider = "local", .slot = 0,
	    .generation = 1 };

	memset(k.boot_id, 'b', SIPC__BOOT_ID_LEN);
	sipc__ident_to_id(&k, &w.id);
	(void)sipc__journal_worker(j, &w);
	(void)sipc__journal_accepted(j, base + 1, "key-1", "abc", 3, 0);
	(void)sipc__journal_accepted(j, base + 2, NULL, "defg", 4, 1234567);
	(void)sipc__journal_accepted(j, base + 3, "key-3", "", 0, 0);
	(void)sipc__journal_written(j, base + 1, 0, 1, 4242);
	(void)sipc__journal_written(j, base + 2, 0, 1, 4242);
	(void)sipc__journal_completed(j, base + 1, SIPC_OUTCOME_OK, 0);
	sipc__journal_delivered(j, base + 1);
	(void)sipc__journal_completed(j, base + 2, SIPC_OUTCOME_UNKNOWN,
	    SIPC_E_WORKER_DIED);
}

static void
journals(void)
{
	char a[] = "/tmp/sipc-seedgen-XXXXXX", b[64];
	struct sipc__journal *j = NULL, *k = NULL;
	struct sipc_unresolved *u = NULL;
	size_t nu = 0;
	char err[256];

	if (mkdtemp(a) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(b, sizeof(b), "%s/second", a);
	if (sipc__journal_open(a, SIPC_DURABLE_OFF, 0, &j, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "seedgen: journal: %s\n", err);
		exit(1);
	}
	journal_activity(j, 0);
	copy_journal(a, "one-instance", 0, -1);
	copy_journal(a, "torn-tail", 7, -1);
	copy_journal(a, "corrupt-middle", 0, 60);
	/* A second instance reading the first one's journal. */
	mkdir(b, 0700);
	copy_file(a, b, "journal");
	if (sipc__journal_open(b, SIPC_DURABLE_OFF, 0, &k, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "seedgen: journal: %s\n", err);
		exit(1);
	}
	journal_activity(k, 100);
	if (sipc__journal_unresolved(k, &u, &nu) == 0 && nu > 0)
		(void)sipc__journal_resolve(k, u[0].instance, u[0].request_id);
	free(u);
	(void)sipc__journal_worker_gone(k, 0, 1);
	copy_journal(b, "two-instances", 0, -1);
	sipc__journal_close(k);
	copy_journal(b, "compacted", 0, -1);
	sipc__journal_close(j);
	(void)rmtree(a);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seedgen CORPUS_DIR\n");
		return 2;
	}
	corpus = argv[1];
	mkdir(corpus, 0755);
	frames();
	configs();
	journals();
	return 0;
}
