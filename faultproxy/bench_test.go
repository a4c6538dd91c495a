package faultproxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/topology"
)

// These benchmarks measure the proxy with faults off on loopback; they are
// figures to read, not timed tests:
//
//	go test -run XXX -bench 'ProxyOverhead|ProxyThroughput' -benchtime 1x ./faultproxy
//
// BenchmarkProxyOverhead drives 5,000 requests per second open-loop (load's
// driver, latency from the intended send time) for 2 s at the upstream
// directly and then through the proxy, and reports both p50s and the
// difference. BenchmarkProxyThroughput sends as fast as 64 goroutines can
// through the proxy and reports requests per second.

func benchUpstream(b *testing.B) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	b.Cleanup(up.Close)
	return up
}

func p50At(b *testing.B, target string, rate float64, d time.Duration) float64 {
	arrivals, err := driver.TargetArrivals(topology.ArrivalConstant, rate, 0, d, 1)
	if err != nil {
		b.Fatal(err)
	}
	res, err := driver.Run(context.Background(), driver.Options{
		Target: target, Arrivals: arrivals, Duration: d,
		Warmup: d / 4, Workers: 256, Connections: 256, Grace: time.Second,
	})
	if err != nil {
		b.Fatal(err)
	}
	s := res.Summary
	if s.Requests.Succeeded < s.Requests.Offered*99/100 {
		b.Fatalf("%s: %d of %d succeeded", target, s.Requests.Succeeded, s.Requests.Offered)
	}
	return s.LatencyMs.P50 * 1000
}

func BenchmarkProxyOverhead(b *testing.B) {
	up := benchUpstream(b)
	px := startProxy(b, Config{Upstream: up.URL})
	for b.Loop() {
		direct := p50At(b, up.URL, 5000, 2*time.Second)
		proxied := p50At(b, px.URL, 5000, 2*time.Second)
		b.ReportMetric(direct, "p50-direct-µs")
		b.ReportMetric(proxied, "p50-proxied-µs")
		b.ReportMetric(proxied-direct, "p50-added-µs")
	}
}

func BenchmarkProxyThroughput(b *testing.B) {
	up := benchUpstream(b)
	for _, via := range []string{"direct", "proxy"} {
		b.Run(via, func(b *testing.B) {
			url := up.URL
			if via == "proxy" {
				url = startProxy(b, Config{Upstream: up.URL}).URL
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
			defer client.CloseIdleConnections()
			start := time.Now()
			n := 0
			deadline := start.Add(2 * time.Second)
			done := make(chan int)
			for range 64 {
				go func() {
					k := 0
					for time.Now().Before(deadline) {
						resp, err := client.Get(url)
						if err != nil {
							b.Error(err)
							break
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						k++
					}
					done <- k
				}()
			}
			for range 64 {
				n += <-done
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "req/s")
		})
	}
}
