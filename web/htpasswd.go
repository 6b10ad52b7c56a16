package web

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// Htpasswd is a password file as Apache's htpasswd writes it: one
// "user:hash" a line, blank lines and lines beginning with # ignored. A
// hash is bcrypt ($2y$, $2a$, $2b$: htpasswd -B) or Apache MD5 ($apr1$:
// htpasswd -m); any other (crypt, {SHA}, plain text) is refused when the
// file is read, naming its line. The file is read again when it changes
// (another file, size or time), at most once a second, on a request; a file
// that no longer reads keeps the users read before, with a warning.
//
// Check compares in constant time (bcrypt's own comparison; apr1's with
// subtle.ConstantTimeCompare) and spends the same work on a user the file
// does not name (against a dummy hash of the kind and cost of the file's
// costliest user: bcrypt over apr1, the highest bcrypt cost), so timing
// tells no names. At most GOMAXPROCS checks run at
// once (checks): a flood of wrong passwords costs the CPUs, not more.
// A bcrypt check costs tens of milliseconds of CPU, so a pair of user and
// password that matched is remembered (by a keyed SHA-256, never the
// password) while the user's hash stays the same: a WebDAV client's many
// requests cost one bcrypt.
//
// Locks: mu guards users, dummy, stamp, checked, remembered; checks is a
// semaphore of the hash computations running.
type Htpasswd struct {
	path   string
	key    [32]byte      // keys remembered
	checks chan struct{} // a token per hash computed at once

	mu         sync.Mutex
	users      map[string]string // user -> hash
	dummy      string            // checked for a user not in users
	stamp      fileStamp         // of the file users were read from
	checked    time.Time         // when the file was last stated
	remembered map[[32]byte]string
}

// maxRemembered bounds the pairs remembered; past it, they are forgotten
// all at once.
const maxRemembered = 1024

// fileStamp tells whether a file changed: another file (renamed over
// it), another size or another time.
type fileStamp struct{ fi os.FileInfo }

func stampOf(fi os.FileInfo) fileStamp { return fileStamp{fi} }

func (s fileStamp) same(fi os.FileInfo) bool {
	return s.fi != nil && os.SameFile(s.fi, fi) && s.fi.Size() == fi.Size() && s.fi.ModTime().Equal(fi.ModTime())
}

// dummyFor returns a hash of a random password of the kind and cost of the
// costliest hash of users (costliestHash), which a user the file does not
// name is checked against: checking an unknown user takes as long as the
// slowest known user's, so no name is told by a quick refusal.
func dummyFor(users map[string]string) string {
	var pw [16]byte
	rand.Read(pw[:])
	hash := costliestHash(users)
	if strings.HasPrefix(hash, apr1Magic) {
		return apr1(string(pw[:]), "oxyfsdum")
	}
	cost, err := bcrypt.Cost([]byte(hash))
	if err != nil {
		cost = bcrypt.DefaultCost
	}
	h, err := bcrypt.GenerateFromPassword(pw[:], cost)
	if err != nil {
		return hash // cannot happen: the cost was read from a bcrypt hash
	}
	return string(h)
}

// costliestHash returns the hash of users that costs most to check: a
// bcrypt hash over an apr1 one, and of bcrypt hashes the one of the
// highest cost (the first in name order of those, so the choice is
// stable).
func costliestHash(users map[string]string) string {
	best, bestCost := "", -1 // an apr1 hash counts as cost 0
	for _, name := range slices.Sorted(maps.Keys(users)) {
		hash := users[name]
		cost := 0
		if !strings.HasPrefix(hash, apr1Magic) {
			c, err := bcrypt.Cost([]byte(hash))
			if err != nil {
				continue // not read: parseHtpasswd refuses such a file
			}
			cost = c
		}
		if cost > bestCost {
			best, bestCost = hash, cost
		}
	}
	return best
}

// LoadHtpasswd reads a password file (see Htpasswd).
func LoadHtpasswd(path string) (*Htpasswd, error) {
	h := &Htpasswd{path: path, remembered: map[[32]byte]string{}, checks: make(chan struct{}, runtime.GOMAXPROCS(0))}
	rand.Read(h.key[:])
	users, stamp, err := readHtpasswd(path)
	if err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("htpasswd %s: no user", path)
	}
	h.users, h.stamp, h.checked, h.dummy = users, stamp, time.Now(), dummyFor(users)
	return h, nil
}

// readHtpasswd reads and parses the file.
func readHtpasswd(path string) (map[string]string, fileStamp, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("read htpasswd: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("read htpasswd: %w", err)
	}
	users, err := parseHtpasswd(data)
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("htpasswd %s: %w", path, err)
	}
	return users, stampOf(fi), nil
}

// parseHtpasswd parses the lines of a password file. Its errors name the
// line, never its hash.
func parseHtpasswd(data []byte) (map[string]string, error) {
	users := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		switch {
		case !ok || user == "":
			return nil, fmt.Errorf("line %d: not user:hash", n)
		case !knownHash(hash):
			return nil, fmt.Errorf("line %d (user %q): the hash is not bcrypt ($2y$, htpasswd -B) nor Apache MD5 ($apr1$, htpasswd -m)", n, termsafe.Value(user))
		}
		if _, dup := users[user]; dup {
			return nil, fmt.Errorf("line %d: user %q named twice", n, termsafe.Value(user))
		}
		users[user] = hash
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return users, nil
}

// knownHash reports whether hash is a bcrypt or apr1 hash of a valid shape.
func knownHash(hash string) bool {
	switch {
	case strings.HasPrefix(hash, "$2y$"), strings.HasPrefix(hash, "$2a$"), strings.HasPrefix(hash, "$2b$"):
		_, err := bcrypt.Cost([]byte(hash))
		return err == nil
	case strings.HasPrefix(hash, apr1Magic):
		salt, sum, ok := strings.Cut(hash[len(apr1Magic):], "$")
		return ok && len(salt) <= 8 && len(sum) == 22
	}
	return false
}

// Check reports whether user and password match the file, reading it
// again first if it changed (logging what went wrong to logf).
func (h *Htpasswd) Check(user, password string, logf func(string, ...any)) bool {
	hash, ok := h.lookup(user, logf)
	if !ok {
		h.matches(hash, password) // the dummy's: as long as a user's
		return false
	}
	mac := sha256.New()
	mac.Write(h.key[:])
	mac.Write([]byte(user))
	mac.Write([]byte{0})
	mac.Write([]byte(password))
	var k [32]byte
	mac.Sum(k[:0])
	h.mu.Lock()
	known := h.remembered[k]
	h.mu.Unlock()
	if subtle.ConstantTimeCompare([]byte(known), []byte(hash)) == 1 {
		return true
	}
	if !h.matches(hash, password) {
		return false
	}
	h.mu.Lock()
	if len(h.remembered) >= maxRemembered {
		clear(h.remembered)
	}
	h.remembered[k] = hash
	h.mu.Unlock()
	return true
}

// matches is matches, at most cap(checks) at once.
func (h *Htpasswd) matches(hash, password string) bool {
	h.checks <- struct{}{}
	defer func() { <-h.checks }()
	return matches(hash, password)
}

// matches compares password with a hash, in constant time.
func matches(hash, password string) bool {
	if strings.HasPrefix(hash, apr1Magic) {
		salt, _, _ := strings.Cut(hash[len(apr1Magic):], "$")
		return subtle.ConstantTimeCompare([]byte(apr1(password, salt)), []byte(hash)) == 1
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// lookup returns user's hash, reading the file again if it changed; for a
// user the file does not name, the dummy hash and false.
func (h *Htpasswd) lookup(user string, logf func(string, ...any)) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now := time.Now(); now.Sub(h.checked) >= time.Second {
		h.checked = now
		h.reloadLocked(logf)
	}
	hash, ok := h.users[user]
	if !ok {
		return h.dummy, false
	}
	return hash, true
}

// reloadLocked reads the file again if its stamp changed; one that does
// not read (or names no user) keeps the users read before.
func (h *Htpasswd) reloadLocked(logf func(string, ...any)) {
	fi, err := os.Stat(h.path)
	if err == nil && h.stamp.same(fi) {
		return
	}
	users, stamp, err := readHtpasswd(h.path)
	if err == nil && len(users) == 0 {
		err = errors.New("no user")
	}
	if err != nil {
		if fi != nil {
			h.stamp = stampOf(fi) // say it once per change
		}
		logf("oxyfs: warning: %v; still checking the users read before", err)
		return
	}
	h.users, h.stamp, h.dummy = users, stamp, dummyFor(users)
	clear(h.remembered)
	logf("oxyfs: read %s again: %d user(s)", h.path, len(users))
}
