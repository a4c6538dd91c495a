package merge_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stormsim/stormsim/analysis"
	"github.com/stormsim/stormsim/merge"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/shard"
)

// TestSweepShardsKeepCertainty: the sweep.csv files of two shards of a
// converging sweep merge into the whole sweep's rows with their certainty
// columns, written back byte for byte as the unsharded file.
func TestSweepShardsKeepCertainty(t *testing.T) {
	var rows []analysis.Row
	for i := range 4 {
		r := analysis.Row{Unit: analysis.Unit{Index: i, Point: i / 2, Replica: i % 2}, Param: "workload.rate",
			Value: []string{"10", "20"}[i/2], VariantName: "baseline", Seed: uint64(7 + i)}
		r.Status, r.Offered, r.Succeeded, r.P50Ms, r.P99Ms = metrics.StatusComplete, 100, 90+int64(i), 1.5, 9.25
		r.HasCertainty = true
		r.Certainty = metrics.Certainty{Intents: 100, P50Ms: 2.5 + float64(i), P99Ms: 40, MaxMs: 61.125,
			ResolvedBy: metrics.ResolvedBy{Reply: 90, Query: 8, Manual: int64(i), Never: 2 - int64(i%2)}, Alerts: int64(i), ManualQueueEnd: int64(i), Queries: 11}
		rows = append(rows, r)
	}
	var whole bytes.Buffer
	if err := analysis.WriteRows(&whole, rows); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	var dirs []string
	for i := range 2 {
		var part []analysis.Row
		for _, r := range rows {
			if r.Index%2 == i {
				part = append(part, r)
			}
		}
		d := shard.Dir(parent, i)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := analysis.WriteRows(&buf, part); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "sweep.csv"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	merged, err := merge.SweepShards(dirs, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := analysis.WriteRows(&got, merged); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), whole.Bytes()) {
		t.Errorf("merged shards:\n%s\nwant the whole sweep:\n%s", got.Bytes(), whole.Bytes())
	}
	if c := merged[3].Certainty; !merged[3].HasCertainty || c.ResolvedBy.Manual != 3 || c.P50Ms != 5.5 || c.Queries != 11 {
		t.Errorf("unit 3 certainty after the merge: %+v", c)
	}
}
