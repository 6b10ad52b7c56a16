package main

import "errors"

// syslogWriter: Windows has no syslog (log/syslog does not build there);
// the log goes to --log-file or stderr. Only a detached mount, which is
// Linux's, dials syslog.
type syslogWriter struct{}

func (*syslogWriter) Err(string) error     { return nil }
func (*syslogWriter) Warning(string) error { return nil }
func (*syslogWriter) Info(string) error    { return nil }
func (*syslogWriter) Debug(string) error   { return nil }

func dialSyslog(path string) (*syslogWriter, error) {
	return nil, errors.New("no syslog on Windows")
}
