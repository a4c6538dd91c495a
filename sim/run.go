package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Run statuses, as written to Summary.Status.
const (
	StatusComplete    = metrics.StatusComplete
	StatusDiverged    = metrics.StatusDiverged
	StatusInterrupted = metrics.StatusInterrupted
)

// Options tune a run without changing what is simulated.
type Options struct {
	// Version is written into the summary.
	Version string
	// Progress, if set, is called at the end of every series interval with
	// the simulated time reached and the end of the arrival window. simNow
	// passes simEnd while the run drains the work still in flight.
	Progress func(simNow, simEnd time.Duration)
	// OnRow, if set, is called with each row of the time series as its
	// interval closes, before Progress: the live view's feed. columns and
	// row must not be modified or kept. Nil costs nothing: the hook is
	// per interval, not per event.
	OnRow func(start time.Duration, columns []string, row []float64)
}

// Run simulates sc and returns its result. sc must be validated with
// defaults applied (package topology does both).
//
// A run stopped early still returns its result with a nil error: Status
// "diverged" when a limit of sc.Limits was exceeded (Summary.Diverged says
// where), "interrupted" when ctx was cancelled. Errors are reserved for
// scenarios that cannot be simulated.
func Run(ctx context.Context, sc *topology.Scenario, opt Options) (*metrics.Result, error) {
	if sc == nil {
		return nil, errors.New("sim: nil scenario")
	}
	m, err := build(sc)
	if err != nil {
		return nil, err
	}
	return m.run(ctx, opt), nil
}

// run simulates the built model to its end.
func (m *run) run(ctx context.Context, opt Options) *metrics.Result {
	sc := m.sc
	if ctx.Done() != nil {
		m.checkCtx = func() bool { return ctx.Err() != nil }
	}
	m.status = StatusComplete
	m.startArrivals()
	interval := sc.Interval
	if interval <= 0 {
		interval = time.Second
	}
	ser := newSeries(m, interval)
	ser.onRow = opt.OnRow
	ivStart := time.Duration(0)
	warmDone := m.warmup <= 0
	if warmDone {
		m.snapshotWarmup(0)
	}
	for !m.halted {
		if m.checkCtx != nil && m.checkCtx() {
			m.interrupt()
			break
		}
		if m.overEvents() {
			break
		}
		next, ok := m.eng.NextAt()
		if !ok || m.pastDrain(next) {
			break
		}
		// Nothing happens before next: bring the interval rows and the
		// warm-up snapshot up to it, in time order.
		for {
			if !warmDone && next >= m.warmup && m.warmup <= ivStart+interval {
				m.snapshotWarmup(m.warmup)
				warmDone = true
				continue
			}
			if next < ivStart+interval {
				break
			}
			ser.flush(ivStart, ivStart+interval)
			ivStart += interval
			m.ivEvents = m.eng.Events()
			if opt.Progress != nil {
				opt.Progress(ivStart, sc.Duration)
			}
		}
		end := ivStart + interval - 1
		if !warmDone && m.warmup <= end {
			end = m.warmup - 1
		}
		m.eng.RunUntil(end)
	}
	simEnd := max(m.eng.LastAt(), sc.Duration)
	if m.halted {
		simEnd = m.eng.LastAt()
	}
	for ivStart < simEnd || !warmDone {
		e := min(ivStart+interval, simEnd)
		if !warmDone && (m.warmup <= e || ivStart >= simEnd) {
			m.snapshotWarmup(min(m.warmup, simEnd))
			warmDone = true
			continue
		}
		ser.flush(ivStart, e)
		ivStart = e
	}
	// Events at exactly the run's end, on an interval boundary (the last
	// completion of a run whose arrivals and service times are whole
	// intervals), open a row of their own rather than being dropped.
	if m.ivPending() {
		ser.flush(ivStart, ivStart)
	}
	res := m.result(sc, opt, simEnd, ser)
	m.releaseCounts()
	return res
}

// releaseCounts recycles the model's latency counts once the result holds
// its own copies of them.
func (m *run) releaseCounts() { m.eachCounts((*latencyCounts).release) }

// eachCounts calls f on every latency histogram of the model.
func (m *run) eachCounts(f func(*latencyCounts)) {
	f(m.lat)
	f(m.ivLat)
	f(m.lost[0])
	f(m.lost[1])
	for _, s := range m.services {
		f(s.hist)
		f(s.notOK)
	}
	if m.cv != nil {
		f(m.cv.ivCert)
	}
}

// overEvents stops the run as diverged when it has processed more events
// than limits.max_events, or more in the current interval than
// limits.max_event_rate allows.
func (m *run) overEvents() bool {
	n := m.eng.Events()
	switch {
	case n > m.maxEvents:
		m.diverge(fmt.Sprintf("more than %d events (limits.max_events)", m.maxEvents))
	case n-m.ivEvents > m.maxIvEvents:
		m.diverge(fmt.Sprintf("more than %d events in one interval (limits.max_event_rate)", m.maxIvEvents))
	default:
		return false
	}
	return true
}

func (m *run) diverge(reason string) {
	if m.halted {
		return
	}
	m.halted = true
	m.status = StatusDiverged
	m.diverged = &divergence{at: m.eng.Now(), reason: reason}
	m.eng.Halt()
}

func (m *run) interrupt() {
	if m.halted {
		return
	}
	m.halted = true
	m.status = StatusInterrupted
	m.eng.Halt()
}

func (m *run) snapshotWarmup(at time.Duration) {
	for _, sv := range m.services {
		for _, s := range sv.reps {
			s.cm.StartMeasuring(at)
		}
	}
}

// startArrivals schedules the first arrival of the open-loop process, or
// each closed-loop client's first request at U(0, think_time).
func (m *run) startArrivals() {
	if m.closed {
		m.clients = make([]closedClient, m.sc.Workload.Clients)
		for i := range m.clients {
			m.clients[i].idx = i
			at := time.Duration(m.arrivals.Float64() * float64(m.think))
			if at < m.duration {
				m.eng.At(at, m.hClient, &m.clients[i])
			}
		}
		return
	}
	m.scheduleArrival()
}

// scheduleArrival schedules the open-loop process's next request.
func (m *run) scheduleArrival() {
	if t, write, ok := m.open.Next(); ok {
		m.nextWrite = write
		m.eng.AtNext(t, m.hArrival, nil)
	}
}

func (m *run) openArrival() {
	m.startRequest(-1, m.nextWrite)
	m.scheduleArrival()
}

// closedArrival starts a closed-loop client's request. Always draw, so
// write_fraction does not shift the other draws.
func (m *run) closedArrival(c *closedClient) {
	m.startRequest(c.idx, m.arrivals.Float64() < m.writeFraction)
}

// series accumulates the per-interval time series.
type series struct {
	m     *run
	ts    *metrics.TimeSeries
	edges []outEdge
	onRow func(start time.Duration, columns []string, row []float64)
	// repVals holds the current row's per-replica values (replicaValues),
	// written at its end.
	repVals []float64
}

// outEdge is one caller→callee pair of the output; several call entries
// between the same services merge into it.
type outEdge struct {
	name        string
	from, to    string
	members     []*edge
	breaker     policies.Breaker
	budget      policies.Budget
	prevRetries int64
}

func newSeries(m *run, interval time.Duration) *series {
	s := &series{m: m, ts: &metrics.TimeSeries{Interval: interval}}
	for _, e := range m.edges {
		for len(s.edges) <= e.out {
			s.edges = append(s.edges, outEdge{})
		}
		o := &s.edges[e.out]
		o.name, o.from, o.to = e.from+"->"+e.to, e.from, e.to
		o.members = append(o.members, e)
		if o.breaker == nil {
			o.breaker = e.pe.Breaker
		}
		if o.budget == nil {
			o.budget = e.pe.Budget
		}
	}
	cols := append(metrics.RunColumns(), metrics.ColLatencyMean)
	for _, sv := range m.services {
		for _, c := range []string{metrics.MetricAttempts, metrics.MetricQueue, metrics.MetricQueueMax, metrics.MetricInflight,
			metrics.MetricUtilization, metrics.MetricRejected, metrics.MetricShed} {
			cols = append(cols, metrics.Column(c, sv.name))
		}
	}
	for _, o := range s.edges {
		cols = append(cols, metrics.Column(metrics.MetricRetries, o.name))
		if o.breaker != nil {
			cols = append(cols, metrics.Column(metrics.MetricBreakerState, o.name))
		}
		if o.budget != nil {
			cols = append(cols, metrics.Column(metrics.MetricBudgetLevel, o.name))
		}
	}
	if m.async != nil {
		cols = append(cols, m.async.columns()...)
	}
	s.ts.Columns = append(cols, replicaColumns(m)...)
	if m.cv != nil {
		s.ts.Columns = append(s.ts.Columns, m.cv.columns()...)
	}
	return s
}

// ivQuantiles are the latency percentiles of each series row.
var ivQuantiles = [2]float64{50, 99}

// flush closes the interval [from, to) into one row and resets the
// interval accumulators.
func (s *series) flush(from, to time.Duration) {
	m := s.m
	// Rates are over the row's nominal interval, the last row's too: the
	// run ended inside it and nothing happened after, so scaling its
	// successes up to a full interval would draw a spike that is not there.
	width := s.ts.Interval.Seconds()
	row := make([]float64, 0, len(s.ts.Columns))
	iv := &m.iv
	mean := 0.0
	if iv.succeeded > 0 {
		mean = iv.latSum / float64(iv.succeeded) / 1e6
	}
	var q [2]int64
	m.ivLat.quantiles(ivQuantiles[:], q[:])
	p50, p99 := float64(q[0])/1000, float64(q[1])/1000
	row = append(row, float64(iv.offered), float64(iv.succeeded), float64(iv.failed), float64(iv.unknown),
		float64(iv.succeeded)/width, p50, p99, mean)
	*iv = intervalTotals{}
	m.ivLat.reset()
	for _, sv := range m.services {
		for _, r := range sv.reps {
			r.cm.Advance(to)
		}
		t := totalsOf(sv)
		wns := float64(to - from)
		// Time means over the part of the row the run lasted; a row opened
		// by events at the run's very end lasted no time: its state then.
		queue, util := float64(t.qlen), float64(t.busy)/float64(t.workers)
		if wns > 0 {
			queue, util = (t.queueArea-t.ivQueue)/wns, (t.busyArea-t.ivBusy)/(wns*float64(t.workers))
		}
		row = append(row, float64(t.ivAttempts), queue, float64(t.ivQMax),
			float64(t.inflight), util, float64(t.ivRejected), float64(t.ivShed))
		s.repVals = replicaValues(s.repVals, sv, wns)
		for _, r := range sv.reps {
			r.ivBusy, r.ivQueue = r.cm.Areas()
			r.ivQMax = r.qlen()
			r.ivAttempts, r.ivRejected, r.ivShed = 0, 0, 0
		}
	}
	for i := range s.edges {
		o := &s.edges[i]
		var r int64
		for _, e := range o.members {
			r += e.pe.Stats.Retries
		}
		row = append(row, float64(r-o.prevRetries))
		o.prevRetries = r
		if o.breaker != nil {
			row = append(row, float64(o.breaker.State(to)))
		}
		if o.budget != nil {
			row = append(row, o.budget.Level(to))
		}
	}
	if m.async != nil {
		row = m.async.row(row)
	}
	row = append(row, s.repVals...)
	s.repVals = s.repVals[:0]
	if m.cv != nil {
		row = m.cv.row(row)
	}
	s.ts.Rows = append(s.ts.Rows, row)
	if s.onRow != nil {
		s.onRow(from, s.ts.Columns, row)
	}
}

// result assembles the run's Result.
func (m *run) result(sc *topology.Scenario, opt Options, simEnd time.Duration, ser *series) *metrics.Result {
	// Requests still open when the run ended never learnt their outcome.
	for _, req := range m.reqRecs {
		if !req.alive {
			continue
		}
		if req.result == policies.Pending && req.open {
			req.result = policies.Unknown
			if req.counted {
				m.totals.unknown++
				m.lost[1].record(simEnd - req.arrived)
			}
		}
		if req.irrevocable {
			m.countIrrevocable(req)
		}
		m.fold(req)
	}
	t := &m.totals
	lt := m.ledger.Totals()
	lat := m.lat.hist()
	sum := metrics.Summary{
		Scenario: sc.Name, Seed: sc.Seed, Version: opt.Version, SimTimeS: simEnd.Seconds(), Status: m.status,
		Requests:            metrics.Requests{Offered: t.offered, Succeeded: t.succeeded, Failed: t.failed, Unknown: t.unknown},
		LatencyMs:           m.lat.latency(),
		LatencyFailedMs:     m.lost[0].lostLatency(),
		LatencyUnknownMs:    m.lost[1].lostLatency(),
		LatencyAllMs:        latencyOfAll(m.lat, m.lost[0], m.lost[1]),
		Duplicates:          lt.Duplicates,
		UnknownCommitted:    lt.UnknownCommitted,
		UnknownNotCommitted: lt.UnknownNotCommitted,
		Writes:              sc.Workload.WriteFraction > 0,
	}
	sum.Irrevocable = m.irrevocableSummary()
	if h := sc.DrainHint(simEnd); h != "" {
		sum.Hints = []string{h}
	}
	// A run stopped early (diverged, interrupted) measured only up to
	// where it stopped; dividing by the whole window would understate goodput.
	if w := (min(sc.Duration, simEnd) - sc.Warmup).Seconds(); w > 0 {
		sum.WindowS = w
		sum.GoodputRPS = float64(t.succeeded) / w
	}
	res := &metrics.Result{Latency: lat, ServiceLatency: map[string]*hdrhistogram.Histogram{}, Series: ser.ts,
		ServiceOKLatency: map[string]*hdrhistogram.Histogram{}}
	span := float64(simEnd - m.warmup)
	var biggest *service
	biggestQ := 0
	for _, s := range m.services {
		for _, r := range s.reps {
			r.cm.Advance(simEnd)
		}
		st := totalsOf(s)
		hist := s.hist.hist()
		ss := metrics.ServiceSummary{
			Name: s.name, Attempts: st.c.attempts, Succeeded: st.c.succeeded, Failed: st.c.failed,
			Rejected: st.c.rejected, TimedOut: st.c.timedOut, Wasted: st.c.wasted, QueueMax: int64(st.queueMax),
			LatencyMs: s.hist.latency(), Shed: st.c.shed, Executions: st.c.executions,
			Consumer: m.async.summary(s),
		}
		if s.cm.Commits() {
			ss.Duplicates = lt.Duplicates
		}
		ss.Queries, ss.FactQueries = m.cv.queriesTo(s.name)
		if t.offered > 0 {
			ss.Amplification = float64(st.c.attempts) / float64(t.offered)
		}
		if span > 0 {
			ss.Utilization = (st.busyArea - st.warmBusy) / (span * float64(st.workers))
			ss.QueueMean = (st.queueArea - st.warmQueue) / span
		}
		ss.Replicas = replicaSummaries(s, span)
		effectSummaries(s, &ss)
		sum.Amplification = max(sum.Amplification, ss.Amplification)
		sum.Services = append(sum.Services, ss)
		res.ServiceLatency[s.name] = hist
		// With no not-OK answer the OK attempts' histogram is the whole
		// one: share it rather than import a copy of its ~254 KB of
		// counts. Result histograms are read, never recorded into.
		if s.notOK.total == 0 {
			res.ServiceOKLatency[s.name] = hist
		} else {
			res.ServiceOKLatency[s.name] = s.hist.histWithout(s.notOK)
		}
		if biggest == nil || st.qlen > biggestQ {
			biggest, biggestQ = s, st.qlen
		}
	}
	for i := range ser.edges {
		o := &ser.edges[i]
		es := metrics.EdgeSummary{From: o.from, To: o.to}
		for _, e := range o.members {
			var opens int64
			if e.pe.Breaker != nil {
				opens = e.pe.Breaker.Opens()
			}
			es.Add(metrics.EdgeSummaryOf(o.from, o.to, e.pe.Stats, opens))
			for _, p := range e.pools {
				es.AddPool(p.sum)
			}
		}
		es.Ejections = o.ejections()
		sum.Edges = append(sum.Edges, es)
	}
	if m.diverged != nil {
		d := &metrics.Divergence{AtS: m.diverged.at.Seconds(), Reason: m.diverged.reason}
		if biggest != nil {
			d.Service, d.Queue = biggest.name, int64(biggestQ)
		}
		sum.Diverged = d
	}
	for _, f := range sc.Faults {
		res.Faults = append(res.Faults, metrics.FaultWindow{Service: f.Service, At: f.At, For: f.For, Label: model.FaultLabel(&f)})
	}
	if m.cv != nil {
		sum.Certainty = m.cv.summary(simEnd)
		res.Certainty = m.cv.hist
	}
	res.Summary = sum
	return res
}

// PlanOf returns the plan a run of sc is bound to (model.Compile's, as the
// run's builder binds it), checking that the run builds: what serve binds
// for the same scenario is the same value.
func PlanOf(sc *topology.Scenario) (*model.Plan, error) {
	m, err := build(sc)
	if err != nil {
		return nil, err
	}
	return m.plan, nil
}

// ivPending reports whether the current interval has counted anything not
// yet written to a row.
func (m *run) ivPending() bool {
	iv := &m.iv
	if iv.offered+iv.succeeded+iv.failed+iv.unknown > 0 {
		return true
	}
	for _, s := range m.services {
		for _, sv := range s.reps {
			if sv.ivAttempts+sv.ivRejected+sv.ivShed > 0 {
				return true
			}
		}
	}
	return false
}
