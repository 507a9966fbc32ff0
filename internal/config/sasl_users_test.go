package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseBootstrapUsers(t *testing.T) {
	got, err := ParseBootstrapUsers(" admin:s3cret , svc:pa:ss:word")
	want := []BootstrapUser{{"admin", "s3cret"}, {"svc", "pa:ss:word"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	// A malformed value fails start-up naming the property, never the password.
	for v, reason := range map[string]string{
		"admin":                 "entry 1 is not NAME:PASSWORD",
		"a:x,:hunter2":          "entry 2 is not NAME:PASSWORD",
		"admin:":                `user "admin" has an empty password`,
		"admin:x,admin:hunter2": `user "admin" is named twice`,
	} {
		_, err := Load("", []string{"sasl.bootstrap.users=" + v})
		if err == nil || !strings.Contains(err.Error(), "sasl.bootstrap.users") || !strings.Contains(err.Error(), reason) ||
			strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v; want an error naming sasl.bootstrap.users with %q, without the password", v, err, reason)
		}
	}
}
