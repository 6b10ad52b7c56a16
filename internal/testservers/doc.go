// Package testservers starts real object-store servers for tests and hands
// out gocloud.dev/blob URLs that point at them.
//
// # Model
//
// There is at most one server process per kind per test binary. The first
// call to [Start] for a kind launches the server on a free 127.0.0.1 port
// with a fresh temporary data directory; every later call in the same test
// binary (from any test, in any goroutine) returns the same [*Server]. Tests
// isolate themselves from each other by creating their own bucket with
// [Server.NewBucket], which returns a complete blob URL for a new, empty,
// uniquely named bucket or container.
//
// The supported kinds and the programs they run are:
//
//	"s3"    versitygw (posix backend, with metadata)
//	        go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//	"azure" Azurite's blob service, azurite-blob
//	        npm install --prefix DIR azurite   (binary in DIR/node_modules/.bin)
//	"gcs"   fake-gcs-server (filesystem backend)
//	        go install github.com/fsouza/fake-gcs-server@v1.56.1
//
// Binaries are looked up on PATH, then in $GOBIN and every $GOPATH/bin
// (GOPATH as reported by `go env GOPATH`), then in each directory listed in
// OXYFS_TOOLS (a PATH-style list); for each OXYFS_TOOLS entry D the
// candidates are D/NAME, D/bin/NAME and D/node_modules/.bin/NAME.
//
// # Credentials and the process environment
//
// The blob URL openers of gocloud.dev read credentials from the environment,
// once per process. [Start] therefore puts what a client needs into the test
// process's environment with os.Setenv, and also returns it in [Server.Env]
// so tests can pass it on to child processes (see [Server.Environ]):
//
//   - s3: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (existing values are kept
//     and the server is started with them), AWS_REGION.
//   - azure: AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY (Azurite's well-known
//     devstoreaccount1 unless both are already set, in which case Azurite is
//     told about that account).
//   - gcs: STORAGE_EMULATOR_HOST=127.0.0.1:PORT (always overwritten; it is
//     what routes gs:// URLs to the emulator).
//
// # Missing servers: skip or fail
//
// When the binary for a kind cannot be found, [Start] calls t.Skip with a
// message saying how to install it. It calls t.Fatal instead when the
// environment variable OXYFS_REQUIRE (a comma-separated list such as
// "fuse,s3,azure,gcs", or "all") names the kind, or when CI=true. [RequireFUSE]
// follows the same rule with the name "fuse". A server that is found but fails
// to start is always fatal, with the tail of its log in the message.
//
// # Process lifetime
//
// Servers run until the test binary exits. Each package that uses this
// package should have a TestMain that stops them and removes their data:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testservers.Shutdown()
//		os.Exit(code)
//	}
//
// As a safety net the servers are started with Pdeathsig=SIGKILL, so they die
// with the test binary even if it crashes or TestMain is missing (their
// temporary directories are then left behind).
//
// # Fault injection
//
// [Server.Kill] stops a server hard with SIGKILL and [Server.Restart] starts it
// again on the same port with the same data directory, so blob URLs handed
// out before stay valid and data written before the kill is still there.
package testservers
