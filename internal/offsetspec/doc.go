// Package offsetspec is the language that names a position in a partition, as
// `runnel consume --offset`, `runnel group reset-offsets --to` and the console's
// reset-offsets form (whose "to" is the CLI's --to) take it: an offset, earliest,
// latest, -N (consume only), current (reset only), @TIMESTAMP or an RFC 3339 time;
// and the reset's rule for turning a position into the offset to commit.
//
// It is a leaf: it imports nothing of the module, and does no I/O; its callers list
// the offsets.
package offsetspec
