package shard

import (
	"fmt"
	"strings"
)

// maxRunLen bounds a run label: long enough for a CI build id or a
// timestamp, short enough to read in an error message.
const maxRunLen = 64

// Run labels one run of a sharded command: every shard of the run and its
// merge are given the same label (--run LABEL), the shards record it with
// their output, and 'merge --wait --run LABEL' waits for the shards of that
// run only. The time a shard's output appeared cannot tell a run's shards
// from a previous run's in the same directories (a merge may start before
// or after its shards finish), so the run is named instead. The zero Run
// labels nothing.
type Run string

// ParseRun checks a label: 1 to 64 of the characters A–Z a–z 0–9 _ -
// (no dot, which separates the label from the run's digest in a run id).
func ParseRun(s string) (Run, error) {
	if s == "" || len(s) > maxRunLen {
		return "", fmt.Errorf("run label %q: want 1 to %d characters", truncate(s), maxRunLen)
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "", fmt.Errorf("run label %q: only letters, digits, _ and - are allowed, not %q", truncate(s), c)
		}
	}
	return Run(s), nil
}

// truncate keeps an echoed label short.
func truncate(s string) string {
	if len(s) > maxRunLen {
		return s[:maxRunLen] + "…"
	}
	return s
}

// String returns the label.
func (r *Run) String() string { return string(*r) }

// Set parses a label (pflag.Value).
func (r *Run) Set(s string) error {
	v, err := ParseRun(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Type names the flag's value in help (pflag.Value).
func (r *Run) Type() string { return "LABEL" }

// ID returns the run id a labelled run records: the label, a dot and the
// digest that identifies the command line (digest alone for the zero Run).
func (r Run) ID(digest string) string {
	if r == "" {
		return digest
	}
	return string(r) + "." + digest
}

// RunOf returns the label a run id carries, or the zero Run for an id of
// an unlabelled run.
func RunOf(id string) Run {
	label, _, ok := strings.Cut(id, ".")
	if !ok {
		return ""
	}
	return Run(label)
}
