package main

import (
	"crypto/tls"
	"fmt"

	flag "github.com/spf13/pflag"

	"github.com/oxyfs/oxyfs/web"
)

// serveAuth are serve's flags of authentication and TLS.
type serveAuth struct {
	htpasswd  string
	cert, key string
}

func (a *serveAuth) register(f *flag.FlagSet) {
	f.StringVar(&a.htpasswd, "htpasswd", "", "ask every request for a user and password (HTTP Basic) from this file, as Apache's htpasswd writes it (bcrypt: htpasswd -B, or apr1: htpasswd -m); read again when it changes")
	f.StringVar(&a.cert, "cert", "", "serve HTTPS with this certificate (PEM; the chain after the leaf), with --key")
	f.StringVar(&a.key, "key", "", "the private key (PEM) of --cert")
}

// load reads the password file and the certificate: nil for what was not
// asked for.
func (a *serveAuth) load() (*web.Htpasswd, *tls.Config, error) {
	if (a.cert == "") != (a.key == "") {
		return nil, nil, usagef("--cert and --key go together")
	}
	var htp *web.Htpasswd
	if a.htpasswd != "" {
		var err error
		if htp, err = web.LoadHtpasswd(a.htpasswd); err != nil {
			return nil, nil, fmt.Errorf("--htpasswd: %w", err)
		}
	}
	if a.cert == "" {
		return htp, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(a.cert, a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("--cert %s --key %s: %w", a.cert, a.key, err)
	}
	// Go's defaults otherwise (cipher suites, curves, TLS 1.3 preferred).
	return htp, &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

// checkServeAddr refuses to serve on an address that is not loopback
// without authentication, unless --allow-remote says so, and reports
// whether the address is loopback. With a password file but no TLS, it
// warns: passwords would cross the network in clear.
func checkServeAddr(addr string, allowRemote, authenticated, tlsOn bool, warn func(string)) (bool, error) {
	loopback, err := loopbackAddr(addr)
	if err != nil {
		return false, usagef("--http %q: %v", addr, err)
	}
	switch {
	case loopback:
	case !authenticated && !allowRemote:
		return false, usagef("--http %s is not a loopback address, and without --htpasswd anyone who reaches it reads the tree: pass --htpasswd FILE (and --cert/--key for TLS) to ask for a password, or --allow-remote to serve it without authentication (or listen on 127.0.0.1)", addr)
	case authenticated && !tlsOn:
		warn(fmt.Sprintf("--http %s is not a loopback address and there is no --cert: passwords and signatures cross the network in clear text", addr))
	}
	return loopback, nil
}
