#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# examples/httpd-load.sh: twheel_httpd under wrk, per timer backend.
#
#   examples/httpd-load.sh [-b "heap timerfd twheel twheel-ring"] [-c "1000 10000"]
#                          [-d seconds] [-t threads] [-i idle_ms]
#                          [-g grace_ms] [-p port] [-w wrk_threads]
#                          [-B busy_ms] [-T table] [-r reps]
#
# For each backend (default: heap and timerfd, and twheel and twheel-ring
# if /dev/twheel exists) and each connection count N:
#   keepalive  N keep-alive connections of wrk for -d s (5), with the
#              server's default timeouts (30 s idle, 5 s per request);
#   quiet      a server with an idle timeout of -i ms (1000): httpd_idle
#              keeps N - N/10 connections busy, each with a request every
#              -B ms (-i/2; paced: wrk would saturate the server and leave its
#              own connections idle past the timeout), and opens N/10 that
#              send one request and go silent, so their idle timeouts fire
#              under load; it measures how late each close came after
#              request + idle timeout, and counts the early and the lost
#              (not closed within -g ms, 2000, of the deadline) and busy
#              connections closed (busy_closed). requests/s is the
#              server's.
# One line per phase, "load: key=value ...": requests/s (wrk's) and its
# p50/p99 latency, the server's CPU time per request (getrusage(), user +
# system, over the phase, divided by the requests it answered), the whole
# machine's busy CPU time per request (/proc/stat: the load's share too,
# and kernel work no process is charged for, such as the ring's drain), the
# kernel's slab growth at mid-phase (/proc/meminfo Slab; sockets
# included: compare backends) and, for twheel, the kernel memory its
# files are charged (TWHEEL_IOC_INFO's user_timers units of 256 B) and
# the wheel's operations (debugfs); for quiet, the lateness p50/p99/max,
# early, lost and twice (idle expiries for connections already closed,
# counted by the server). "check=ok" or "check=FAIL:why"; the exit status
# is 1 if any phase failed: a request unanswered (wrk's socket errors or
# non-2xx, or the server answered fewer than wrk counted), an early or
# lost close, twice, idle_early, a request deadline fired, or a timer error.
#
# With -r R the keep-alive and quiet phases run R times per connection
# count, the backends in the order given and then in the reverse order
# (heap ring ring heap ...), so that a host that speeds up or slows down
# over the run weighs on every backend alike; the profile phase runs
# once. With -T N the lines are "table=N backend=B phase=P conns=C rep=K
# ...", K from 0, as make bench collects them (tests/vm/guest/run.sh,
# bench part httpd).
# POSIX sh with local and ulimit -n (dash, busybox ash): it runs in the VM.
# HTTPD, IDLE and WRK name the programs.
#
# With PERF=<perf>, a third phase per backend and count, profile: the
# keep-alive load again, with perf's cpu-clock sampling on every CPU (no
# PMU needed; apart from the first two phases, whose CPU figures it would
# inflate): timer_pct= is the share of the server's samples in timer work
# (the kernel's hrtimer, timerfd, timerqueue and twheel code; the server's
# heap_, tfd_, tw_, idle_ and req_ functions and libtwheel's twheel_ ones;
# a static function the compiler inlined counts where it was inlined, and
# epoll's part in timerfd wake-ups does not count), and "# profile" lines
# list the server's top symbols.
#
# Both programs run under nice (NICE="nice -n 10"): the machine may be
# shared. Needs wrk, and RLIMIT_NOFILE (raised to 65536 if it can be) above
# N + 100, 3N + 100 for timerfd (a socket and two timerfds per connection):
# else the phase runs with the most connections (in thousands) that fit.
# shellcheck shell=dash
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
HTTPD=${HTTPD:-$ROOT/examples/twheel_httpd}
IDLE=${IDLE:-$ROOT/examples/httpd_idle}
WRK=${WRK:-wrk}
NICE=${NICE-nice -n 10}
STATS=/sys/kernel/debug/twheel/stats

backends=
conns="1000 10000"
dur=5
threads=$(nproc)
wrk_threads=2
idle_ms=1000
grace_ms=2000
port=18080
table=
busy_ms=
reps=1
rep=0

while getopts "b:c:d:t:i:g:p:w:B:T:r:" o; do
	case "$o" in
	b) backends=$OPTARG ;;
	c) conns=$OPTARG ;;
	d) dur=$OPTARG ;;
	t) threads=$OPTARG ;;
	i) idle_ms=$OPTARG ;;
	g) grace_ms=$OPTARG ;;
	p) port=$OPTARG ;;
	w) wrk_threads=$OPTARG ;;
	B) busy_ms=$OPTARG ;;
	T) table=$OPTARG ;;
	r) reps=$OPTARG ;;
	*) sed -n '4,9p' "$0" >&2; exit 2 ;;
	esac
done
busy_ms=${busy_ms:-$((idle_ms / 2))}
if [ -z "$backends" ]; then
	backends="heap timerfd"
	[ ! -c /dev/twheel ] || backends="$backends twheel twheel-ring"
fi
for f in "$HTTPD" "$IDLE"; do
	[ -x "$f" ] || { echo "httpd-load: no $f: make userspace" >&2; exit 2; }
done
command -v "$WRK" >/dev/null || { echo "httpd-load: no wrk" >&2; exit 2; }

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
nofile=$(ulimit -n)

# fit BACKEND N: N, or the most connections (in thousands) the server's
# RLIMIT_NOFILE allows: a socket each, and with timerfd two timerfds.
fit() {
	local per=1 n=$2
	[ "$1" != timerfd ] || per=3
	if [ $((per * n + 100)) -gt "$nofile" ]; then
		n=$(((nofile - 100) / per / 1000 * 1000))
		echo "# httpd-load: $1 at $n connections, not $2: RLIMIT_NOFILE is $nofile" >&2
	fi
	echo "$n"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/httpd-load.XXXXXX")
: >"$tmp/lines"
srv_pid=
cleanup() {
	[ -z "$srv_pid" ] || kill -TERM "$srv_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# field LINE NAME: the value of NAME=... in LINE (0 if absent)
field() {
	local v
	v=$(echo " $1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p")
	echo "${v:-0}"
}

# ms since boot (/proc/uptime: 10 ms steps), for the phases' lengths
uptime_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }

slab_kb() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }

# The wheel's scheduled, expired and cancelled timers, all CPUs.
tw_ops() {
	if [ -r "$STATS" ]; then
		awk 'NR > 1 { s += $4; e += $5; c += $6 } END { print s + 0, e + 0, c + 0 }' "$STATS"
	else
		echo "0 0 0"
	fi
}

# start_server BACKEND IDLE_MS CONNS: sets srv_pid once it is ready.
start_server() {

	: >"$tmp/server.out"
	# Room for every connection on one thread: SO_REUSEPORT's hash is
	# not even.
	$NICE "$HTTPD" -b "$1" -t "$threads" -p "$port" -i "$2" -m $(($3 + 64)) \
		>"$tmp/server.out" 2>&1 &
	srv_pid=$!
	for _ in $(seq 100); do
		grep -q '^httpd: ready' "$tmp/server.out" && return 0
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "httpd-load: the server did not start:" >&2
	cat "$tmp/server.out" >&2
	exit 1
}

# counters: SIGUSR1, then the line it printed
counters() {
	local before
	before=$(grep -c '^httpd: backend=' "$tmp/server.out")
	kill -USR1 "$srv_pid"
	for _ in $(seq 50); do
		[ "$(grep -c '^httpd: backend=' "$tmp/server.out")" -gt "$before" ] && break
		sleep 0.1
	done
	grep '^httpd: backend=' "$tmp/server.out" | tail -n1
}

stop_server() {
	kill -TERM "$srv_pid"
	wait "$srv_pid"
	srv_pid=
}

# delta A B NAME: B's NAME minus A's
delta() { echo $(($(field "$2" "$3") - $(field "$1" "$3"))); }

TIMER_SYMS='hrtimer|timerfd|timerqueue|twheel|(^| )tw_|heap_|tfd_|idle_|req_'

# profile B N: the profile phase (PERF set)
profile() {
	local b=$1 n=$2 pct
	[ -n "${PERF:-}" ] || return 0
	start_server "$b" 30000 "$n"
	# perf takes seconds to start under emulation: the load starts when
	# its workload, which only waits, does.
	rm -f "$tmp/perf.ready"
	"$PERF" record -q -a -e cpu-clock -F 999 -o "$tmp/perf.data" -- \
		sh -c ": >'$tmp/perf.ready'; exec sleep $dur" >"$tmp/perf-record.err" 2>&1 &
	for _ in $(seq 600); do
		[ ! -e "$tmp/perf.ready" ] || break
		sleep 0.1
	done
	$NICE "$WRK" -t"$wrk_threads" -c"$n" -d"${dur}s" --timeout 30s \
		"http://127.0.0.1:$port/" >"$tmp/wrk-profile.out" 2>&1
	wait $!
	stop_server
	# The server's samples, in percent of the server's: "pct [k] symbol".
	"$PERF" report -i "$tmp/perf.data" --stdio --no-children --sort comm,sym \
		2>"$tmp/perf.err" | grep -v '^#' | grep '%' >"$tmp/perf.all"
	awk -v c="${HTTPD##*/}" '$2 == c { p = $1; sub("%", "", p); $1 = $2 = ""
		sub(/^ +/, ""); t += p; l[++n] = p " " $0 }
		END { for (i = 1; i <= n; i++) { split(l[i], f, " ")
			sub(/^[^ ]+ /, "", l[i]); printf "%.2f%% %s\n", 100 * f[1] / t, l[i] } }' \
		"$tmp/perf.all" >"$tmp/perf.txt"
	pct=$(awk -v re="$TIMER_SYMS" '{ p = $1; sub("%", "", p)
		s = $0; sub(/^ *[0-9.]+% +\[[^]]*\] +/, "", s)
		if (s ~ re) t += p } END { printf "%.1f", t }' "$tmp/perf.txt")
	if [ -s "$tmp/perf.txt" ]; then
		head -n 15 "$tmp/perf.txt" | sed "s/^ */# profile backend=$b conns=$n: /"
		report "load: backend=$b phase=profile conns=$n timer_pct=$pct" \
			"symbols=$(wc -l <"$tmp/perf.txt") check=ok"
	else
		head -n 5 "$tmp/perf-record.err" "$tmp/perf.err" "$tmp/perf.all" "$tmp/wrk-profile.out" |
			sed 's/^/# perf: /'
		report "load: backend=$b phase=profile conns=$n check=FAIL:no_samples"
	fi
}

cpu_us() { echo $(($(field "$1" utime_us) + $(field "$1" stime_us))); }

# The whole machine's busy CPU time in µs (/proc/stat's first line: user,
# nice, system, irq and softirq, in USER_HZ ticks, 100 a second): the
# server's, the load's (the same per request whatever the backend) and the
# kernel's work for either that no process is charged for, such as the
# kworker that drains twheel's submission ring.
busy_us() {
	awk '/^cpu / { printf "%.0f", ($2 + $3 + $4 + $7 + $8) * 10000; exit }' /proc/stat
}

# per_req US REQUESTS: µs per request, 3 decimals
per_req() { awk -v u="$1" -v r="$2" 'BEGIN { printf "%.3f", r ? u / r : 0 }'; }

# wrk_summary FILE: "rps= wrk_requests= sock_errors= (connect + read +
# write) connect_errors= ... timeouts= non2xx= lat_p50= lat_p99=": a
# timeout is a reply later than wrk's --timeout, not an error"
wrk_summary() {
	awk '
		/Requests\/sec:/ { rps = $2 }
		/requests in/ { req = $1 }
		/Socket errors:/ { gsub(",", ""); sc = $4; sr = $6; sw = $8; st = $10 }
		/Non-2xx or 3xx/ { bad = $5 }
		$1 == "50%" { p50 = $2 }
		$1 == "99%" { p99 = $2 }
		END { printf "rps=%s wrk_requests=%d sock_errors=%d connect_errors=%d read_errors=%d write_errors=%d timeouts=%d non2xx=%d lat_p50=%s lat_p99=%s",
			rps ? rps : 0, req, sc + sr + sw, sc, sr, sw, st, bad,
			p50 ? p50 : "-", p99 ? p99 : "-" }' "$1"
}

# report LINE: print a phase's line and keep it for the summary
report() {
	if [ -n "$table" ]; then
		echo "$*" | sed "s/^load: \(backend=[^ ]* phase=[^ ]* conns=[^ ]*\)/table=$table \1 rep=$rep/"
	else
		echo "$*"
	fi
	echo "$*" >>"$tmp/lines"
}

# verdict WHY...: "check=ok" or "check=FAIL:why,why"
verdict() {
	local why
	why=$(printf '%s,' "$@" | sed 's/^,*//; s/,*$//; s/,,*/,/g')
	echo "check=${why:+FAIL:}${why:-ok}"
}

# The checks every phase shares, on the counters' deltas.
server_problems() {
	local a=$1 b=$2 f
	for f in idle_early twice deadline_fires timer_errors errors rejected; do
		[ "$(delta "$a" "$b" $f)" = 0 ] || echo "$f"
	done
}

keepalive() {
	local b=$1 n=$2 c0 c1 cm s0 sm w t0 t1 req wreq why tw_kb u0 u1
	start_server "$b" 30000 "$n"
	s0=$(slab_kb)
	t0=$(tw_ops)
	c0=$(counters)
	u0=$(busy_us)
	$NICE "$WRK" -t"$wrk_threads" -c"$n" -d"${dur}s" --latency --timeout 30s \
		"http://127.0.0.1:$port/" >"$tmp/wrk.out" 2>&1 &
	sleep "$(awk -v d="$dur" 'BEGIN { print d / 2 }')"
	cm=$(counters)
	sm=$(slab_kb)
	wait $!
	u1=$(busy_us)
	c1=$(counters)
	t1=$(tw_ops)
	stop_server
	w=$(wrk_summary "$tmp/wrk.out")
	req=$(delta "$c0" "$c1" requests)
	wreq=$(field "$w" wrk_requests)
	tw_kb=$(($(field "$cm" tw_units) * 256 / 1024))
	why=$(server_problems "$c0" "$c1")
	[ "$(field "$w" sock_errors)" = 0 ] || why="$why wrk_socket_errors"
	[ "$(field "$w" non2xx)" = 0 ] || why="$why wrk_non2xx"
	[ "$wreq" -gt 0 ] && [ "$req" -ge "$wreq" ] || why="$why unanswered"
	# shellcheck disable=SC2086 # one reason a word
	report "load: backend=$b phase=keepalive conns=$n threads=$threads $w" \
		"requests=$req open_mid=$(field "$cm" open)" \
		"cpu_us_per_req=$(per_req $(($(cpu_us "$c1") - $(cpu_us "$c0"))) "$req")" \
		"machine_us_per_req=$(per_req $((u1 - u0)) "$req")" \
		"slab_kb=$((sm - s0)) tw_kb=$tw_kb tw_timers_mid=$(field "$cm" tw_timers)" \
		"tw_ops_per_req=$(awk -v a="$t0" -v b="$t1" -v r="$req" 'BEGIN {
			split(a, x, " "); split(b, y, " ")
			printf "%.4f", r ? (y[1] - x[1] + y[3] - x[3]) / r : 0 }')" \
		"deadline_fires=$(delta "$c0" "$c1" deadline_fires)" \
		"timer_errors=$(delta "$c0" "$c1" timer_errors)" \
		"$(verdict $why)"
	[ -z "${VERBOSE:-}" ] || cat "$tmp/wrk.out" "$tmp/server.out"
}

quiet() {
	local b=$1 n=$2 k busy c0 c1 s0 sm q req why closes t0 t1 pid u0 u1
	k=$((n / 10))
	busy=$((n - k))
	start_server "$b" "$idle_ms" "$n"
	s0=$(slab_kb)
	c0=$(counters)
	t0=$(uptime_ms)
	u0=$(busy_us)
	$NICE "$IDLE" -p "$port" -n "$k" -b "$busy" -B "$busy_ms" \
		-i "$idle_ms" -g "$grace_ms" >"$tmp/idle.out" 2>&1 &
	pid=$!
	sleep "$(awk -v i="$idle_ms" 'BEGIN { print i / 1000 + 0.5 }')"
	sm=$(slab_kb)
	wait "$pid"
	u1=$(busy_us)
	t1=$(uptime_ms)
	c1=$(counters)
	stop_server
	q=$(grep '^httpd_idle:' "$tmp/idle.out")
	req=$(delta "$c0" "$c1" requests)
	closes=$(delta "$c0" "$c1" idle_closes)
	why=$(server_problems "$c0" "$c1")
	[ -n "$q" ] || why="$why httpd_idle_failed"
	[ "$(field "$q" early)" = 0 ] || why="$why early"
	[ "$(field "$q" lost)" = 0 ] || why="$why lost"
	[ "$(field "$q" errors)" = 0 ] || why="$why idle_client_errors"
	[ "$(field "$q" answered)" = "$k" ] || why="$why idle_unanswered"
	[ "$(field "$q" busy_closed)" = 0 ] || why="$why busy_closed"
	[ "$closes" = "$k" ] || why="$why idle_closes!=$k"
	# shellcheck disable=SC2086 # one reason a word
	report "load: backend=$b phase=quiet conns=$n idle_conns=$k busy_conns=$busy" \
		"idle_ms=$idle_ms busy_ms=$busy_ms threads=$threads" \
		"rps=$(awk -v r="$req" -v t=$((t1 - t0)) 'BEGIN { printf "%.0f", t ? r / (t / 1e3) : 0 }')" \
		"requests=$req" \
		"cpu_us_per_req=$(per_req $(($(cpu_us "$c1") - $(cpu_us "$c0"))) "$req")" \
		"machine_us_per_req=$(per_req $((u1 - u0)) "$req")" \
		"slab_kb=$((sm - s0))" \
		"late_p50_ms=$(field "$q" late_p50_ms) late_p99_ms=$(field "$q" late_p99_ms)" \
		"late_max_ms=$(field "$q" late_max_ms) early=$(field "$q" early)" \
		"lost=$(field "$q" lost) twice=$(delta "$c0" "$c1" twice)" \
		"idle_closes=$closes busy_closed=$(field "$q" busy_closed)" \
		"idle_early=$(delta "$c0" "$c1" idle_early)" \
		"idle_rearms=$(delta "$c0" "$c1" idle_rearms)" \
		"deadline_fires=$(delta "$c0" "$c1" deadline_fires)" \
		"timer_errors=$(delta "$c0" "$c1" timer_errors)" \
		"$(verdict $why)"
	[ -z "${VERBOSE:-}" ] || cat "$tmp/idle.out" "$tmp/server.out"
}

# reverse WORD...: the words in the reverse order
reverse() {
	local out='' w
	for w in "$@"; do
		out="$w${out:+ $out}"
	done
	echo "$out"
}

case "$reps" in
''|*[!0-9]*|0) echo "httpd-load: -r wants a count from 1" >&2; exit 2 ;;
esac
echo "# httpd-load: $(uname -r), $(nproc) cpus, backends: $backends; conns: $conns; ${dur}s per phase; $reps rep(s)"
# shellcheck disable=SC2086 # a list of words
backwards=$(reverse $backends)
for want in $conns; do
	rep=0
	while [ "$rep" -lt "$reps" ]; do
		order=$backends
		[ $((rep % 2)) -eq 0 ] || order=$backwards
		for b in $order; do
			n=$(fit "$b" "$want")
			[ "$n" -gt 0 ] || continue
			keepalive "$b" "$n"
			quiet "$b" "$n"
			[ "$rep" -gt 0 ] || profile "$b" "$n"
		done
		rep=$((rep + 1))
	done
done
failed=$(grep -c 'check=FAIL' "$tmp/lines")
echo "# httpd-load: $failed phase(s) failed"
[ "$failed" -eq 0 ]
