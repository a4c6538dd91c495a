package orders

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Defaults of Options' zero fields.
const (
	DefaultKeyHeader      = "Idempotency-Key"
	DefaultTenantHeader   = "X-Tenant"
	DefaultLease          = 10 * time.Second
	DefaultMismatchStatus = http.StatusUnprocessableEntity
)

// ReplayedHeader is set to "true" on an answer replayed from a stored
// idempotency record rather than produced by this request.
const ReplayedHeader = "Idempotent-Replayed"

// InProgressStatus answers a request whose key another request owns and is
// still working on (425 Too Early, with Retry-After: 1).
const InProgressStatus = http.StatusTooEarly

// Limits on what a request may carry.
const (
	maxBodyBytes = 64 << 10
	maxKeyLen    = 255
	maxSKULen    = 64
	maxQty       = 1_000_000
)

const statusCreated = http.StatusCreated

// Options configures a Service. The zero value is the correct service with
// the default headers, a 10 s lease, no processing delay and no crashes.
type Options struct {
	// Bug is the mistake to put in; "" or BugNone is the correct service.
	Bug Bug
	// KeyHeader is the request header carrying the idempotency key
	// (default "Idempotency-Key"). A request without one is not
	// idempotent: each such request writes an order.
	KeyHeader string
	// TenantHeader is the request header naming the tenant (default
	// "X-Tenant"); a request without one belongs to the tenant "".
	TenantHeader string
	// Lease is how long an owner holds a key in PROCESSING before another
	// request may take it over (default 10 s). An owner that outlives its
	// lease is fenced: its order is rolled back when a newer owner holds
	// the key.
	Lease time.Duration
	// Work is processing time spent inside the critical section, between
	// taking the key and writing the order (default 0), so in-flight
	// duplicates and concurrent first requests really overlap.
	Work time.Duration
	// CrashAfterEffect, when non-nil, is asked after each order is written
	// and before the request is finished; when it returns true the instance
	// "crashes": it writes nothing more for the request (no idempotency
	// record in BugRecordAfterEffect, whose record comes after the order),
	// forgets its memory (BugMemoryDedup) and drops the connection without
	// an answer. In the correct service the order and the record commit
	// together, so the crash only loses the answer.
	CrashAfterEffect func() bool
	// MismatchStatus is the status refusing a key reused with a different
	// payload (default 422, as the IETF idempotency-key draft says; 409 is
	// the other common choice). It must be a 4xx status.
	MismatchStatus int
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	if _, err := ParseBug(string(o.Bug)); err != nil {
		return err
	}
	switch {
	case o.Lease < 0:
		return fmt.Errorf("orders: Lease must be >= 0, got %v", o.Lease)
	case o.Work < 0:
		return fmt.Errorf("orders: Work must be >= 0, got %v", o.Work)
	case o.MismatchStatus != 0 && (o.MismatchStatus < 400 || o.MismatchStatus > 499):
		return fmt.Errorf("orders: MismatchStatus must be a 4xx status, got %d", o.MismatchStatus)
	}
	return nil
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Bug == "" {
		o.Bug = BugNone
	}
	if o.KeyHeader == "" {
		o.KeyHeader = DefaultKeyHeader
	}
	if o.TenantHeader == "" {
		o.TenantHeader = DefaultTenantHeader
	}
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.MismatchStatus == 0 {
		o.MismatchStatus = DefaultMismatchStatus
	}
	return o
}

// Service is one instance of the orders service, an http.Handler:
//
//	POST /orders        {"sku":"sku-42","qty":3} -> 201 {"id":…,"tenant":…,"key":…,"sku":…,"qty":…}
//	GET  /orders        ?key=K&tenant=T (each optional) -> 200 {"count":N,"orders":[…]}
//	GET  /orders/{id}   -> 200 the order, or 404
//	GET  /healthz       -> 200 {"status":"ok","bug":…} when the database answers
//
// Answers to a POST carrying a key, in the correct service:
//
//   - the first request for (tenant, key) writes the order: 201;
//   - a later one with the same payload gets the stored answer again, the
//     same status and body, with "Idempotent-Replayed: true";
//   - one arriving while another request owns the key (its lease not yet
//     expired) gets 425 Too Early {"code":"in_progress",…} with
//     Retry-After: 1, so that a retrying client comes back for the replay
//     (the IETF draft suggests 409, which this service keeps for the
//     mismatch when MismatchStatus is 409); nothing is written;
//   - one with a different payload gets MismatchStatus
//     {"code":"idempotency_key_mismatch",…}; nothing is written.
//
// Errors are JSON {"error": text, "code": word}. Several Services may share
// one DB; a Service is safe for concurrent use.
type Service struct {
	db   *DB
	opts Options
	mux  *http.ServeMux
	mem  memoryStore // BugMemoryDedup's records
}

// New returns an instance serving db with opts (zero fields defaulted). It
// panics if opts.Validate fails: check options from users first.
func New(db *DB, opts Options) *Service {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	s := &Service{db: db, opts: opts.withDefaults(), mux: http.NewServeMux()}
	s.mem.m = map[string]*memEntry{}
	s.mux.HandleFunc("POST /orders", s.create)
	s.mux.HandleFunc("GET /orders", s.list)
	s.mux.HandleFunc("GET /orders/{id}", s.get)
	s.mux.HandleFunc("GET /healthz", s.health)
	return s
}

// Options returns the instance's options with their defaults filled in.
func (s *Service) Options() Options { return s.opts }

// ServeHTTP routes a request to its endpoint.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Order is one order as the API shows it.
type Order struct {
	ID     int64  `json:"id"`
	Tenant string `json:"tenant"`
	Key    string `json:"key"`
	SKU    string `json:"sku"`
	Qty    int64  `json:"qty"`
}

// json encodes the order as the API answers it.
func (o Order) json() []byte {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err) // an Order always encodes
	}
	return b
}

// orderInput is a POST /orders body.
type orderInput struct {
	SKU string `json:"sku"`
	Qty int64  `json:"qty"`
}

// digest is the payload digest compared on a reused key: a hash of the
// order's fields, so formatting and field order do not matter.
func (in orderInput) digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "%q\x00%d", in.SKU, in.Qty)
	return hex.EncodeToString(h.Sum(nil))
}

// readOrder decodes and checks a POST /orders body.
func readOrder(w http.ResponseWriter, r *http.Request) (orderInput, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	var in orderInput
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return in, errors.New("body: more than one JSON value")
	}
	switch {
	case in.SKU == "":
		return in, errors.New("body: sku: required")
	case len(in.SKU) > maxSKULen:
		return in, fmt.Errorf("body: sku: at most %d bytes, got %d", maxSKULen, len(in.SKU))
	case in.Qty < 1 || in.Qty > maxQty:
		return in, fmt.Errorf("body: qty: must be in 1..%d, got %d", maxQty, in.Qty)
	}
	return in, nil
}

// answer is what a POST is answered with.
type answer struct {
	status     int
	body       []byte
	replayed   bool
	retryAfter time.Duration // > 0: a Retry-After header
}

// errCrashed reports that CrashAfterEffect decided the instance crashed.
var errCrashed = errors.New("crashed after the effect")

// create handles POST /orders.
func (s *Service) create(w http.ResponseWriter, r *http.Request) {
	in, err := readOrder(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	tenant, key := r.Header.Get(s.opts.TenantHeader), r.Header.Get(s.opts.KeyHeader)
	if len(key) > maxKeyLen {
		writeError(w, http.StatusBadRequest, "bad_request",
			fmt.Sprintf("%s: at most %d bytes, got %d", s.opts.KeyHeader, maxKeyLen, len(key)))
		return
	}
	// The work goes on when the client goes away, as in most servers: that is
	// exactly when a retry meets a request whose effect is still to come.
	ctx := context.WithoutCancel(r.Context())
	var a answer
	switch {
	case key == "" || s.opts.Bug == BugNoDedup:
		a, err = s.createUnkeyed(ctx, tenant, key, in)
	case s.opts.Bug == BugCheckThenAct:
		a, err = s.createCheckThenAct(ctx, tenant, key, in)
	case s.opts.Bug == BugRecordAfterEffect:
		a, err = s.createRecordAfterEffect(ctx, tenant, key, in)
	case s.opts.Bug == BugMemoryDedup:
		a, err = s.createMemoryDedup(ctx, tenant, key, in)
	default:
		a, err = s.createIdempotent(ctx, tenant, key, in)
	}
	switch {
	case errors.Is(err, errCrashed):
		panic(http.ErrAbortHandler) // net/http drops the connection without an answer
	case err != nil:
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if a.replayed {
		h.Set(ReplayedHeader, "true")
	}
	if a.retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((a.retryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(a.status)
	w.Write(a.body)
}

// work spends the configured processing time.
func (s *Service) work() {
	if s.opts.Work > 0 {
		time.Sleep(s.opts.Work)
	}
}

// crashed asks CrashAfterEffect whether the instance crashes now.
func (s *Service) crashed() bool {
	return s.opts.CrashAfterEffect != nil && s.opts.CrashAfterEffect()
}

func created(body []byte) answer { return answer{status: statusCreated, body: body} }

func replay(status int, body []byte) answer {
	return answer{status: status, body: body, replayed: true}
}

// inProgress is the answer to a duplicate while another request owns the
// key: 425 Too Early with Retry-After: 1, which a retrying client (stormsim's
// in_progress class among them) retries after the hint, to be answered with
// the replay once the owner is done. 409 is kept for the payload mismatch
// (when MismatchStatus selects it), so the two never read alike.
func inProgress() answer {
	return answer{status: InProgressStatus, retryAfter: time.Second,
		body: errorBody("in_progress", "a request with this idempotency key is still being processed; retry later")}
}

// mismatch is the answer to a key reused with a different payload.
func (s *Service) mismatch() answer {
	return answer{status: s.opts.MismatchStatus,
		body: errorBody("idempotency_key_mismatch", "this idempotency key was already used with a different request body")}
}

// createIdempotent is the correct service (and, with the key's tenant or the
// digest comparison left out, BugUnscopedKey and BugNoDigest).
func (s *Service) createIdempotent(ctx context.Context, tenant, key string, in orderInput) (answer, error) {
	recTenant := tenant
	if s.opts.Bug == BugUnscopedKey {
		recTenant = ""
	}
	checkDigest := s.opts.Bug != BugNoDigest
	digest := in.digest()
	now := time.Now()
	won, err := s.db.claim(ctx, recTenant, key, digest, now.Add(s.opts.Lease))
	if err != nil {
		return answer{}, err
	}
	fence := int64(1)
	if !won {
		rec, found, err := s.db.readRecord(ctx, recTenant, key)
		switch {
		case err != nil:
			return answer{}, err
		case !found:
			return answer{}, errors.New("key record vanished after a failed claim")
		case checkDigest && rec.digest != digest:
			return s.mismatch(), nil
		case rec.state == stateDone:
			return replay(rec.status, rec.body), nil
		case rec.leaseUntil.After(now):
			return inProgress(), nil
		}
		ok, err := s.db.takeOver(ctx, recTenant, key, rec.fence, now, now.Add(s.opts.Lease))
		if err != nil {
			return answer{}, err
		}
		if !ok {
			return inProgress(), nil
		}
		fence = rec.fence + 1
	}
	s.work()
	_, body, err := s.db.complete(ctx, recTenant, tenant, key, digest, fence, in)
	if errors.Is(err, errFenced) {
		rec, found, err := s.db.readRecord(ctx, recTenant, key)
		if err != nil {
			return answer{}, err
		}
		if found && rec.state == stateDone {
			return replay(rec.status, rec.body), nil
		}
		return inProgress(), nil
	}
	if err != nil {
		return answer{}, err
	}
	if s.crashed() {
		return answer{}, errCrashed
	}
	return created(body), nil
}

// createUnkeyed writes an order with no deduplication: a request without a
// key, or any request under BugNoDedup.
func (s *Service) createUnkeyed(ctx context.Context, tenant, key string, in orderInput) (answer, error) {
	s.work()
	o, err := s.db.insertOrder(ctx, s.db.sql, tenant, key, in.digest(), in)
	if err != nil {
		return answer{}, err
	}
	if s.crashed() {
		return answer{}, errCrashed
	}
	return created(o.json()), nil
}

// createCheckThenAct is BugCheckThenAct: look for the order, then write it,
// with nothing making the two one step.
func (s *Service) createCheckThenAct(ctx context.Context, tenant, key string, in orderInput) (answer, error) {
	digest := in.digest()
	o, oldDigest, found, err := s.db.findOrder(ctx, tenant, key)
	if err != nil {
		return answer{}, err
	}
	if found {
		if oldDigest != digest {
			return s.mismatch(), nil
		}
		return replay(statusCreated, o.json()), nil
	}
	s.work()
	o, err = s.db.insertOrder(ctx, s.db.sql, tenant, key, digest, in)
	if err != nil {
		return answer{}, err
	}
	if s.crashed() {
		return answer{}, errCrashed
	}
	return created(o.json()), nil
}

// createRecordAfterEffect is BugRecordAfterEffect: the order first, the
// record in a later statement.
func (s *Service) createRecordAfterEffect(ctx context.Context, tenant, key string, in orderInput) (answer, error) {
	digest := in.digest()
	rec, found, err := s.db.readRecord(ctx, tenant, key)
	if err != nil {
		return answer{}, err
	}
	if found {
		if rec.digest != digest {
			return s.mismatch(), nil
		}
		return replay(rec.status, rec.body), nil
	}
	s.work()
	o, err := s.db.insertOrder(ctx, s.db.sql, tenant, key, digest, in)
	if err != nil {
		return answer{}, err
	}
	if s.crashed() {
		return answer{}, errCrashed
	}
	body := o.json()
	if err := s.db.writeDoneRecord(ctx, tenant, key, digest, body); err != nil {
		return answer{}, err
	}
	return created(body), nil
}

// memoryStore is BugMemoryDedup's per-instance idempotency records.
type memoryStore struct {
	mu sync.Mutex
	m  map[string]*memEntry
}

// memEntry is one in-memory record; body is nil while processing.
type memEntry struct {
	digest string
	body   []byte
}

// createMemoryDedup is BugMemoryDedup: the correct protocol, with the
// records in this instance's memory instead of the shared database.
func (s *Service) createMemoryDedup(ctx context.Context, tenant, key string, in orderInput) (answer, error) {
	digest := in.digest()
	k := tenant + "\x00" + key
	s.mem.mu.Lock()
	e, ok := s.mem.m[k]
	if !ok {
		e = &memEntry{digest: digest}
		s.mem.m[k] = e
	}
	var a answer
	switch {
	case !ok:
	case e.digest != digest:
		a = s.mismatch()
	case e.body == nil:
		a = inProgress()
	default:
		a = replay(statusCreated, e.body)
	}
	s.mem.mu.Unlock()
	if ok {
		return a, nil
	}
	s.work()
	o, err := s.db.insertOrder(ctx, s.db.sql, tenant, key, digest, in)
	if err != nil {
		s.mem.mu.Lock()
		delete(s.mem.m, k)
		s.mem.mu.Unlock()
		return answer{}, err
	}
	body := o.json()
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	if s.crashed() {
		clear(s.mem.m) // a crashed process comes back with empty memory
		return answer{}, errCrashed
	}
	e.body = body
	return created(body), nil
}

// list handles GET /orders: the effect oracle. key and tenant filter when
// present (an empty value matches the empty key or tenant); count is exact,
// the list holds at most the first 1000 orders.
func (s *Service) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var tenant, key *string
	if v, ok := q["tenant"]; ok {
		tenant = &v[0]
	}
	if v, ok := q["key"]; ok {
		key = &v[0]
	}
	count, list, err := s.db.listOrders(r.Context(), tenant, key)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Count  int     `json:"count"`
		Orders []Order `json:"orders"`
	}{count, list})
}

// get handles GET /orders/{id}.
func (s *Service) get(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("order id %q: not an integer", r.PathValue("id")))
		return
	}
	o, found, err := s.db.getOrder(r.Context(), id)
	switch {
	case err != nil:
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	case !found:
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("order %d not found", id))
	default:
		writeJSON(w, http.StatusOK, o)
	}
}

// health handles GET /healthz: 200 when the database answers a ping.
func (s *Service) health(w http.ResponseWriter, r *http.Request) {
	if err := s.db.sql.PingContext(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "bug": s.opts.Bug.String()})
}

// errorBody is the JSON of an error answer.
func errorBody(code, msg string) []byte {
	b, _ := json.Marshal(map[string]string{"error": msg, "code": code})
	return b
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorBody(code, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
