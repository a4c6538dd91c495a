// Package http1 holds the rules of HTTP/1.1's wire format that net/http
// applies on both sides of a connection, written once for the two lean
// peers that must read what net/http reads, the way it reads it: the load
// driver's HTTP client (load's lean client) and the benchmarks' echo
// server (load/internal/httpecho). Neither allocates per message.
package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrMalformed reports a chunked body, or its trailer, that net/http
// would not read.
var ErrMalformed = errors.New("http1: malformed chunked body")

// ErrTooLong reports a chunked body longer than SkipChunked's limit.
var ErrTooLong = errors.New("http1: chunked body over the limit")

// SkipChunked reads a chunked body and its trailer fields and throws them
// away, with net/http's syntax: every chunk line ends in CRLF and holds no
// other CR, a size has 1 to 16 hex digits, each chunk's data ends in CRLF,
// the lines around the data (sizes, extensions) may not outgrow it by more
// than 16 KB, and the trailer must end, with a double CRLF, within the
// reader's buffer. A body whose data exceeds limit (limit ≥ 0) is
// ErrTooLong as soon as the size that passes it is read. Read errors are
// returned as they come, io.EOF as io.ErrUnexpectedEOF.
func SkipChunked(r *bufio.Reader, limit int64) error {
	total, excess := uint64(0), int64(0)
	for {
		l, err := chunkLine(r)
		if err != nil {
			return err
		}
		excess += int64(len(l)) + 2
		l = bytes.TrimRight(l, " \t")
		l, _, _ = bytes.Cut(l, []byte{';'}) // chunk extensions
		size, ok := hexSize(l)
		if !ok {
			return ErrMalformed
		}
		excess = max(excess-16-2*int64(size), 0) // as net/http computes it
		if excess > 16<<10 {
			return ErrMalformed
		}
		if size == 0 {
			break
		}
		if total += size; limit >= 0 && (size > uint64(limit) || total > uint64(limit)) {
			return ErrTooLong
		}
		if err := discard(r, size); err != nil {
			return err
		}
		end, err := r.Peek(2)
		if err != nil {
			return unexpected(err)
		}
		if string(end) != "\r\n" {
			return ErrMalformed
		}
		r.Discard(2)
	}
	return skipTrailer(r)
}

// discard skips n bytes, which may exceed what an int holds.
func discard(r *bufio.Reader, n uint64) error {
	for n > 0 {
		k := int(min(n, 1<<30))
		if _, err := r.Discard(k); err != nil {
			return unexpected(err)
		}
		n -= uint64(k)
	}
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// chunkLine reads a line of a chunked body without its CRLF.
func chunkLine(r *bufio.Reader) ([]byte, error) {
	l, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, ErrMalformed // net/http's limit is the same 4 KB line
	}
	if err != nil {
		return nil, unexpected(err)
	}
	if i := bytes.IndexByte(l, '\r'); len(l) < 2 || i != len(l)-2 {
		return nil, ErrMalformed
	}
	return l[:len(l)-2], nil
}

// skipTrailer reads the trailer fields after the last chunk: none if a
// CRLF follows; otherwise a double CRLF must come within the reader's
// buffer, and the fields up to their empty line must be well formed.
func skipTrailer(r *bufio.Reader) error {
	b, err := r.Peek(2)
	if string(b) == "\r\n" {
		r.Discard(2)
		return nil
	}
	if len(b) < 2 {
		return unexpected(err)
	}
	for size := 4; ; size++ {
		b, err := r.Peek(size)
		if bytes.HasSuffix(b, []byte("\r\n\r\n")) {
			break
		}
		if err != nil {
			return ErrMalformed
		}
	}
	for {
		l, err := r.ReadSlice('\n') // within the buffer: the double CRLF is
		if err != nil {
			return ErrMalformed
		}
		l = bytes.TrimSuffix(bytes.TrimSuffix(l, []byte{'\n'}), []byte{'\r'})
		if len(l) == 0 {
			return nil
		}
		name, value, ok := bytes.Cut(l, []byte{':'})
		if valid, _ := FieldName(name); !ok || !valid || !FieldValue(value) {
			return ErrMalformed
		}
	}
}

// hexSize parses a chunk's size: 1 to 16 hex digits.
func hexSize(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d, ok := HexDigit(c)
		if !ok {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// HexDigit returns the value of the hex digit c.
func HexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Token reports whether b is an HTTP token (RFC 9110, 5.6.2).
func Token(b []byte) bool {
	for _, c := range b {
		if !tokenByte(c) {
			return false
		}
	}
	return true
}

func tokenByte(c byte) bool {
	return c > ' ' && c < 0x7f && bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) < 0
}

// FieldValue reports whether b holds only visible characters, spaces,
// tabs and obs-text, as net/http requires of a field's value.
func FieldValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// FieldName reports whether net/http reads b as a field's name: a token,
// or a token with spaces in it (spaced), which its server refuses only
// after checking the request's version.
func FieldName(b []byte) (valid, spaced bool) {
	if len(b) == 0 {
		return false, false
	}
	for _, c := range b {
		if c == ' ' {
			spaced = true
		} else if !tokenByte(c) {
			return false, false
		}
	}
	return true, spaced
}
