/*
 * syscall_profile.h - the names of the sandbox's default system-call
 * profile: each is refused outright (src/init/filter.c), and only these
 * may be allowed back by the configuration's syscalls_allow (checked by
 * src/base/config.c).  Besides them the filter refuses clone with a namespace
 * flag and personality other than the query, and answers clone3 with
 * ENOSYS; those are not named here and cannot be allowed back.
 */
#ifndef SIPC_SYSCALL_PROFILE_H
#define SIPC_SYSCALL_PROFILE_H

#define SIPC__SYSCALLS_REFUSED \
	"io_uring_setup", "io_uring_enter", "io_uring_register", \
	"userfaultfd", "keyctl", "add_key", "request_key", "bpf", \
	"perf_event_open", "ptrace", "process_vm_readv", "process_vm_writev", \
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", \
	"fsmount", "fspick", "move_mount", "open_tree", "mount_setattr", \
	"unshare", "setns", "init_module", "finit_module", "delete_module", \
	"kexec_load", "kexec_file_load", "swapon", "swapoff", "reboot", \
	"acct", "quotactl", "quotactl_fd", "open_by_handle_at", \
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime", \
	"lookup_dcookie", "vhangup"

#endif
