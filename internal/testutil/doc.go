// Package testutil holds the small require-style helpers Runnel's tests share: checks
// that stop the test with a message saying what was expected and what came instead, and
// Eventually, which polls a condition until a deadline and then names what never
// happened. It imports nothing from Runnel, so any package's tests may use it.
package testutil
