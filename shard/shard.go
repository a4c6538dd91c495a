package shard

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MaxCount bounds the number of shards. It is the largest completion count
// Kubernetes accepts for an Indexed Job; beyond it a typo ("1/1000000")
// would be honoured silently by a local run but rejected by the cluster.
const MaxCount = 100000

// Environment variables FromEnv reads.
const (
	// IndexEnv is set by the Kubernetes Job controller in every pod of an
	// Indexed Job to the pod's completion index.
	IndexEnv = "JOB_COMPLETION_INDEX"
	// CountEnv carries the shard count; stormsim's manifests set it to the
	// Job's completions, which the pod cannot otherwise see.
	CountEnv = "STORMSIM_SHARDS"
)

// Spec is shard Index of Count. It owns the work items whose index is
// congruent to Index modulo Count. The zero Spec is unsharded: it owns every
// item.
type Spec struct {
	Index int
	Count int
}

// Parse parses "I/N" with decimal I and N, 0 ≤ I < N ≤ MaxCount. The empty
// string gives the zero (unsharded) Spec.
func Parse(s string) (Spec, error) {
	if s == "" {
		return Spec{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return Spec{}, fmt.Errorf("shard %q: want I/N, e.g. 2/8", s)
	}
	i, err := parseCount(a)
	if err != nil {
		return Spec{}, fmt.Errorf("shard %q: index: %w", s, err)
	}
	n, err := parseCount(b)
	if err != nil {
		return Spec{}, fmt.Errorf("shard %q: count: %w", s, err)
	}
	sp := Spec{Index: i, Count: n}
	if err := sp.validateSharded(); err != nil {
		return Spec{}, fmt.Errorf("shard %q: %w", s, err)
	}
	return sp, nil
}

// parseCount accepts plain decimal digits only: no sign, no spaces, no
// hexadecimal, so that "I/N" means one thing wherever it is written.
func parseCount(s string) (int, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a decimal number", s)
		}
	}
	if len(s) > 9 {
		return 0, fmt.Errorf("%q is too large (at most %d shards)", s, MaxCount)
	}
	return strconv.Atoi(s)
}

// Validate reports a Spec that cannot be run: a count outside
// [1, MaxCount] or an index outside [0, Count). The zero Spec is valid.
func (s Spec) Validate() error {
	if s == (Spec{}) {
		return nil
	}
	return s.validateSharded()
}

// validateSharded is Validate without the zero-Spec exception: a written
// "0/0" is an error, not a request for no sharding.
func (s Spec) validateSharded() error {
	switch {
	case s.Count < 1 || s.Count > MaxCount:
		return fmt.Errorf("shard count must be in [1, %d], got %d", MaxCount, s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("shard index must be in [0, %d) for %d shards, got %d", s.Count, s.Count, s.Index)
	}
	return nil
}

// Sharded reports whether s splits the work at all (Count > 1).
func (s Spec) Sharded() bool { return s.Count > 1 }

// Owns reports whether the shard runs item index: index ≡ Index (mod
// Count). The zero Spec owns every index ≥ 0; no Spec owns a negative one.
func (s Spec) Owns(index int) bool {
	if index < 0 {
		return false
	}
	if s.Count <= 1 {
		return true
	}
	return index%s.Count == s.Index
}

// Size returns how many of the items 0 … total−1 the shard owns:
// ⌈(total − Index) / Count⌉, and total for the zero Spec.
func (s Spec) Size(total int) int {
	if s.Count <= 1 {
		return max(total, 0)
	}
	if total <= s.Index {
		return 0
	}
	return (total-s.Index-1)/s.Count + 1
}

// Global returns the global index of the shard's local item k (0-based):
// Index + k·Count. A load shard asks its pacer for request Global(k) when
// it sends its own k-th request.
func (s Spec) Global(k uint64) uint64 {
	if s.Count <= 1 {
		return k
	}
	return uint64(s.Index) + k*uint64(s.Count)
}

// String returns "I/N", or "" for the zero Spec, so that Parse(s.String())
// gives s back.
func (s Spec) String() string {
	if s == (Spec{}) {
		return ""
	}
	return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count)
}

// Set parses a flag value; with Type and String it makes *Spec a
// pflag.Value.
func (s *Spec) Set(v string) error {
	sp, err := Parse(v)
	if err != nil {
		return err
	}
	*s = sp
	return nil
}

// Type names the flag value's kind in usage text.
func (s *Spec) Type() string { return "I/N" }

// FromEnv returns the Spec of a pod in a Kubernetes Indexed Job, from
// JOB_COMPLETION_INDEX and STORMSIM_SHARDS in the process environment.
func FromEnv() (Spec, error) { return FromLookup(os.LookupEnv) }

// FromLookup is FromEnv with an explicit environment, for tests and for
// callers that keep their environment elsewhere. Both variables must be set.
func FromLookup(lookup func(string) (string, bool)) (Spec, error) {
	get := func(name string) (int, error) {
		v, ok := lookup(name)
		if !ok {
			return 0, fmt.Errorf("shard: --shard-from-env: %s is not set (it is set in pods of an Indexed Job; see deploy/kubernetes)", name)
		}
		n, err := parseCount(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("shard: --shard-from-env: %s=%q: %w", name, v, err)
		}
		return n, nil
	}
	i, err := get(IndexEnv)
	if err != nil {
		return Spec{}, err
	}
	n, err := get(CountEnv)
	if err != nil {
		return Spec{}, err
	}
	sp := Spec{Index: i, Count: n}
	if err := sp.validateSharded(); err != nil {
		return Spec{}, fmt.Errorf("shard: --shard-from-env: %s=%d, %s=%d: %w", IndexEnv, i, CountEnv, n, err)
	}
	return sp, nil
}

// Request is one logical request a load shard sends: its id, which is its
// index in the global schedule, and its intended send time from the start of
// the run.
type Request struct {
	ID uint64
	At time.Duration
}

// Requests walks the global schedule at (request n is due at at(n), until at
// returns false) and yields the requests this shard owns, in order, with
// their global index as id. It asks at for increasing n only, so a stateful
// pacer that must be walked forward (a Poisson pacer) works as is; every
// shard must pass a schedule built from the same inputs and seed.
//
// Over all shards I/N of one N, the yielded requests are the global
// schedule exactly once each: ids never collide and the union of send times
// is the requested one.
func (s Spec) Requests(at func(n uint64) (time.Duration, bool)) iter.Seq[Request] {
	return func(yield func(Request) bool) {
		for k := uint64(0); ; k++ {
			n := s.Global(k)
			t, ok := at(n)
			if !ok || !yield(Request{ID: n, At: t}) {
				return
			}
		}
	}
}

// DirPrefix starts the name of a shard's output directory: shard I of a
// run writes PARENT/shard-I, which is what 'stormsim merge --shards N
// PARENT' reads and what the Kubernetes manifests pass as --out.
const DirPrefix = "shard-"

// Dir returns the output directory of shard index under parent.
func Dir(parent string, index int) string {
	return filepath.Join(parent, DirPrefix+strconv.Itoa(index))
}
