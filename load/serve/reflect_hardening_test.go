package serve

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormsim/stormsim/load/transport"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// hostileReflection answers every request with a file of about pad bytes
// that imports deps files never sent before: a method whose descriptors
// never end.
type hostileReflection struct {
	reflectionv1.UnimplementedServerReflectionServer
	pad, deps int
	answered  atomic.Int64
	sent      atomic.Int64 // bytes of descriptors
}

func (h *hostileReflection) ServerReflectionInfo(stream reflectionv1.ServerReflection_ServerReflectionInfoServer) error {
	for {
		if _, err := stream.Recv(); err != nil {
			return nil
		}
		n := h.answered.Add(1)
		f := &descriptorpb.FileDescriptorProto{Name: proto.String(fmt.Sprintf("f%d.proto", n)), Package: proto.String("p" + strings.Repeat("x", h.pad))}
		for i := range h.deps {
			f.Dependency = append(f.Dependency, fmt.Sprintf("d%d_%d.proto", n, i))
		}
		b, err := proto.Marshal(f)
		if err != nil {
			return err
		}
		h.sent.Add(int64(len(b)))
		if err := stream.Send(&reflectionv1.ServerReflectionResponse{MessageResponse: &reflectionv1.ServerReflectionResponse_FileDescriptorResponse{
			FileDescriptorResponse: &reflectionv1.FileDescriptorResponse{FileDescriptorProto: [][]byte{b}}}}); err != nil {
			return nil
		}
	}
}

// TestAttackGRPCReflectionIsBounded asks hostile reflection servers for a
// method's descriptors: one that answers every import with megabytes and
// more imports, one with thousands of small files. The client must stop
// at its caps, saying so, having received little.
func TestAttackGRPCReflectionIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pad, deps int
		want      string
	}{
		{"megabytes per import", 2 << 20, 4, "MiB of them, the limit"},
		{"imports without end", 10, 50, "the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			h := &hostileReflection{pad: tc.pad, deps: tc.deps}
			srv := grpc.NewServer(grpc.MaxSendMsgSize(8 << 20))
			reflectionv1.RegisterServerReflectionServer(srv, h)
			go srv.Serve(ln)
			defer srv.Stop()
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			_, err = transport.EncodeGRPCRequest(ctx, "grpc://"+ln.Addr().String()+"/p.S/M", nil, nil)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Less(t, time.Since(start), 20*time.Second, "stopped by its caps, not by a timeout")
			require.LessOrEqual(t, h.answered.Load(), int64(1000))
			require.Less(t, h.sent.Load(), int64(16<<20+8<<20), "the client asked for more than its cap")
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(512<<20), "allocated in all")
		})
	}
}
