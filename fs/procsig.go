package fs

import (
	"bytes"
	"context"
	"os"
	"strconv"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// callerDying reports whether the thread that sent the request of ctx (go-fuse's
// Caller.Pid: the thread's id as the mount's pid namespace sees it) has a
// fatal signal pending: SIGKILL, or a signal whose default action kills
// and that it does not handle (Ctrl-C's SIGINT to cat), which the kernel
// turns into a SIGKILL pending on each of its threads (complete_signal).
// Its SigPnd in /proc says so. A caller that cannot be seen (pid 0: in
// another pid namespace; gone; /proc unreadable) is not dying.
func callerDying(ctx context.Context) bool {
	caller, ok := fuse.FromContext(ctx)
	if !ok || caller.Pid == 0 {
		return false
	}
	status, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(caller.Pid), 10) + "/status")
	if err != nil {
		return false
	}
	return sigKillPending(status)
}

// sigKillPending reports whether a /proc/<tid>/status text shows SIGKILL
// pending on the thread (SigPnd) or its process (ShdPnd).
func sigKillPending(status []byte) bool {
	const sigkill = 1 << (9 - 1) // SIGKILL is signal 9: bit 8 of the masks
	for line := range bytes.SplitSeq(status, []byte{'\n'}) {
		name, val, ok := bytes.Cut(line, []byte{':'})
		if !ok || !bytes.Equal(name, []byte("SigPnd")) && !bytes.Equal(name, []byte("ShdPnd")) {
			continue
		}
		mask, err := strconv.ParseUint(string(bytes.TrimSpace(val)), 16, 64)
		if err == nil && mask&sigkill != 0 {
			return true
		}
	}
	return false
}
