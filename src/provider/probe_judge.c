/*
 * provider/probe_judge.c - the start-up probes' bait and judges (provider/provider.h):
 * what the host sets up before a probe is launched, and the verdict on
 * each guarantee from the probe's replies.  The host knows the truth of
 * each bait, so the host judges; the probe only reports what it got.
 * Used by the start-up run (provider/probe.c) and by the provider
 * conformance suite, so both judge every guarantee alike.
 *
 * Threads: the caller's; a bait is not shared.  No locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "provider/provider.h"
#include "os/os.h"

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

/* "errno=E" of a reply as text (provider/provider.h). */
const char *
sipc__probe_reply_err(const char *text)
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
		    tk[5] == '1' ? "allowed" : sipc__probe_reply_err(tk));
	else
		snprintf(why, len, "host pid %ld is visible in the "
		    "worker's /proc (kill: %s)", pid, sipc__probe_reply_err(tk));
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
	    j->b->file, t[5] == '0' ? sipc__probe_reply_err(t) : "other content");
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
			    t[8] == '1' ? "the worker connected" : sipc__probe_reply_err(t));
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

/* The worker's host ids, read by the host (a uid map read inside is
 * relative to the namespace's parent, and bwrap nests two).  Each judge
 * asks the probe something after this read: an answer means the probe
 * lived throughout, so its pid named it and nobody else. */
static int
host_ids(const struct sipc__judge *j, unsigned long ids[8], char *why,
         size_t len)
{
	int rc = sipc__proc_worker_ids(j->pid, ids);

	if (rc < 0)
		snprintf(why, len, "the worker's host ids cannot be read (pid "
		    "%d: %s)", (int)j->pid, strerror(-rc));
	return rc;
}

static int
judge_user(const struct sipc__judge *j, char *why, size_t len)
{
	unsigned long ids[8], host = (unsigned long)geteuid();
	char t[128];
	int rc;

	if (host_ids(j, ids, why, len) < 0)
		return 0;
	if ((rc = j->ask(j->ctx, "uid", t, sizeof(t))) < 0)
		return rc;
	snprintf(why, len, "the worker runs as host uid %lu; the host as uid "
	    "%lu", ids[1], host);
	return ids[0] != host && ids[1] != host && ids[2] != host &&
	    ids[3] != host;
}

/* Host uid and gid not 0 (all four of each), every capability set
 * empty, no_new_privs, a user namespace refused (by the kernel or the
 * filter). */
static int
judge_privilege(const struct sipc__judge *j, char *why, size_t len)
{
	char t[256], caps[5][24], nnp[8], ns[32];
	unsigned long ids[8];
	bool zero = true;
	int rc;

	if (host_ids(j, ids, why, len) < 0)
		return 0;
	for (int i = 0; i < 8; i++)
		if (ids[i] == 0) {
			snprintf(why, len, "the worker runs as host %s 0",
			    i < 4 ? "uid" : "gid");
			return 0;
		}
	if ((rc = j->ask(j->ctx, "privilege", t, sizeof(t))) < 0)
		return rc;
	if (sscanf(t, "caps=%23[^,],%23[^,],%23[^,],%23[^,],%23s nnp=%7s "
	    "userns=%31s", caps[0], caps[1], caps[2], caps[3], caps[4], nnp,
	    ns) != 7)
		return SIPC_E_PROTOCOL;
	for (int i = 0; i < 5; i++)
		zero = zero && strspn(caps[i], "0") == strlen(caps[i]);
	snprintf(why, len, "host uid %lu gid %lu; capabilities %s; "
	    "no_new_privs %s; a new user namespace: %s", ids[1], ids[5],
	    zero ? "none" : "held", nnp, ns);
	return zero && strcmp(nnp, "1") == 0 && strcmp(ns, "made") != 0;
}

/* "write PATH" asked: 1 created, 0 refused, or an error. */
static int
ask_write(const struct sipc__judge *j, const char *path)
{
	char req[1100], t[64];
	int rc;

	snprintf(req, sizeof(req), "write %s", path);
	if ((rc = j->ask(j->ctx, req, t, sizeof(t))) < 0)
		return rc;
	if (strncmp(t, "write=", 6) != 0)
		return SIPC_E_PROTOCOL;
	return strcmp(t, "write=1") == 0;
}

/* Writes to "/" and /etc of the worker's view, which its mount view
 * allows (bwrap's root is a tmpfs the worker's uid owns), refused;
 * writes to /tmp and the launch's scratch directory still made (rules
 * that refuse everything would fail every worker). */
static int
judge_fsrules(const struct sipc__judge *j, char *why, size_t len)
{
	static const char *const where[] = { "/sipc-probe-w", "/etc/sipc-probe-w" };
	char scr[1060];
	int rc;

	for (size_t i = 0; i < 2; i++) {
		if ((rc = ask_write(j, where[i])) != 0) {
			if (rc == 1)
				snprintf(why, len, "the worker could create %s: "
				    "no filesystem rules held it", where[i]);
			return rc == 1 ? 0 : rc;
		}
	}
	snprintf(scr, sizeof(scr), "%s/sipc-probe-w", j->scratch ? j->scratch :
	    "");
	if ((rc = ask_write(j, "/tmp/sipc-probe-w")) != 1 ||
	    (j->scratch != NULL && (rc = ask_write(j, scr)) != 1)) {
		if (rc == 0)
			snprintf(why, len, "the worker could not write in /tmp "
			    "or its scratch directory");
		return rc;
	}
	snprintf(why, len, "writes to / and /etc refused, to /tmp%s made",
	    j->scratch ? " and the scratch directory" : "");
	return 1;
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

/* Is name one of the comma-separated list? */
static bool
allowed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p != NULL && *p != '\0';
	    p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	}
	return false;
}

/* Seccomp 2 with a filter more than the host's own (which the worker
 * inherits), and the default profile's namespace calls refused with
 * EPERM, the filter's: bubblewrap's --disable-userns alone gives
 * ENOSPC (EUSERS before Linux 4.9). */
static int
judge_filter(const struct sipc__judge *j, char *why, size_t len)
{
	char t[256], mode[16], count[16], un[32], cl[32];
	unsigned host = sipc__sbx_host_filters();
	int rc;

	if ((rc = j->ask(j->ctx, "filter", t, sizeof(t))) < 0)
		return rc;
	if (sscanf(t, "seccomp=%15s filters=%15s unshare=%31s clone=%31s",
	    mode, count, un, cl) != 4)
		return SIPC_E_PROTOCOL;
	snprintf(why, len, "Seccomp %s, %s filter(s), the host's %u; "
	    "unshare(CLONE_NEWUSER): %s, clone(CLONE_NEWUSER): %s (the "
	    "filter's refusal: errno=%d)", mode, count, host, un, cl, EPERM);
	return strcmp(mode, "2") == 0 && atoi(count) > (int)host &&
	    (strcmp(un, "errno=1") == 0 || allowed(j->allow, "unshare")) &&
	    strcmp(cl, "errno=1") == 0;
}

/* Field i (0..4) of a limits spec "A:B:C:D:E" into out. */
static bool
spec_field(const char *spec, int i, char *out, size_t cap)
{
	for (; i > 0 && spec != NULL; i--)
		if ((spec = strchr(spec, ':')) != NULL)
			spec++;
	if (spec == NULL || cap == 0)
		return false;
	snprintf(out, cap, "%.*s", (int)strcspn(spec, ":"), spec);
	return out[0] != '\0';
}

/* Each hard limit as the launch set it, soft = hard, NOFILE's not
 * raised, /tmp no larger than its cap (a tmpfs rounds up to pages),
 * and a fork loop stopped by RLIMIT_NPROC when the probe can reach it. */
static int
judge_rlimits(const struct sipc__judge *j, char *why, size_t len)
{
	static const char *const name[] = { "as", "fsize", "nofile", "cpu",
	    "nproc" };
	static const char *const upper[] = { "AS", "FSIZE", "NOFILE", "CPU",
	    "NPROC" };
	char t[512], want[24], got[56], key[16], req[32], raise[16], tmp[24];
	const char *p;
	long long nproc = 0;
	int forked = 0, err = 0, rc;

	if (j->limits == NULL || j->tmp_size == NULL)
		return -EINVAL;
	if ((rc = j->ask(j->ctx, "limits", t, sizeof(t))) < 0)
		return rc;
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "%s=", name[i]);
		if (!spec_field(j->limits, i, want, sizeof(want)) ||
		    (p = strstr(t, key)) == NULL ||
		    sscanf(p + strlen(key), "%55s", got) != 1)
			return SIPC_E_PROTOCOL;
		if (strncmp(got, want, strlen(want)) != 0 ||
		    got[strlen(want)] != ',' ||
		    strcmp(got + strlen(want) + 1, want) != 0) {
			snprintf(why, len, "RLIMIT_%s is %s (soft,hard) in the "
			    "worker; the launch sets %s", upper[i], got, want);
			return 0;
		}
	}
	if ((p = strstr(t, "raise=")) == NULL || sscanf(p, "raise=%15s", raise)
	    != 1 || (p = strstr(t, "tmp=")) == NULL ||
	    sscanf(p, "tmp=%23s", tmp) != 1)
		return SIPC_E_PROTOCOL;
	if (strcmp(raise, "0") == 0) {
		snprintf(why, len, "the worker raised its RLIMIT_NOFILE");
		return 0;
	}
	if (j->tmp_size[0] != '\0' && (strcmp(tmp, "-") == 0 ||
	    strtoull(tmp, NULL, 10) == 0 || strtoull(tmp, NULL, 10) >
	    (strtoull(j->tmp_size, NULL, 10) + 4095) / 4096 * 4096)) {
		snprintf(why, len, "the worker's /tmp holds %s bytes; its cap "
		    "is %s", tmp, j->tmp_size);
		return 0;
	}
	spec_field(j->limits, 4, want, sizeof(want));
	nproc = strcmp(want, "-") == 0 ? 0 : atoll(want);
	if (nproc < 1 || nproc > SIPC__FORK_PROBE_MAX) {
		snprintf(why, len, "limits as the launch sets them (%s), not "
		    "raised, /tmp %s bytes; RLIMIT_NPROC %s not forked to",
		    j->limits, tmp, want);
		return 1;
	}
	snprintf(req, sizeof(req), "forks %lld", nproc + 1);
	if ((rc = j->ask(j->ctx, req, t, sizeof(t))) < 0)
		return rc;
	if (sscanf(t, "forked=%d errno=%d", &forked, &err) != 2)
		return SIPC_E_PROTOCOL;
	rc = forked <= nproc && err == EAGAIN;
	snprintf(why, len, "limits as the launch sets them (%s), not raised "
	    "(%s), /tmp %s bytes; %d of %lld forks, then %s", j->limits,
	    strerror(atoi(raise)), tmp, forked, nproc + 1,
	    err ? strerror(err) : "no refusal");
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
	{ SIPC_G_NO_PRIVILEGE, judge_privilege },
	{ SIPC_G_FILESYSTEM_RULES, judge_fsrules },
	{ SIPC_G_SYSCALL_FILTER, judge_filter },
	{ SIPC_G_LIMITS, judge_rlimits },
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

