package driver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/stormsim/stormsim/load/driver"
	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
	"github.com/stormsim/stormsim/topology"
)

// A POST retried once: both attempts of the intent carry its one key and
// the same body, made from the template.
func ExampleRequestTemplate() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Printf("attempt %s: %s %s key=%s tenant=%s\n", r.Header.Get(transport.HeaderAttempt), r.Method, b,
			r.Header.Get("Idempotency-Key"), r.Header.Get("X-Tenant"))
		if r.Header.Get(transport.HeaderAttempt) == "1" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	arrivals, err := driver.TargetArrivals(topology.ArrivalConstant, 10, 0, time.Second, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = driver.Run(context.Background(), driver.Options{
		Target: srv.URL + "/orders", Method: "POST", Body: []byte(`{"sku":"sku-42","qty":{n}}`),
		Request:  &driver.RequestTemplate{KeyPrefix: "run-7-", Tenant: "acme"},
		Policy:   topology.Call{Retry: policies.RetryConfig{MaxAttempts: 2}},
		Arrivals: arrivals,
		Duration: time.Second, MaxRequests: 1,
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// attempt 1: POST {"sku":"sku-42","qty":1} key=run-7-1 tenant=acme
	// attempt 2: POST {"sku":"sku-42","qty":1} key=run-7-1 tenant=acme
}

func ExampleReadTargets() {
	ts, err := driver.ReadTargets(strings.NewReader("POST http://127.0.0.1:8081/orders\nContent-Type: application/json\n@order.json\n"), "stdin")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ts[0].Method, ts[0].URL, ts[0].Header.Get("Content-Type"), ts[0].BodyFile)
	// Output:
	// POST http://127.0.0.1:8081/orders application/json order.json
}

func ExampleVegetaWriter() {
	vw := driver.NewVegetaWriter(os.Stdout, "orders")
	vw.Write(driver.AttemptResult{Start: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Latency: 3 * time.Millisecond,
		Method: "POST", URL: "http://127.0.0.1:8081/orders", Status: 503, BytesOut: 24})
	vw.Flush()
	// Output:
	// {"attack":"orders","seq":0,"code":503,"timestamp":"2026-12-01T10:00:00Z","latency":3000000,"bytes_out":24,"error":"503 Service Unavailable","method":"POST","url":"http://127.0.0.1:8081/orders"}
}
