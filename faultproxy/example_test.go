package faultproxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"

	"github.com/stormsim/stormsim/faultproxy"
)

// Example loses the reply of the first attempt of every request after the
// upstream answered it, as a rule decides in code: the upstream does the
// work twice for a client that retries, and the record says so.
func Example() {
	var orders atomic.Int64
	records := make(chan faultproxy.Record, 2)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "order %d", orders.Add(1))
	}))
	defer up.Close()
	p, err := faultproxy.New(faultproxy.Config{
		Upstream: up.URL,
		Rule: func(r *faultproxy.Request) (faultproxy.Decision, bool) {
			if r.Attempt == 1 {
				return faultproxy.Decision{Fault: faultproxy.DropResponse}, true
			}
			return faultproxy.Decision{}, false
		},
		OnRecord: func(r faultproxy.Record) { records <- r },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := faultproxy.Listen(p, "127.0.0.1:0", false)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close(context.Background())
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for attempt := 1; attempt <= 2; attempt++ {
		req, _ := http.NewRequest("POST", srv.URL+"/orders", nil)
		req.Header.Set("X-Stormsim-Attempt", fmt.Sprint(attempt))
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println("client: no reply")
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println("client:", string(b))
	}
	// A request's record comes when the proxy is done with it: in any order.
	got := []faultproxy.Record{<-records, <-records}
	slices.SortFunc(got, func(a, b faultproxy.Record) int { return a.Attempt - b.Attempt })
	for _, r := range got {
		fmt.Printf("proxy: attempt %d: %s, upstream %d, delivered %v\n", r.Attempt, r.Fault, r.UpstreamStatus, r.Delivered)
	}
	// Output:
	// client: no reply
	// client: order 2
	// proxy: attempt 1: drop_response, upstream 200, delivered false
	// proxy: attempt 2: none, upstream 200, delivered true
}
