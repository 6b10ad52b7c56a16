package web

import (
	"crypto/md5"
	"strings"
)

// apr1Magic begins an Apache MD5 hash (htpasswd -m, the default of
// Apache's htpasswd before 2.4): $apr1$SALT$HASH.
const apr1Magic = "$apr1$"

// apr1 computes the Apache MD5 crypt of password with salt (at most 8
// characters, up to the first $), as apr_md5_encode does: the result is
// $apr1$SALT$ and 22 characters of the crypt alphabet. It is the
// FreeBSD MD5 crypt with Apache's magic; MD5 is weak, which is why
// htpasswd -B (bcrypt) is what the docs recommend.
func apr1(password, salt string) string {
	if i := strings.IndexByte(salt, '$'); i >= 0 {
		salt = salt[:i]
	}
	if len(salt) > 8 {
		salt = salt[:8]
	}
	pw := []byte(password)
	ctx := md5.New()
	ctx.Write(pw)
	ctx.Write([]byte(apr1Magic))
	ctx.Write([]byte(salt))
	alt := md5.New()
	alt.Write(pw)
	alt.Write([]byte(salt))
	alt.Write(pw)
	sum := alt.Sum(nil)
	for n := len(pw); n > 0; n -= 16 {
		ctx.Write(sum[:min(n, 16)])
	}
	for n := len(pw); n != 0; n >>= 1 {
		if n&1 != 0 {
			ctx.Write([]byte{0})
		} else {
			ctx.Write(pw[:1])
		}
	}
	final := ctx.Sum(nil)
	for i := range 1000 {
		c := md5.New()
		if i&1 != 0 {
			c.Write(pw)
		} else {
			c.Write(final)
		}
		if i%3 != 0 {
			c.Write([]byte(salt))
		}
		if i%7 != 0 {
			c.Write(pw)
		}
		if i&1 != 0 {
			c.Write(final)
		} else {
			c.Write(pw)
		}
		final = c.Sum(nil)
	}
	var b strings.Builder
	b.WriteString(apr1Magic + salt + "$")
	to64 := func(v uint32, n int) {
		for ; n > 0; n-- {
			b.WriteByte(cryptAlphabet[v&0x3f])
			v >>= 6
		}
	}
	for _, t := range [][3]int{{0, 6, 12}, {1, 7, 13}, {2, 8, 14}, {3, 9, 15}, {4, 10, 5}} {
		to64(uint32(final[t[0]])<<16|uint32(final[t[1]])<<8|uint32(final[t[2]]), 4)
	}
	to64(uint32(final[11]), 2)
	return b.String()
}

// cryptAlphabet is crypt(3)'s base 64.
const cryptAlphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
