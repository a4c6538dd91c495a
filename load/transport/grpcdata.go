package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// reflectionTimeout bounds asking a server for its descriptors.
const reflectionTimeout = 10 * time.Second

// Bounds on what a reflection server can make the client hold or ask:
// a method's descriptors are a few files of kilobytes, and a hostile
// server answering every import with more imports, or with megabytes,
// grew the client to 3.2 GB within reflectionTimeout.
const (
	maxReflectFiles    = 1000     // files received, all answers together
	maxReflectBytes    = 16 << 20 // bytes of descriptors received
	maxReflectRequests = 1000     // requests sent on the stream
)

// reflectionV1AlphaMethod is the reflection service of servers that
// predate v1.
const reflectionV1AlphaMethod = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"

// EncodeGRPCRequest encodes data, the JSON form of the request message of
// target's method (grpc://HOST:PORT/pkg.Service/Method), as protobuf
// bytes to send with every attempt, as grpcurl and ghz do. The method's
// descriptor comes from protoset, a FileDescriptorSet (protoc
// --descriptor_set_out, buf build -o) when given, else from the server's
// reflection service (v1, else v1alpha).
func EncodeGRPCRequest(ctx context.Context, target string, data, protoset []byte) ([]byte, error) {
	addr, method, err := ParseGRPCTarget(target)
	if err != nil {
		return nil, err
	}
	svc, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	var files *protoregistry.Files
	if protoset != nil {
		var set descriptorpb.FileDescriptorSet
		if err := proto.Unmarshal(protoset, &set); err != nil {
			return nil, fmt.Errorf("descriptor set: %w", err)
		}
		if files, err = buildFiles(set.File); err != nil {
			return nil, fmt.Errorf("descriptor set: %w", err)
		}
	} else {
		rctx, cancel := context.WithTimeout(ctx, reflectionTimeout)
		defer cancel()
		if files, err = reflectFiles(rctx, addr, svc); err != nil {
			return nil, fmt.Errorf("server reflection at %s (or pass a descriptor set): %w", addr, err)
		}
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("service %s: not described: %w", svc, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s: not a service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("service %s has no method %s", svc, name)
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, fmt.Errorf("method %s/%s streams: only unary methods are driven", svc, name)
	}
	msg := dynamicpb.NewMessage(md.Input())
	if len(data) > 0 {
		if err := (protojson.UnmarshalOptions{Resolver: dynamicTypes{files}}).Unmarshal(data, msg); err != nil {
			return nil, fmt.Errorf("data as %s: %w", md.Input().FullName(), err)
		}
	}
	return proto.Marshal(msg)
}

// buildFiles makes a registry of fdps, taking dependencies that are not
// among them (well-known types) from what the program links.
func buildFiles(fdps []*descriptorpb.FileDescriptorProto) (*protoregistry.Files, error) {
	byName := make(map[string]*descriptorpb.FileDescriptorProto, len(fdps))
	for _, f := range fdps {
		byName[f.GetName()] = f
	}
	files := new(protoregistry.Files)
	var add func(name string, depth int) error
	add = func(name string, depth int) error {
		if _, err := files.FindFileByPath(name); err == nil {
			return nil
		}
		if depth > 100 {
			return fmt.Errorf("%s: imports nested too deep (a cycle?)", name)
		}
		f, ok := byName[name]
		if !ok {
			fd, err := protoregistry.GlobalFiles.FindFileByPath(name)
			if err != nil {
				return fmt.Errorf("%s: not found", name)
			}
			return files.RegisterFile(fd)
		}
		for _, dep := range f.GetDependency() {
			if err := add(dep, depth+1); err != nil {
				return err
			}
		}
		fd, err := protodesc.NewFile(f, files)
		if err != nil {
			return err
		}
		return files.RegisterFile(fd)
	}
	for _, f := range fdps {
		if err := add(f.GetName(), 0); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// reflectFiles asks the server at addr for the file defining symbol and
// every file it imports.
func reflectFiles(ctx context.Context, addr, symbol string) (*protoregistry.Files, error) {
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// v1 first; servers that predate it serve v1alpha, whose messages are
	// v1's on the wire.
	var stream grpc.ClientStream
	var files, bytes, requests int
	ask := func(req *reflectionv1.ServerReflectionRequest) ([]*descriptorpb.FileDescriptorProto, error) {
		if requests++; requests > maxReflectRequests {
			return nil, fmt.Errorf("more than %d requests for the files a method needs, the limit (is the server answering imports with imports?)", maxReflectRequests)
		}
		// io.EOF: the server ended the stream (an unknown service, say);
		// RecvMsg tells why.
		if err := stream.SendMsg(req); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		resp := new(reflectionv1.ServerReflectionResponse)
		if err := stream.RecvMsg(resp); err != nil {
			return nil, err
		}
		if e := resp.GetErrorResponse(); e != nil {
			return nil, errors.New(e.GetErrorMessage())
		}
		var out []*descriptorpb.FileDescriptorProto
		for _, b := range resp.GetFileDescriptorResponse().GetFileDescriptorProto() {
			if files, bytes = files+1, bytes+len(b); files > maxReflectFiles || bytes > maxReflectBytes {
				return nil, fmt.Errorf("the server sent more than %d descriptor files or %d MiB of them, the limit", maxReflectFiles, maxReflectBytes>>20)
			}
			f := new(descriptorpb.FileDescriptorProto)
			if err := proto.Unmarshal(b, f); err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		return out, nil
	}
	first := &reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol}}
	var got []*descriptorpb.FileDescriptorProto
	for _, method := range []string{reflectionv1.ServerReflection_ServerReflectionInfo_FullMethodName, reflectionV1AlphaMethod} {
		if stream, err = cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method); err != nil {
			return nil, err
		}
		defer stream.CloseSend()
		if got, err = ask(first); status.Code(err) != codes.Unimplemented {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", symbol, err)
	}
	// Servers may leave out imports they sent before or think known: ask
	// for each missing one by name, unless the program links it.
	have := map[string]bool{}
	for _, f := range got {
		have[f.GetName()] = true
	}
	for i := 0; i < len(got) && i < 1000; i++ {
		for _, dep := range got[i].GetDependency() {
			if have[dep] {
				continue
			}
			have[dep] = true
			if _, err := protoregistry.GlobalFiles.FindFileByPath(dep); err == nil {
				continue
			}
			more, err := ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_FileByFilename{FileByFilename: dep}})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", dep, err)
			}
			for _, f := range more {
				if !have[f.GetName()] || f.GetName() == dep {
					have[f.GetName()] = true
					got = append(got, f)
				}
			}
		}
	}
	return buildFiles(got)
}

// dynamicTypes resolves the message types of files for protojson (Any
// fields), then the linked ones.
type dynamicTypes struct{ files *protoregistry.Files }

func (r dynamicTypes) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if d, err := r.files.FindDescriptorByName(name); err == nil {
		if md, ok := d.(protoreflect.MessageDescriptor); ok {
			return dynamicpb.NewMessageType(md), nil
		}
	}
	return protoregistry.GlobalTypes.FindMessageByName(name)
}

func (r dynamicTypes) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	name := url
	if i := strings.LastIndexByte(url, '/'); i >= 0 {
		name = url[i+1:]
	}
	return r.FindMessageByName(protoreflect.FullName(name))
}

func (r dynamicTypes) FindExtensionByName(name protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(name)
}

func (r dynamicTypes) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(message, field)
}
