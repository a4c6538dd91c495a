package metrics

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// ColumnKind says how Merge combines one time-series column across parts
// that cover the same interval.
type ColumnKind uint8

const (
	// SumColumn columns are additive over disjoint sets of requests: counts
	// (offered, succeeded, attempts/S, rejected/S, retries/A->B, ...), rates
	// (goodput) and occupancy (queue/S, inflight/S, utilization/S: each
	// part's requests hold their own share of the queue and workers).
	SumColumn ColumnKind = iota
	// MaxColumn columns (queue_max/S and any metric ending in "_max") keep the
	// largest value: each part saw the same peak or a lower one.
	MaxColumn
	// MeanColumn columns are per-caller state (breaker_state/A->B,
	// budget_level/A->B): the mean over the parts that
	// have the row.
	MeanColumn
	// LatencyColumn columns (latency_p50_ms, latency_p99_ms, ...) are combined
	// as a mean weighted by each part's "succeeded" in that row. This is an
	// approximation when two parts share a row (percentiles do not add);
	// it is exact when only one part has the row.
	LatencyColumn
)

// String returns the kind's name.
func (k ColumnKind) String() string {
	switch k {
	case SumColumn:
		return "sum"
	case MaxColumn:
		return "max"
	case MeanColumn:
		return "mean"
	case LatencyColumn:
		return "latency"
	}
	return fmt.Sprintf("ColumnKind(%d)", uint8(k))
}

// KindOf returns how a column merges, from its metric name (the part
// before any "/").
func KindOf(column string) ColumnKind {
	metric, _, _ := strings.Cut(column, "/")
	switch {
	case strings.HasPrefix(metric, "latency_"):
		return LatencyColumn
	case metric == "max" || strings.HasSuffix(metric, "_max"), metric == ColCertainP99: // the worst part's p99, not averaged away
		return MaxColumn
	case metric == MetricBreakerState || strings.HasPrefix(metric, "budget_"):
		return MeanColumn
	}
	return SumColumn
}

// Merge combines parts of one run that partition its logical requests: the
// shards of a load run, or of a simulation split by request, all sharing one
// clock that starts at 0. The result is what a single run doing all the
// parts' work reports:
//
//   - counters (requests, per-service and per-edge counts, duplicates) are
//     summed; histograms are summed bucket by bucket, losslessly;
//   - latency summaries, amplification (attempts / offered) and goodput
//     (succeeded / window_s) are recomputed from the merged counters and
//     histograms, with the same formulas the producers use, so they match an
//     unsharded run exactly;
//   - sim_time_s and window_s are the largest of the parts';
//   - utilization and queue_mean are occupancy averaged over the run, so
//     they add across parts after weighting each by its own sim_time_s:
//     Σ xᵢ·Tᵢ / max Tᵢ (exact up to float rounding); queue_max is the
//     largest part's (a lower bound when parts overlap in time);
//   - series rows are aligned on absolute time (all parts need the same
//     interval, with starts on a common grid) and combined column by column
//     according to KindOf; a part without a row or column contributes
//     nothing to it;
//   - the load driver's report (Summary.Load) adds counts, rates, pool
//     sizes and status counts, since each shard drove its own share of the
//     schedule with its own senders; max_in_flight is summed too, an upper
//     bound of the true peak;
//   - faults are the union of distinct windows; status is the worst of the
//     parts' (diverged > interrupted > complete).
//
// Merging independent replications of a run is not a partition: their
// occupancies would add. Merge does not modify its parts.
func Merge(parts ...*Result) (*Result, error) {
	if len(parts) == 0 {
		return nil, errors.New("metrics: merge: no parts")
	}
	for i, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("metrics: merge: part %d is nil", i)
		}
		if p.Summary.Scenario != parts[0].Summary.Scenario {
			return nil, fmt.Errorf("metrics: merge: part %d is scenario %q, part 0 is %q", i, p.Summary.Scenario, parts[0].Summary.Scenario)
		}
	}
	out := &Result{}
	var err error
	if out.Latency, err = mergeHist(parts, func(r *Result) *hdrhistogram.Histogram { return r.Latency }); err != nil {
		return nil, fmt.Errorf("metrics: merge: latency: %w", err)
	}
	if out.ServiceLatency, err = mergeHists(parts, func(r *Result) map[string]*hdrhistogram.Histogram { return r.ServiceLatency }); err != nil {
		return nil, fmt.Errorf("metrics: merge: %w", err)
	}
	if out.ServiceOKLatency, err = mergeHists(parts, func(r *Result) map[string]*hdrhistogram.Histogram { return r.ServiceOKLatency }); err != nil {
		return nil, fmt.Errorf("metrics: merge: succeeded attempts: %w", err)
	}
	if out.Series, err = mergeSeries(parts); err != nil {
		return nil, fmt.Errorf("metrics: merge: series: %w", err)
	}
	out.Faults = mergeFaults(parts)
	out.Summary = mergeSummary(parts, out)
	mergeEffects(parts, &out.Summary)
	if err := mergeCertainty(parts, out); err != nil { // certainty_merge.go
		return nil, err
	}
	return out, nil
}

// mergeHists merges, name by name, the histogram maps get returns of the
// parts (nil when no part has one).
func mergeHists(parts []*Result, get func(*Result) map[string]*hdrhistogram.Histogram) (map[string]*hdrhistogram.Histogram, error) {
	var out map[string]*hdrhistogram.Histogram
	for _, p := range parts {
		for name := range get(p) {
			if out == nil {
				out = map[string]*hdrhistogram.Histogram{}
			}
			if _, done := out[name]; done {
				continue
			}
			h, err := mergeHist(parts, func(r *Result) *hdrhistogram.Histogram { return get(r)[name] })
			if err != nil {
				return nil, fmt.Errorf("service %s latency: %w", name, err)
			}
			out[name] = h
		}
	}
	return out, nil
}

// mergeHist sums the histograms get returns for each part (nil if none has
// one), by MergeHistograms.
func mergeHist(parts []*Result, get func(*Result) *hdrhistogram.Histogram) (*hdrhistogram.Histogram, error) {
	hs := make([]*hdrhistogram.Histogram, len(parts))
	for i, p := range parts {
		hs[i] = get(p)
	}
	return MergeHistograms(hs...)
}

func mergeSeries(parts []*Result) (*TimeSeries, error) {
	var ref *TimeSeries
	for _, p := range parts {
		if p.Series != nil {
			ref = p.Series
			break
		}
	}
	if ref == nil {
		return nil, nil
	}
	if ref.Interval <= 0 {
		return nil, fmt.Errorf("interval %v must be > 0", ref.Interval)
	}
	start, end := ref.Start, ref.Start
	var cols []string
	colIdx := map[string]int{}
	for i, p := range parts {
		s := p.Series
		if s == nil {
			continue
		}
		if s.Interval != ref.Interval {
			return nil, fmt.Errorf("part %d has interval %v, another %v", i, s.Interval, ref.Interval)
		}
		if (s.Start-ref.Start)%ref.Interval != 0 {
			return nil, fmt.Errorf("part %d starts at %v, off the %v grid of another part starting at %v", i, s.Start, ref.Interval, ref.Start)
		}
		start = min(start, s.Start)
		end = max(end, s.Start+time.Duration(len(s.Rows))*s.Interval)
		for _, c := range s.Columns {
			if _, ok := colIdx[c]; !ok {
				colIdx[c] = len(cols)
				cols = append(cols, c)
			}
		}
	}
	n := int((end - start) / ref.Interval)
	out := &TimeSeries{Start: start, Interval: ref.Interval, Columns: cols, Rows: make([][]float64, n)}
	// Per cell: the value so far and, for means, the weight behind it
	// (parts for MeanColumn, succeeded requests for LatencyColumn).
	val := make([][]float64, n)
	wt := make([][]float64, n)
	seen := make([][]bool, n)
	for r := range n {
		out.Rows[r] = make([]float64, len(cols))
		val[r] = make([]float64, len(cols))
		wt[r] = make([]float64, len(cols))
		seen[r] = make([]bool, len(cols))
	}
	kinds := make([]ColumnKind, len(cols))
	for i, c := range cols {
		kinds[i] = KindOf(c)
	}
	for _, p := range parts {
		s := p.Series
		if s == nil {
			continue
		}
		off := int((s.Start - start) / ref.Interval)
		succ := s.Column(ColSucceeded)
		for r, row := range s.Rows {
			if len(row) != len(s.Columns) {
				return nil, fmt.Errorf("row %d has %d values for %d columns", r, len(row), len(s.Columns))
			}
			o := off + r
			for ci, c := range s.Columns {
				j := colIdx[c]
				v := row[ci]
				switch kinds[j] {
				case SumColumn:
					val[o][j] += v
				case MaxColumn:
					if !seen[o][j] || v > val[o][j] {
						val[o][j] = v
					}
				case MeanColumn, LatencyColumn:
					// A running mean keeps equal inputs exactly equal.
					w := 1.0
					if kinds[j] == LatencyColumn && succ >= 0 {
						w = row[succ]
					}
					if w > 0 {
						wt[o][j] += w
						val[o][j] += (v - val[o][j]) * (w / wt[o][j])
					}
				}
				seen[o][j] = true
			}
		}
	}
	for r := range n {
		copy(out.Rows[r], val[r])
	}
	return out, nil
}

func mergeFaults(parts []*Result) []FaultWindow {
	var out []FaultWindow
	seen := map[FaultWindow]bool{}
	for _, p := range parts {
		for _, f := range p.Faults {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

var statusRank = map[Status]int{"": 0, StatusComplete: 1, StatusInterrupted: 2, StatusDiverged: 3}

func mergeSummary(parts []*Result, out *Result) Summary {
	first := parts[0].Summary
	s := Summary{Scenario: first.Scenario, Seed: first.Seed, Version: first.Version}
	var goodputSum float64
	for _, p := range parts {
		ps := &p.Summary
		s.SimTimeS = max(s.SimTimeS, ps.SimTimeS)
		s.WindowS = max(s.WindowS, ps.WindowS)
		if statusRank[ps.Status] > statusRank[s.Status] {
			s.Status = ps.Status
		}
		if ps.Diverged != nil && (s.Diverged == nil || ps.Diverged.AtS < s.Diverged.AtS) {
			d := *ps.Diverged
			s.Diverged = &d
		}
		s.Requests.Offered += ps.Requests.Offered
		s.Requests.Succeeded += ps.Requests.Succeeded
		s.Requests.Failed += ps.Requests.Failed
		s.Requests.Unknown += ps.Requests.Unknown
		s.Duplicates += ps.Duplicates
		s.UnknownCommitted += ps.UnknownCommitted
		s.UnknownNotCommitted += ps.UnknownNotCommitted
		if ps.GoodputRPS > 0 {
			goodputSum += ps.GoodputRPS
		}
	}
	if s.WindowS == 0 && goodputSum > 0 {
		// Infer the shared window from a part that reported goodput,
		// rounded to the nanosecond it was measured in.
		for _, p := range parts {
			if g := p.Summary.GoodputRPS; g > 0 {
				w := time.Duration(math.Round(float64(p.Summary.Requests.Succeeded) / g * 1e9))
				s.WindowS = max(s.WindowS, w.Seconds())
			}
		}
	}
	if s.WindowS > 0 {
		s.GoodputRPS = float64(s.Requests.Succeeded) / s.WindowS
	}

	if out.Latency != nil {
		s.LatencyMs = exactOfParts(LatencyOf(out.Latency), parts, func(r *Result) Latency { return r.Summary.LatencyMs })
	} else {
		s.LatencyMs = largestPart(parts).Summary.LatencyMs
	}

	// Services and edges in order of first appearance.
	svcIdx := map[string]int{}
	busiest := map[string]int64{} // most attempts seen in one part, per service
	for _, p := range parts {
		for _, ps := range p.Summary.Services {
			i, ok := svcIdx[ps.Name]
			if !ok {
				i = len(s.Services)
				svcIdx[ps.Name] = i
				s.Services = append(s.Services, ServiceSummary{Name: ps.Name, LatencyMs: ps.LatencyMs})
			}
			m := &s.Services[i]
			m.Attempts += ps.Attempts
			m.Succeeded += ps.Succeeded
			m.Failed += ps.Failed
			m.Rejected += ps.Rejected
			m.TimedOut += ps.TimedOut
			m.Wasted += ps.Wasted
			m.Shed += ps.Shed
			m.Duplicates += ps.Duplicates
			m.Executions += ps.Executions
			m.Consumer = m.Consumer.Add(ps.Consumer)
			m.QueueMax = max(m.QueueMax, ps.QueueMax)
			m.Utilization += ps.Utilization * p.Summary.SimTimeS
			m.QueueMean += ps.QueueMean * p.Summary.SimTimeS
			m.Replicas = addReplicas(m.Replicas, ps.Replicas, p.Summary.SimTimeS)
			if ps.Attempts > busiest[ps.Name] {
				busiest[ps.Name] = ps.Attempts
				m.LatencyMs = ps.LatencyMs // replaced below when a histogram exists
			}
		}
	}
	for i := range s.Services {
		m := &s.Services[i]
		if s.SimTimeS > 0 {
			m.Utilization /= s.SimTimeS
			m.QueueMean /= s.SimTimeS
			for j := range m.Replicas {
				m.Replicas[j].Utilization /= s.SimTimeS
				m.Replicas[j].QueueMean /= s.SimTimeS
			}
		}
		if s.Requests.Offered > 0 {
			m.Amplification = float64(m.Attempts) / float64(s.Requests.Offered)
		}
		s.Amplification = max(s.Amplification, m.Amplification)
		if h := out.ServiceLatency[m.Name]; h != nil {
			m.LatencyMs = exactOfParts(LatencyOf(h), parts, func(r *Result) Latency {
				for _, ps := range r.Summary.Services {
					if ps.Name == m.Name {
						return ps.LatencyMs
					}
				}
				return Latency{}
			})
		}
	}

	s.Load = mergeLoad(parts)
	// A verdict judges one run against its scenario, which the parts do
	// not carry: one part keeps its own, shards of a run have none.
	if len(parts) == 1 {
		s.Verdict = parts[0].Summary.Verdict
		// Without their histograms, the lost requests' latencies of
		// several parts cannot be combined; one part keeps its own.
		s.LatencyFailedMs, s.LatencyUnknownMs = parts[0].Summary.LatencyFailedMs, parts[0].Summary.LatencyUnknownMs
		s.LatencyAllMs = parts[0].Summary.LatencyAllMs
	}

	edges := make([][]EdgeSummary, len(parts))
	for i, p := range parts {
		edges[i] = p.Summary.Edges
	}
	s.Edges = MergeEdges(edges...)
	return s
}

// largestPart returns the part with the most succeeded requests (the first
// on ties), whose latency summary stands in when no histogram exists.
func largestPart(parts []*Result) *Result {
	best := parts[0]
	for _, p := range parts[1:] {
		if p.Summary.Requests.Succeeded > best.Summary.Requests.Succeeded {
			best = p
		}
	}
	return best
}

// mergeLoad adds the load reports of shards that each drove a share of
// one schedule over the same window (nil when no part has one).
func mergeLoad(parts []*Result) *LoadReport {
	var out *LoadReport
	for _, p := range parts {
		l := p.Summary.Load
		if l == nil {
			continue
		}
		if out == nil {
			out = &LoadReport{Target: l.Target}
		}
		out.TargetRPS += l.TargetRPS
		out.OfferedRPS += l.OfferedRPS
		out.Scheduled += l.Scheduled
		out.Sent += l.Sent
		out.Late += l.Late
		out.LateThresholdMs = max(out.LateThresholdMs, l.LateThresholdMs)
		out.Unsent += l.Unsent
		out.Workers += l.Workers
		out.Connections += l.Connections
		out.MaxInFlight += l.MaxInFlight
		out.Attempts += l.Attempts
		out.ConnectFailures += l.ConnectFailures
		out.Timeouts += l.Timeouts
		out.Resets += l.Resets
		out.Canceled += l.Canceled
		out.OtherErrors += l.OtherErrors
		for code, n := range l.Statuses {
			if out.Statuses == nil {
				out.Statuses = map[string]int64{}
			}
			out.Statuses[code] += n
		}
	}
	return out
}

// exactOfParts combines the parts' exact latency figures into l (the
// merged histogram's summary): counts and sums add, maxes take the
// largest, so the merged mean is bit for bit the whole run's. A part with
// values but no exact figures (an older producer) leaves l as it is.
func exactOfParts(l Latency, parts []*Result, get func(*Result) Latency) Latency {
	var sum, n int64
	var top float64
	for _, p := range parts {
		pl := get(p)
		if pl.Count == 0 {
			if pl != (Latency{}) {
				return l
			}
			continue
		}
		sum += pl.SumUs
		n += pl.Count
		top = max(top, pl.Max)
	}
	if n == 0 {
		return l
	}
	l.Count, l.SumUs = n, sum
	l.Mean = float64(sum) / float64(n) / 1000
	l.Max = top
	return l.clampedToMax()
}
