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
//	        a tool of go.mod: github.com/versity/versitygw/cmd/versitygw v1.8.0
//	"azure" Azurite's blob service, azurite-blob
//	        npm package azurite@3.35.0
//	"gcs"   fake-gcs-server (filesystem backend)
//	        a tool of go.mod: github.com/fsouza/fake-gcs-server v1.56.1
//
// # Finding, building and installing the servers
//
// So that `go test ./...` on a machine with only Go tests S3 and GCS for
// real, [Start] finds a server's program in this order:
//
//  1. PATH.
//  2. Each directory D listed in OXYFS_TOOLS (a PATH-style list): D/NAME,
//     D/bin/NAME, D/node_modules/.bin/NAME.
//  3. The pinned program, built or installed on first use:
//     - versitygw and fake-gcs-server are `tool` directives of oxyfs's
//     go.mod, their versions pinned by its require lines and checked by
//     go.sum. `go tool -n NAME`, run in the module root, builds the tool
//     into the go build cache the first time (from an empty cache, measured
//     here: 330 s of CPU for versitygw, then 195 s for fake-gcs-server)
//     and afterwards just prints the cached binary's path (1.5 s of CPU). They live in the main go.mod rather than a
//     tools module of their own because adding them raised none of
//     oxyfs's dependency versions; the price is that they build with
//     oxyfs's (newer or equal) versions of the modules they share, such
//     as aws-sdk-go-v2 and grpc, and that a later upgrade of those moves
//     the servers too. The go build cache is safe for concurrent go
//     commands; a lock file in the tools cache (below) still makes a
//     second test binary wait for the first one's build rather than
//     compile the same code beside it.
//     - Azurite is installed with `npm install --prefix DIR/azurite@3.35.0
//     azurite@3.35.0` when npm is on PATH, once: a stamp file marks a
//     finished install and a lock file serializes test binaries. DIR, the
//     tools cache, is the first OXYFS_TOOLS entry, or else
//     ~/.cache/oxyfs-tools (os.UserCacheDir). The version in the directory
//     name means an upgrade never runs an old install.
//
// [Main] (through [Prepare]) does all this before m.Run, for all kinds at
// once, within half of the test binary's -timeout: the go command kills a
// binary that runs a minute past it, Prepare included, so a build or
// install still running then is stopped and its server reported missing,
// with a message that says to run again (the go build cache keeps what was
// compiled) or with a longer -timeout. A package without Main locates a
// server in its first [Start]. A build or install that is still
// running after 10 s is announced on the terminal (see testkit/testdeps),
// so that a first run does not look hung.
// Without Go's module proxy (offline, no module cache) the build fails and
// without npm Azurite cannot be installed; either is then a missing server.
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
// When a kind's program can be neither found nor built or installed,
// [Start] skips the test with a message that says why. It fails it instead
// when the environment variable OXYFS_REQUIRE (a comma-separated list such
// as "fuse,s3,azure,gcs", or "all") names the kind, or when CI=true.
// [RequireFUSE] follows the same rule with the name "fuse". A server that is
// found but fails to start is always fatal, with the tail of its log in the
// message. The rule and the summary of skips that `go test ./...` prints at
// the end (once per run and dependency, on the terminal, although go test
// hides the output of passing packages) are testkit/testdeps'.
//
// # Process lifetime
//
// Servers run until the test binary exits. Each package that uses this
// package has a TestMain that stops them, removes their data and reports
// the skips:
//
//	func TestMain(m *testing.M) { testservers.Main(m) }
//
// ([Run] is the same without os.Exit, for a TestMain that does more.)
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
