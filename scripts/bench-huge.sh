# shellcheck shell=bash
# scripts/bench-huge.sh — the --huge steps of scripts/bench, which sources
# this file (it uses its functions and variables: timed, mount_oxyfs,
# unmount, counts, reset, storeurl, BT, OXYFS, WORK, ...); not run alone.

# ---------------------------------------------------------------- 10,000,000 entries
# --huge: the questions above at HUGE_ENTRIES entries, each step under its
# own cap (--huge-cap) and beside the same step on a folded store of
# $ENTRIES entries made the same way (not list$ENTRIES, which the write
# steps wrote to), so the report gives
# each figure as a ratio to what ran beside it. Then a complete fold of a
# store of HUGE_ENTRIES per-object keys, beside the server's own listing
# of every key of it.
record_huge() { # STEP STATUS WALL ENTRIES [REQ] [RESULT] [NOTE]
	local res=${6:-}
	[ -n "$res" ] || res=null
	printf '{"kind":"huge","step":"%s","status":"%s","wall_s":%s,"entries":%d,"req":%s,"result":%s,"note":%s}\n' \
		"$1" "$2" "$3" "$4" "${5:-{\}}" "$res" "$(json_str "${7:-}")" >>"$RESULTS"
	say "  huge $1: $2 ${3}s $res"
}
htimed() { local CAP=$HUGE_CAP; timed "$@"; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
# A lookup of an object that is not there: every stat is one FUSE LOOKUP
# the mount answers from the set (failed lookups are not cached).
MISSING=sig/7f/$(printf 'f%.0s' $(seq 62))

# huge_find STEP N: find on the mount, with the FUSE requests it answered.
# It leaves .oxy/ out, so the files counted are the store's. (A listing of
# .oxy/ once rendered .oxy/status, whose text a read within 10 s got: the
# count after a short find was the one from its start. It renders nothing
# now: fs/oxy.go, oxyDirHandle.)
# It prints the files and the directories it found (find's -type reads the
# type a listing gives: no stat, no LOOKUP); target 5 divides the kernel's
# requests by the directories.
HUGEFIND='find . -path ./.oxy -prune -o -type f -printf "f\n" -o -type d -printf "d\n" | awk "{n[\$1]++} END {printf \"%d %d\\n\", n[\"f\"], n[\"d\"]}"'
# fresh_status: the mount renders .oxy/status at most once in 10 s; wait
# out the text the last read rendered, for counts of now. STATUS_AT is set
# (status_read) after each read has returned, in whole seconds: 12 s after
# it is more than 10 s after the render.
STATUS_AT=0
fresh_status() {
	local wait=$((STATUS_AT + 12 - $(date +%s)))
	if [ $wait -gt 0 ]; then sleep $wait; fi
}
status_read() { STATUS_AT=$(date +%s); }
huge_find() {
	local ops0 ops1 files dirs req
	fresh_status
	ops0=$("$BT" fuseops "$MNT") || ops0=null
	status_read
	reset
	# pipefail: a find that fails part-way (EIO) fails the step, though awk
	# printed its partial counts
	htimed bash -c "set -o pipefail; cd '$MNT' && $HUGEFIND"
	req=$(counts) # now: the wait below may hold the mount's next refresh
	read -r files dirs <<<"${OUTPUT:-0 0}"
	fresh_status
	ops1=$("$BT" fuseops "$MNT") || ops1=null
	status_read
	record_huge "$1" $STATUS "$WALL" "$2" "$req" "{\"files\":${files:-0},\"dirs\":${dirs:-0},\"fuse_before\":$ops0,\"fuse_after\":$ops1}"
}

# huge_mount WHICH URL DIRECT N: on fresh mounts of URL (N entries), find
# cold and warm and the mount's RSS before and after them; lookups of
# existing entries, cold and warm; LOOKUPs of a missing object.
huge_mount() {
	local which=$1 save=$STORE n=$4 st
	STORE=$2
	if mount_oxyfs "$MNT"; then
		STATUS_AT=0
		record_huge "$which-mount-rss" ok 0 "$n" '{}' "{\"rss_kib\":$(rss_kib "$MPID")}"
		huge_find "$which-find-cold" "$n"
		if [ $STATUS = ok ]; then
			huge_find "$which-find-warm" "$n"
		fi
		if [ $STATUS = ok ]; then
			record_huge "$which-find-rss" ok 0 "$n" '{}' "{\"rss_kib\":$(rss_kib "$MPID")}"
			# issue 27 target 4: the RSS beside the set and the cache's bound
			fresh_status
			st=$("$BT" mountstate "$MNT" "$MPID") && record_huge "$which-find-state" ok 0 "$n" '{}' "$st"
			status_read
		else
			# an RSS after a walk cut short is no figure for target 4
			record_huge "$which-find-rss" "$STATUS" 0 "$n" '{}' "" "a find did not finish"
		fi
	else
		record_huge "$which-find-cold" failed 0 "$n" '{}' "" "the mount failed"
	fi
	unmount "$MNT"
	if mount_oxyfs "$MNT"; then
		reset
		htimed "$BT" lookups "$3" "$MNT" 5000 1
		record_huge "$which-lookups" $STATUS "$WALL" "$n" "$(counts)" "$OUTPUT"
		htimed "$BT" statloop "$MNT/$MISSING" 20000
		record_huge "$which-lookup-missing" $STATUS "$WALL" "$n" '{}' "$OUTPUT"
	fi
	unmount "$MNT"
	STORE=$save
}

# huge_walk URL N: issue 38 target 1 at N entries, on the store the fold
# wrote (its signatures have bytes, which a genlist store's have not): on a
# fresh mount, find of every file, ls -lR, cat of every signature and du,
# each under the cap and each whatever the last one did, then the mount's
# state (RSS beside the set and the signature cache's bound).
huge_walk() {
	local save=$STORE st
	STORE=$1
	MOUNT_WAIT=$HUGE_CAP
	if ! mount_oxyfs "$MNT"; then
		record_huge walk-find failed 0 "$2" '{}' "" "the mount failed"
		STORE=$save
		return
	fi
	STATUS_AT=0
	record_huge walk-mount-rss ok 0 "$2" '{}' "{\"rss_kib\":$(rss_kib "$MPID")}"
	reset
	htimed bash -c "set -o pipefail; cd '$MNT' && find . -path ./.oxy -prune -o -type f -print0 >'$WORK/walk.list'"
	record_huge walk-find $STATUS "$WALL" "$2" "$(counts)" "{\"files\":$(tr -cd '\0' <"$WORK/walk.list" | wc -c)}"
	reset
	htimed bash -c "cd '$MNT' && ls -lR . >/dev/null"
	record_huge walk-ls-lR $STATUS "$WALL" "$2" "$(counts)"
	reset
	htimed bash -c "cd '$MNT' && grep -z '^\./sig/' '$WORK/walk.list' | xargs -0 -r cat >/dev/null"
	record_huge walk-cat $STATUS "$WALL" "$2" "$(counts)"
	reset
	htimed bash -c "cd '$MNT' && du -s . >/dev/null"
	record_huge walk-du $STATUS "$WALL" "$2" "$(counts)"
	fresh_status
	st=$("$BT" mountstate "$MNT" "$MPID") && record_huge walk-state ok 0 "$2" '{}' "$st"
	status_read
	unmount "$MNT"
	rm -f "$WORK/walk.list"
	MOUNT_WAIT=60
	STORE=$save
}

# --huge-open alone: the open of a folded store of HUGE_ENTRIES entries (issue
# 27 target 6), its list made by benchtool genlist, and nothing else.
if [ $HUGE = 0 ] && [ $HUGE_MOUNT = 0 ] && [ $HUGE_OPEN = 1 ]; then
	say "--huge-open: an open of $HUGE_ENTRIES entries, capped at $HUGE_CAP s"
	delay 0
	"$BT" mkbucket "http://127.0.0.1:$S3PORT" hugelist
	htimed "$BT" genlist "$(storeurl hugelist "http://127.0.0.1:$S3PORT")" "$HUGE_ENTRIES" 11
	record_huge genlist $STATUS "$WALL" "$HUGE_ENTRIES" '{}' "$OUTPUT" "benchtool genlist: the complete list of a folded store, one PUT"
	if [ $STATUS = ok ]; then
		reset
		htimed "$BT" open "$(storeurl hugelist "$EP")" 3
		record_huge huge-open $STATUS "$WALL" "$HUGE_ENTRIES" "$(counts)" "$OUTPUT"
		reset
		htimed "$BT" open "$(storeurl hugelist "$EP")" 3 "$WORK/hugelists"
		record_huge huge-reopen $STATUS "$WALL" "$HUGE_ENTRIES" "$(counts)" "$OUTPUT" "through a list cache: the first open fills it, the next two map it"
		rm -rf "$WORK/hugelists"
	fi
	[ $KEEP = 0 ] && rm -rf "$WORK/s3data/hugelist"
fi

if [ $HUGE = 1 ] || [ $HUGE_MOUNT = 1 ]; then
	say "--huge: $HUGE_ENTRIES entries, each step capped at $HUGE_CAP s"
	delay 0
	MOUNT_WAIT=$HUGE_CAP
	N=$HUGE_ENTRIES
	b=hugelist
	"$BT" mkbucket "http://127.0.0.1:$S3PORT" $b
	"$BT" mkbucket "http://127.0.0.1:$S3PORT" hugesmall
	"$BT" genlist "$(storeurl hugesmall "http://127.0.0.1:$S3PORT")" "$ENTRIES" 11 >/dev/null
	htimed "$BT" genlist "$(storeurl $b "http://127.0.0.1:$S3PORT")" "$N" 11
	record_huge genlist $STATUS "$WALL" "$N" '{}' "$OUTPUT" "benchtool genlist: the complete list of a folded store, one PUT"
	if [ $STATUS = ok ]; then
		for w in huge small; do
			u=$(storeurl $b "$EP") n=$N
			[ $w = small ] && u=$(storeurl hugesmall "$EP") n=$ENTRIES
			reset
			htimed "$BT" open "$u" 3
			record_huge "$w-open" $STATUS "$WALL" "$n" "$(counts)" "$OUTPUT"
			reset
			htimed "$BT" open "$u" 3 "$WORK/hugelists"
			record_huge "$w-reopen" $STATUS "$WALL" "$n" "$(counts)" "$OUTPUT" "through a list cache: the first open fills it, the next two map it"
			rm -rf "$WORK/hugelists"
		done
		huge_mount huge "$(storeurl $b "$EP")" "$(storeurl $b "http://127.0.0.1:$S3PORT")" "$N"
		huge_mount small "$(storeurl hugesmall "$EP")" "$(storeurl hugesmall "http://127.0.0.1:$S3PORT")" "$ENTRIES"
	fi
	MOUNT_WAIT=60
	[ $HUGE = 0 ] && [ $KEEP = 0 ] && rm -rf "$WORK/s3data/hugelist" "$WORK/s3data/hugesmall"
fi

# --huge-mount stops here; --huge goes on with the complete fold.
if [ $HUGE = 1 ]; then
	# The fold: a store of N per-object keys written straight into the
	# bucket's directory with the attributes versitygw gives a PUT (checked
	# against PUTs of the same bytes), a journal naming the last 1,000.
	b=hugefold
	"$BT" mkbucket "http://127.0.0.1:$S3PORT" $b
	say "  writing $N per-object keys into $WORK/s3data/$b"
	htimed "$BT" genposix "$(storeurl $b "http://127.0.0.1:$S3PORT")" "$WORK/s3data/$b" "$N" $HUGE_PER_OBJECT $HUGE_SEED 1000
	record_huge genposix $STATUS "$WALL" "$N" '{}' "$OUTPUT" "benchtool genposix: files and attributes written straight into versitygw's directory"
	if [ $STATUS = ok ]; then
		u=$(storeurl $b "$EP")
		reset
		htimed /usr/bin/time -f '%M' -o "$WORK/fold.rss" "$OXYFS" fold --layout bucket "$u"
		rss=null
		[ $STATUS = ok ] && rss=$(tail -1 "$WORK/fold.rss")
		record_huge fold $STATUS "$WALL" "$N" "$(counts)" "{\"max_rss_kib\":$rss}" "oxyfs fold, through the proxy"
		reset
		htimed "$BT" listall "$u" 16
		record_huge listall $STATUS "$WALL" "$N" "$(counts)" "$OUTPUT" "the server's listing of every key, as the fold lists them"
		reset
		htimed "$BT" open "$u" 3
		record_huge fold-open $STATUS "$WALL" "$N" "$(counts)" "$OUTPUT" "the store the fold wrote"
		# issue 38 target 1: the mount's memory after a walk of everything
		[ $STATUS = ok ] && huge_walk "$u" "$N"
	fi
	MOUNT_WAIT=60
	if [ $KEEP = 0 ]; then
		say "  removing the --huge buckets"
		# rm waits on each unlink (the disk may discard each freed block):
		# many at once, one <kind>/<hh> directory each.
		htimed bash -c "find '$WORK/s3data/hugefold' -mindepth 2 -maxdepth 2 -type d -print0 | xargs -0 -r -P 16 -n 4 rm -rf && rm -rf '$WORK/s3data/hugefold' '$WORK/s3data/hugelist' '$WORK/s3data/hugesmall'"
		record_huge cleanup $STATUS "$WALL" "$N"
	fi
fi
