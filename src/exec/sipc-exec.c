/*
 * sipc-exec - a worker that wraps a command-line converter (sipc-exec(1)).
 *
 *   sipc-exec [--limit-as BYTES] [--max-output BYTES] [--diag-max BYTES]
 *             [--scratch DIR] [--] COMMAND [ARG...]
 *
 * For each request it runs COMMAND (an argument vector, never a shell)
 * in a scratch directory of the request's own, made under DIR and
 * removed afterwards with whatever the converter left in it.  An
 * argument that contains "{in}" has it replaced by the path of a file
 * holding the document (the command's standard input is then
 * /dev/null); otherwise the document is the command's standard input.
 * An argument that contains "{out}" has it replaced by the path of the
 * output file, whose contents are the reply (the command's standard
 * output then joins its standard error); otherwise its standard output
 * is the reply.  An exit status of 0 is a reply; anything else is an
 * error reply carrying the exit status (or signal) and the start of the
 * command's standard error (codes below).  The command's standard error
 * goes to the worker's diagnostics, at most --diag-max bytes a request.
 *
 * Pipes never deadlock: one poll() loop writes the document and reads
 * both outputs as each is ready, whatever their sizes, and sends a
 * heartbeat every second so a long conversion is not taken for a stall.
 * The command and whatever it forks stay in the worker's process tree
 * (its group, namespace and cgroup), so the supervisor's end of the
 * worker ends them all; the command also gets SIGKILL as its
 * parent-death signal.  sipc-exec is their child subreaper: when the
 * request is cancelled or its deadline passes (the runtime's cancel
 * descriptor), it ends the command's whole tree itself and answers
 * XE_CANCELLED, so the worker stays up; whatever the command left
 * running ends when its request does.  Between fork and exec the child resets every
 * signal disposition and its mask (the worker runtime ignores SIGPIPE,
 * and an ignored disposition survives exec), marks every descriptor
 * above 2 close-on-exec (the protocol channel among them), applies
 * --limit-as (RLIMIT_AS) and enters the scratch directory.
 *
 * Single-threaded: everything runs on main's thread, inside the
 * runtime's handler; the forked child runs only async-signal-safe code
 * until exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sipc.h"
#include "sipc_worker.h"

/* Worker error codes (sipc-exec(1)): 1..255 the command's exit status;
 * SIGNAL_BASE + n killed by signal n; the rest sipc-exec's own. */
#define XE_SIGNAL_BASE 256
#define XE_EXEC 512              /* the command could not be executed */
#define XE_OUTPUT 513            /* output larger than --max-output */
#define XE_NOOUT 514             /* {out} given, no output file made */
#define XE_SCRATCH 515           /* scratch directory or input file */
#define XE_CANCELLED 516         /* cancelled or past its deadline */

#define EHEAD_MAX 1024           /* start of stderr kept for the error */
#define MSG_MAX (EHEAD_MAX + 256)
#define CHUNK 65536
#define HEARTBEAT_MS 1000
/* After the command has exited, how long its pipes may stay open (held
 * by a descendant it left behind) before the reply goes without them. */
#define DRAIN_MS 200

extern char **environ;

struct xopts {
	char *const *cmd;             /* the argument vector, placeholders */
	char path[PATH_MAX];          /* cmd[0] resolved */
	const char *scratch;          /* where scratch directories go */
	unsigned long long limit_as;  /* RLIMIT_AS of the command, 0: none */
	size_t max_output;
	size_t diag_max;
	bool in_file, out_file;       /* {in} / {out} appear */
};

/* One request's run.  Descriptors start at -1. */
struct job {
	char dir[PATH_MAX], in[PATH_MAX + 8], out[PATH_MAX + 8];
	char **argv;
	const uint8_t *doc;
	size_t doc_len, doc_off;
	pid_t pid;
	int pidfd, fd_in, fd_out, fd_err;
	int status;
	bool exited, cut;
	bool cancelled;               /* deadline or CANCEL: tree ended */
	uint8_t *obuf;
	size_t olen, ocap;
	bool over;                    /* output passed --max-output */
	char ehead[EHEAD_MAX];
	size_t ehead_len;
	unsigned long long elen, esent;
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int
write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---------------------------------------------------------- arguments */

/* "123", "64K", "512M", "2G" (powers of 1024); false when not one. */
static bool
parse_size(const char *s, unsigned long long *ret)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	if (*s < '0' || *s > '9')
		return false;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return false;
	switch (*end) {
	case 'K': case 'k': mul = 1ull << 10; end++; break;
	case 'M': case 'm': mul = 1ull << 20; end++; break;
	case 'G': case 'g': mul = 1ull << 30; end++; break;
	default: break;
	}
	if (*end != '\0' || v > ULLONG_MAX / mul)
		return false;
	*ret = v * mul;
	return true;
}

static void __attribute__((noreturn))
usage(const char *why)
{
	if (why != NULL)
		fprintf(stderr, "sipc-exec: %s\n", why);
	fprintf(stderr, "usage: sipc-exec [--limit-as BYTES] "
	    "[--max-output BYTES] [--diag-max BYTES]\n"
	    "                 [--scratch DIR] [--] COMMAND [ARG...]\n"
	    "  {in} in an argument: the document as a file (else stdin)\n"
	    "  {out} in an argument: the reply is that file (else stdout)\n");
	exit(2);
}

/* The command as execve() will run it: a name with a slash as given, a
 * bare name found on PATH (the default path when the worker has none).
 * Exits 127 (not found) or 126 (not executable), saying so. */
static void
resolve_cmd(struct xopts *o)
{
	const char *name = o->cmd[0], *path = getenv("PATH"), *p, *end;
	int err = ENOENT;

	if (strchr(name, '/') != NULL) {
		snprintf(o->path, sizeof(o->path), "%s", name);
		if (access(o->path, X_OK) == 0)
			return;
		err = errno;
	} else {
		if (path == NULL || *path == '\0')
			path = "/usr/local/bin:/usr/bin:/bin";
		for (p = path; *p != '\0'; p = *end ? end + 1 : end) {
			end = strchrnul(p, ':');
			if (end == p || p[0] != '/')
				continue;       /* relative entries: never */
			snprintf(o->path, sizeof(o->path), "%.*s/%s",
			    (int)(end - p), p, name);
			if (access(o->path, X_OK) == 0)
				return;
			/* a file that is there but not executable says so; a
			 * directory this user cannot search is no such file */
			if (errno != ENOENT && access(o->path, F_OK) == 0)
				err = errno;
		}
	}
	if (strchr(name, '/') != NULL)
		fprintf(stderr, "sipc-exec: cannot run %s: %s\n", name,
		    strerror(err));
	else
		fprintf(stderr, "sipc-exec: cannot run %s: %s (searched "
		    "PATH=%s)\n", name, strerror(err), path);
	exit(err == ENOENT ? 127 : 126);
}

static void
parse_opts(int argc, char **argv, struct xopts *o)
{
	static const struct option lo[] = {
		{ "limit-as", required_argument, NULL, 'a' },
		{ "max-output", required_argument, NULL, 'o' },
		{ "diag-max", required_argument, NULL, 'd' },
		{ "scratch", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long v;
	int ch;

	*o = (struct xopts){ .max_output = 16u << 20, .diag_max = 64u << 10 };
	o->scratch = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR")
	    : "/tmp";
	while ((ch = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
		if (ch == 'h')
			usage(NULL);
		if (ch == '?')
			usage("unknown option");
		if (ch == 's') {
			o->scratch = optarg;
			continue;
		}
		if (!parse_size(optarg, &v) || (ch != 'a' && v > SIZE_MAX) ||
		    (ch == 'o' && v == 0))
			usage("a size is a number, optionally K, M or G");
		if (ch == 'a')
			o->limit_as = v;
		else if (ch == 'o')
			o->max_output = (size_t)v;
		else
			o->diag_max = (size_t)v;
	}
	if (optind >= argc)
		usage("no command given");
	o->cmd = argv + optind;
	for (int i = optind + 1; i < argc; i++) {
		o->in_file |= strstr(argv[i], "{in}") != NULL;
		o->out_file |= strstr(argv[i], "{out}") != NULL;
	}
	if (strstr(argv[optind], "{in}") || strstr(argv[optind], "{out}"))
		usage("the command itself cannot be a placeholder");
	resolve_cmd(o);
}

/* ------------------------------------------------------------ a job */

/* `arg` with every {in} and {out} replaced (malloc'd), or NULL. */
static char *
subst(const char *arg, const struct job *j)
{
	size_t cap = strlen(arg) + 1, n = 0;
	const char *p;
	char *r;

	for (p = arg; (p = strchr(p, '{')) != NULL; p++)
		cap += sizeof(j->out);
	if ((r = malloc(cap)) == NULL)
		return NULL;
	for (p = arg; *p != '\0';) {
		if (strncmp(p, "{in}", 4) == 0) {
			n += (size_t)sprintf(r + n, "%s", j->in);
			p += 4;
		} else if (strncmp(p, "{out}", 5) == 0) {
			n += (size_t)sprintf(r + n, "%s", j->out);
			p += 5;
		} else {
			r[n++] = *p++;
		}
	}
	r[n] = '\0';
	return r;
}

static void
argv_free(char **v)
{
	if (v == NULL)
		return;
	for (size_t i = 0; v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

static int
argv_make(const struct xopts *o, struct job *j)
{
	size_t n = 0;

	while (o->cmd[n] != NULL)
		n++;
	if ((j->argv = calloc(n + 1, sizeof(*j->argv))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if ((j->argv[i] = subst(o->cmd[i], j)) == NULL)
			return -ENOMEM;
	return 0;
}

/* The scratch directory, the input file when {in} asks for one, the
 * argument vector.  The directory is made in `parent`: the request's
 * own scratch directory when the supervisor gave it one
 * (SIPC_REQ_SCRATCH: what a command leaves there is removed with it even
 * if this worker dies), else --scratch.  Returns 0 or -errno (the caller
 * cleans up). */
static int
job_prepare(const struct xopts *o, const char *parent, struct job *j)
{
	int fd, rc;

	if ((size_t)snprintf(j->dir, sizeof(j->dir), "%s/sipc-exec.XXXXXX",
	    parent) >= sizeof(j->dir))
		return -ENAMETOOLONG;
	if (mkdtemp(j->dir) == NULL) {
		j->dir[0] = '\0';
		return -errno;
	}
	snprintf(j->in, sizeof(j->in), "%s/in", j->dir);
	snprintf(j->out, sizeof(j->out), "%s/out", j->dir);
	if (o->in_file) {
		fd = open(j->in, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		rc = write_all(fd, j->doc, j->doc_len);
		if (close(fd) < 0 && rc == 0)
			rc = -errno;
		if (rc < 0)
			return rc;
		j->doc_off = j->doc_len;
	}
	return argv_make(o, j);
}

static int
rm_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	(void)(type == FTW_DP ? rmdir(path) : unlink(path));
	return 0;
}

static void
job_cleanup(struct job *j)
{
	close_fd(&j->fd_in);
	close_fd(&j->fd_out);
	close_fd(&j->fd_err);
	close_fd(&j->pidfd);
	if (j->dir[0] != '\0')
		(void)nftw(j->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	argv_free(j->argv);
	free(j->obuf);
}

/* ------------------------------------------------------------ child */

/* After fork, before exec: async-signal-safe calls only.  fds: the
 * command's stdin (-1: keep the worker's /dev/null), stdout, stderr,
 * and the CLOEXEC pipe exec's errno is reported on. */
static void __attribute__((noreturn))
child_exec(const struct xopts *o, const struct job *j, const int fds[4],
           pid_t parent)
{
	struct sigaction sa;
	struct rlimit rl;
	sigset_t none;
	int e;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);             /* the worker is gone already */
	if ((fds[0] >= 0 && dup2(fds[0], 0) < 0) || dup2(fds[1], 1) < 0 ||
	    dup2(fds[2], 2) < 0)
		goto fail;
	/* Everything above stderr, the protocol channel included, goes at
	 * exec; the report pipe is close-on-exec already. */
	if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) < 0)
		goto fail;
	if (o->limit_as != 0) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)o->limit_as;
		if (setrlimit(RLIMIT_AS, &rl) < 0)
			goto fail;
	}
	if (chdir(j->dir) < 0)
		goto fail;
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	execve(o->path, j->argv, environ);
fail:
	e = errno;
	(void)!write(fds[3], &e, sizeof(e));
	_exit(127);
}

static int
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* Fork and exec; on success j's parent ends are open and non-blocking.
 * Returns 0, or -errno (*exec_err: the child's exec failed with it). */
static int
job_spawn(const struct xopts *o, struct job *j, bool *exec_err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	int rep[2] = { -1, -1 }, e = 0, rc = 0;
	pid_t parent = getpid();
	ssize_t n;

	*exec_err = false;
	if ((!o->in_file && pipe2(in, O_CLOEXEC) < 0) ||
	    (!o->out_file && pipe2(out, O_CLOEXEC) < 0) ||
	    pipe2(err, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out;
	}
	if ((j->pid = fork()) < 0) {
		rc = -errno;
		goto out;
	}
	if (j->pid == 0)
		child_exec(o, j, (int[4]){ in[0], o->out_file ? err[1] :
		    out[1], err[1], rep[1] }, parent);
	close_fd(&rep[1]);
	while ((n = read(rep[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(e)) {
		while (waitpid(j->pid, &j->status, 0) < 0 && errno == EINTR)
			;
		j->exited = true;
		*exec_err = true;
		rc = -e;
		goto out;
	}
	j->pidfd = (int)syscall(SYS_pidfd_open, j->pid, 0);
	j->fd_in = in[1], in[1] = -1;
	j->fd_out = out[0], out[0] = -1;
	j->fd_err = err[0], err[0] = -1;
	if ((j->fd_in >= 0 && (rc = set_nonblock(j->fd_in)) < 0) ||
	    (j->fd_out >= 0 && (rc = set_nonblock(j->fd_out)) < 0) ||
	    (rc = set_nonblock(j->fd_err)) < 0)
		goto out;
	if (j->fd_in >= 0 && j->doc_len == 0)
		close_fd(&j->fd_in);
out:
	for (int i = 0; i < 2; i++) {
		close_fd(&in[i]);
		close_fd(&out[i]);
		close_fd(&err[i]);
		close_fd(&rep[i]);
	}
	return rc;
}

/* ------------------------------------------------------------ the pump */

static void
pump_in(struct job *j)
{
	size_t left = j->doc_len - j->doc_off;
	ssize_t n = write(j->fd_in, j->doc + j->doc_off,
	    left < CHUNK ? left : CHUNK);

	if (n > 0)
		j->doc_off += (size_t)n;
	/* EPIPE (SIGPIPE is ignored): the command stopped reading, which
	 * is its business; its exit says how it went. */
	if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
	    j->doc_off == j->doc_len)
		close_fd(&j->fd_in);
}

static void
pump_out(const struct xopts *o, struct job *j)
{
	uint8_t tmp[CHUNK];
	ssize_t n = read(j->fd_out, tmp, sizeof(tmp));
	size_t want;
	uint8_t *nb;

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		close_fd(&j->fd_out);
		return;
	}
	if (n < 0 || j->over)
		return;
	if (j->olen + (size_t)n > o->max_output) {
		j->over = true;         /* read on and drop: never block it */
		return;
	}
	if (j->olen + (size_t)n > j->ocap) {
		want = j->ocap ? j->ocap * 2 : CHUNK;
		while (want < j->olen + (size_t)n)
			want *= 2;
		if ((nb = realloc(j->obuf, want)) == NULL) {
			j->over = true;
			return;
		}
		j->obuf = nb;
		j->ocap = want;
	}
	memcpy(j->obuf + j->olen, tmp, (size_t)n);
	j->olen += (size_t)n;
}

/* The command's stderr: its start kept for an error reply, up to
 * --diag-max forwarded to the worker's diagnostics (descriptor 2). */
static void
pump_err(const struct xopts *o, struct job *j)
{
	char tmp[CHUNK];
	ssize_t n = read(j->fd_err, tmp, sizeof(tmp));
	size_t k;

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		close_fd(&j->fd_err);
		return;
	}
	if (n < 0)
		return;
	k = EHEAD_MAX - 1 - j->ehead_len;
	k = (size_t)n < k ? (size_t)n : k;
	memcpy(j->ehead + j->ehead_len, tmp, k);
	j->ehead_len += k;
	j->elen += (unsigned long long)n;
	if (j->esent < o->diag_max) {
		k = o->diag_max - j->esent < (size_t)n ?
		    (size_t)(o->diag_max - j->esent) : (size_t)n;
		if (write_all(2, tmp, k) == 0)
			j->esent += k;
	}
}

static void
reap(struct job *j)
{
	while (waitpid(j->pid, &j->status, 0) < 0 && errno == EINTR)
		;
	j->exited = true;
	close_fd(&j->pidfd);
}

/* ------------------------------------------------------------- tree */

enum { TREE_MAX = 1024, TREE_MS = 2000 };

/* Append the children of `pid` (every thread's list) to set[*n]. */
static void
tree_children(pid_t pid, pid_t *set, size_t *n)
{
	char path[320], buf[4096];
	struct dirent *e;
	ssize_t k;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return;
	while ((e = readdir(d)) != NULL && *n < TREE_MAX) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children",
		    (int)pid, e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		k = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[k > 0 ? k : 0] = '\0';
		for (char *q = buf, *end; *n < TREE_MAX; q = end) {
			long c = strtol(q, &end, 10);

			if (end == q)
				break;
			set[(*n)++] = (pid_t)c;
		}
	}
	closedir(d);
}

/* Reap what has ended among our children, keeping the command's own
 * status when it is among them. */
static void
tree_reap(struct job *j)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		if (p == j->pid && !j->exited) {
			j->status = st;
			j->exited = true;
			close_fd(&j->pidfd);
		}
}

/*
 * End every process below this worker: the command and whatever it
 * forked.  sipc-exec is a child subreaper (main()), so a descendant
 * whose parent died is reparented here, never lost to an init outside;
 * the walk takes the whole tree first, then kills it, then reaps, until
 * nothing is left (bounded: a process stuck in the kernel is left to
 * the supervisor's end of the worker).  One job runs at a time, so
 * everything below us is the running job's.
 */
static void
tree_end(struct job *j)
{
	static pid_t set[TREE_MAX];
	uint64_t until = now_ms() + TREE_MS;
	size_t n, i;

	for (;;) {
		n = 0;
		tree_children(getpid(), set, &n);
		for (i = 0; i < n && n < TREE_MAX; i++)
			tree_children(set[i], set, &n);
		for (i = 0; i < n; i++)
			(void)kill(set[i], SIGKILL);
		tree_reap(j);
		if (n == 0 || now_ms() >= until)
			return;
		(void)poll(NULL, 0, 1);
	}
}

/* One poll() over every open direction and the child's pidfd until the
 * child has exited and its pipes are closed (or held open past
 * DRAIN_MS by something it left behind: j->cut). */
static void
job_pump(const struct xopts *o, struct job *j, sipc_worker *w)
{
	uint64_t exit_at = 0, beat = now_ms();
	int cfd = sipc_worker_cancel_fd(w);
	struct pollfd p[5];
	int n, r;

	for (;;) {
		if (j->exited && j->fd_out < 0 && j->fd_err < 0)
			return;
		if (exit_at != 0 && now_ms() >= exit_at + DRAIN_MS) {
			j->cut = j->fd_out >= 0 || j->fd_err >= 0;
			return;
		}
		n = 0;
		p[n++] = (struct pollfd){ j->fd_in, POLLOUT, 0 };
		p[n++] = (struct pollfd){ j->fd_out, POLLIN, 0 };
		p[n++] = (struct pollfd){ j->fd_err, POLLIN, 0 };
		p[n++] = (struct pollfd){ j->exited ? -1 : j->pidfd, POLLIN, 0 };
		p[n++] = (struct pollfd){ j->cancelled ? -1 : cfd, POLLIN, 0 };
		r = poll(p, (nfds_t)n, exit_at ? (int)DRAIN_MS : HEARTBEAT_MS);
		if (r < 0 && errno != EINTR)
			return;
		if (now_ms() - beat >= HEARTBEAT_MS) {
			(void)sipc_worker_heartbeat(w);
			beat = now_ms();
		}
		if (p[0].revents)
			pump_in(j);
		if (p[1].revents)
			pump_out(o, j);
		if (p[2].revents)
			pump_err(o, j);
		/* The deadline passed or the supervisor cancelled: end the
		 * command's tree now and answer, rather than be ended with
		 * it at cancel_grace_ms (a restart).  The pipes then close. */
		if (p[4].revents && !j->cancelled) {
			j->cancelled = true;
			tree_end(j);
			if (j->exited && exit_at == 0) {
				exit_at = now_ms();
				close_fd(&j->fd_in);
			}
		}
		/* Without a pidfd (an old kernel): the pipes' EOF, then wait. */
		if ((p[3].revents || (j->pidfd < 0 && j->fd_out < 0 &&
		    j->fd_err < 0)) && !j->exited) {
			reap(j);
			exit_at = now_ms();
			close_fd(&j->fd_in);
		}
	}
}

/* ------------------------------------------------------------ replies */

static void
reply_error(sipc_worker *w, uint64_t id, uint32_t code, const char *head,
            const struct job *j)
{
	char msg[MSG_MAX];
	int n = snprintf(msg, sizeof(msg), "%.200s", head);

	if (j != NULL && j->ehead_len > 0 && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %.*s",
		    (int)j->ehead_len, j->ehead);
	(void)sipc_worker_error(w, id, code, msg, strlen(msg));
}

/* The output file ({out}): read whole, at most --max-output. */
static int
read_out(const struct xopts *o, struct job *j)
{
	struct stat st;
	int fd, rc = 0;
	ssize_t n;

	if ((fd = open(j->out, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
	} else if ((size_t)st.st_size > o->max_output) {
		rc = -EFBIG;
	} else if ((j->obuf = malloc((size_t)st.st_size + 1)) == NULL) {
		rc = -ENOMEM;
	} else {
		while (j->olen < (size_t)st.st_size && ((n = read(fd,
		    j->obuf + j->olen, (size_t)st.st_size - j->olen)) > 0 ||
		    (n < 0 && errno == EINTR)))
			j->olen += n > 0 ? (size_t)n : 0;
	}
	close(fd);
	return rc;
}

static void
job_reply(const struct xopts *o, struct job *j, sipc_worker *w, uint64_t id)
{
	char head[128];
	int rc, sig;

	if (j->elen > j->esent)
		fprintf(stderr, "sipc-exec: %llu more bytes of standard error "
		    "not forwarded (--diag-max %zu)\n", j->elen - j->esent,
		    o->diag_max);
	if (j->cut)
		fprintf(stderr, "sipc-exec: a descendant of the command kept "
		    "its output open after it exited; replied without it\n");
	if (j->cancelled) {
		reply_error(w, id, XE_CANCELLED, "cancelled or past its "
		    "deadline: the command and every process it started were "
		    "ended", j);
	} else if (WIFSIGNALED(j->status)) {
		sig = WTERMSIG(j->status);
		snprintf(head, sizeof(head), "killed by signal %d (%s)", sig,
		    sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
		reply_error(w, id, XE_SIGNAL_BASE + (uint32_t)sig, head, j);
	} else if (WEXITSTATUS(j->status) != 0) {
		snprintf(head, sizeof(head), "exit status %d",
		    WEXITSTATUS(j->status));
		reply_error(w, id, (uint32_t)WEXITSTATUS(j->status), head, j);
	} else if (o->out_file && (rc = read_out(o, j)) < 0) {
		snprintf(head, sizeof(head), "output file: %s", strerror(-rc));
		reply_error(w, id, rc == -EFBIG ? XE_OUTPUT : XE_NOOUT, head,
		    NULL);
	} else if (j->over) {
		snprintf(head, sizeof(head), "output larger than %zu bytes",
		    o->max_output);
		reply_error(w, id, XE_OUTPUT, head, NULL);
	} else {
		(void)sipc_worker_reply(w, id, j->obuf, j->olen);
	}
}

static void
handle(sipc_worker *w, uint64_t id, const uint8_t *payload, size_t len,
       void *arg)
{
	const struct xopts *o = arg;
	struct job j = { .doc = payload, .doc_len = len, .pidfd = -1,
	    .fd_in = -1, .fd_out = -1, .fd_err = -1, .pid = -1 };
	char head[PATH_MAX + 64], own[PATH_MAX];
	const char *parent = o->scratch;
	bool exec_err;
	int rc;

	if (sipc_worker_scratch(w, id, own, sizeof(own)) == 0)
		parent = own;
	if ((rc = job_prepare(o, parent, &j)) < 0) {
		snprintf(head, sizeof(head), "scratch %s: %s", j.dir[0] ?
		    j.dir : parent, strerror(-rc));
		reply_error(w, id, XE_SCRATCH, head, NULL);
	} else if ((rc = job_spawn(o, &j, &exec_err)) < 0) {
		snprintf(head, sizeof(head), "cannot %s %s: %s", exec_err ?
		    "execute" : "start", o->path, strerror(-rc));
		reply_error(w, id, XE_EXEC, head, NULL);
		if (!exec_err && j.pid > 0 && !j.exited) {
			kill(j.pid, SIGKILL);
			reap(&j);
		}
	} else {
		job_pump(o, &j, w);
		if (!j.exited) {        /* poll failed: do not leave it */
			kill(j.pid, SIGKILL);
			reap(&j);
		}
		job_reply(o, &j, w, id);
	}
	/* Whatever the command left running ends with its request. */
	tree_end(&j);
	job_cleanup(&j);
}

int
main(int argc, char **argv)
{
	struct xopts o;
	sipc_worker *w = NULL;
	int r;

	parse_opts(argc, argv, &o);
	/* The command's orphans come to us, so a request's tree can be
	 * ended whole (tree_end()). */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	if ((r = sipc_worker_open(&w)) < 0) {
		fprintf(stderr, "sipc-exec: sipc_worker_open: %s (run it as a "
		    "sipc worker: sipc-exec(1))\n", sipc_strerror(r));
		return 1;
	}
	if ((r = sipc_worker_run(w, handle, &o)) < 0)
		fprintf(stderr, "sipc-exec: sipc_worker_run: %s\n",
		    sipc_strerror(r));
	sipc_worker_close(w);
	return r < 0 ? 1 : 0;
}
