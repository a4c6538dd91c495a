package http1

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestSkipChunked reads chunked bodies followed by "NEXT" and checks the
// error, and that a body read whole leaves the reader at what follows it.
// load's TestLeanClientAnswersAsNetHTTP and httpecho's FuzzServe check
// these rules against net/http itself.
func TestSkipChunked(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		limit      int64
		want       error
	}{
		{"empty", "0\r\n\r\n", -1, nil},
		{"chunks, extensions, trailer", "2\r\nok\r\n3;x=\"y\"\r\nabc\r\nA \r\n0123456789\r\n0\r\nT: v\r\nU:\r\n\r\n", -1, nil},
		{"at the limit", "4\r\nabcd\r\n0\r\n\r\n", 4, nil},
		{"over the limit", "4\r\nabcd\r\n1\r\ne\r\n0\r\n\r\n", 4, ErrTooLong},
		{"bare LF", "2\nok\r\n0\r\n\r\n", -1, ErrMalformed},
		{"CR inside a line", "2\r;\r\nok\r\n0\r\n\r\n", -1, ErrMalformed},
		{"data without CRLF", "2\r\nokX0\r\n\r\n", -1, ErrMalformed},
		{"17 hex digits", "00000000000000001\r\nx\r\n0\r\n\r\n", -1, ErrMalformed},
		{"no size", ";ext\r\n", -1, ErrMalformed},
		{"extensions outgrowing the data", strings.Repeat("1;"+strings.Repeat("e", 1000)+"\r\nx\r\n", 20) + "0\r\n\r\n", -1, ErrMalformed},
		{"bad trailer field", "0\r\nno colon\r\n\r\n", -1, ErrMalformed},
		{"trailer without a double CRLF", "0\r\nT: v\n\n", -1, ErrMalformed},
		{"cut short", "5\r\nab", -1, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReaderSize(strings.NewReader(tc.body+"NEXT"), 4096)
			if tc.want == io.ErrUnexpectedEOF {
				r = bufio.NewReaderSize(strings.NewReader(tc.body), 4096)
			}
			err := SkipChunked(r, tc.limit)
			if !errors.Is(err, tc.want) {
				t.Fatalf("SkipChunked: %v, want %v", err, tc.want)
			}
			if err == nil {
				if rest, _ := io.ReadAll(r); string(rest) != "NEXT" {
					t.Fatalf("left %q, want NEXT", rest)
				}
			}
		})
	}
}

func TestFieldName(t *testing.T) {
	for _, tc := range []struct {
		name          string
		valid, spaced bool
	}{
		{"Content-Length", true, false}, {"X-A_b.c~!", true, false}, {"Bad Name", true, true},
		{"", false, false}, {"a:b", false, false}, {"a\tb", false, false}, {"é", false, false},
	} {
		if v, s := FieldName([]byte(tc.name)); v != tc.valid || s != tc.spaced {
			t.Errorf("FieldName(%q) = %v, %v; want %v, %v", tc.name, v, s, tc.valid, tc.spaced)
		}
	}
}
