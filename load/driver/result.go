package driver

import (
	"strconv"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
)

// recorder streams the outcomes of logical requests into histograms and
// per-interval counters; it keeps nothing per request. Safe for concurrent use.
type recorder struct {
	mu       sync.Mutex
	warmup   time.Duration
	interval time.Duration
	duration time.Duration

	req     metrics.Requests
	all     metrics.Requests // warm-up included, for progress
	latency *hdrhistogram.Histogram
	// latSumUs and latMax are the exact sum (µs) and max of the
	// latencies in latency, for the summary's mean and max.
	latSumUs int64
	latMax   time.Duration
	// lost holds how long the failed [0] and unknown [1] requests took to
	// end, reported beside the headline latency as the simulator does.
	lost [2]lostLatencies
	rows []row

	// Memory grows with concurrency, not with the run's length: an
	// interval's latency histogram is folded into its two quantiles once
	// completions have moved two intervals past it, and reused. latest is
	// the latest completion seen; folded counts the rows folded so far.
	latest time.Duration
	folded int
	spare  []*hdrhistogram.Histogram
}

type row struct {
	offered, succeeded, failed, unknown int64
	// due counts the requests scheduled in the interval as they are
	// (live rows only): offered counts them only when they end.
	due int64
	// lat holds the interval's latencies until the row is folded into
	// p50 and p99 (ms). A completion recorded later still than that (its
	// goroutine stalled for over an interval) is counted but not in them.
	lat      *hdrhistogram.Histogram
	p50, p99 float64
}

func newRecorder(warmup, interval, duration time.Duration) *recorder {
	return &recorder{warmup: warmup, interval: interval, duration: duration, latency: metrics.NewLatencyHistogram()}
}

func (r *recorder) rowAt(t time.Duration) *row {
	i := int(t / r.interval)
	if i < 0 {
		i = 0
	}
	for len(r.rows) <= i {
		r.rows = append(r.rows, row{})
	}
	return &r.rows[i]
}

// record adds one logical request due at `at` that ended at `end`.
func (r *recorder) record(at, end time.Duration, res policies.CallResult, counted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch res {
	case policies.Succeeded:
		r.all.Succeeded++
	case policies.Failed:
		r.all.Failed++
	default:
		r.all.Unknown++
	}
	r.all.Offered++
	if !counted {
		return
	}
	r.req.Offered++
	r.rowAt(at).offered++
	w := r.rowAt(end)
	switch res {
	case policies.Succeeded:
		r.req.Succeeded++
		w.succeeded++
		lat := end - at
		metrics.RecordLatency(r.latency, lat)
		r.latSumUs += int64(lat / time.Microsecond)
		r.latMax = max(r.latMax, lat)
		if int(end/r.interval) >= r.folded {
			if w.lat == nil {
				w.lat = r.histogram()
			}
			metrics.RecordLatency(w.lat, lat)
		}
	case policies.Failed:
		r.req.Failed++
		w.failed++
		r.lost[0].add(end - at)
	default:
		r.req.Unknown++
		w.unknown++
		r.lost[1].add(end - at)
	}
	if end > r.latest {
		r.latest = end
		r.fold(int(end/r.interval) - 1)
	}
}

// histogram returns an empty per-interval histogram, reusing a folded one.
func (r *recorder) histogram() *hdrhistogram.Histogram {
	if n := len(r.spare); n > 0 {
		h := r.spare[n-1]
		r.spare = r.spare[:n-1]
		return h
	}
	// Two significant digits keep each interval's histogram small.
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2)
}

// fold turns the rows before index upto into quantiles.
func (r *recorder) fold(upto int) {
	for ; r.folded < upto && r.folded < len(r.rows); r.folded++ {
		w := &r.rows[r.folded]
		if w.lat == nil {
			continue
		}
		w.p50, w.p99 = quantilesMs(w.lat)
		w.lat.Reset()
		r.spare = append(r.spare, w.lat)
		w.lat = nil
	}
}

// quantilesMs returns a histogram's median and 99th percentile in ms.
func quantilesMs(h *hdrhistogram.Histogram) (p50, p99 float64) {
	return float64(h.ValueAtQuantile(50)) / 1000, float64(h.ValueAtQuantile(99)) / 1000
}

func (r *recorder) progress() Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Progress{
		Succeeded: r.all.Succeeded, Failed: r.all.Failed, Unknown: r.all.Unknown,
		P99: time.Duration(r.latency.ValueAtQuantile(99)) * time.Microsecond,
	}
}

// series builds the run-wide columns of the time series, one row per
// interval: offered by due time, outcomes and latency by completion time.
func (r *recorder) series() *metrics.TimeSeries {
	r.mu.Lock()
	defer r.mu.Unlock()
	cols := metrics.RunColumns()
	ts := &metrics.TimeSeries{Interval: r.interval, Columns: cols}
	sec := r.interval.Seconds()
	for i := range r.rows {
		ts.Rows = append(ts.Rows, r.rowValues(&r.rows[i], sec))
	}
	return ts
}

// rowValues is one row of the run-wide columns (RunColumns' order).
func (r *recorder) rowValues(w *row, sec float64) []float64 {
	vals := []float64{float64(w.offered), float64(w.succeeded), float64(w.failed), float64(w.unknown), float64(w.succeeded) / sec, w.p50, w.p99}
	if w.lat != nil {
		vals[5], vals[6] = quantilesMs(w.lat)
	}
	return vals
}

// result assembles the run's metrics.Result.
func (d *driver) result(interrupted bool, elapsed time.Duration) *metrics.Result {
	opt := d.opt
	r := d.rec
	res := &metrics.Result{Latency: r.latency, ServiceLatency: map[string]*hdrhistogram.Histogram{}}
	s := &res.Summary
	s.Scenario, s.Seed, s.Version = opt.Scenario, opt.Seed, opt.Version
	s.SimTimeS = elapsed.Seconds()
	s.Status = metrics.StatusComplete
	window := opt.Duration - opt.Warmup
	if interrupted {
		s.Status = metrics.StatusInterrupted
		window = min(elapsed, opt.Duration) - opt.Warmup
	}
	if window > 0 {
		s.WindowS = window.Seconds()
	}
	r.mu.Lock()
	s.Requests = r.req
	s.LatencyMs = metrics.LatencyOf(r.latency).WithExact(r.latSumUs, r.req.Succeeded, r.latMax)
	s.LatencyFailedMs, s.LatencyUnknownMs = r.lost[0].summary(), r.lost[1].summary()
	r.mu.Unlock()
	if s.WindowS > 0 {
		s.GoodputRPS = float64(s.Requests.Succeeded) / s.WindowS
	}
	attempts := d.clientEdge(opt.ServiceName).Attempts
	// The target's own view is unknown; what its answers said stands in:
	// refusals (503, 429) as rejected, other failures as failed, attempts
	// without an answer in time as timed out.
	svc := metrics.ServiceSummary{Name: opt.ServiceName, Attempts: attempts}
	for code, n := range d.statuses() {
		switch {
		case code >= 200 && code < 300:
			svc.Succeeded += n
		case code == 503 || code == 429:
			svc.Rejected += n
		default:
			svc.Failed += n
		}
	}
	svc.TimedOut = d.kinds()[transport.KindTimeout]
	if s.Requests.Offered > 0 {
		svc.Amplification = float64(attempts) / float64(s.Requests.Offered)
	}
	s.Amplification = svc.Amplification
	s.Services = []metrics.ServiceSummary{svc}
	// Its attempts as the driver timed them are what `tune` reads for it
	// (a scenario run replaces them with each service's own).
	all, ok := d.lat.Histograms()
	res.ServiceLatency[opt.ServiceName] = all
	res.ServiceOKLatency = map[string]*hdrhistogram.Histogram{opt.ServiceName: ok}
	s.Edges = []metrics.EdgeSummary{d.clientEdge(opt.ServiceName)}
	s.Load = d.loadReport(elapsed, interrupted)
	// The target's utilization, queue and latency are its own; a scenario
	// run replaces this service with the measured ones.
	s.Load.Unmeasured = []string{opt.ServiceName}
	res.Series = r.series()
	return res
}

func (d *driver) loadReport(elapsed time.Duration, interrupted bool) *metrics.LoadReport {
	opt := d.opt
	k := d.kinds()
	lr := &metrics.LoadReport{
		Target:          opt.Target,
		Scheduled:       d.scheduled.Load(),
		Sent:            d.sent.Load(),
		Late:            d.late.Load(),
		LateThresholdMs: float64(opt.LateThreshold) / float64(time.Millisecond),
		Unsent:          d.unsent.Load(),
		Workers:         opt.Workers,
		Connections:     opt.Connections,
		MaxInFlight:     d.maxInflight.Load(),
		Attempts:        sumKinds(k),
		Answered:        k[transport.KindNone],
		ConnectFailures: k[transport.KindConnect],
		Timeouts:        k[transport.KindTimeout],
		Resets:          k[transport.KindReset],
		Canceled:        k[transport.KindCanceled],
		OtherErrors:     k[transport.KindOther],
		Statuses:        map[string]int64{},
	}
	// Requests were due over [0, Duration) (less if interrupted); a
	// scheduler that fell behind dispatched its last one later, which
	// lowers the offered rate.
	span := opt.Duration
	if interrupted {
		span = min(elapsed, opt.Duration)
	}
	if span > 0 {
		lr.TargetRPS = float64(lr.Scheduled) / span.Seconds()
		lr.OfferedRPS = float64(lr.Sent) / max(span, d.lastDispatch).Seconds()
	}
	for st, n := range d.statuses() {
		lr.Statuses[strconv.Itoa(st)] = n
	}
	return lr
}

// lostLatencies is a latency histogram, made at the first value, with the
// exact sum and max of what it holds.
type lostLatencies struct {
	h        *hdrhistogram.Histogram
	sumUs, n int64
	max      time.Duration
}

func (l *lostLatencies) add(d time.Duration) {
	if l.h == nil {
		l.h = metrics.NewLatencyHistogram()
	}
	metrics.RecordLatency(l.h, d)
	l.sumUs += int64(d / time.Microsecond)
	l.n++
	l.max = max(l.max, d)
}

// summary is nil when no value was added ("no data", never 0).
func (l *lostLatencies) summary() *metrics.Latency {
	if l.n == 0 {
		return nil
	}
	x := metrics.LatencyOf(l.h).WithExact(l.sumUs, l.n, l.max)
	return &x
}
