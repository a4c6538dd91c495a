package serve

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stormsim/stormsim/broker"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Bounds on what a client may send a service: the request body (read for
// the idempotency digest; a larger one is refused with 413) and the header
// block (a larger one is refused with 431 by net/http).
const (
	maxBody        = transport.MaxBodyBytes
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
	// Succeeded and Failed: attempts that did their work and answered
	// with success or a failure (injected errors, downstream failures),
	// also when their caller was already gone (then also Wasted) or the
	// reply was dropped: the simulator's meaning (docs/concepts.md).
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
	// Wasted: attempts that completed their work after their caller was
	// gone; each is also in Succeeded or Failed.
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
	Replica int     `json:"replica,omitempty"`
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
	// BusyS and QueueS integrate busy workers and queue length over the
	// measured window, MeasuredS long: from the scenario's warm-up to now
	// (worker-seconds, request-seconds); utilization and mean queue
	// follow. QueueMax is the longest queue in it.
	BusyS     float64 `json:"busy_s"`
	QueueS    float64 `json:"queue_s"`
	MeasuredS float64 `json:"measured_s"`
	// The idempotency ledger: side-effect executions of write requests, the
	// duplicates among them (executions beyond the first per request), and
	// the store's decisions.
	Executions int64 `json:"executions"`
	Duplicates int64 `json:"duplicates"`
	Replays    int64 `json:"replays"`
	InProgress int64 `json:"in_progress"`
	Conflicts  int64 `json:"conflicts"`
	// LatencyMs summarizes the latency of the counted attempts the service
	// answered (arrival to answer, in ms): percentiles from its HDR
	// histogram, exact mean, max and count; null before the first answer.
	LatencyMs *metrics.Latency `json:"latency_ms"`
	// Edges are the service's downstream call edges.
	Edges []metrics.EdgeSummary `json:"edges,omitempty"`
	// Consumer is the service's consumer group of a topic, if it has one:
	// what the broker delivered and each intent's effects so far.
	Consumer *metrics.ConsumerSummary `json:"consumer,omitempty"`
	// Effects and VersionedWrites are the service's external effect and
	// versioned write so far, when it has them (its first replica's,
	// which its replicas share).
	Effects         *metrics.Effects         `json:"effects,omitempty"`
	VersionedWrites *metrics.VersionedWrites `json:"versioned_writes,omitempty"`
}

type waitState uint8

const (
	waiting waitState = iota
	granted
	shed
	expired
	cancelled
)

// waiter is one queued attempt: the machine's queue item in serve.
type waiter struct {
	state       waitState
	ready       chan struct{}
	arrived     time.Duration
	hasDeadline bool
	deadline    time.Duration
	slot        int // the worker it holds, once granted
}

// Service emulates one scenario service over HTTP. What happens to an
// attempt is decided by the scenario's callee machine (model.Callee, the
// very code the simulator runs), driven here from HTTP handlers under a
// mutex with the service's clock: admission, queueing, shedding, service
// times, injected errors, faults, idempotency and dropped replies. The
// handler does the waiting the machine asks for, and the downstream calls
// through each edge's call policy. It is an http.Handler; safe for
// concurrent use.
type Service struct {
	name string
	cfg  topology.Service
	// plan is the scenario's plan, node this replica's node in it.
	plan *model.Plan
	node *model.Replica
	// clk is the service's clock; now is clk.Now, kept as a func for
	// the machines that take one (topics).
	clk clock.Clock
	now func() time.Duration

	// writeMethod is the HTTP method of the writes it calls on with
	// (workload.write_method).
	writeMethod string

	// mu guards the machine; the replicas of a service share one, as they
	// share its idempotency store.
	mu *sync.Mutex
	cm *model.Callee[*waiter]
	// rep is this replica's index; ledger the replica keeping the
	// service's side-effect ledger (the first).
	rep    int
	ledger *Service
	// faults of this service, and the instants their set changes
	faults   []topology.Fault
	edges    []time.Duration
	nextEdge int
	active   []*topology.Fault
	// The scenario's warm-up starts the machine's measured window
	// (StartMeasuring) once the clock reaches it; measuring says it has.
	measuring bool
	latency   *hdrhistogram.Histogram // attempt latency, µs (counted attempts)
	okLatency *hdrhistogram.Histogram // of the counted attempts answered OK
	latSumUs  int64                   // exact sum (µs) and max of latency's values
	latMax    time.Duration
	// promLatency is latency in seconds for /metrics, observed with it.
	promLatency prometheus.Histogram
	busyUntil   []time.Duration // per worker: the virtual end of its last work
	freeSlots   []int

	heldBodies atomic.Int64 // bytes of request bodies of admitted attempts (holdBody)

	all, counted counters

	// The ledger of side effects, for a committing service.
	lmu   sync.Mutex
	execs map[string]uint32
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

	calls    []callSpec
	outEdges []*edgeRef

	stop    context.Context
	cancel  context.CancelFunc
	timers  []clock.Timer
	metrics http.Handler

	// warmup is the scenario's: intents committed before it are not
	// counted (topics, issue 23), and the measured window starts at it.
	// consumer is the service's consumer group of topic.
	warmup   time.Duration
	consumer *broker.Consumer
	topic    *broker.Topic
	// hasQuery: the service answers status queries (serveconverge.go).
	hasQuery bool
	// fx is the service's external effect and versioned write, shared by
	// its replicas (serveeffects.go); nil without. passed is the
	// cluster's record of requests past an irrevocable step.
	fx     *serveEffects
	passed *passedSteps
	// rec is a committing service's recovery task, factsLog a fact
	// service's records (serverecover.go); shared by the replicas.
	rec      *recovery
	factsLog *factLog
	// recon is a committing service's reconciliation job
	// (servereconcile.go), shared by the replicas.
	recon *reconciliation
}

// edgeRef is one outgoing edge of a service.
type edgeRef struct {
	to  string
	url string
	ec  *edge.EdgeClient
	cfg topology.Call
}

// callSpec is one entry of a service's calls: a single call, a fan-out of
// one edge, or a parallel group, with its quorum.
type callSpec struct {
	members []*edgeRef // one per call made at once
	waitFor int
	pub     *broker.Producer // a publish step instead (no members)
	// irrevocable: the step cannot be taken back once sent (serveeffects.go).
	irrevocable bool
}

// ServiceConfig is what NewService needs beyond the scenario.
type ServiceConfig struct {
	// Epoch is time 0 of the run: fault windows are offsets from it.
	Epoch time.Time
	// URLs maps every service name to its base URL, for downstream calls.
	URLs map[string]string
	// Transport sends the downstream calls: net/http (transport.NewHTTP,
	// whose client bounds the connections) or gRPC (a
	// transport.GRPCClient). Nil means net/http's default client.
	Transport transport.Transport
	// Commits marks the service executing writes' side effects.
	Commits bool
	// LedgerWindow bounds the side-effect ledger of a committing service:
	// a request's executions are remembered for at least this long after
	// its last one (at most twice as long), so memory stays bounded however
	// long the service runs. Zero keeps every request of the run, as
	// RunScenario needs to join them with the callers' views.
	LedgerWindow time.Duration
	// Clock is the service's time (the offset since Epoch) and timers:
	// arrivals, service times, fault edges, deadlines and the latencies
	// it records. Nil means the wall clock from Epoch; tests script a
	// fake one (clock.Fake) to drive the service exactly.
	Clock clock.Clock
	// passed, if set, records the requests that passed an irrevocable
	// step at any service of the cluster (serveeffects.go).
	passed *passedSteps
	// Replica is which replica of the service this is (0-based); First is
	// the service's replica 0 when this is another one: the replicas share
	// its mutex, idempotency store and side-effect ledger.
	Replica int
	First   *Service
	// ReplicaURLs lists the URLs of each replicated callee's replicas (more
	// than one); callers balance over them.
	ReplicaURLs map[string][]string
	// Topics are the scenario's topics on a real broker, by name, for the
	// service's publish steps and its consumer group (StartCluster
	// connects them); a scenario with topics needs them.
	Topics map[string]*broker.Topic
	// Plan is the scenario's plan (model.Compile), which the service binds
	// its replica's node of; nil compiles it. StartCluster compiles once
	// for all its services.
	Plan *model.Plan
}

// NewService builds the emulation of service name of sc.
func NewService(sc *topology.Scenario, name string, c ServiceConfig) (*Service, error) {
	plan := c.Plan
	if plan == nil {
		var err error
		if plan, err = model.Compile(sc); err != nil {
			return nil, fmt.Errorf("load: %s: %w", scenarioName(sc), err)
		}
	}
	rp := plan.Replica(name, c.Replica)
	if rp == nil {
		return nil, fmt.Errorf("load: no service %q (replica %d) in the scenario", name, c.Replica)
	}
	svc := plan.Service(name).Config
	if c.Epoch.IsZero() {
		c.Epoch = time.Now()
	}
	clk := clock.Or(c.Clock, c.Epoch)
	s := &Service{name: name, cfg: *svc, plan: plan, node: rp, clk: clk, now: clk.Now, latency: metrics.NewLatencyHistogram(),
		okLatency: metrics.NewLatencyHistogram(), mu: new(sync.Mutex), rep: c.Replica, writeMethod: cmp.Or(sc.Workload.WriteMethod, http.MethodPost)}
	s.ledger = s
	if c.First != nil {
		s.mu, s.ledger = c.First.mu, c.First
	}
	// Writes are deduped when the workload sends keys or the service has
	// a store configured (a standalone serve, keys sent by another client).
	keyed := plan.Keyed || svc.Idempotency != nil
	var err error
	if s.cm, err = model.NewCallee[*waiter](svc, model.Stream(plan.Seed, rp.Stream), c.Commits, keyed); err != nil {
		return nil, fmt.Errorf("load: services.%s.%w", name, err)
	}
	if c.First != nil {
		s.cm.ShareStore(c.First.cm)
	}
	s.cm.TrackCancelled(func(w *waiter) bool { return w.state == cancelled }, func(*waiter) {})
	if err := s.enableQueries(); err != nil {
		return nil, err
	}
	s.fx, s.passed = newServeEffects(svc, plan.Seed, c.First), c.passed
	s.warmup = sc.Warmup
	for _, f := range rp.Faults {
		s.faults = append(s.faults, *f)
		s.edges = append(s.edges, f.At, f.At+f.For)
	}
	slices.Sort(s.edges)
	s.execs = make(map[string]uint32)
	s.ledgerWindow = c.LedgerWindow
	s.stop, s.cancel = context.WithCancel(context.Background())
	if err := s.wire(c); err != nil {
		s.cancel()
		return nil, err
	}
	if err := s.wireConverge(c); err != nil {
		s.cancel()
		return nil, err
	}
	if err := s.wireAsync(c.Topics); err != nil {
		s.Close()
		return nil, err
	}
	for _, at := range s.edges {
		// When a fault starts or ends, queued work may start.
		s.timers = append(s.timers, clk.AfterFunc(at-clk.Now(), s.dispatch))
	}
	s.metrics = s.promHandler()
	return s, nil
}

// wire binds the downstream steps of the service's replica node in the
// plan to edges: an EdgeClient per plan edge (a fan-out's members share
// it), drawing from the streams the plan names.
func (s *Service) wire(c ServiceConfig) error {
	var shared *sync.Mutex // edges sharing a service-scoped budget
	var sharedBudget policies.Budget
	refs := map[*model.Edge]*edgeRef{}
	bind := func(pe *model.Edge) (*edgeRef, error) {
		if ref := refs[pe]; ref != nil {
			return ref, nil
		}
		u, ok := c.URLs[pe.To]
		if !ok {
			return nil, fmt.Errorf("load: %s.to: no service %q", pe.Field, pe.To)
		}
		pol, err := policies.NewEdge(pe.Call.EdgeConfig(), model.Stream(s.plan.Seed, pe.Stream))
		if err != nil {
			return nil, fmt.Errorf("load: %s.%w", pe.Field, err)
		}
		var mu *sync.Mutex
		if pe.SharedBudget != "" {
			if shared == nil {
				shared, sharedBudget = new(sync.Mutex), pol.Budget
			}
			mu, pol.Budget = shared, sharedBudget
		}
		var reps *edge.Replicas
		if urls := c.ReplicaURLs[pe.To]; pe.Replicas > 1 && len(urls) > 1 {
			if reps, err = edge.NewReplicas(urls, pe.Call, model.Stream(s.plan.Seed, pe.BalanceStream), pe.Local); err != nil {
				return nil, fmt.Errorf("load: %s.%w", pe.Field, err)
			}
		}
		ref := &edgeRef{to: pe.To, url: u, cfg: *pe.Call, ec: edge.NewEdgeClient(edge.EdgeConfig{Edge: pol, Transport: c.Transport, Mu: mu,
			// Attempts abandoned by a finished call (losing hedges) end
			// with their timeout, or when the service closes.
			Root: s.stop, Clock: s.clk, Replicas: reps})}
		refs[pe] = ref
		s.outEdges = append(s.outEdges, ref)
		return ref, nil
	}
	for j, st := range s.node.Steps {
		spec := callSpec{waitFor: st.Need, irrevocable: s.cfg.Calls[j].Irrevocable} // a publish step: wireAsync gives it its producer
		for _, pe := range st.Members {
			ref, err := bind(pe)
			if err != nil {
				return err
			}
			spec.members = append(spec.members, ref)
		}
		s.calls = append(s.calls, spec)
	}
	return nil
}

// Name returns the service's name.
func (s *Service) Name() string { return s.name }

// Replica returns which replica of its service s is (0-based).
func (s *Service) Replica() int { return s.rep }

// Close stops the service's timers and ends work held for nobody.
func (s *Service) Close() {
	for _, t := range s.timers {
		t.Stop()
	}
	s.cancel()
	if s.consumer != nil {
		s.consumer.Stop()
	}
}

// clock reads the service's clock and brings the machine's faults up to
// it (under mu). The machine sees the faults change at their window edges,
// as the simulator's fault events do.
func (s *Service) clock() time.Duration {
	now := s.now()
	if !s.measuring && now >= s.warmup {
		s.cm.StartMeasuring(max(s.warmup, 0))
		s.measuring = true
	}
	if s.nextEdge < len(s.edges) && now >= s.edges[s.nextEdge] {
		for s.nextEdge < len(s.edges) && now >= s.edges[s.nextEdge] {
			s.nextEdge++
		}
		s.active = s.active[:0]
		for i := range s.faults {
			if f := &s.faults[i]; now >= f.At && now < f.At+f.For {
				s.active = append(s.active, f)
			}
		}
		// In the order they started, as the simulator applies them.
		slices.SortStableFunc(s.active, func(a, b *topology.Fault) int { return cmp.Compare(a.At, b.At) })
		s.cm.SetFaults(now, s.active)
	}
	return now
}

// dispatch starts queued work on free workers.
func (s *Service) dispatch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dispatchLocked(s.clock())
}

// dispatchLocked hands the queued attempts the machine now lets start
// their workers; those shed or found expired are woken to be rejected.
func (s *Service) dispatchLocked(now time.Duration) {
	s.cm.Advance(now)
	for {
		w, ok := s.cm.Next(now, func(w *waiter) {
			w.state = shed
			close(w.ready)
		})
		if !ok {
			return
		}
		if s.cm.Expired(now, w.hasDeadline, w.deadline) {
			w.state = expired
			close(w.ready)
			continue
		}
		s.cm.Start()
		s.grant(w)
		close(w.ready)
	}
}

// grant gives w a worker slot (under mu; the machine counted it busy).
func (s *Service) grant(w *waiter) {
	w.state = granted
	if n := len(s.freeSlots); n > 0 {
		w.slot = s.freeSlots[n-1]
		s.freeSlots = s.freeSlots[:n-1]
		return
	}
	w.slot = len(s.busyUntil)
	s.busyUntil = append(s.busyUntil, 0)
}

// startAt is when w's work starts in the service's time: when it arrived,
// or when its worker finished its previous work if that was later. Measuring
// each service time from the worker's own virtual busy-until time, not from
// when the handler woke up, keeps timer overshoot from accumulating along a
// worker's queue, as in the simulator.
func (s *Service) startAt(w *waiter) time.Duration {
	return max(w.arrived, s.busyUntil[w.slot])
}

// freeSlot frees w's worker slot, busy until the virtual time until
// (under mu); the caller tells the machine and dispatches.
func (s *Service) freeSlot(w *waiter, until time.Duration) {
	s.busyUntil[w.slot] = until
	s.freeSlots = append(s.freeSlots, w.slot)
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
	// query: a status query by key (serveconverge.go); fact: a fact
	// query (serverecover.go).
	query, fact bool
	// entity and readVer are a versioned write's read (serveeffects.go);
	// past: the attempt sent an irrevocable step, so nothing cancels it.
	entity  int
	readVer uint64
	past    bool
	// deadline is the propagated deadline on the service's clock, if
	// hasDeadline.
	deadline    time.Duration
	hasDeadline bool
	body        []byte
	// refused, when set, is why the attempt is refused before any work:
	// status and a message naming the header or the body at fault.
	refused    int
	refusedMsg string
}

func parseAttempt(r *http.Request, arrived time.Duration) attemptInfo {
	a := attemptInfo{
		id:    r.Header.Get(transport.HeaderRequestID),
		key:   r.Header.Get(transport.HeaderIdempotencyKey),
		write: r.Header.Get(transport.HeaderWrite) != "",
		warm:  r.Header.Get(transport.HeaderWarmup) != "",
		query: r.Header.Get(HeaderQuery) != "",
		fact:  r.Header.Get(HeaderFact) != "",
	}
	if v := r.Header.Get(transport.HeaderDeadline); v != "" {
		ms, err := strconv.ParseFloat(v, 64)
		if err == nil && ms > -1e12 && ms < 1e12 {
			a.deadline, a.hasDeadline = arrived+time.Duration(ms*float64(time.Millisecond)), true
		} else {
			a.refuse(http.StatusBadRequest, fmt.Sprintf("%s: want a number of milliseconds, got %.40q", transport.HeaderDeadline, v))
		}
	}
	checkHeaderSize(r, &a)
	if len(a.key) > maxKeyLen {
		a.refuse(http.StatusBadRequest, fmt.Sprintf("%s: longer than %d bytes (%d)", transport.HeaderIdempotencyKey, maxKeyLen, len(a.key)))
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

// reply answers one attempt and counts it, in all and, unless the
// logical request is in warm-up, in counted.
type reply struct {
	s       *Service
	w       http.ResponseWriter
	warm    bool
	arrived time.Duration // on the service's clock
}

func (rp *reply) add(fs ...func(*counters) *atomic.Int64) {
	for _, f := range fs {
		f(&rp.s.all).Add(1)
		if !rp.warm {
			f(&rp.s.counted).Add(1)
		}
	}
}

// worked counts an attempt that did its work as succeeded or failed by
// its answer o, whether or not its caller still waits for it: the
// simulator's "ok" column (docs/concepts.md), which serve shares.
func (rp *reply) worked(o policies.Outcome) {
	if o == policies.OK {
		rp.add(cSucceeded)
		return
	}
	rp.add(cFailed)
}

// send writes the answer: its status, and for a failure its class and
// pushback headers.
func (rp *reply) send(status int, ans model.Answer) {
	if ans.Outcome != policies.OK {
		rp.w.Header().Set(transport.HeaderOutcome, ans.Outcome.String())
		transport.SetRetryAfter(rp.w.Header(), ans.RetryAfter, ans.DontRetry)
	}
	rp.w.WriteHeader(status)
	rp.record(ans.Outcome)
}

// record adds the attempt's latency so far, answered with o, to the
// service's histograms; an answer nobody hears is recorded too, as the
// simulator does, so the OK histogram holds every succeeded attempt.
func (rp *reply) record(o policies.Outcome) {
	if rp.warm {
		return
	}
	d := rp.s.now() - rp.arrived
	rp.s.mu.Lock()
	metrics.RecordLatency(rp.s.latency, d)
	rp.s.latSumUs += int64(d / time.Microsecond)
	rp.s.latMax = max(rp.s.latMax, d)
	rp.s.promLatency.Observe(d.Seconds())
	if o == policies.OK {
		metrics.RecordLatency(rp.s.okLatency, d)
	}
	rp.s.mu.Unlock()
}

func cAttempts(c *counters) *atomic.Int64  { return &c.attempts }
func cSucceeded(c *counters) *atomic.Int64 { return &c.succeeded }
func cFailed(c *counters) *atomic.Int64    { return &c.failed }
func cRejected(c *counters) *atomic.Int64  { return &c.rejected }
func cShed(c *counters) *atomic.Int64      { return &c.shed }
func cExpired(c *counters) *atomic.Int64   { return &c.expired }
func cTimedOut(c *counters) *atomic.Int64  { return &c.timedOut }
func cWasted(c *counters) *atomic.Int64    { return &c.wasted }
func cCancelled(c *counters) *atomic.Int64 { return &c.cancelled }
func cDropped(c *counters) *atomic.Int64   { return &c.dropped }

// work serves one attempt: arrival (start, queue or reject), the wait for
// a worker, then the work.
func (s *Service) work(w http.ResponseWriter, r *http.Request) {
	arrived := s.now()
	a := parseAttempt(r, arrived)
	s.checkQuery(&a)
	defer s.holdBody(&a)()
	rp := &reply{s: s, w: w, warm: a.warm, arrived: arrived}
	rp.add(cAttempts)
	if a.refused != 0 {
		// Sending the same request again cannot help: don't retry.
		rp.add(cRejected)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rp.send(a.refused, model.Answer{Outcome: policies.Error, DontRetry: true})
		io.WriteString(w, a.refusedMsg+"\n")
		return
	}
	wctx, done := s.workContext(r)
	defer done()
	wctx = edge.WithSpanOf(wctx, r.Context())
	wt, started := s.admit(rp, a)
	if wt == nil || !started && !s.await(wctx, rp, wt) {
		return
	}
	if a.query || a.fact {
		s.serveQuery(wctx, r, rp, wt, a)
		return
	}
	s.serveWork(wctx, r, rp, a, wt)
}

// workContext is the work's context: the caller's, if the service cancels
// on its caller's timeout; otherwise it keeps working for nobody until the
// service closes.
func (s *Service) workContext(r *http.Request) (context.Context, func()) {
	if !s.cfg.CancelOnTimeout || r.Header.Get(HeaderIrrevocable) != "" {
		return s.stop, func() {} // an irrevocable step's attempt is never cancelled
	}
	ctx, cancel := context.WithCancel(r.Context())
	stopMerge := context.AfterFunc(s.stop, cancel)
	return ctx, func() { stopMerge(); cancel() }
}

// admit runs the machine's arrival: the attempt starts on a worker, waits
// in the queue, or is answered at once (nil). started is read under the
// lock: once queued, another goroutine may grant the waiter at any time.
func (s *Service) admit(rp *reply, a attemptInfo) (_ *waiter, started bool) {
	s.mu.Lock()
	now := s.clock()
	wt := &waiter{ready: make(chan struct{}), arrived: now}
	if a.hasDeadline {
		wt.hasDeadline, wt.deadline = true, now+(a.deadline-rp.arrived)
	}
	adm, ans := s.cm.Arrive(now, wt, s.cm.Expired(now, wt.hasDeadline, wt.deadline))
	switch adm {
	case model.Started:
		s.grant(wt)
		s.mu.Unlock()
		return wt, true
	case model.Queued:
		// Another goroutine may grant it from here on: the caller must
		// not read its state without the lock, so it awaits it.
		s.cm.NoteQueue()
		s.mu.Unlock()
		return wt, false
	}
	s.cm.Finish(now, model.Ending{Outcome: ans.Outcome})
	s.mu.Unlock()
	s.reject(rp, ans)
	return nil, false
}

// reject answers an attempt refused before any work.
func (s *Service) reject(rp *reply, ans model.Answer) {
	rp.add(cRejected)
	if ans.Outcome == policies.Timeout {
		rp.add(cExpired)
		rp.send(transport.StatusExpired, ans)
		return
	}
	if ans.Limited {
		rp.send(http.StatusTooManyRequests, ans) // Envoy's local rate limit
		return
	}
	rp.send(statusOf(ans.Outcome), ans)
}

// await waits for a queued attempt's turn. It reports whether the attempt
// got a worker; otherwise it has been answered (shed, expired) or its
// caller went away.
func (s *Service) await(ctx context.Context, rp *reply, wt *waiter) bool {
	select {
	case <-wt.ready:
	case <-ctx.Done():
	}
	s.mu.Lock()
	now := s.clock()
	var ans model.Answer
	switch wt.state {
	case granted:
		s.mu.Unlock()
		return true
	case waiting:
		wt.state = cancelled
		s.cm.CancelQueued(now)
		s.mu.Unlock()
		rp.add(cCancelled, cTimedOut)
		return false
	case shed:
		ans = s.cm.Overloaded()
		rp.add(cShed)
	default: // expired
		ans = model.Answer{Outcome: policies.Timeout}
	}
	s.cm.Finish(now, model.Ending{Outcome: ans.Outcome})
	s.mu.Unlock()
	s.reject(rp, ans)
	return false
}

// serveWork does a started attempt's work: the idempotency decision or
// the service time, the injected error, the downstream steps, then the
// answer (or a dropped reply).
func (s *Service) serveWork(ctx context.Context, r *http.Request, rp *reply, a attemptInfo, wt *waiter) {
	key := ""
	dedupe := a.write && a.key != ""
	if dedupe {
		key = a.key
	}
	s.mu.Lock()
	now := s.clock()
	start := s.startAt(wt)
	service, fence, preset := s.cm.Begin(now, dedupe, key, digest(a.body))
	ans := s.cm.PresetAnswer()
	if !preset {
		s.readVersion(&a)
	}
	s.mu.Unlock()
	if preset {
		s.answerPreset(r, rp, wt, start, ans)
		return
	}
	end := start + service
	o, spent := policies.OK, time.Duration(0)
	if clock.Sleep(s.clk, ctx, end-s.now()) {
		o, spent = s.afterWork(ctx, &a)
	}
	if ctx.Err() != nil && !a.past {
		s.mu.Lock()
		now = s.clock()
		s.cm.CancelWorking(now, key, fence, true)
		s.freeSlot(wt, now)
		s.dispatchLocked(now)
		s.mu.Unlock()
		rp.add(cCancelled, cTimedOut)
		return
	}
	s.mu.Lock()
	now = s.clock()
	if o == policies.OK && s.ownerCrashed(now, a, key, fence) {
		s.freeSlot(wt, end+spent)
		s.cm.Release()
		s.dispatchLocked(now)
		s.mu.Unlock()
		s.executed(a.id) // its effect happened
		s.crashedReply(r, rp)
		return
	}
	// A timeout leaves the write's outcome unknown: with reconciliation
	// the owner holds its key (model.Ending.Unknown), which the job watches.
	unknown := o == policies.Timeout && fence > 0
	executed := s.cm.Finish(now, model.Ending{Outcome: o, Worked: true, Write: a.write, Key: key, Fence: fence, Unknown: unknown})
	if unknown {
		s.held(now, key, a.id)
	}
	s.freeSlot(wt, end+spent)
	s.cm.Release()
	s.dispatchLocked(now)
	fate := s.cm.Reply(true, r.Context().Err() != nil)
	s.mu.Unlock()
	if executed {
		s.executed(a.id)
	}
	if o == policies.OK && a.write {
		s.recordFact(a.id)
	}
	s.answerWorked(r, rp, fate, model.Answer{Outcome: o})
}

// answerWorked sends, or withholds, the answer ans to an attempt that did
// its work (or was answered by the idempotency store), by its fate
// (model.Callee.Reply): delivered, wasted on a caller gone, or lost.
func (s *Service) answerWorked(r *http.Request, rp *reply, fate model.Fate, ans model.Answer) {
	rp.worked(ans.Outcome)
	switch fate {
	case model.Wasted:
		rp.add(cTimedOut, cWasted)
		rp.record(ans.Outcome)
	case model.Lost:
		// The reply is lost: the caller hears nothing until it gives up.
		rp.add(cDropped, cTimedOut)
		rp.record(ans.Outcome)
		select {
		case <-r.Context().Done():
		case <-s.stop.Done():
		}
	case model.Delivered:
		if ans.Outcome == policies.OK {
			rp.send(http.StatusOK, ans)
			return
		}
		rp.send(statusOf(ans.Outcome), ans)
	}
}

// afterWork runs when the service time is over: the injected error, else
// the downstream steps in order. spent is the time the steps took.
func (s *Service) afterWork(ctx context.Context, a *attemptInfo) (o policies.Outcome, spent time.Duration) {
	s.mu.Lock()
	o, ok := s.cm.WorkDone()
	s.mu.Unlock()
	var redone time.Duration
	if ok && s.fx != nil {
		if o, ok, redone = s.effectsDone(ctx, a); !ok {
			return o, redone
		}
	}
	if !ok || len(s.calls) == 0 {
		return o, redone
	}
	from := s.now()
	for i, more := 0, true; more; {
		spec := &s.calls[i]
		succeeded, d := true, policies.OK
		if spec.pub != nil {
			s.publish(spec.pub)
		} else {
			if spec.irrevocable && !a.past {
				ctx = s.passIrrevocable(ctx, a)
			}
			succeeded, d = s.callDownstream(ctx, spec, *a, !a.warm)
		}
		// The machine's sequence rule (no state: no lock).
		i, more, o = s.cm.AfterStep(i, len(s.calls), succeeded, d)
	}
	return o, redone + s.now() - from
}

// answerPreset answers with the idempotency store's decision: a replay,
// in progress, a conflict, store full or key expired. The attempt held its
// worker for no time.
func (s *Service) answerPreset(r *http.Request, rp *reply, wt *waiter, start time.Duration, ans model.Answer) {
	s.mu.Lock()
	now := s.clock()
	s.cm.Finish(now, model.Ending{Outcome: ans.Outcome})
	s.freeSlot(wt, start)
	s.cm.Release()
	s.dispatchLocked(now)
	fate := s.cm.Reply(true, r.Context().Err() != nil)
	s.mu.Unlock()
	switch ans.Outcome {
	case policies.OK:
		s.replays.Add(1)
	case policies.InProgress:
		s.inProg.Add(1)
	case policies.Conflict, policies.Error:
		s.conflict.Add(1)
	}
	s.answerWorked(r, rp, fate, ans)
}

// statusOf is the HTTP status a service answers a failure class with.
func statusOf(o policies.Outcome) int {
	switch o {
	case policies.Unavailable, policies.BreakerOpen, policies.Throttled:
		return http.StatusServiceUnavailable
	case policies.Timeout:
		return http.StatusGatewayTimeout
	case policies.Conflict:
		return transport.StatusConflict
	case policies.InProgress:
		return transport.StatusInProgress
	}
	return http.StatusInternalServerError
}

// callDownstream makes one entry of the service's calls: its members at
// once, succeeding when waitFor of them succeed and failing as soon as
// that became impossible (the rest are abandoned), as the step's
// model.Quorum decides: the members start in order, each once the one
// before it has started or finished, and none once the verdict is in.
func (s *Service) callDownstream(ctx context.Context, spec *callSpec, a attemptInfo, counted bool) (succeeded bool, o policies.Outcome) {
	one := func(ctx context.Context, ref *edgeRef, started func(bool)) edge.CallResult {
		method := http.MethodGet
		if a.write {
			method = s.writeMethod
		}
		att := transport.Attempt{Method: method, URL: ref.url, Body: a.body, RequestID: a.id, Write: a.write, Warmup: !counted, IdempotencyKey: a.key}
		if spec.irrevocable {
			att.Header = irrevocableHeader
		}
		co := policies.CallOptions{Write: a.write, Counted: counted}
		if a.hasDeadline {
			co.Deadline, co.HasDeadline = a.deadline, true
			if ref.cfg.PropagateDeadline {
				att.Remaining = a.deadline - s.now()
			}
		}
		return ref.ec.DoStarted(ctx, co, &att, nil, started)
	}
	if len(spec.members) == 1 {
		r := one(ctx, spec.members[0], nil)
		return r.Result == policies.Succeeded, r.Outcome
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := model.NewQuorum(spec.waitFor, len(spec.members))
	type result struct {
		i int
		r edge.CallResult
	}
	results := make(chan result, len(spec.members))
	done := func(x result) int {
		q.Done(x.r.Result == policies.Succeeded, x.r.Outcome)
		return x.i
	}
	for i, ref := range spec.members {
		if !q.Start() {
			break // decided: the rest are not started
		}
		went := make(chan bool, 1)
		go func() { results <- result{i, one(gctx, ref, func(on bool) { went <- on })} }()
		if !<-went {
			// It finished as it started: it counts before the next
			// starts (answers of earlier members met on the way too).
			for done(<-results) != i {
			}
		}
	}
	for {
		if ok, o, decided := q.Verdict(); decided {
			return ok, o
		}
		done(<-results)
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
	s = s.ledger
	id = ledgerKey(id)
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if w := s.ledgerWindow; w > 0 {
		if now := s.now(); now-s.rotated >= w {
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
	s = s.ledger
	id = ledgerKey(id)
	s.lmu.Lock()
	defer s.lmu.Unlock()
	return s.execs[id] + s.oldExecs[id]
}

// Stats returns the service's counters now.
func (s *Service) Stats() Stats {
	st := Stats{Service: s.name, Replica: s.rep, UptimeS: s.now().Seconds(), All: s.all.snapshot(), Counted: s.counted.snapshot(), Workers: s.cfg.Workers}
	s.mu.Lock()
	now := s.clock()
	s.cm.Advance(now)
	busyA, queueA := s.cm.Measured()
	st.Busy, st.Queue, st.QueueMax = s.cm.Busy(), s.cm.QueueLen(), int64(s.cm.QueueMax())
	st.BusyS, st.QueueS, st.MeasuredS = busyA/1e9, queueA/1e9, max(now-s.warmup, 0).Seconds()
	if n := s.latency.TotalCount(); n > 0 {
		l := metrics.LatencyOf(s.latency).WithExact(s.latSumUs, n, s.latMax)
		st.LatencyMs = &l
	}
	s.effectStats(&st)
	s.mu.Unlock()
	if s.ledger == s {
		s.lmu.Lock()
		st.Executions, st.Duplicates = s.nExec, s.nDup
		s.lmu.Unlock()
	}
	st.Replays, st.InProgress, st.Conflicts = s.replays.Load(), s.inProg.Load(), s.conflict.Load()
	for _, e := range s.outEdges {
		st.Edges = append(st.Edges, e.ec.Summary(s.name, e.to))
	}
	st.Consumer = s.ConsumerSummary()
	return st
}

// LatencyHistogram returns a copy of the service's attempt latencies (µs).
func (s *Service) LatencyHistogram() *hdrhistogram.Histogram {
	return s.histogram(s.latency)
}

// OKLatencyHistogram returns a copy of the latencies of the attempts the
// service answered OK (µs): what tune reads, refusals left out.
func (s *Service) OKLatencyHistogram() *hdrhistogram.Histogram {
	return s.histogram(s.okLatency)
}

func (s *Service) histogram(h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	return hdrhistogram.Import(h.Export())
}
