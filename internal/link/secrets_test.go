package link

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
