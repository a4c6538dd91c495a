package topology

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Problem is one thing wrong with a scenario, located as precisely as the
// loader can: the file (or the --set override, or an empirical sample file)
// and line it comes from, and the field's path inside the scenario.
type Problem struct {
	// File is the scenario file's name, an empirical sample file's path, or
	// "--set PATH=VALUE" when an override introduced the value.
	File string
	// Line is 1-based; 0 when the problem has no line (an override).
	Line int
	// Path is the field's path with list indices, e.g. "services[2].workers";
	// empty for problems of the whole document.
	Path string
	// Msg says what is wrong, and what would be right.
	Msg string
}

// String formats the problem as "file:line: path: msg".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is every problem found in a scenario. Load and Parse return it
// (as an error) so that a user fixes a file in one pass instead of one error
// per run. Use errors.As to get at the individual problems.
type Problems []Problem

// Error prints one problem per line, in the order Load sorted them: the
// scenario file's problems by line, then those of other sources.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// sortProblems orders problems by source (the scenario file first, then
// the overrides in the order given, then other files in the order they were
// first reported) and then by line, dropping exact duplicates (an alias can
// make one node be decoded twice).
func sortProblems(file string, sets []string, ps Problems) Problems {
	rank := map[string]int{file: 0}
	for _, s := range sets {
		if _, ok := rank["--set "+s]; !ok {
			rank["--set "+s] = len(rank)
		}
	}
	for _, p := range ps {
		if _, ok := rank[p.File]; !ok {
			rank[p.File] = len(rank)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if rank[a.File] != rank[b.File] {
			return rank[a.File] < rank[b.File]
		}
		return a.Line < b.Line
	})
	out := ps[:0]
	seen := make(map[Problem]bool, len(ps))
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Suggest returns the candidate closest to s in edit distance, or "" if
// none is close enough to be a plausible typo (at most two edits, fewer
// than s is long): the "did you mean" of every error that names an
// unknown word, from scenario keys to command names and SLO metrics.
func Suggest(s string, candidates []string) string { return suggest(s, candidates) }

// suggest is Suggest.
func suggest(s string, candidates []string) string {
	if len(s) > maxShown {
		return "" // and editDistance would cost len(s) per candidate
	}
	best, bestD := "", 3 // at most two edits away
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD && d < len(s) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// maxProblems bounds the problems reported for one file: past it, a file
// of a million unknown keys would print a million lines (and hold them
// all in memory) where a person needs the first ones to see the pattern.
const maxProblems = 200

// capProblems keeps the first maxProblems of ps (sorted) and, when there
// were more (more of them never recorded), ends with one that counts them.
func capProblems(file string, ps Problems, more int) Problems {
	if len(ps) > maxProblems {
		more += len(ps) - maxProblems
		ps = ps[:maxProblems]
	}
	if more > 0 {
		ps = append(ps, Problem{File: file, Msg: fmt.Sprintf("and %s more problems (fix these first)", thousands(more))})
	}
	return ps
}

// thousands formats n with commas: 12,345.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// maxShown bounds how much of a key a problem quotes.
const maxShown = 64

// Shorten cuts s to maxShown bytes (at a rune boundary), marking the cut, so
// an error message quoting an untrusted value (a key, a name, a line of a
// samples file) stays one readable line however long the value is.
func Shorten(s string) string {
	if len(s) <= maxShown {
		return s
	}
	i := maxShown
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
