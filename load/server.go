package load

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stormsim/stormsim/dist"
	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Bounds on what a client may send a service: the request body (read for
// the idempotency digest; a larger one is refused with 413) and the header
// block (a larger one is refused with 431 by net/http).
const (
	maxBody        = 1 << 20
	maxHeaderBytes = 64 << 10
	// maxKeyLen bounds an Idempotency-Key (the store keeps every key for
	// its retention); longer keys are refused with 400.
	maxKeyLen = 256
	// maxLedgerID is the longest request id the ledger keeps verbatim;
	// longer ones are kept as a digest.
	maxLedgerID = 64
)

// DefaultLedgerWindow is how long a standalone service (stormsim serve)
// remembers each request's side-effect executions to count duplicates.
const DefaultLedgerWindow = time.Minute

// Server timeouts of every emulated service. Reading a request is quick on
// loopback; the answer may wait for a queue, the service time and
// downstream calls, so writing it is allowed far longer than any scenario's
// deadline; an idle keep-alive connection is closed after IdleTimeout.
const (
	serverReadHeaderTimeout = 10 * time.Second
	serverReadTimeout       = 30 * time.Second
	serverWriteTimeout      = 10 * time.Minute
	serverIdleTimeout       = 2 * time.Minute
)

// Counters are one service's attempt counts.
type Counters struct {
	// Attempts that arrived.
	Attempts int64 `json:"attempts"`
	// Succeeded and Failed: attempts answered with success or a failure
	// after starting work (injected errors, downstream failures).
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	// Rejected: refused before starting (queue full, concurrency limit,
	// shed, deadline expired).
	Rejected int64 `json:"rejected"`
	// Shed: the part of Rejected dropped from the queue (CoDel, max_queue_time).
	Shed int64 `json:"shed"`
	// Expired: the part of Rejected whose propagated deadline had passed.
	Expired int64 `json:"expired"`
	// TimedOut: attempts whose caller was gone before the answer.
	TimedOut int64 `json:"timed_out"`
	// Wasted: attempts that completed their work after their caller was gone.
	Wasted int64 `json:"wasted"`
	// Cancelled: attempts stopped midway because their caller went away
	// (cancel_on_timeout).
	Cancelled int64 `json:"cancelled"`
	// Dropped: answers withheld by a drop_response fault.
	Dropped int64 `json:"dropped"`
}

// counters is Counters with atomic fields.
type counters struct {
	attempts, succeeded, failed, rejected, shed, expired, timedOut, wasted, cancelled, dropped atomic.Int64
}

func (c *counters) snapshot() Counters {
	return Counters{
		Attempts: c.attempts.Load(), Succeeded: c.succeeded.Load(), Failed: c.failed.Load(),
		Rejected: c.rejected.Load(), Shed: c.shed.Load(), Expired: c.expired.Load(),
		TimedOut: c.timedOut.Load(), Wasted: c.wasted.Load(), Cancelled: c.cancelled.Load(), Dropped: c.dropped.Load(),
	}
}

// Stats is what GET /stats returns: a service's counters, its queue and
// worker state, its idempotency ledger and its outgoing edges.
type Stats struct {
	Service string  `json:"service"`
	UptimeS float64 `json:"uptime_s"`
	// All counts every attempt; Counted excludes those of logical requests
	// marked as warm-up (X-Stormsim-Warmup).
	All     Counters `json:"all"`
	Counted Counters `json:"counted"`
	// Workers is the nominal worker count; Busy and Queue are now.
	Workers  int   `json:"workers"`
	Busy     int   `json:"busy"`
	Queue    int   `json:"queue"`
	QueueMax int64 `json:"queue_max"`
	// BusyS and QueueS integrate busy workers and queue length over time
	// (worker-seconds, request-seconds): utilization and mean queue follow.
	BusyS  float64 `json:"busy_s"`
	QueueS float64 `json:"queue_s"`
	// The idempotency ledger: side-effect executions of write requests, the
	// duplicates among them (executions beyond the first per request), and
	// the store's decisions.
	Executions int64 `json:"executions"`
	Duplicates int64 `json:"duplicates"`
	Replays    int64 `json:"replays"`
	InProgress int64 `json:"in_progress"`
	Conflicts  int64 `json:"conflicts"`
	// Edges are the service's downstream call edges.
	Edges []metrics.EdgeSummary `json:"edges,omitempty"`
}

type waitState uint8

const (
	waiting waitState = iota
	granted
	shed
	cancelled
)

// waiter is one queued attempt.
type waiter struct {
	state waitState
	ready chan struct{}
}

// Service emulates one scenario service over HTTP: a pool of workers with
// a waiting room (policies.Queue under a mutex), service times drawn from
// the scenario's distribution, injected errors, fault windows on the wall
// clock (relative to the run's epoch), deadline checks, cancellation on
// the caller's disconnect, idempotency, and downstream calls through each
// edge's call policy. It is an http.Handler; safe for concurrent use.
type Service struct {
	name  string
	cfg   topology.Service
	epoch time.Time

	faults  []topology.Fault
	sampler dist.Sampler
	errOut  policies.Outcome

	rmu sync.Mutex
	rng *rand.Rand

	mu       sync.Mutex
	q        *policies.Queue[*waiter]
	busy     int
	lastT    time.Duration
	busyA    float64 // worker-nanoseconds
	queueA   float64 // request-nanoseconds
	queueMax int64
	latency  *hdrhistogram.Histogram // attempt latency, µs (counted attempts)

	all, counted counters

	// The ledger of side effects, for a committing service.
	commits bool
	store   *idempotency.Locked
	lmu     sync.Mutex
	execs   map[string]uint32
	// With ledgerWindow > 0, oldExecs is the previous generation of the
	// ledger and rotated when execs became the current one.
	ledgerWindow time.Duration
	oldExecs     map[string]uint32
	rotated      time.Duration
	nExec        int64
	nDup         int64
	replays      atomic.Int64
	inProg       atomic.Int64
	conflict     atomic.Int64

	calls []callSpec
	edges []*edgeRef

	stop    context.Context
	cancel  context.CancelFunc
	timers  []*time.Timer
	metrics http.Handler
}

// edgeRef is one outgoing edge of a service.
type edgeRef struct {
	to  string
	url string
	ec  *EdgeClient
	cfg topology.Call
}

// callSpec is one entry of a service's calls: a single call, a fan-out of
// one edge, or a parallel group, with its quorum.
type callSpec struct {
	members []*edgeRef // one per call made at once
	waitFor int
}

// ServiceConfig is what NewService needs beyond the scenario.
type ServiceConfig struct {
	// Epoch is time 0 of the run: fault windows are offsets from it.
	Epoch time.Time
	// URLs maps every service name to its base URL, for downstream calls.
	URLs map[string]string
	// Client sends the downstream calls (its transport bounds connections);
	// nil means http.DefaultClient.
	Client *http.Client
	// Commits marks the service executing writes' side effects.
	Commits bool
	// LedgerWindow bounds the side-effect ledger of a committing service:
	// a request's executions are remembered for at least this long after
	// its last one (at most twice as long), so memory stays bounded however
	// long the service runs. Zero keeps every request of the run, as
	// RunScenario needs to join them with the callers' views.
	LedgerWindow time.Duration
}

// NewService builds the emulation of service name of sc.
func NewService(sc *topology.Scenario, name string, c ServiceConfig) (*Service, error) {
	svc := sc.Service(name)
	if svc == nil {
		return nil, fmt.Errorf("load: no service %q in the scenario", name)
	}
	if c.Client == nil {
		c.Client = http.DefaultClient
	}
	if c.Epoch.IsZero() {
		c.Epoch = time.Now()
	}
	s := &Service{name: name, cfg: *svc, epoch: c.Epoch, commits: c.Commits, latency: metrics.NewLatencyHistogram()}
	var err error
	if s.sampler, err = dist.New(svc.ServiceTime); err != nil {
		return nil, fmt.Errorf("load: services.%s.service_time: %w", name, err)
	}
	limit := -1
	if svc.Queue != nil {
		limit = *svc.Queue
	}
	if s.q, err = policies.NewQueue[*waiter](limit, svc.Overload); err != nil {
		return nil, fmt.Errorf("load: services.%s.overload: %w", name, err)
	}
	switch svc.ErrorClass {
	case "", "error":
		s.errOut = policies.Error
	case "unavailable":
		s.errOut = policies.Unavailable
	default:
		return nil, fmt.Errorf("load: services.%s.error_class: %q (want error or unavailable)", name, svc.ErrorClass)
	}
	seed := sc.Seed
	if seed == 0 {
		seed = 1
	}
	s.rng = rand.New(rand.NewPCG(seed, hashName("service/"+name)))
	for _, f := range sc.Faults {
		if f.Service == name {
			s.faults = append(s.faults, f)
		}
	}
	if c.Commits && svc.Idempotency != nil || c.Commits && sc.Workload.IdempotencyKeys {
		var ic idempotency.Config
		if svc.Idempotency != nil {
			ic = idempotency.Config{Retention: svc.Idempotency.Retention, Lease: svc.Idempotency.Lease, InProgressRetryAfter: svc.Idempotency.InProgressRetryAfter}
		}
		if s.store, err = idempotency.NewLocked(ic); err != nil {
			return nil, fmt.Errorf("load: services.%s.idempotency: %w", name, err)
		}
	}
	s.execs = make(map[string]uint32)
	s.ledgerWindow = c.LedgerWindow
	s.stop, s.cancel = context.WithCancel(context.Background())
	if err := s.wire(sc, c); err != nil {
		s.cancel()
		return nil, err
	}
	for _, f := range s.faults {
		// When a capacity fault ends, queued work may start.
		s.timers = append(s.timers, time.AfterFunc(time.Until(s.epoch.Add(f.At+f.For)), s.dispatch))
	}
	s.metrics = s.promHandler()
	return s, nil
}

// wire resolves the service's downstream calls into edges.
func (s *Service) wire(sc *topology.Scenario, c ServiceConfig) error {
	var shared *sync.Mutex // edges sharing a service-scoped budget
	var sharedBudget policies.Budget
	newEdge := func(call topology.Call, path string) (*edgeRef, error) {
		u, ok := c.URLs[call.To]
		if !ok {
			return nil, fmt.Errorf("load: %s.to: no service %q", path, call.To)
		}
		seed := sc.Seed
		if seed == 0 {
			seed = 1
		}
		edge, err := policies.NewEdge(call.EdgeConfig(), rand.New(rand.NewPCG(seed, hashName("edge/"+s.name+"->"+call.To))))
		if err != nil {
			return nil, fmt.Errorf("load: %s: %w", path, err)
		}
		var mu *sync.Mutex
		if call.Budget != nil && call.Budget.Scope == "service" {
			if shared == nil {
				shared, sharedBudget = new(sync.Mutex), edge.Budget
			}
			mu, edge.Budget = shared, sharedBudget
		}
		ref := &edgeRef{to: call.To, url: u, cfg: call, ec: NewEdgeClient(c.Epoch, c.Client, edge, mu)}
		// Attempts abandoned by a finished call (losing hedges) end with
		// their timeout, or when the service closes.
		ref.ec.Root = s.stop
		s.edges = append(s.edges, ref)
		return ref, nil
	}
	for i, call := range s.cfg.Calls {
		path := fmt.Sprintf("services.%s.calls[%d]", s.name, i)
		var spec callSpec
		switch {
		case len(call.Parallel) > 0:
			for j, m := range call.Parallel {
				if len(m.Parallel) > 0 {
					return fmt.Errorf("load: %s.parallel[%d]: nested parallel groups are not supported in load mode", path, j)
				}
				ref, err := newEdge(m, fmt.Sprintf("%s.parallel[%d]", path, j))
				if err != nil {
					return err
				}
				for range max(m.Fanout, 1) {
					spec.members = append(spec.members, ref)
				}
			}
		default:
			ref, err := newEdge(call, path)
			if err != nil {
				return err
			}
			for range max(call.Fanout, 1) {
				spec.members = append(spec.members, ref)
			}
		}
		spec.waitFor = call.WaitFor
		if spec.waitFor <= 0 || spec.waitFor > len(spec.members) {
			spec.waitFor = len(spec.members)
		}
		s.calls = append(s.calls, spec)
	}
	return nil
}

func hashName(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// Name returns the service's name.
func (s *Service) Name() string { return s.name }

// Close stops the service's timers and ends work held for nobody.
func (s *Service) Close() {
	for _, t := range s.timers {
		t.Stop()
	}
	s.cancel()
}

// faultState is the combined effect of the faults active at now.
type faultState struct {
	capacity   float64
	latencyAdd time.Duration
	errorRate  float64
	drop       float64
}

func (s *Service) faultAt(now time.Duration) faultState {
	fs := faultState{capacity: 1, errorRate: s.cfg.ErrorRate}
	for _, f := range s.faults {
		if now < f.At || now >= f.At+f.For {
			continue
		}
		if f.Capacity != nil {
			fs.capacity *= *f.Capacity
		}
		fs.latencyAdd += f.LatencyAdd
		if f.ErrorRate != nil {
			fs.errorRate = *f.ErrorRate
		}
		fs.drop = max(fs.drop, f.DropResponse)
	}
	return fs
}

// workersAt is the number of workers that may be busy at now: the nominal
// count scaled by the capacity faults, rounded down.
func (s *Service) workersAt(now time.Duration) int {
	return int(math.Floor(float64(s.cfg.Workers)*s.faultAt(now).capacity + 1e-9))
}

// account integrates busy workers and queue length up to now (under mu).
func (s *Service) account(now time.Duration) {
	if dt := now - s.lastT; dt > 0 {
		s.busyA += float64(s.busy) * float64(dt)
		s.queueA += float64(s.q.Len()) * float64(dt)
		s.lastT = now
	}
}

// dispatch starts queued work on free workers.
func (s *Service) dispatch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dispatchLocked(time.Since(s.epoch))
}

func (s *Service) dispatchLocked(now time.Duration) {
	s.account(now)
	limit := s.workersAt(now)
	for s.busy < limit {
		w, ok := s.q.Next(now, func(w *waiter) {
			if w.state == waiting {
				w.state = shed
				close(w.ready)
			}
		})
		if !ok {
			return
		}
		if w.state != waiting {
			continue // its caller went away while it waited
		}
		w.state = granted
		s.busy++
		close(w.ready)
	}
}

// release frees a worker and starts the next queued attempt.
func (s *Service) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Since(s.epoch)
	s.account(now)
	s.busy--
	s.dispatchLocked(now)
}

func (s *Service) float64() float64 {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.rng.Float64()
}

func (s *Service) sample() time.Duration {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.sampler.Sample(s.rng)
}

// ServeHTTP serves /stats (JSON counters), /metrics (Prometheus) and, on
// every other path, one attempt of the emulated work.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/stats":
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Stats())
		return
	case "/metrics":
		s.metrics.ServeHTTP(w, r)
		return
	}
	s.work(w, r)
}

// attemptInfo is what an arriving attempt carries.
type attemptInfo struct {
	id, key     string
	write, warm bool
	deadline    time.Time // zero: none
	body        []byte
	// refused, when set, is why the attempt is refused before any work:
	// status and a message naming the header or the body at fault.
	refused    int
	refusedMsg string
}

func parseAttempt(r *http.Request, arrived time.Time) attemptInfo {
	a := attemptInfo{
		id:    r.Header.Get(HeaderRequestID),
		key:   r.Header.Get(HeaderIdempotencyKey),
		write: r.Header.Get(HeaderWrite) != "",
		warm:  r.Header.Get(HeaderWarmup) != "",
	}
	if v := r.Header.Get(HeaderDeadline); v != "" {
		ms, err := strconv.ParseFloat(v, 64)
		if err == nil && ms > -1e12 && ms < 1e12 {
			a.deadline = arrived.Add(time.Duration(ms * float64(time.Millisecond)))
		} else {
			a.refuse(http.StatusBadRequest, fmt.Sprintf("%s: want a number of milliseconds, got %.40q", HeaderDeadline, v))
		}
	}
	if len(a.key) > maxKeyLen {
		a.refuse(http.StatusBadRequest, fmt.Sprintf("%s: longer than %d bytes (%d)", HeaderIdempotencyKey, maxKeyLen, len(a.key)))
	}
	if r.Body != nil {
		// A body cut short (the client's timeout, a reset) is digested as
		// received; one over the bound is refused.
		a.body, _ = io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if len(a.body) > maxBody {
			a.body = nil
			a.refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body: larger than %d bytes", maxBody))
		}
	}
	return a
}

// refuse records the first reason to refuse the attempt.
func (a *attemptInfo) refuse(status int, msg string) {
	if a.refused == 0 {
		a.refused, a.refusedMsg = status, msg
	}
}

func (s *Service) work(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	a := parseAttempt(r, arrived)
	cs := []*counters{&s.all}
	if !a.warm {
		cs = append(cs, &s.counted)
	}
	add := func(f func(*counters) *atomic.Int64) {
		for _, c := range cs {
			f(c).Add(1)
		}
	}
	add(func(c *counters) *atomic.Int64 { return &c.attempts })
	answer := func(status int, o policies.Outcome, retryAfter time.Duration, dontRetry bool) {
		if o != policies.OK {
			w.Header().Set(HeaderOutcome, o.String())
			SetRetryAfter(w.Header(), retryAfter, dontRetry)
		}
		w.WriteHeader(status)
		if !a.warm {
			s.mu.Lock()
			metrics.RecordLatency(s.latency, time.Since(arrived))
			s.mu.Unlock()
		}
	}

	if a.refused != 0 {
		// Sending the same request again cannot help: don't retry.
		add(func(c *counters) *atomic.Int64 { return &c.rejected })
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		answer(a.refused, policies.Error, 0, true)
		io.WriteString(w, a.refusedMsg+"\n")
		return
	}

	// reject_expired: the propagated deadline passed before the work started.
	expired := func() bool {
		return s.cfg.RejectExpired && !a.deadline.IsZero() && !time.Now().Before(a.deadline)
	}
	if expired() {
		add(func(c *counters) *atomic.Int64 { return &c.rejected })
		add(func(c *counters) *atomic.Int64 { return &c.expired })
		answer(StatusExpired, policies.Timeout, 0, false)
		return
	}

	// The work's context: the caller's, if the service cancels on its
	// caller's timeout; otherwise it keeps working for nobody until the
	// service closes.
	wctx := s.stop
	if s.cfg.CancelOnTimeout {
		var stopMerge func() bool
		var cancel context.CancelFunc
		wctx, cancel = context.WithCancel(r.Context())
		stopMerge = context.AfterFunc(s.stop, cancel)
		defer func() { stopMerge(); cancel() }()
	}

	// Admission: a free worker, else the waiting room, else reject.
	wt := &waiter{ready: make(chan struct{})}
	s.mu.Lock()
	now := time.Since(s.epoch)
	s.account(now)
	switch {
	case s.q.Len() == 0 && s.busy < s.workersAt(now) && s.q.Admits(s.busy):
		s.busy++
		wt.state = granted
	case s.q.Offer(now, wt, s.busy):
		if n := int64(s.q.Len()); n > s.queueMax {
			s.queueMax = n
		}
	default:
		d, dont := policies.RetryAfter(s.cfg.Overload.Pushback, s.q.Len())
		s.mu.Unlock()
		add(func(c *counters) *atomic.Int64 { return &c.rejected })
		answer(http.StatusServiceUnavailable, policies.Unavailable, d, dont)
		return
	}
	started := wt.state == granted
	s.mu.Unlock()
	if !started {
		select {
		case <-wt.ready:
		case <-wctx.Done():
		}
		s.mu.Lock()
		st := wt.state
		if st == waiting {
			wt.state = cancelled
		}
		qlen := s.q.Len()
		s.mu.Unlock()
		switch st {
		case waiting:
			add(func(c *counters) *atomic.Int64 { return &c.cancelled })
			add(func(c *counters) *atomic.Int64 { return &c.timedOut })
			return
		case shed:
			add(func(c *counters) *atomic.Int64 { return &c.rejected })
			add(func(c *counters) *atomic.Int64 { return &c.shed })
			d, dont := policies.RetryAfter(s.cfg.Overload.Pushback, qlen)
			answer(http.StatusServiceUnavailable, policies.Unavailable, d, dont)
			return
		}
	}
	defer s.release()
	if expired() {
		add(func(c *counters) *atomic.Int64 { return &c.rejected })
		add(func(c *counters) *atomic.Int64 { return &c.expired })
		answer(StatusExpired, policies.Timeout, 0, false)
		return
	}

	// Idempotency: the committing service consults its store when the work starts.
	var fence uint64
	useStore := s.store != nil && a.write && a.key != ""
	if useStore {
		d, f, saved := s.store.Begin(time.Since(s.epoch), s.name, a.key, digest(a.body))
		switch d {
		case idempotency.Execute:
			fence = f
		case idempotency.Replay:
			s.replays.Add(1)
			add(func(c *counters) *atomic.Int64 { return &c.succeeded })
			answer(max(saved.Status, http.StatusOK), policies.OK, 0, false)
			return
		case idempotency.InProgress:
			s.inProg.Add(1)
			add(func(c *counters) *atomic.Int64 { return &c.failed })
			answer(StatusInProgress, policies.InProgress, s.store.Config().InProgressRetryAfter, false)
			return
		case idempotency.Full:
			add(func(c *counters) *atomic.Int64 { return &c.rejected })
			answer(http.StatusServiceUnavailable, policies.Unavailable, s.store.Config().InProgressRetryAfter, false)
			return
		default: // Conflict, Expired: the key cannot be used for this request
			s.conflict.Add(1)
			add(func(c *counters) *atomic.Int64 { return &c.failed })
			answer(StatusConflict, policies.Conflict, 0, false)
			return
		}
	}
	abort := func() {
		if fence != 0 {
			_ = s.store.Abort(time.Since(s.epoch), s.name, a.key, fence)
		}
	}

	// The work: service time plus contention plus fault latency.
	now = time.Since(s.epoch)
	fs := s.faultAt(now)
	d := s.sample() + fs.latencyAdd
	if s.cfg.SlowdownPerInflight > 0 {
		s.mu.Lock()
		others := s.busy - 1
		s.mu.Unlock()
		d += time.Duration(others) * s.cfg.SlowdownPerInflight
	}
	if !sleep(wctx, d) {
		abort()
		add(func(c *counters) *atomic.Int64 { return &c.cancelled })
		add(func(c *counters) *atomic.Int64 { return &c.timedOut })
		return
	}
	outcome := policies.OK
	if fs.errorRate > 0 && s.float64() < fs.errorRate {
		outcome = s.errOut
	}
	if outcome == policies.OK {
		for _, spec := range s.calls {
			if o := s.callDownstream(wctx, &spec, a, !a.warm); o != policies.OK {
				outcome = s.downstreamFailure(o)
				break
			}
		}
	}
	if wctx.Err() != nil {
		abort()
		add(func(c *counters) *atomic.Int64 { return &c.cancelled })
		add(func(c *counters) *atomic.Int64 { return &c.timedOut })
		return
	}
	if outcome == policies.OK && a.write && s.commits {
		s.executed(a.id)
		if fence != 0 {
			_ = s.store.Commit(time.Since(s.epoch), s.name, a.key, fence, idempotency.Result{Status: http.StatusOK})
		}
	} else {
		abort()
	}
	if fs.drop > 0 && s.float64() < fs.drop {
		// The reply is lost: the caller hears nothing until it gives up.
		add(func(c *counters) *atomic.Int64 { return &c.dropped })
		add(func(c *counters) *atomic.Int64 { return &c.timedOut })
		select {
		case <-r.Context().Done():
		case <-s.stop.Done():
		}
		return
	}
	if r.Context().Err() != nil {
		add(func(c *counters) *atomic.Int64 { return &c.timedOut })
		add(func(c *counters) *atomic.Int64 { return &c.wasted })
		return
	}
	if outcome == policies.OK {
		add(func(c *counters) *atomic.Int64 { return &c.succeeded })
		answer(http.StatusOK, policies.OK, 0, false)
		return
	}
	add(func(c *counters) *atomic.Int64 { return &c.failed })
	answer(statusOf(outcome), outcome, 0, false)
}

// statusOf is the HTTP status a service answers a failure class with.
func statusOf(o policies.Outcome) int {
	switch o {
	case policies.Unavailable, policies.BreakerOpen, policies.Throttled:
		return http.StatusServiceUnavailable
	case policies.Timeout:
		return http.StatusGatewayTimeout
	case policies.Conflict:
		return StatusConflict
	case policies.InProgress:
		return StatusInProgress
	}
	return http.StatusInternalServerError
}

// downstreamFailure maps a failed downstream call's class to this
// service's answer, per downstream_failure: propagate (default: the class
// itself, a breaker or throttle fast-fail as unavailable), or a fixed class.
func (s *Service) downstreamFailure(o policies.Outcome) policies.Outcome {
	switch s.cfg.DownstreamFailure {
	case "unavailable":
		return policies.Unavailable
	case "error":
		return policies.Error
	case "timeout":
		return policies.Timeout
	}
	if o == policies.BreakerOpen || o == policies.Throttled {
		return policies.Unavailable
	}
	return o
}

// callDownstream makes one entry of the service's calls: its members at
// once, succeeding when waitFor of them succeed and failing as soon as
// that became impossible (the rest are abandoned).
func (s *Service) callDownstream(ctx context.Context, spec *callSpec, a attemptInfo, counted bool) policies.Outcome {
	one := func(ctx context.Context, ref *edgeRef) CallResult {
		method := http.MethodGet
		if a.write {
			method = http.MethodPost
		}
		att := Attempt{Method: method, URL: ref.url, Body: a.body, RequestID: a.id, Write: a.write, Warmup: !counted, IdempotencyKey: a.key}
		co := policies.CallOptions{Write: a.write, Counted: counted}
		if !a.deadline.IsZero() {
			co.Deadline, co.HasDeadline = a.deadline.Sub(s.epoch), true
			if ref.cfg.PropagateDeadline {
				att.Remaining = time.Until(a.deadline)
			}
		}
		return ref.ec.Do(ctx, co, &att, nil)
	}
	if len(spec.members) == 1 {
		r := one(ctx, spec.members[0])
		return r.Outcome
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan CallResult, len(spec.members))
	for _, ref := range spec.members {
		go func() { results <- one(gctx, ref) }()
	}
	ok, bad := 0, 0
	var last policies.Outcome = policies.OK
	for range spec.members {
		r := <-results
		if r.Outcome == policies.OK {
			ok++
		} else {
			bad++
			last = r.Outcome
		}
		if ok >= spec.waitFor {
			return policies.OK
		}
		if bad > len(spec.members)-spec.waitFor {
			return last
		}
	}
	return last
}

// sleep waits d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func digest(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// ledgerKey is how the ledger keeps a request id: verbatim when short, as
// a digest when a client sent a long one.
func ledgerKey(id string) string {
	if len(id) <= maxLedgerID {
		return id
	}
	return "#" + strconv.FormatUint(digest([]byte(id)), 16)
}

// executed records one execution of request id's side effect. With a
// ledger window, ids not executed for one to two windows are forgotten:
// the ledger holds two generations, the older dropped at each rotation.
func (s *Service) executed(id string) {
	id = ledgerKey(id)
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if w := s.ledgerWindow; w > 0 {
		if now := time.Since(s.epoch); now-s.rotated >= w {
			s.oldExecs, s.execs = s.execs, make(map[string]uint32, len(s.execs))
			s.rotated = now
		}
	}
	s.nExec++
	n := s.execs[id]
	if n == 0 && s.oldExecs != nil {
		if n = s.oldExecs[id]; n > 0 {
			delete(s.oldExecs, id)
		}
	}
	n++
	s.execs[id] = n
	if n > 1 {
		s.nDup++
	}
}

// Executions returns how many times request id's side effect executed here
// (within the ledger window, if the service has one).
func (s *Service) Executions(id string) uint32 {
	id = ledgerKey(id)
	s.lmu.Lock()
	defer s.lmu.Unlock()
	return s.execs[id] + s.oldExecs[id]
}

// Stats returns the service's counters now.
func (s *Service) Stats() Stats {
	st := Stats{Service: s.name, UptimeS: time.Since(s.epoch).Seconds(), All: s.all.snapshot(), Counted: s.counted.snapshot(), Workers: s.cfg.Workers}
	s.mu.Lock()
	s.account(time.Since(s.epoch))
	st.Busy, st.Queue, st.QueueMax = s.busy, s.q.Len(), s.queueMax
	st.BusyS, st.QueueS = s.busyA/1e9, s.queueA/1e9
	s.mu.Unlock()
	s.lmu.Lock()
	st.Executions, st.Duplicates = s.nExec, s.nDup
	s.lmu.Unlock()
	st.Replays, st.InProgress, st.Conflicts = s.replays.Load(), s.inProg.Load(), s.conflict.Load()
	for _, e := range s.edges {
		st.Edges = append(st.Edges, edgeSummary(s.name, e.to, e.ec))
	}
	return st
}

// LatencyHistogram returns a copy of the service's attempt latencies (µs).
func (s *Service) LatencyHistogram() *hdrhistogram.Histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	return hdrhistogram.Import(s.latency.Export())
}
