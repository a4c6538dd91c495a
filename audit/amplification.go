package audit

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/stormsim/stormsim/faultproxy"
	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// ampRun is the amplification check while it runs: the proxies add each
// step's latency to the answers of the intents offered in that step, and
// keep the records of their attempts.
type ampRun struct {
	latency []time.Duration
	perStep float64 // intents offered per step
	mu      sync.Mutex
	offered map[uint64]bool                // intents (load's request index n) offered
	records map[uint64][]faultproxy.Record // their attempts, by intent
}

// stepOf returns the step of the load driver's request id (n+1).
func (r *ampRun) stepOf(id string) (n uint64, step int, ok bool) {
	v, err := strconv.ParseUint(id, 10, 64)
	if err != nil || v == 0 {
		return 0, 0, false
	}
	n = v - 1
	return n, min(int(float64(n)/r.perStep), len(r.latency)-1), true
}

// decide slows the answer of an attempt by its step's latency: the
// upstream does the work at once, and the client waits.
func (r *ampRun) decide(req *faultproxy.Request) (faultproxy.Decision, bool) {
	_, s, ok := r.stepOf(req.ID)
	if !ok {
		return faultproxy.Decision{}, false
	}
	return faultproxy.Decision{LatencyReply: r.latency[s], Source: fmt.Sprintf("audit: amplification step %d", s+1)}, true
}

func (r *ampRun) count(rec *faultproxy.Record) {
	n, _, ok := r.stepOf(rec.RequestID)
	if !ok {
		return
	}
	r.mu.Lock()
	r.records[n] = append(r.records[n], *rec)
	r.mu.Unlock()
}

// driveAmplification offers intents at the spec's rate through its client
// policy (load's open-loop driver: the same call machine as the
// simulator's), rate × step of them per step, while the proxies slow the
// answers step by step. Its history has one intent per logical request,
// whose attempts are those that reached an upstream.
func driveAmplification(ctx context.Context, a *auditor, _ int) ([]*Intent, error) {
	am := &a.spec.Amplification
	run := &ampRun{latency: am.Latency, perStep: am.Rate * am.Step.Seconds(), offered: map[uint64]bool{}, records: map[uint64][]faultproxy.Record{}}
	if run.perStep < 1 {
		run.perStep = 1
	}
	a.amp.Store(run)
	defer a.amp.Store(nil)
	s := a.spec
	header := http.Header{}
	for k, v := range s.Request.Headers {
		header.Set(k, v)
	}
	urls := make([]string, len(a.proxies))
	for i, p := range a.proxies {
		urls[i] = p.URL + s.Request.Path
	}
	dur := time.Duration(len(am.Latency)) * am.Step
	prefix := "audit-" + a.nonce + "-amplification-"
	// Every intent a write, at a constant rate: the simulator's arrival
	// process, as load --target offers it.
	arrivals, err := driver.TargetArrivals(topology.ArrivalConstant, am.Rate, 1, dur, s.Seed)
	if err != nil {
		return nil, fmt.Errorf("amplification: %w", err)
	}
	opt := driver.Options{
		Target: urls[0], Method: s.Request.Method, WriteMethod: s.Request.Method, Header: header, Body: []byte(s.Request.Body),
		// One key per intent, reused by its retries: each intent is one
		// order, however many attempts reach the upstream.
		Request:  &driver.RequestTemplate{KeyHeader: s.KeyHeader, KeyPrefix: prefix, Tenant: a.tenant(0), TenantHeader: s.TenantHeader},
		Arrivals: arrivals, Duration: dur,
		MaxRequests: uint64(run.perStep * float64(len(am.Latency))),
		Policy:      am.Client, Seed: s.Seed,
		Grace: time.Second, ServiceName: "audit",
		OnDone: func(n uint64, _, _ bool, _ policies.CallResult) {
			run.mu.Lock()
			run.offered[n] = true
			run.mu.Unlock()
		},
	}
	if len(urls) > 1 {
		opt.Replicas = urls
	}
	// The run's own outcomes are not the check's: the upstream's attempts are.
	if _, err := driver.Run(ctx, opt); err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("the load driver: %w", err)
	}
	// The proxies record an attempt when they are done with it: wait
	// until no record has come for a while (bounded by the longest step).
	wait := time.Now().Add(slices.Max(am.Latency) + time.Second)
	for last, quiet := -1, 0; quiet < 4 && time.Now().Before(wait); {
		time.Sleep(50 * time.Millisecond)
		run.mu.Lock()
		n := len(run.records)
		for _, rs := range run.records {
			n += len(rs)
		}
		run.mu.Unlock()
		if n == last {
			quiet++
		} else {
			last, quiet = n, 0
		}
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	var h []*Intent
	for n := range uint64(run.perStep * float64(len(am.Latency))) {
		if !run.offered[n] {
			continue
		}
		_, step, _ := run.stepOf(strconv.FormatUint(n+1, 10))
		in := &Intent{Role: fmt.Sprintf("step %d", step+1), Key: prefix + strconv.FormatUint(n+1, 10), Tenant: a.tenant(0), Effects: -1, step: step}
		for _, r := range run.records[n] {
			if r.Forwarded() {
				in.Attempts = append(in.Attempts, &Attempt{RequestID: r.RequestID, Number: r.Attempt, Target: -1,
					Status: r.Status, Error: r.Error, SentMS: r.AtMS, DoneMS: r.DoneMS, Proxy: &r})
			}
		}
		h = append(h, in)
	}
	return h, nil
}

func judgeAmplification(s *topology.AuditSpec, h []*Intent) verdict {
	am := &s.Amplification
	steps := make([]Step, len(am.Latency))
	examples := make([]*Intent, len(am.Latency))
	for i, l := range am.Latency {
		steps[i].LatencyMS = float64(l.Microseconds()) / 1000
	}
	for _, in := range h {
		st := &steps[in.step]
		st.Intents++
		st.Attempts += len(in.Attempts)
		if e := examples[in.step]; e == nil || len(in.Attempts) > len(e.Attempts) {
			examples[in.step] = in
		}
	}
	flagged, worst := -1, 0
	for i := range steps {
		st := &steps[i]
		if st.Intents == 0 {
			return verdict{verdict: Skipped, incomplete: true, steps: steps, why: fmt.Sprintf("step %d (+%v) offered no intent", i+1, am.Latency[i])}
		}
		st.Amplification = float64(st.Attempts) / float64(st.Intents)
		if st.Amplification > 2 && flagged < 0 {
			flagged, st.Flagged = i, true
		}
		if st.Amplification > steps[worst].Amplification {
			worst = i
		}
	}
	policy := fmt.Sprintf("%g intents/s, client timeout %v, %d attempts", am.Rate, am.Client.Timeout, max(am.Client.Retry.MaxAttempts, 1))
	if flagged >= 0 {
		st := steps[flagged]
		return verdict{verdict: Violated, steps: steps,
			why:      fmt.Sprintf("at +%v the upstream got %.2f attempts per intent (%d for %d): retries more than double its load (%s)", am.Latency[flagged], st.Amplification, st.Attempts, st.Intents, policy),
			evidence: []Evidence{{Note: fmt.Sprintf("an intent of step %d (+%v) and the attempts that reached the upstream", flagged+1, am.Latency[flagged]), Intent: examples[flagged]}}}
	}
	return verdict{verdict: Held, steps: steps,
		why: fmt.Sprintf("at most %.2f attempts per intent reached the upstream, at +%v (%s)", steps[worst].Amplification, am.Latency[worst], policy)}
}
