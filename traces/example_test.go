package traces_test

import (
	"fmt"

	"github.com/stormsim/stormsim/traces"
)

// A Jaeger export of one request: web's server span calls db once.
const jaegerExample = `{"data": [{"traceID": "a1", "spans": [
 {"traceID": "a1", "spanID": "01", "operationName": "GET /", "startTime": 1000000, "duration": 12000,
  "processID": "p1", "tags": [{"key": "span.kind", "value": "server"}]},
 {"traceID": "a1", "spanID": "02", "operationName": "query", "startTime": 1002000, "duration": 8000,
  "processID": "p1", "references": [{"refType": "CHILD_OF", "spanID": "01"}], "tags": [{"key": "span.kind", "value": "client"}]},
 {"traceID": "a1", "spanID": "03", "operationName": "query", "startTime": 1003000, "duration": 6000,
  "processID": "p2", "references": [{"refType": "CHILD_OF", "spanID": "02"}], "tags": [{"key": "span.kind", "value": "server"}]}],
 "processes": {"p1": {"serviceName": "web"}, "p2": {"serviceName": "db"}}}]}`

func Example() {
	spans, format, err := traces.Read("export.json", []byte(jaegerExample))
	if err != nil {
		fmt.Println(err)
		return
	}
	m := traces.Infer(spans)
	fmt.Println(format, len(spans), "spans; entry:", m.Entry)
	for _, s := range m.Services {
		fmt.Printf("%s: %d attempt, own time %v, calls %v\n", s.Name, s.Attempts, s.Own, s.Steps)
	}
	// Output:
	// jaeger 3 spans; entry: web
	// web: 1 attempt, own time [4ms], calls [[{db 1}]]
	// db: 1 attempt, own time [6ms], calls []
}
