package model_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStreamNamesAreModels: the drivers (sim, load, broker) name every
// random stream through model (ArrivalsStream, ServiceStream,
// ConsumerStream, PublishStream, ...), never by a literal or a format of
// their own, so a stream means the same in every mode: a call of a
// function named Stream or stream whose name argument holds a string
// literal is a second spelling of a name.
func TestStreamNamesAreModels(t *testing.T) {
	for _, dir := range []string{"../sim", "../load", "../broker"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				var name string
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					name = fn.Name
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				}
				if name != "Stream" && name != "stream" {
					return true
				}
				arg := call.Args[len(call.Args)-1]
				ast.Inspect(arg, func(m ast.Node) bool {
					if lit, ok := m.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						t.Errorf("%s: stream named by the literal %s, not by model", fset.Position(lit.Pos()), lit.Value)
					}
					return true
				})
				return true
			})
		}
	}
}
