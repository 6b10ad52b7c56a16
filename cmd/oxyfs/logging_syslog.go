//go:build !windows

package main

import (
	"fmt"
	"log/syslog"
	"os"
)

// syslogWriter is a detached mount's log without --log-file.
type syslogWriter = syslog.Writer

// dialSyslog connects to the syslog socket at path (a datagram socket, as
// journald's and rsyslog's /dev/log are, else a stream one).
func dialSyslog(path string) (*syslogWriter, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	w, err := syslog.Dial("unixgram", path, syslog.LOG_DAEMON|syslog.LOG_INFO, "oxyfs")
	if err != nil {
		w, err = syslog.Dial("unix", path, syslog.LOG_DAEMON|syslog.LOG_INFO, "oxyfs")
	}
	if err != nil {
		return nil, fmt.Errorf("syslog at %s: %w", path, err)
	}
	return w, nil
}
