package config

import (
	"fmt"
	"strings"
)

// BootstrapUser is one NAME:PASSWORD entry of sasl.bootstrap.users.
type BootstrapUser struct {
	Name, Password string
}

// ParseBootstrapUsers reads sasl.bootstrap.users: NAME:PASSWORD entries separated by
// commas (so a password cannot hold a comma; it may hold colons: the name ends at the
// first one). Its error never repeats a password, as the property is sensitive.
func ParseBootstrapUsers(v string) ([]BootstrapUser, error) {
	var out []BootstrapUser
	seen := map[string]bool{}
	for i, e := range splitList(v) {
		name, password, ok := strings.Cut(e, ":")
		name = strings.TrimSpace(name)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("entry %d is not NAME:PASSWORD", i+1)
		case password == "":
			return nil, fmt.Errorf("user %q has an empty password", name)
		case seen[name]:
			return nil, fmt.Errorf("user %q is named twice", name)
		}
		seen[name] = true
		out = append(out, BootstrapUser{Name: name, Password: password})
	}
	return out, nil
}

func checkBootstrapUsers(v string) string {
	if _, err := ParseBootstrapUsers(v); err != nil {
		return "has " + err.Error()
	}
	return ""
}
