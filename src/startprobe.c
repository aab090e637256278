/*
 * startprobe.c - the start-up probes: a provider's declared guarantees
 * are believed only once the worker half (sipc-probe, launched once
 * through the provider like any worker) failed to reach what the host
 * set up for it.  The host knows the truth of each bait, so the host
 * judges; the probe only reports what it got.  Per guarantee (CONTRACT
 * PV4): no host pid signallable or in its /proc; no reading a file the
 * host made; no connect to the host's 127.0.0.1 port nor abstract
 * socket; neither the host's secret descriptor nor a host NAME=VALUE
 * the launch did not carry; a uid outside that is not the host's; a
 * fork past the configured pids limit refused; and, after a forced stop
 * and sweep, no process the worker put in a new session left holding
 * the channel.
 * Everything runs within one deadline; what the host made is removed
 * before returning, and the probe is always released.  The bait and the
 * judges (all but tree containment's, which needs the run's stop and
 * sweep) are the provider conformance suite's too: startprobe.h.
 *
 * Threads: sipc_create()'s, before the reaper starts.  No locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "frame.h"
#include "startprobe.h"

#ifndef SIPC_LIBEXECDIR
#define SIPC_LIBEXECDIR "/usr/local/libexec/sipc"
#endif

#define PROBE_NAME "sipc-probe"
/* Of SIPC__PROBE_SLACK_MS: the requests get ASK_SLACK_MS beyond the
 * handshake, the end after the forced stop grace_ms and the rest (the
 * channel's hang-up after sweep included). */
#define ASK_SLACK_MS 2000
#define END_SLACK_MS (SIPC__PROBE_SLACK_MS - ASK_SLACK_MS)

extern char **environ;

struct run {
	const struct sipc_provider_ops *p;
	const struct sipc_config *cfg;
	void *state;                 /* the provider's, for launch */
	void *handle;
	struct sipc_provider_chan ch;
	struct sipc_decoder dec;
	int64_t deadline;
	uint64_t next_id;
	struct sipc__bait b;
	char *const *envp;
};

/* ------------------------------------------------------------ the bait */

static int
bait_file(struct sipc__bait *b)
{
	const char *tmp = getenv("TMPDIR");
	unsigned char rnd[12];
	int fd, r = 0;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	snprintf(b->token, sizeof(b->token), "sipc-probe-");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(b->token + strlen(b->token), 3, "%02x", rnd[i]);
	/* $TMPDIR unless the socket's path would not fit a sockaddr_un */
	if (tmp == NULL || *tmp != '/' || strlen(tmp) + strlen(b->token) +
	    sizeof("/-XXXXXX/sock") > sizeof(((struct sockaddr_un *)0)->sun_path))
		tmp = "/tmp";
	snprintf(b->dir, sizeof(b->dir), "%s/%s-XXXXXX", tmp, b->token);
	if (mkdtemp(b->dir) == NULL) {
		b->dir[0] = '\0';
		return -errno;
	}
	snprintf(b->file, sizeof(b->file), "%s/secret", b->dir);
	snprintf(b->sock, sizeof(b->sock), "%s/sock", b->dir);
	/* Readable by anyone who can see it: only the worker's view of
	 * the filesystem may keep it out. */
	if (chmod(b->dir, 0755) < 0 ||
	    (fd = open(b->file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0644)) < 0)
		return -errno;
	if (fchmod(fd, 0644) < 0 ||
	    write(fd, b->token, strlen(b->token)) != (ssize_t)strlen(b->token))
		r = -EIO;
	close(fd);
	return r;
}

void
sipc__bait_drop(struct sipc__bait *b)
{
	if (b->secret_fd >= 0)
		close(b->secret_fd);
	if (b->tcp_fd >= 0)
		close(b->tcp_fd);
	if (b->abs_fd >= 0)
		close(b->abs_fd);
	if (b->unix_fd >= 0)
		close(b->unix_fd);
	b->secret_fd = b->tcp_fd = b->abs_fd = b->unix_fd = -1;
	if (b->file[0] != '\0')
		(void)unlink(b->file);
	if (b->sock[0] != '\0')
		(void)unlink(b->sock);
	if (b->dir[0] != '\0')
		(void)rmdir(b->dir);
	b->file[0] = b->sock[0] = b->dir[0] = '\0';
}

static int
listen_on(int fd, const struct sockaddr *sa, socklen_t len)
{
	int e;

	if (fd < 0)
		return -errno;
	if (bind(fd, sa, len) == 0 && listen(fd, 4) == 0)
		return fd;
	e = errno;
	close(fd);
	return -e;
}

/* 127.0.0.1:<kernel's choice>, the abstract name of the token, and a
 * socket in the bait's directory (0777: only the worker's view of the
 * filesystem may keep it out). */
static int
bait_listen(struct sipc__bait *b)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_un sun = { .sun_family = AF_UNIX },
	    sup = { .sun_family = AF_UNIX };
	socklen_t sl = sizeof(sin);
	size_t n = strlen(b->token);

	memcpy(sup.sun_path, b->sock, strlen(b->sock));  /* fits: bait_file */
	if ((b->unix_fd = listen_on(socket(AF_UNIX, SOCK_STREAM |
	    SOCK_CLOEXEC, 0), (struct sockaddr *)&sup, sizeof(sup))) < 0)
		return b->unix_fd;
	if (chmod(b->sock, 0777) < 0)
		return -errno;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((b->tcp_fd = listen_on(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
	    0), (struct sockaddr *)&sin, sizeof(sin))) < 0)
		return b->tcp_fd;
	if (getsockname(b->tcp_fd, (struct sockaddr *)&sin, &sl) < 0)
		return -errno;
	b->port = ntohs(sin.sin_port);
	memcpy(sun.sun_path + 1, b->token, n);
	return (b->abs_fd = listen_on(socket(AF_UNIX, SOCK_STREAM |
	    SOCK_CLOEXEC, 0), (struct sockaddr *)&sun,
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)));
}

int
sipc__bait_make(struct sipc__bait *b)
{
	int rc;

	memset(b, 0, sizeof(*b));
	b->secret_fd = b->tcp_fd = b->abs_fd = b->unix_fd = -1;
	if ((rc = bait_file(b)) < 0 || (rc = bait_listen(b)) < 0)
		goto fail;
	/* No O_CLOEXEC: the bait a launch must not pass on. */
	if ((b->secret_fd = open(b->file, O_RDONLY)) < 0) {
		rc = -errno;
		goto fail;
	}
	return 0;
fail:
	sipc__bait_drop(b);
	return rc;
}

/* ------------------------------------------------------- the judges */

/* "errno=E" of a reply as text. */
static const char *
reply_err(const char *text)
{
	const char *e = strstr(text, "errno=");

	return e != NULL ? strerror(atoi(e + 6)) : "no error given";
}

/* A reply of the probe's grammar starts "key=0" or "key=1". */
static bool
reply_is(const char *text, const char *key)
{
	size_t n = strlen(key);

	return strncmp(text, key, n) == 0 && text[n] == '=' &&
	    (text[n + 1] == '0' || text[n + 1] == '1');
}

/* Neither signallable (ESRCH) nor in the worker's /proc: a /proc that
 * is the host's shows every host pid even to a PID namespace. */
static int
judge_pid(const struct sipc__judge *j, char *why, size_t len)
{
	char req[64], tk[128], tp[512];
	long pid = (long)getpid();
	bool gone, hidden;
	int rc;

	snprintf(req, sizeof(req), "kill %ld", pid);
	if ((rc = j->ask(j->ctx, req, tk, sizeof(tk))) < 0)
		return rc;
	snprintf(req, sizeof(req), "read /proc/%ld/stat", pid);
	if ((rc = j->ask(j->ctx, req, tp, sizeof(tp))) < 0)
		return rc;
	if (!reply_is(tk, "kill") || !reply_is(tp, "read"))
		return SIPC_E_PROTOCOL;
	gone = strcmp(tk, "kill=0 errno=3") == 0;        /* ESRCH */
	hidden = tp[5] == '0';
	if (gone && hidden) {
		snprintf(why, len, "host pid %ld: no such process from the "
		    "worker, none in its /proc", pid);
		return 1;
	}
	if (!gone)
		snprintf(why, len, "the worker %s host pid %ld (kill: %s): it "
		    "is visible", tk[5] == '1' ? "can signal" : "sees", pid,
		    tk[5] == '1' ? "allowed" : reply_err(tk));
	else
		snprintf(why, len, "host pid %ld is visible in the "
		    "worker's /proc (kill: %s)", pid, reply_err(tk));
	return 0;
}

static int
judge_mount(const struct sipc__judge *j, char *why, size_t len)
{
	char req[320], t[512];
	int rc;

	snprintf(req, sizeof(req), "read %s", j->b->file);
	if ((rc = j->ask(j->ctx, req, t, sizeof(t))) < 0)
		return rc;
	if (!reply_is(t, "read"))
		return SIPC_E_PROTOCOL;
	if (t[5] == '1' && strstr(t, j->b->token) != NULL) {
		snprintf(why, len, "the worker read the host's file %s",
		    j->b->file);
		return 0;
	}
	snprintf(why, len, "the host's file %s: %s from the worker",
	    j->b->file, t[5] == '0' ? reply_err(t) : "other content");
	return 1;
}

/* The host's loopback port, abstract socket and socket path: none may
 * be reached (a path is reached through the filesystem, so a network
 * namespace alone does not keep it out). */
static int
judge_net(const struct sipc__judge *j, char *why, size_t len)
{
	char req[3][320], what[3][320], t[128];
	bool reached = false;
	size_t off = 0;
	int rc;

	snprintf(req[0], sizeof(req[0]), "tcp %d", j->b->port);
	snprintf(what[0], sizeof(what[0]), "127.0.0.1:%d", j->b->port);
	snprintf(req[1], sizeof(req[1]), "abstract %s", j->b->token);
	snprintf(what[1], sizeof(what[1]), "abstract socket");
	snprintf(req[2], sizeof(req[2]), "unix %s", j->b->sock);
	snprintf(what[2], sizeof(what[2]), "unix socket %s", j->b->sock);
	for (size_t i = 0; i < 3; i++) {
		if ((rc = j->ask(j->ctx, req[i], t, sizeof(t))) < 0)
			return rc;
		if (!reply_is(t, "connect"))
			return SIPC_E_PROTOCOL;
		reached |= t[8] == '1';
		if (off < len)
			off += (size_t)snprintf(why + off, len - off,
			    "%shost %s: %s", i > 0 ? "; " : "", what[i],
			    t[8] == '1' ? "the worker connected" : reply_err(t));
	}
	return !reached;
}

static bool
in_list(char *const *list, const char *s)
{
	for (; list != NULL && *list != NULL; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

/* First line of the worker's environment that is the host's own (same
 * NAME=VALUE) and was not in the launch; its name in `name`. */
static bool
env_leak(char *const *envp, char *env, char *name, size_t len)
{
	char *save = NULL, *line;

	for (line = strtok_r(env, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (in_list(environ, line) && !in_list(envp, line)) {
			snprintf(name, len, "%.*s", (int)strcspn(line, "="),
			    line);
			return true;
		}
	return false;
}

int
sipc__judge_fds(const struct sipc__judge *j, char *why, size_t len)
{
	char req[80], t[256];
	const char *leaks;
	int rc;

	snprintf(req, sizeof(req), "fds %s", j->b->token);
	if ((rc = j->ask(j->ctx, req, t, sizeof(t))) < 0)
		return rc;
	if ((leaks = strstr(t, "leaks=")) == NULL)
		return SIPC_E_PROTOCOL;
	if (leaks[6] != '\0') {
		snprintf(why, len, "the host's descriptor to a secret file "
		    "reached the worker (its fd %s)", leaks + 6);
		return 0;
	}
	snprintf(why, len, "no host descriptor in the worker");
	return 1;
}

int
sipc__judge_env(const struct sipc__judge *j, char *why, size_t len)
{
	char name[64], *env;
	int rc;

	if ((env = malloc(SIPC__PROBE_REPLY_MAX)) == NULL)
		return -ENOMEM;
	if ((rc = j->ask(j->ctx, "environ", env, SIPC__PROBE_REPLY_MAX)) == 0 &&
	    env_leak(j->envp, env, name, sizeof(name))) {
		snprintf(why, len, "the host's environment variable %s "
		    "reached the worker", name);
	} else if (rc == 0) {
		snprintf(why, len, "no host environment variable in the "
		    "worker");
		rc = 1;
	}
	free(env);
	return rc;
}

static int
judge_secrets(const struct sipc__judge *j, char *why, size_t len)
{
	int rc;

	if ((rc = sipc__judge_fds(j, why, len)) != 1)
		return rc;
	if ((rc = sipc__judge_env(j, why, len)) == 1)
		snprintf(why, len, "no host descriptor, no host environment "
		    "variable in the worker");
	return rc;
}

static int
judge_user(const struct sipc__judge *j, char *why, size_t len)
{
	unsigned long uid, in, out, count, outside;
	unsigned long host = (unsigned long)geteuid();
	char t[128];
	int rc;

	if ((rc = j->ask(j->ctx, "uid", t, sizeof(t))) < 0)
		return rc;
	if (strncmp(t, "uid=", 4) != 0)
		return SIPC_E_PROTOCOL;
	if (sscanf(t, "uid=%lu map=%lu %lu %lu", &uid, &in, &out,
	    &count) != 4) {
		snprintf(why, len, "the worker's uid map cannot be read (%s)",
		    t);
		return 0;
	}
	outside = out + (uid - in);
	snprintf(why, len, "the worker's uid %lu is uid %lu outside; the "
	    "host runs as uid %lu", uid, outside, host);
	return outside != host;
}

static int
judge_limits(const struct sipc__judge *j, char *why, size_t len)
{
	unsigned lim = j->fork_limit;
	int forked = 0, err = 0, rc;
	char req[32], t[128];

	if (lim == 0 || lim > SIPC__FORK_PROBE_MAX)
		return -EINVAL;
	snprintf(req, sizeof(req), "forks %u", lim + 1);
	if ((rc = j->ask(j->ctx, req, t, sizeof(t))) < 0)
		return rc;
	if (sscanf(t, "forked=%d errno=%d", &forked, &err) != 2)
		return SIPC_E_PROTOCOL;
	rc = forked <= (int)lim && err == EAGAIN;
	snprintf(why, len, "the worker forked %d of %u children (%s)%s",
	    forked, lim + 1, err ? strerror(err) : "no refusal",
	    rc ? "" : ": no pids limit held it");
	return rc;
}

typedef int (*judge_fn)(const struct sipc__judge *j, char *why, size_t len);

static const struct {
	unsigned bit;
	judge_fn fn;
} judges[] = {
	{ SIPC_G_PID_NAMESPACE, judge_pid },
	{ SIPC_G_MOUNT_NAMESPACE, judge_mount },
	{ SIPC_G_NETWORK_ISOLATION, judge_net },
	{ SIPC_G_NO_INHERITED_SECRETS, judge_secrets },
	{ SIPC_G_SEPARATE_USER, judge_user },
	{ SIPC_G_RESOURCE_LIMITS, judge_limits },
};

int
sipc__judge(unsigned bit, const struct sipc__judge *j, char *why,
            size_t len)
{
	for (size_t i = 0; i < sizeof(judges) / sizeof(judges[0]); i++)
		if (judges[i].bit == bit)
			return judges[i].fn(j, why, len);
	return -EINVAL;
}

/* ------------------------------------------------------- the channel */

static int
remaining(const struct run *r)
{
	int64_t left = r->deadline - sipc__now_ms();

	return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Worker output is only drained, so the probe never blocks on it. */
static void
diag_drain(struct run *r)
{
	char buf[4096];

	while (r->ch.diag_fd >= 0 && read(r->ch.diag_fd, buf, sizeof(buf)) > 0)
		;
}

/* Wait for `ev` on the channel before the deadline: 1 ready, 0 timed
 * out. */
static int
chan_wait(struct run *r, short ev)
{
	struct pollfd pf[2] = { { .fd = r->ch.proto_fd, .events = ev },
	    { .fd = r->ch.diag_fd, .events = POLLIN } };
	int n;

	for (;;) {
		if ((n = poll(pf, 2, remaining(r))) < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 || pf[0].revents)
			return n > 0;
		diag_drain(r);
		/* a diagnostics pipe at its end polls readable for good */
		if (pf[1].revents & (POLLHUP | POLLERR))
			pf[1].fd = -1;
	}
}

static int
send_all(struct run *r, const uint8_t *p, size_t len)
{
	ssize_t n;
	int w;

	while (len > 0) {
		if ((n = write(r->ch.proto_fd, p, len)) > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if ((w = chan_wait(r, POLLOUT)) <= 0)
			return w < 0 ? w : -ETIMEDOUT;
	}
	return 0;
}

/* The next frame from the probe (payload the caller's).  Header bytes
 * are read one at a time and a payload straight into its buffer, so a
 * read never takes bytes of the next frame: nothing is carried over. */
static int
recv_frame(struct run *r, struct sipc_frame *f)
{
	bool done = false;
	uint8_t byte, *dst;
	size_t need;
	ssize_t n;
	long used;
	int w;

	for (;;) {
		need = sipc__decoder_direct(&r->dec, &dst);
		if ((n = read(r->ch.proto_fd, need ? dst : &byte,
		    need ? need : 1)) > 0) {
			if (need)
				sipc__decoder_direct_done(&r->dec, (size_t)n, f,
				    &done);
			else if ((used = sipc__decoder_feed(&r->dec, &byte, 1,
			    f, &done)) < 0)
				return (int)used;
			if (done)
				return 0;
			continue;
		}
		if (n == 0)
			return SIPC_E_WORKER_DIED;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if ((w = chan_wait(r, POLLIN)) <= 0)
			return w < 0 ? w : -ETIMEDOUT;
	}
}

static int
hello(struct run *r)
{
	struct sipc_hello h;
	struct sipc_frame f;
	int rc;

	if ((rc = recv_frame(r, &f)) < 0)
		return rc;
	rc = f.hdr.type == SIPC_FT_HELLO &&
	    sipc__hello_decode(f.payload, f.hdr.len, &h) == 0 ? 0 :
	    SIPC_E_HANDSHAKE;
	free(f.payload);
	return rc;
}

/* One request, its reply as text in out (NUL-terminated). */
static int
ask(struct run *r, const char *req, char *out, size_t cap)
{
	uint8_t msg[SIPC_FRAME_HDR_LEN + 512];
	struct sipc_frame_hdr h = { .type = SIPC_FT_REQUEST,
	    .id = ++r->next_id, .len = (uint32_t)strlen(req) };
	struct sipc_frame f;
	int rc;

	if (h.len > sizeof(msg) - SIPC_FRAME_HDR_LEN)
		return -E2BIG;
	sipc__frame_encode_hdr(msg, &h);
	memcpy(msg + SIPC_FRAME_HDR_LEN, req, h.len);
	if ((rc = send_all(r, msg, SIPC_FRAME_HDR_LEN + h.len)) < 0)
		return rc;
	for (;;) {
		if ((rc = recv_frame(r, &f)) < 0)
			return rc;
		if (f.hdr.id == h.id && (f.hdr.type == SIPC_FT_REPLY ||
		    f.hdr.type == SIPC_FT_ERROR))
			break;
		free(f.payload);        /* ACCEPT, HEARTBEAT */
	}
	rc = f.hdr.type == SIPC_FT_REPLY ? 0 : SIPC_E_PROTOCOL;
	snprintf(out, cap, "%.*s", (int)f.hdr.len, f.payload ?
	    (char *)f.payload : "");
	free(f.payload);
	return rc;
}

/* ------------------------------------------------------- the start-up run */

static int
run_ask(void *ctx, const char *req, char *out, size_t cap)
{
	return ask(ctx, req, out, cap);
}

/* Each returns 1 confirmed, 0 not (why says which either way), or a
 * negative error (no answer: not confirmed). */
static int
probe_limits(struct run *r, const struct sipc__judge *j, char *why,
             size_t len)
{
	unsigned lim = r->cfg->pids_max ? r->cfg->pids_max :
	    r->cfg->worker_nproc_limit;
	struct sipc__judge jl = *j;

	if (lim == 0 || lim > SIPC__FORK_PROBE_MAX) {
		snprintf(why, len, lim == 0 ? "no pids limit configured "
		    "(pids_max): nothing to prove" : "pids_max %u is above "
		    "what the probe tries (%d)", lim, SIPC__FORK_PROBE_MAX);
		return 0;
	}
	jl.fork_limit = lim;
	return sipc__judge(SIPC_G_RESOURCE_LIMITS, &jl, why, len);
}

/* The escapee is asked for here; the verdict comes after stop and
 * sweep (tree_verdict). */
static int
probe_tree(struct run *r, char *why, size_t len)
{
	char t[128];
	int rc;

	if ((rc = ask(r, "escape", t, sizeof(t))) < 0)
		return rc;
	if (strncmp(t, "escaped=", 8) != 0 || atoi(t + 8) <= 0) {
		snprintf(why, len, "the probe could not start a process in a "
		    "new session (%s)", reply_err(t));
		return 0;
	}
	snprintf(why, len, "a process the worker put in a new session");
	return 1;
}

/* The order of the run; tree last: its verdict needs the worker
 * stopped. */
static const unsigned probes[] = {
	SIPC_G_PID_NAMESPACE, SIPC_G_MOUNT_NAMESPACE,
	SIPC_G_NETWORK_ISOLATION, SIPC_G_NO_INHERITED_SECRETS,
	SIPC_G_SEPARATE_USER, SIPC_G_RESOURCE_LIMITS,
	SIPC_G_TREE_CONTAINMENT,
};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))

static int
probe_one(struct run *r, unsigned bit, char *why, size_t len)
{
	struct sipc__judge j = { .ask = run_ask, .ctx = r, .b = &r->b,
	    .envp = r->envp };

	if (bit == SIPC_G_TREE_CONTAINMENT)
		return probe_tree(r, why, len);
	if (bit == SIPC_G_RESOURCE_LIMITS)
		return probe_limits(r, &j, why, len);
	return sipc__judge(bit, &j, why, len);
}

/* Stop (forced), wait for the end within the deadline, sweep.  True
 * when the provider reported the end. */
static bool
stop_and_sweep(struct run *r)
{
	struct sipc_exit ex;
	struct pollfd pf = { .fd = r->ch.end_fd, .events = POLLIN };
	int e;

	(void)r->p->stop(r->handle, SIPC_STOP_FORCED);
	while ((e = r->p->try_end(r->handle, &ex)) != 1) {
		if (remaining(r) == 0)
			return false;
		diag_drain(r);
		/* no end descriptor: ask again every 5 ms */
		(void)poll(&pf, pf.fd >= 0 ? 1 : 0, pf.fd >= 0 ? 50 : 5);
	}
	if (r->p->sweep != NULL)
		(void)r->p->sweep(r->handle);
	return true;
}

/* After stop and sweep: the channel's far end must be closed by then
 * (every process that held it gone).  What the probe sent meanwhile is
 * read and dropped. */
static bool
tree_verdict(struct run *r, char *why, size_t len)
{
	int64_t end = r->deadline;
	char buf[4096];
	ssize_t n;

	for (;;) {
		struct pollfd pf = { .fd = r->ch.proto_fd, .events = POLLIN };
		int64_t left = end - sipc__now_ms();

		if ((n = read(r->ch.proto_fd, buf, sizeof(buf))) == 0 ||
		    (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
		if (n > 0)
			continue;
		if (left <= 0)
			break;
		(void)poll(&pf, 1, (int)left);
	}
	snprintf(why, len, "a process the worker put in a new session "
	    "outlived stop and sweep (it still holds the channel)");
	return false;
}

static void
resolve_path(const struct sipc_config *cfg, char *out, size_t len)
{
	const char *slash;

	if (cfg->probe_path != NULL)
		snprintf(out, len, "%s", cfg->probe_path);
	else if (cfg->init_path != NULL &&
	    (slash = strrchr(cfg->init_path, '/')) != NULL)
		snprintf(out, len, "%.*s/" PROBE_NAME,
		    (int)(slash - cfg->init_path), cfg->init_path);
	else
		snprintf(out, len, SIPC_LIBEXECDIR "/" PROBE_NAME);
}

/* errbuf: each guarantee of `missing` with its reason. */
static void
refusal(const char *prov, unsigned missing, char (*why)[256],
        const char *all_why, char *errbuf, size_t errlen)
{
	size_t off;
	unsigned i;

	off = (size_t)snprintf(errbuf, errlen, "provider \"%s\" refused: "
	    "guarantee(s) not proven by the start-up probe:", prov);
	for (i = 0; i < NPROBES && off < errlen; i++)
		if (missing & probes[i])
			off += (size_t)snprintf(errbuf + off, errlen - off,
			    " %s (%s);", sipc_guarantee_name(probes[i]),
			    all_why != NULL ? all_why : why[i][0] != '\0' ?
			    why[i] : "not probed: the deadline passed");
	if (off > 0 && off < errlen && errbuf[off - 1] == ';')
		errbuf[off - 1] = '\0';
}

/* Launch, hello, then each required probe; verdicts in *ok and why[].
 * An error return (nothing answered) is said in `what`.  r->handle is
 * set whenever something was launched. */
static int
run_probes(struct run *r, const char *path, unsigned required,
           unsigned *ok, char (*why)[256], char *what, size_t wlen)
{
	char *argv[] = { (char *)path, NULL };
	struct sipc_provider_launch l = { .path = path, .argv = argv,
	    .envp = r->envp, .worker_id = UINT32_MAX, .generation = 1,
	    .nproc_limit = r->cfg->worker_nproc_limit,
	    .contain = r->cfg->containment, .init_path = r->cfg->init_path };
	int eno = 0, rc;
	unsigned i;

	rc = r->p->launch(r->state, &l, &r->ch, &r->handle, &eno);
	/* The secret was there for the launch to leak; no longer needed. */
	close(r->b.secret_fd);
	r->b.secret_fd = -1;
	if (rc < 0) {
		r->handle = NULL;
		snprintf(what, wlen, "the probe %.300s did not start: %s", path,
		    rc == SIPC_E_EXEC ? strerror(eno) : sipc_strerror(rc));
		return rc;
	}
	/* PV2: outside development and test an end must be seen when it
	 * happens.  Said here, before any worker of the provider runs. */
	if (r->ch.end_fd < 0 && r->cfg->environment != SIPC_ENV_DEVELOPMENT &&
	    r->cfg->environment != SIPC_ENV_TEST) {
		snprintf(what, wlen, "the provider launched the probe without "
		    "an end descriptor (chan.end_fd -1)");
		return SIPC_E_PRODUCTION;
	}
	if (fcntl(r->ch.proto_fd, F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(r->ch.diag_fd, F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		snprintf(what, wlen, "the probe's channel: %s", strerror(-rc));
		return rc;
	}
	if ((rc = hello(r)) < 0) {
		snprintf(what, wlen, "the probe %.300s did not say hello: %s",
		    path, sipc_strerror(rc));
		return rc;
	}
	for (i = 0; i < NPROBES; i++) {
		if (!(required & probes[i]))
			continue;
		rc = probe_one(r, probes[i], why[i], sizeof(why[i]));
		if (rc == 1)
			*ok |= probes[i];
		else if (rc < 0)
			snprintf(why[i], sizeof(why[i]), "no answer from the "
			    "probe: %s", sipc_strerror(rc));
		if (rc == -ETIMEDOUT)
			break;          /* the deadline has passed */
	}
	return 0;
}

int
sipc__startprobe_run(const struct sipc_provider_ops *p, void *state,
                     const struct sipc_config *cfg, unsigned required,
                     char *errbuf, size_t errlen)
{
	static char *const no_env[] = { NULL };
	char path[1024], what[512] = "", why[NPROBES][256];
	struct run r = { .p = p, .state = state, .cfg = cfg,
	    .ch = { .proto_fd = -1, .diag_fd = -1, .end_fd = -1 },
	    .b = { .secret_fd = -1, .tcp_fd = -1, .abs_fd = -1,
	    .unix_fd = -1 },
	    .envp = no_env };
	unsigned ok = 0;
	int rc;

	if (required == 0)
		return 0;
	memset(why, 0, sizeof(why));
	r.deadline = sipc__now_ms() + cfg->handshake_ms + ASK_SLACK_MS;
	sipc__decoder_init(&r.dec, SIPC__PROBE_REPLY_MAX);
	resolve_path(cfg, path, sizeof(path));
	if (access(path, X_OK) < 0) {
		snprintf(what, sizeof(what), "probe program %.300s: %s", path,
		    strerror(errno));
		goto out;
	}
	if ((rc = sipc__bait_make(&r.b)) < 0) {
		snprintf(what, sizeof(what), "the host could not set up the "
		    "probes: %s", strerror(-rc));
		goto out;
	}
	(void)run_probes(&r, path, required, &ok, why, what, sizeof(what));
	if (r.handle != NULL) {
		r.deadline = sipc__now_ms() + cfg->grace_ms + END_SLACK_MS;
		if (!stop_and_sweep(&r)) {
			snprintf(what, sizeof(what), "the probe did not end "
			    "within the deadline after stop");
			ok = 0;
		} else if ((ok & SIPC_G_TREE_CONTAINMENT) &&
		    !tree_verdict(&r, why[NPROBES - 1], sizeof(why[0])))
			ok &= ~SIPC_G_TREE_CONTAINMENT;
		p->release(r.handle);
	}
out:
	if (r.ch.proto_fd >= 0)
		close(r.ch.proto_fd);
	if (r.ch.diag_fd >= 0)
		close(r.ch.diag_fd);
	sipc__decoder_free(&r.dec);
	sipc__bait_drop(&r.b);
	if ((required & ~ok) == 0)
		return 0;
	refusal(p->name, required & ~ok, why, what[0] ? what : NULL, errbuf,
	    errlen);
	return SIPC_E_PRODUCTION;
}
