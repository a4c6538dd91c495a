package model

import (
	"math"
	"testing"
	"time"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/topology"
)

func TestChannel(t *testing.T) {
	for _, tc := range []struct {
		dedupe  string
		repeats []bool
		want    metrics.Effects
	}{
		{topology.DedupeNone, []bool{false}, metrics.Effects{Sent: 1, Delivered: 1}},
		{topology.DedupeNone, []bool{false, true, true}, metrics.Effects{Sent: 3, Delivered: 3, Duplicates: 2}},
		{topology.DedupeKey, []bool{false, true, true}, metrics.Effects{Sent: 3, Delivered: 1, Absorbed: 2}},
		{topology.DedupeKey, []bool{false, false}, metrics.Effects{Sent: 2, Delivered: 2}},
	} {
		ch := NewChannel(&topology.ExternalEffect{Dedupe: tc.dedupe})
		var got metrics.Effects
		for _, r := range tc.repeats {
			ch.Execute(r).Count(&got)
		}
		if got != tc.want {
			t.Errorf("dedupe %s, repeats %v: %+v, want %+v", tc.dedupe, tc.repeats, got, tc.want)
		}
		if got.Sent != got.Delivered+got.Absorbed {
			t.Errorf("dedupe %s: sent %d ≠ delivered %d + absorbed %d", tc.dedupe, got.Sent, got.Delivered, got.Absorbed)
		}
	}
}

// TestVersionsScript is a script of reads and writes on one entity: each
// step reads (r) or writes with the version a reader got, and the machine
// must decide what the retry rule says.
func TestVersionsScript(t *testing.T) {
	type write struct {
		reader int // whose read the write uses
		try    int
		want   WriteFate
	}
	for _, tc := range []struct {
		name   string
		cfg    topology.VersionedWrite
		reads  int // readers reading at the start, in order
		writes []write
	}{
		{"no overlap", topology.VersionedWrite{Entities: 1, Retry: topology.RetryStep}, 1,
			[]write{{0, 1, WriteCommitted}}},
		{"step overwrites", topology.VersionedWrite{Entities: 1, Retry: topology.RetryStep}, 2,
			[]write{{0, 1, WriteCommitted}, {1, 1, WriteLost}}},
		{"operation redoes then aborts", topology.VersionedWrite{Entities: 1, Retry: topology.RetryOperation, Attempts: 2}, 2,
			[]write{{0, 1, WriteCommitted}, {1, 1, WriteRedo}, {1, 2, WriteAborted}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := NewVersions(&tc.cfg, 1, "db")
			read := make([]uint64, tc.reads)
			for i := range read {
				read[i] = vs.Read(0)
			}
			for i, w := range tc.writes {
				if got := vs.Write(0, read[w.reader], w.try); got != w.want {
					t.Errorf("write %d (reader %d, try %d) = %v, want %v", i, w.reader, w.try, got, w.want)
				}
			}
		})
	}
}

// A redo that reads again commits: the rule the seed asks for.
func TestVersionsRedoReadsAgain(t *testing.T) {
	vs := NewVersions(&topology.VersionedWrite{Entities: 1, Retry: topology.RetryOperation, Attempts: 3}, 1, "db")
	a, b := vs.Read(0), vs.Read(0)
	if vs.Write(0, a, 1) != WriteCommitted || vs.Write(0, b, 1) != WriteRedo {
		t.Fatal("the second writer did not conflict")
	}
	if got := vs.Write(0, vs.Read(0), 2); got != WriteCommitted {
		t.Errorf("redo after a fresh read = %v, want committed", got)
	}
}

// Entities are uniform over intents and fixed per intent.
func TestVersionsEntityUniform(t *testing.T) {
	const k, n = 10, 100000
	vs := NewVersions(&topology.VersionedWrite{Entities: k}, 3, "db")
	var counts [k]int
	for id := uint64(1); id <= n; id++ {
		e := vs.Entity(id)
		if e != vs.Entity(id) {
			t.Fatalf("intent %d: entity not fixed", id)
		}
		counts[e]++
	}
	// Each count is binomial(n, 1/k): 5 standard deviations.
	sd := math.Sqrt(n * (1.0 / k) * (1 - 1.0/k))
	for e, c := range counts {
		if math.Abs(float64(c)-n/k) > 5*sd {
			t.Errorf("entity %d: %d intents, want %d ± %.0f", e, c, n/k, 5*sd)
		}
	}
}

func TestConflictProbability(t *testing.T) {
	if got, want := ConflictProbability(1000, 10*time.Millisecond, 10), 1-math.Exp(-1); math.Abs(got-want) > 1e-12 {
		t.Errorf("ConflictProbability = %v, want %v", got, want)
	}
}
