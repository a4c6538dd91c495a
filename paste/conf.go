package paste

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file holds what the nginx and HAProxy readers share: the directive
// (one statement with its line), the note of what a file set and what it
// left, and the proxies' duration syntax.

// directive is one statement of a proxy config: its name, arguments and
// line; an nginx block's statements are its children.
type directive struct {
	name     string
	args     []string
	line     int
	children []*directive
	block    bool
}

// confReader collects the problems of a proxy config and the directives
// read and left: the note says both, by name only (never a value the
// reader does not understand).
type confReader struct {
	file    string
	probs   Problems
	read    map[string]bool
	ignored map[string]bool
}

func newConfReader(file string) *confReader {
	return &confReader{file: file, read: map[string]bool{}, ignored: map[string]bool{}}
}

func (r *confReader) add(line int, field, format string, args ...any) {
	r.probs = append(r.probs, Problem{File: r.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (r *confReader) err() error { return r.probs.inLineOrder() }

// note says which directives set the edge and which were left aside.
func (r *confReader) note(what string) string {
	names := func(m map[string]bool) string {
		var s []string
		for n := range m {
			s = append(s, n)
		}
		if len(s) == 0 {
			return "none"
		}
		sort.Strings(s)
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s: %s: read %s; not modelled, ignored: %s", r.file, what, names(r.read), names(r.ignored))
}

// proxyDuration reads a duration as nginx and HAProxy write it: a number
// with an optional unit (ms, s, m, h, d; nginx also w, M, y and several
// parts, "1m30s"); a bare number is in units of bare.
func proxyDuration(s string, bare time.Duration) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	units := []struct {
		suffix string
		d      time.Duration
	}{{"ms", time.Millisecond}, {"us", time.Microsecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour},
		{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}, {"M", 30 * 24 * time.Hour}, {"y", 365 * 24 * time.Hour}}
	var total time.Duration
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 || i > 12 {
			return 0, false
		}
		n, _ := strconv.ParseInt(s[:i], 10, 64)
		s = s[i:]
		unit, found := bare, false
		for _, u := range units {
			if strings.HasPrefix(s, u.suffix) {
				unit, s, found = u.d, s[len(u.suffix):], true
				break
			}
		}
		if !found && s != "" {
			return 0, false
		}
		if n > int64((1<<62)/unit) {
			return 0, false
		}
		total += time.Duration(n) * unit
		if total < 0 {
			return 0, false
		}
	}
	return total, true
}
