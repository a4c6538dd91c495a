package driver

import (
	"fmt"
	"strings"
	"testing"
)

func TestReadTargets(t *testing.T) {
	in := `# vegeta http format
GET http://127.0.0.1:8080/a?x=1
X-Account-ID: 8675309
Accept: text/plain
Accept: application/json

POST https://localhost/orders
Content-Type: application/json
@body.json
`
	got, err := ReadTargets(strings.NewReader(in), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	want := `[{GET http://127.0.0.1:8080/a?x=1 map[Accept:[text/plain application/json] X-Account-Id:[8675309]]  2} ` +
		`{POST https://localhost/orders map[Content-Type:[application/json]] body.json 7}]`
	if s := fmt.Sprint(got); s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
}

func TestReadTargetsRefuses(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{"", "stdin: no target"},
		{"# only a comment\n\n", "stdin: no target"},
		{"GET\n", `stdin:1: want "METHOD URL", got "GET"`},
		{"get http://a/\n", `stdin:1: method "get": want an upper-case HTTP method`},
		{"GET ftp://a/\n", `stdin:1: URL "ftp://a/": want an http:// or https:// URL`},
		{"GET /relative\n", `URL "/relative"`},
		{"GET http://a/ b\n", `want "METHOD URL"`},
		{"GET http://a/\nnot a header\n", `stdin:2: want a header "Name: value"`},
		{"GET http://a/\n@\n", `stdin:2: "@" names no body file`},
		{"GET http://a/\n@a\n@b\n", "stdin:3: a second body file for the target of line 1"},
		{"GET http://a/\n@a\nX: 1\n", "stdin:3: header after the body file line"},
		{"GET http://a/" + strings.Repeat("x", maxTargetLine) + "\n", "stdin:1: line longer than"},
	} {
		if _, err := ReadTargets(strings.NewReader(tc.in), "stdin"); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%.40q: %v, want %q", tc.in, err, tc.msg)
		}
	}
}

// FuzzReadTargets: any input is read or refused with a located error,
// never a panic, and every target read has a method, a URL and a line.
func FuzzReadTargets(f *testing.F) {
	f.Add("GET http://127.0.0.1/\nX: 1\n@b\n\nPOST http://a/\n")
	f.Add("#c\n\n\nGET http://a/")
	f.Fuzz(func(t *testing.T, in string) {
		ts, err := ReadTargets(strings.NewReader(in), "in")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "in") {
				t.Fatalf("error %q does not name the input", err)
			}
			return
		}
		for _, tg := range ts {
			if tg.Method == "" || tg.URL == "" || tg.Line < 1 {
				t.Fatalf("incomplete target %+v from %q", tg, in)
			}
		}
	})
}
