package store

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// backendNames are the names and URL schemes of the backends: comparing one
// of these as a literal is asking which backend a store is.
var backendNames = []string{"s3", "gcs", "azure", "file", "mem", "gs", "azblob"}

// backendComparisons lists, in the non-test Go files of dir other than the
// driver files (driver_*.go), every comparison of a backend name literal:
// an == or != with one as an operand, or a switch case listing one. Each is
// "file:line: what".
func backendComparisons(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	fset := token.NewFileSet()
	for _, p := range paths {
		base := filepath.Base(p)
		if strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "driver_") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		report := func(n ast.Node, what string) {
			found = append(found, base+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+what)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					break
				}
				for _, e := range []ast.Expr{n.X, n.Y} {
					if name, ok := backendName(e); ok {
						report(n, n.Op.String()+" "+strconv.Quote(name))
					}
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if name, ok := backendName(e); ok {
						report(e, "case "+strconv.Quote(name))
					}
				}
			}
			return true
		})
	}
	return found
}

// backendName reports whether e is a string literal naming a backend.
func backendName(e ast.Expr) (string, bool) {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil && slices.Contains(backendNames, v)
}

// TestNoBackendNameComparisonOutsideDrivers: what differs per backend is
// asked of its driver (driver.go); no code of the store or its conformance
// kit outside the driver files compares a backend's name.
func TestNoBackendNameComparisonOutsideDrivers(t *testing.T) {
	for _, dir := range []string{".", "storetest"} {
		if found := backendComparisons(t, dir); len(found) != 0 {
			t.Errorf("backend names compared outside the driver files in %s (ask the driver instead):\n%s", dir, strings.Join(found, "\n"))
		}
	}
}

// TestBackendComparisonsAreFound: the check above finds each form it looks
// for, and skips driver and test files.
func TestBackendComparisonsAreFound(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"bad.go": `package x

func f(s interface{ Backend() string }, scheme string) int {
	if s.Backend() == "s3" || ("gcs" != s.Backend()) {
		return 1
	}
	switch scheme {
	case "azblob", "other":
		return 2
	}
	if scheme == "s3x" || len(scheme) == 3 {
		return 3
	}
	return 0
}
`,
		"driver_x.go": "package x\n\nfunc g(n string) bool { return n == \"mem\" }\n",
		"x_test.go":   "package x\n\nfunc h(n string) bool { return n == \"file\" }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{`bad.go:4: == "s3"`, `bad.go:4: != "gcs"`, `bad.go:8: case "azblob"`}
	if got := backendComparisons(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("found %q, want %q", got, want)
	}
}

// statusErr is a failure that carries an HTTP status the common way, as the
// faults the simulation injects into mem and file buckets do.
type statusErr int

func (e statusErr) Error() string       { return "injected status " + strconv.Itoa(int(e)) }
func (e statusErr) HTTPStatusCode() int { return int(e) }

// TestStatusOfAnyBucketDecidesRetries: an error carrying HTTPStatusCode()
// is read by every driver (here mem, over a bucket that injects them): a 503
// is retried, every attempt counted; a 403 is final after one.
func TestStatusOfAnyBucketDecidesRetries(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		status    statusErr
		fails     int // GETs that fail before one succeeds
		wantGets  int64
		wantRetry int64
		wantErr   bool
	}{
		{status: http.StatusServiceUnavailable, fails: MaxReadTries - 1, wantGets: MaxReadTries, wantRetry: MaxReadTries - 1},
		{status: http.StatusForbidden, fails: 1, wantGets: 1, wantRetry: 0, wantErr: true},
	} {
		drv := blobtest.New(nil)
		s := New(blob.NewBucket(drv), "mem", "", Options{Layout: LayoutBucket})
		if err := s.Put(ctx, "sig/ab/cdef/alice", []byte("sig")); err != nil {
			t.Fatal(err)
		}
		fails := tc.fails
		drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, _ string) error {
			if op == blobtest.OpGet && fails > 0 {
				fails--
				return tc.status
			}
			return nil
		}})
		before := s.Counts()
		_, err := s.Get(ctx, "sig/ab/cdef/alice")
		if (err != nil) != tc.wantErr || s.Counts().Sub(before) != (Counts{Get: tc.wantGets}) || s.Retries() != tc.wantRetry {
			t.Errorf("status %d: err %v, sent %v, retries %d; want error %v, %d GETs, %d retries",
				tc.status, err, s.Counts().Sub(before), s.Retries(), tc.wantErr, tc.wantGets, tc.wantRetry)
		}
		s.Close()
	}
}
