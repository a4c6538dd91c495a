package serve

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/stormsim/stormsim/load/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestEncodeGRPCRequest: --data JSON becomes the method's request message
// through server reflection (the emulated services describe GRPCMethod;
// v1, else v1alpha) and through a descriptor set alike, and what cannot be encoded is an
// error naming the method or the message.
func TestEncodeGRPCRequest(t *testing.T) {
	cl := startGRPCScenario(t, "data.yaml", `
name: data
seed: 1
duration: 1s
workload: {entry: api, rate: 1}
services:
  - name: api
    workers: 1
    service_time: {dist: constant, value: 1ms}
`)
	want, err := structpb.NewStruct(map[string]any{"user": "ada", "n": 3})
	if err != nil {
		t.Fatal(err)
	}
	wantB, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	set, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(structpb.File_google_protobuf_struct_proto),
		protodesc.ToFileDescriptorProto(emptypb.File_google_protobuf_empty_proto),
		protodesc.ToFileDescriptorProto(emulatedFile),
	}})
	if err != nil {
		t.Fatal(err)
	}
	target := cl.URLs["api"]
	base := strings.TrimSuffix(target, transport.GRPCMethod)
	// A server older than reflection v1 serves only v1alpha.
	old := grpc.NewServer()
	reflectionv1alpha.RegisterServerReflectionServer(old, reflection.NewServer(reflection.ServerOptions{Services: emulatedServices{}, DescriptorResolver: emulatedResolver{}}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go old.Serve(ln)
	defer old.Stop()
	oldTarget := "grpc://" + ln.Addr().String() + "/" + transport.GRPCMethod
	for _, tc := range []struct {
		name, target, data string
		protoset           []byte
		err                string
	}{
		{"reflection", target, `{"user": "ada", "n": 3}`, nil, ""},
		{"protoset", target, `{"user": "ada", "n": 3}`, set, ""},
		{"reflection v1alpha", oldTarget, `{"user": "ada", "n": 3}`, nil, ""},
		{"no such method", base + "stormsim.v1.Emulated/Nope", `{}`, set, "no method Nope"},
		{"no such service", base + "x.Y/Z", `{}`, nil, "x.Y"},
		{"bad json", target, `{"user": `, set, "google.protobuf.Struct"},
		{"bad protoset", target, `{}`, []byte("not a descriptor set"), "descriptor set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := transport.EncodeGRPCRequest(context.Background(), tc.target, []byte(tc.data), tc.protoset)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Map fields encode in any order: compare decoded.
			var gotS structpb.Struct
			if err := proto.Unmarshal(got, &gotS); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(&gotS, want) {
				t.Errorf("encoded %x, want %x", got, wantB)
			}
		})
	}
}
