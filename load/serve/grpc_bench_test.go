package serve

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
)

// BenchmarkAttempt measures one attempt's round trip to a trivial loopback
// target, sent from parallel goroutines as the driver's senders do: over
// HTTP (Send) and over gRPC (GRPCClient.Send, one connection; and
// SendTraced, its phases recorded, as EdgeClient sends). Compare the
// two in the same run: the ratio, not the absolute time, is what a loaded
// machine leaves meaningful.
func BenchmarkAttempt(b *testing.B) {
	b.Run("http", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
		defer srv.Close()
		tr := transport.NewHTTPTransport(256)
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		benchAttempts(b, func(ctx context.Context, a *transport.Attempt) transport.Answer {
			return transport.Send(ctx, client, a)
		}, srv.URL)
	})
	b.Run("grpc", func(b *testing.B) {
		srv := grpc.NewServer(grpc.ForceServerCodec(transport.RawCodec{}), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			var in transport.Frame
			if err := stream.RecvMsg(&in); err != nil {
				return err
			}
			return stream.SendMsg(&transport.Frame{Bytes: []byte("ok")})
		}))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go srv.Serve(ln)
		defer srv.Stop()
		gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer gc.Close()
		url := "grpc://" + ln.Addr().String() + "/a.B/C"
		b.Run("untraced", func(b *testing.B) {
			benchAttempts(b, func(ctx context.Context, a *transport.Attempt) transport.Answer {
				return gc.Send(ctx, a, transport.Sending{})
			}, url)
		})
		// As an EdgeClient sends them: phases traced into a recorder.
		var rec transport.PhaseRecorder
		b.Run("traced", func(b *testing.B) {
			benchAttempts(b, func(ctx context.Context, a *transport.Attempt) transport.Answer {
				return gc.Send(ctx, a, transport.Sending{Phases: policies.PhaseTimeouts{}, PhaseAware: false, Record: &rec})
			}, url)
		})
	})
}

func benchAttempts(b *testing.B, send func(context.Context, *transport.Attempt) transport.Answer, url string) {
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		a := transport.Attempt{Method: http.MethodGet, URL: url, RequestID: "1", Number: 1}
		for pb.Next() {
			if an := send(context.Background(), &a); an.Outcome != policies.OK {
				b.Errorf("attempt: %+v", an)
				return
			}
		}
	})
}
