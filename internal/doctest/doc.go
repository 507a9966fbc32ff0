// Package doctest runs the `runnel` commands that README.md and docs/*.md show, so
// that documentation that drifts from the binary fails CI (issue 31). It has tests
// only: TestDocCommands reads every command out of the pages' code blocks, checks
// that each names an existing command with existing flags (a synopsis such as
// `runnel reassign plan [--nodes ID,ID,...]` included), and runs each that one node
// can serve against a real in-process node, in page order; the `runnel link` commands
// run on two nodes of their own, the link's source and destination (links_test.go). A
// command the test cannot
// run (it needs another cluster, several nodes, a TLS listener, a secret from the
// environment) is listed in skipped with the reason and the test that covers it; a
// new command in the docs is run unless listed there. TestReadmeIgnoredProperties
// checks the README's list of properties accepted but ignored against the node's.
package doctest
