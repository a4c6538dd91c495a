package serve

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/internal/clock"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/metrics"
	"github.com/stormsim/stormsim/model"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/sim"
	"github.com/stormsim/stormsim/topology"
	"github.com/stretchr/testify/require"
)

// scripted drives one emulated service with scripted arrivals on a fake
// clock: each step (an arrival, a wake-up) runs until every handler is
// parked again (sleeping, queued, holding a dropped reply) or done, so the
// service sees the events one at a time, in time order, as the simulator
// does.
type scripted struct {
	t       *testing.T
	svc     *Service
	clock   *clock.Fake
	sent    int
	done    atomic.Int64
	mu      sync.Mutex
	ends    map[int]time.Duration
	answers map[int]*httptest.ResponseRecorder
	cancels []context.CancelFunc
	wg      sync.WaitGroup
	// timeout, if set, is the caller's: request i's context is cancelled
	// at its arrival + timeout, as the simulator's client gives up.
	timeout time.Duration
}

func newScripted(t *testing.T, sc *topology.Scenario, name string) *scripted {
	t.Helper()
	clk := new(clock.Fake)
	committer := CommittingService(sc)
	s, err := NewService(sc, name, ServiceConfig{URLs: map[string]string{}, Commits: name == committer, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	sc2 := &scripted{t: t, svc: s, clock: clk, ends: map[int]time.Duration{}, answers: map[int]*httptest.ResponseRecorder{}}
	t.Cleanup(func() {
		for _, c := range sc2.cancels {
			c()
		}
		s.Close()
		sc2.wg.Wait()
	})
	return sc2
}

// run sends request i (made by mk) at arrivals[i] and lets the service
// run until nothing is left to wake.
func (s *scripted) run(arrivals []time.Duration, mk func(i int) *http.Request) {
	i, gone := 0, 0
	for {
		next, timed := s.clock.Next()
		if !timed {
			next = time.Duration(math.MaxInt64)
		}
		switch {
		case s.timeout > 0 && gone < i && arrivals[gone]+s.timeout < next &&
			(i == len(arrivals) || arrivals[gone]+s.timeout < arrivals[i]):
			s.clock.AdvanceTo(arrivals[gone] + s.timeout)
			s.cancels[gone]()
			gone++
		case i < len(arrivals) && (!timed || arrivals[i] < next):
			s.clock.AdvanceTo(arrivals[i])
			s.launch(i, mk(i))
			i++
		case timed:
			s.clock.Step()
		default:
			return
		}
		s.settle()
	}
}

func (s *scripted) launch(i int, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	s.cancels = append(s.cancels, cancel)
	rec := httptest.NewRecorder()
	s.sent++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.svc.ServeHTTP(rec, r.WithContext(ctx))
		s.mu.Lock()
		s.ends[i], s.answers[i] = s.clock.Now(), rec
		s.mu.Unlock()
		s.done.Add(1)
	}()
}

// settle waits until every handler is parked or done.
func (s *scripted) settle() {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s.svc.mu.Lock()
		queued := s.svc.cm.QueueLen()
		s.svc.mu.Unlock()
		parked := s.clock.Sleepers() + queued + int(s.svc.all.dropped.Load())
		if parked+int(s.done.Load()) == s.sent {
			return
		}
		time.Sleep(20 * time.Microsecond)
	}
	s.t.Fatalf("handlers did not settle: %d sent, %d done", s.sent, s.done.Load())
}

// constantArrivals are the simulator's constant arrivals at rate over d.
func constantArrivals(rate float64, d time.Duration) []time.Duration {
	var at []time.Duration
	for n := 0; ; n++ {
		t := time.Duration(math.Round(float64(n) * float64(time.Second) / rate))
		if t >= d {
			return at
		}
		at = append(at, t)
	}
}

// keyedWrites makes a one-service scenario's workload (rate 1) all writes
// with idempotency keys.
func keyedWrites(yaml string) string {
	return strings.Replace(yaml, "  rate: 1\n", "  rate: 1\n  write_fraction: 1\n  idempotency_keys: true\n", 1)
}

// keyedPost is a retry of one keyed write: request 1, key k, whatever i.
func keyedPost(int) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/svc", strings.NewReader("x"))
	r.Header.Set(transport.HeaderRequestID, "1")
	r.Header.Set(transport.HeaderWrite, "1")
	r.Header.Set(transport.HeaderIdempotencyKey, "k")
	return r
}

func get(i int) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/svc", nil)
	r.Header.Set(transport.HeaderRequestID, fmt.Sprint(i+1))
	return r
}

func parseScenario(t *testing.T, yaml string) *topology.Scenario {
	t.Helper()
	sc, err := topology.Parse("conformance.yaml", []byte(yaml), nil)
	require.NoError(t, err)
	return sc
}

// TestConformanceSimulatorAndServe: scripted arrivals, faults and
// idempotency cases run through the callee machine in the simulator and
// through serve on a fake clock give the same outcomes; one row per
// divergence the issue found between the two modes.
func TestConformanceSimulatorAndServe(t *testing.T) {
	// One service, one attempt per request (no retries), arrivals far
	// enough apart or scripted so both modes see them in the same order.
	one := func(extra, faults string, rate float64, duration string) string {
		return `
name: conformance
seed: 7
duration: ` + duration + `
workload:
  entry: svc
  arrival: constant
  rate: ` + fmt.Sprint(rate) + `
  client: {timeout: 1s, retry: {max_attempts: 1}}
services:
  - name: svc
    workers: 1
` + extra + faults
	}
	rows := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"error_class timeout is accepted and answered as timeout in both", func(t *testing.T) {
			sc := parseScenario(t, one("    service_time: {dist: exponential, mean: 1ms}\n    error_rate: 0.3\n    error_class: timeout\n", "", 50, "2s"))
			simS := runSim(t, sc).Services[0]
			s := newScripted(t, sc, "svc")
			s.run(constantArrivals(50, 2*time.Second), get)
			st := s.svc.Stats().All
			if st.Attempts != simS.Attempts || st.Failed != simS.Failed || st.Succeeded != simS.Succeeded {
				t.Errorf("serve %+v, simulator %+v", st, simS)
			}
			for i, rec := range s.answers {
				if o := rec.Header().Get(transport.HeaderOutcome); o != "" && o != policies.Timeout.String() {
					t.Errorf("request %d answered %q, want %q", i, o, policies.Timeout)
				}
			}
			if simS.Failed == 0 {
				t.Error("no injected error: the row tests nothing")
			}
		}},
		{"overlapping drop_response faults drop with 1 − Π(1 − p)", func(t *testing.T) {
			faults := "faults:\n  - {service: svc, at: 0s, for: 2s, drop_response: 0.5}\n  - {service: svc, at: 0s, for: 2s, drop_response: 0.5}\n"
			sc := parseScenario(t, one("    service_time: {dist: constant, value: 1ms}\n", faults, 100, "2s"))
			simS := runSim(t, sc).Services[0]
			s := newScripted(t, sc, "svc")
			s.run(constantArrivals(100, 2*time.Second), get)
			st := s.svc.Stats().All
			if st.Dropped != simS.TimedOut {
				t.Errorf("dropped: serve %d, simulator %d", st.Dropped, simS.TimedOut)
			}
			// A dropped reply's work was done and answered OK: ok in both.
			if st.Succeeded != simS.Succeeded {
				t.Errorf("succeeded: serve %d, simulator %d", st.Succeeded, simS.Succeeded)
			}
			// 200 replies dropped each with 0.75: 150 ± 4σ (σ = 6.1); the
			// max(p) rule would drop 100.
			if st.Dropped < 125 || st.Dropped > 175 {
				t.Errorf("dropped %d of 200, want 150 ± 25", st.Dropped)
			}
		}},
		{"slowdown_per_inflight counts queued attempts too", func(t *testing.T) {
			// 10 arrivals 1 ms apart into one worker of 5.5 ms: the i-th
			// to start is slowed by the others in flight, queued included.
			sc := parseScenario(t, one("    service_time: {dist: constant, value: 5500us}\n    slowdown_per_inflight: 1ms\n", "", 1000, "10ms"))
			simSum := runSim(t, sc)
			arr := constantArrivals(1000, 10*time.Millisecond)
			s := newScripted(t, sc, "svc")
			s.run(arr, get)
			var sum, mx float64
			for i, at := range arr {
				l := float64(s.ends[i]-at) / 1e6
				sum += l
				mx = max(mx, l)
			}
			mean := sum / float64(len(arr))
			// The simulator's latencies are kept to 3 significant digits.
			if math.Abs(mean-simSum.LatencyMs.Mean) > 0.005*mean || math.Abs(mx-simSum.LatencyMs.Max) > 0.005*mx {
				t.Errorf("latency mean/max: serve %.3f/%.3f ms, simulator %.3f/%.3f ms", mean, mx, simSum.LatencyMs.Mean, simSum.LatencyMs.Max)
			}
			// The last starts at 81.5 ms and ends at 87 ms: 78 ms after it
			// arrived. Counting busy workers only, nothing is slowed (one
			// worker) and it would end at 55 ms, 46 ms after it arrived.
			if math.Abs(mx-78) > 0.01 {
				t.Errorf("max latency %.3f ms, want 78 ms", mx)
			}
		}},
		{"an expired idempotency key answers error, which a caller may retry", func(t *testing.T) {
			yaml := one("    service_time: {dist: constant, value: 1ms}\n    idempotency: {retention: 1s, lease: 100ms}\n", "", 1, "1s")
			sc := parseScenario(t, keyedWrites(yaml))
			at := []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond}
			s := newScripted(t, sc, "svc")
			s.run(at, keyedPost)
			// The simulator's side: the very machine sim builds for svc.
			cm, err := model.NewCallee[int](&sc.Services[0], model.Stream(sc.Seed, model.ServiceStream("svc")), true, true)
			if err != nil {
				t.Fatal(err)
			}
			for i, t0 := range at {
				var want model.Answer
				if adm, _ := cm.Arrive(t0, i, false); adm == model.Started {
					d, fence, preset := cm.Begin(t0, true, "k", digest([]byte("x")))
					if preset {
						want = cm.PresetAnswer()
					}
					cm.Finish(t0+d, model.Ending{Outcome: want.Outcome, Worked: !preset, Write: true, Key: "k", Fence: fence})
					cm.Release()
				}
				got := s.answers[i].Header().Get(transport.HeaderOutcome)
				if want.Outcome == policies.OK && got != "" || want.Outcome != policies.OK && got != want.Outcome.String() {
					t.Errorf("attempt %d at %v: serve %q, simulator's machine %v", i, t0, got, want.Outcome)
				}
			}
			if got := s.answers[2].Header().Get(transport.HeaderOutcome); got != policies.Error.String() {
				t.Errorf("expired key: serve answered %q, want %q", got, policies.Error)
			}
		}},
		{"two calls to the same callee draw from separate streams", func(t *testing.T) {
			sc := parseScenario(t, `
name: twice
seed: 5
duration: 1s
workload: {entry: gw, rate: 1}
services:
  - name: gw
    workers: 1
    service_time: {dist: constant, value: 1ms}
    calls: [{to: b}, {to: b}]
  - name: b
    workers: 1
    service_time: {dist: constant, value: 1ms}
`)
			s, err := NewService(sc, "gw", ServiceConfig{URLs: map[string]string{"b": "http://127.0.0.1:1/b"}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			a, b := s.outEdges[0].ec.Policy().Rand.Uint64(), s.outEdges[1].ec.Policy().Rand.Uint64()
			names := model.EdgeStreams{}
			wa, wb := model.Stream(5, names.Name("gw", "b")).Uint64(), model.Stream(5, names.Name("gw", "b")).Uint64()
			if a == b || a != wa || b != wb {
				t.Errorf("serve's streams %x, %x; the simulator's %x, %x", a, b, wa, wb)
			}
		}},
		{"gw -> [a, b] commits at a in both modes", func(t *testing.T) {
			sc := &topology.Scenario{
				Name: "commit", Seed: 1, Duration: time.Second, Interval: time.Second,
				Workload: topology.Workload{Entry: "gw", Arrival: "constant", Rate: 10, WriteFraction: 1},
				Services: []topology.Service{
					{Name: "gw", Workers: 1, ServiceTime: topology.Dist{Dist: "constant", Value: time.Millisecond},
						Calls: []topology.Call{{Parallel: []topology.Call{{To: "a"}, {To: "b"}}}}},
					{Name: "a", Workers: 1, ServiceTime: topology.Dist{Dist: "constant", Value: time.Millisecond}},
					{Name: "b", Workers: 1, ServiceTime: topology.Dist{Dist: "constant", Value: time.Millisecond}},
				},
			}
			sum := runSim(t, sc)
			if sum.Services[1].Executions != 10 || sum.Services[2].Executions != 0 {
				t.Errorf("simulator executions a %d, b %d, want 10, 0", sum.Services[1].Executions, sum.Services[2].Executions)
			}
			if got := CommittingService(sc); got != "a" {
				t.Errorf("serve commits at %q, want a", got)
			}
			loaded := parseScenario(t, "name: c\nduration: 1s\nworkload: {entry: gw, rate: 1}\nservices:\n  - {name: gw, workers: 1, service_time: {dist: constant, value: 1ms}, calls: [{parallel: [{to: a}, {to: b}]}]}\n  - {name: a, workers: 1, service_time: {dist: constant, value: 1ms}}\n  - {name: b, workers: 1, service_time: {dist: constant, value: 1ms}}\n")
			if i := loaded.Committer(); loaded.Services[i].Name != "a" {
				t.Errorf("a loaded scenario commits at %q, want a", loaded.Services[i].Name)
			}
		}},
		{"arrivals restart their phase at a rate step, and writes are drawn alike", func(t *testing.T) {
			// 3/s, then 2/s from 500 ms: arrivals at 0, 333 ms, then 500 ms,
			// 1 s, 1.5 s (the integral of the rate would give 750 ms,
			// 1.25 s, 1.75 s). Counted per 250 ms, the two differ.
			sc := parseScenario(t, `
name: step
seed: 3
duration: 2s
interval: 250ms
workload:
  entry: svc
  arrival: constant
  rate: 3
  schedule: [{at: 500ms, rate: 2}]
  write_fraction: 0.5
services:
  - name: svc
    workers: 4
    service_time: {dist: constant, value: 1ms}
`)
			res, err := sim.Run(context.Background(), sc, sim.Options{})
			require.NoError(t, err)
			simBins := res.Series.Values("offered")
			bins := make([]float64, len(simBins))
			p, writes := scenarioArrivals(sc), int64(0)
			for n := uint64(0); ; n++ {
				at, ok := p.At(n)
				if !ok {
					break
				}
				bins[at/(250*time.Millisecond)]++
				if p.Write(n) {
					writes++
				}
			}
			require.Equal(t, []float64{1, 1, 1, 0, 1, 0, 1, 0}, simBins, "the simulator's arrivals per 250 ms")
			require.Equal(t, simBins, bins, "the load driver's arrivals per 250 ms")
			require.Positive(t, writes, "no writes drawn: the row tests nothing")
			require.Equal(t, res.Summary.Services[0].Executions, writes, "writes: simulator executions, driver writes")
		}},
		{"ok counts work answered OK also after the caller gave up, as in the simulator", func(t *testing.T) {
			// A callee slower than its caller's timeout that does not
			// cancel: most attempts finish for nobody. Both modes count
			// each finished attempt succeeded or failed by its answer,
			// and also wasted when its caller had gone.
			sc := parseScenario(t, `
name: slow
seed: 11
duration: 1s
workload:
  entry: svc
  arrival: constant
  rate: 50
  client: {timeout: 15ms, retry: {max_attempts: 1}}
services:
  - name: svc
    workers: 4
    service_time: {dist: exponential, mean: 20ms}
    error_rate: 0.2
`)
			simS := runSim(t, sc).Services[0]
			s := newScripted(t, sc, "svc")
			s.timeout = 15 * time.Millisecond
			s.run(constantArrivals(50, time.Second), get)
			st := s.svc.Stats().All
			got := [...]int64{st.Attempts, st.Succeeded, st.Failed, st.TimedOut, st.Wasted}
			want := [...]int64{simS.Attempts, simS.Succeeded, simS.Failed, simS.TimedOut, simS.Wasted}
			if got != want {
				t.Errorf("attempts, succeeded, failed, timed out, wasted: serve %v, simulator %v", got, want)
			}
			if simS.Wasted == 0 || simS.Wasted == simS.Attempts {
				t.Errorf("simulator wasted %d of %d: the row needs both on-time and abandoned work", simS.Wasted, simS.Attempts)
			}
			if st.Wasted > st.Succeeded+st.Failed {
				t.Errorf("serve wasted %d > succeeded %d + failed %d", st.Wasted, st.Succeeded, st.Failed)
			}
		}},
		{"wait_for beyond the group is an error, not clamped", func(t *testing.T) {
			_, err := topology.Parse("q.yaml", []byte("name: q\nduration: 1s\nworkload: {entry: gw, rate: 1}\nservices:\n  - {name: gw, workers: 1, service_time: {dist: constant, value: 1ms}, calls: [{to: b, fanout: 2, wait_for: 3}]}\n  - {name: b, workers: 1, service_time: {dist: constant, value: 1ms}}\n"), nil)
			if err == nil || !strings.Contains(err.Error(), "wait_for") {
				t.Errorf("got %v, want an error naming wait_for", err)
			}
		}},
		{"a replayed answer draws drop_response as any answer after work", func(t *testing.T) {
			// A write executes at 0 and its reply is lost; its retry at
			// 500 ms is answered from the store (a replay), and that reply
			// is lost too, as in the simulator, where an answer the store
			// gave is an answer after work.
			yaml := one("    service_time: {dist: constant, value: 1ms}\n", "faults:\n  - {service: svc, at: 0s, for: 1s, drop_response: 1}\n", 1, "1s")
			sc := parseScenario(t, keyedWrites(yaml))
			s := newScripted(t, sc, "svc")
			s.run([]time.Duration{0, 500 * time.Millisecond}, keyedPost)
			st := s.svc.Stats()
			require.Equal(t, int64(1), st.Replays, "the retry is a replay")
			require.Equal(t, int64(2), st.All.Dropped, "replies lost: the execution's and the replay's")
			require.Equal(t, int64(2), st.All.Succeeded, "both answered OK after work")
		}},
		{"utilization and queue figures count from the warm-up on", func(t *testing.T) {
			// Five arrivals 10 ms apart into one worker of 50 ms build a
			// queue before the warm-up (1 s); after it, one arrival works
			// 50 ms alone. Both modes measure [warm-up, end): 50 ms busy,
			// no queue.
			sc := parseScenario(t, `
name: warm
seed: 1
duration: 2s
warmup: 1s
workload:
  entry: svc
  arrival: constant
  rate: 100
  schedule: [{at: 40ms, rate: 1}]
  client: {timeout: 10s, retry: {max_attempts: 1}}
services:
  - {name: svc, workers: 1, service_time: {dist: constant, value: 50ms}}
`)
			res, err := sim.Run(context.Background(), sc, sim.Options{})
			require.NoError(t, err)
			simS := res.Summary.Services[0]
			span := res.Summary.SimTimeS - sc.Warmup.Seconds()
			require.InDelta(t, 0.05, simS.Utilization*span, 1e-9, "the simulator's busy seconds after the warm-up")
			var arr []time.Duration
			p := scenarioArrivals(sc)
			for n := uint64(0); ; n++ {
				at, ok := p.At(n)
				if !ok {
					break
				}
				arr = append(arr, at)
			}
			require.Len(t, arr, 6)
			s := newScripted(t, sc, "svc")
			s.run(arr, get)
			st := s.svc.Stats()
			require.Equal(t, simS.QueueMax, st.QueueMax, "queue max: serve, simulator")
			require.InDelta(t, simS.Utilization*span, st.BusyS, 1e-9, "busy seconds after the warm-up: serve, simulator")
			require.InDelta(t, simS.QueueMean*span, st.QueueS, 1e-9, "queue seconds after the warm-up: serve, simulator")
		}},
		{"a parallel group stops starting members once its quorum is impossible", func(t *testing.T) {
			// gw calls [a, b] needing both. a always fails and its breaker
			// opens on the first failure: the first request starts both
			// members; the second finds a's breaker open as a starts, the
			// quorum impossible, and never starts b.
			sc := parseScenario(t, `
name: quorum
seed: 1
duration: 200ms
workload:
  entry: gw
  arrival: constant
  rate: 10
  client: {timeout: 1s, retry: {max_attempts: 1}}
services:
  - name: gw
    workers: 4
    service_time: {dist: constant, value: 1ms}
    calls:
      - parallel:
          - {to: a, retry: {max_attempts: 1}, breaker: {kind: consecutive, failures: 1, open_for: 1m}}
          - {to: b, retry: {max_attempts: 1}}
  - {name: a, workers: 4, service_time: {dist: constant, value: 1ms}, error_rate: 1}
  - {name: b, workers: 4, service_time: {dist: constant, value: 1ms}}
`)
			callsTo := func(edges []metrics.EdgeSummary, to string) int64 {
				for _, e := range edges {
					if e.From == "gw" && e.To == to {
						return e.Calls
					}
				}
				t.Fatalf("no edge gw->%s in %+v", to, edges)
				return 0
			}
			simSum := runSim(t, sc)
			require.Equal(t, int64(2), simSum.Requests.Offered)
			require.Equal(t, int64(1), callsTo(simSum.Edges, "b"), "simulator: calls gw->b")
			require.Equal(t, int64(2), callsTo(simSum.Edges, "a"), "simulator: calls gw->a")
			cl, err := StartCluster(sc, ClusterOptions{})
			require.NoError(t, err)
			defer cl.Close(context.Background())
			for i := range 2 {
				req, err := http.NewRequest(http.MethodGet, cl.URLs["gw"], nil)
				require.NoError(t, err)
				req.Header.Set(transport.HeaderRequestID, fmt.Sprint(i+1))
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				require.NotEqual(t, http.StatusOK, resp.StatusCode, "request %d", i+1)
			}
			edges := cl.Service("gw").Stats().Edges
			require.Equal(t, int64(1), callsTo(edges, "b"), "serve: calls gw->b")
			require.Equal(t, int64(2), callsTo(edges, "a"), "serve: calls gw->a")
			require.Equal(t, int64(1), cl.Service("a").Stats().All.Attempts, "serve: a's attempts (the breaker refused the second)")
		}},
		{"pool.size bounds the connections to each replica", func(t *testing.T) {
			// Two replicas, a pool of one connection, calls that hold it
			// 30 ms arriving every 20 ms, spread round robin: each replica
			// gets one every 40 ms, after its one connection is free
			// again, so no call waits; one connection for the edge, held
			// 30 ms of every 20, would keep calls waiting. net/http's
			// MaxConnsPerHost, serve's bound, is per replica (host) too.
			sc := parseScenario(t, `
name: pool
seed: 1
duration: 2s
workload:
  entry: svc
  arrival: constant
  rate: 50
  client: {balance: round_robin, pool: {size: 1}}
services:
  - {name: svc, replicas: 2, workers: 4, service_time: {dist: constant, value: 30ms}}
`)
			p := runSim(t, sc).Edges[0].Pool
			require.NotNil(t, p)
			require.Zero(t, p.Waited, "a call waited for a connection to another replica")
			require.Equal(t, int64(2), p.Handshakes, "one connection to each replica")
			cl := &Cluster{CertPEM: nil}
			client, conns := clientFor(cl, sc.Workload.Client.Pool, 8)
			require.Equal(t, 1, conns)
			require.Equal(t, 1, client.Transport.(*http.Transport).MaxConnsPerHost, "serve's bound per replica")
		}},
		{"reset_connections on one replica resets that replica's connections only", func(t *testing.T) {
			yaml := func(replica int) string {
				return fmt.Sprintf(`
name: reset
seed: 1
duration: 1s
workload:
  entry: svc
  arrival: constant
  rate: 200
  client: {balance: round_robin, pool: {size: 2}}
services:
  - {name: svc, replicas: 2, workers: 8, service_time: {dist: constant, value: 1ms}}
faults:
  - {service: svc, replica: %d, at: 500ms, for: 100ms, reset_connections: true}
`, replica)
			}
			// The simulator: the edge keeps one connection open to each
			// replica (calls are 5 ms apart, each 1 ms); the reset closes
			// the hit replica's, whichever it is.
			for _, r := range []int{0, 1} {
				p := runSim(t, parseScenario(t, yaml(r))).Edges[0].Pool
				require.Equal(t, int64(1), p.Resets, "simulator, fault on replica %d", r)
			}
			// Serve: a keep-alive connection to each replica, then the
			// fault on replica 1: only replica 1's is closed. The fault
			// comes 500 ms into the run, so that both connections are open
			// by then even on a starved CPU (at 150 ms, under CPU burners,
			// replica 1's was opened after its reset, and survived).
			sc := parseScenario(t, yaml(1))
			const faultAt = 500 * time.Millisecond
			sc.Faults[0].At = faultAt
			epoch := time.Now()
			cl, err := StartCluster(sc, ClusterOptions{Epoch: epoch})
			require.NoError(t, err)
			defer cl.Close(context.Background())
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			reused := func(url string) bool {
				var got bool
				trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { got = ci.Reused }}
				req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, url, nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return got
			}
			urls := cl.ReplicaURLs["svc"]
			require.Len(t, urls, 2)
			for _, u := range urls {
				reused(u)
			}
			require.Less(t, time.Since(epoch), faultAt, "the connections were to be open before the fault")
			time.Sleep(time.Until(epoch.Add(faultAt + 150*time.Millisecond))) // a real socket waits past the fault
			require.True(t, reused(urls[0]), "replica 0's connection was reset by a fault on replica 1")
			require.False(t, reused(urls[1]), "replica 1's connection survived its reset")
		}},
	}
	for _, row := range rows {
		t.Run(row.name, row.check)
	}
}

func runSim(t *testing.T, sc *topology.Scenario) metrics.Summary {
	t.Helper()
	res, err := sim.Run(context.Background(), sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Summary
}

// TestConformanceRules: one row per rule the simulator and serve each
// decided while wiring a scenario, where they disagreed (issue 32); each
// is now decided once, in model.
func TestConformanceRules(t *testing.T) {
	rows := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"a fault with several effects is labelled with all of them", func(t *testing.T) {
			sc := parseScenario(t, `
name: label
seed: 1
duration: 1s
workload: {entry: svc, rate: 10}
services:
  - {name: svc, workers: 1, service_time: {dist: constant, value: 1ms}}
faults:
  - {service: svc, at: 100ms, for: 200ms, capacity: 0.5, latency_add: 5ms, drop_response: 0.1}
`)
			res, err := sim.Run(context.Background(), sc, sim.Options{})
			require.NoError(t, err)
			require.Equal(t, res.Faults, faultWindows(sc), "serve's fault windows, the simulator's")
			require.Contains(t, res.Faults[0].Label, "drop 0.1", "the simulator's label misses an effect")
		}},
	}
	for _, row := range rows {
		t.Run(row.name, row.check)
	}
}
