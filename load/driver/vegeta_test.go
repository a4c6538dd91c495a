package driver

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/tune"
)

// TestVegetaResultsRoundTrip writes a run's attempts as vegeta results and
// reads them back with tune's vegeta reader: every attempt is a line, the
// 503s are excluded from the samples and counted by code, and each line
// carries vegeta's fields.
func TestVegetaResultsRoundTrip(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		target, _ := recordingTarget(t, transport.HeaderIdempotencyKey)
		var buf bytes.Buffer
		vw := NewVegetaWriter(&buf, "orders")
		before := time.Now()
		runTemplateWith(t, target, netHTTP, &RequestTemplate{KeyPrefix: "k-"}, `{"qty":{n}}`, vw.Write)
		if err := vw.Flush(); err != nil {
			t.Fatal(err)
		}
		res, err := tune.ReadVegeta(bytes.NewReader(buf.Bytes()), "results.json")
		if err != nil {
			t.Fatalf("tune cannot read what load wrote: %v\n%s", err, buf.String())
		}
		if len(res.Samples) != 3 || res.Excluded != 6 || res.ByCode[200] != 3 || res.ByCode[503] != 6 {
			t.Errorf("net/http %v: samples %d excluded %d by code %v; want 3, 6, {200:3 503:6}",
				netHTTP, len(res.Samples), res.Excluded, res.ByCode)
		}
		seqs := map[uint64]bool{}
		for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var v vegetaResult
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			seqs[v.Seq] = true
			wantErr := ""
			if v.Code == 503 {
				wantErr = "503 Service Unavailable"
			}
			if v.Attack != "orders" || v.Method != "POST" || !strings.HasSuffix(v.URL, "/orders?x=1") ||
				v.Error != wantErr || v.Latency <= 0 || v.Timestamp.Before(before.Add(-time.Second)) || v.BytesOut != len(`{"qty":1}`) {
				t.Errorf("line %d: %s", i+1, line)
			}
		}
		if len(seqs) != 9 {
			t.Errorf("%d distinct seq over 9 results", len(seqs))
		}
	}
}

func TestVegetaWriterNoAnswer(t *testing.T) {
	var buf bytes.Buffer
	vw := NewVegetaWriter(&buf, "a")
	vw.Write(AttemptResult{Start: time.Unix(0, 0), Latency: time.Millisecond, Method: "GET", URL: "http://x/", Kind: transport.KindConnect})
	if err := vw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `{"attack":"a","seq":0,"code":0,"timestamp":"1970-01-01T00:00:00Z","latency":1000000,"bytes_out":0,"error":"connect","method":"GET","url":"http://x/"}` + "\n"
	if buf.String() != want {
		t.Errorf("got  %s\nwant %s", buf.String(), want)
	}
}
