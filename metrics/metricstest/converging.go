package metricstest

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/metrics"
)

// The convergence the synthetic writes go through after UNKNOWN.
const (
	// Deadline is when a caller gives up on an attempt whose reply was lost:
	// the intent is unknown from then on.
	Deadline = 2 * time.Second
	// QueryDelay and QueryInterval are the status-query schedule after
	// UNKNOWN: the first query QueryDelay after it, then one every
	// QueryInterval.
	QueryDelay    = 500 * time.Millisecond
	QueryInterval = time.Second
	// AlertAfter is the alert_after: an intent still unknown this long
	// after its first attempt raises an alert.
	AlertAfter = 10 * time.Second
	// ReconcileEvery is the reconciliation job's scan interval.
	ReconcileEvery = 10 * time.Second
)

// Converging returns Storm with every logical request a write that must
// converge after UNKNOWN: Summary.Certainty, Result.Certainty, per-service
// query load and the convergence columns filled. Each intent's fate is
// drawn from its own index, as the storm's requests are, so
// ConvergingParts merges back to Converging exactly.
func Converging() *metrics.Result { return converging(1, 0) }

// ConvergingParts is StormParts for Converging.
func ConvergingParts(n int) []*metrics.Result {
	parts := make([]*metrics.Result, n)
	for i := range parts {
		parts[i] = converging(n, i)
	}
	return parts
}

// converging builds part of n of the storm and adds the convergence of its
// intents. During the storm a reply is lost more often; an unknown intent
// is then settled by a status query (the common case), a recovery task
// after the owner's lease, the reconciliation job at its next scan, or it
// reaches the manual queue; one the run ends before settling is never
// certain.
func converging(n, part int) *metrics.Result {
	r := build(n, part)
	ts := r.Series
	rows := len(ts.Rows)
	end := Duration.Seconds()
	c := &metrics.Certainty{Recoveries: &metrics.Recoveries{}, Reconciliation: &metrics.Reconciliation{Runs: int64(Duration / ReconcileEvery)}}
	r.Certainty = metrics.NewLatencyHistogram()
	// Per row: intents becoming unknown and certain (a difference array
	// for the unknown count), entering the manual queue, queries sent, and
	// the time to certainty of the intents certain in it.
	unknownDiff := make([]float64, rows+1)
	manualIn := make([]float64, rows)
	queries := make([]float64, rows)
	rowCertain := make([]*hdrhistogram.Histogram, rows)
	var sumUs, maxUs, querying, factQueries int64
	rowOf := func(t float64) int { return min(rows, int(t/Interval.Seconds())) }
	certain := func(t, ttc float64) {
		us := int64(math.Round(ttc * 1e6))
		metrics.RecordLatency(r.Certainty, time.Duration(us)*time.Microsecond)
		sumUs += us
		maxUs = max(maxUs, us)
		if i := rowOf(t + ttc); i < rows {
			if rowCertain[i] == nil {
				rowCertain[i] = hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2)
			}
			_ = rowCertain[i].RecordValue(us)
		}
	}
	for k := range rows * Rate * int(Interval.Seconds()) {
		if k%n != part {
			continue
		}
		st := stream(seed ^ 0xc0ffee ^ uint64(k)*0x9e3779b97f4a7c15)
		t := (float64(k) + st.float()) / Rate
		c.Intents++
		s := Stress(t)
		if st.float() >= 0.5*s+0.01 {
			c.ResolvedBy.Reply++
			certain(t, 0.008*(1+15*s)*math.Exp(0.5*st.normal()))
			continue
		}
		// Unknown from the deadline on; queries every interval until the
		// intent is settled or handed on.
		tu := t + Deadline.Seconds()
		sent := 0
		query := func(upTo float64) {
			for q := tu + QueryDelay.Seconds(); q < upTo && q < end; q += QueryInterval.Seconds() {
				queries[rowOf(q)]++
				sent++
			}
		}
		// settled is when the intent became certain (+Inf: never);
		// leftUnknown when it stopped counting as unknown (certain, in the
		// manual queue, or the run's end).
		var settled float64
		leftUnknown := end
		switch u := st.float(); {
		case u < 0.7: // a query answers SUCCEEDED or FAILED: geometric count
			nq := 1
			for st.float() < 0.4 {
				nq++
			}
			settled = tu + QueryDelay.Seconds() + float64(nq-1)*QueryInterval.Seconds() + 0.004 + 0.01*st.float()
			query(settled)
			if settled < end {
				c.ResolvedBy.Query++
			}
		case u < 0.82: // the owner's lease ends; recovery checks the facts
			settled = tu + 5 + 0.05*st.float()
			query(settled)
			factQueries++
			if settled < end {
				c.ResolvedBy.Recovery++
				if st.float() < 0.7 {
					c.Recoveries.Succeeded++
				} else {
					c.Recoveries.Failed++
				}
			}
		case u < 0.94: // recovery cannot tell; the next scan settles it
			lease := tu + 5
			settled = math.Ceil((lease+0.001)/ReconcileEvery.Seconds())*ReconcileEvery.Seconds() + 0.02*st.float()
			query(lease)
			factQueries += 2
			if lease < end {
				c.Recoveries.Unknown++
			}
			if settled < end {
				c.ResolvedBy.Reconciliation++
				c.Reconciliation.Items++
				c.Reconciliation.Repaired++
			}
			if st.float() < 0.3 && settled < end {
				c.Reconciliation.Failed++ // a first fact query timed out
				c.Reconciliation.Items++
				factQueries++
			}
		default: // nothing can prove it: the manual queue
			settled = math.Inf(1)
			query(tu + 5)
			if at := tu + 20; at < end {
				c.ResolvedBy.Manual++
				c.Reconciliation.Items++
				c.Reconciliation.ToManual++
				manualIn[rowOf(at)]++
				factQueries++
				leftUnknown = at
			}
		}
		if settled < end {
			certain(t, settled-t)
			leftUnknown = settled
		} else if leftUnknown >= end {
			c.ResolvedBy.Never++
		}
		unknownDiff[rowOf(tu)]++
		unknownDiff[rowOf(leftUnknown)]--
		if leftUnknown-t >= AlertAfter.Seconds() {
			c.Alerts++
		}
		if sent > 0 {
			querying++
		}
		c.Queries += int64(sent)
	}

	ts.Columns = append(ts.Columns, metrics.ColUnknownIntents, metrics.ColManualQueue, metrics.ColQueries, metrics.ColCertainP99)
	var unknown, manual float64
	ordersAttempts := ts.Column(metrics.Column(metrics.MetricAttempts, "orders"))
	for i := range ts.Rows {
		unknown += unknownDiff[i]
		manual += manualIn[i]
		p99 := 0.0
		if h := rowCertain[i]; h != nil {
			p99 = float64(h.ValueAtQuantile(99)) / 1000
		}
		ts.Rows[i][ordersAttempts] += queries[i]
		ts.Rows[i] = append(ts.Rows[i], unknown, manual, queries[i], p99)
		c.UnknownMax = max(c.UnknownMax, int64(unknown))
		c.ManualQueueMax = max(c.ManualQueueMax, int64(manual))
	}
	c.ManualQueueEnd = int64(manual)
	if n := r.Certainty.TotalCount(); n > 0 {
		l := metrics.LatencyOf(r.Certainty).WithExact(sumUs, n, time.Duration(maxUs)*time.Microsecond)
		c.MeanMs, c.P50Ms, c.P99Ms, c.MaxMs = l.Mean, l.P50, l.P99, l.Max
	}
	if querying > 0 {
		c.QueriesPerIntent = float64(c.Queries) / float64(querying)
	}
	r.Summary.Certainty = c
	r.Summary.Writes = true
	for i := range r.Summary.Services {
		switch v := &r.Summary.Services[i]; v.Name {
		case "orders": // queries are attempts too
			v.Queries = c.Queries
			v.Attempts += c.Queries
			v.Amplification = float64(v.Attempts) / float64(r.Summary.Requests.Offered)
			r.Summary.Amplification = max(r.Summary.Amplification, v.Amplification)
		case "db":
			v.FactQueries = factQueries
			v.Attempts += factQueries
		}
	}
	return r
}
