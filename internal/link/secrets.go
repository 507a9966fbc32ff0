package link

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/runnel-io/runnel/internal/config"
)

// refPattern is KIP-297's config reference, ${provider:[path:]key}, with Kafka's own
// pattern (ConfigTransformer.DEFAULT_PATTERN): the path is optional and none of the
// three parts holds a '}'.
var refPattern = regexp.MustCompile(`\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}`)

// resolveSourceProps returns props with every config reference in their values
// replaced by what it names on this node: ${file:PATH:KEY}, the property KEY of the
// properties file PATH, and ${env:NAME}, this process's environment variable NAME.
// The metadata keeps the references as written, so that the secrets never reach the
// metadata log; each node resolves them when it builds the link's source client.
//
// As in Kafka, a ${...} whose provider is neither file nor env, and any other '$', is
// kept as written. A reference that cannot be resolved is an error naming the link,
// the property and the reference, never the value of anything it would have read.
func resolveSourceProps(link string, props map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(props))
	files := map[string]map[string]string{} // by path: each file read once per call
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same property is named first on every node
	for _, k := range keys {
		v, err := resolveValue(props[k], files)
		if err != nil {
			return nil, fmt.Errorf("link %s: source property %s: %w", link, k, err)
		}
		out[k] = v
	}
	return out, nil
}

func resolveValue(v string, files map[string]map[string]string) (string, error) {
	if !strings.Contains(v, "${") {
		return v, nil
	}
	var firstErr error
	out := refPattern.ReplaceAllStringFunc(v, func(ref string) string {
		m := refPattern.FindStringSubmatch(ref)
		provider, hasPath, path, key := m[1], m[2] != "", m[3], m[4]
		var (
			s   string
			err error
		)
		switch provider {
		case "env":
			if hasPath {
				err = fmt.Errorf("%s: want ${env:NAME}", ref)
				break
			}
			var ok bool
			if s, ok = os.LookupEnv(key); !ok {
				err = fmt.Errorf("%s: environment variable %s is not set on this node", ref, key)
			}
		case "file":
			if !hasPath || path == "" || key == "" {
				err = fmt.Errorf("%s: want ${file:PATH:KEY}, KEY a property of the properties file PATH", ref)
				break
			}
			s, err = fileKey(ref, path, key, files)
		default:
			return ref // not a provider Runnel has: kept as written, as Kafka does
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return s
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

func fileKey(ref, path, key string, files map[string]map[string]string) (string, error) {
	props, ok := files[path]
	if !ok {
		fh, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", ref, err)
		}
		props, err = config.ParseProperties(fh)
		fh.Close()
		if err != nil {
			// The parse error may quote a line of the file: name the file only.
			return "", fmt.Errorf("%s: %s is not a properties file", ref, path)
		}
		files[path] = props
	}
	s, ok := props[key]
	if !ok {
		return "", fmt.Errorf("%s: %s has no property %s", ref, path, key)
	}
	return s, nil
}

// SecretProperty reports whether a source client property holds a secret: the
// SASL password and JAAS config, the TLS key and store passwords, and any property
// whose name says password or secret. Such a property is best given as a reference
// (resolveSourceProps) and its value is never printed.
func SecretProperty(key string) bool {
	k := strings.ToLower(key)
	switch k {
	case "sasl.password", "sasl.jaas.config", "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password":
		return true
	}
	return strings.Contains(k, "password") || strings.Contains(k, "secret")
}

// IsReference reports whether v is, or holds, a config reference a node resolves
// (${file:...} or ${env:...}), rather than a plain value.
func IsReference(v string) bool {
	for _, m := range refPattern.FindAllStringSubmatch(v, -1) {
		if m[1] == "file" || m[1] == "env" {
			return true
		}
	}
	return false
}
