/*
 * filter.c - the system-call filter sipc-init installs in the worker's
 * own process, after fork and before execve of the worker program.
 *
 * Runs in sipc-init's child only (single-threaded: malloc is safe
 * there).  sipc-init itself stays unfiltered, so it keeps what it needs
 * to reap, signal and end the tree.
 *
 * Why user notification (SECCOMP_RET_USER_NOTIF) and not KILL_PROCESS
 * or ERRNO: a refused call stops the calling thread in the kernel and
 * wakes sipc-init, which holds the filter's listener (the worker's side
 * hands it over before execve, and keeps no copy).  sipc-init reads the
 * call's number from the notification, reports it and kills the tree
 * with SIGKILL, which the worker cannot catch or ignore; KILL_PROCESS
 * would end it with SIGSYS but tell nobody which call it was.  The
 * refused call never runs: the thread stays in the kernel until the
 * kill, and a notification whose target died is answered by nobody.
 * In audit mode sipc-init logs the call and lets it run
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE), which is for building a profile
 * only.  clone3 is the one exception: its flags live in memory the
 * filter cannot read, so it gets ENOSYS and the C library falls back to
 * clone, whose flags the filter does read.  libseccomp also sets
 * no_new_privs (its default SCMP_FLTATR_CTL_NNP) and kills calls of any
 * foreign architecture (SCMP_FLTATR_ACT_BADARCH: SIGSYS, no number), so
 * i386 numbers cannot go round the list.  The namespace calls (unshare,
 * setns, clone with a namespace flag) fail with EPERM instead, in every
 * mode: a converter that tries a sandbox of its own falls back, as it
 * does under bubblewrap's --disable-userns, and the start-up probe can
 * see the refusal without its tree being ended.  Where the host itself runs
 * under a filter with a listener the kernel refuses a second one
 * (EBUSY), and the refusals are KILL_PROCESS: SIGSYS, the call unnamed.
 */
#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "init_filter.h"
#include "syscall_profile.h"

/* What a converter never needs and what widens the kernel's surface
 * (syscall_profile.h, which the library's configuration checks too).
 * A name this kernel's headers do not know is skipped (a call that does
 * not exist here cannot be made either). */
static const char *const refused[] = { SIPC__SYSCALLS_REFUSED };
#define NREFUSED (sizeof(refused) / sizeof(refused[0]))

/* Is name one of the comma-separated list's names? */
static int
in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while (p != NULL && *p != '\0') {
		const char *c = strchr(p, ',');
		size_t len = c != NULL ? (size_t)(c - p) : strlen(p);

		if (len == n && memcmp(p, name, n) == 0)
			return 1;
		p = c != NULL ? c + 1 : NULL;
	}
	return 0;
}

/* Refuse every name of the host's list (validated by the library; a
 * name unknown here is an error, not skipped: the host asked for it). */
static int
add_listed(scmp_filter_ctx f, uint32_t act, const char *list)
{
	char name[64];
	const char *p = list;
	int nr, rc;

	while (p != NULL && *p != '\0') {
		const char *c = strchr(p, ',');
		size_t len = c != NULL ? (size_t)(c - p) : strlen(p);

		if (len == 0 || len >= sizeof(name))
			return -EINVAL;
		memcpy(name, p, len);
		name[len] = '\0';
		if ((nr = seccomp_syscall_resolve_name(name)) < 0)
			return -EINVAL;
		if ((rc = seccomp_rule_add(f, act, nr, 0)) < 0 && rc != -EEXIST)
			return rc;
		p = c != NULL ? c + 1 : NULL;
	}
	return 0;
}

/* Refused with EPERM rather than act (the header says why). */
static int
is_ns_call(const char *name)
{
	return strcmp(name, "unshare") == 0 || strcmp(name, "setns") == 0;
}

/* clone with a namespace flag (EPERM), clone3 (unreadable flags),
 * personality other than the query (0xffffffff). */
static int
add_special(scmp_filter_ctx f, uint32_t act)
{
	static const unsigned long ns[] = { CLONE_NEWNS, CLONE_NEWCGROUP,
	    CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
	    CLONE_NEWNET, 0x00000080 /* CLONE_NEWTIME */ };
	size_t i;
	int rc;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		if ((rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, ns[i], ns[i]))) < 0)
			return rc;
	if ((rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS),
	    SCMP_SYS(clone3), 0)) < 0)
		return rc;
	/* Only the query passes: the worker already runs as PER_LINUX, and
	 * a rule cannot compare one argument twice (libseccomp 2.5). */
	return seccomp_rule_add(f, act, SCMP_SYS(personality), 1,
	    SCMP_A0(SCMP_CMP_NE, 0xffffffffUL));
}

/* The profile with every refusal as act, loaded; the listener (act
 * NOTIFY) in *ret_fd.  The kernel's error, not libseccomp's
 * -ECANCELED, where it passes it on. */
static int
load(uint32_t act, const char *refuse, const char *allow, int *ret_fd)
{
	scmp_filter_ctx f;
	int rc = -ENOMEM, nr;
	size_t i;

	if ((f = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		return -ENOMEM;
	if ((rc = seccomp_attr_set(f, SCMP_FLTATR_API_SYSRAWRC, 1)) < 0)
		goto fail;
	for (i = 0; i < NREFUSED; i++) {
		if (in_list(allow, refused[i]) ||
		    (nr = seccomp_syscall_resolve_name(refused[i])) < 0)
			continue;
		if ((rc = seccomp_rule_add(f, is_ns_call(refused[i]) ?
		    SCMP_ACT_ERRNO(EPERM) : act, nr, 0)) < 0)
			goto fail;
	}
	if ((rc = add_special(f, act)) < 0 ||
	    (rc = add_listed(f, act, refuse)) < 0 ||
	    (rc = seccomp_load(f)) < 0)
		goto fail;
	*ret_fd = -1;
	if (act == SCMP_ACT_NOTIFY && (*ret_fd = seccomp_notify_fd(f)) < 0)
		rc = *ret_fd;   /* loaded, and no listener: fail the start */
fail:
	seccomp_release(f);
	return rc;
}

/* The kernel allows one listener per process tree: under a host whose
 * own filter holds one, the load fails (libseccomp 2.5.4 says -EFAULT
 * there, the kernel's own code is EBUSY), and so it does on a kernel
 * without user notification.  Then refused calls kill with SIGSYS
 * (KILL_PROCESS) and go unnamed.  -EINVAL and -ENOMEM come from building
 * the rules, which a second try would repeat.  Audit mode needs the
 * listener. */
int
sipc__init_filter(const char *refuse, const char *allow, bool audit,
                  int *ret_notify_fd)
{
	int rc = load(SCMP_ACT_NOTIFY, refuse, allow, ret_notify_fd);

	if (rc < 0 && rc != -EINVAL && rc != -ENOMEM && !audit)
		rc = load(SCMP_ACT_KILL_PROCESS, refuse, allow, ret_notify_fd);
	return rc;
}

/* Every capability out of every set: bounding first (so execve cannot
 * grant root's full set back; left as it is where it cannot be changed),
 * ambient, then permitted, effective and inheritable at once.  Core dumps off with a hard limit of 0, so the
 * worker cannot turn them back on.  Drops stop at the first number the
 * kernel does not know (EINVAL): that is one past its last capability. */
int
sipc__init_drop_privileges(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	struct rlimit core = { 0, 0 };
	int c;

	for (c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			/* EPERM: no CAP_SETPCAP (an unprivileged user's
			 * sandbox), so the bounding set cannot change; with
			 * the permitted set emptied below and no_new_privs,
			 * execve grants none of it. */
			if (errno == EINVAL || errno == EPERM)
				break;
			return -errno;
		}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	for (c = 0; c < _LINUX_CAPABILITY_U32S_3; c++)
		d[c] = (struct __user_cap_data_struct){ 0, 0, 0 };
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	if (setrlimit(RLIMIT_CORE, &core) < 0)
		return -errno;
	return 0;
}
