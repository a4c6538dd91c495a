package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/load/edge"
	"github.com/stormsim/stormsim/load/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	_ "google.golang.org/protobuf/types/known/emptypb"  // google/protobuf/empty.proto, for the descriptor
	_ "google.golang.org/protobuf/types/known/structpb" // google/protobuf/struct.proto, for the descriptor
)

// emulatedFile describes GRPCMethod for server reflection, built here so
// that no protoc step is needed:
//
//	syntax = "proto3";
//	package stormsim.v1;
//	service Emulated { rpc Call(google.protobuf.Struct) returns (google.protobuf.Empty); }
var emulatedFile = mustEmulatedFile()

func mustEmulatedFile() protoreflect.FileDescriptor {
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:       proto.String("stormsim/v1/emulated.proto"),
		Package:    proto.String("stormsim.v1"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/struct.proto", "google/protobuf/empty.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Emulated"),
			Method: []*descriptorpb.MethodDescriptorProto{{
				Name:       proto.String("Call"),
				InputType:  proto.String(".google.protobuf.Struct"),
				OutputType: proto.String(".google.protobuf.Empty"),
			}},
		}},
	}, protoregistry.GlobalFiles)
	if err != nil {
		panic(fmt.Sprintf("load: the emulated service's descriptor: %v", err))
	}
	return fd
}

// emulatedResolver finds emulatedFile, then what the program registered
// (its dependencies among them), for server reflection.
type emulatedResolver struct{}

func (emulatedResolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if path == emulatedFile.Path() {
		return emulatedFile, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

func (emulatedResolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d := emulatedFile.Services().ByName(name.Name()); d != nil && d.FullName() == name {
		return d, nil
	}
	if m := emulatedFile.Services().Get(0).Methods().ByName(name.Name()); m != nil && m.FullName() == name {
		return m, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}

// emulatedServices lists the emulated service for reflection's list.
type emulatedServices struct{}

func (emulatedServices) GetServiceInfo() map[string]grpc.ServiceInfo {
	return map[string]grpc.ServiceInfo{"stormsim.v1.Emulated": {
		Methods:  []grpc.MethodInfo{{Name: "Call"}},
		Metadata: emulatedFile.Path(),
	}}
}

// NewGRPCServer returns a gRPC server for s: every unary method is one
// attempt of the emulated work (serveGRPC), and server reflection
// describes GRPCMethod. Messages are taken as bytes, bounded like HTTP
// bodies, and so is the metadata. opts add to the server's options (a
// tracing stats handler: Tracing.GRPCServerHandler).
func NewGRPCServer(s *Service, opts ...grpc.ServerOption) *grpc.Server {
	recv := make(grpcReceivers, max(1, maxHeldBodies/maxBody/grpcReceiveShare))
	srv := grpc.NewServer(append([]grpc.ServerOption{
		grpc.ForceServerCodec(transport.RawCodec{}),
		grpc.UnknownServiceHandler(func(_ any, st grpc.ServerStream) error { return s.serveGRPC(recv, st) }),
		grpc.MaxRecvMsgSize(maxBody),
		grpc.MaxHeaderListSize(maxHeaderBytes),
		grpc.MaxConcurrentStreams(maxGRPCStreams),
		// A fixed window (no BDP growth): what a call sends before its
		// handler reads it waits in at most grpcStreamWindow of buffer.
		grpc.InitialWindowSize(grpcStreamWindow),
		grpc.InitialConnWindowSize(grpcConnWindow),
	}, opts...)...)
	ropts := reflection.ServerOptions{Services: emulatedServices{}, DescriptorResolver: emulatedResolver{}}
	reflectionv1.RegisterServerReflectionServer(srv, reflection.NewServerV1(ropts))
	// Older clients (grpcurl, ghz before v1) ask the v1alpha service.
	reflectionv1alpha.RegisterServerReflectionServer(srv, reflection.NewServer(ropts))
	return srv
}

// codeOfAnswer is the status code an emulated service answers with, from
// the HTTP status its machine chose and whether it pushes back:
// UNAVAILABLE for overload and shedding, RESOURCE_EXHAUSTED for a
// refusal with pushback or a rate limit, DEADLINE_EXCEEDED for expired
// work and downstream timeouts, ABORTED for idempotency conflicts and
// keys in progress, INVALID_ARGUMENT for a malformed attempt, INTERNAL
// for the error class.
func codeOfAnswer(st int, pushback bool) codes.Code {
	switch st {
	case http.StatusOK:
		return codes.OK
	case http.StatusServiceUnavailable:
		if pushback {
			return codes.ResourceExhausted
		}
		return codes.Unavailable
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case transport.StatusExpired:
		return codes.DeadlineExceeded
	case transport.StatusConflict, transport.StatusInProgress:
		return codes.Aborted
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestHeaderFieldsTooLarge:
		return codes.InvalidArgument
	}
	return codes.Internal
}

// Bounds on what gRPC calls can make a service hold, beside the
// held-bodies budget its admitted attempts are charged (holdBody).
// grpc-go buffers a message whole, and copies it, before the handler can
// charge it: so messages are received only a few at a time, each
// reserving maxBody until its bytes are charged to the budget.
const (
	// maxGRPCStreams bounds the calls open at once on one connection
	// (grpc-go sets no limit); more wait in the client.
	maxGRPCStreams = 256
	// grpcStreamWindow and grpcConnWindow are the flow-control windows:
	// the bytes a call, and a connection, may send unread.
	grpcStreamWindow = 64 << 10
	grpcConnWindow   = 1 << 20
	// grpcReceiveShare: messages being received hold at most
	// maxHeldBodies/grpcReceiveShare bytes at once (and one at least).
	grpcReceiveShare = 4
)

// grpcReceivers is a service's slots for messages being received: a call
// takes one (each is maxBody of memory) before grpc-go assembles its
// message, and gives it back once the service has read the message as
// its attempt's body and charged it.
type grpcReceivers chan struct{}

// receive waits for a slot (or ctx's end), receives stream's message and
// returns it as a body whose reading to the end gives the slot back (so
// does Close, which is idempotent).
func (r grpcReceivers) receive(ctx context.Context, stream grpc.ServerStream) (*grpcBody, error) {
	select {
	case r <- struct{}{}:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	b := &grpcBody{slots: r}
	var in transport.Frame
	if err := stream.RecvMsg(&in); err != nil {
		b.Close()
		return nil, err
	}
	b.b = in.Bytes
	return b, nil
}

// grpcBody is a received message read as an attempt's body: read to its
// end, it drops the message (the attempt holds its own copy, charged to
// the budget) and gives its receive slot back.
type grpcBody struct {
	b     []byte
	slots grpcReceivers
	done  bool
}

func (b *grpcBody) Read(p []byte) (int, error) {
	if len(b.b) == 0 {
		b.Close()
		return 0, io.EOF
	}
	n := copy(p, b.b)
	b.b = b.b[n:]
	return n, nil
}

// Close drops the message and gives the slot back, once.
func (b *grpcBody) Close() error {
	b.b = nil
	if !b.done {
		b.done = true
		<-b.slots
	}
	return nil
}

// answerRecorder is the http.ResponseWriter a gRPC attempt is served
// with: the service's HTTP work path writes the machine's answer into
// it, and serveGRPC turns that into a status and trailers.
type answerRecorder struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (r *answerRecorder) Header() http.Header { return r.h }

func (r *answerRecorder) WriteHeader(st int) {
	if r.status == 0 {
		r.status = st
	}
}

func (r *answerRecorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.body.Len()+len(b) > 1024 {
		b = b[:max(0, 1024-r.body.Len())] // a status message, not a payload
	}
	return r.body.Write(b)
}

// serveGRPC serves one unary call of any method: the request's bytes and
// metadata become the attempt the HTTP path serves, so the one callee
// machine decides, and its answer becomes a status code with the
// pushback in grpc-retry-pushback-ms. The call's deadline (grpc-timeout)
// is the propagated remaining deadline.
func (s *Service) serveGRPC(recv grpcReceivers, stream grpc.ServerStream) error {
	ctx := stream.Context()
	body, err := recv.receive(ctx, stream)
	if err != nil {
		return err
	}
	defer body.Close()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", body)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") {
			continue
		}
		r.Header[http.CanonicalHeaderKey(k)] = vs
	}
	r.Header.Del(transport.HeaderDeadline)
	if dl, ok := ctx.Deadline(); ok {
		r.Header.Set(transport.HeaderDeadline, strconv.FormatFloat(float64(time.Until(dl))/float64(time.Millisecond), 'f', 3, 64))
	}
	rec := &answerRecorder{h: http.Header{}}
	s.work(rec, r)
	switch rec.status {
	case http.StatusOK:
		return stream.SendMsg(&transport.Frame{})
	case 0:
		// No answer: the caller went away or its reply was dropped.
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		return status.Error(codes.Unavailable, "service stopped")
	}
	trailer := metadata.MD{}
	if o := rec.h.Get(transport.HeaderOutcome); o != "" {
		trailer.Set(transport.MetadataOutcome, o)
	}
	pushback := false
	if v := rec.h.Get(transport.HeaderRetryAfterMs); v != "" {
		ms, _ := strconv.ParseFloat(v, 64)
		trailer.Set(transport.MetadataRetryAfter, v)
		trailer.Set(transport.MetadataPushback, strconv.FormatInt(int64(math.Ceil(ms)), 10))
		pushback = true
	}
	if rec.h.Get(transport.HeaderDontRetry) != "" {
		trailer.Set(transport.MetadataDontRetry, "1")
		trailer.Set(transport.MetadataPushback, "-1")
		pushback = true
	}
	stream.SetTrailer(trailer)
	msg := strings.TrimSpace(rec.body.String())
	if msg == "" {
		msg = rec.h.Get(transport.HeaderOutcome)
	}
	return status.Error(codeOfAnswer(rec.status, pushback && rec.status == http.StatusServiceUnavailable), msg)
}

// grpcCluster is the gRPC side of a Cluster: a server per service and the
// client their downstream calls share; with tracing, a client per calling
// service instead, whose client spans it names.
type grpcCluster struct {
	client    *transport.GRPCClient
	tracing   *edge.Tracing
	dial      func(ctx context.Context, network, addr string) (net.Conn, error) // the clients' dialer (nil: a net.Dialer)
	byService map[string]*transport.GRPCClient
	servers   []*grpc.Server
	done      []chan struct{}
}

// clientOf is the client of service's downstream calls.
func (g *grpcCluster) clientOf(service string) (*transport.GRPCClient, error) {
	if g.tracing == nil {
		return g.client, nil
	}
	if gc := g.byService[service]; gc != nil {
		return gc, nil
	}
	gc, err := transport.NewGRPCClient(transport.GRPCClientOptions{StatsHandler: g.tracing.GRPCClientHandler(service, ""), Dial: g.dial})
	if err != nil {
		return nil, err
	}
	if g.byService == nil {
		g.byService = map[string]*transport.GRPCClient{}
	}
	g.byService[service] = gc
	return gc, nil
}

// closeClients closes the clients' connections.
func (g *grpcCluster) closeClients() {
	g.client.Close()
	for _, gc := range g.byService {
		gc.Close()
	}
}

// serve starts a gRPC server for each service on its listener.
func (g *grpcCluster) serve(services []*Service, lns []net.Listener) {
	for i, s := range services {
		var opts []grpc.ServerOption
		if g.tracing != nil {
			opts = append(opts, grpc.StatsHandler(g.tracing.GRPCServerHandler(s.name)))
		}
		srv := NewGRPCServer(s, opts...)
		done := make(chan struct{})
		g.servers = append(g.servers, srv)
		g.done = append(g.done, done)
		go func(ln net.Listener) {
			defer close(done)
			_ = srv.Serve(ln)
		}(lns[i])
	}
}

// close stops the servers gracefully, at once when ctx ends first, and
// closes the client's connections.
func (g *grpcCluster) close(ctx context.Context) error {
	var err error
	for i, srv := range g.servers {
		stopped := make(chan struct{})
		go func() {
			srv.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			srv.Stop()
			<-stopped
			err = ctx.Err()
		}
		<-g.done[i]
	}
	g.closeClients()
	return err
}
