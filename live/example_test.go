package live_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/stormsim/stormsim/live"
	"github.com/stormsim/stormsim/metrics"
)

// A run publishes a row per interval; a viewer (here, after the run)
// reads them as server-sent events, then the end.
func Example() {
	srv, err := live.Start(live.Options{Addr: "127.0.0.1:0", Title: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close(context.Background())
	cols := []string{metrics.ColOffered, metrics.ColGoodput, metrics.Column(metrics.MetricQueue, "db")}
	srv.Row(0, time.Second, cols, []float64{100, 97, 0.5})
	srv.Row(time.Second, time.Second, cols, []float64{100, 12, 180})
	srv.End()

	resp, err := http.Get(srv.URL() + "events")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Print(string(b))
	// Output:
	// retry: 2000
	//
	// id: 0
	// event: interval
	// data: {"t_s":0,"interval_s":1,"offered":100,"goodput":97,"queue/db":0.5}
	//
	// id: 1
	// event: interval
	// data: {"t_s":1,"interval_s":1,"offered":100,"goodput":12,"queue/db":180}
	//
	// event: end
	// data: {}
}

func ExampleParseSpeed() {
	for _, s := range []string{"10x", "0.5x", "0x"} {
		v, err := live.ParseSpeed(s)
		fmt.Println(v, err)
	}
	// Output:
	// 10 <nil>
	// 0.5 <nil>
	// 0 want a positive speed like 10x or 0.5x, got "0x"
}
