#!/bin/sh
# bench/plot.sh RESULTS PNG WORKDIR - draw a results file as one PNG with
# four panels: pipelined throughput by payload size (sipc at 1/2/4
# workers against the raw limit, the best channel of the run, the newline
# prototype and ProcessPoolExecutor), synchronous round-trip latency by
# payload size (sipc against the best channel and against each channel),
# throughput as the pool grows as a fraction of the 4-worker figure (sipc
# and raw processes under one epoll thread) with memory per worker, and
# what one request costs (context switches and futex calls per
# synchronous call, CPU per pipelined request) against
# the raw baselines.  Called by run.sh.
set -eu
res=$1; png=$2; dir=$3
mkdir -p "$dir"

# series NAME PREFIX SUFFIX [SCALE]: "x value" rows for the payload sizes.
series() {
	awk -v p="$2" -v s="$3" -v k="${4:-1}" '
		$1 == "metric" {
			for (i = 0; i < 3; i++) {
				sz = (i == 0) ? 64 : (i == 1) ? 4096 : 1048576
				if ($2 == p sz s) print sz, $3 * k
			}
		}' "$res" > "$dir/$1.dat"
}
one() {   # one NAME METRIC X SCALE: a single point
	awk -v m="$2" -v x="$3" -v k="$4" \
	    '$1 == "metric" && $2 == m { print x, $3 * k }' "$res" > "$dir/$1.dat"
}
series raw_pipe raw_pipelined_ _mbps
series sipc_w1 sipc_pipe_w1_ _mbps
series sipc_w2 sipc_pipe_w2_ _mbps
series sipc_w4 sipc_pipe_w4_ _mbps
one newline newline_proto_64_reqs 64 0.000064
one ppe ppe_64_reqs 64 0.000064
series raw_p50 raw_pingpong_ _p50
series raw_p99 raw_pingpong_ _p99
series sipc_p50 sipc_call_ _p50
series sipc_p99 sipc_call_ _p99
series raw_sock_p50 raw_pingpong_ _sock_p50
series raw_pipe_p50 raw_pingpong_ _pipe_p50
# Throughput at N workers over the 4-worker figure of the same run, for
# sipc (prefix sipc_scale_w) and for raw processes (raw_scale_w).
share() {
	awk -v pre="$1" '$1 == "metric" && $2 == pre "4_64_msgs" { base = $3 }
		$1 == "metric" && index($2, pre) == 1 && $2 ~ /^[a-z_]+_w[0-9]+_64_msgs$/ {
			w = substr($2, length(pre) + 1); sub(/_64_msgs$/, "", w)
			v[w] = $3; order[++n] = w }
		END { if (base > 0) for (i = 1; i <= n; i++)
			print order[i], v[order[i]] / base }' "$res"
}
share sipc_scale_w > "$dir/scale_msgs.dat"
share raw_scale_w > "$dir/scale_raw.dat"
printf '64 0.7\n256 0.5\n' > "$dir/scale_target.dat"
# What a request costs: label, sipc, raw ("?" = not measured).
awk '$1 == "metric" { m[$2] = $3 }
	function v(k) { return (k in m) ? m[k] : "?" }
	END {
		if (!("sipc_cost_call_64_ctxsw" in m)) exit
		printf "\"context switches\\nper sync call\" %s %s\n",
		    v("sipc_cost_call_64_ctxsw"), v("raw_pingpong_64_ctxsw")
		printf "\"futex calls\\nper sync call\" %s ?\n",
		    v("sipc_cost_call_64_futex")
		printf "\"CPU us per pipelined\\n64 B request\" %s %s\n",
		    v("sipc_cost_pipe_w1_64_cpu_per_req"),
		    v("raw_pipelined_64_cpu_per_msg")
	}' "$res" > "$dir/cost.dat"
awk '$1 == "metric" && $2 ~ /^sipc_scale_w[0-9]+_rss_per_worker$/ {
	w = $2; sub(/^sipc_scale_w/, "", w); sub(/_rss_per_worker$/, "", w); print w, $3 }' \
    "$res" > "$dir/scale_rss.dat"

# A series file without rows would make gnuplot stop: plot only the rest.
p() {   # p FILE STYLE TITLE
	if [ -s "$dir/$1.dat" ]; then
		printf '%s"%s/%s.dat" using 1:2 %s title "%s"' "$sep" "$dir" "$1" "$2" "$3"
		sep=", "
	fi
}
sep=""
tput=$(p raw_pipe 'with linespoints lw 2 pt 7 lc rgb "black"' 'raw, best channel and placement, 64 in flight (limit)'
	p sipc_w1 'with linespoints lw 2 pt 5 lc rgb "#1f77b4"' 'sipc, 1 worker'
	p sipc_w2 'with linespoints lw 2 pt 9 lc rgb "#2ca02c"' 'sipc, 2 workers'
	p sipc_w4 'with linespoints lw 2 pt 11 lc rgb "#9467bd"' 'sipc, 4 workers'
	p newline 'with points pt 13 ps 2 lc rgb "#d62728"' 'newline prototype (sync)'
	p ppe 'with points pt 15 ps 2 lc rgb "#ff7f0e"' 'ProcessPoolExecutor, 2 workers')
sep=""
lat=$(p raw_p50 'with linespoints lw 2 pt 7 lc rgb "black"' 'raw ping-pong p50 (best CPU placement)'
	p raw_p99 'with linespoints lw 1 dt 2 pt 6 lc rgb "black"' 'raw ping-pong p99 (same placement)'
	p sipc_p50 'with linespoints lw 2 pt 5 lc rgb "#1f77b4"' 'sipc_call p50'
	p sipc_p99 'with linespoints lw 1 dt 2 pt 4 lc rgb "#1f77b4"' 'sipc_call p99'
	p raw_sock_p50 'with linespoints lw 1 dt 3 pt 1 lc rgb "#7f7f7f"' 'raw socketpair p50 (better placement)'
	p raw_pipe_p50 'with linespoints lw 1 dt 4 pt 2 lc rgb "#8c564b"' 'raw two pipes p50 (better placement)')
sep=""
scale=$(p scale_msgs 'axes x1y1 with linespoints lw 2 pt 5 lc rgb "#1f77b4"' '64 B msgs/s over 4 workers (left)'
	p scale_raw 'axes x1y1 with linespoints lw 1 dt 2 pt 4 lc rgb "black"' 'raw processes, one epoll thread, over 4 children (left)'
	p scale_target 'axes x1y1 with points pt 9 ps 2 lc rgb "#2ca02c"' 'target (left)'
	p scale_rss 'axes x1y2 with linespoints lw 2 pt 7 lc rgb "#d62728"' 'supervisor RSS per worker, kB (right)')
[ -n "$tput" ] || exit 1

{
	echo 'set terminal pngcairo noenhanced size 1600,1200 font "sans,11"'
	echo "set output \"$png\""
	echo 'set multiplot layout 2,2 title "sipc bench: '"$(basename "$res")"' ('"$(awk '$1=="note" && $2=="run" {print $3, $4}' "$res")"')"'
	echo 'set grid; set logscale x 2; set key top left box opaque'
	echo 'set xtics ("64 B" 64, "4 KiB" 4096, "1 MiB" 1048576); set xrange [32:2097152]'
	echo 'set logscale y; set format y "%g"'
	echo 'set title "Pipelined throughput by payload size"'
	echo 'set xlabel "payload size"; set ylabel "MB/s (payload one way, log)"'
	echo 'set key bottom right'
	echo "plot $tput"
	if [ -n "$lat" ]; then
		echo 'set title "Synchronous round trip by payload size"'
		echo 'set ylabel "latency, us (log)"; set key top left'
		echo "plot $lat"
	fi
	if [ -n "$scale" ]; then
		echo 'set title "Pool size: 64 B throughput over the 4-worker figure, and memory"'
		echo 'set xtics auto; set xtics (4, 16, 64, 256); set xrange [2:512]'
		echo 'unset logscale y; set yrange [0:*]; set offsets 0, 0, graph 0.1, 0'
		echo 'set xlabel "workers"; set ylabel "msgs/s / msgs/s at 4 workers"'
		echo 'set y2tics; set y2label "supervisor kB per worker"; set y2range [0:*]'
		echo 'set key bottom left'
		echo "plot $scale"
	fi
	if [ -s "$dir/cost.dat" ]; then
		echo 'set title "What a request costs: sipc against the raw limit"'
		echo 'unset logscale; unset y2tics; unset y2label; set xrange [*:*]; set yrange [0:*]'
		echo 'set offsets 0, 0, graph 0.1, 0; set bmargin 5'
		echo 'set xtics auto; set xlabel ""; set ylabel "count, or us"'
		echo 'set style data histograms; set style histogram clustered gap 1'
		echo 'set style fill solid 0.8 border -1; set boxwidth 0.9'
		echo 'set datafile missing "?"; set key top right'
		echo "plot \"$dir/cost.dat\" using 2:xtic(1) title \"sipc\" lc rgb \"#1f77b4\", '' using 3 title \"raw (best channel)\" lc rgb \"black\""
	fi
	echo 'unset multiplot'
} > "$dir/plot.gp"
gnuplot "$dir/plot.gp"
