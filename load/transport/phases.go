package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
)

// Phase is a phase of an HTTP attempt (metrics.PhaseNames, shifted by one:
// PhaseNone marks an attempt that did not fail).
type Phase uint8

// The phases of an attempt, in order.
const (
	PhaseNone Phase = iota
	PhasePool
	PhaseDNS
	PhaseConnect
	PhaseTLS
	PhaseWrite
	PhaseFirstByte
	PhaseRead
	NumPhases
)

// String returns the phase's name as in the results ("pool_wait", ...).
func (p Phase) String() string {
	if p == PhaseNone || p >= NumPhases {
		return "none"
	}
	return metrics.PhaseNames[p-1]
}

// Sent reports whether an attempt that failed in phase p may have reached
// its target: from the write on, some of the request may have left.
func (p Phase) Sent() bool { return p >= PhaseWrite || p == PhaseNone }

// errPhaseTimeout is the cancellation cause of an attempt whose phase
// timeout (pool_timeout, connect_timeout, tls_timeout, first_byte_timeout)
// ran out.
type errPhaseTimeout struct{ phase Phase }

func (e errPhaseTimeout) Error() string { return fmt.Sprintf("load: %s timeout", e.phase) }

// phaseTrace follows one attempt through its phases with
// net/http/httptrace, enforcing the edge's phase timeouts. The transport
// calls its hooks from its own goroutines, hence the mutex.
type phaseTrace struct {
	mu      sync.Mutex
	lim     policies.PhaseTimeouts
	cancel  context.CancelCauseFunc
	started [NumPhases]time.Time
	dur     [NumPhases]time.Duration
	open    [NumPhases]bool // started and not ended
	ended   [NumPhases]bool
	timer   [NumPhases]*time.Timer
	reused  bool
	waited  bool // GotConn found no idle connection at once
	// rec counts connections dialed and handshakes from the hooks
	// themselves: a dial the attempt started may end after the attempt
	// got another connection and finished.
	rec *PhaseRecorder
}

func (t *phaseTrace) begin(p Phase, limit time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started[p], t.open[p] = time.Now(), true
	if limit > 0 && t.cancel != nil {
		t.timer[p] = time.AfterFunc(limit, func() { t.cancel(errPhaseTimeout{p}) })
	}
}

func (t *phaseTrace) end(p Phase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.open[p] {
		return
	}
	t.open[p], t.ended[p] = false, true
	t.dur[p] = time.Since(t.started[p])
	if t.timer[p] != nil {
		t.timer[p].Stop()
	}
}

// stop stops every phase timer.
func (t *phaseTrace) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tm := range t.timer {
		if tm != nil {
			tm.Stop()
		}
	}
}

// failedIn is the innermost phase started and not ended.
func (t *phaseTrace) failedIn() Phase {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range []Phase{PhaseTLS, PhaseConnect, PhaseDNS, PhasePool, PhaseWrite, PhaseFirstByte, PhaseRead} {
		if t.open[p] {
			return p
		}
	}
	if !t.ended[PhasePool] {
		return PhasePool // failed before asking for a connection
	}
	return PhaseRead
}

func (t *phaseTrace) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn: func(string) { d, _ := t.lim.PoolWait(); t.begin(PhasePool, d) },
		GotConn: func(i httptrace.GotConnInfo) {
			t.mu.Lock()
			t.reused, t.waited = i.Reused, !i.WasIdle
			t.mu.Unlock()
			t.end(PhasePool)
			t.begin(PhaseWrite, 0)
		},
		DNSStart:     func(httptrace.DNSStartInfo) { t.begin(PhaseDNS, 0) },
		DNSDone:      func(httptrace.DNSDoneInfo) { t.end(PhaseDNS) },
		ConnectStart: func(string, string) { t.begin(PhaseConnect, t.lim.Connect) },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				if t.rec != nil {
					t.rec.dialed.Add(1)
				}
				t.end(PhaseConnect)
			}
		},
		TLSHandshakeStart: func() { t.begin(PhaseTLS, t.lim.TLS) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				if t.rec != nil {
					t.rec.shook.Add(1)
				}
				t.end(PhaseTLS)
			}
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			t.end(PhaseWrite)
			t.begin(PhaseFirstByte, t.lim.FirstByte)
		},
		GotFirstResponseByte: func() {
			t.end(PhaseFirstByte)
			t.begin(PhaseRead, 0)
		},
	}
}

// tracedSend is one traced attempt: its trace and whether its edge asked
// for phase semantics. A nil *tracedSend classifies as Send always did.
type tracedSend struct {
	t          *phaseTrace
	phaseAware bool
}

func (ts *tracedSend) failed(an Answer, ctx context.Context) Answer {
	if ts == nil {
		return an
	}
	return ts.t.classify(an, context.Cause(ctx), ts.phaseAware)
}

// SendTraced is Send with the attempt's phases followed through
// net/http/httptrace: its phase timeouts (lim) are enforced, a failure is
// classified by the phase it failed in (Answer.Phase, Answer.NotSent), and
// rec, if not nil, records the phases. With phaseAware a failure before
// the request was written reaches the policy as NotSent; without it, as
// the class Send gives it (a refused connection is Unavailable), so edges
// that ask for no phase semantics behave as before.
func SendTraced(ctx context.Context, client *http.Client, a *Attempt, lim policies.PhaseTimeouts, phaseAware bool, rec *PhaseRecorder) Answer {
	return sendTraced(ctx, client, nil, a, lim, phaseAware, rec)
}

// sendTraced is SendTraced through rt directly when it is not nil (send).
func sendTraced(ctx context.Context, client *http.Client, rt http.RoundTripper, a *Attempt, lim policies.PhaseTimeouts, phaseAware bool, rec *PhaseRecorder) Answer {
	t := &phaseTrace{lim: lim, rec: rec}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t.cancel = cancel
	ctx = httptrace.WithClientTrace(ctx, t.clientTrace())
	an := send(ctx, client, rt, a, &tracedSend{t: t, phaseAware: phaseAware})
	t.end(PhaseRead)
	t.stop()
	if rec != nil {
		rec.record(t, an)
	}
	return an
}

// classify refines the answer of a failed attempt with the phase it
// failed in: one that never left the caller is not sent, and with
// phaseAware (the edge asked for phase semantics) the policy sees it as
// NotSent; a phase timeout in the first byte is a Timeout.
func (t *phaseTrace) classify(an Answer, cause error, phaseAware bool) Answer {
	var pt errPhaseTimeout
	if errors.As(cause, &pt) {
		an.Phase = pt.phase
		an.NotSent = !pt.phase.Sent()
		an.Kind = KindTimeout
		an.Outcome = policies.Timeout
		if an.NotSent {
			an.Outcome = policies.NotSent
		}
		if pt.phase == PhasePool {
			// A client's pool gives up (not_sent), a proxy's queue answers 503.
			_, an.Outcome = t.lim.PoolWait()
		}
		return an
	}
	an.Phase = t.failedIn()
	an.NotSent = !an.Phase.Sent()
	if an.NotSent && phaseAware && an.Kind != KindCanceled && an.Kind != KindTimeout {
		an.Outcome = policies.NotSent
	}
	return an
}

// A phase's durations go into an HDR histogram of microseconds, the
// layout of the results' latency histograms (metrics.NewLatencyHistogram)
// at 2 significant figures instead of 3: a quantile read from it is within
// 1 % of the exact one, over 1 µs … 2^27 µs ≈ 134 s, in 22 KB (a
// result histogram's 3 figures over its range take 256 KB).
const (
	phaseLowestUs  = 1
	phaseHighestUs = 1 << 27
	phaseSigFigs   = 2
)

func newPhaseHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(phaseLowestUs, phaseHighestUs, phaseSigFigs)
}

// phaseHist is a concurrent histogram of one phase's durations: the HDR
// histogram, made at the first sample (a phase an edge never goes through,
// such as TLS on plain HTTP, holds none), and the exact count, sum, sum of
// squares and maximum, under one mutex.
type phaseHist struct {
	mu    sync.Mutex
	h     *hdrhistogram.Histogram
	n     int64
	sumNs int64
	maxNs int64
	sumSq float64 // the sum of squared durations in ms²
}

func (h *phaseHist) add(d time.Duration) {
	ms := float64(d) / 1e6
	h.mu.Lock()
	if h.h == nil {
		h.h = newPhaseHistogram()
	}
	metrics.RecordLatency(h.h, d)
	h.n++
	h.sumNs += int64(d)
	h.sumSq += ms * ms
	h.maxNs = max(h.maxNs, int64(d))
	h.mu.Unlock()
}

// snapshot is a copy of h's histogram (nil when h holds no sample) and its
// count and sum in seconds, for a scrape.
func (h *phaseHist) snapshot() (hist *hdrhistogram.Histogram, n int64, sumS float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h == nil {
		return nil, 0, 0
	}
	return hdrhistogram.Import(h.h.Export()), h.n, float64(h.sumNs) / 1e9
}

func (h *phaseHist) stat() metrics.PhaseStat {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.n
	if n == 0 {
		return metrics.PhaseStat{}
	}
	mx := float64(h.maxNs) / 1e6
	mean := float64(h.sumNs) / float64(n) / 1e6
	sd := math.Sqrt(max(0, h.sumSq/float64(n)-mean*mean))
	// A quantile is the upper end of its HDR bucket, which may lie beyond
	// the largest sample.
	q := func(p float64) float64 { return min(float64(h.h.ValueAtQuantile(p))/1000, mx) }
	return metrics.PhaseStat{Count: n, MeanMs: mean, P50Ms: q(50), P99Ms: q(99), MaxMs: mx, SDMs: sd}
}

// PhaseRecorder collects an edge's attempt phases (SendTraced); it is
// safe for concurrent use. The zero PhaseRecorder is ready.
type PhaseRecorder struct {
	hist                  [NumPhases]phaseHist
	cold, warm            phaseHist // answered attempts on a new / reused connection
	failed                [NumPhases]atomic.Int64
	notSent               atomic.Int64
	dialed, shook, reused atomic.Int64
	traced                atomic.Int64 // attempts recorded
	waited                atomic.Int64 // attempts that found no idle connection
	// grpcTransparent counts grpc-go's own transparent retries beneath
	// the attempts: streams that never reached the server, sent again.
	grpcTransparent atomic.Int64
}

// record adds one attempt's phases and, if it failed, its phase.
func (r *PhaseRecorder) record(t *phaseTrace, an Answer) {
	t.mu.Lock()
	dur, ended, reused, waited := t.dur, t.ended, t.reused, t.waited
	t.mu.Unlock()
	r.add(&dur, &ended, reused, waited, an)
}

// recordLean adds one lean attempt's phases (timed in lp, ended at end)
// as record adds a net/http attempt's: the pool wait runs from the
// attempt's start to its connection, and includes a new connection's
// dial, as GetConn→GotConn does.
func (r *PhaseRecorder) recordLean(lp *leanPhases, an Answer, end time.Time) {
	var dur [NumPhases]time.Duration
	var ended [NumPhases]bool
	mark := func(p Phase, from, to time.Time) {
		if !from.IsZero() && !to.IsZero() {
			dur[p], ended[p] = to.Sub(from), true
		}
	}
	mark(PhasePool, lp.start, lp.got)
	mark(PhaseWrite, lp.got, lp.wrote)
	mark(PhaseFirstByte, lp.wrote, lp.first)
	if an.Phase == PhaseNone {
		mark(PhaseRead, lp.first, end)
	}
	if lp.dialed {
		dur[PhaseConnect], ended[PhaseConnect] = lp.dial, true
		r.dialed.Add(1)
	}
	r.add(&dur, &ended, lp.reused, lp.waited, an)
}

// add counts one attempt: the phases that ended, with their durations;
// whether its connection was reused, or waited for; the attempt's total
// by cold or warm connection if it was answered; and the phase it failed
// in, unless it was canceled.
func (r *PhaseRecorder) add(dur *[NumPhases]time.Duration, ended *[NumPhases]bool, reused, waited bool, an Answer) {
	r.traced.Add(1)
	for p := PhasePool; p < NumPhases; p++ {
		if ended[p] {
			r.hist[p].add(dur[p])
		}
	}
	var total time.Duration
	for _, p := range []Phase{PhasePool, PhaseWrite, PhaseFirstByte, PhaseRead} {
		total += dur[p] // the pool wait includes a new connection's dial
	}
	if ended[PhasePool] && an.Phase == PhaseNone {
		if reused {
			r.warm.add(total)
		} else {
			r.cold.add(total)
		}
	}
	if reused {
		r.reused.Add(1)
	}
	if waited && ended[PhasePool] {
		r.waited.Add(1)
	}
	if an.Phase != PhaseNone && an.Kind != KindCanceled {
		// A canceled attempt did not fail: its call (or the run) let
		// go of it, and the counters count it as canceled.
		r.failed[an.Phase].Add(1)
	}
	if an.NotSent {
		r.notSent.Add(1)
	}
}

// Report is the recorder's account for the results; nil when no attempt
// was traced, so that the results do not claim zeros they did not
// measure.
func (r *PhaseRecorder) Report() *metrics.PhaseReport {
	if r.traced.Load() == 0 {
		return nil
	}
	out := &metrics.PhaseReport{Phases: map[string]metrics.PhaseStat{},
		NotSent: r.notSent.Load(), NewConnections: r.dialed.Load(), Handshakes: r.shook.Load(), Reused: r.reused.Load(),
		Waited: r.waited.Load(), GRPCTransparentRetries: r.grpcTransparent.Load()}
	for name, h := range map[string]*phaseHist{metrics.PhaseCold: &r.cold, metrics.PhaseWarm: &r.warm} {
		if s := h.stat(); s.Count > 0 {
			out.Phases[name] = s
		}
	}
	for p := PhasePool; p < NumPhases; p++ {
		if s := r.hist[p].stat(); s.Count > 0 {
			out.Phases[p.String()] = s
		}
		if n := r.failed[p].Load(); n > 0 {
			if out.FailedIn == nil {
				out.FailedIn = map[string]int64{}
			}
			out.FailedIn[p.String()] += n
		}
	}
	return out
}
