package config

import (
	"os"
	"path/filepath"
	"testing"
)

// An unknown name is answered with the name it most likely meant, from --set, from a
// server.properties file and for a topic config (CreateTopics, AlterConfigs); a name
// close to none gets no suggestion.
func TestDidYouMean(t *testing.T) {
	file := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(file, []byte("log.retension.ms=1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"--set", load(t, "", "num.partition=3"), `config: unknown property "num.partition" (in --set); did you mean "num.partitions"?`},
		{"file", load(t, file), `config: unknown property "log.retension.ms" (in ` + file + `); did you mean "log.retention.ms"?`},
		{"a topic config given to the broker", load(t, "", "retention.ms=1000"), `config: unknown property "retention.ms" (in --set); did you mean "log.retention.ms"?`},
		{"far from every name", load(t, "", "foo=1"), `config: unknown property "foo" (in --set)`},
		{"topic config", ValidateTopicConfig("cleanup.polcy", "compact"), `config: unknown topic config "cleanup.polcy"; did you mean "cleanup.policy"?`},
		{"a broker property given to a topic", ValidateTopicConfig("log.retention.ms", "1"), `config: unknown topic config "log.retention.ms"; did you mean "retention.ms"?`},
		{"hint wins", load(t, "", "broker.id=1"), `config: unknown property "broker.id"; use node.id (in --set)`},
	} {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.name, tt.err, tt.want)
		}
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance(kitten, sitting) = %d, want 3", d)
	}
}

func load(t *testing.T, file string, sets ...string) error {
	t.Helper()
	_, err := Load(file, sets)
	return err
}
