#!/bin/sh
# bench/run.sh - run the baselines and the sipc figures in one go, print
# one line per figure ("metric <name> <value> <unit>"), the ratios against
# the baselines of the same run ("ratio <name> <value> (target <op> <x>)")
# and notes, and save the same lines to bench/results/<UTC stamp>.txt and
# bench/results/latest.txt, plus bench/results/latest.png when gnuplot is
# installed.  Called by `make bench`; see bench/README.md.
#
# Environment:
#   BENCH_BIN      directory of the bench programs   (build/bench)
#   SIPC_FIXTURES  directory of the fixture workers  (build/fixtures)
#   BENCH_INIT     sipc-init for the namespace modes (build/libexec/sipc-init)
#   BENCH_CONVERT  the conversion demo, for the convert part
#                  (build/demo/sipc-convert); BENCH_EXEC its sipc-exec
#                  (build/libexec/sipc-exec); documents: $SIPC_FIXTURES/docs
#   BENCH_RESULTS  where results go                  (bench/results)
#   BENCH_QUICK=1  short smoke run (about a minute)
#   BENCH_ONLY     parts to run, blank-separated (all): raw_pingpong
#                  raw_pipelined raw_batched raw_scale newline_proto ppe
#                  spawn_cost raw_spawn_contained and the sipc_bench
#                  sections (call pipe ... containment ... syscalls)
#   BENCH_STALL_MS stall timeout of the stall test   (1000)
#   PYTHON         interpreter for the ProcessPoolExecutor baseline (python3)
#
# Exit status: 0 when every part ran (targets missed are reported, not
# fatal), 1 when a part failed, 2 when the sipc part could not run.
set -u
BIN=${BENCH_BIN:-build/bench}
FIX=${SIPC_FIXTURES:-build/fixtures}
INIT=${BENCH_INIT:-build/libexec/sipc-init}
CONVERT=${BENCH_CONVERT:-build/demo/sipc-convert}
EXEC=${BENCH_EXEC:-build/libexec/sipc-exec}
ONLY=${BENCH_ONLY:-}
RES=${BENCH_RESULTS:-bench/results}
QUICK=${BENCH_QUICK:-0}
STALL_MS=${BENCH_STALL_MS:-1000}
PY=${PYTHON:-python3}
HERE=$(dirname "$0")

parts="raw_pingpong raw_pipelined raw_batched raw_scale newline_proto ppe call pipe spawn
mem scale stall journal accept containment cost sandbox sandbox_hardening
cancel recycle figures fdpass spawn_cost raw_spawn_contained spawn_contained syscalls convert"
for w in $ONLY; do
	case " $(echo $parts) " in *" $w "*) ;; *)
		echo "bench: BENCH_ONLY: unknown part $w (parts: $(echo $parts))" >&2
		exit 1 ;;
	esac
done

q=""
[ "$QUICK" != 0 ] && q=--quick
mkdir -p "$RES" || exit 1
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out="$RES/.run-$stamp.txt"
: > "$out"
status=0

emit() {
	printf '%s\n' "$*" | tee -a "$out"
}

# run NAME TIMEOUT_S CMD...: stream the program's metric/note lines to the
# terminal and the results file; its stderr passes through untouched.
run() {
	name=$1; to=$2; shift 2
	( timeout -k 5 "$to" "$@"; echo $? > "$out.rc" ) |
	    grep --line-buffered -E '^(metric|note) ' | tee -a "$out"
	rc=$(cat "$out.rc" 2>/dev/null || echo 1)
	rm -f "$out.rc"
	if [ "$rc" != 0 ]; then
		[ "$rc" = 124 ] && emit "note $name timed out after ${to}s"
		emit "note $name failed (exit $rc)"
		status=1
	fi
}

# want PART: true when PART is to run (BENCH_ONLY blank, or names it).
want() {
	[ -z "$ONLY" ] && return 0
	case " $ONLY " in *" $1 "*) return 0 ;; esac
	return 1
}

commit=$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
emit "note run $stamp quick=$QUICK cpus=$(nproc) kernel=$(uname -r) commit=$commit${ONLY:+ only=$ONLY}"

# ---------------------------------------------------------- environment
# What the figures depend on: the CPU, its frequency policy, the kernel,
# the load others put on the machine, and where each program runs.
env_notes() {
	model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo 2>/dev/null |
	    head -n 1)
	fms=$(awk -F': *' '$1 ~ /^cpu family/ { f = $2 } $1 ~ /^model[[:space:]]*$/ { m = $2 }
		$1 ~ /^stepping/ { s = $2 } $1 ~ /^cpu MHz/ { h = $2 }
		$1 ~ /^flags/ { v = ($0 ~ / hypervisor( |$)/) ? ", hypervisor flag set" : "" }
		/^$/ { exit }
		END { printf "family %s model %s stepping %s, %s MHz%s", f, m, s, h, v }' \
	    /proc/cpuinfo 2>/dev/null)
	emit "note env cpu_model: ${model:-unknown (no model name in /proc/cpuinfo)} ($fms)"
	allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
	emit "note env cpus: $(nproc) usable (allowed: ${allowed:-?}), $(grep -c '^processor' /proc/cpuinfo) online"
	gov=/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor
	if [ -r "$gov" ]; then
		emit "note env governor: $(cat "$gov") (cpu0)"
	else
		emit "note env governor: unreadable ($gov absent: no cpufreq driver)"
	fi
	emit "note env kernel: $(uname -srm) $(uname -v)"
	emit "note env user: uid $(id -u), max_user_namespaces $(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo unreadable) (the containment modes depend on both)"
	emit "note env load_average: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at start"
	emit "note placement raw_pingpong, raw_pipelined, raw_batched: each channel (sock: socketpair; pipe: two pipes; pipe1m: two pipes of 1 MiB) runs twice, parent and child pinned to one CPU (samecpu) and to two (crosscpu); the unsuffixed figure of a size is the best channel at its better placement, the limit every ratio uses (which one: the program's own note)"
	emit "note placement newline_proto: runs twice, parent and child pinned to one CPU (_samecpu) and to two (_crosscpu); the unsuffixed figure is the better"
	emit "note placement raw_scale: not pinned, like sipc's scale section (N echo children and one epoll parent thread; socketpair and two pipes, the unsuffixed figure is the better)"
	emit "note placement ppe, spawn_cost, bare spawns of scale: not pinned (the scheduler places them)"
	emit "note placement sipc_bench: not pinned (the library pins nothing; caller, writer, reader and worker threads go where the scheduler puts them), but for the 64 B call, also measured with the bench pinned before sipc_create() (samecpu: its threads and worker inherit the CPU) and with the worker moved to the second CPU (crosscpu); sipc_call_64_best_p50 is the best of the three"
}
env_notes

# ------------------------------------------------------------ baselines
for p in raw_pingpong raw_pipelined raw_batched raw_scale newline_proto; do
	want "$p" || continue
	if [ -x "$BIN/$p" ]; then
		run "$p" 120 "$BIN/$p" $q
	else
		emit "note $p missing: $BIN/$p was not built"
		status=1
	fi
done
if ! want ppe; then :
elif command -v "$PY" >/dev/null 2>&1; then
	run ppe 120 "$PY" "$HERE/ppe_bench.py" $q --workers 2
else
	emit "note ppe skipped: python3 absent"
fi

# ----------------------------------------------------------------- sipc
sipc_ok=1
if [ -f "$BIN/sipc-build.failed" ] || [ ! -x "$BIN/sipc_bench" ]; then
	emit "note sipc skipped: libsipc.a, the fixtures or sipc_bench did not build (log: $BIN/sipc-build.log)"
	sipc_ok=0
elif [ ! -x "$FIX/echo" ]; then
	emit "note sipc skipped: fixture $FIX/echo missing"
	sipc_ok=0
fi
if [ $sipc_ok = 1 ]; then
	state="$BIN/state"
	rm -rf "$state"
	for sec in call pipe spawn mem scale stall journal accept containment \
	    cost sandbox sandbox_hardening cancel recycle figures fdpass \
	    spawn_contained syscalls
	do
		want "$sec" || continue
		run "sipc_$sec" 300 "$BIN/sipc_bench" $q --fixtures "$FIX" \
		    --state-dir "$state" --stall-ms "$STALL_MS" --init "$INIT" \
		    "$sec"
	done
	rm -rf "$state"
	# Starting a worker per way, from posix_spawn to each containment
	# mode of the local adapter (a worker that exits at once).
	if want spawn_cost; then
		if [ -x "$BIN/spawn_cost" ]; then
			run spawn_cost 300 "$BIN/spawn_cost" $q "$INIT"
		else
			emit "note spawn_cost missing: $BIN/spawn_cost was not built"
			status=1
		fi
	fi
	# 256 workers at once in the containment spawn_contained asks the
	# library for (a PID namespace under sipc-init, a leaf cgroup each),
	# without the library; it needs sipc-init and the echo fixture.
	if want raw_spawn_contained; then
		if [ -x "$BIN/raw_spawn_contained" ] && [ -x "$INIT" ]; then
			run raw_spawn_contained 120 "$BIN/raw_spawn_contained" $q \
			    "$INIT" "$FIX/echo"
		else
			emit "note raw_spawn_contained missing: $BIN/raw_spawn_contained or $INIT was not built"
			status=1
		fi
	fi
fi

# -------------------------------------------------------------- convert
# Ghostscript through sipc-exec against gs forked directly, same
# documents, same threads, same run; then a hung document's deadline to
# its TIMEOUT and to its tree gone.
if [ $sipc_ok = 1 ] && want convert; then
	if [ ! -x /usr/bin/gs ]; then
		emit "note convert skipped: /usr/bin/gs absent (make deps installs ghostscript)"
	elif [ ! -x "$CONVERT" ] || [ ! -x "$EXEC" ] || [ ! -f "$FIX/docs/MANIFEST" ]; then
		emit "note convert missing: $CONVERT, $EXEC or $FIX/docs was not built"
		status=1
	else
		run convert 300 "$CONVERT" --bench $q --docs "$FIX/docs" \
		    --exec "$EXEC" --init "$INIT"
	fi
fi

# --------------------------------------------------------------- ratios
# ratio NAME NUM_METRIC DEN_METRIC OP TARGET [DEN_FACTOR]
# DEN_METRIC "-" compares the metric itself with the target (a count
# per call, not a ratio of two figures).
met=0; missed=0; missed_names=""; unmeasured=0
ratio() {
	line=$(awk -v n="$2" -v d="$3" -v op="$4" -v t="$5" -v name="$1" \
	    -v f="${6:-1}" '
		BEGIN { if (d == "-") { dv = 1; hd = 1 } }
		$1 == "metric" && $2 == n { nv = $3; hn = 1 }
		$1 == "metric" && $2 == d { dv = $3; hd = 1 }
		END {
			if (!hn || !hd || dv * f == 0) {
				printf "note ratio %s n/a (missing %s or %s)\n", name, n, d
				exit
			}
			r = nv / (dv * f)
			ok = (op == "<=") ? (r <= t) : (r >= t)
			printf "ratio %s %.3f (target %s %s) %d\n", name, r, op, t, ok
		}' "$out")
	case "$line" in
	ratio*)
		ok=${line##* }
		emit "${line% *}"
		if [ "$ok" = 1 ]; then met=$((met + 1)); else
			missed=$((missed + 1)); missed_names="$missed_names $1"; fi ;;
	*)
		# a partial run (BENCH_ONLY) lacks most operands: say nothing
		[ -z "$ONLY" ] && emit "$line" ;;
	esac
}
# Every raw_* denominator below is the best channel at its better CPU
# placement, measured in this run (see the programs' "best at" notes).
# The sync target is against the best one-descriptor channel (a worker
# gets one protocol descriptor); the best of all channels stays, untargeted.
ratio sync_64_p50_vs_raw_pingpong_onefd sipc_call_64_best_p50 raw_pingpong_64_onefd_p50 '<=' 1.2
ratio ctxsw_per_sync_call sipc_cost_call_64_ctxsw - '<=' 3
# A cooperating handler's converter is gone this soon after the deadline
# (ms); the grace path (a handler that ignores its cancel) is the info.
ratio cancel_coop_gone_ms sipc_cancel_coop_gone_p50 - '<=' 50
# Recycling every 10 requests with a spare against no recycling, the
# same 5 ms calls; and with a spare, the time from a crash to the next
# request written to a worker (us; without a spare it is the info).
ratio recycle_every10_spare_vs_none sipc_recycle_every10_spare_calls sipc_recycle_none_calls '>=' 0.97
ratio crash_next_write_spare_us sipc_crash_next_write_spare_p50 - '<=' 1000
# A document by descriptor (SIPC_REQ_FD) against the same bytes inline,
# time per call, the worker reading every byte both ways.
ratio fd_1m_vs_inline sipc_fdpass_fd_1m_p50 sipc_fdpass_inline_1m_p50 '<=' 1.0
ratio fd_64m_vs_inline sipc_fdpass_fd_64m_p50 sipc_fdpass_inline_64m_p50 '<=' 1.0
if grep -q '^metric sipc_cost_call_64_futex ' "$out" ||
    ! grep -q '^note cost: futex calls per sync call not measurable' "$out"
then
	ratio futex_per_sync_call sipc_cost_call_64_futex - '<=' 2
else
	emit "note ratio futex_per_sync_call not measurable here (see the cost note): neither met nor missed"
	unmeasured=$((unmeasured + 1))
fi
ratio pipe_64_msgs_vs_raw_pipelined sipc_pipe_w1_64_msgs raw_pipelined_64_msgs '>=' 1.0
ratio pipe_4k_msgs_vs_raw_pipelined sipc_pipe_w1_4096_msgs raw_pipelined_4096_msgs '>=' 1.0
ratio pipe_1m_mbps_vs_raw_pipelined sipc_pipe_w1_1048576_mbps raw_pipelined_1048576_mbps '>=' 0.9
# Against both sides batching (the writer a window per write(), the
# child every complete frame of a read() in one write()): the limit of a
# framed byte stream, which the one-write-per-frame baseline is not.
ratio pipe_64_msgs_vs_raw_batched sipc_pipe_w1_64_msgs raw_batched_64_msgs '>=' 0.8
ratio pipe_4k_msgs_vs_raw_batched sipc_pipe_w1_4096_msgs raw_batched_4096_msgs '>=' 0.9
ratio cpu_per_req_64_vs_raw_pipelined sipc_cost_pipe_w1_64_cpu_per_req raw_pipelined_64_cpu_per_msg '<=' 1.5
ratio scale_w64_vs_w4_64_msgs sipc_scale_w64_64_msgs sipc_scale_w4_64_msgs '>=' 0.7
ratio scale_w256_vs_w4_64_msgs sipc_scale_w256_64_msgs sipc_scale_w4_64_msgs '>=' 0.5
ratio spawn_256_ready_vs_bare_spawns_per_cpu sipc_scale_w256_ready sipc_scale_bare_spawn_256_per_cpu '<=' 1.0
# 256 workers ready in a PID namespace under sipc-init with a cgroup
# each, against the same processes started at once without the library
# (the bare rounds alternate with sipc's in the spawn_contained section).
ratio spawn_256_ready_vs_same_containment_at_once sipc_spawn_contained_256_ready sipc_spawn_contained_256_bare_ready '<=' 1.25
ratio req_64_vs_ppe sipc_pipe_w2_64_msgs ppe_64_reqs '>=' 20
ratio req_64_vs_newline_proto sipc_pipe_w1_64_msgs newline_proto_64_reqs '>=' 5
ratio stall_healthy_vs_3_workers sipc_stall_healthy_msgs sipc_stall_base3_msgs '>=' 0.9
ratio stall_rss_growth_vs_ceiling sipc_stall_rss_growth sipc_stall_mem_ceiling '<=' 1.0
ratio stall_detect_vs_timeout sipc_stall_detect_ms sipc_stall_timeout_ms '<=' 1.1
# The price of exact start evidence (ACCEPT right before each handler)
# against the old whole-batch ACCEPT, same worker, same run.
ratio accept_exact_vs_batch_call_64_p50 sipc_accept_exact_call_64_p50 sipc_accept_batch_call_64_p50 '<=' 1.1
ratio accept_exact_vs_batch_pipe_64_msgs sipc_accept_exact_pipe_64_msgs sipc_accept_batch_pipe_64_msgs '>=' 0.9
ratio accept_exact_vs_batch_pipe_64_cpu sipc_accept_exact_pipe_64_cpu_per_req sipc_accept_batch_pipe_64_cpu_per_req '<=' 1.1
# The sandbox's hardening (filter, limits and capped /tmp, identity,
# Landlock) all on against all off, same run: spawn-to-ready (us more,
# the median of each repetition's difference; and the p50 in ms) and
# pipelined 64 B through one worker (the median of each round pair's
# ratio).
ratio sbx_ready_all_on_minus_off_us sipc_sbx_ready_all_on_minus_off_us - '<=' 1000
ratio sbx_ready_all_on_p50_ms sipc_sbx_ready_p50_all_on - '<=' 25
ratio sbx_pipe_64_hardened_vs_unhardened sipc_sbx_pipe_64_hardened_vs_unhardened - '>=' 0.95
ratio convert_sipc_vs_direct_gs sipc_convert_docs_per_s direct_gs_docs_per_s '>=' 0.95
um=""
[ "$unmeasured" != 0 ] && um="; $unmeasured not measurable here"
[ -z "$ONLY" ] &&
    emit "note targets: $met met, $missed missed${missed_names:+:$missed_names}$um"

# Context, not targets: the same figures against the baselines with the
# two processes on different CPUs, and sipc's call not pinned (the
# library pins nothing; the target takes its best placement, as the raw
# figure is the best channel's at its better placement).
info() {
	awk -v n="$2" -v d="$3" -v name="$1" '
		$1 == "metric" && $2 == n { nv = $3; hn = 1 }
		$1 == "metric" && $2 == d { dv = $3; hd = 1 }
		END { if (hn && hd && dv != 0)
			printf "info %s %.3f (no target)\n", name, nv / dv }' "$out" |
	    while read -r l; do emit "$l"; done
}
info sync_64_p50_vs_raw_pingpong sipc_call_64_best_p50 raw_pingpong_64_p50
# The grace path (a handler that ignores its cancel) against the
# cooperating one of the cancel_coop_gone_ms target.
info cancel_coop_vs_grace_gone sipc_cancel_coop_gone_p50 sipc_cancel_grace_gone_p50
info crash_next_write_nospare_vs_spare sipc_crash_next_write_nospare_p50 sipc_crash_next_write_spare_p50
# What request_figures = 1 costs a sync call (two readings per call).
info figures_on_vs_off_call_64_p50 sipc_figures_on_call_64_p50 sipc_figures_off_call_64_p50
info sync_64_p50_vs_raw_pingpong_crosscpu sipc_call_64_crosscpu_p50 raw_pingpong_64_crosscpu_p50
info sync_64_p50_unpinned_vs_raw_pingpong sipc_call_64_p50 raw_pingpong_64_p50
for ch in sock pipe pipe1m; do
	info "sync_64_p50_vs_raw_pingpong_$ch" sipc_call_64_best_p50 "raw_pingpong_64_${ch}_p50"
done
info ctxsw_per_sync_call_vs_raw_pingpong sipc_cost_call_64_ctxsw raw_pingpong_64_ctxsw
# System calls of one sync 64 B call on each side (counted by the
# kernel, the syscalls section) against the one-descriptor channel of
# the sync target, and CPU per call against it (samecpu, both sides).
for side in caller worker; do
	info "syscalls_per_sync_call_${side}_vs_raw_pingpong_onefd" \
	    "sipc_call_64_samecpu_syscalls_$side" "raw_pingpong_64_onefd_syscalls_$side"
done
# One descriptor (what a worker gets) against the best channel: the floor
# of the sync ratio for any one-descriptor channel, and sipc against it.
info raw_pingpong_64_onefd_vs_best raw_pingpong_64_onefd_p50 raw_pingpong_64_p50
info scale_w16_vs_w4_64_msgs sipc_scale_w16_64_msgs sipc_scale_w4_64_msgs
# What many processes cost without sipc (one epoll thread, no locks): the
# share of the 4-child figure raw processes keep on this machine, and
# sipc's scale figures against raw at the same process count.
for n in 16 64 256; do
	info "raw_scale_w${n}_vs_w4_64_msgs" "raw_scale_w${n}_64_msgs" raw_scale_w4_64_msgs
done
for n in 4 16 64 256; do
	info "scale_w${n}_vs_raw_scale_w${n}_64_msgs" "sipc_scale_w${n}_64_msgs" "raw_scale_w${n}_64_msgs"
done
info req_64_vs_newline_proto_crosscpu sipc_pipe_w1_64_msgs newline_proto_64_crosscpu_reqs
# What 256 starts cost when they compete for the CPUs, without sipc:
# the same binary spawned 256 times at once, against sequential spawns
# divided by the CPUs (the spawn target's limit), and sipc against it.
info bare_spawns_together_vs_per_cpu sipc_scale_bare_spawn_256_together sipc_scale_bare_spawn_256_per_cpu
info spawn_256_ready_vs_bare_spawns_together sipc_scale_w256_ready sipc_scale_bare_spawn_256_together
# The same contained start: the supervisor's CPU per worker, sipc
# against the bare one, and the bare start with one exec saved (the
# cloned child does sipc-init's work itself) against the one with it.
info spawn_256_contained_cpu_vs_same_containment sipc_spawn_contained_256_cpu_per_worker sipc_spawn_contained_256_bare_cpu_per_worker
info spawn_256_ready_vs_same_containment_alone sipc_spawn_contained_256_ready raw_spawn_contained_256_same_ready
info raw_spawn_contained_noexec_vs_same raw_spawn_contained_256_noexec_ready raw_spawn_contained_256_same_ready
info spawn_256_ready_vs_contained_noexec sipc_spawn_contained_256_ready raw_spawn_contained_256_noexec_ready
# The exec saved by a copy of the caller, priced while a supervisor of
# 256 workers runs (its threads and memory are what the copy copies).
info spawn_contained_live_noexec_vs_same sipc_spawn_contained_256_live_noexec_ready sipc_spawn_contained_256_live_same_ready
# 1 MiB pipelined: the payload copied into the library (one submitter)
# against the best channel, and a lent payload (SIPC_REQ_LEND, no copy)
# against the copied one.  The target's figure is the best load's.
info pipe_1m_copied_msgs_vs_raw_pipelined sipc_pipe_w1_1048576_1sub_msgs raw_pipelined_1048576_msgs
info pipe_1m_lend_vs_copied_msgs sipc_pipe_w1_1048576_lend_msgs sipc_pipe_w1_1048576_1sub_msgs
# A load refilled one request per completion, against the same limits.
info pipe_64_each_msgs_vs_raw_pipelined sipc_pipe_w1_64_each_msgs raw_pipelined_64_msgs
info cpu_per_req_64_each_vs_raw_pipelined sipc_cost_pipe_w1_64_each_cpu_per_req raw_pipelined_64_cpu_per_msg
# The start counter against the same exact rule in ACCEPT frames.
info accept_counter_vs_frames_call_64_p50 sipc_accept_exact_call_64_p50 sipc_accept_frames_call_64_p50
info accept_counter_vs_frames_pipe_64_msgs sipc_accept_exact_pipe_64_msgs sipc_accept_frames_pipe_64_msgs
info accept_counter_vs_frames_pipe_64_cpu sipc_accept_exact_pipe_64_cpu_per_req sipc_accept_frames_pipe_64_cpu_per_req
# The sandbox provider (bubblewrap) against the local adapter.
for f in spawn_ready_1_p50 spawn_ready_64_p50 pipe_w4_64_msgs; do
	info "sandbox_vs_local_$f" "sipc_sandbox_sandbox_$f" "sipc_sandbox_local_$f"
done

# What containment costs: each namespace mode against process_group, and
# each way of starting a worker against posix_spawn, from the same run.
# Comparisons, not targets (not counted above); a mode this machine does
# not offer has a "not available" note instead of figures.
compare() {
	awk -v n="$2" -v d="$3" -v name="$1" '
		$1 == "metric" && $2 == n { nv = $3; hn = 1 }
		$1 == "metric" && $2 == d { dv = $3; hd = 1 }
		END { if (hn && hd && dv != 0)
			printf "ratio %s %.3f (no target)\n", name, nv / dv }' "$out" |
	    while read -r l; do emit "$l"; done
}
for m in pid_namespace user_namespace; do
	for f in spawn_ready_1_p50 spawn_ready_64_p50 pipe_w1_64_msgs \
	    pipe_w4_64_msgs; do
		compare "contain_${m}_vs_process_group_$f" \
		    "sipc_contain_${m}_$f" "sipc_contain_process_group_$f"
	done
	compare "spawn_cost_${m}_vs_process_group" \
	    "spawn_cost_local_${m}_p50" "spawn_cost_local_process_group_p50"
done
# A leaf cgroup per worker (made, placed in, killed, removed) against the
# same mode without one.
for m in process_group pid_namespace user_namespace; do
	compare "spawn_cost_${m}_cgroup_vs_no_cgroup" \
	    "spawn_cost_local_${m}_cgroup_p50" "spawn_cost_local_${m}_p50"
done
for w in clone3 local_process_group local_pid_namespace local_user_namespace
do
	compare "spawn_cost_${w}_vs_posix_spawn" "spawn_cost_${w}_p50" \
	    spawn_cost_posix_spawn_p50
done
emit "note env load_average: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at end"

# ---------------------------------------------------------------- save
cp "$out" "$RES/$stamp.txt" && cp "$out" "$RES/latest.txt"
rm -f "$out"
if command -v gnuplot >/dev/null 2>&1; then
	if sh "$HERE/plot.sh" "$RES/latest.txt" "$RES/latest.png" "$BIN/plot"; then
		echo "bench: plot written to $RES/latest.png"
	else
		echo "bench: plot failed" >&2
	fi
else
	echo "bench: gnuplot absent, no plot"
fi
echo "bench: results in $RES/$stamp.txt and $RES/latest.txt"
[ $sipc_ok = 0 ] && exit 2
exit $status
