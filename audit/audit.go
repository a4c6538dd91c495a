package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormsim/stormsim/faultproxy"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/topology"
)

// Options configures Run.
type Options struct {
	Spec *topology.AuditSpec
	// Log, if set, receives every proxy record as a JSON line.
	Log io.Writer
	// Progress, if set, is called as each check starts.
	Progress func(check string)
	// Nonce, if set, makes the run's keys "audit-NONCE-...": keys must be
	// new to the service, so the default is the start time in hex.
	Nonce string
}

// ErrTarget marks an audit that could not start: a target or the effect
// oracle did not answer.
var ErrTarget = errors.New("target does not answer")

// auditor is one run of the audit: its proxies, client, oracle and the
// proxies' records.
type auditor struct {
	spec       *topology.AuditSpec
	nonce      string
	epoch      time.Time
	proxies    []*faultproxy.Server
	client     *http.Client
	oracle     oracle
	n          atomic.Int64 // template numbers handed out
	plans      sync.Map     // request id -> plan
	recMu      sync.Mutex
	records    map[string]faultproxy.Record // by request id "#" attempt
	amp        atomic.Pointer[ampRun]       // the amplification step running, if any
	resultKeys []string
}

// plan decides, in the proxy, what happens to each attempt of an intent.
type plan func(r *faultproxy.Request) faultproxy.Decision

// Run audits the spec's targets: it puts a fault proxy in front of every
// instance, runs each check of the spec in order within its limits, and
// returns the report. The error is for an audit that could not run at all
// (ErrTarget for a target or oracle that does not answer); a check that
// could not finish is reported in its result.
func Run(ctx context.Context, opt Options) (*Report, error) {
	s := opt.Spec
	a := &auditor{spec: s, nonce: opt.Nonce, epoch: time.Now(), records: map[string]faultproxy.Record{}}
	if a.nonce == "" {
		a.nonce = strconv.FormatInt(a.epoch.UnixNano(), 16)
	}
	if s.Result != "" {
		a.resultKeys, _ = topology.ParseJSONPath(s.Result)
	}
	// A new connection per request: net/http would otherwise replay a
	// request that carries an Idempotency-Key on a reused connection that
	// failed, an attempt the audit did not mean to send.
	a.client = &http.Client{
		Timeout:       s.Timeout,
		Transport:     &http.Transport{DisableKeepAlives: true, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer a.client.CloseIdleConnections()
	for i, t := range s.Targets {
		p, err := faultproxy.New(faultproxy.Config{
			Upstream: t, Rule: a.rule, OnRecord: a.onRecord, Log: opt.Log, KeyHeader: s.KeyHeader,
			Epoch: a.epoch, MaxHold: s.Limits.Time, Seed: s.Seed,
		})
		if err != nil {
			a.close()
			return nil, fmt.Errorf("targets[%d]: %w", i, err)
		}
		srv, err := faultproxy.Listen(p, "127.0.0.1:0", false)
		if err != nil {
			a.close()
			return nil, err
		}
		a.proxies = append(a.proxies, srv)
	}
	defer a.close()
	o, err := newOracle(s, a.client)
	if err != nil {
		return nil, err
	}
	a.oracle = o
	defer o.close()
	if err := a.preflight(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Spec: s.File, Targets: s.Targets, Seed: s.Seed}
	for _, c := range checkTable {
		if !slices.Contains(s.Checks, c.name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		if opt.Progress != nil {
			opt.Progress(c.name)
		}
		rep.Checks = append(rep.Checks, a.runCheck(ctx, c))
	}
	rep.Status = status(rep.Checks)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, nil
}

func (a *auditor) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, p := range a.proxies {
		p.Close(ctx)
	}
}

// preflight checks that every target answers HTTP and that the oracle
// counts nothing for a key never sent, each within the spec's timeout.
func (a *auditor) preflight(ctx context.Context) error {
	for i, t := range a.spec.Targets {
		ctx, cancel := context.WithTimeout(ctx, a.spec.Timeout)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(t, "/")+a.spec.Request.Path, nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := a.client.Do(req)
		cancel()
		if err != nil {
			return fmt.Errorf("targets[%d] %s: %w within %v: %v", i, t, ErrTarget, a.spec.Timeout, err)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, a.spec.Timeout)
	defer cancel()
	key := "audit-" + a.nonce + "-never-sent"
	n, err := a.oracle.count(ctx, key, a.tenant(0))
	if err != nil {
		return fmt.Errorf("effects: %w: %v", ErrTarget, err)
	}
	if n != 0 {
		return fmt.Errorf("effects: the oracle counts %d effects for key %s, which was never sent: it cannot count a key's effects", n, key)
	}
	return nil
}

// rule is every proxy's rule: an attempt of an intent follows its plan;
// an amplification request gets its step's latency; anything else passes.
func (a *auditor) rule(r *faultproxy.Request) (faultproxy.Decision, bool) {
	if p, ok := a.plans.Load(r.ID); ok {
		return p.(plan)(r), true
	}
	if run := a.amp.Load(); run != nil {
		return run.decide(r)
	}
	return faultproxy.Decision{}, false
}

func (a *auditor) onRecord(r faultproxy.Record) {
	a.recMu.Lock()
	a.records[r.RequestID+"#"+strconv.Itoa(r.Attempt)] = r
	a.recMu.Unlock()
	if run := a.amp.Load(); run != nil {
		run.count(&r)
	}
}

// intent starts a new intent of check with its role, tenant and plan.
func (a *auditor) intent(check string, i int, role, key, tenant string, p plan) *Intent {
	if key == "" {
		key = fmt.Sprintf("audit-%s-%s-%d", a.nonce, check, i)
	}
	id := fmt.Sprintf("%s-%d-%s", check, i, role)
	in := &Intent{Role: role, Key: key, Tenant: tenant, Effects: -1, id: id}
	if p == nil {
		p = func(*faultproxy.Request) faultproxy.Decision { return faultproxy.Decision{} }
	}
	a.plans.Store(id, p)
	return in
}

// tenant returns the spec's tenant i, or "" when the spec names no tenant
// header: the service then files every request under no tenant, and the
// oracle must ask for that one.
func (a *auditor) tenant(i int) string {
	if a.spec.TenantHeader == "" {
		return ""
	}
	return a.spec.Tenants[i]
}

// body fills the request's body template for intent in with number n.
func (a *auditor) body(in *Intent, n int64) string {
	return strings.NewReplacer("{n}", strconv.FormatInt(n, 10), "{key}", in.Key).Replace(a.spec.Request.Body)
}

// number hands out a new template number.
func (a *auditor) number() int64 { return a.n.Add(1) }

// send sends attempt number of intent in to target with body, and
// records it in the intent.
func (a *auditor) send(ctx context.Context, in *Intent, target, number int, body string) *Attempt {
	at := &Attempt{RequestID: in.id, Number: number, Target: target, Body: body, SentMS: a.since()}
	defer func() {
		at.DoneMS = a.since()
		in.mu.Lock()
		in.Attempts = append(in.Attempts, at)
		in.mu.Unlock()
	}()
	s := a.spec
	req, err := http.NewRequestWithContext(ctx, s.Request.Method, a.proxies[target].URL+s.Request.Path, strings.NewReader(body))
	if err != nil {
		at.Error = err.Error()
		return at
	}
	for k, v := range s.Request.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set(s.KeyHeader, in.Key)
	if s.TenantHeader != "" && in.Tenant != "" {
		req.Header.Set(s.TenantHeader, in.Tenant)
	}
	req.Header.Set(transport.HeaderRequestID, in.id)
	req.Header.Set(transport.HeaderAttempt, strconv.Itoa(number))
	resp, err := a.client.Do(req)
	if err != nil {
		at.Error = shortError(err)
		return at
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		at.Error = "reading the answer: " + shortError(err)
		return at
	}
	at.Status, at.Answer = resp.StatusCode, oneLine(string(b))
	if at.ok() {
		at.Result = a.result(b)
	}
	return at
}

// result names the resource a success answer names: the value at the
// spec's result path, else a digest of the body.
func (a *auditor) result(body []byte) string {
	if a.spec.Result == "" {
		sum := sha256.Sum256(body)
		return "body:" + hex.EncodeToString(sum[:6])
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return "(not JSON)"
	}
	for _, k := range a.resultKeys {
		m, ok := v.(map[string]any)
		if !ok {
			return "(no " + a.spec.Result + ")"
		}
		if v, ok = m[k]; !ok {
			return "(no " + a.spec.Result + ")"
		}
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func (a *auditor) since() float64 { return float64(time.Since(a.epoch).Microseconds()) / 1000 }

// settle attaches the proxies' records to the attempts (waiting a little
// for those of requests the proxy is still finishing) and asks the oracle
// for every intent's effects.
func (a *auditor) settle(intents []*Intent) {
	deadline := time.Now().Add(2 * time.Second)
	for _, in := range intents {
		slices.SortFunc(in.Attempts, func(x, y *Attempt) int { return x.Number - y.Number })
		for _, at := range in.Attempts {
			for {
				a.recMu.Lock()
				r, ok := a.records[at.RequestID+"#"+strconv.Itoa(at.Number)]
				a.recMu.Unlock()
				if ok {
					at.Proxy = &r
					break
				}
				if time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.spec.Timeout)
		n, err := a.oracle.count(ctx, in.Key, in.Tenant)
		cancel()
		in.Effects = n
		if err != nil {
			in.OracleError = err.Error()
		}
		a.plans.Delete(in.id)
	}
}

// shortError is err without the request's method and URL, which every
// attempt of a check shares.
func shortError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return "no answer within the timeout"
		}
		err = ue.Err
	}
	return err.Error()
}
