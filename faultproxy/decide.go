package faultproxy

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/topology"
)

// Fault is what the proxy does to one request.
type Fault uint8

// The faults, in the order one draw picks among them.
const (
	None Fault = iota
	ResetBefore
	Blackhole
	Error
	ResetAfter
	DropResponse
)

var faultNames = [...]string{"none", "reset_before", "blackhole", "error", "reset_after", "drop_response"}

// String returns the fault's name as records and metrics write it.
func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "unknown"
}

// Forwards reports whether a request with the fault reaches the upstream.
func (f Fault) Forwards() bool { return f == None || f == ResetAfter || f == DropResponse }

// Request is what a Rule sees of a request, before anything is done to it.
type Request struct {
	// Seq numbers requests in the order they arrived at the proxy, from 1.
	Seq uint64
	// ID and Attempt are the X-Stormsim-Request-Id and X-Stormsim-Attempt
	// headers (empty and 0 when absent); Key is the idempotency key header.
	ID      string
	Attempt int
	Key     string
	Method  string
	Path    string
	Header  http.Header
	// At is the arrival, since the proxy's epoch.
	At time.Duration
}

// Decision is what happens to one request.
type Decision struct {
	Fault Fault
	// Drop is how DropResponse drops: topology.DropClose (the default) or
	// topology.DropHold.
	Drop topology.DropMode
	// RetryAfter, for Error, is sent as Retry-After (whole seconds).
	RetryAfter time.Duration
	// LatencyAdd delays forwarding; LatencyReply delays the answer.
	LatencyAdd, LatencyReply time.Duration
	// Hold, if not nil, holds the request before it is forwarded (after
	// LatencyAdd) until Hold is closed, the client gives up or MaxHold.
	Hold <-chan struct{}
	// Forwarded, if not nil, is called once the request has been written
	// to the upstream, with the time since the epoch.
	Forwarded func(at time.Duration)
	// Source says who decided: "faults[2]", "rule" or a rule's own label.
	Source string
}

// Rule decides a request in code. It returns ok false to leave the
// request to the fault lines. It is called from the request's goroutine,
// concurrently for concurrent requests.
type Rule func(r *Request) (d Decision, ok bool)

// line is one fault of the configuration, ready to match.
type line struct {
	topology.ProxyFault
	source string
	cum    [5]float64 // cumulative probabilities of ResetBefore..DropResponse
}

func newLines(faults []topology.ProxyFault) []line {
	ls := make([]line, len(faults))
	for i, f := range faults {
		l := line{ProxyFault: f, source: "faults[" + strconv.Itoa(i) + "]"}
		sum := 0.0
		for j, p := range []float64{f.ResetBefore, f.Blackhole, f.ErrorRate, f.ResetAfter, f.DropResponse} {
			sum += p
			l.cum[j] = sum
		}
		ls[i] = l
	}
	return ls
}

// matches reports whether the line applies to r.
func (l *line) matches(r *Request) bool {
	if r.At < l.At || l.For > 0 && r.At >= l.At+l.For {
		return false
	}
	return (l.Method == "" || l.Method == r.Method) && strings.HasPrefix(r.Path, l.Path)
}

// decide applies the lines to r: latencies add up, and the first line
// whose draw falls in one of its outcomes decides the fault.
func decide(lines []line, seed uint64, r *Request) Decision {
	var d Decision
	for i := range lines {
		l := &lines[i]
		if !l.matches(r) {
			continue
		}
		d.LatencyAdd += l.LatencyAdd
		d.LatencyReply += l.LatencyReply
		if d.Fault != None {
			continue
		}
		u := draw(seed, i, r)
		for j, c := range l.cum {
			if u < c {
				d.Fault, d.Source = Fault(j+1), l.source
				d.Drop, d.RetryAfter = l.Drop, l.RetryAfter
				break
			}
		}
	}
	return d
}

// draw is the uniform number in [0, 1) of line i for request r: a hash of
// the seed, the line, and the request's id and attempt (its arrival number
// when it has no id), mixed by SplitMix64's finalizer.
func draw(seed uint64, i int, r *Request) float64 {
	h := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(i))
	binary.LittleEndian.PutUint64(b[16:], uint64(r.Attempt))
	h.Write(b[:])
	if r.ID != "" {
		h.Write([]byte(r.ID))
	} else {
		binary.LittleEndian.PutUint64(b[:8], r.Seq)
		h.Write(b[:8])
	}
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / math.Exp2(53)
}
