package driver

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/internal/testnet"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
)

func TestClassifyStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		h      map[string]string
		want   policies.Outcome
		after  time.Duration
		dont   bool
	}{
		{200, nil, policies.OK, 0, false},
		{204, nil, policies.OK, 0, false},
		{503, map[string]string{"Retry-After": "2"}, policies.Unavailable, 2 * time.Second, false},
		{503, map[string]string{"Retry-After": "2", transport.HeaderRetryAfterMs: "125.5"}, policies.Unavailable, 125500 * time.Microsecond, false},
		{429, map[string]string{transport.HeaderDontRetry: "1"}, policies.Unavailable, 0, true},
		{504, nil, policies.Timeout, 0, false},
		{408, nil, policies.Timeout, 0, false},
		{409, nil, policies.Conflict, 0, false},
		{425, map[string]string{transport.HeaderRetryAfterMs: "100"}, policies.InProgress, 100 * time.Millisecond, false},
		{500, nil, policies.Error, 0, false},
		{404, nil, policies.Error, 0, false},
		// An emulated service names its class; a 503 for an injected
		// "unavailable" error and a 500 agree with the header.
		{500, map[string]string{transport.HeaderOutcome: "unavailable"}, policies.Unavailable, 0, false},
		// A class header cannot turn a success into a failure.
		{200, map[string]string{transport.HeaderOutcome: "error"}, policies.OK, 0, false},
		// Retry-After as an HTTP date is not supported: no delay.
		{503, map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, policies.Unavailable, 0, false},
	} {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		a := transport.ClassifyStatus(tc.status, h)
		if a.Outcome != tc.want || a.RetryAfter != tc.after || a.DontRetry != tc.dont {
			t.Errorf("ClassifyStatus(%d, %v) = %v %v %v; want %v %v %v", tc.status, tc.h, a.Outcome, a.RetryAfter, a.DontRetry, tc.want, tc.after, tc.dont)
		}
	}
}

func FuzzRetryAfterRoundTrip(f *testing.F) {
	for _, ms := range []int64{0, 1, 999, 1000, 1001, 123456} {
		f.Add(ms*1000, false)
	}
	f.Add(int64(7), true)
	f.Fuzz(func(t *testing.T, us int64, dont bool) {
		if us < 0 || us > int64(24*time.Hour/time.Microsecond) {
			return
		}
		d := time.Duration(us) * time.Microsecond
		h := http.Header{}
		transport.SetRetryAfter(h, d, dont)
		got, gotDont := transport.ParseRetryAfter(h)
		if got != d || gotDont != dont {
			t.Fatalf("SetRetryAfter(%v, %v) parsed back as %v, %v (headers %v)", d, dont, got, gotDont, h)
		}
		if d > 0 {
			// The whole-second header never promises a retry sooner than d.
			h.Del(transport.HeaderRetryAfterMs)
			if s, _ := transport.ParseRetryAfter(h); s < d {
				t.Fatalf("Retry-After %v is sooner than %v", s, d)
			}
		}
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "12.5", "-1", "1e300", "NaN", "Inf", "abc"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, ms, secs string) {
		h := http.Header{}
		h.Set(transport.HeaderRetryAfterMs, ms)
		h.Set("Retry-After", secs)
		if d, _ := transport.ParseRetryAfter(h); d < 0 {
			t.Fatalf("negative delay %v from %q, %q", d, ms, secs)
		}
	})
}

// TestTransportFailuresAreClassified sends single attempts at targets that
// refuse, reset, and stall, and checks each is counted as its kind.
func TestTransportFailuresAreClassified(t *testing.T) {
	// A port held bound but not listening refuses every connection; a
	// listener closed at once would free its port for the next Listen
	// below, so "refused" could reach the reset listener (seen in CI).
	refused := "http://" + testnet.ClosedPort(t)
	// reset accepts, reads the request, and closes with RST.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			c.Read(buf)
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	slow := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	})
	client := &http.Client{Transport: transport.NewHTTPTransport(4)}
	defer client.CloseIdleConnections()
	for _, tc := range []struct {
		name    string
		url     string
		timeout time.Duration
		kind    transport.ErrorKind
		outcome policies.Outcome
	}{
		{"refused", refused, time.Second, transport.KindConnect, policies.Unavailable},
		{"reset", "http://" + ln.Addr().String(), time.Second, transport.KindReset, policies.Timeout},
		{"slow", slow.URL, 50 * time.Millisecond, transport.KindTimeout, policies.Timeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			a := transport.Send(ctx, client, &transport.Attempt{Method: "GET", URL: tc.url, Number: 1})
			if a.Kind != tc.kind || a.Outcome != tc.outcome {
				t.Errorf("kind %v outcome %v, want %v %v", a.Kind, a.Outcome, tc.kind, tc.outcome)
			}
		})
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:80", true}, {"localhost:1", true}, {"[::1]:8080", true}, {"127.1.2.3", true},
		{"10.0.0.1:80", false}, {"example.com:80", false}, {"0.0.0.0:80", false}, {":8080", false},
	} {
		if err := CheckLoopback(tc.host); (err == nil) != tc.ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", tc.host, err, tc.ok)
		}
	}
}
