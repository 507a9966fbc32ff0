package config

import (
	"errors"
	"fmt"
)

// ErrUnknownConfig is the class of errors for a property or topic config name that Runnel
// does not know. Load, Set, ValidateTopicConfig and ResolveTopic return it inside an
// *Error; check it with errors.Is. CreateTopics and AlterConfigs answer it with Kafka's
// INVALID_CONFIG.
var ErrUnknownConfig = errors.New("unknown config")

// ErrInvalidConfig is the class of errors for a known name with a value of the wrong type,
// out of range, or in conflict with another property. Returned inside an *Error by the same
// functions as ErrUnknownConfig.
var ErrInvalidConfig = errors.New("invalid config value")

// Error names the property and the value that were rejected, so that the one line a user
// sees at start-up points at the line to fix. Use errors.As to get at it and errors.Is
// with ErrUnknownConfig or ErrInvalidConfig to classify it.
type Error struct {
	Key    string // the property or topic config name, as given
	Value  string // the rejected value ("" for an unknown name)
	Reason string // why, phrased to follow the quoted value: `is not an integer`
	Origin string // where it came from: a file name or "--set"; "" if not from input
	// Suggestion is the known name an unknown one most likely meant ("" if none is
	// close): suggest.go.
	Suggestion string

	unknown bool // the name itself is unknown (ErrUnknownConfig)
}

// hints turn the most common mistakes, keys from ZooKeeper-era configurations, into
// advice.
var hints = map[string]string{
	"broker.id":                       "use node.id",
	"zookeeper.connect":               "Runnel keeps its metadata in its own Raft quorum; remove it",
	"zookeeper.connection.timeout.ms": "Runnel keeps its metadata in its own Raft quorum; remove it",
}

// Error reads `config: unknown property "x"` or `config: key: "value" reason`, followed
// by the origin in parentheses when known.
func (e *Error) Error() string {
	var s string
	if e.unknown {
		s = fmt.Sprintf("config: %s %q", e.Reason, e.Key)
		if h, ok := hints[e.Key]; ok {
			s += "; " + h
		}
	} else {
		s = fmt.Sprintf("config: %s: %q %s", e.Key, e.Value, e.Reason)
	}
	if e.Origin != "" {
		s += " (in " + e.Origin + ")"
	}
	if _, hinted := hints[e.Key]; e.unknown && !hinted && e.Suggestion != "" {
		s += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return s
}

// Unwrap gives the class: ErrUnknownConfig or ErrInvalidConfig.
func (e *Error) Unwrap() error {
	if e.unknown {
		return ErrUnknownConfig
	}
	return ErrInvalidConfig
}

func unknownProperty(key string) *Error {
	return &Error{Key: key, Reason: "unknown property", unknown: true, Suggestion: suggestBroker(key)}
}

func unknownTopicConfig(key string) *Error {
	return &Error{Key: key, Reason: "unknown topic config", unknown: true, Suggestion: suggestTopic(key)}
}

func invalid(key, value, reason string) *Error {
	return &Error{Key: key, Value: value, Reason: reason}
}

// withOrigin stamps where a rejected property came from onto err, if it is an *Error.
func withOrigin(err error, origin string) error {
	var e *Error
	if errors.As(err, &e) && e.Origin == "" {
		e.Origin = origin
	}
	return err
}
