package audit

import (
	"sync"

	"github.com/stormsim/stormsim/faultproxy"
)

// Intent is one user intent of a check: an idempotency key (and tenant)
// with every attempt the audit sent for it, and the effects the oracle
// counted for it afterwards. A check's history is its intents.
type Intent struct {
	// Role says what the intent is for in its check ("first", "tenant b").
	Role   string `json:"role,omitempty"`
	Key    string `json:"key"`
	Tenant string `json:"tenant,omitempty"`
	// Effects is what the oracle counted for the key and tenant (-1: it
	// could not count; OracleError says why).
	Effects     int        `json:"effects"`
	OracleError string     `json:"oracle_error,omitempty"`
	Attempts    []*Attempt `json:"attempts"`

	id   string     // the X-Stormsim-Request-Id of its attempts
	step int        // amplification: the step it was offered in
	mu   sync.Mutex // guards Attempts while concurrent attempts are sent
}

// Attempt is one request the audit sent, with what the proxy did with it.
// Times are milliseconds since the audit began.
type Attempt struct {
	RequestID string `json:"request_id"`
	Number    int    `json:"attempt"`
	// Target is the index of the instance the attempt went to (-1: the
	// load driver's balancer chose, in the amplification check).
	Target int    `json:"target"`
	Body   string `json:"body,omitempty"`
	// Status is the answer's status (0: no answer; Error says why);
	// Result is the resource it names (Spec.Result's value, else a digest
	// of the body), Answer the start of the body.
	Status int     `json:"status,omitempty"`
	Result string  `json:"result,omitempty"`
	Answer string  `json:"answer,omitempty"`
	Error  string  `json:"error,omitempty"`
	SentMS float64 `json:"sent_ms"`
	DoneMS float64 `json:"done_ms"`
	// Proxy is the proxy's record of the attempt: its fault line.
	Proxy *faultproxy.Record `json:"proxy,omitempty"`
}

// ok reports whether the attempt was answered with a success.
func (a *Attempt) ok() bool { return a.Status >= 200 && a.Status < 300 }

// upstreamOK reports whether the upstream answered the attempt with a
// success (whether or not the client got it).
func (a *Attempt) upstreamOK() bool {
	return a.Proxy != nil && a.Proxy.UpstreamStatus >= 200 && a.Proxy.UpstreamStatus < 300
}

// lost reports whether the proxy lost the attempt's reply after the
// upstream answered it.
func (a *Attempt) lost() bool {
	return a.Proxy != nil && a.Proxy.UpstreamStatus != 0 && !a.Proxy.Delivered &&
		(a.Proxy.Fault == faultproxy.DropResponse.String() || a.Proxy.Fault == faultproxy.ResetAfter.String())
}
