package mirror

// What the tests (package mirror_test) read of the package's insides. The tests are
// an external package because they start real nodes through internal/clustertest, which
// imports the server and so the web console, which imports this package to show a
// mirror's progress: tests inside package mirror would be an import cycle.

var (
	// NoPredict turns commitPredicted off (a measurement compares with and without).
	NoPredict       = &noPredict
	HasBeenOn       = hasBeenOn
	TransactionalID = transactionalID
)

// WorkerCounts are the counters of tp's worker: transactions written with predicted
// offsets, predictions missed, transactions with records; ok false when this mirror
// runs no worker for tp.
func (m *Mirror) WorkerCounts(tp TopicPartition) (predicted, missed, txns int64, ok bool) {
	w := m.worker(tp)
	if w == nil {
		return 0, 0, 0, false
	}
	return w.predicted.Load(), w.missed.Load(), w.txns.Load(), true
}

// SourceID is the source cluster's id as the mirror read it.
func (m *Mirror) SourceID() string { return m.srcID }

// Name is the mirror's Config.Name.
func (m *Mirror) Name() string { return m.cfg.Name }
