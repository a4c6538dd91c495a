package orders

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backends lists the databases the tests run against: SQLite in a temporary
// directory always, PostgreSQL too when STORMSIM_POSTGRES_DSN names one.
func backends(t *testing.T) map[string]func(t *testing.T) string {
	b := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "orders.db") },
	}
	if dsn := os.Getenv("STORMSIM_POSTGRES_DSN"); dsn != "" {
		b["postgres"] = func(*testing.T) string { return dsn }
	} else {
		t.Log("STORMSIM_POSTGRES_DSN not set: PostgreSQL not tested")
	}
	return b
}

// env is a set of service instances sharing one database, each with its own
// connection pool as separate processes would have, and a prefix that makes
// this test's keys and tenants its own in a shared PostgreSQL database.
type env struct {
	t      *testing.T
	urls   []string
	prefix string
}

func newEnv(t *testing.T, dsn string, instances int, opts Options) *env {
	t.Helper()
	var nonce [6]byte
	rand.Read(nonce[:])
	e := &env{t: t, prefix: hex.EncodeToString(nonce[:])}
	for range instances {
		db, err := Open(dsn)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(New(db, opts))
		t.Cleanup(func() { srv.Close(); db.Close() })
		e.urls = append(e.urls, srv.URL)
	}
	return e
}

// key and tenant name this test's keys and tenants.
func (e *env) key(name string) string    { return e.prefix + "-key-" + name }
func (e *env) tenant(name string) string { return e.prefix + "-tenant-" + name }

// reply is what one POST got back; err is set when no answer came.
type reply struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// post sends POST /orders to instance i.
func (e *env) post(i int, tenant, key, body string) reply {
	req, err := http.NewRequest(http.MethodPost, e.urls[i]+"/orders", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tenant != "" {
		req.Header.Set(DefaultTenantHeader, tenant)
	}
	if key != "" {
		req.Header.Set(DefaultKeyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// count asks instance 0's effect oracle how many orders (tenant, key) has.
func (e *env) count(tenant, key string) int {
	e.t.Helper()
	resp, err := http.Get(e.urls[0] + "/orders?key=" + key + "&tenant=" + tenant)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Count  int     `json:"count"`
		Orders []Order `json:"orders"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		e.t.Fatalf("GET /orders: %v", err)
	}
	if v.Count != len(v.Orders) {
		e.t.Fatalf("GET /orders: count %d but %d orders listed", v.Count, len(v.Orders))
	}
	return v.Count
}

// together runs fn(0..n-1) at once and waits for all.
func together(n int, fn func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			fn(i)
		}()
	}
	start.Done()
	done.Wait()
}

// duplicateAfter sends a request with key k to instance 0 and, delay
// later while it is still being worked on, the same request to instance 1.
func (e *env) duplicateAfter(delay time.Duration, k string) (first, second reply) {
	together(2, func(i int) {
		if i == 0 {
			first = e.post(0, "", k, bodyA)
			return
		}
		time.Sleep(delay)
		second = e.post(1, "", k, bodyA)
	})
	return first, second
}

func status(r reply) string {
	if r.err != nil {
		return "none"
	}
	return fmt.Sprint(r.status)
}

// crashOnce returns a CrashAfterEffect hook that crashes the first time only.
func crashOnce() func() bool {
	var n atomic.Int64
	return func() bool { return n.Add(1) == 1 }
}

const (
	bodyA = `{"sku":"sku-42","qty":1}`
	bodyB = `{"sku":"sku-42","qty":2}`
)

// scenario is one of the audit's situations, run against two instances
// sharing a database. run returns what was observed as a short string
// ("orders=1 second=422"); want is the correct service's observation and
// wrong the observation of each variant the scenario exposes. Variants not
// in wrong must behave as the correct service does.
type scenario struct {
	name  string
	opts  func(*Options)
	run   func(e *env) string
	want  string
	wrong map[Bug]string
}

// work is the processing time of scenarios that need overlapping requests:
// far longer than a loopback request takes even on a loaded machine.
const work = 400 * time.Millisecond

var scenarios = []scenario{
	{
		name: "retry-after-answer",
		run: func(e *env) string {
			k := e.key("1")
			e.post(0, "", k, bodyA)
			second := e.post(1, "", k, bodyA)
			return fmt.Sprintf("orders=%d second=%s replayed=%s", e.count("", k), status(second), second.header.Get(ReplayedHeader))
		},
		want: "orders=1 second=201 replayed=true",
		wrong: map[Bug]string{
			BugMemoryDedup: "orders=2 second=201 replayed=",
			BugNoDedup:     "orders=2 second=201 replayed=",
		},
	},
	{
		name: "crash-after-effect-then-retry",
		opts: func(o *Options) { o.CrashAfterEffect = crashOnce() },
		run: func(e *env) string {
			k := e.key("1")
			first := e.post(0, "", k, bodyA)
			second := e.post(0, "", k, bodyA)
			return fmt.Sprintf("orders=%d first=%s second=%s", e.count("", k), status(first), status(second))
		},
		want: "orders=1 first=none second=201",
		wrong: map[Bug]string{
			BugRecordAfterEffect: "orders=2 first=none second=201",
			BugMemoryDedup:       "orders=2 first=none second=201",
			BugNoDedup:           "orders=2 first=none second=201",
		},
	},
	{
		name: "concurrent-first",
		opts: func(o *Options) { o.Work = work },
		run: func(e *env) string {
			const k = 4
			key := e.key("1")
			replies := make([]reply, k)
			together(k, func(i int) { replies[i] = e.post(i%2, "", key, bodyA) })
			created, busy := 0, 0
			for _, r := range replies {
				switch r.status {
				case http.StatusCreated:
					created++
				case InProgressStatus:
					busy++
				}
			}
			return fmt.Sprintf("orders=%d created=%d in_progress=%d", e.count("", key), created, busy)
		},
		want: "orders=1 created=1 in_progress=3",
		wrong: map[Bug]string{
			BugCheckThenAct:      "orders=4 created=4 in_progress=0",
			BugRecordAfterEffect: "orders=4 created=4 in_progress=0",
			BugMemoryDedup:       "orders=2 created=2 in_progress=2",
			BugNoDedup:           "orders=4 created=4 in_progress=0",
		},
	},
	{
		name: "in-flight-duplicate",
		opts: func(o *Options) { o.Work = work },
		run: func(e *env) string {
			k := e.key("1")
			first, second := e.duplicateAfter(work/4, k)
			return fmt.Sprintf("orders=%d first=%s second=%s retry_after=%s",
				e.count("", k), status(first), status(second), second.header.Get("Retry-After"))
		},
		want: "orders=1 first=201 second=425 retry_after=1",
		wrong: map[Bug]string{
			BugCheckThenAct:      "orders=2 first=201 second=201 retry_after=",
			BugRecordAfterEffect: "orders=2 first=201 second=201 retry_after=",
			BugMemoryDedup:       "orders=2 first=201 second=201 retry_after=",
			BugNoDedup:           "orders=2 first=201 second=201 retry_after=",
		},
	},
	{
		// The lease runs out while the first owner works: the duplicate takes
		// the key over, and the fence keeps the first owner from writing.
		name: "lease-expired-takeover",
		// The second arrives 200 ms after the lease ended and 700 ms
		// before the first would commit: margins a loaded machine's
		// scheduling cannot eat, so the takeover always happens.
		opts: func(o *Options) { o.Work, o.Lease = time.Second, 100*time.Millisecond },
		run: func(e *env) string {
			k := e.key("1")
			first, second := e.duplicateAfter(300*time.Millisecond, k)
			return fmt.Sprintf("orders=%d first=%s second=%s", e.count("", k), status(first), status(second))
		},
		want: "orders=1 first=425 second=201",
		wrong: map[Bug]string{
			BugCheckThenAct:      "orders=2 first=201 second=201",
			BugRecordAfterEffect: "orders=2 first=201 second=201",
			BugMemoryDedup:       "orders=2 first=201 second=201",
			BugNoDedup:           "orders=2 first=201 second=201",
		},
	},
	{
		name: "payload-mismatch",
		run: func(e *env) string {
			k := e.key("1")
			e.post(0, "", k, bodyA)
			second := e.post(0, "", k, bodyB)
			return fmt.Sprintf("orders=%d second=%s", e.count("", k), status(second))
		},
		want: "orders=1 second=422",
		wrong: map[Bug]string{
			BugNoDigest: "orders=1 second=201",
			BugNoDedup:  "orders=2 second=201",
		},
	},
	{
		name: "payload-mismatch-409",
		opts: func(o *Options) { o.MismatchStatus = http.StatusConflict },
		run: func(e *env) string {
			k := e.key("1")
			e.post(0, "", k, bodyA)
			second := e.post(0, "", k, bodyB)
			var v struct{ Code string }
			json.Unmarshal(second.body, &v)
			return fmt.Sprintf("orders=%d second=%s code=%s", e.count("", k), status(second), v.Code)
		},
		want: "orders=1 second=409 code=idempotency_key_mismatch",
		wrong: map[Bug]string{
			BugNoDigest: "orders=1 second=201 code=",
			BugNoDedup:  "orders=2 second=201 code=",
		},
	},
	{
		name: "key-scope",
		run: func(e *env) string {
			k, a, b := e.key("1"), e.tenant("a"), e.tenant("b")
			e.post(0, a, k, bodyA)
			e.post(1, b, k, bodyA)
			return fmt.Sprintf("a=%d b=%d", e.count(a, k), e.count(b, k))
		},
		want:  "a=1 b=1",
		wrong: map[Bug]string{BugUnscopedKey: "a=1 b=0"},
	},
	{
		name: "new-intent",
		run: func(e *env) string {
			t := e.tenant("a")
			e.post(0, t, e.key("1"), bodyA)
			e.post(1, t, e.key("2"), bodyA)
			return fmt.Sprintf("orders=%d", e.count(t, e.key("1"))+e.count(t, e.key("2")))
		},
		want: "orders=2",
	},
	{
		name: "no-key",
		run: func(e *env) string {
			t := e.tenant("a")
			e.post(0, t, "", bodyA)
			e.post(1, t, "", bodyA)
			return fmt.Sprintf("orders=%d", e.count(t, ""))
		},
		want: "orders=2",
	},
}

// TestScenarios runs every scenario against the correct service and each
// variant: the correct service behaves as the scenario wants, each variant
// shows its mistake in the scenarios that expose it and only there.
func TestScenarios(t *testing.T) {
	for name, dsn := range backends(t) {
		t.Run(name, func(t *testing.T) {
			for _, bug := range Bugs() {
				t.Run(bug.String(), func(t *testing.T) {
					t.Parallel()
					for _, sc := range scenarios {
						t.Run(sc.name, func(t *testing.T) {
							opts := Options{Bug: bug}
							if sc.opts != nil {
								sc.opts(&opts)
							}
							e := newEnv(t, dsn(t), 2, opts)
							want, exposed := sc.wrong[bug]
							if !exposed {
								want = sc.want
							}
							if got := sc.run(e); got != want {
								t.Errorf("got  %s\nwant %s", got, want)
							}
						})
					}
				})
			}
		})
	}
}

// TestEveryBugExposed checks the table itself: each variant is caught by at
// least one scenario, so no Bug is there for nothing.
func TestEveryBugExposed(t *testing.T) {
	for _, bug := range Bugs()[1:] {
		caught := false
		for _, sc := range scenarios {
			_, ok := sc.wrong[bug]
			caught = caught || ok
		}
		if !caught {
			t.Errorf("no scenario exposes %s", bug)
		}
	}
}

// TestReplayIsTheSameAnswer checks the replayed answer byte for byte, and the
// order's own endpoint.
func TestReplayIsTheSameAnswer(t *testing.T) {
	for name, dsn := range backends(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, dsn(t), 2, Options{})
			k, tn := e.key("1"), e.tenant("a")
			first := e.post(0, tn, k, bodyA)
			second := e.post(1, tn, k, `{"qty": 1, "sku": "sku-42"}`) // same order, written differently
			if first.status != http.StatusCreated || second.status != http.StatusCreated {
				t.Fatalf("statuses %d, %d; want 201, 201", first.status, second.status)
			}
			if !bytes.Equal(first.body, second.body) {
				t.Errorf("replay body %s, first %s", second.body, first.body)
			}
			if first.header.Get(ReplayedHeader) != "" || second.header.Get(ReplayedHeader) != "true" {
				t.Errorf("%s: first %q, replay %q; want \"\", \"true\"", ReplayedHeader,
					first.header.Get(ReplayedHeader), second.header.Get(ReplayedHeader))
			}
			var o Order
			if err := json.Unmarshal(first.body, &o); err != nil {
				t.Fatal(err)
			}
			want := Order{ID: o.ID, Tenant: tn, Key: k, SKU: "sku-42", Qty: 1}
			if o != want || o.ID == 0 {
				t.Errorf("created %+v, want %+v", o, want)
			}
			resp, err := http.Get(fmt.Sprintf("%s/orders/%d", e.urls[1], o.ID))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Equal(got, first.body) {
				t.Errorf("GET /orders/%d: %d %s, want 200 %s", o.ID, resp.StatusCode, got, first.body)
			}
		})
	}
}

// TestBadRequests checks each refusal names what is wrong and writes nothing.
func TestBadRequests(t *testing.T) {
	e := newEnv(t, "sqlite://"+filepath.Join(t.TempDir(), "o.db"), 1, Options{})
	long := strings.Repeat("k", maxKeyLen+1)
	for _, tc := range []struct {
		name, key, body, path string
		method                string
		status                int
		msg                   string
	}{
		{"no sku", "k", `{"qty":1}`, "/orders", "POST", 400, "sku: required"},
		{"zero qty", "k", `{"sku":"a","qty":0}`, "/orders", "POST", 400, "qty: must be in 1..1000000, got 0"},
		{"unknown field", "k", `{"sku":"a","qty":1,"x":2}`, "/orders", "POST", 400, `unknown field "x"`},
		{"two values", "k", `{"sku":"a","qty":1}{}`, "/orders", "POST", 400, "more than one JSON value"},
		{"not json", "k", `sku=a`, "/orders", "POST", 400, "body: invalid character"},
		{"long key", long, bodyA, "/orders", "POST", 400, "Idempotency-Key: at most 255 bytes, got 256"},
		{"bad id", "", "", "/orders/x", "GET", 400, `order id "x": not an integer`},
		{"missing id", "", "", "/orders/99", "GET", 404, "order 99 not found"},
		{"wrong method", "", "", "/orders", "DELETE", 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.urls[0]+tc.path, strings.NewReader(tc.body))
			req.Header.Set(DefaultKeyHeader, tc.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var v struct{ Error string }
			json.Unmarshal(b, &v)
			if resp.StatusCode != tc.status || !strings.Contains(v.Error, tc.msg) {
				t.Errorf("%d %s, want %d with an error containing %q", resp.StatusCode, b, tc.status, tc.msg)
			}
		})
	}
	if n := e.count("", "k"); n != 0 {
		t.Errorf("refused requests wrote %d orders", n)
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t, "sqlite://"+filepath.Join(t.TempDir(), "o.db"), 1, Options{Bug: BugNoDigest})
	resp, err := http.Get(e.urls[0] + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `{"bug":"no-digest","status":"ok"}` {
		t.Errorf("healthz: %d %s", resp.StatusCode, b)
	}
}

func TestOpenRefuses(t *testing.T) {
	for _, tc := range []struct{ dsn, msg string }{
		{"", "empty DSN"},
		{"sqlite://", "no file path"},
		{"sqlite://:memory:", "in-memory SQLite"},
		{"/tmp/a.db?mode=ro", "may not contain '?'"},
		{"sqlite://" + filepath.Join(t.TempDir(), "missing", "dir", "o.db"), "orders: open"},
	} {
		db, err := Open(tc.dsn)
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", tc.dsn)
			continue
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Open(%q) = %v, want it to say %q", tc.dsn, err, tc.msg)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		msg  string
	}{
		{Options{Bug: "typo"}, `unknown bug "typo"`},
		{Options{Lease: -1}, "Lease must be >= 0"},
		{Options{Work: -1}, "Work must be >= 0"},
		{Options{MismatchStatus: 200}, "MismatchStatus must be a 4xx status, got 200"},
	} {
		if err := tc.opts.Validate(); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: Validate() = %v, want %q", tc.opts, err, tc.msg)
		}
	}
	if err := (Options{MismatchStatus: 409}).Validate(); err != nil {
		t.Errorf("409: %v", err)
	}
	got := Options{}.withDefaults()
	want := Options{Bug: BugNone, KeyHeader: "Idempotency-Key", TenantHeader: "X-Tenant", Lease: 10 * time.Second, MismatchStatus: 422}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
}

func TestParseBug(t *testing.T) {
	for _, b := range Bugs() {
		got, err := ParseBug(b.String())
		if err != nil || got != b {
			t.Errorf("ParseBug(%q) = %q, %v", b, got, err)
		}
	}
	if b, err := ParseBug(""); err != nil || b != BugNone {
		t.Errorf(`ParseBug("") = %q, %v`, b, err)
	}
	var b Bug
	if err := b.Set("nope"); err == nil || !strings.Contains(err.Error(), "check-then-act") {
		t.Errorf("Set(nope) = %v, want the list of names", err)
	}
}
