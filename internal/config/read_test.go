package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// untagged gives, for the broker properties without a field of their own, the Broker
// field derive feeds them into.
var untagged = map[string]string{
	"log.dir": "DataDir", "log.dirs": "DataDir",
	"listeners": "Listeners", "listen": "Listeners",
	"advertised.listeners": "Listeners", "advertise": "Listeners",
	"listener.security.protocol.map": "Listeners", "inter.broker.listener.name": "InterBroker",
	"ssl.keystore.location": "Listeners", "ssl.truststore.location": "Listeners", "ssl.client.auth": "Listeners",
	"sasl.enabled.mechanisms": "Listeners",
	"controller.listen":       "ControllerListen", "controller.listener.names": "ControllerListen",
	"controller.quorum.voters": "Controllers", "controllers": "Controllers",
}

// validatedOnly are properties Runnel acts on only by refusing the values it cannot
// honour at load time.
var validatedOnly = map[string]string{
	"ssl.keystore.type":   "PEM is the one format Runnel reads",
	"ssl.truststore.type": "PEM is the one format Runnel reads",
}

// selectorsOutsideConfig gives every name selected (x.Name) in the module's non-test
// Go files outside this package.
func selectorsOutsideConfig(t *testing.T) map[string]bool {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := filepath.Abs(".")
	fset := token.NewFileSet()
	sel := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == self || (path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil // someone's file in progress; the build reports it
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && !isDefaultCall(s.X) {
				sel[s.Sel.Name] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// isDefaultCall reports whether x is config.Default(): a package reading its default
// from the table does not read the configured value.
func isDefaultCall(x ast.Expr) bool {
	c, ok := x.(*ast.CallExpr)
	if !ok {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "Default"
}

// Every broker property is marked ignored (and then has no field, so nothing reads it
// by accident), feeds a topic config's default, or feeds a Broker field that code
// outside this package reads. A property that is validated and documented but read by
// nothing fails here: wire it, or mark it ignored (start-up then warns when it is set).
// The check is by field name, so a field of another struct with the same name (Broker's
// FetchMaxBytes and replica.Options') can hide a Broker field nothing reads.
func TestEveryPropertyIsRead(t *testing.T) {
	fields := map[string]string{} // property -> Broker field
	bt := reflect.TypeOf(Broker{})
	for i := range bt.NumField() {
		if tag := bt.Field(i).Tag.Get("config"); tag != "" {
			fields[tag] = bt.Field(i).Name
		}
	}
	sel := selectorsOutsideConfig(t)
	for _, p := range brokerProps {
		field, tagged := fields[p.name]
		if !tagged {
			field = untagged[p.name]
		}
		switch {
		case p.ignored:
			if tagged {
				t.Errorf("%s is marked ignored but has the field Broker.%s: drop the field, or wire it and unmark it", p.name, field)
			}
		case p.topic != "":
			if !sel["TopicDefaults"] && !sel["ResolveTopic"] {
				t.Errorf("%s is the default of topic config %s, but nothing reads the topic defaults", p.name, p.topic)
			}
		case validatedOnly[p.name] != "":
		case field == "":
			t.Errorf("%s is not marked ignored and feeds no Broker field: wire it or mark it ignored", p.name)
		case !sel[field]:
			t.Errorf("%s (Broker.%s) is read by nothing outside internal/config: wire it or mark it ignored", p.name, field)
		}
	}
}
