/*
 * provider/probe.c - the start-up probes: a provider's declared guarantees
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
 * sweep) are in provider/probe_judge.c, shared with the provider conformance
 * suite (provider/provider.h).
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

#include "base/base.h"
#include "wire/wire.h"
#include "provider/provider.h"

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
	const char *scratch;         /* the launch's scratch directory */
};

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
		    "new session (%s)", sipc__probe_reply_err(t));
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
	SIPC_G_NO_PRIVILEGE, SIPC_G_FILESYSTEM_RULES,
	SIPC_G_SYSCALL_FILTER, SIPC_G_LIMITS, SIPC_G_TREE_CONTAINMENT,
};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))

static int
probe_one(struct run *r, unsigned bit, char *why, size_t len)
{
	struct sipc__judge j = { .ask = run_ask, .ctx = r, .b = &r->b,
	    .envp = r->envp, .pid = r->ch.display_pid, .scratch = r->scratch };
	struct sipc__sbx_policy pol;

	/* the values the sandbox's launch sets (provider/sandbox_argv.c) */
	sipc__sbx_policy_from_config(r->cfg, &pol);
	j.limits = pol.limits;
	j.tmp_size = pol.tmp_size;
	j.allow = r->cfg->syscalls_allow;

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
	    .contain = r->cfg->containment, .init_path = r->cfg->init_path,
	    .scratch_dir = r->scratch };
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
                     const char *scratch_dir, char *errbuf, size_t errlen)
{
	static char *const no_env[] = { NULL };
	char scratch_env[1100], *scr_env[] = { scratch_env, NULL };
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
	if (scratch_dir != NULL) {
		snprintf(scratch_env, sizeof(scratch_env), "SIPC_SCRATCH=%s",
		    scratch_dir);
		r.envp = scr_env;
		r.scratch = scratch_dir;
	}
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
