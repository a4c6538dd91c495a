package serve

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormsim/stormsim/idempotency"
	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/shard"
	"github.com/stormsim/stormsim/topology"
)

// ScenarioOptions configures RunScenario.
type ScenarioOptions struct {
	// Workers and Connections size the driver's pools (see Options).
	Workers     int
	Connections int
	// Listen is the first service's listen address (default 127.0.0.1:0).
	Listen      string
	AllowRemote bool
	Version     string
	Progress    func(driver.Progress)
	// Grace is as in Options (default 5s).
	Grace time.Duration
	// MaxRequests, when set, stops the schedule after that many logical
	// requests, as in target mode.
	MaxRequests uint64
	// Shard selects this process's share of the schedule; shards started
	// with one Epoch together send exactly the unsharded schedule, as in
	// target mode.
	Shard shard.Spec
	// Epoch is the instant time 0 of the schedule (default: just after the
	// services listen). It must leave them time to start.
	Epoch time.Time
	// OnRow is as in Options; its rows carry the services' sampled
	// columns too.
	OnRow func(start time.Duration, columns []string, row []float64)
	// Ready, if set, is called with the cluster once its services listen.
	Ready func(*Cluster)
	// Tracing, if set, traces the driver and every service (nil: none).
	// The caller closes it after RunScenario returns.
	Tracing *edge.Tracing
	// NetHTTP drives the entry with net/http's client, as in Options.
	NetHTTP bool
	// Protocol is what the services speak and the driver sends:
	// ProtocolHTTP (default) or ProtocolGRPC.
	Protocol string
	// GRPCServiceConfig, with ProtocolGRPC, lets grpc-go's own retry,
	// hedging and retry throttling run on the client edge from this
	// service config (JSON) instead of stormsim's policy (NativeGRPCPolicy).
	GRPCServiceConfig string
	// TLS serves every service over TLS (ClusterOptions.TLS); the driver
	// trusts the cluster's certificate.
	TLS bool
	// NATS is the URL of the NATS server (JetStream) for the scenario's
	// topics; empty embeds one (ClusterOptions.NATS).
	NATS string
	// Network, if set, is an in-memory network the services and the
	// driver listen and dial on instead of the host's: tests run a whole
	// scenario on it inside a testing/synctest bubble, on the bubble's
	// clock (docs/architecture.md, one clock). Nil: loopback sockets.
	Network *memnet.Network
}

// RunScenario starts sc's services on loopback and drives the entry with
// the scenario's workload and client policy for its duration: the real
// counterpart of simulating it. Cancelling ctx stops the run early; the
// result is then marked interrupted.
func RunScenario(ctx context.Context, sc *topology.Scenario, opt ScenarioOptions) (*metrics.Result, error) {
	w := sc.Workload
	if w.Arrival == "closed" {
		return nil, fmt.Errorf("load: %s: workload.arrival closed is not supported in load mode (use poisson or constant)", scenarioName(sc))
	}
	epoch := time.Now().Add(50 * time.Millisecond) // time 0, once every service listens
	if !opt.Epoch.IsZero() {
		epoch = opt.Epoch
	}
	policy, err := scenarioClientPolicy(sc, opt)
	if err != nil {
		return nil, err
	}
	cl, err := StartCluster(sc, ClusterOptions{Listen: opt.Listen, AllowRemote: opt.AllowRemote, Epoch: epoch, Connections: opt.Connections, Tracing: opt.Tracing, Protocol: opt.Protocol, TLS: opt.TLS, NATS: opt.NATS, network: opt.Network})
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = cl.Close(cctx)
	}()
	if opt.Ready != nil {
		opt.Ready(cl)
	}
	seed := sc.Seed
	if seed == 0 {
		seed = 1
	}
	arrivals := scenarioArrivals(sc)
	entry := cl.URLs[w.Entry]
	if entry == "" {
		return nil, fmt.Errorf("load: %s: workload.entry: no service %q", scenarioName(sc), w.Entry)
	}
	// The caller's view of each counted write, joined with the committing
	// service's executions once all work drained, as the simulator folds
	// them: the same ledger, the same requests (after the warm-up).
	var vmu sync.Mutex
	views := map[uint64]policies.CallResult{}
	cv, err := newConverger(sc, cl, opt.Protocol == ProtocolGRPC)
	if err != nil {
		return nil, err
	}
	samples := sampler{cv: cv}
	samples.start(cl, sc.Interval)
	want := cmp.Or(opt.Connections, opt.Workers)
	if opt.Protocol == ProtocolGRPC && opt.Connections == 0 {
		// HTTP/2 multiplexes the calls, as for a grpc:// target: one
		// channel per worker would open a connection for each of the
		// first Workers attempts, all cold (their phases show it).
		want = 1
	}
	client, conns := clientFor(cl, w.Client.Pool, want)
	// The client fleet's edges are the plan's, as the simulator binds them.
	fleet := cl.Plan().Client
	clientStream := func(k int) string { return fleet[k].Stream }
	var follow driver.Follower
	if cv != nil { // a nil *converger in the interface would not be nil
		follow = cv
	}
	res, err := driver.Run(ctx, driver.Options{Client: client, Follow: follow,
		Replicas: cl.ReplicaURLs[w.Entry], BalanceRand: model.Stream(sc.Seed, model.BalanceStream(clientStream(0))),
		Instances: w.Instances, Instance: func(k int) (policy, balance *rand.Rand) {
			return model.Stream(sc.Seed, clientStream(k)), model.Stream(sc.Seed, model.BalanceStream(clientStream(k)))
		},
		Local:  func(k int) []bool { return fleet[k].Local },
		Target: entry, Method: http.MethodGet, WriteMethod: cmp.Or(w.WriteMethod, http.MethodPost), Arrivals: arrivals, Duration: sc.Duration, Warmup: sc.Warmup, Interval: sc.Interval,
		Deadline: w.Deadline, Policy: policy, GRPCServiceConfig: opt.GRPCServiceConfig, IdempotencyKeys: w.IdempotencyKeys,
		Workers: opt.Workers, Connections: conns, Seed: seed, Rand: model.Stream(sc.Seed, clientStream(0)), Scenario: sc.Name, Version: opt.Version,
		ServiceName: w.Entry, Progress: opt.Progress, Epoch: epoch, Network: opt.Network, AllowRemote: opt.AllowRemote, Grace: opt.Grace,
		MaxRequests: opt.MaxRequests, Shard: opt.Shard, Tracing: opt.Tracing, NetHTTP: opt.NetHTTP, OnRow: opt.OnRow, Services: liveServices(&samples, opt.OnRow),
		OnDone: func(id uint64, write, counted bool, r policies.CallResult) {
			if counted && cl.passed != nil { // formatID allocates: only with irrevocable steps
				cl.passed.view(formatID(id), r)
			}
			if write && counted {
				vmu.Lock()
				views[id] = r
				vmu.Unlock()
			}
		},
	})
	samples.stop()
	if err != nil {
		return nil, err
	}
	// Let work held for nobody drain before reading the servers' truth;
	// then let the topics settle, as the simulator follows every intent
	// to its end (unless stopped: what is left is reported in flight).
	drain(cl, 2*time.Second)
	if committer := cl.Service(CommittingService(sc)); committer != nil && ctx.Err() == nil {
		committer.waitRecoveries(ctx) // every lease ended by then is recovered
		committer.waitReconciled(ctx)
	}
	if ctx.Err() == nil {
		cl.async.wait(ctx, drainBound(sc))
		if ctx.Err() != nil {
			res.Summary.Status = metrics.StatusInterrupted // while the topics settled
		}
	}
	fillServices(res, sc, cl, &samples)
	res.Summary.Irrevocable = cl.passed.summary()
	if cv != nil {
		cv.fill(res, cl)
	}
	committer := cl.Service(CommittingService(sc)) // it keeps its replicas' ledger
	if committer != nil && len(views) > 0 {
		var l idempotency.Ledger
		for id, v := range views {
			l.Fold(int64(committer.Executions(formatID(id))), model.View(v))
		}
		t := l.Totals()
		res.Summary.Duplicates = t.Duplicates
		res.Summary.Writes = sc.Workload.WriteFraction > 0
		res.Summary.UnknownCommitted, res.Summary.UnknownNotCommitted = t.UnknownCommitted, t.UnknownNotCommitted
	}
	return res, nil
}

// scenarioArrivals is the simulator's arrival process of sc: the same
// requests at the same intended times, the same ones writes.
func scenarioArrivals(sc *topology.Scenario) *model.Arrivals {
	return model.ArrivalsFor(&sc.Workload, sc.Duration, sc.Seed)
}

func scenarioName(sc *topology.Scenario) string {
	if sc.File != "" {
		return sc.File
	}
	return "scenario " + sc.Name
}

// drain waits until no service has work busy or queued, at most d.
func drain(cl *Cluster, d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		idle := true
		for _, s := range cl.Services {
			s.mu.Lock()
			if s.cm.Busy() > 0 || s.cm.QueueLen() > 0 {
				idle = false
			}
			s.mu.Unlock()
		}
		if idle {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fillServices replaces the driver's one-target view with every service's
// own counters, and adds the services' edges and series.
func fillServices(res *metrics.Result, sc *topology.Scenario, cl *Cluster, smp *sampler) {
	s := &res.Summary
	clientEdge := s.Edges[0]
	s.Services = s.Services[:0]
	s.Load.Unmeasured = nil // every service below is measured
	s.Edges = []metrics.EdgeSummary{clientEdge}
	s.Amplification = 0
	for i := range sc.Services {
		reps := cl.Replicas(sc.Services[i].Name)
		if len(reps) == 0 {
			continue
		}
		ss, edges := serviceSummary(reps, s.Requests.Offered)
		s.Amplification = max(s.Amplification, ss.Amplification)
		s.Services = append(s.Services, ss)
		s.Edges = append(s.Edges, edges...)
		res.ServiceLatency[ss.Name] = mergedHistogram(reps, (*Service).LatencyHistogram)
		if res.ServiceOKLatency == nil {
			res.ServiceOKLatency = map[string]*hdrhistogram.Histogram{}
		}
		res.ServiceOKLatency[ss.Name] = mergedHistogram(reps, (*Service).OKLatencyHistogram)
	}
	s.Edges[0].To = sc.Workload.Entry
	res.Faults = faultWindows(sc)
	// Re-build the series with the per-service columns sampled each interval.
	res.Series = smp.series(res.Series)
}

// faultWindows are the result's fault windows of sc, labelled as the
// simulator labels them.
func faultWindows(sc *topology.Scenario) []metrics.FaultWindow {
	var fw []metrics.FaultWindow
	for _, f := range sc.Faults {
		fw = append(fw, metrics.FaultWindow{Service: f.Service, At: f.At, For: f.For, Label: model.FaultLabel(&f)})
	}
	return fw
}

func formatID(n uint64) string { return strconv.FormatUint(n+1, 10) }

// add appends v to the column of metric for entity.
func (sm *sampler) add(metric, entity string, v float64) {
	c := metrics.Column(metric, entity)
	sm.cols[c] = append(sm.cols[c], v)
}

// sampler reads every service's stats once per interval, for the
// per-service columns of the time series.
type sampler struct {
	mu   sync.Mutex
	cols map[string][]float64
	prev map[string]Counters
	// prevTopic holds each consuming service's topic counts as of the
	// last sample.
	prevTopic map[string]topicCounts
	done      chan struct{}
	wg        sync.WaitGroup
	// n counts the samples taken; tick is closed (and replaced) at each
	// one, for the live rows (live.go).
	n        int
	tick     chan struct{}
	stopOnce sync.Once
	// cv, if set, adds the run-wide convergence columns (driveconverge.go).
	cv *converger
}

func (sm *sampler) start(cl *Cluster, interval time.Duration) {
	if interval <= 0 {
		interval = driver.DefaultInterval
	}
	sm.cols, sm.prev, sm.done, sm.tick = map[string][]float64{}, map[string]Counters{}, make(chan struct{}), make(chan struct{})
	sm.prevTopic = map[string]topicCounts{}
	// Name every column up front, so that a run shorter than an interval
	// still has them.
	sm.take(cl)
	for k := range sm.cols {
		sm.cols[k] = sm.cols[k][:0]
	}
	sm.n = 0
	sm.wg.Add(1)
	go func() {
		defer sm.wg.Done()
		next := cl.Epoch.Add(interval)
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		for {
			select {
			case <-t.C:
				sm.take(cl)
				next = next.Add(interval)
				t.Reset(time.Until(next))
			case <-sm.done:
				return
			}
		}
	}()
}

func (sm *sampler) take(cl *Cluster) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	defer sm.ticked()
	for i, s := range cl.Services {
		if i > 0 && cl.Services[i-1].name == s.name {
			continue // a further replica, summed with the first
		}
		reps := cl.Replicas(s.name)
		var st Stats
		for _, r := range reps {
			rs := r.Stats()
			key := rs.Service + model.ReplicaTag(rs.Replica)
			p := sm.prev[key]
			sm.prev[key] = rs.Counted
			st.Counted.Attempts += rs.Counted.Attempts - p.Attempts
			st.Counted.Rejected += rs.Counted.Rejected - p.Rejected
			st.Counted.Shed += rs.Counted.Shed - p.Shed
			st.Queue += rs.Queue
			st.Busy += rs.Busy
			st.Workers += rs.Workers
			if len(reps) > 1 {
				sm.replica(rs, rs.Counted.Attempts-p.Attempts)
			}
		}
		n := s.name
		sm.add(metrics.MetricAttempts, n, float64(st.Counted.Attempts))
		sm.add(metrics.MetricRejected, n, float64(st.Counted.Rejected))
		sm.add(metrics.MetricShed, n, float64(st.Counted.Shed))
		sm.add(metrics.MetricQueue, n, float64(st.Queue))
		sm.add(metrics.MetricInflight, n, float64(st.Busy+st.Queue))
		if st.Workers > 0 {
			sm.add(metrics.MetricUtilization, n, float64(st.Busy)/float64(st.Workers))
		}
		if s.topic != nil {
			sm.topic(n, s.topic)
		}
		for _, e := range s.outEdges {
			name := n + "->" + e.to
			if state, _, ok := e.ec.BreakerState(); ok {
				sm.add(metrics.MetricBreakerState, name, float64(state))
			}
			if level, ok := e.ec.BudgetLevel(); ok {
				sm.add(metrics.MetricBudgetLevel, name, level)
			}
		}
	}
	if sm.cv != nil {
		sm.cv.sample(sm)
	}
}

func (sm *sampler) stop() {
	sm.stopOnce.Do(func() {
		close(sm.done)
		sm.wg.Wait()
	})
}

// series merges the sampled columns into the driver's series.
func (sm *sampler) series(base *metrics.TimeSeries) *metrics.TimeSeries {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	out := &metrics.TimeSeries{Start: base.Start, Interval: base.Interval, Columns: append([]string(nil), base.Columns...)}
	names := make([]string, 0, len(sm.cols))
	for k := range sm.cols {
		names = append(names, k)
	}
	sort.Strings(names)
	out.Columns = append(out.Columns, names...)
	n := len(base.Rows)
	for _, v := range sm.cols {
		n = max(n, len(v))
	}
	for i := range n {
		row := make([]float64, 0, len(out.Columns))
		if i < len(base.Rows) {
			row = append(row, base.Rows[i]...)
		} else {
			row = append(row, make([]float64, len(base.Columns))...)
		}
		for _, k := range names {
			v := 0.0
			if i < len(sm.cols[k]) {
				v = sm.cols[k][i]
			}
			row = append(row, v)
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}
