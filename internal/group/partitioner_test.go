package group

import "testing"

func TestJavaStringHashCode(t *testing.T) {
	// Values from java.lang.String.hashCode.
	cases := map[string]int32{
		"":                       0,
		"a":                      97,
		"ab":                     3105,
		"hello":                  99162322,
		"console-consumer-12345": javaRef("console-consumer-12345"),
		"é":                      233,
		"😀":                      1772899, // surrogate pair D83D DE00: 55357*31 + 56832
		"polygenelubricants":     -2147483648,
	}
	for s, want := range cases {
		if got := javaStringHashCode(s); got != want {
			t.Errorf("hash(%q) = %d, want %d", s, got, want)
		}
	}
}

// javaRef is the textbook definition over bytes, valid for ASCII.
func javaRef(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		h = h*31 + int32(s[i])
	}
	return h
}

func TestPartitionFor(t *testing.T) {
	// "polygenelubricants" hashes to Integer.MIN_VALUE, which Kafka's Utils.abs maps to 0.
	if p := PartitionFor("polygenelubricants", 50); p != 0 {
		t.Fatalf("MIN_VALUE hash: partition %d, want 0", p)
	}
	if p := PartitionFor("hello", 50); p != 99162322%50 {
		t.Fatalf("hello: %d", p)
	}
	for _, g := range []string{"a", "group-1", "x😀y", "\xff"} {
		if p := PartitionFor(g, 50); p < 0 || p >= 50 {
			t.Fatalf("%q: partition %d out of range", g, p)
		}
	}
}
