package driver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Target is one request description of vegeta's "http" targets format.
type Target struct {
	Method string
	URL    string
	Header http.Header
	// BodyFile is the file named by an "@path" line, "" for none.
	BodyFile string
	// Line is where the target's "METHOD URL" line is.
	Line int
}

// maxTargetLine bounds one line of a targets file.
const maxTargetLine = 64 << 10

// ReadTargets reads targets in vegeta's "http" format: each target is a
// "METHOD URL" line, then any "Name: value" header lines, then at most one
// "@path" line naming a body file; targets are separated by blank lines, and
// lines starting with '#' are comments. Errors name name and the line.
func ReadTargets(r io.Reader, name string) ([]Target, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxTargetLine)
	var out []Target
	var cur *Target
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(text, "#"):
		case text == "":
			cur = nil
		case cur == nil:
			method, rawURL, ok := strings.Cut(text, " ")
			rawURL = strings.TrimSpace(rawURL)
			if !ok || rawURL == "" || strings.ContainsAny(rawURL, " \t") {
				return nil, fmt.Errorf("%s:%d: want \"METHOD URL\", got %q", name, line, text)
			}
			if !httpguts.ValidHeaderFieldName(method) || strings.ToUpper(method) != method {
				return nil, fmt.Errorf("%s:%d: method %q: want an upper-case HTTP method such as GET or POST", name, line, method)
			}
			if u, err := url.Parse(rawURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
				return nil, fmt.Errorf("%s:%d: URL %q: want an http:// or https:// URL", name, line, rawURL)
			}
			out = append(out, Target{Method: method, URL: rawURL, Header: http.Header{}, Line: line})
			cur = &out[len(out)-1]
		case strings.HasPrefix(text, "@"):
			if cur.BodyFile != "" {
				return nil, fmt.Errorf("%s:%d: a second body file for the target of line %d", name, line, cur.Line)
			}
			if cur.BodyFile = strings.TrimSpace(text[1:]); cur.BodyFile == "" {
				return nil, fmt.Errorf("%s:%d: \"@\" names no body file", name, line)
			}
		default:
			if cur.BodyFile != "" {
				return nil, fmt.Errorf("%s:%d: header after the body file line", name, line)
			}
			k, v, ok := strings.Cut(text, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("%s:%d: want a header \"Name: value\" (or a blank line before the next target), got %q", name, line, text)
			}
			cur.Header.Add(k, v)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, maxTargetLine)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no target (want \"METHOD URL\" lines)", name)
	}
	return out, nil
}
