package web

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
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
// does not name (against a dummy bcrypt hash), so timing tells no names.
// A bcrypt check costs tens of milliseconds of CPU, so a pair of user and
// password that matched is remembered (by a keyed SHA-256, never the
// password) while the user's hash stays the same: a WebDAV client's many
// requests cost one bcrypt.
//
// Locks: mu guards users, stamp, checked, remembered.
type Htpasswd struct {
	path string
	key  [32]byte // keys remembered

	mu         sync.Mutex
	users      map[string]string // user -> hash
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

// dummyHash is what a user the file does not name is checked against
// (bcrypt of a random password, cost 10: htpasswd -B's default), so the
// check takes as long as for a user it names.
var dummyHash = sync.OnceValue(func() []byte {
	var pw [16]byte
	rand.Read(pw[:])
	h, err := bcrypt.GenerateFromPassword(pw[:], bcrypt.DefaultCost)
	if err != nil {
		panic(fmt.Sprintf("bcrypt of a random password: %v", err)) // cannot happen: cost and length are valid
	}
	return h
})

// LoadHtpasswd reads a password file (see Htpasswd).
func LoadHtpasswd(path string) (*Htpasswd, error) {
	h := &Htpasswd{path: path, remembered: map[[32]byte]string{}}
	rand.Read(h.key[:])
	users, stamp, err := readHtpasswd(path)
	if err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("htpasswd %s: no user", path)
	}
	h.users, h.stamp, h.checked = users, stamp, time.Now()
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
			return nil, fmt.Errorf("line %d (user %q): the hash is not bcrypt ($2y$, htpasswd -B) nor Apache MD5 ($apr1$, htpasswd -m)", n, user)
		}
		if _, dup := users[user]; dup {
			return nil, fmt.Errorf("line %d: user %q named twice", n, user)
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
		bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
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
	if !matches(hash, password) {
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

// matches compares password with a hash, in constant time.
func matches(hash, password string) bool {
	if strings.HasPrefix(hash, apr1Magic) {
		salt, _, _ := strings.Cut(hash[len(apr1Magic):], "$")
		return subtle.ConstantTimeCompare([]byte(apr1(password, salt)), []byte(hash)) == 1
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// lookup returns user's hash, reading the file again if it changed.
func (h *Htpasswd) lookup(user string, logf func(string, ...any)) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now := time.Now(); now.Sub(h.checked) >= time.Second {
		h.checked = now
		h.reloadLocked(logf)
	}
	hash, ok := h.users[user]
	return hash, ok
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
	h.users, h.stamp = users, stamp
	clear(h.remembered)
	logf("oxyfs: read %s again: %d user(s)", h.path, len(users))
}
