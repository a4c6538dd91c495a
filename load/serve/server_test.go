package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormsim/stormsim/internal/memnet"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/internal/loadtest"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/topology"
)

// oneService is a scenario of a single service with constant service time.
func oneService(workers, queue int, st time.Duration) *topology.Scenario {
	return &topology.Scenario{
		Name: "one", Seed: 1, Duration: time.Second, Interval: time.Second,
		Workload: topology.Workload{Entry: "svc", Arrival: "constant", Rate: 10},
		Services: []topology.Service{{
			Name: "svc", Workers: workers, Queue: &queue,
			ServiceTime: topology.Dist{Dist: "constant", Value: st},
		}},
	}
}

func startService(t *testing.T, sc *topology.Scenario, commits bool) (*Service, *httptest.Server) {
	t.Helper()
	s, err := NewService(sc, sc.Services[0].Name, ServiceConfig{Epoch: time.Now(), URLs: map[string]string{}, Commits: commits})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); srv.Close() })
	return s, srv
}

// startScenario parses a scenario written in YAML and serves all of its
// services on loopback until the test ends.
func startScenario(t *testing.T, name, yaml string) *Cluster {
	t.Helper()
	return startScenarioWith(t, name, yaml, ClusterOptions{})
}

// startScenarioWith is startScenario with the cluster's options (its protocol).
func startScenarioWith(t *testing.T, name, yaml string, opt ClusterOptions) *Cluster {
	t.Helper()
	sc, err := topology.Parse(name, []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := StartCluster(sc, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cl.Close(ctx)
	})
	return cl
}

func getStats(t *testing.T, url string) Stats {
	t.Helper()
	return getStatsWith(t, http.DefaultClient, url)
}

// getStatsWith is getStats through client.
func getStatsWith(t *testing.T, client *http.Client, url string) Stats {
	t.Helper()
	resp, err := client.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestQueueLimitRejectsAtPredictedLoad: 2 workers × 100 ms serve 20 req/s
// and hold 10 more in the queue. Offered 40 req/s evenly for 2 s (80
// requests, the last at 1975 ms), the service accepts the 12 that fill it
// plus one per completion up to the last arrival: worker A completes at
// 100, 200, …, 1900 ms and worker B at 125, …, 1925 ms, 19 each, so 50
// accepted and 30 rejected with 503. Each completion falls on an arrival's
// instant; whichever of the two the service sees first, the freed place
// goes to that arrival or the next, 25 ms later, so the count is exact. On
// the bubble's clock (service, driver and the HTTP between them on an
// in-memory network) no timer overshoots: exactly 30. Without the waiting
// room 40 or more would be, with an unbounded one none. /stats must count
// exactly the attempts the driver sent.
func TestQueueLimitRejectsAtPredictedLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var nw memnet.Network
		sc := oneService(2, 10, 100*time.Millisecond)
		s, err := NewService(sc, "svc", ServiceConfig{Epoch: time.Now(), URLs: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		base := loadtest.MemTarget(t, &nw, s.ServeHTTP)
		res, err := driver.Run(context.Background(), driver.Options{
			Network: &nw, Target: base + "svc", Arrivals: loadtest.Constant(40, 2*time.Second), Duration: 2 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		sum := res.Summary
		rejected := sum.Load.Statuses["503"]
		if rejected != 30 || sum.Requests.Succeeded != 50 {
			t.Errorf("503s: %d, succeeded %d of %d; want 30 and 50", rejected, sum.Requests.Succeeded, sum.Requests.Offered)
		}
		st := getStatsWith(t, &http.Client{Transport: &http.Transport{DialContext: nw.DialContext}}, strings.TrimSuffix(base, "/"))
		if st.All.Attempts != sum.Load.Attempts || st.All.Rejected != rejected || st.All.Succeeded != sum.Requests.Succeeded {
			t.Errorf("/stats attempts %d rejected %d succeeded %d; driver attempts %d rejected %d succeeded %d",
				st.All.Attempts, st.All.Rejected, st.All.Succeeded, sum.Load.Attempts, rejected, sum.Requests.Succeeded)
		}
	})
}

func post(t *testing.T, url, key, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(transport.HeaderIdempotencyKey, key)
	req.Header.Set(transport.HeaderWrite, "1")
	req.Header.Set(transport.HeaderRequestID, "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestIdempotencyOverHTTP: concurrent first arrivals of one key make one
// owner and one effect (the others hear "in progress", or, arriving after
// the commit on a slow machine, a replay), a retry after the commit
// replays the result, and the same key with another body is a 409 with no
// effect.
func TestIdempotencyOverHTTP(t *testing.T) {
	sc := oneService(64, 64, 500*time.Millisecond)
	sc.Workload.IdempotencyKeys = true
	_, srv := startService(t, sc, true)
	const n = 48
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = post(t, srv.URL+"/svc", "k1", "payload")
		}()
	}
	wg.Wait()
	ok, inProgress := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case transport.StatusInProgress:
			inProgress++
		}
	}
	if ok < 1 || ok+inProgress != n || inProgress == 0 {
		t.Errorf("codes %v: want one owner's 200, the rest %d (or replayed 200s), and some %d", codes, transport.StatusInProgress, transport.StatusInProgress)
	}
	st := getStats(t, srv.URL)
	if st.Executions != 1 || st.Replays != int64(ok-1) || st.InProgress != int64(inProgress) {
		t.Errorf("after %d concurrent arrivals: executions %d replays %d in progress %d; want 1, %d, %d",
			n, st.Executions, st.Replays, st.InProgress, ok-1, inProgress)
	}
	if c := post(t, srv.URL+"/svc", "k1", "payload"); c != http.StatusOK {
		t.Errorf("replay after commit: %d, want 200", c)
	}
	if c := post(t, srv.URL+"/svc", "k1", "another payload"); c != transport.StatusConflict {
		t.Errorf("same key, different body: %d, want 409", c)
	}
	st = getStats(t, srv.URL)
	if st.Executions != 1 || st.Duplicates != 0 || st.Replays != int64(ok) || st.Conflicts != 1 {
		t.Errorf("ledger: executions %d duplicates %d replays %d conflicts %d; want 1, 0, %d, 1",
			st.Executions, st.Duplicates, st.Replays, st.Conflicts, ok)
	}
}

// TestWritesWithoutKeysDuplicate: without idempotency keys every retry of
// a write whose answer was lost executes again.
func TestWritesWithoutKeysDuplicate(t *testing.T) {
	_, srv := startService(t, oneService(4, 4, time.Millisecond), true)
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/svc", bytes.NewReader([]byte("x")))
		req.Header.Set(transport.HeaderWrite, "1")
		req.Header.Set(transport.HeaderRequestID, "7")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if st := getStats(t, srv.URL); st.Executions != 3 || st.Duplicates != 2 {
		t.Errorf("executions %d duplicates %d, want 3 and 2", st.Executions, st.Duplicates)
	}
}

// TestRejectExpiredDeadline: with one worker busy and one request queued,
// a request with 50 ms left must wait at least the queued one's 100 ms of
// work, so its deadline passes before it starts: 504, and the work is not
// done. A request that arrives with no time left is refused at once.
func TestRejectExpiredDeadline(t *testing.T) {
	sc := oneService(1, 10, 100*time.Millisecond)
	sc.Services[0].RejectExpired = true
	_, srv := startService(t, sc, false)
	get := func(deadline string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/svc", nil)
		if deadline != "" {
			req.Header.Set(transport.HeaderDeadline, deadline)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor := func(what string, ok func(Stats) bool) {
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			if ok(getStats(t, srv.URL)) {
				return
			}
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	codes := make([]int, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); codes[0] = get("") }()
	waitFor("the worker to be busy", func(st Stats) bool { return st.Busy == 1 })
	go func() { defer wg.Done(); codes[1] = get("") }()
	waitFor("a queued request", func(st Stats) bool { return st.Queue == 1 })
	if c := get("50"); c != transport.StatusExpired {
		t.Errorf("request with 50 ms left behind 100 ms of queued work: %d, want %d", c, transport.StatusExpired)
	}
	if c := get("0"); c != transport.StatusExpired {
		t.Errorf("request with no time left: %d, want %d", c, transport.StatusExpired)
	}
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Errorf("requests without a deadline: %v, want [200 200]", codes)
	}
	if st := getStats(t, srv.URL); st.All.Expired != 2 || st.All.Succeeded != 2 {
		t.Errorf("expired %d succeeded %d, want 2 and 2", st.All.Expired, st.All.Succeeded)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	_, srv := startService(t, oneService(1, 1, time.Millisecond), false)
	resp, err := http.Get(srv.URL + "/svc")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	if !strings.Contains(b.String(), `stormsim_attempts_total{service="svc"} 1`) {
		t.Errorf("/metrics lacks the attempt counter:\n%s", b.String())
	}
}

func FuzzParseAttempt(f *testing.F) {
	for _, s := range []string{"", "150", "0.5", "-3", "NaN", "Inf", "-Inf", "1e300", "x"} {
		f.Add(s, "k", "1")
	}
	f.Fuzz(func(t *testing.T, deadline, key, write string) {
		r := httptest.NewRequest(http.MethodPost, "/svc", strings.NewReader("body"))
		r.Header.Set(transport.HeaderDeadline, deadline)
		r.Header.Set(transport.HeaderIdempotencyKey, key)
		r.Header.Set(transport.HeaderWrite, write)
		const now = time.Hour
		a := parseAttempt(r, now)
		if a.hasDeadline {
			if d := a.deadline - now; d > 1e12*time.Millisecond || d < -1e12*time.Millisecond {
				t.Fatalf("deadline %q gave an offset of %v", deadline, d)
			}
		}
		if string(a.body) != "body" {
			t.Fatalf("body %q", a.body)
		}
	})
}
