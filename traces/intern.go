package traces

import "encoding/hex"

// Bounds on the interning tables: names repeat (a few services and
// operations), so a table of names past maxNames holds input where they do
// not, and interning more would cost more than it saves; a document's ids
// are interned up to maxIDs (a few documents' worth of JSON lines), which
// bounds the table for a single huge export.
const (
	maxNames = 1 << 14
	maxIDs   = 1 << 16
)

// interner keeps one copy of each string it is given, so that the spans of
// an import share their service, operation and id strings instead of
// holding a copy each: the decoded document, which held the originals, is
// dropped after each document.
type interner struct {
	m     map[string]string
	limit int // most strings kept
}

// of returns s, or the equal string already kept.
func (t *interner) of(s string) string {
	if v, ok := t.m[s]; ok {
		return v
	}
	if t.m == nil {
		t.m = make(map[string]string)
	}
	if len(t.m) < t.limit {
		t.m[s] = s
	}
	return s
}

// hex returns id in lowercase hex, kept once: a trace's spans share its
// trace id, and a span's id is its children's parent id.
func (t *interner) hex(id []byte) string {
	var buf [64]byte
	if len(id) > len(buf)/2 {
		return hex.EncodeToString(id)
	}
	n := hex.Encode(buf[:], id)
	if v, ok := t.m[string(buf[:n])]; ok {
		return v
	}
	return t.of(string(buf[:n]))
}

// reset forgets the strings kept, so that a table of per-document ids
// does not grow with the import.
func (t *interner) reset() { clear(t.m) }
