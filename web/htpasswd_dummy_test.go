package web

import (
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestHtpasswdDummyIsTheCostliest (F7): a user the file does not name is
// checked against a dummy of the kind and cost of the file's costliest
// user, not of its first (an apr1 user first, then a bcrypt one: an
// unknown name was refused in a few milliseconds, a known bcrypt user's
// wrong password in hundreds, so names leaked by timing).
func TestHtpasswdDummyIsTheCostliest(t *testing.T) {
	hash := func(cost int) string {
		h, err := bcrypt.GenerateFromPassword([]byte("pw"), cost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	apr := apr1Vectors[3].hash
	low, high := hash(bcrypt.MinCost), hash(bcrypt.MinCost+1)
	for _, c := range []struct {
		name  string
		users map[string]string
		cost  int // of the dummy; 0: apr1
	}{
		{"apr1 first, then bcrypt", map[string]string{"a": apr, "b": low}, bcrypt.MinCost},
		{"bcrypt costs rising", map[string]string{"a": apr, "b": low, "c": high}, bcrypt.MinCost + 1},
		{"bcrypt costs falling", map[string]string{"a": high, "b": low, "c": apr}, bcrypt.MinCost + 1},
		{"apr1 only", map[string]string{"a": apr, "b": apr}, 0},
	} {
		d := dummyFor(c.users)
		if c.cost == 0 {
			if !strings.HasPrefix(d, apr1Magic) {
				t.Errorf("%s: dummy %q, want apr1", c.name, d)
			}
			continue
		}
		cost, err := bcrypt.Cost([]byte(d))
		if err != nil || cost != c.cost {
			t.Errorf("%s: dummy %q has cost %d (%v), want bcrypt cost %d", c.name, d, cost, err, c.cost)
		}
		for _, h := range c.users {
			if d == h {
				t.Errorf("%s: the dummy is a user's hash", c.name)
			}
		}
	}
}
