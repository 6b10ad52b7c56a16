# shellcheck shell=bash
# scripts/bench-store.sh — the opens, the mount's memory once serving and
# the writes of the --entries store (scripts/bench without --only browse
# or --only huge), which scripts/bench sources (it uses its functions and
# variables: mount_oxyfs, unmount, counts, reset, delay, storeurl, BT,
# OXYFS, WORK, ...); not run alone.

# ---------------------------------------------------------------- open, memory
# open_store NOTE URL LAT: benchtool open (time, heap, requests), then a
# mount's RSS once it serves.
open_store() {
	local note=$1 url=$2 lat=$3 res rss
	delay "$lat"
	res=$("$BT" open "$url" 5) || { say "open of $note failed"; return; }
	printf '{"kind":"open","latency_ms":%d,"note":%s,"result":%s}\n' "$lat" "$(json_str "$note")" "$res" >>"$RESULTS"
	say "  open $note ${lat}ms: $res"
	if [ "$lat" = 0 ]; then
		local save=$STORE
		STORE=$url
		mount_oxyfs "$MNT" && {
			rss=$(awk '/VmRSS/ {print $2}' /proc/$MPID/status)
			local n
			n=$(echo "$res" | sed 's/.*"entries":\([0-9]*\).*/\1/')
			printf '{"kind":"mount","latency_ms":0,"entries":%s,"rss_kib":%s,"note":%s}\n' "$n" "$rss" "$(json_str "$note")" >>"$RESULTS"
		}
		unmount "$MNT"
		STORE=$save
	fi
}
# reopen_store NOTE URL: benchtool open through a list cache emptied
# first: the first open (decode, the cache written after), then reopens
# that map the lists (index.ListCache), beside the open without it above.
reopen_store() {
	local note=$1 url=$2 res
	delay 0
	res=$("$BT" open "$url" 5 "$WORK/benchlists") || { say "open of $note with the list cache failed"; return; }
	printf '{"kind":"reopen","latency_ms":0,"note":%s,"result":%s}\n' "$(json_str "$note")" "$res" >>"$RESULTS"
	say "  open $note with the list cache, 0ms: $(echo "$res" | sed 's/.*"first_open_ms":\([0-9.]*\).*"reopen_ms_median":\([0-9.]*\).*/first \1 ms, reopen \2 ms (median)/')"
	rm -rf "$WORK/benchlists"
}
say "open and memory"
for lat in $LATENCIES; do open_store "the generated store, after its fold (journal of folded lines)" "$STORE" "$lat"; done
for n in $ENTRIES $([ $LARGE = 1 ] && echo 1000000); do
	b=list$n
	"$BT" mkbucket "http://127.0.0.1:$S3PORT" $b
	"$BT" genlist "$(storeurl $b "http://127.0.0.1:$S3PORT")" "$n" 7 >/dev/null
	for lat in $LATENCIES; do open_store "a folded store of $n entries (one complete list)" "$(storeurl $b "$EP")" "$lat"; done
	reopen_store "a folded store of $n entries (one complete list)" "$(storeurl $b "$EP")"
done

# ---------------------------------------------------------------- writes
# On the folded store of $ENTRIES entries with an empty journal (list$ENTRIES),
# at each latency: the mount, index.Put in one process (the write path
# without FUSE), `oxyfs put` one process per signature, `oxyfs put --batch`;
# and once on the generated store right after its fold, whose journal still
# holds every folded line (for an hour), which each journal update rewrites.
say "writes: 8 concurrent writers"
capped() { # HOW COUNT: the result of a write run stopped at the cap
	printf '{"how":"%s","writers":8,"count":%d,"errors":0,"wall_s":%s,"per_s":0,"first_error":"stopped at the %s s cap"}' "$1" "$2" "$CAP" "$CAP"
}
record_write() { # LAT NOTE RESULT
	printf '{"kind":"write","latency_ms":%d,"note":%s,"result":%s,"req":%s}\n' "$1" "$(json_str "$2")" "$3" "$(counts)" >>"$RESULTS"
	say "  $2 ${1}ms: $3 $(counts)"
}
writes_on() { # STORE NOTE LAT [all]
	local save=$STORE res
	STORE=$1
	delay "$3"
	mount_oxyfs "$MNT" rw || die "rw mount failed"
	reset
	res=$(timeout "$CAP" "$BT" write "$MNT" 8 "$WRITES" "w-mount-$3-$RANDOM") || res=$(capped mount "$WRITES")
	record_write "$3" "$2" "$res"
	unmount "$MNT"
	if [ "${4:-}" = all ]; then
		reset
		res=$(timeout "$CAP" "$BT" putindex "$STORE" 8 "$WRITES" "w-index-$3-$RANDOM") || res=$(capped index.Put "$WRITES")
		record_write "$3" "$2" "$res"
		reset
		res=$(timeout "$CAP" "$BT" put "$OXYFS" "$STORE" 8 $((WRITES / 4)) "w-put-$3-$RANDOM" 1) || res=$(capped "oxyfs put" $((WRITES / 4)))
		record_write "$3" "$2" "$res"
		reset
		res=$(timeout "$CAP" "$BT" put "$OXYFS" "$STORE" 8 "$WRITES" "w-batch-$3-$RANDOM" $((WRITES / 8))) || res=$(capped "oxyfs put --batch" "$WRITES")
		record_write "$3" "$2" "$res"
	fi
	STORE=$save
}
if [ "$WRITES" -gt 0 ]; then
	for lat in $LATENCIES; do
		writes_on "$(storeurl list$ENTRIES "$EP")" "a folded store of $ENTRIES entries, empty journal" "$lat" all
	done
	writes_on "$STORE" "the generated store right after its fold ($ENTRIES folded lines in the journal)" 0
else
	say "  no write steps (--writes 0)"
fi
delay 0
