package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stormsim/stormsim/faultproxy"
	"github.com/stormsim/stormsim/topology"
)

// check is one row of the audit's table: a workload that sends requests
// through the proxies and records a history of intents, and a judge, a
// function of the spec and that history alone (as a Jepsen checker is of
// its history), so that each rule of idempotency is written once and can
// be tested on histories written by hand.
type check struct {
	name string
	// skip says why the spec rules the check out ("": run it).
	skip func(s *topology.AuditSpec) string
	// cost is the requests one intent (or trial) of the check sends:
	// limits.requests / cost intents are run.
	cost func(s *topology.AuditSpec) int
	// drive sends the check's requests, stopping when ctx ends, and
	// returns its history (and an error when it could not run at all);
	// the audit then attaches the proxies' records and, with oracle, the
	// effects counted per intent.
	drive  func(ctx context.Context, a *auditor, n int) ([]*Intent, error)
	oracle bool
	// judge decides the verdict.
	judge func(s *topology.AuditSpec, h []*Intent) verdict
}

// verdict is what a judge decides.
type verdict struct {
	verdict    Verdict
	why        string
	evidence   []Evidence
	incomplete bool
	steps      []Step
}

// checkTable lists the checks in the order they run (topology.AuditChecks).
var checkTable = []check{
	{name: topology.CheckLostReply, skip: never, cost: fixed(3), drive: driveLostReply, oracle: true, judge: judgeLostReply},
	{name: topology.CheckConcurrentFirst, skip: never, cost: func(s *topology.AuditSpec) int { return s.Concurrent }, drive: driveConcurrentFirst, oracle: true, judge: judgeConcurrentFirst},
	{name: topology.CheckPayloadMismatch, skip: needsN, cost: fixed(2), drive: drivePayloadMismatch, oracle: true, judge: judgePayloadMismatch},
	{name: topology.CheckInFlight, skip: never, cost: fixed(2), drive: driveInFlight, oracle: true, judge: judgeInFlight},
	{name: topology.CheckNewIntent, skip: never, cost: fixed(2), drive: driveNewIntent, oracle: true, judge: judgeNewIntent},
	{name: topology.CheckKeyScope, skip: needsTenant, cost: fixed(2), drive: driveKeyScope, oracle: true, judge: judgeKeyScope},
	{name: topology.CheckAmplification, skip: never, cost: fixed(1), drive: driveAmplification, judge: judgeAmplification},
}

func never(*topology.AuditSpec) string { return "" }

func fixed(n int) func(*topology.AuditSpec) int { return func(*topology.AuditSpec) int { return n } }

func needsN(s *topology.AuditSpec) string {
	if !strings.Contains(s.Request.Body, "{n}") {
		return "request.body has no {n}: the audit cannot send another payload under one key"
	}
	return ""
}

func needsTenant(s *topology.AuditSpec) string {
	if s.TenantHeader == "" {
		return "no tenant_header in the spec: the audit cannot send one key from two tenants"
	}
	return ""
}

// runCheck runs one check within its limits and judges it.
func (a *auditor) runCheck(ctx context.Context, c check) Result {
	start := time.Now()
	r := Result{Name: c.name, Evidence: []Evidence{}}
	if why := c.skip(a.spec); why != "" {
		r.Verdict, r.Why = Skipped, why
		return r
	}
	n := max(1, a.spec.Limits.Requests/max(1, c.cost(a.spec)))
	cctx, cancel := context.WithTimeout(ctx, a.spec.Limits.Time)
	h, err := c.drive(cctx, a, n)
	cut := cctx.Err() != nil
	cancel()
	if err != nil {
		r.Verdict, r.Incomplete, r.Why = Skipped, true, "could not run: "+err.Error()
		r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		return r
	}
	if c.oracle {
		a.settle(h)
	}
	v := c.judge(a.spec, h)
	for _, in := range h {
		r.Requests += len(in.Attempts)
	}
	if cut && v.verdict != Violated {
		v.verdict, v.incomplete = Skipped, true
		v.why = fmt.Sprintf("stopped at its time limit (limits.time %v) after %d requests; what it had: %s", a.spec.Limits.Time, r.Requests, v.why)
	}
	r.Verdict, r.Why, r.Incomplete, r.Steps = v.verdict, v.why, v.incomplete, v.steps
	if v.evidence != nil {
		r.Evidence = v.evidence
	}
	r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return r
}

// tally collects a judge's findings over a history.
type tally struct {
	bad, unsure []Evidence
	good        *Intent // one intent that held, as the example of a held check
	done        int     // intents that tested the property
}

func (t *tally) violated(in *Intent, format string, args ...any) {
	t.bad = append(t.bad, Evidence{Note: fmt.Sprintf(format, args...), Intent: in})
}

// violatedPair notes a violation of in, compared with other.
func (t *tally) violatedPair(in, other *Intent, format string, args ...any) {
	t.bad = append(t.bad, Evidence{Note: fmt.Sprintf(format, args...), Intent: in, Other: other})
}

func (t *tally) inconclusive(in *Intent, format string, args ...any) {
	t.unsure = append(t.unsure, Evidence{Note: fmt.Sprintf(format, args...), Intent: in})
}

func (t *tally) held(in *Intent) {
	t.done++
	if t.good == nil {
		t.good = in
	}
}

// verdict sums the tally up: violated if any intent was, else held if any
// intent tested the property, else incomplete (skipped, saying why).
func (t *tally) verdict(held, what string) verdict {
	switch {
	case len(t.bad) > 0:
		return verdict{verdict: Violated, why: fmt.Sprintf("%d of %d intents: %s", len(t.bad), len(t.bad)+t.done+len(t.unsure), t.bad[0].Note), evidence: t.bad}
	case t.done > 0:
		v := verdict{verdict: Held, why: fmt.Sprintf("%d intents: %s", t.done, held), evidence: []Evidence{{Note: "an intent that held", Intent: t.good}}}
		if len(t.unsure) > 0 {
			v.why += fmt.Sprintf(" (%d more could not test it: %s)", len(t.unsure), t.unsure[0].Note)
		}
		return v
	case len(t.unsure) > 0:
		return verdict{verdict: Skipped, incomplete: true, why: fmt.Sprintf("no intent could test %s: %s", what, t.unsure[0].Note), evidence: t.unsure}
	}
	return verdict{verdict: Skipped, incomplete: true, why: "no intent was sent"}
}

// failure describes why an attempt did not succeed.
func failure(at *Attempt) string {
	if at.Status != 0 {
		return fmt.Sprintf("answered %d %s", at.Status, at.Answer)
	}
	return "no answer: " + at.Error
}

// oracleOK reports whether the oracle counted the intent's effects, and
// notes it as inconclusive when not.
func (t *tally) oracleOK(in *Intent) bool {
	if in.Effects < 0 {
		t.inconclusive(in, "the oracle could not count its effects: %s", in.OracleError)
		return false
	}
	return true
}

// target spreads an intent's attempts over the instances: attempt j of
// intent i goes to (i + j) mod the number of targets, so that a retry
// reaches another instance when there is one.
func (a *auditor) target(i, j int) int { return (i + j) % len(a.proxies) }

// driveLostReply: each intent's first attempt is answered by the upstream
// and its reply lost (dropped, or the connection reset, after the answer);
// the client retries twice with the same key and body, on other instances.
func driveLostReply(ctx context.Context, a *auditor, n int) ([]*Intent, error) {
	var h []*Intent
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		lose := faultproxy.Decision{Fault: faultproxy.DropResponse, Drop: topology.DropClose, Source: "audit: lose the reply"}
		if i%2 == 1 {
			lose = faultproxy.Decision{Fault: faultproxy.ResetAfter, Source: "audit: reset after the answer"}
		}
		in := a.intent(topology.CheckLostReply, i, "retried", "", a.tenant(0), func(r *faultproxy.Request) faultproxy.Decision {
			if r.Attempt == 1 {
				return lose
			}
			return faultproxy.Decision{}
		})
		h = append(h, in)
		body := a.body(in, a.number())
		for j := range 3 {
			if ctx.Err() != nil {
				break
			}
			a.send(ctx, in, a.target(i, j), j+1, body)
		}
	}
	return h, nil
}

func judgeLostReply(s *topology.AuditSpec, h []*Intent) verdict {
	var t tally
	for _, in := range h {
		if len(in.Attempts) < 2 {
			t.inconclusive(in, "it was not retried")
			continue
		}
		first := in.Attempts[0]
		if !t.oracleOK(in) {
			continue
		}
		if !first.lost() || !first.upstreamOK() {
			// Whatever became of the first attempt (the service may have
			// crashed after its effect), one intent has one effect at most.
			if in.Effects > 1 {
				t.violated(in, "%d attempts with one key made %d effects (want 1); attempt 1: %s", len(in.Attempts), in.Effects, proxyLine(first))
			} else {
				t.inconclusive(in, "its first attempt did not reach the upstream and succeed there (%s)", proxyLine(first))
			}
			continue
		}
		retries := in.Attempts[1:]
		var results []string
		bad := false
		for _, at := range retries {
			if !at.ok() {
				t.violated(in, "the reply of attempt 1 was lost after the upstream answered %d; retry #%d %s", first.Proxy.UpstreamStatus, at.Number, failure(at))
				bad = true
				break
			}
			results = append(results, at.Result)
		}
		switch {
		case bad:
		case in.Effects != 1:
			t.violated(in, "the reply of attempt 1 was lost after the upstream answered %d, and %d retries with the same key made %d effects (want 1)", first.Proxy.UpstreamStatus, len(retries), in.Effects)
		case len(slices.Compact(slices.Clone(results))) > 1:
			t.violated(in, "the retries' answers name different results: %s", strings.Join(results, ", "))
		default:
			t.held(in)
		}
	}
	return t.verdict("each reply lost after the upstream answered, retried with the same key on another instance: one effect, the same result on every answer", "a lost reply")
}

// proxyLine sums up what the proxy did with an attempt.
func proxyLine(at *Attempt) string {
	p := at.Proxy
	if p == nil {
		return "the proxy has no record of it: " + failure(at)
	}
	s := "proxy: " + p.Fault
	if p.UpstreamStatus != 0 {
		s += fmt.Sprintf(", upstream %d", p.UpstreamStatus)
	} else if p.Error != "" {
		s += ", " + p.Error
	}
	return s
}

// driveConcurrentFirst: K attempts with one new key, spread over the
// instances, are held at the proxies until all K have arrived and then
// released together.
func driveConcurrentFirst(ctx context.Context, a *auditor, n int) ([]*Intent, error) {
	k := a.spec.Concurrent
	var h []*Intent
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		release := make(chan struct{})
		var mu sync.Mutex
		arrived := 0
		in := a.intent(topology.CheckConcurrentFirst, i, "concurrent", "", a.tenant(0), func(r *faultproxy.Request) faultproxy.Decision {
			mu.Lock()
			if arrived++; arrived == k {
				close(release)
			}
			mu.Unlock()
			return faultproxy.Decision{Hold: release, Source: "audit: hold until all arrive"}
		})
		h = append(h, in)
		body := a.body(in, a.number())
		var wg sync.WaitGroup
		for j := range k {
			wg.Go(func() { a.send(ctx, in, a.target(i, j), j+1, body) })
		}
		wg.Wait()
	}
	return h, nil
}

func judgeConcurrentFirst(s *topology.AuditSpec, h []*Intent) verdict {
	var t tally
	for _, in := range h {
		if !t.oracleOK(in) {
			continue
		}
		var owners []string
		var other *Attempt
		for _, at := range in.Attempts {
			switch {
			case at.ok():
				owners = append(owners, at.Result)
			case slices.Contains(s.InProgressStatus, at.Status):
			case other == nil:
				other = at
			}
		}
		distinct := slices.Compact(slices.Sorted(slices.Values(owners)))
		switch {
		case in.Effects > 1:
			t.violated(in, "%d requests with one new key sent at once made %d effects (want 1)", len(in.Attempts), in.Effects)
		case len(distinct) > 1:
			t.violated(in, "%d requests with one new key sent at once were answered with %d different results: %s", len(in.Attempts), len(distinct), strings.Join(distinct, ", "))
		case other != nil && other.Status != 0:
			t.violated(in, "attempt #%d %s: neither the replayed result nor an in-progress answer (in_progress_status %v)", other.Number, failure(other), s.InProgressStatus)
		case other != nil:
			t.inconclusive(in, "attempt #%d got %s", other.Number, failure(other))
		case len(owners) == 0:
			t.violated(in, "none of %d requests with one new key got the result: all were told it is in progress", len(in.Attempts))
		case in.Effects == 0:
			t.violated(in, "%d requests were answered with a result and the oracle counts no effect", len(owners))
		default:
			t.held(in)
		}
	}
	return t.verdict(fmt.Sprintf("%d requests with one new key at once, across the instances: one effect, one result; the others replayed it or were told it is in progress", s.Concurrent), "concurrent first requests")
}

// drivePayloadMismatch: a key is used, then used again, on another
// instance, with a different body.
func drivePayloadMismatch(ctx context.Context, a *auditor, n int) ([]*Intent, error) {
	var h []*Intent
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		in := a.intent(topology.CheckPayloadMismatch, i, "reused with another body", "", a.tenant(0), nil)
		h = append(h, in)
		a.send(ctx, in, a.target(i, 0), 1, a.body(in, a.number()))
		if ctx.Err() == nil {
			a.send(ctx, in, a.target(i, 1), 2, a.body(in, a.number()))
		}
	}
	return h, nil
}

func judgePayloadMismatch(s *topology.AuditSpec, h []*Intent) verdict {
	var t tally
	for _, in := range h {
		if len(in.Attempts) < 2 {
			t.inconclusive(in, "the key was not reused")
			continue
		}
		first, again := in.Attempts[0], in.Attempts[1]
		switch {
		case !first.ok():
			t.inconclusive(in, "the first request %s", failure(first))
		case !t.oracleOK(in):
		case again.ok() && again.Result == first.Result:
			t.violated(in, "the key reused with another body was answered %d with the old result %s, not refused (mismatch_status %v)", again.Status, again.Result, s.MismatchStatus)
		case again.ok():
			t.violated(in, "the key reused with another body was executed: answered %d with a new result %s (%d effects under the key)", again.Status, again.Result, in.Effects)
		case in.Effects != 1:
			t.violated(in, "the key reused with another body was refused with %d, but the key has %d effects (want 1)", again.Status, in.Effects)
		case !slices.Contains(s.MismatchStatus, again.Status):
			if again.Status == 0 {
				t.inconclusive(in, "the reuse got %s", failure(again))
			} else {
				t.violated(in, "the key reused with another body %s, not one of mismatch_status %v", failure(again), s.MismatchStatus)
			}
		default:
			t.held(in)
		}
	}
	return t.verdict(fmt.Sprintf("the key reused with another body was refused (one of %v) and not executed", s.MismatchStatus), "a reused key")
}

// inFlightOffsets are the delays after the first attempt was written to
// the upstream at which the duplicate is released, one per trial in turn.
var inFlightOffsets = []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond}

// driveInFlight: the duplicate is held at its proxy until the first
// attempt has been written to the upstream (plus an offset), so that it
// reaches the service while the first is being processed.
func driveInFlight(ctx context.Context, a *auditor, n int) ([]*Intent, error) {
	var h []*Intent
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		release := make(chan struct{})
		var once sync.Once
		free := func() { once.Do(func() { close(release) }) }
		offset := inFlightOffsets[i%len(inFlightOffsets)]
		in := a.intent(topology.CheckInFlight, i, "duplicated in flight", "", a.tenant(0), func(r *faultproxy.Request) faultproxy.Decision {
			if r.Attempt == 1 {
				return faultproxy.Decision{Source: "audit: the first", Forwarded: func(time.Duration) { time.AfterFunc(offset, free) }}
			}
			return faultproxy.Decision{Hold: release, Source: fmt.Sprintf("audit: held until the first is forwarded + %v", offset)}
		})
		h = append(h, in)
		body := a.body(in, a.number())
		var wg sync.WaitGroup
		wg.Go(func() {
			a.send(ctx, in, a.target(i, 0), 1, body)
			free() // the first never reached the upstream: do not hold the second for nothing
		})
		wg.Go(func() { a.send(ctx, in, a.target(i, 1), 2, body) })
		wg.Wait()
	}
	return h, nil
}

func judgeInFlight(s *topology.AuditSpec, h []*Intent) verdict {
	var t tally
	var fastest float64
	for _, in := range h {
		if len(in.Attempts) < 2 {
			t.inconclusive(in, "the duplicate was not sent")
			continue
		}
		first, dup := in.Attempts[0], in.Attempts[1]
		overlap := first.Proxy != nil && dup.Proxy != nil && dup.Proxy.ForwardedMS > 0 &&
			(first.Proxy.AnsweredMS == 0 || dup.Proxy.ForwardedMS < first.Proxy.AnsweredMS)
		switch {
		case !t.oracleOK(in):
		case in.Effects > 1:
			t.violated(in, "a duplicate sent while the first was in flight was executed again: %d effects (want 1)", in.Effects)
		case first.ok() && dup.ok() && first.Result != dup.Result:
			t.violated(in, "the first and its duplicate were answered with different results: %s, %s", first.Result, dup.Result)
		case !overlap:
			if first.Proxy != nil && first.Proxy.AnsweredMS > 0 {
				d := first.Proxy.AnsweredMS - first.Proxy.ForwardedMS
				if fastest == 0 || d < fastest {
					fastest = d
				}
			}
			t.inconclusive(in, "the service answered the first before the duplicate reached it (%s; duplicate: %s)", proxyLine(first), proxyLine(dup))
		case !first.ok() && !dup.ok():
			t.inconclusive(in, "neither got a result: first %s, duplicate %s", failure(first), failure(dup))
		case !dup.ok() && !slices.Contains(s.InProgressStatus, dup.Status):
			if dup.Status == 0 {
				t.inconclusive(in, "the duplicate got %s", failure(dup))
			} else {
				t.violated(in, "the duplicate sent while the first was in flight %s: neither the replayed result nor an in-progress answer (in_progress_status %v)", failure(dup), s.InProgressStatus)
			}
		case in.Effects == 0 && (first.ok() || dup.ok()):
			t.violated(in, "answered with a result, and the oracle counts no effect")
		default:
			t.held(in)
		}
	}
	v := t.verdict("a duplicate that reached the service while the first was being processed was not executed again", "a duplicate in flight")
	if v.verdict == Skipped && fastest > 0 {
		v.why += fmt.Sprintf(" (the fastest first request took %.1fms at the upstream: nothing stays in flight long enough to be duplicated)", fastest)
	}
	return v
}

// driveNewIntent: the same body is sent under two new keys.
func driveNewIntent(ctx context.Context, a *auditor, n int) ([]*Intent, error) {
	return drivePairs(ctx, a, n, topology.CheckNewIntent, func(i int, first *Intent) *Intent {
		return a.intent(topology.CheckNewIntent, i, "same body, new key", first.Key+"-new", a.tenant(0), nil)
	})
}

// drivePairs sends n pairs of intents with one body: first a new intent,
// then the one second makes of it, to another instance.
func drivePairs(ctx context.Context, a *auditor, n int, check string, second func(i int, first *Intent) *Intent) ([]*Intent, error) {
	var h []*Intent
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		x := a.intent(check, i, "first", "", a.tenant(0), nil)
		y := second(i, x)
		h = append(h, x, y)
		body := a.body(x, a.number())
		a.send(ctx, x, a.target(i, 0), 1, body)
		if ctx.Err() == nil {
			a.send(ctx, y, a.target(i, 1), 1, body)
		}
	}
	return h, nil
}

// judgePair judges intents in pairs that must be two resources: the
// same body under two keys (new-intent), one key from two tenants
// (key-scope).
func judgePair(h []*Intent, what, held string) verdict {
	var t tally
	for i := 0; i+1 < len(h); i += 2 {
		a, b := h[i], h[i+1]
		if len(a.Attempts) == 0 || len(b.Attempts) == 0 {
			t.inconclusive(b, "the pair was not sent")
			continue
		}
		x, y := a.Attempts[0], b.Attempts[0]
		switch {
		case !x.ok():
			t.inconclusive(a, "the first request %s", failure(x))
		case !t.oracleOK(a) || !t.oracleOK(b):
		case y.ok() && y.Result == x.Result:
			t.violatedPair(b, a, "%s was answered with the first's result %s: deduplicated, not a new resource (effects: first %d, second %d)", what, x.Result, a.Effects, b.Effects)
		case !y.ok() && y.Status != 0:
			t.violatedPair(b, a, "%s was refused: %s", what, failure(y))
		case !y.ok():
			t.inconclusive(b, "%s got %s", what, failure(y))
		case a.Effects != 1 || b.Effects != 1:
			t.violatedPair(b, a, "%s: effects first %d, second %d (want 1 each)", what, a.Effects, b.Effects)
		default:
			t.held(b)
		}
	}
	return t.verdict(held, what)
}

func judgeNewIntent(_ *topology.AuditSpec, h []*Intent) verdict {
	return judgePair(h, "the same body under a new key", "the same body under a new key was a new resource, with its own effect")
}

// driveKeyScope: one key is sent from two tenants.
func driveKeyScope(ctx context.Context, a *auditor, n int) ([]*Intent, error) {
	return drivePairs(ctx, a, n, topology.CheckKeyScope, func(i int, first *Intent) *Intent {
		return a.intent(topology.CheckKeyScope, i, "tenant "+a.spec.Tenants[1], first.Key, a.spec.Tenants[1], nil)
	})
}

func judgeKeyScope(s *topology.AuditSpec, h []*Intent) verdict {
	return judgePair(h, "the key from tenant "+s.Tenants[1], "one key from two tenants gave two resources, each tenant its own")
}
