package audit

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// bug is a classic idempotency bug of the test upstream.
type bug string

const (
	correct          bug = "none"
	noDedup          bug = "no-dedup"
	memoryDedup      bug = "memory-dedup"
	noDigest         bug = "no-digest"
	unscopedKey      bug = "unscoped-key"
	checkThenAct     bug = "check-then-act"
	recordAfter      bug = "record-after-effect"
	replayEverything bug = "dedup-on-payload"
)

// orders is the test upstream: a tiny orders service whose instances
// share one store of orders, with its idempotency records shared too
// (or per instance, with memoryDedup). It stands in for a real service
// while the audit is developed; examples/orders is the real one.
type orders struct {
	bug  bug
	work time.Duration // the effect's duration

	mu      sync.Mutex
	orders  []order
	records []map[string]*record // per instance with memoryDedup, else [0]
}

type order struct {
	id          int
	tenant, key string
}

type record struct {
	digest string
	done   bool
	status int
	body   []byte
}

func (o *orders) instance(i int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			o.count(w, r)
		case http.MethodPost:
			o.create(w, r, i)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
}

func (o *orders) count(w http.ResponseWriter, r *http.Request) {
	key, tenant := r.URL.Query().Get("key"), r.URL.Query().Get("tenant")
	o.mu.Lock()
	n := 0
	for _, x := range o.orders {
		if x.key == key && x.tenant == tenant {
			n++
		}
	}
	o.mu.Unlock()
	fmt.Fprintf(w, `{"count": %d}`, n)
}

func (o *orders) create(w http.ResponseWriter, r *http.Request, inst int) {
	body, _ := io.ReadAll(r.Body)
	key, tenant := r.Header.Get("Idempotency-Key"), r.Header.Get("X-Tenant")
	sum := sha256.Sum256(body)
	digest := fmt.Sprintf("%x", sum[:8])
	rk := tenant + "\x00" + key
	switch o.bug {
	case unscopedKey:
		rk = key
	case replayEverything:
		rk = digest
	}
	o.mu.Lock()
	recs := o.records[0]
	if o.bug == memoryDedup {
		recs = o.records[inst]
	}
	if o.bug == noDedup {
		id := o.effectLocked(tenant, key)
		o.mu.Unlock()
		writeOrder(w, id)
		return
	}
	if r, ok := recs[rk]; ok {
		rec := *r // read under the lock: its owner completes it under the lock
		o.mu.Unlock()
		switch {
		case rec.digest != digest && o.bug != noDigest && o.bug != replayEverything:
			http.Error(w, "key reused with another payload", http.StatusUnprocessableEntity)
		case !rec.done:
			http.Error(w, "in progress", http.StatusConflict)
		default:
			w.WriteHeader(rec.status)
			w.Write(rec.body)
		}
		return
	}
	rec := &record{digest: digest}
	switch o.bug {
	case checkThenAct:
		// The record is inserted only after a gap: a concurrent request
		// checks, finds none, and acts too.
		o.mu.Unlock()
		time.Sleep(o.work)
		o.mu.Lock()
		recs[rk] = rec
	case recordAfter:
		o.mu.Unlock()
		time.Sleep(o.work)
		o.mu.Lock()
		id := o.effectLocked(tenant, key)
		rec.done, rec.status, rec.body = true, http.StatusCreated, orderJSON(id)
		recs[rk] = rec
		o.mu.Unlock()
		writeOrder(w, id)
		return
	default:
		recs[rk] = rec
	}
	o.mu.Unlock()
	time.Sleep(o.work)
	o.mu.Lock()
	id := o.effectLocked(tenant, key)
	rec.done, rec.status, rec.body = true, http.StatusCreated, orderJSON(id)
	o.mu.Unlock()
	writeOrder(w, id)
}

func (o *orders) effectLocked(tenant, key string) int {
	id := len(o.orders) + 1
	o.orders = append(o.orders, order{id: id, tenant: tenant, key: key})
	return id
}

func orderJSON(id int) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "status": "created"})
	return b
}

func writeOrder(w http.ResponseWriter, id int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(orderJSON(id))
}

// startOrders starts n instances of the test upstream with bug b.
func startOrders(t *testing.T, b bug, n int) []string {
	o := &orders{bug: b, work: 20 * time.Millisecond}
	var urls []string
	for i := range n {
		o.records = append(o.records, map[string]*record{})
		srv := httptest.NewServer(o.instance(i))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	return urls
}
