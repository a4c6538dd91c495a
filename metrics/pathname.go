package metrics

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxPathComponent bounds the length of a PathComponent, leaving room under
// the usual 255-byte file-name limit for a prefix, an extension and the
// temporary-file decoration WriteFileAtomic adds.
const maxPathComponent = 160

// PathComponent turns a name taken from a scenario, a shard file or the
// command line (a service, a variant) into one file-name component that
// cannot leave the directory it is joined to. ASCII letters, digits, '-',
// '_' and '.' are kept, so ordinary names map to themselves; every other
// byte becomes %XX, as does a leading '.' (no hidden files, no "." or
// ".."). Distinct names give distinct components: the escape is
// reversible, except that a result longer than maxPathComponent bytes is
// cut and ends in a hash of the whole name instead. The empty name becomes
// "%".
func PathComponent(name string) string {
	if name == "" {
		return "%"
	}
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_',
			c == '.' && i > 0:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	s := b.String()
	if len(s) <= maxPathComponent {
		return s
	}
	sum := sha256.Sum256([]byte(name))
	return s[:maxPathComponent-17] + "~" + hex.EncodeToString(sum[:8])
}
