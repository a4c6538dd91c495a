package healthecho

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stormsim/stormsim/policies"
)

// startLean serves healthecho on a loopback port until the test ends.
func startLean(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var srv Server
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		require.ErrorIs(t, <-done, ErrClosed)
	})
	return ln.Addr().String()
}

// startGRPCGo serves what grpcecho -server grpc serves: grpc-go's health
// service and reflection.
func startGRPCGo(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	reflection.Register(srv)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	return cc
}

// seen is what a grpc-go client sees of one call.
type seen struct {
	code     codes.Code
	msg      string
	resp     string // the response message, as text
	ctype    []string
	trailers []string // the trailer keys
}

// TestAnswersAsGRPCGo: grpc-go's client sees the same status, message,
// response and metadata from healthecho as from grpc-go's server with the
// health service and reflection, for every call the benchmark and a
// confused client make.
func TestAnswersAsGRPCGo(t *testing.T) {
	lean, ref := startLean(t), startGRPCGo(t)
	cases := []struct {
		name   string
		method string
		req    proto.Message
		opts   []grpc.CallOption
		want   codes.Code
	}{
		{name: "serving", method: Path, req: &healthpb.HealthCheckRequest{}, want: codes.OK},
		{name: "named-empty", method: Path, req: &healthpb.HealthCheckRequest{Service: ""}, want: codes.OK},
		{name: "unknown-service-name", method: Path, req: &healthpb.HealthCheckRequest{Service: "orders"}, want: codes.NotFound},
		{name: "subtype", method: Path, req: &healthpb.HealthCheckRequest{}, opts: []grpc.CallOption{grpc.CallContentSubtype("proto")}, want: codes.OK},
		{name: "unknown-method", method: "/grpc.health.v1.Health/Nope", req: &healthpb.HealthCheckRequest{}, want: codes.Unimplemented},
		{name: "unknown-service", method: "/orders.v1.Orders/Create", req: &emptypb.Empty{}, want: codes.Unimplemented},
		{name: "too-large", method: Path, req: &healthpb.HealthCheckRequest{Service: strings.Repeat("x", MaxRecvMsgSize+10)}, want: codes.ResourceExhausted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]seen
			for i, addr := range []string{lean, ref} {
				cc := dialGRPC(t, addr)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", "r-1")
				var hdr, tr metadata.MD
				resp := new(healthpb.HealthCheckResponse)
				opts := append([]grpc.CallOption{grpc.Header(&hdr), grpc.Trailer(&tr)}, tc.opts...)
				err := cc.Invoke(ctx, tc.method, tc.req, resp, opts...)
				cancel()
				st := status.Convert(err)
				got[i] = seen{code: st.Code(), msg: st.Message(), resp: resp.String(), ctype: hdr["content-type"]}
				for k := range tr {
					got[i].trailers = append(got[i].trailers, k)
				}
				sort.Strings(got[i].trailers) // a map's order is not the server's
			}
			require.Equal(t, tc.want, got[1].code, "grpc-go's server: %+v", got[1])
			require.Equal(t, got[1], got[0], "healthecho against grpc-go's server")
		})
	}
}

// TestLeanClientServing: stormsim's own gRPC client (the benchmark's
// driver) gets SERVING, classified OK, from many concurrent calls on one
// connection, and NOT_FOUND for a named service.
func TestLeanClientServing(t *testing.T) {
	addr := startLean(t)
	gl, err := transport.NewGRPCLean(transport.GRPCLeanConfig{Target: "grpc://" + addr + Path})
	require.NoError(t, err)
	defer gl.Close()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				a := transport.Attempt{URL: "grpc://" + addr + Path, RequestID: "r", Number: 1}
				if an := gl.Send(context.Background(), &a, transport.Sending{Timeout: 5 * time.Second}); an.Outcome != policies.OK || an.Status != 200 {
					errs <- an.Outcome.String()
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("a call was answered %s, want OK", e)
	}
	named, err := proto.Marshal(&healthpb.HealthCheckRequest{Service: "orders"})
	require.NoError(t, err)
	a := transport.Attempt{URL: "grpc://" + addr + Path, Body: named}
	an := gl.Send(context.Background(), &a, transport.Sending{Timeout: 5 * time.Second})
	require.Equal(t, policies.Error, an.Outcome)
	require.Equal(t, 404, an.Status) // NOT_FOUND, as HTTP
}

// raw is one call made with hand-written frames, and what came back.
type rawAnswer struct {
	headers  map[string]string // the first header block's fields
	trailers map[string]string
	data     []byte
	reset    bool // the server reset the stream after answering
}

// rawConn is a client connection written frame by frame.
type rawConn struct {
	fr *http2.Framer
	bw *bufio.Writer
}

// dialRaw connects to addr, sends the preface and the given settings, and
// closes the connection when the test ends; every read and write must be
// done within 5 s.
func dialRaw(t *testing.T, addr string, settings ...http2.Setting) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	c := &rawConn{bw: bufio.NewWriter(nc)}
	c.fr = http2.NewFramer(c.bw, bufio.NewReader(nc))
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.bw.WriteString(http2.ClientPreface)
	require.NoError(t, c.fr.WriteSettings(settings...))
	return c
}

// call sends stream 1's headers and DATA payloads, the stream ending on
// the last (or on the headers when there are none) unless open.
func (c *rawConn) call(t *testing.T, fields []hpack.HeaderField, open bool, data ...[]byte) {
	t.Helper()
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	for _, f := range fields {
		enc.WriteField(f)
	}
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true, EndStream: len(data) == 0 && !open}))
	for i, d := range data {
		require.NoError(t, c.fr.WriteData(1, i == len(data)-1 && !open, d))
	}
}

// next flushes what was written and returns the server's next frame
// other than its settings, which it acknowledges.
func (c *rawConn) next(t *testing.T) http2.Frame {
	t.Helper()
	require.NoError(t, c.bw.Flush())
	for {
		f, err := c.fr.ReadFrame()
		require.NoError(t, err)
		if sf, ok := f.(*http2.SettingsFrame); ok {
			if !sf.IsAck() {
				require.NoError(t, c.fr.WriteSettingsAck())
			}
			continue
		}
		return f
	}
}

// rawCall opens a connection to addr, sends one call (rawConn.call) and
// reads until the stream ends and, if the server resets it, that reset (a
// PING sent after the answer and its ack bound the wait: the server
// answers in order).
func rawCall(t *testing.T, addr string, fields []hpack.HeaderField, open bool, data ...[]byte) rawAnswer {
	t.Helper()
	c := dialRaw(t, addr)
	c.call(t, fields, open, data...)
	var out rawAnswer
	ended, pinged := false, false
	for {
		switch f := c.next(t).(type) {
		case *http2.MetaHeadersFrame:
			m := map[string]string{}
			for _, h := range f.Fields {
				m[h.Name] = h.Value
			}
			if out.headers == nil {
				out.headers = m
			} else {
				out.trailers = m
			}
			ended = ended || f.StreamEnded()
		case *http2.DataFrame:
			out.data = append(out.data, f.Data()...)
			ended = ended || f.StreamEnded()
		case *http2.RSTStreamFrame:
			out.reset = true
			return out
		case *http2.PingFrame:
			if f.IsAck() {
				return out
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", f.ErrCode)
		}
		if ended && !pinged {
			// grpc-go may reset the stream after its answer: a ping's ack
			// comes after any reset its reader sent.
			pinged = true
			require.NoError(t, c.fr.WritePing(false, [8]byte{1}))
		}
	}
}

// frame prefixes a message as gRPC's wire format does.
func frame(flag byte, msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	b[0] = flag
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// TestRawAnswersAsGRPCGo: requests no gRPC client sends — not gRPC,
// not POST, no authority, a malformed or missing message, two messages,
// a compressed one — get the same HTTP status, gRPC status and message,
// and the same reset, from healthecho as from grpc-go's server.
func TestRawAnswersAsGRPCGo(t *testing.T) {
	lean, ref := startLean(t), startGRPCGo(t)
	hf := func(kv ...string) []hpack.HeaderField {
		base := map[string]string{":method": "POST", ":scheme": "http", ":path": Path, ":authority": "x", "content-type": "application/grpc", "te": "trailers"}
		for i := 0; i < len(kv); i += 2 {
			base[kv[i]] = kv[i+1]
		}
		var out []hpack.HeaderField
		for _, k := range []string{":method", ":scheme", ":path", ":authority", "content-type", "te"} {
			if v := base[k]; v != "-" {
				out = append(out, hpack.HeaderField{Name: k, Value: v})
			}
		}
		return out
	}
	empty := frame(0, nil)
	cases := []struct {
		name   string
		fields []hpack.HeaderField
		open   bool // the request does not end
		data   [][]byte
	}{
		{name: "ok", fields: hf(), data: [][]byte{empty}},
		{name: "split-message", fields: hf(), data: [][]byte{empty[:2], empty[2:]}},
		{name: "plain-text", fields: hf("content-type", "text/plain"), data: [][]byte{empty}},
		{name: "no-content-type", fields: hf("content-type", "-"), data: [][]byte{empty}},
		{name: "get", fields: hf(":method", "GET")},
		{name: "no-authority", fields: hf(":authority", "-"), data: [][]byte{empty}},
		{name: "no-message", fields: hf()},
		{name: "short-prefix", fields: hf(), data: [][]byte{{0, 0}}},
		{name: "short-message", fields: hf(), data: [][]byte{{0, 0, 0, 0, 9, 1}}},
		{name: "two-messages", fields: hf(), data: [][]byte{empty, empty}},
		{name: "malformed-protobuf", fields: hf(), data: [][]byte{frame(0, []byte{0x0a, 0x05, 'x'})}},
		{name: "compressed", fields: hf(), data: [][]byte{frame(1, nil)}},
		{name: "unknown-service-early", fields: hf(":path", "/a.B/C"), data: [][]byte{empty}},
		{name: "malformed-path", fields: hf(":path", "nopath"), data: [][]byte{empty}},
		{name: "unknown-service-open", fields: hf(":path", "/a.B/C"), open: true},
		{name: "unknown-method-open", fields: hf(":path", "/grpc.health.v1.Health/Nope"), open: true, data: [][]byte{empty}},
		{name: "plain-text-open", fields: hf("content-type", "text/plain"), open: true},
		{name: "subtype", fields: hf("content-type", "application/grpc+proto"), data: [][]byte{empty}},
		{name: "subtype-params", fields: hf("content-type", "application/grpc;charset=utf-8"), data: [][]byte{empty}},
		{name: "named-service", fields: hf(), data: [][]byte{frame(0, []byte{0x0a, 0x01, 'x'})}},
		{name: "declared-too-large", fields: hf(), open: true, data: [][]byte{{0, 0, 0x50, 0, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := rawCall(t, ref, tc.fields, tc.open, tc.data...)
			got := rawCall(t, lean, tc.fields, tc.open, tc.data...)
			require.NotNil(t, want.headers, "grpc-go's server answered nothing")
			require.Equal(t, want, got, "healthecho against grpc-go's server")
		})
	}
}

// TestWaitsForWindow: an answer's message is held while the client's
// window for it is closed, and sent, whole, once a window update opens it.
func TestWaitsForWindow(t *testing.T) {
	c := dialRaw(t, startLean(t), http2.Setting{ID: http2.SettingInitialWindowSize, Val: 3})
	c.call(t, []hpack.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: Path}, {Name: ":authority", Value: "x"}, {Name: "content-type", Value: "application/grpc"}}, false, frame(0, nil))
	require.NoError(t, c.fr.WritePing(false, [8]byte{7}))
	// Until the ping's ack (the server handles frames in order), nothing
	// of stream 1 may come: its 7-byte message does not fit a window of 3.
	for acked := false; !acked; {
		switch f := c.next(t).(type) {
		case *http2.PingFrame:
			acked = f.IsAck()
		default:
			require.Zero(t, f.Header().StreamID, "a frame of stream 1 before its window opened: %v", f)
		}
	}
	require.NoError(t, c.fr.WriteWindowUpdate(1, 4))
	var data []byte
	for ended := false; !ended; {
		switch f := c.next(t).(type) {
		case *http2.DataFrame:
			data = append(data, f.Data()...)
		case *http2.MetaHeadersFrame:
			ended = f.StreamEnded()
			if ended {
				require.Equal(t, "0", headerValue(f, "grpc-status"))
			}
		}
	}
	require.Equal(t, serving, data)
}

func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, h := range f.Fields {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

// TestDescriptorSet: the protoset ghz reads names the health service and
// its Check method.
func TestDescriptorSet(t *testing.T) {
	b, err := DescriptorSet()
	require.NoError(t, err)
	var set descriptorpb.FileDescriptorSet
	require.NoError(t, proto.Unmarshal(b, &set))
	require.Len(t, set.File, 1)
	f := set.File[0]
	require.Equal(t, "grpc.health.v1", f.GetPackage())
	var methods []string
	for _, s := range f.Service {
		for _, m := range s.Method {
			methods = append(methods, s.GetName()+"/"+m.GetName())
		}
	}
	require.Contains(t, methods, "Health/Check")
}

// FuzzServe: whatever bytes follow the preface, a connection's goroutine
// neither panics nor outlives its client.
func FuzzServe(f *testing.F) {
	var req bytes.Buffer
	fr := http2.NewFramer(&req, nil)
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	for _, h := range []hpack.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":path", Value: Path}, {Name: ":authority", Value: "x"}, {Name: "content-type", Value: "application/grpc"}} {
		enc.WriteField(h)
	}
	fr.WriteSettings()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true})
	fr.WriteData(1, true, frame(0, nil))
	fr.WriteWindowUpdate(0, 10)
	fr.WriteRSTStream(3, http2.ErrCodeCancel)
	f.Add(req.Bytes())
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			serveConn(server)
			server.Close()
		}()
		go func() { // the server's answers, read until it closes
			b := make([]byte, 4096)
			for {
				if _, err := client.Read(b); err != nil {
					return
				}
			}
		}()
		client.SetWriteDeadline(time.Now().Add(time.Second))
		client.Write([]byte(http2.ClientPreface))
		client.Write(in)
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the connection's goroutine outlived its client")
		}
	})
}

// The benchmark's target is bounded: Serve after Close refuses at once.
func TestServeAfterClose(t *testing.T) {
	var srv Server
	require.NoError(t, srv.Close())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	require.True(t, errors.Is(srv.Serve(ln), ErrClosed))
}

// BenchmarkServe: one health check through stormsim's lean gRPC client
// and back, 64 calls in flight on one connection, against healthecho and
// against grpc-go's server (client and server in this process: the
// figures are the round trip's, both sides).
func BenchmarkServe(b *testing.B) {
	for _, s := range []struct {
		name  string
		start func(testing.TB) string
	}{{"lean", startLean}, {"grpc-go", startGRPCGo}} {
		b.Run(s.name, func(b *testing.B) {
			target := "grpc://" + s.start(b) + Path
			gl, err := transport.NewGRPCLean(transport.GRPCLeanConfig{Target: target})
			if err != nil {
				b.Fatal(err)
			}
			defer gl.Close()
			b.ReportAllocs()
			b.SetParallelism(32) // 64 goroutines on the 2-core machine
			b.RunParallel(func(pb *testing.PB) {
				a := transport.Attempt{URL: target, RequestID: "r", Number: 1}
				for pb.Next() {
					if an := gl.Send(context.Background(), &a, transport.Sending{Timeout: 5 * time.Second}); an.Outcome != policies.OK {
						b.Errorf("answered %v, want OK", an.Outcome)
						return
					}
				}
			})
		})
	}
}
