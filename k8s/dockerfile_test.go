package k8s

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfileMatchesManifests checks the image contract the manifests
// rely on, since no container build can run here: a static build
// (CGO_ENABLED=0) of ./cmd/stormsim, a distroless nonroot final stage whose
// user is the uid the pods run as, and a Go version matching go.mod's.
func TestDockerfileMatchesManifests(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	var froms []string
	for _, line := range strings.Split(df, "\n") {
		if strings.HasPrefix(line, "FROM ") {
			froms = append(froms, line)
		}
	}
	if len(froms) != 2 || !strings.Contains(froms[0], " AS build") {
		t.Fatalf("want a two-stage build (FROM golang… AS build, FROM distroless), got %q", froms)
	}
	if froms[1] != "FROM gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("final stage %q: the manifests run as uid 65532, the distroless nonroot user", froms[1])
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/stormsim", "COPY --from=build", "USER nonroot:nonroot", "ENTRYPOINT ["} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	gomod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?$`).FindStringSubmatch(string(gomod))
	arg := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\d+\.\d+)(\.\d+)?$`).FindStringSubmatch(df)
	if goLine == nil || arg == nil || goLine[1] != arg[1] {
		t.Errorf("Dockerfile GO_VERSION %v does not match go.mod's go %v", arg, goLine)
	}
	// The pods' securityContext must name the same user.
	var job bytes.Buffer
	if err := Render(&job, baseOptions("capacity", 2)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(job.String(), "runAsUser: 65532") {
		t.Error("rendered pods do not run as uid 65532")
	}
}
