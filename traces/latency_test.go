package traces

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// otlpSpan is one span of an OTLP JSON line: a resource's service, a kind
// (2 server, 3 client), a duration in ms, an HTTP status and peer.service.
func otlpSpan(service string, kind, ms, status int, peer string, id int) string {
	attrs := fmt.Sprintf(`{"key":"http.response.status_code","value":{"intValue":"%d"}}`, status)
	if peer != "" {
		attrs += fmt.Sprintf(`,{"key":"peer.service","value":{"stringValue":%q}}`, peer)
	}
	start := int64(1_700_000_000_000_000_000) + int64(id)*int64(time.Second)
	return fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%q}}]},`+
		`"scopeSpans":[{"spans":[{"traceId":"%032x","spanId":"%016x","name":"HTTP GET","kind":%d,`+
		`"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[%s],"status":{}}]}]}]}`,
		service, id+1, id+1, kind, start, start+int64(ms)*int64(time.Millisecond), attrs)
}

func TestServerLatencySources(t *testing.T) {
	lines := []string{
		// "orders" is instrumented: its server spans are its latency.
		otlpSpan("orders", 2, 5, 200, "", 0),
		otlpSpan("orders", 2, 7, 200, "", 1),
		otlpSpan("orders", 2, 1, 503, "", 2),
		// "target" is not: the driver's client spans name it.
		otlpSpan("stormsim-client", 3, 11, 200, "target", 3),
		otlpSpan("stormsim-client", 3, 13, 200, "target", 4),
		otlpSpan("stormsim-client", 3, 2, 503, "target", 5),
		otlpSpan("stormsim-client", 3, 17, 200, "target", 6),
	}
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		service string
		want    []time.Duration
		note    string
		err     string
	}{
		{"orders", []time.Duration{5 * time.Millisecond, 7 * time.Millisecond}, "1 of 3 server spans dropped (failed)", ""},
		{"target", []time.Duration{11 * time.Millisecond, 13 * time.Millisecond, 17 * time.Millisecond},
			"no server spans of its own: read from the client spans naming it as peer.service; 1 of 4 client spans dropped (failed or abandoned)", ""},
		{"nosuch", nil, "", `no server spans of service "nosuch", nor client spans with peer.service "nosuch" (have server spans of: orders; client spans to: target)`},
	}
	for _, c := range cases {
		got, note, err := ServerLatency(path, c.service)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: want error %q, got %v", c.service, c.err, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.service, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || !strings.HasPrefix(note, c.note) {
			t.Errorf("%s: got %v, %q; want %v, %q", c.service, got, note, c.want, c.note)
		}
	}
}
