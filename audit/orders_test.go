package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/audit"
	"github.com/stormsim/stormsim/examples/orders"
	"github.com/stormsim/stormsim/topology"
)

// startOrders starts two instances of the reference orders service with
// bug b, sharing one SQLite database, and returns their URLs and the
// database's path.
func startOrders(t *testing.T, b orders.Bug) ([]string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "orders.db")
	return startOrdersOn(t, b, "sqlite://"+path), path
}

// startOrdersOn starts two instances of the reference orders service with
// bug b on the database dsn, each with its own connection pool as two
// processes would have, and returns their URLs.
func startOrdersOn(t *testing.T, b orders.Bug, dsn string) []string {
	t.Helper()
	// Work keeps a first request in flight long enough for a duplicate
	// to reach the service while it is processed.
	opts := orders.Options{Bug: b, Work: 30 * time.Millisecond}
	var urls []string
	for range 2 {
		db, err := orders.Open(dsn)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(orders.New(db, opts))
		t.Cleanup(func() { srv.Close(); db.Close() })
		urls = append(urls, srv.URL)
	}
	return urls
}

// TestAuditOrdersPostgres runs the audit against the reference service on
// PostgreSQL, with the SQL oracle querying the same database: the correct
// service holds, and per-instance memory dedup violates lost-reply.
// make test-postgres starts a throwaway PostgreSQL and sets the DSN (CI
// runs it); the audit's keys carry a per-run nonce, so a shared database
// is fine.
func TestAuditOrdersPostgres(t *testing.T) {
	dsn := os.Getenv("STORMSIM_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("STORMSIM_POSTGRES_DSN not set: make test-postgres runs this against a throwaway PostgreSQL")
	}
	effects := "sql: {db: '" + dsn + "', query: 'SELECT count(*) FROM orders WHERE tenant = :tenant AND idem_key = :key'}"
	for _, tc := range []struct {
		name     string
		bug      orders.Bug
		violated []string
	}{
		{"correct", orders.BugNone, nil},
		{"memory-dedup", orders.BugMemoryDedup, []string{topology.CheckLostReply, topology.CheckConcurrentFirst}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := exampleSpec(t, startOrdersOn(t, tc.bug, dsn), effects, "[lost-reply, concurrent-first, key-scope]")
			rep, err := audit.Run(context.Background(), audit.Options{Spec: s})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range rep.Checks {
				want := audit.Held
				if slices.Contains(tc.violated, c.Name) {
					want = audit.Violated
				}
				if c.Verdict != want {
					t.Errorf("%s: %s (%s), want %s", c.Name, c.Verdict, c.Why, want)
				}
			}
		})
	}
}

// exampleSpec is examples/orders/audit.yaml with the targets replaced,
// smaller limits (a CI test), and the given effects and checks.
func exampleSpec(t *testing.T, targets []string, effects, checks string) *topology.AuditSpec {
	t.Helper()
	data, err := os.ReadFile("../examples/orders/audit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(data)
	y = strings.Replace(y, "targets: [http://127.0.0.1:8081, http://127.0.0.1:8082]", "targets: ["+strings.Join(targets, ", ")+"]", 1)
	if effects != "" {
		i, j := strings.Index(y, "effects:"), strings.Index(y, "checks:")
		y = y[:i] + "effects:\n  " + effects + "\n" + y[j:]
	}
	y = strings.Replace(y, "checks: all", "checks: "+checks, 1)
	if i := strings.Index(y, "\namplification:"); i >= 0 {
		y = y[:i+1] // replaced below by a shorter run
	}
	y += `result: $.id
limits: {requests: 8, time: 15s}
concurrent: 4
amplification:
  rate: 40
  step: 600ms
  latency: [0s, 400ms]
  client: {timeout: 200ms, retry: {max_attempts: 2, backoff: {initial: 10ms, jitter: full}}}
`
	s, err := topology.ParseAuditSpec("audit.yaml", []byte(y))
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if !slices.Contains(s.Targets, targets[0]) {
		t.Fatalf("the example spec's targets were not replaced: %v", s.Targets)
	}
	return s
}

// TestAuditOrders is the audit's table test against the reference orders
// service (examples/orders): two instances sharing one SQLite database.
// The correct service holds every check; each bug violates the check that
// exists to catch it (and those it also breaks), with evidence; every
// other check holds.
func TestAuditOrders(t *testing.T) {
	const (
		lost    = topology.CheckLostReply
		conc    = topology.CheckConcurrentFirst
		payload = topology.CheckPayloadMismatch
		flight  = topology.CheckInFlight
		scope   = topology.CheckKeyScope
	)
	all := "[lost-reply, concurrent-first, payload-mismatch, in-flight, new-intent, key-scope]"
	for _, tc := range []struct {
		name     string
		bug      orders.Bug
		effects  string // "": the example's HTTP oracle
		checks   string
		violated []string
	}{
		{name: "correct", bug: orders.BugNone, checks: "all"},
		{name: "correct, SQL oracle", bug: orders.BugNone, checks: "[lost-reply, concurrent-first, key-scope]",
			effects: "sql: {db: 'sqlite://DB', query: 'SELECT count(*) FROM orders WHERE tenant = :tenant AND idem_key = :key'}"},
		{name: "check-then-act", bug: orders.BugCheckThenAct, checks: all, violated: []string{conc, flight}},
		{name: "record-after-effect", bug: orders.BugRecordAfterEffect, checks: all, violated: []string{conc, flight}},
		{name: "memory-dedup", bug: orders.BugMemoryDedup, checks: all, violated: []string{lost, conc, payload, flight}},
		{name: "unscoped-key", bug: orders.BugUnscopedKey, checks: all, violated: []string{scope}},
		{name: "no-digest", bug: orders.BugNoDigest, checks: all, violated: []string{payload}},
		{name: "no-dedup", bug: orders.BugNoDedup, checks: all, violated: []string{lost, conc, payload, flight}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each its own database and instances; about a second each, waiting
			targets, db := startOrders(t, tc.bug)
			s := exampleSpec(t, targets, strings.Replace(tc.effects, "DB", db, 1), tc.checks)
			rep, err := audit.Run(context.Background(), audit.Options{Spec: s})
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			rep.WriteText(&text)
			if len(rep.Checks) != len(s.Checks) {
				t.Errorf("%d checks reported, want %d", len(rep.Checks), len(s.Checks))
			}
			for _, c := range rep.Checks {
				want := audit.Held
				if slices.Contains(tc.violated, c.Name) {
					want = audit.Violated
				}
				if c.Verdict != want {
					t.Errorf("%s: %s (%s), want %s", c.Name, c.Verdict, c.Why, want)
				}
				if c.Verdict == audit.Violated {
					e := c.Evidence
					if len(e) == 0 || e[0].Intent == nil || e[0].Intent.Key == "" || len(e[0].Intent.Attempts) == 0 || e[0].Intent.Attempts[0].Proxy == nil {
						t.Errorf("%s: violated without evidence naming the key, its attempts and the proxy's lines: %+v", c.Name, e)
					}
				}
			}
			want := audit.StatusHeld
			if len(tc.violated) > 0 {
				want = audit.StatusViolated
			}
			if rep.Status != want {
				t.Errorf("status %s, want %s", rep.Status, want)
			}
			if t.Failed() {
				t.Logf("report:\n%s", text.String())
			}
		})
	}
}

// ExampleRun audits two instances of the reference orders service that
// share one database but keep their idempotency records in memory: a
// retry that reaches the other instance writes a second order.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "audit-example")
	defer os.RemoveAll(dir)
	db, err := orders.Open("sqlite://" + filepath.Join(dir, "orders.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	var targets []string
	for range 2 {
		srv := httptest.NewServer(orders.New(db, orders.Options{Bug: orders.BugMemoryDedup}))
		defer srv.Close()
		targets = append(targets, srv.URL)
	}
	spec, err := topology.ParseAuditSpec("audit.yaml", []byte(`targets: [`+strings.Join(targets, ", ")+`]
request: {path: /orders, body: '{"sku":"sku-42","qty":{n}}', headers: {Content-Type: application/json}}
effects: {http: {path: '/orders?key={key}&tenant={tenant}', count: '$.count'}}
result: $.id
checks: [lost-reply]
limits: {requests: 3}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := audit.Run(context.Background(), audit.Options{Spec: spec})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := rep.Checks[0]
	fmt.Println(rep.Status, c.Name, c.Verdict)
	fmt.Println(c.Evidence[0].Intent.Effects, "effects for one intent")
	// Output:
	// violated lost-reply violated
	// 2 effects for one intent
}
