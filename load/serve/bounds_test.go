package serve

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/topology"
)

// TestResponseHeadersAreBounded: an answer with a header block over 64 KiB
// is a transport error, not megabytes held per answer (issue 17, item 12).
func TestResponseHeadersAreBounded(t *testing.T) {
	size := 10 << 10
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", size))
	}))
	defer srv.Close()
	tr := transport.NewHTTPTransport(1)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("10 KiB of headers: %v", err)
	}
	resp.Body.Close()
	size = 200 << 10
	if resp, err = client.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("200 KiB of headers were read")
	}
	if !strings.Contains(err.Error(), "exceeded 65536 bytes") {
		t.Errorf("error %v, want one saying the headers exceeded 65536 bytes", err)
	}
}

// TestHeldBodiesAreBounded: a service refuses an attempt whose body would
// take the bodies it holds for admitted attempts past its budget, where it
// held every queued body before.
func TestHeldBodiesAreBounded(t *testing.T) {
	defer func(n int64) { maxHeldBodies = n }(maxHeldBodies)
	maxHeldBodies = 5 << 19 // 2.5 MiB: two bodies of 1 MiB, not three
	cl := startScenario(t, "bodies.yaml", `name: bodies
duration: 10s
workload: {entry: api, rate: 1}
services:
  - name: api
    workers: 1
    queue: 100
    service_time: {dist: constant, value: 3s}
`)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	post := func() (*http.Response, error) {
		return client.Post(cl.URLs["api"], "application/octet-stream", bytes.NewReader(make([]byte, 1<<20)))
	}
	for range 2 { // one working, one queued: both bodies held
		go func() {
			if resp, err := post(); err == nil {
				resp.Body.Close()
			}
		}()
	}
	svc := cl.Service("api")
	deadline := time.Now().Add(10 * time.Second)
	for svc.heldBodies.Load() != 2<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("held %d bytes, want the 2 MiB of two admitted attempts", svc.heldBodies.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := post()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(string(b), "request body: the service already holds 2.5 MiB") {
		t.Errorf("third body: %d %q, want 503 naming the budget", resp.StatusCode, b)
	}
	if n := svc.heldBodies.Load(); n != 2<<20 {
		t.Errorf("after the refusal the service holds %d bytes, want 2 MiB", n)
	}
}

// TestConnLimit: past the budget, Accept waits until a connection closes.
func TestConnLimit(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newConnLimit(2).listen(raw)
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first := <-accepted
	<-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted past a budget of 2")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	first.Close() // closing twice gives the slot back once
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the third connection was not accepted after one closed")
	}
}

// TestArrivalsAtTinyRates: at 1e-11 requests per second the second request
// is due in 3,000 years; it is past the window, not a wrapped time inside
// it (load --rate 1e-11 never ended).
func TestArrivalsAtTinyRates(t *testing.T) {
	for _, arrival := range []topology.Arrival{topology.ArrivalConstant, topology.ArrivalPoisson} {
		a, err := driver.TargetArrivals(arrival, 1e-11, 0, 10*time.Second, 1)
		if err != nil {
			t.Fatal(err)
		}
		for n := uint64(1); n < 4; n++ {
			if at, ok := a.At(n); ok {
				t.Errorf("%s: request %d due at %v, inside a 10s window", arrival, n, at)
			}
		}
	}
}
