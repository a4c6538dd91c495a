package load

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
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
// bodies, and so is the metadata.
func NewGRPCServer(s *Service) *grpc.Server {
	srv := grpc.NewServer(
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnknownServiceHandler(s.serveGRPC),
		grpc.MaxRecvMsgSize(maxBody),
		grpc.MaxHeaderListSize(maxHeaderBytes),
	)
	opts := reflection.ServerOptions{Services: emulatedServices{}, DescriptorResolver: emulatedResolver{}}
	reflectionv1.RegisterServerReflectionServer(srv, reflection.NewServerV1(opts))
	// Older clients (grpcurl, ghz before v1) ask the v1alpha service.
	reflectionv1alpha.RegisterServerReflectionServer(srv, reflection.NewServer(opts))
	return srv
}

// grpcCluster is the gRPC side of a Cluster: a server per service and the
// client their downstream calls share.
type grpcCluster struct {
	client  *GRPCClient
	servers []*grpc.Server
	done    []chan struct{}
}

// serve starts a gRPC server for each service on its listener.
func (g *grpcCluster) serve(services []*Service, lns []net.Listener) {
	for i, s := range services {
		srv := NewGRPCServer(s)
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
	g.client.Close()
	return err
}
