package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Every sentinel of the table answers its code, wrapped or not, and WithCode gives
// it that code while keeping the sentinel and its message.
func TestErrorTable(t *testing.T) {
	if errorCode(nil) != 0 || WithCode(nil) != nil {
		t.Fatal("nil must answer no error")
	}
	for _, e := range errorTable {
		wrapped := fmt.Errorf("topic %q: %w", "orders", e.err)
		if got := errorCode(wrapped); got != e.kerr.Code && !shadowed(e.err) {
			t.Errorf("errorCode(%v) = %d, want %s (%d)", e.err, got, e.kerr.Message, e.kerr.Code)
		}
		coded := WithCode(wrapped)
		var ke *kerr.Error
		if !errors.As(coded, &ke) || !errors.Is(coded, e.err) {
			t.Errorf("WithCode(%v) = %v: want a *kerr.Error wrapping the sentinel", e.err, coded)
		}
		if msg := *reasonMessage(coded); msg != wrapped.Error() {
			t.Errorf("WithCode(%v) answers the message %q, want %q", e.err, msg, wrapped.Error())
		}
	}
	other := errors.New("other")
	if WithCode(other) != other || errorCode(other) != kerr.UnknownServerError.Code {
		t.Error("an error the table does not know must pass WithCode as it is and answer UNKNOWN_SERVER_ERROR")
	}
}

// shadowed reports whether an earlier row of the table catches err (the same
// sentinel, listed by two packages).
func shadowed(err error) bool {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.err != err
		}
	}
	return false
}
