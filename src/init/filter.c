/*
 * filter.c - the system-call filter sipc-init installs in the worker's
 * own process, after fork and before execve of the worker program.
 *
 * Runs in sipc-init's child only (single-threaded: malloc is safe
 * there).  sipc-init itself stays unfiltered, so it keeps what it needs
 * to reap, signal and end the tree.
 *
 * Why KILL_PROCESS and not ERRNO: a refused call ends the worker with
 * SIGSYS, which sipc-init sees in the worker's wait status and reports
 * as it is; nothing the worker prints can hide it.  clone3 is the one
 * exception: its flags live in memory the filter cannot read, so it
 * gets ENOSYS and the C library falls back to clone, whose flags the
 * filter does read.  libseccomp also sets no_new_privs (its default
 * SCMP_FLTATR_CTL_NNP) and kills calls of any foreign architecture
 * (SCMP_FLTATR_ACT_BADARCH), so i386 numbers cannot go round the list.
 */
#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>

#include "init_filter.h"

/* What a converter never needs and what widens the kernel's surface.
 * A name this kernel's headers do not know is skipped (a call that does
 * not exist here cannot be made either). */
static const char *const refused[] = {
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"userfaultfd", "keyctl", "add_key", "request_key", "bpf",
	"perf_event_open", "ptrace", "process_vm_readv", "process_vm_writev",
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig",
	"fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"unshare", "setns", "init_module", "finit_module", "delete_module",
	"kexec_load", "kexec_file_load", "swapon", "swapoff", "reboot",
	"acct", "quotactl", "quotactl_fd", "open_by_handle_at",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
	"lookup_dcookie", "vhangup",
};
#define NREFUSED (sizeof(refused) / sizeof(refused[0]))

/* clone with a namespace flag, clone3 (unreadable flags), personality
 * other than the query (0xffffffff). */
static int
add_special(scmp_filter_ctx f)
{
	static const unsigned long ns[] = { CLONE_NEWNS, CLONE_NEWCGROUP,
	    CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
	    CLONE_NEWNET, 0x00000080 /* CLONE_NEWTIME */ };
	size_t i;
	int rc;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		if ((rc = seccomp_rule_add(f, SCMP_ACT_KILL_PROCESS,
		    SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, ns[i], ns[i]))) < 0)
			return rc;
	if ((rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS),
	    SCMP_SYS(clone3), 0)) < 0)
		return rc;
	/* Only the query passes: the worker already runs as PER_LINUX, and
	 * a rule cannot compare one argument twice (libseccomp 2.5). */
	return seccomp_rule_add(f, SCMP_ACT_KILL_PROCESS,
	    SCMP_SYS(personality), 1, SCMP_A0(SCMP_CMP_NE, 0xffffffffUL));
}

int
sipc__init_filter(void)
{
	scmp_filter_ctx f;
	int rc = -ENOMEM, nr;
	size_t i;

	if ((f = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		return -ENOMEM;
	for (i = 0; i < NREFUSED; i++) {
		if ((nr = seccomp_syscall_resolve_name(refused[i])) < 0)
			continue;
		if ((rc = seccomp_rule_add(f, SCMP_ACT_KILL_PROCESS, nr, 0)) < 0)
			goto fail;
	}
	if ((rc = add_special(f)) < 0)
		goto fail;
	rc = seccomp_load(f);
fail:
	seccomp_release(f);
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
