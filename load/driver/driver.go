package driver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/shard"

	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/load/internal/network"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// Defaults of Options.
const (
	DefaultWorkers       = 512
	DefaultInterval      = time.Second
	DefaultLateThreshold = 10 * time.Millisecond
	DefaultMaxLateness   = 5 * time.Second
	DefaultGrace         = 5 * time.Second
)

// ErrRemote is returned for a target or listen address that is not on the
// loopback interface when remote use was not allowed.
var ErrRemote = errors.New("not a loopback address (pass --allow-remote to allow it)")

// Follower follows a run's writes after their calls, to certainty
// (serve's convergence after UNKNOWN: status queries by key on the plan's
// query edge). Start binds it to the run's clock before the first
// request; Begin is called before a write's call, so that a recovery
// settling the write during the call finds it, and returns what to call
// with the call's result; Wait returns once every write it follows is
// done.
type Follower interface {
	Start(clk clock.Clock, root context.Context) error
	Begin(id string, at time.Duration, counted bool) FollowDone
	Wait()
}

// FollowDone hands a followed write's call result to its Follower, with
// the attempt, call options and edge client that made it (a resubmission
// reuses them).
type FollowDone func(ctx context.Context, r policies.CallResult, a *transport.Attempt, co policies.CallOptions, ec *edge.EdgeClient)

// Options configures an open-loop run against one HTTP target (Run).
// Zero fields take the documented defaults.
type Options struct {
	// Target is the URL every logical request is sent to: http://, https://,
	// or grpc://HOST:PORT/pkg.Service/Method (a unary call with Body as the
	// encoded request; Method is then unused).
	Target string
	// Method defaults to GET; Header and Body are sent with every attempt.
	// WriteMethod, if set, is the method of writes (POST in scenario runs).
	Method      string
	WriteMethod string
	Header      http.Header
	Body        []byte
	// Arrivals gives each logical request's intended send time and
	// whether it is a write: the simulator's arrival process (TargetArrivals
	// for a target, the scenario's for RunScenario). Requests are scheduled
	// while their time is before Duration (and n < MaxRequests, if set). A
	// run draws from it: give each run its own.
	Arrivals    *model.Arrivals
	Duration    time.Duration
	MaxRequests uint64
	// Warmup: requests due before it are sent but not counted.
	Warmup time.Duration
	// Interval is the time-series bucket (default 1s).
	Interval time.Duration
	// Deadline is each logical request's end-to-end deadline from its
	// intended send time (0: none). PropagateDeadline sends the remaining
	// budget in X-Stormsim-Deadline-Ms.
	Deadline time.Duration
	// Policy is the client's call policy toward the target (timeout,
	// retry, budget, breaker, hedge, throttle, pushback).
	Policy topology.Call
	// IdempotencyKeys: each write (Arrivals says which) carries an
	// Idempotency-Key.
	IdempotencyKeys bool
	// Request, if set, makes Body a template expanded per logical request
	// and gives every logical request its own idempotency key, reused by
	// all its attempts, and a tenant (see RequestTemplate); it overrides
	// IdempotencyKeys.
	Request *RequestTemplate
	// Workers is the number of sender goroutines (default 512), hence the
	// bound on logical requests in flight; Connections bounds the TCP
	// connections to the target (default Workers; for a grpc:// target, the
	// HTTP/2 connections its calls are spread over, default 1).
	Workers     int
	Connections int
	// LateThreshold: a request dispatched later than this after its
	// intended time counts as late (default 10ms). MaxLateness: a request
	// not dispatched within this of its intended time is not sent and
	// counts as unsent (default the Deadline, else 5s).
	LateThreshold time.Duration
	MaxLateness   time.Duration
	// Grace is how long an interrupted run waits for requests in flight
	// before abandoning them as unknown (default 5s). At the end of the
	// schedule, calls whose policy bounds them (a deadline, or a timeout)
	// get that bound plus Grace; unbounded ones (no deadline, no timeout)
	// get Grace alone.
	Grace time.Duration
	// Seed drives the policies' jitter (Arrivals have their own stream).
	Seed uint64
	// Rand, if set, is the client policy's random stream instead of one
	// derived from Seed: RunScenario passes the simulator's stream of the
	// client edge (model.EdgeStreams), so both modes draw the same jitter.
	Rand *rand.Rand
	// Replicas, when it lists more than one URL, are the target's replicas
	// (Target is ignored but for its checks): each attempt goes to the one
	// Policy's balancer picks, drawing from BalanceRand.
	Replicas    []string
	BalanceRand *rand.Rand
	// Instances is the number of client instances (a fleet, default 1),
	// each with its own policy state, the requests dealt to them in turn;
	// Instance gives instance k ≥ 1 its policy and balancer streams.
	Instances int
	Instance  func(k int) (policy, balance *rand.Rand)
	// Local, if set, marks the replicas in instance k's zone, which its
	// balancer prefers (zone_aware); nil for none.
	Local func(k int) []bool
	// Scenario and Version label the result.
	Scenario string
	Version  string
	// ServiceName names the target in the summary (default: its host:port).
	ServiceName string
	// AllowRemote permits a target off the loopback interface.
	AllowRemote bool
	// Progress, if set, is called about every ProgressEvery (default 250ms).
	Progress      func(Progress)
	ProgressEvery time.Duration
	// Tracing, if set, opens a root span per logical request and a client
	// span per attempt (nil: no tracing).
	Tracing *edge.Tracing
	// OnRow, if set, is called at the end of every interval, from one
	// goroutine, with that interval's row of the time series as known
	// then (offered: the requests scheduled in it; outcomes: those that
	// ended in it), and when the run ends once for each row still unsent:
	// the live view's feed, as many rows as the result's series. columns
	// and row are the callee's.
	OnRow func(start time.Duration, columns []string, row []float64)
	// Services adds a scenario run's sampled service columns to OnRow's
	// rows (RunScenario sets it).
	Services RowSource
	// OnDone, if set, is called when a logical request ends; counted says
	// it arrived after the warm-up.
	OnDone func(id uint64, write, counted bool, r policies.CallResult)
	// OnAttempt, if set, is called when each attempt ends (retries and
	// hedges included), from the goroutine that sent it: a results file's
	// feed (VegetaWriter).
	OnAttempt func(AttemptResult)
	// Epoch is the instant time 0 of the schedule (default: when Run
	// starts); a scenario run shares it with its services' fault windows.
	Epoch time.Time
	// Client overrides the HTTP client (its Transport should bound
	// connections); nil builds one from Connections.
	Client *http.Client
	// NetHTTP makes the driver's own client net/http's even for a plain
	// http:// target, which it otherwise drives with a lean HTTP/1.1
	// client of its own (fewer allocations per request; same answers),
	// unless Tracing is set (the lean client opens no spans).
	NetHTTP bool
	// GRPCServiceConfig, for a grpc:// target, is a gRPC service config
	// (JSON) given to grpc-go: its own retry, hedging and retry throttling
	// then run beneath Policy (which should then not retry). Empty: grpc-go's
	// retry is disabled and Policy alone decides.
	GRPCServiceConfig string
	// Clock, if set, is the run's clock in place of the wall clock from
	// Epoch: tests script it.
	Clock clock.Clock
	// Network, if set, is the in-memory network the driver dials on
	// (tests; load/internal/network).
	Network *memnet.Network
	// Follow, if set, follows the writes to certainty: status queries
	// after an unknown outcome (serve.RunScenario sets it; serve's
	// driveconverge.go).
	Follow Follower
	// Shard, when set, makes this driver send only the logical requests of
	// the whole schedule whose index n is ≡ Index (mod Count): 1/Count of the
	// rate, at the whole schedule's intended times, with the whole
	// schedule's request ids (n+1) and write draws, so shards started at one
	// Epoch together send exactly the unsharded schedule.
	Shard shard.Spec
}

// Progress is a live snapshot of a run.
type Progress struct {
	Elapsed, Duration time.Duration
	// Scheduled, Succeeded, Failed and Unknown count logical requests (all,
	// warm-up included); Attempts counts attempts sent.
	Scheduled, Succeeded, Failed, Unknown, Attempts int64
	// Rate is logical requests dispatched per second so far.
	Rate float64
	// P99 is the p99 latency of succeeded requests so far.
	P99 time.Duration
}

// CheckLoopback returns ErrRemote unless host (a host or host:port) names
// the loopback interface: localhost or an address in 127.0.0.0/8 or ::1.
func CheckLoopback(host string) error {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q: %w", host, ErrRemote)
}

type job struct {
	n     uint64
	at    time.Duration
	write bool
}

// Run drives opt.Target open-loop and returns the run's result. Cancelling
// ctx stops the schedule; requests in flight get opt.Grace to finish, and
// the result is marked interrupted. Run returns an error only for bad
// options; failures of the target are results.
func Run(ctx context.Context, opt Options) (*metrics.Result, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	client := opt.Client
	var rt http.RoundTripper
	if client == nil {
		tr := network.DialOn(opt.Network, transport.NewHTTPTransport(opt.Connections))
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		// The client follows no redirect and keeps no cookie: attempts
		// go to its transport directly.
		rt = tr
	}
	if opt.Tracing != nil {
		c := *client
		c.Transport = opt.Tracing.Transport(edge.ClientService, opt.ServiceName, cmp.Or[http.RoundTripper](c.Transport, http.DefaultTransport))
		client = &c
		if rt != nil {
			rt = c.Transport // the traced transport: spans for every attempt
		}
	}
	r := opt.Rand
	if r == nil {
		r = rand.New(rand.NewPCG(opt.Seed, 0x6c6f6164))
	}
	pe, err := policies.NewEdge(opt.Policy.EdgeConfig(), r)
	if err != nil {
		return nil, fmt.Errorf("load: client policy: %w", err)
	}
	epoch := opt.Epoch
	if epoch.IsZero() {
		epoch = time.Now()
	}
	root, stopAttempts := context.WithCancel(context.Background())
	defer stopAttempts()
	clk := clock.Or(opt.Clock, epoch)
	// hard is cancelled Grace after ctx ends, or the drain limit after the
	// schedule ends: calls still running then are aborted (unknown).
	hard, hardCancel := context.WithCancel(context.Background())
	defer hardCancel()
	target, _ := url.Parse(opt.Target) // defaults checked it

	// The transport, chosen once: gRPC for a grpc:// target; else the
	// lean client where it can stand in for net/http, which stays the
	// fallback for attempts to other URLs (a request template's). The lean
	// client opens no spans: a traced run keeps net/http's, wrapped by the
	// tracing transport. It drives one target, so not a target's replicas.
	// Nor does it trace phases: an edge with phase timeouts or a
	// transparent retry keeps net/http's, which enforces them.
	var tr transport.Transport = transport.NewHTTP(client, rt != nil)
	switch {
	case target.Scheme == "grpc":
		gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{ServiceConfig: opt.GRPCServiceConfig, Connections: opt.Connections,
			StatsHandler: opt.Tracing.GRPCClientHandler(edge.ClientService, opt.ServiceName), Dial: network.DialerOf(opt.Network)})
		if err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		defer gc.Close()
		tr = gc
		if lean, err := transport.NewGRPCLean(transport.GRPCLeanConfig{Target: opt.Target, Connections: opt.Connections, Dial: network.DialerOf(opt.Network), Fallback: gc}); err == nil && !opt.NetHTTP && opt.GRPCServiceConfig == "" && opt.Tracing == nil && !edge.PhaseAware(pe) {
			defer lean.Close()
			tr = lean // grpc-go's client stays for what the lean one does not do (GRPCLean)
		}
	case rt != nil && !opt.NetHTTP && opt.Tracing == nil && transport.LeanUsable(target) && len(opt.Replicas) < 2 && !edge.PhaseAware(pe):
		lean := transport.NewLean(transport.LeanConfig{Target: target, Connections: opt.Connections, Abort: hard,
			Dial: network.DialerOf(opt.Network), Fallback: tr})
		defer lean.CloseIdle()
		tr = lean
	}
	var onAttempt func(a *transport.Attempt, start time.Time, took time.Duration, ans transport.Answer)
	if opt.OnAttempt != nil {
		onAttempt = func(a *transport.Attempt, start time.Time, took time.Duration, ans transport.Answer) {
			opt.OnAttempt(attemptResult(a, start, took, ans))
		}
	}
	reps, err := replicas(opt, 0, opt.BalanceRand)
	if err != nil {
		return nil, err
	}
	lat := edge.NewAttemptLatency()
	ec := edge.NewEdgeClient(edge.EdgeConfig{Edge: pe, Transport: tr, Root: root, OnAttempt: onAttempt, Clock: clk, Latency: lat,
		Replicas: reps})

	d := &driver{opt: opt, ec: ec, lat: lat, clk: clk, url: target, rec: newRecorder(opt.Warmup, opt.Interval, opt.Duration)}
	if opt.Request != nil {
		if d.tmpl, err = opt.Request.compile(opt.Body); err != nil {
			return nil, err
		}
		if opt.Request.Tenant != "" {
			d.opt.Header = opt.Header.Clone()
			if d.opt.Header == nil {
				d.opt.Header = http.Header{}
			}
			d.opt.Header[opt.Request.tenantHeader()] = []string{opt.Request.Tenant}
		}
	}
	if err := d.fleet(root); err != nil {
		return nil, err
	}
	if opt.Follow != nil {
		if err := opt.Follow.Start(clk, root); err != nil {
			return nil, err
		}
	}
	return d.run(ctx, root, stopAttempts, hard, hardCancel)
}

func (opt *Options) defaults() error {
	u, err := url.Parse(opt.Target)
	if err == nil && u.Scheme == "grpc" {
		_, _, err = transport.ParseGRPCTarget(opt.Target)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("load: target %q: want an http://, https:// or grpc:// URL", opt.Target)
	}
	if !opt.AllowRemote {
		if err := CheckLoopback(u.Host); err != nil {
			return fmt.Errorf("load: target %w", err)
		}
	}
	if opt.Arrivals == nil {
		return errors.New("load: no arrivals (rate)")
	}
	if opt.Duration <= 0 {
		return fmt.Errorf("load: duration must be > 0, got %v", opt.Duration)
	}
	if opt.Method == "" {
		opt.Method = http.MethodGet
	}
	if opt.Workers <= 0 {
		opt.Workers = DefaultWorkers
	}
	if opt.Connections <= 0 {
		opt.Connections = opt.Workers
		if u.Scheme == "grpc" {
			opt.Connections = 1 // HTTP/2 multiplexes the calls
		}
	}
	if opt.Interval <= 0 {
		opt.Interval = DefaultInterval
	}
	if opt.LateThreshold <= 0 {
		opt.LateThreshold = DefaultLateThreshold
	}
	if opt.MaxLateness <= 0 {
		opt.MaxLateness = DefaultMaxLateness
		if opt.Deadline > 0 {
			opt.MaxLateness = opt.Deadline
		}
	}
	if opt.Grace <= 0 {
		opt.Grace = DefaultGrace
	}
	if opt.ProgressEvery <= 0 {
		opt.ProgressEvery = 250 * time.Millisecond
	}
	if opt.ServiceName == "" {
		opt.ServiceName = u.Host
	}
	if opt.Seed == 0 {
		opt.Seed = 1
	}
	return nil
}

type driver struct {
	opt Options
	ec  *edge.EdgeClient
	// ecs are the client instances' edges when there are more than one
	// (ec is ecs[0]).
	ecs []*edge.EdgeClient
	// lat times the attempts of every instance, as the driver sees them.
	lat *edge.AttemptLatency
	// clk is the run's clock: the schedule, latencies and every wait of
	// the driver are read on it.
	clk clock.Clock
	rec *recorder
	url *url.URL // opt.Target, parsed once for every attempt

	// tmpl is opt.Request compiled; nil without one.
	tmpl *template

	// lastDispatch is when the scheduler handed off its last request
	// (written by the scheduler, read after it returned).
	lastDispatch time.Duration

	scheduled, sent, late, unsent atomic.Int64
	inflight, maxInflight         atomic.Int64
}

// run drives the schedule. hard (cancelled by hardCancel) bounds every
// call: it ends Grace after ctx ends, or the drain limit after the
// schedule ends.
func (d *driver) run(ctx, root context.Context, stopAttempts context.CancelFunc, hard context.Context, hardCancel context.CancelFunc) (*metrics.Result, error) {
	opt := d.opt
	finished, scheduled := make(chan struct{}), make(chan struct{})
	go func() {
		limit := opt.Grace
		select {
		case <-ctx.Done():
		case <-scheduled:
			limit = opt.drainLimit()
		case <-finished:
			return
		}
		t, tc := d.clk.NewTimer(limit)
		defer t.Stop()
		select {
		case <-tc:
			hardCancel()
		case <-ctx.Done():
			// Interrupted while draining: the grace period, from now.
			t.Reset(opt.Grace)
			select {
			case <-tc:
				hardCancel()
			case <-finished:
			}
		case <-finished:
		}
	}()
	defer close(finished)

	jobs := make(chan job, opt.Workers)
	var workers, attempts sync.WaitGroup
	for range opt.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			// One template per sender, reused by its requests: Do copies
			// what its attempts need and keeps no reference after it returns.
			tmpl := new(transport.Attempt)
			for j := range jobs {
				d.serve(ctx, hard, j, tmpl, &attempts)
			}
		}()
	}
	stopProgress := d.startProgress()
	stopRows := d.startRows()
	d.schedule(ctx, jobs)
	close(scheduled)
	close(jobs)
	workers.Wait()
	if d.opt.Follow != nil {
		d.opt.Follow.Wait() // every intent's status queries
	}

	// Abandoned (not cancelled) attempts run until they answer or time
	// out; give them the grace period, then cancel what is left.
	if !waitTimeout(d.clk, &attempts, opt.Grace) {
		stopAttempts()
		attempts.Wait()
	}
	stopProgress()
	stopRows()
	elapsed := d.clk.Now()
	return d.result(ctx.Err() != nil, elapsed), nil
}

// drainLimit is how long calls in flight at the end of the schedule may
// take before they are aborted: long enough for a call the policy bounds
// (its deadline; or every attempt's timeout plus the longest wait between
// attempts) to end on its own, plus Grace; just Grace when nothing bounds
// a call (no deadline, no timeout), so a target that never answers cannot
// hold the run forever.
func (opt *Options) drainLimit() time.Duration {
	if opt.Deadline > 0 {
		return opt.Deadline + opt.Grace
	}
	if opt.Policy.Timeout <= 0 {
		return opt.Grace
	}
	attempts := max(opt.Policy.Retry.MaxAttempts, 1)
	if h := opt.Policy.Hedge; h != nil {
		attempts = max(attempts, h.MaxAttempts)
	}
	wait := max(opt.Policy.Retry.Backoff.Max, opt.Policy.Retry.Backoff.Initial)
	if opt.Policy.HonorPushback {
		wait = max(wait, opt.Policy.MaxPushback, policies.DefaultMaxPushback)
	}
	return time.Duration(attempts)*(opt.Policy.Timeout+wait) + opt.Grace
}

// schedule dispatches every due request at its intended time; it never
// waits for a sender longer than the allowed lateness, so the schedule
// holds when the target (or the sender pool) cannot keep up.
func (d *driver) schedule(ctx context.Context, jobs chan<- job) {
	opt := d.opt
	// Its waits for the next request end within tens of microseconds of
	// the request's time even when the process is idle (pacerTimer), so a
	// request is not charged up to 1 ms of the runtime's sleep granularity.
	timer, timerC := d.scheduleTimer()
	defer timer.close()
	for n := uint64(0); opt.MaxRequests == 0 || n < opt.MaxRequests; n++ {
		at, ok := opt.Arrivals.At(n)
		if !ok || at >= opt.Duration {
			return
		}
		// Which requests are writes is drawn as the simulator draws it.
		j := job{n: n, at: at, write: opt.Arrivals.Write(n)}
		if !opt.Shard.Owns(int(n)) {
			continue
		}
		if wait := at - d.clk.Now(); wait > 0 {
			timer.Wait(wait)
			select {
			case <-timerC:
				timer.Woke(d.clk.Now() - at)
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		d.scheduled.Add(1)
		if opt.OnRow != nil && at >= opt.Warmup {
			d.rec.due(at)
		}
		select {
		case jobs <- j:
			d.lastDispatch = d.clk.Now()
			continue
		default:
		}
		// Every sender is busy: wait at most until the request is too late.
		wait := at + opt.MaxLateness - d.clk.Now()
		if wait <= 0 {
			d.drop(j)
			continue
		}
		timer.Reset(wait)
		select {
		case jobs <- j:
			d.lastDispatch = d.clk.Now()
			timer.Stop()
		case <-timerC:
			d.drop(j)
		case <-ctx.Done():
			d.drop(j)
			return
		}
	}
}

// scheduleTimer is the timer the schedule waits on: on the wall clock
// the pacer timer (precise when the process is idle), else the clock's.
func (d *driver) scheduleTimer() (schedTimer, <-chan time.Time) {
	if _, ok := d.clk.(clock.Real); ok {
		t := newPacerTimer()
		return t, t.C
	}
	t, c := d.clk.NewTimer(time.Hour)
	t.Stop()
	return clockTimer{t}, c
}

// schedTimer is what the schedule needs of its timer: Wait for the next
// request's time, told how late it woke (Woke); Reset and Stop for the
// waits for a free sender.
type schedTimer interface {
	Wait(d time.Duration)
	Woke(late time.Duration)
	Reset(d time.Duration) bool
	Stop() bool
	close()
}

// clockTimer is a clock's timer as a schedTimer.
type clockTimer struct{ clock.Timer }

func (t clockTimer) Wait(d time.Duration) { t.Reset(d) }
func (clockTimer) Woke(time.Duration)     {}
func (t clockTimer) close()               { t.Stop() }

// drop counts a request that was due but not sent: a failure the target
// never saw.
func (d *driver) drop(j job) {
	d.unsent.Add(1)
	d.rec.record(j.at, d.clk.Now(), policies.Failed, j.at >= d.opt.Warmup)
	if d.opt.OnDone != nil {
		d.opt.OnDone(j.n, j.write, j.at >= d.opt.Warmup, policies.Failed)
	}
}

// serve runs one logical request through the client call policy, with a
// (overwritten) as its attempts' template.
func (d *driver) serve(ctx, hard context.Context, j job, a *transport.Attempt, attempts *sync.WaitGroup) {
	opt := d.opt
	if ctx.Err() != nil {
		d.drop(j)
		return
	}
	d.sent.Add(1)
	if d.clk.Now()-j.at > opt.LateThreshold {
		d.late.Add(1)
	}
	if n := d.inflight.Add(1); n > d.maxInflight.Load() {
		d.maxInflight.Store(n) // approximate under races; a statistic only
	}
	defer d.inflight.Add(-1)
	counted := j.at >= opt.Warmup
	id := strconv.FormatUint(j.n+1, 10)
	*a = transport.Attempt{
		Method: opt.Method, URL: opt.Target, Header: opt.Header, Body: opt.Body,
		RequestID: id, Write: j.write, Warmup: !counted, Parsed: d.url,
	}
	if j.write && opt.WriteMethod != "" {
		a.Method = opt.WriteMethod
	}
	if j.write && opt.IdempotencyKeys {
		a.IdempotencyKey = "req-" + id
	}
	if d.tmpl != nil {
		d.tmpl.apply(a, id)
	}
	co := policies.CallOptions{Write: j.write, Counted: counted}
	if opt.Deadline > 0 {
		co.Deadline, co.HasDeadline = j.at+opt.Deadline, true
		if opt.Policy.PropagateDeadline {
			a.Remaining = opt.Deadline // marks "propagate"; Do fills the real value
		}
	}
	hard, sp := opt.Tracing.StartRequest(hard, id)
	ec := d.ec
	if d.ecs != nil {
		ec = d.ecs[model.InstanceOf(j.n, len(d.ecs))]
	}
	var done FollowDone
	if opt.Follow != nil && j.write {
		done = opt.Follow.Begin(id, j.at, counted)
	}
	res := ec.Do(hard, co, a, attempts)
	if done != nil {
		done(ctx, res.Result, a, co, ec)
	}
	edge.EndRequest(sp, res.Result)
	d.rec.record(j.at, d.clk.Now(), res.Result, counted)
	if opt.OnDone != nil {
		opt.OnDone(j.n, j.write, counted, res.Result)
	}
}

func (d *driver) startProgress() (stop func()) {
	if d.opt.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t, tc := d.clk.NewTimer(d.opt.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-tc:
				t.Reset(d.opt.ProgressEvery)
				d.opt.Progress(d.progress())
			case <-done:
				d.opt.Progress(d.progress())
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (d *driver) progress() Progress {
	el := d.clk.Now()
	p := d.rec.progress()
	p.Elapsed, p.Duration = el, d.opt.Duration
	p.Scheduled = d.scheduled.Load()
	p.Attempts = sumKinds(d.kinds())
	if s := el.Seconds(); s > 0 {
		p.Rate = float64(d.sent.Load()) / min(s, d.opt.Duration.Seconds())
	}
	return p
}

func sumKinds(k [transport.NumKinds]int64) int64 {
	var n int64
	for i := range k {
		n += k[i]
	}
	return n
}

// waitTimeout waits for wg at most d on clk and reports whether it
// finished.
func waitTimeout(clk clock.Clock, wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t, tc := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-tc:
		return false
	}
}
