// Package experiments holds the canned scenarios that reproduce known
// results. Each YAML file opens with a comment saying what it shows, its
// source and the expected result; the tests beside them assert it.
package experiments

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names lists the canned experiments, sorted.
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Lookup returns the YAML of the canned experiment name.
func Lookup(name string) ([]byte, bool) {
	b, err := files.ReadFile(name + ".yaml")
	return b, err == nil
}

// Summary returns the first line of an experiment's header comment
// ("name: what it shows").
func Summary(name string) string {
	b, ok := Lookup(name)
	if !ok {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if s, ok := strings.CutPrefix(line, "#"); ok && strings.TrimSpace(s) != "" {
			s = strings.TrimSpace(s)
			if _, rest, ok := strings.Cut(s, ": "); ok {
				return rest
			}
			return s
		}
	}
	return ""
}
