package link

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

func TestResolveSourceProps(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "link.properties")
	if err := os.WriteFile(file, []byte("# the source's secrets\nsource.password=fr0m-file\nother=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNNEL_TEST_LINK_SECRET", "fr0m-env")
	ok := map[string]struct{ in, want string }{
		"file key":     {"${file:" + file + ":source.password}", "fr0m-file"},
		"env":          {"${env:RUNNEL_TEST_LINK_SECRET}", "fr0m-env"},
		"embedded":     {`user="u" password="${env:RUNNEL_TEST_LINK_SECRET}";`, `user="u" password="fr0m-env";`},
		"plain":        {"plain-password", "plain-password"},
		"literal $":    {"pa$$word${", "pa$$word${"},
		"literal ${}":  {"${}", "${}"},
		"other ${...}": {"${vault:secret/x:pw}", "${vault:secret/x:pw}"},
	}
	for name, c := range ok {
		got, err := resolveSourceProps("l", map[string]string{"sasl.password": c.in})
		if err != nil || got["sasl.password"] != c.want {
			t.Errorf("%s: %q resolved to %q (%v), want %q", name, c.in, got["sasl.password"], err, c.want)
		}
	}
	bad := map[string]struct{ in, wantErr string }{
		"missing file": {"${file:" + filepath.Join(dir, "nope.properties") + ":k}", "nope.properties"},
		"missing key":  {"${file:" + file + ":absent}", "has no property absent"},
		"missing env":  {"${env:RUNNEL_TEST_LINK_UNSET}", "environment variable RUNNEL_TEST_LINK_UNSET is not set"},
		"file no path": {"${file:source.password}", "want ${file:PATH:KEY}"},
	}
	for name, c := range bad {
		_, err := resolveSourceProps("l", map[string]string{"security.protocol": "sasl_plaintext", "sasl.password": c.in})
		if err == nil {
			t.Errorf("%s: %q resolved without an error", name, c.in)
			continue
		}
		msg := err.Error()
		for _, want := range []string{"link l", "sasl.password", c.in, c.wantErr} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q does not say %q", name, msg, want)
			}
		}
		if strings.Contains(msg, "fr0m-") {
			t.Errorf("%s: error %q shows a secret", name, msg)
		}
	}
}

func TestSecretProperty(t *testing.T) {
	for _, k := range []string{"sasl.password", "sasl.jaas.config", "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password", "oauth.client.secret"} {
		if !SecretProperty(k) {
			t.Errorf("%s is not taken for a secret", k)
		}
	}
	for _, k := range []string{"sasl.username", "security.protocol", "ssl.key.location"} {
		if SecretProperty(k) {
			t.Errorf("%s is taken for a secret", k)
		}
	}
}

// TestSourceOptionsUnresolvedReference: a reference this node cannot resolve stops
// the building of the link's source client with an *UnresolvedError naming the link,
// the property and the reference (the Manager records it as the link's start error
// on this node), rather than yielding a client whose every dial fails; an unknown key
// is still named as such.
func TestSourceOptionsUnresolvedReference(t *testing.T) {
	const ref = "${env:RUNNEL_TEST_LINK_UNSET_VARIABLE}"
	os.Unsetenv("RUNNEL_TEST_LINK_UNSET_VARIABLE")
	l := &metadata.Link{Name: "dr", Source: "127.0.0.1:1", SourceProps: map[string]string{
		"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": ref}}
	opts, err := sourceOptions(l)
	var unresolved *UnresolvedError
	if !errors.As(err, &unresolved) || opts != nil {
		t.Fatalf("sourceOptions with %s unset: %d options, error %v; want no options and an *UnresolvedError", ref, len(opts), err)
	}
	for _, want := range []string{"link dr", "sasl.password", ref} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	l.SourceProps["sasl.passwrd"] = ref
	if _, err := sourceOptions(l); errors.As(err, &unresolved) || err == nil || !strings.Contains(err.Error(), `unknown source client property "sasl.passwrd"`) {
		t.Errorf("an unknown key beside an unresolved reference: %v, want the unknown key named", err)
	}
}
