// Package english words counts for people: "1 entry", "2 entries".
package english

import "strconv"

// Count returns n and the noun, singular for exactly one: Count(1, "entry",
// "entries") is "1 entry", Count(0, "entry", "entries") "0 entries".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
