package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// spec returns an audit spec for targets with the given checks.
func spec(t *testing.T, targets []string, checks string, extra string) *topology.AuditSpec {
	t.Helper()
	y := fmt.Sprintf(`targets: [%s]
request: {method: POST, path: /orders, body: '{"sku":"sku-42","qty":{n}}', headers: {Content-Type: application/json}}
key_header: Idempotency-Key
tenant_header: X-Tenant
effects:
  http: {path: '/orders?key={key}&tenant={tenant}', count: '$.count'}
result: $.id
checks: %s
limits: {requests: 8, time: 10s}
timeout: 2s
concurrent: 4
amplification: {rate: 40, step: 500ms, latency: [0s, 300ms], client: {timeout: 150ms, retry: {max_attempts: 2}}}
%s`, strings.Join(targets, ", "), checks, extra)
	s, err := topology.ParseAuditSpec("audit.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func verdicts(rep *Report) map[string]Verdict {
	m := map[string]Verdict{}
	for _, c := range rep.Checks {
		m[c.Name] = c.Verdict
	}
	return m
}

// TestAuditTestUpstream runs the audit against the test upstream: the
// correct one holds every check, each bug violates its check with
// evidence naming the intent and the proxy's fault line.
func TestAuditTestUpstream(t *testing.T) {
	for _, tc := range []struct {
		bug      bug
		violated []string
	}{
		{correct, nil},
		{noDedup, []string{"lost-reply", "concurrent-first", "payload-mismatch", "in-flight"}},
		{memoryDedup, []string{"lost-reply", "concurrent-first", "payload-mismatch", "in-flight"}},
		{noDigest, []string{"payload-mismatch"}},
		{unscopedKey, []string{"key-scope"}},
		{checkThenAct, []string{"concurrent-first", "in-flight"}},
		{recordAfter, []string{"concurrent-first", "in-flight"}},
		{replayEverything, []string{"payload-mismatch", "new-intent", "key-scope"}},
	} {
		t.Run(string(tc.bug), func(t *testing.T) {
			t.Parallel()
			targets := startOrders(t, tc.bug, 2)
			rep, err := Run(context.Background(), Options{Spec: spec(t, targets, "[lost-reply, concurrent-first, payload-mismatch, in-flight, new-intent, key-scope]", "")})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			rep.WriteText(&buf)
			v := verdicts(rep)
			for name, got := range v {
				want := Held
				for _, n := range tc.violated {
					if n == name {
						want = Violated
					}
				}
				if got != want {
					t.Errorf("%s: %s, want %s", name, got, want)
				}
			}
			for _, c := range rep.Checks {
				if c.Verdict != Violated {
					continue
				}
				if len(c.Evidence) == 0 || c.Evidence[0].Intent == nil || len(c.Evidence[0].Intent.Attempts) == 0 || c.Evidence[0].Intent.Attempts[0].Proxy == nil {
					t.Errorf("%s violated without evidence naming an intent, its attempts and the proxy's records: %+v", c.Name, c.Evidence)
				}
			}
			wantStatus := StatusHeld
			if len(tc.violated) > 0 {
				wantStatus = StatusViolated
			}
			if rep.Status != wantStatus {
				t.Errorf("status %s, want %s", rep.Status, wantStatus)
			}
			if t.Failed() {
				t.Logf("report:\n%s", buf.String())
			}
		})
	}
}

// TestAmplification: a client with two attempts cannot double the load;
// one with four does when the answers come after its timeout.
func TestAmplification(t *testing.T) {
	targets := startOrders(t, correct, 2)
	for _, tc := range []struct {
		attempts int
		want     Verdict
	}{{2, Held}, {4, Violated}} {
		s := spec(t, targets, "[amplification]", "")
		s.Amplification.Client.Retry.MaxAttempts = tc.attempts
		rep, err := Run(context.Background(), Options{Spec: s})
		if err != nil {
			t.Fatal(err)
		}
		c := rep.Checks[0]
		if c.Verdict != tc.want || len(c.Steps) != 2 {
			t.Fatalf("%d attempts: %s (%s), steps %+v; want %s", tc.attempts, c.Verdict, c.Why, c.Steps, tc.want)
		}
		// Without added latency an answer takes far less than the 150ms
		// timeout; a loaded machine may make a few retries all the same.
		if a := c.Steps[0].Amplification; a < 0.99 || a > 1.25 {
			t.Errorf("%d attempts: without added latency %.2f attempts per intent, want about 1", tc.attempts, a)
		}
		if a := c.Steps[1].Amplification; a < float64(tc.attempts)-0.3 {
			t.Errorf("%d attempts: at +300ms against a 150ms timeout %.2f attempts per intent, want about %d", tc.attempts, a, tc.attempts)
		}
	}
}

func TestKeyScopeSkippedWithoutTenant(t *testing.T) {
	targets := startOrders(t, correct, 1)
	s := spec(t, targets, "[key-scope]", "")
	s.TenantHeader = ""
	rep, err := Run(context.Background(), Options{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; c.Verdict != Skipped || !strings.Contains(c.Why, "tenant_header") || c.Incomplete {
		t.Errorf("key-scope: %+v, want skipped because of tenant_header", c)
	}
	if rep.Status != StatusHeld {
		t.Errorf("status %s, want held", rep.Status)
	}
}

// TestDeadTarget: a target that refuses connections, or accepts them and
// never answers, is a clear error within the spec's timeout.
func TestDeadTarget(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	l.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for _, target := range []string{refused, "http://" + silent.Addr().String()} {
		start := time.Now()
		s := spec(t, []string{target}, "all", "")
		s.Timeout = 300 * time.Millisecond
		_, err := Run(context.Background(), Options{Spec: s})
		if !errors.Is(err, ErrTarget) || !strings.Contains(err.Error(), target) {
			t.Errorf("%s: error %v, want ErrTarget naming it", target, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: took %v to give up, with a 300ms timeout", target, took)
		}
	}
}

// TestSlowTarget: a target that answers the preflight but then takes
// longer than the check's time limit ends each check within its limit,
// incomplete, saying so.
func TestSlowTarget(t *testing.T) {
	t.Parallel() // three seconds of a target's waiting
	o := &orders{bug: correct, records: []map[string]*record{{}}}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		o.instance(0).ServeHTTP(w, r)
	}))
	defer slow.Close()
	s := spec(t, []string{slow.URL}, "[lost-reply, concurrent-first, payload-mismatch]", "")
	s.Limits.Time = 400 * time.Millisecond
	s.Timeout = 5 * time.Second
	rep, err := Run(context.Background(), Options{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if c.Verdict != Skipped || !c.Incomplete || !strings.Contains(c.Why, "time limit") {
			t.Errorf("%s: %s (%s), want skipped and incomplete at its time limit", c.Name, c.Verdict, c.Why)
		}
		if c.DurationMS > 400+2500 { // the limit, plus settling the records and the oracle
			t.Errorf("%s took %.0fms with a 400ms limit", c.Name, c.DurationMS)
		}
	}
	if rep.Status != StatusIncomplete {
		t.Errorf("status %s, want incomplete", rep.Status)
	}
}
