package metrics

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// MergeHistograms sums histograms bucket by bucket, losslessly: the rule
// by which the shards of a run (Merge) and the replicas of a service
// combine their latencies. Nil histograms are skipped, and the result is
// nil when all are. Equal geometries add count by count; others go
// through Histogram.Merge into the first one's geometry, and a value it
// cannot hold is an error. The inputs are not modified.
func MergeHistograms(hs ...*hdrhistogram.Histogram) (*hdrhistogram.Histogram, error) {
	var acc *hdrhistogram.Snapshot
	for _, h := range hs {
		if h == nil {
			continue
		}
		if acc == nil {
			acc = h.Export()
			continue
		}
		s := h.Export()
		if s.LowestTrackableValue == acc.LowestTrackableValue && s.HighestTrackableValue == acc.HighestTrackableValue &&
			s.SignificantFigures == acc.SignificantFigures && len(s.Counts) == len(acc.Counts) {
			for i, c := range s.Counts {
				acc.Counts[i] += c
			}
			continue
		}
		m := hdrhistogram.Import(acc)
		if dropped := m.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("%d values out of range of the first histogram", dropped)
		}
		acc = m.Export()
	}
	if acc == nil {
		return nil, nil
	}
	return hdrhistogram.Import(acc), nil
}

// MergeEdges sums lists of edge summaries edge by edge: edges of one
// caller-callee pair (From, To) add with EdgeSummary.Add, in the order
// each pair first appears. It is the rule by which the shards of a run
// (Merge) and the replicas of a service combine their edges. The inputs
// are not modified.
func MergeEdges(lists ...[]EdgeSummary) []EdgeSummary {
	var out []EdgeSummary
	idx := map[[2]string]int{}
	for _, l := range lists {
		for _, e := range l {
			k := [2]string{e.From, e.To}
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, EdgeSummary{From: e.From, To: e.To})
			}
			out[i].Add(e)
		}
	}
	return out
}
